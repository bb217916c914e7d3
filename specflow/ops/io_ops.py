"""Checkpoint I/O ops, as TensorFlow's Saver graph uses them: SaveV2 / RestoreV2 move variables
to and from a tensor bundle (``specflow.io.tensor_bundle``), and the filename ops build the
prefixes of a sharded save (ShardedFilename, ShardedFilespec, StringJoin, StaticRegexFullMatch,
MergeV2Checkpoints).

A SavedModel's ``saver_def`` names a restore op built from these; running it with the filename
tensor fed ``EXPORT_DIR/variables/variables`` restores the variables, whoever wrote the model.
Strings are object arrays of bytes (``graph/dtypes.py``); the ops run on CPU only.
"""

from __future__ import annotations

import os

import numpy as np

from specflow.errors import CheckpointError
from specflow.graph.shapes import Shape
from specflow.io.tensor_bundle import index_filename, merge_bundles, read_bundle_each, write_bundle
from specflow.io.tensor_slices import SliceSpec
from specflow.ops.inference import InferenceContext, no_outputs
from specflow.ops.registry import KernelContext, kernel, not_differentiable, register_op

_CPU = ("CPU",)


def _text(x) -> str:
    return x.decode("utf-8") if isinstance(x, bytes) else str(x)


def _strings(ctx: KernelContext, x, what: str, count: int | None = None) -> list[str]:
    items = [_text(v) for v in np.asarray(x, dtype=object).reshape(-1).tolist()]
    if count is not None and len(items) != count:
        raise ctx.fail(f"{what} holds {len(items)} strings; expected {count}")
    return items


def _scalar_string(ctx: KernelContext, x, what: str) -> str:
    items = _strings(ctx, x, what)
    if len(items) != 1:
        raise ctx.fail(f"{what} must hold a single string, got {len(items)}")
    return items[0]


def _slice_specs(ctx: KernelContext, names: list[str], x) -> dict[int, SliceSpec]:
    """Position -> the slice a non-empty ``shape_and_slices`` entry names (``"10 4 0,5:-"``:
    that slice of a [10, 4] tensor); an empty entry is the whole tensor."""
    out = {}
    for i, (name, text) in enumerate(zip(names, _strings(ctx, x, "shape_and_slices", len(names)))):
        if text:
            try:
                out[i] = SliceSpec.parse(name, text)
            except CheckpointError as e:
                raise ctx.fail(e.message) from None
    return out


def _string(value: str) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = value.encode("utf-8")
    return out


def _vector_inputs_shape(first: int, last: int):
    """Inputs ``first..last`` are 1-D name lists of equal length."""

    def check(ic: InferenceContext) -> None:
        for i in range(first, last + 1):
            if ic.shape(i).rank not in (None, 1):
                raise ic.fail(f"input {i} must be a vector of strings, got shape {ic.shape(i)}")

    return check


# --- SaveV2 / RestoreV2 ------------------------------------------------------------------------


def _save_shape(ic: InferenceContext) -> list[Shape]:
    _vector_inputs_shape(1, 2)(ic)
    return no_outputs(ic)


register_op(
    "SaveV2",
    inputs=["prefix: string", "tensor_names: string", "shape_and_slices: string", "tensors: dtypes"],
    attrs=["dtypes: list(type) >= 1"],
    stateful=True,
    shape=_save_shape,
    doc="Writes `tensors` under `tensor_names` as a TensorFlow V2 checkpoint (tensor bundle) at `prefix`.",
)


