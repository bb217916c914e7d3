"""Export safety (issue 15, items 3 and 9): ``--overwrite`` replaces only an empty directory or a
SavedModel; write failures are one-line errors that leave nothing behind; what a killed export
left (``.{name}.tmp-*``, ``.{name}.old-*``) is cleaned by the next one, never a live export's."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from specflow.errors import ExportError, SpecflowError
from specflow.export import savedmodel
from specflow.export.exporter import export_model
from specflow.export.target_dir import Held
from specflow.io.checkpoint import CheckpointManager
from tests.cli.cli_helpers import cli, one_error
from tests.cli.test_write_failures import _cli, _one_error
from tests.export.conftest import MODELS_DIR


def _tree(path) -> dict[str, bytes]:
    return {os.path.relpath(os.path.join(d, f), path): open(os.path.join(d, f), "rb").read()
            for d, _, files in os.walk(path) for f in files}


def test_overwrite_refuses_a_logdir_and_a_source_tree(trained, tmp_path):
    spec, logdir = trained("linear_regression")
    before = _tree(logdir)
    with pytest.raises(ExportError, match="refusing to --overwrite .*: it is not a SavedModel"):
        export_model(spec, logdir, logdir, overwrite=True)
    assert _tree(logdir) == before and CheckpointManager(logdir).latest()
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "main.py").write_text("print('hi')\n")
    (src / "saved_model.pb").write_bytes(b"planted")  # a SavedModel's file among others is not enough
    with pytest.raises(ExportError, match="it holds 'pkg'"):
        export_model(spec, logdir, src, overwrite=True)
    (src / "pkg" / "main.py").unlink()
    (src / "pkg").rmdir()
    (src / "variables").mkdir()
    (src / "variables" / "notes.txt").write_text("mine")
    with pytest.raises(ExportError, match="it holds 'variables/notes.txt'"):
        export_model(spec, logdir, src, overwrite=True)
    assert (src / "variables" / "notes.txt").read_text() == "mine"


def test_overwrite_refuses_files_and_symlinks(trained, tmp_path):
    spec, logdir = trained("linear_regression")
    target = tmp_path / "real"
    export_model(spec, logdir, target)
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(ExportError, match="not a directory"):
        export_model(spec, logdir, tmp_path / "link", overwrite=True)
    yaml_file = tmp_path / "model.yaml"
    yaml_file.write_text("keep")
    with pytest.raises(ExportError, match="not a directory"):
        export_model(spec, logdir, yaml_file, overwrite=True)
    with pytest.raises(ExportError, match="only an .onnx file is replaced"):
        export_model(spec, logdir, yaml_file, fmt="onnx", overwrite=True)
    assert yaml_file.read_text() == "keep"


def test_the_cli_refusal_is_one_line(trained, tmp_path):
    _, logdir = trained("linear_regression")
    r = subprocess.run([sys.executable, "-m", "specflow.cli", "export", str(MODELS_DIR / "linear_regression.yaml"),
                        "--logdir", str(logdir), "--out", str(logdir), "--overwrite"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert r.stderr.count("error:") == 1 and "refusing to --overwrite" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EFBIG])
def test_a_full_disk_is_one_line_and_leaves_nothing(trained, tmp_path, monkeypatch, code):
    spec, logdir = trained("linear_regression")
    out = tmp_path / "export"
    export_model(spec, logdir, out)
    before = _tree(out)
    real = savedmodel.write_synced

    def full(path, chunks):
        with open(path, "wb") as f:
            f.write(b"partial")
        raise OSError(code, os.strerror(code), path)

    monkeypatch.setattr(savedmodel, "write_synced", full)
    with pytest.raises(ExportError, match=f"cannot write the export: {os.strerror(code)}") as err:
        export_model(spec, logdir, out, overwrite=True)
    assert "\n" not in err.value.format()
    monkeypatch.setattr(savedmodel, "write_synced", real)
    assert _tree(out) == before  # the previous export is untouched
    assert sorted(os.listdir(tmp_path)) == ["export"]  # no temp directory


def test_leftovers_of_killed_exports_are_cleaned_but_not_a_live_exports(trained, tmp_path):
    spec, logdir = trained("linear_regression")
    out = tmp_path / "export"
    for name in (".export.tmp-dead1", ".export.old-dead2", ".export.tmp-live", ".other.tmp-x"):
        (tmp_path / name / "variables").mkdir(parents=True)
    live = Held(str(tmp_path / ".export.tmp-live"))  # an export still running holds its temp dir
    try:
        export_model(spec, logdir, out)
    finally:
        live.close()
    assert sorted(os.listdir(tmp_path)) == [".export.tmp-live", ".other.tmp-x", "export"]


def test_a_kill_between_the_renames_of_an_overwrite_gives_the_old_export_back(trained, tmp_path):
    spec, logdir = trained("linear_regression")
    out = tmp_path / "export"
    export_model(spec, logdir, out)
    before = _tree(out)
    aside = tmp_path / ".export.old-killed"
    aside.mkdir()
    os.replace(out, aside / "export")  # what a kill after the first rename leaves
    with pytest.raises(ExportError, match="already exists"):  # the cleanup put the previous export back
        export_model(spec, logdir, out)
    assert _tree(out) == before
    assert sorted(os.listdir(tmp_path)) == ["export"]


def test_kill_9_loop_during_export(trained, tmp_path):
    """Killed at different moments, then run again: never a half export, no leftover after."""
    _, logdir = trained("digits_mlp")
    out = tmp_path / "export"
    args = [sys.executable, "-m", "specflow.cli", "export", str(MODELS_DIR / "digits_mlp.yaml"),
            "--logdir", str(logdir), "--out", str(out), "--overwrite"]
    for delay in (1.3, 1.9):
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if out.exists():  # whatever is at the target is a complete export
            assert sorted(os.listdir(out)) == ["saved_model.pb", "variables"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(tmp_path)) == ["export"]


def test_export_into_a_full_disk_is_one_line_and_leaves_nothing(trained, tmp_path):
    _, logdir = trained("digits_mlp")
    err = _one_error(_cli("export", MODELS_DIR / "digits_mlp.yaml", "--logdir", logdir, "--out",
                          tmp_path / "export", limit=4096))
    assert "cannot write the export: File too large" in err
    assert os.listdir(tmp_path) == []



def test_a_node_name_tensorflow_refuses_is_named_before_anything_is_written(tmp_path):
    """Spec names may start with '_'; TensorFlow's node names (and our loader) may not."""
    from specflow.schema.loader import load_spec
    from specflow.train.loop import Trainer, TrainOptions

    text = (MODELS_DIR / "linear_regression.yaml").read_text().replace("xw", "_xw").replace("steps: 500", "steps: 1")
    for name in ("linear_regression_x.npy", "linear_regression_y.npy"):
        shutil.copy(MODELS_DIR / name, tmp_path / name)
    (tmp_path / "m.yaml").write_text(text)
    spec = load_spec(tmp_path / "m.yaml")
    Trainer(spec, TrainOptions(logdir=tmp_path / "run")).run()
    with pytest.raises(SpecflowError, match="cannot export node '_xw' under that name: invalid node name '_xw'"):
        export_model(spec, tmp_path / "run", tmp_path / "export")
    assert not [n for n in os.listdir(tmp_path) if "export" in n]


