"""What the CLI's arguments mean: spec and logdir paths, --out paths, --feed values and --fetch
references. Kept apart from ``cli.py`` (the commands) so each stays readable."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from specflow.errors import SpecflowError


class UserError(SpecflowError):
    """A bad command-line argument that is not a usage error (missing file, bad feed...)."""


def _check_spec_path(path: Path) -> None:
    if not path.exists():
        raise UserError(f"{path}: no such file")
    if path.is_dir():
        raise UserError(f"{path}: is a directory, expected a YAML spec")
    if path.suffix.lower() == ".onnx":
        raise UserError(f"{path}: is an ONNX model; specflow reads specs, SavedModels and GraphDefs "
                        "(run an ONNX file with onnxruntime)")
    if _is_model(path):
        raise UserError(f"{path}: is a TensorFlow GraphDef, not a spec; inspect, run and predict take it, "
                        "and `specflow import` turns it into a spec")


def _is_model(path: Path) -> bool:
    """A SavedModel directory or a GraphDef file (.pb/.pbtxt): what export/loader.load_model reads."""
    from specflow.io.graph_loader import is_graph_def_file

    return path.is_dir() or is_graph_def_file(path)


def _tensor_of(s, ref: str) -> str:
    """The graph tensor a --fetch or --feed names: a graph tensor as it is, else any spec
    reference (a function call's output ``block1``, a while node's ``loop:1``, a cond's output,
    a variable, whose value is read)."""
    reads = {v.name: v.read for v in s.variables}
    if ref in reads:
        return reads[ref]
    try:  # the spec's reading first: a layer's output op carries its node's name, `r:1` is its h
        return s.resolve(ref)
    except SpecflowError:
        if ref.split(":")[0] in s.model.nodes:
            raise  # a spec node without that output: its error says how many it has
        # a graph tensor (hidden/MatMul:0), or none: the session checks it, with suggestions
        return ref


class DirPath(type(Path())):
    """An output path given with a trailing separator (``--out preds/``): a directory even before
    it exists, which pathlib's normalizing would forget (``preds/`` wrote ``preds.npz``)."""


def out_path(text: str) -> Path:
    """Typer's parser for ``--out``/``--trace``: keeps a trailing separator's meaning."""
    return DirPath(text) if text.endswith(("/", os.sep)) else Path(text)


def _output_file(path: Path, default_name: str) -> Path:
    """Where ``--out PATH`` writes: a directory (existing, or written ``DIR/``) means
    ``default_name`` inside it; a file name lacking ``default_name``'s suffix gets it."""
    if path.is_dir() or isinstance(path, DirPath):
        return Path(path, default_name)
    suffix = Path(default_name).suffix
    return path if path.suffix == suffix else path.with_name(path.name + suffix)


def _check_output_dir(path: Path | None, default_name: str) -> None:
    """Fail before the work, not after it: the directory an output goes into must exist and be
    writable (the write itself, atomic_write.py, still turns any later failure into one line)."""
    if path is None:
        return
    import errno

    from specflow.errors import Location
    from specflow.io.atomic_write import write_hint

    target = _output_file(path, default_name)
    directory = target.parent if str(target.parent) else Path(".")
    problem = None
    if not directory.exists():
        problem = OSError(errno.ENOENT, "No such file or directory")
    elif not directory.is_dir():
        problem = OSError(errno.ENOTDIR, "Not a directory")
    elif not os.access(directory, os.W_OK | os.X_OK):
        problem = OSError(errno.EACCES, "Permission denied")
    if problem is not None:
        raise SpecflowError(f"cannot write the output: {problem.strerror}{write_hint(problem, str(directory))}",
                            location=Location(str(target)))


def _save_npz(output: Path, arrays: dict, default_name: str) -> Path:
    """``np.savez``'s file, written whole or not at all; returns where it went."""
    import numpy as np

    from specflow.io.atomic_write import write_atomically

    target = _output_file(output, default_name)
    arrays = {name: _storable(name, np.asarray(a)) for name, a in arrays.items()}
    write_atomically(target, lambda f: np.savez(f, **arrays))
    return target