@kernel("SaveV2", devices=_CPU)
def _save_v2(ctx, prefix, tensor_names, shape_and_slices, *tensors):
    path = _scalar_string(ctx, prefix, "prefix")
    names = _strings(ctx, tensor_names, "tensor_names", len(tensors))
    specs = _slice_specs(ctx, names, shape_and_slices)
    # A partitioned variable's parts share its name: each is labelled by its slice.
    labels = [n if i not in specs else f"{n}\0{specs[i].text()}" for i, n in enumerate(names)]
    if len(set(labels)) != len(labels):
        raise ctx.fail(f"tensor_names repeats a name: {sorted(n for n in set(names) if names.count(n) > 1)}")
    try:
        write_bundle(path, {label: ctx.host(t) for label, t in zip(labels, tensors)},
                     {labels[i]: spec for i, spec in specs.items()})  # fmt: skip
    except (CheckpointError, OSError) as e:
        raise ctx.fail(f"cannot save checkpoint {path}: {getattr(e, 'message', None) or e}") from None


def _restore_shape(ic: InferenceContext) -> list[Shape]:
    _vector_inputs_shape(1, 2)(ic)
    return [Shape.unknown()] * len(ic.attr("dtypes"))


register_op(
    "RestoreV2",
    inputs=["prefix: string", "tensor_names: string", "shape_and_slices: string"],
    outputs=["tensors: dtypes"],
    attrs=["dtypes: list(type) >= 1"],
    stateful=True,
    shape=_restore_shape,
    doc="Reads the tensors named `tensor_names` from the V2 checkpoint at `prefix`, checking each dtype.",
)


@kernel("RestoreV2", devices=_CPU)
def _restore_v2(ctx, prefix, tensor_names, shape_and_slices):
    want = ctx.attrs["dtypes"]
    path = _scalar_string(ctx, prefix, "prefix")
    names = _strings(ctx, tensor_names, "tensor_names", len(want))
    specs = _slice_specs(ctx, names, shape_and_slices)
    try:  # only these (a ps task's shard reads its own tensors), each read once per slice asked for
        stored = read_bundle_each(path, [(n, specs.get(i)) for i, n in enumerate(names)])
    except CheckpointError as e:
        raise ctx.fail(e.format()) from None  # names the file and what is wrong with it
    out = []
    for value, name, dtype in zip(stored, names, want):
        if value is None:
            raise ctx.fail(f"checkpoint {path} has no tensor '{name}'")
        if value.dtype != dtype.numpy:
            raise ctx.fail(f"checkpoint {path} holds '{name}' as {value.dtype}, expected {dtype.name}")
        out.append(value)
    return tuple(out)


# --- sharded saves: filenames and merging ------------------------------------------------------


def _scalar_output(ic: InferenceContext) -> list[Shape]:
    return [Shape.scalar()]


register_op(
    "ShardedFilename",
    inputs=["basename: string", "shard: int32", "num_shards: int32"],
    outputs=["filename: string"],
    shape=_scalar_output,
    doc="`basename-SSSSS-of-NNNNN`: the prefix of one shard of a sharded save.",
)


@kernel("ShardedFilename", devices=_CPU)
def _sharded_filename(ctx, basename, shard, num_shards):
    base = _scalar_string(ctx, basename, "basename")
    return _string(f"{base}-{int(ctx.host(shard)):05d}-of-{int(ctx.host(num_shards)):05d}")


register_op(
    "ShardedFilespec",
    inputs=["basename: string", "num_shards: int32"],
    outputs=["filename: string"],
    shape=_scalar_output,
    doc="`basename-?????-of-NNNNN`: the glob matching every shard of a sharded save.",
)


@kernel("ShardedFilespec", devices=_CPU)
def _sharded_filespec(ctx, basename, num_shards):
    base = _scalar_string(ctx, basename, "basename")
    return _string(f"{base}-?????-of-{int(ctx.host(num_shards)):05d}")


def _string_join_shape(ic: InferenceContext) -> list[Shape]:
    out = Shape.scalar()
    for s in ic.input_shapes:  # scalars broadcast; non-scalars must agree
        if s.rank == 0:
            continue
        try:
            out = s if out.rank == 0 else out.merge_with(s)
        except ValueError:
            raise ic.fail(f"non-scalar inputs must have one shape; got {out} and {s}") from None
    return [out]