def _file_writing_graph(tmp_path, op: str) -> tuple[str, dict]:
    """A GraphDef whose output waits on a SaveV2 over, or a MergeV2Checkpoints of, a bundle
    outside the model (``victim/keep``), named by a string constant in the model."""
    from specflow.io.tensor_bundle import write_bundle

    victim = tmp_path / "victim"
    victim.mkdir()
    write_bundle(str(victim / "keep"), {"w": np.arange(3, dtype=np.float32)})

    def const(name, shape, value):
        return (f'node {{ name: "{name}" op: "Const" attr {{ key: "dtype" value {{ type: DT_STRING }} }} attr {{ key: '
                f'"value" value {{ tensor {{ dtype: DT_STRING tensor_shape {{ {shape} }} string_val: "{value}" }} }} }} }}')
    if op == "MergeV2Checkpoints":
        writer = [const("src", "dim { size: 1 }", victim / "keep"), const("dst", "", tmp_path / "merged"),
                  'node { name: "w" op: "MergeV2Checkpoints" input: "src" input: "dst" }']
    else:
        writer = [const("prefix", "", victim / "keep"), const("names", "dim { size: 1 }", "w"),
                  const("slices", "dim { size: 1 }", ""),
                  'node { name: "w" op: "SaveV2" input: "prefix" input: "names" input: "slices" input: "x" '
                  'attr { key: "dtypes" value { list { type: DT_FLOAT } } } }']
    (tmp_path / "g.pbtxt").write_text("\n".join([
        'node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }', *writer,
        'node { name: "y" op: "Identity" input: "x" input: "^w" attr { key: "T" value { type: DT_FLOAT } } }']))
    np.save(tmp_path / "x.npy", np.ones(2, np.float32))
    return str(tmp_path / "g.pbtxt"), _tree(victim)


@pytest.mark.parametrize("op", ["MergeV2Checkpoints", "SaveV2"])
def test_a_loaded_model_never_writes_or_deletes_files_it_names(op, tmp_path):
    """`predict`/`run`/`import` of a GraphDef (or a SavedModel's signature or restore op) whose
    output waits on a MergeV2Checkpoints of a bundle outside deleted that bundle's files; a SaveV2
    overwrote them. A file-writing op on a loaded model's path is refused, naming the node."""
    graph, before = _file_writing_graph(tmp_path, op)
    x = f"x={tmp_path / 'x.npy'}"
    for cmd in (["predict", graph, "--input", x], ["run", graph, "--feed", x, "--fetch", "y"],
                ["import", graph, "--out", str(tmp_path / "m.yaml")]):
        one_error(cli(*cmd), f"node 'w' ({op}) would write or delete files")
        assert _tree(tmp_path / "victim") == before