def _storable(name: str, a):
    """An array ``np.load`` reads without pickle: strings as fixed-width bytes (``S``), not
    objects; a resource or variant handle is refused (it is no value)."""
    import numpy as np

    if a.dtype != object:
        return a
    if all(isinstance(v, (bytes, str)) for v in a.flat):
        return np.array([v.encode() if isinstance(v, str) else v for v in a.flat], dtype=bytes).reshape(a.shape)
    kind = type(next(iter(a.flat))).__name__ if a.size else "object"
    raise UserError(f"'{name}' is a {kind}, not a value to save (fetch a tensor, or a variable by its name)")


def _run_feeds(s, texts: list[str]) -> dict:
    """``--feed NAME=FILE`` values by graph tensor, cast by the one feed rule (io/feed_cast.py)."""
    from specflow.io.feed_cast import cast_exactly

    feeds = {}
    for text in texts:
        name, value = _read_feed(text)
        tensor = _tensor_of(s, name)
        if tensor in feeds:
            raise UserError(f"--feed {name} is given twice")
        try:
            want = s.tensor_spec(tensor).dtype
        except (SpecflowError, KeyError):
            want = None  # not a tensor of the graph: the session says so
        if want is not None and want.np_type is not None and want.name != "string":
            value = cast_exactly(value, want.numpy, f"--feed {name}", UserError)
        feeds[tensor] = value
    return feeds


def _read_feed(text: str, option: str = "--feed"):
    from specflow.io.npy import NpyError, load_array_file

    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise UserError(f"{option} '{text}': expected NAME=FILE.npy")
    p = Path(path)
    if not p.exists():
        raise UserError(f"{option} {name}: {path}: no such file")
    try:
        value = load_array_file(p)  # the header is checked before anything is allocated
    except NpyError as e:
        raise UserError(f"{option} {name}: {path}: not a readable .npy file ({e})") from None
    if isinstance(value, dict):  # an .npz archive: take its only array
        if len(value) != 1:
            raise UserError(f"{option} {name}: {path} holds {len(value)} arrays; give an .npy file")
        value = next(iter(value.values()))
    return name, value


def _check_logdir(logdir: Path) -> None:
    """A logdir read from (eval, export, run --checkpoint) must be a directory that exists."""
    if not logdir.exists():
        raise UserError(f"{logdir}: no such directory (train the model with --logdir {logdir} first)")
    if not logdir.is_dir():
        raise UserError(f"{logdir}: not a directory (--logdir names a training run's directory)")


def _flags_without_metavar(app: typer.Typer) -> None:
    """Show on/off options as flags in --help (``--resume``), not as ``--resume <bool>``, which
    reads as if it took a value, and each command's summary in the command list as one wrapped
    paragraph. Applied to every command, whoever declared it."""
    import inspect as pyinspect

    for cmd in app.registered_commands:
        if cmd.short_help is None and cmd.callback.__doc__:
            # The command list shows the docstring's first paragraph with its source line breaks
            # (ragged lines under 80 columns); joined, rich wraps it to the table's width.
            first = pyinspect.cleandoc(cmd.callback.__doc__).split("\n\n")[0]
            cmd.short_help = " ".join(first.split())
        for p in pyinspect.signature(cmd.callback).parameters.values():
            info = p.default
            if isinstance(info, typer.models.OptionInfo) and isinstance(info.default, bool) and info.metavar is None:
                info.metavar = ""


def _help_without_metavar(command) -> None:
    """``--help`` as a flag too: typer (0.29) builds it per command on first use and shows it as
    ``--help <bool>``; build it now, for the group and every command, without the type."""
    for cmd in [command, *getattr(command, "commands", {}).values()]:
        option = cmd.get_help_option(cmd.context_class(cmd))
        if option is not None:
            option.metavar = ""


def _cast_inputs(sig, feeds: dict) -> dict:
    """``--input`` arrays by the same rule as ``run --feed`` (io/feed_cast.py): cast to the
    signature's dtype only when no value changes. (The Python loader keeps Session's rule.)"""
    from specflow.io.feed_cast import cast_exactly

    out = {}
    for name, value in feeds.items():
        spec = sig.inputs.get(name)
        if spec is not None and spec[1].dtype.np_type is not None and spec[1].dtype.name != "string":
            value = cast_exactly(value, spec[1].dtype.numpy, f"input '{name}'", UserError)
        out[name] = value
    return out