register_op(
    "StringJoin",
    inputs=["inputs: N * string"],
    outputs=["output: string"],
    attrs=["N: int >= 0", "separator: string = ''"],
    shape=_string_join_shape,
    doc="Joins the strings of `inputs` elementwise with `separator` (scalars broadcast).",
)


@kernel("StringJoin", devices=_CPU)
def _string_join(ctx, *inputs):
    arrays = [np.asarray(x, dtype=object) for x in inputs]
    shapes = {a.shape for a in arrays if a.ndim}
    if len(shapes) > 1:
        raise ctx.fail(f"non-scalar inputs must have one shape; got {sorted(shapes)}")
    shape = shapes.pop() if shapes else ()
    sep = ctx.attrs["separator"]
    sep = sep.encode("utf-8") if isinstance(sep, str) else sep
    cols = [np.broadcast_to(a, shape).reshape(-1).tolist() for a in arrays]
    out = np.empty(int(np.prod(shape, dtype=np.int64)), dtype=object)
    out[:] = [sep.join(x if isinstance(x, bytes) else str(x).encode("utf-8") for x in row)
              for row in zip(*cols)] if cols else [b""] * out.size
    return out.reshape(shape)


register_op(
    "StaticRegexFullMatch",
    inputs=["input: string"],
    outputs=["output: bool"],
    attrs=["pattern: string"],
    shape=lambda ic: [ic.shape(0)],
    doc="Whether each string matches `pattern` in full (the saver asks whether a prefix is a URL "
        "such as s3://...). Python's `re` stands in for RE2: the same syntax for such patterns.",
)


@kernel("StaticRegexFullMatch", devices=_CPU)
def _static_regex_full_match(ctx, input):
    from specflow.ops.regex_ops import full_match  # RE2's syntax and meaning (see there)

    return full_match(ctx, input, ctx.attrs["pattern"])


register_op(
    "MergeV2Checkpoints",
    inputs=["checkpoint_prefixes: string", "destination_prefix: string"],
    attrs=["delete_old_dirs: bool = true", "allow_missing_files: bool = false"],
    stateful=True,
    shape=no_outputs,
    doc="Merges the V2 checkpoints at `checkpoint_prefixes` into one at `destination_prefix`, "
        "deleting the inputs' files (and, with `delete_old_dirs`, their directories if left empty).",
)


@kernel("MergeV2Checkpoints", devices=_CPU)
def _merge_v2(ctx, checkpoint_prefixes, destination_prefix):
    sources = _strings(ctx, checkpoint_prefixes, "checkpoint_prefixes")
    dest = _scalar_string(ctx, destination_prefix, "destination_prefix")
    if ctx.attrs["allow_missing_files"]:
        sources = [src for src in sources if os.path.exists(index_filename(src))]
    try:  # the sources' data files are renamed into the destination's shards; one index joins them
        merge_bundles(sources, dest)
    except CheckpointError as e:
        raise ctx.fail(f"cannot merge into {dest}: {e.format()}") from None
    except OSError as e:
        raise ctx.fail(f"cannot write merged checkpoint {dest}: {e.strerror or e}") from None
    for src in sources:
        if os.path.abspath(src) == os.path.abspath(dest) or not os.path.exists(index_filename(src)):
            continue
        _remove_bundle(src)
        if ctx.attrs["delete_old_dirs"]:
            try:
                os.rmdir(os.path.dirname(os.path.abspath(src)))
            except OSError:
                pass  # not empty (or the destination's own directory): kept, as TF does


def _remove_bundle(prefix: str) -> None:
    directory, base = os.path.split(os.path.abspath(prefix))
    os.remove(index_filename(prefix))
    for entry in os.listdir(directory):
        if entry.startswith(base + ".data-"):
            os.remove(os.path.join(directory, entry))


not_differentiable("SaveV2", "RestoreV2", "ShardedFilename", "ShardedFilespec", "StringJoin",
                   "StaticRegexFullMatch", "MergeV2Checkpoints")
