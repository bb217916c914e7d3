"""`specflow export`, `predict` and `inspect EXPORT_DIR` through Typer's CliRunner (and one real
subprocess): results, and one-line errors with exit code 1 for bad inputs and damaged files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from specflow.cli import app
from specflow.export.exporter import export_model
from specflow.export.serving import serving_model
from specflow.export.verify import source_outputs
from tests.export.conftest import MODELS_DIR

runner = CliRunner()


def cli(*args):
    return runner.invoke(app, [str(a) for a in args])


def assert_one_line_error(result, *fragments):
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.fixture(scope="module")
def exported(trained, tmp_path_factory):
    spec, logdir = trained("digits_mlp")
    out = tmp_path_factory.mktemp("cli") / "mlp"
    export_model(spec, logdir, out)
    return spec, logdir, out


@pytest.fixture
def images(tmp_path):
    x = np.load(MODELS_DIR.parent / "specflow" / "data" / "digits.npz")["images"][:3].astype(np.float32)
    path = tmp_path / "x.npy"
    np.save(path, x)
    return x, path


def test_export_command_writes_and_verifies(trained, tmp_path):
    _, logdir = trained("mnist_cnn")
    out = tmp_path / "cnn"
    r = cli("export", MODELS_DIR / "mnist_cnn.yaml", "--logdir", logdir, "--out", out)
    assert r.exit_code == 0, r.output
    assert "re-loaded outputs match the spec" in r.output and "serving_default" in r.output
    assert sorted(p.name for p in (out / "variables").iterdir()) == [
        "variables.data-00000-of-00001", "variables.index"]
    again = cli("export", MODELS_DIR / "mnist_cnn.yaml", "--logdir", logdir, "--out", out)
    assert_one_line_error(again, "already exists", "--overwrite")
    assert cli("export", MODELS_DIR / "mnist_cnn.yaml", "--logdir", logdir, "--out", out, "--overwrite").exit_code == 0


def test_onnx_export_command_verifies_with_onnxruntime(trained, tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    _, logdir = trained("digits_mlp")
    spec, out = MODELS_DIR / "digits_mlp.yaml", tmp_path / "mlp.onnx"
    r = cli("export", spec, "--logdir", logdir, "--out", out, "--format", "onnx")
    assert r.exit_code == 0, r.output
    assert "re-loaded outputs match the spec" in r.output
    assert out.stat().st_mode & 0o044 == 0o044  # readable like any other file (not mkstemp's 0600)
    assert_one_line_error(cli("export", spec, "--logdir", logdir, "--out", out, "--format", "onnx"),
                          "already exists")

    # An ONNX file that computes something else fails the export and leaves nothing behind.
    import specflow.export.onnx_export as onnx_export

    real = onnx_export.run_onnx
    monkeypatch.setattr(onnx_export, "run_onnx", lambda path, feeds: {
        k: v + 1e-3 for k, v in real(path, feeds).items()})
    bad = tmp_path / "bad.onnx"
    assert_one_line_error(cli("export", spec, "--logdir", logdir, "--out", bad, "--format", "onnx"),
                          "differs from the spec")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mlp.onnx"]


def test_export_command_errors(trained, tmp_path):
    _, logdir = trained("digits_mlp")
    spec = MODELS_DIR / "digits_mlp.yaml"
    assert_one_line_error(cli("export", spec, "--logdir", tmp_path / "none", "--out", tmp_path / "o"),
                          "no such directory")
    assert_one_line_error(cli("export", spec, "--logdir", logdir, "--out", tmp_path / "o", "--signature", "x"),
                          "no signature 'x'", "serving_default")
    assert_one_line_error(cli("export", spec, "--logdir", logdir, "--out", tmp_path / "o", "--checkpoint", "12"),
                          "no checkpoint for step 12")
    r = cli("export", spec, "--logdir", logdir, "--out", tmp_path / "o", "--format", "tflite")
    assert r.exit_code == 2 and "savedmodel, onnx" in r.output


def test_predict_table_json_and_npz(exported, images, tmp_path):
    spec, logdir, out = exported
    x, path = images
    model = serving_model(spec, logdir)
    want = source_outputs(spec, model, "serving_default", {"images": x})["probabilities"]

    r = cli("predict", out, "--input", f"images={path}", "--format", "json")
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)["probabilities"]
    assert got["dtype"] == "float32" and got["shape"] == [3, 10]
    np.testing.assert_allclose(np.array(got["value"], np.float32), want, rtol=1e-6, atol=1e-7)

    r = cli("predict", out, "--input", f"images={path}")
    assert r.exit_code == 0 and "probabilities" in r.output and "[3, 10]" in r.output

    npz = tmp_path / "out.npz"
    r = cli("predict", out, "-i", f"images={path}", "--out", npz)
    assert r.exit_code == 0, r.output
    np.testing.assert_allclose(np.load(npz)["probabilities"], want, rtol=1e-6, atol=1e-7)


def test_predict_input_errors(exported, images, tmp_path):
    _, _, out = exported
    _, path = images
    wrong_dtype = tmp_path / "ints.npy"
    np.save(wrong_dtype, np.full((3, 64), 2**25 + 1, np.int64))  # not a float32 value (issue 17: one cast rule)
    wrong_shape = tmp_path / "short.npy"
    np.save(wrong_shape, np.ones((3, 63), np.float32))
    garbage = tmp_path / "garbage.npy"
    garbage.write_bytes(b"not numpy")
    assert_one_line_error(cli("predict", out, "--input", f"pixels={path}"), "has no input 'pixels'", "inputs: images")
    assert_one_line_error(cli("predict", out, "-i", f"images={path}", "-i", f"extra={path}"),
                          "has no input 'extra'")
    assert_one_line_error(cli("predict", out, "-i", f"images={wrong_dtype}"), "input 'images' must be float32, got int64",
                          "would change 192 of 192 value(s) (e.g. 33554433 -> 33554432.0)")
    assert_one_line_error(cli("predict", out, "-i", f"images={wrong_shape}"), "must have shape [?, 64], got [3, 63]")
    assert_one_line_error(cli("predict", out, "-i", f"images={path}", "--signature", "classify"),
                          "no signature 'classify'", "serving_default")
    assert_one_line_error(cli("predict", out, "-i", f"images={garbage}"), "not a readable .npy file")
    assert_one_line_error(cli("predict", tmp_path / "nowhere", "-i", f"images={path}"), "no such directory")
    assert_one_line_error(cli("predict", tmp_path, "-i", f"images={path}"), "not a SavedModel directory")


def _damaged(out, tmp_path, relpath, damage):
    copy = tmp_path / "damaged"
    shutil.copytree(out, copy)
    target = copy / relpath
    damage(target)
    return copy


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _flip_last_byte(path):
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(("relpath", "damage", "fragment"), [
    ("saved_model.pb", _truncate, "saved_model.pb"),
    ("saved_model.pb", lambda p: p.write_bytes(b"\xff" * 64), "corrupted or truncated SavedModel"),
    ("saved_model.pb", lambda p: p.write_bytes(b""), "holds no meta graph"),
    ("variables/variables.index", lambda p: p.unlink(), "variables file missing"),
    ("variables/variables.index", _truncate, "variables.index"),
    ("variables/variables.data-00000-of-00001", _truncate, "truncated"),
    ("variables/variables.data-00000-of-00001", _flip_last_byte, "checksum mismatch"),
], ids=["pb-truncated", "pb-garbage", "pb-empty", "index-missing", "index-truncated", "data-truncated",
        "data-corrupted"])
def test_damaged_exports_give_one_line_errors(exported, images, tmp_path, relpath, damage, fragment):
    _, _, out = exported
    _, path = images
    copy = _damaged(out, tmp_path, relpath, damage)
    assert_one_line_error(cli("predict", copy, "-i", f"images={path}"), fragment)


def test_inspect_export_dir_table_and_json(exported):
    _, _, out = exported
    r = cli("inspect", out)
    assert r.exit_code == 0, r.output
    for text in ("tag sets: serve", "serving_default", "images:0", "[?, 64]", "probs:0", "hidden/kernel",
                 "[64, 128]", "save/RestoreV2"):
        assert text in r.output, text
    info = json.loads(cli("inspect", out, "--format", "json").output)
    assert info["tags"] == ["serve"]
    assert info["signatures"]["serving_default"]["inputs"]["images"] == \
        {"tensor": "images:0", "dtype": "float32", "shape": [None, 64]}
    assert info["signatures"]["serving_default"]["outputs"]["probabilities"]["shape"] == [None, 10]
    assert info["variables"]["logits/kernel"] == {"dtype": "float32", "shape": [128, 10]}
    assert info["saver"] == {"filename_tensor": "save/Const:0", "restore_op": "save/restore_all"}
    assert {"name": "probs", "op": "Softmax", "inputs": ["logits"], "device": ""} in info["nodes"]


def test_inspect_damaged_export_is_one_line(exported, tmp_path):
    _, _, out = exported
    copy = _damaged(out, tmp_path, "saved_model.pb", lambda p: p.write_bytes(b"\xff" * 64))
    assert_one_line_error(cli("inspect", copy), "corrupted or truncated SavedModel")


def test_predict_in_a_real_subprocess(exported, images):
    _, _, out = exported
    _, path = images
    proc = subprocess.run([sys.executable, "-m", "specflow.cli", "predict", str(out), "-i", f"images={path}",
                           "-f", "json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["probabilities"]["shape"] == [3, 10]
    bad = subprocess.run([sys.executable, "-m", "specflow.cli", "predict", str(out), "-i", f"x={path}"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and bad.stderr.startswith("error: ") and "Traceback" not in bad.stderr


def test_integer_inputs_are_narrowed_only_when_the_values_fit():
    from specflow.errors import ExportError
    from specflow.export.loader import check_input
    from specflow.graph import dtypes
    from specflow.graph.shapes import Shape
    from specflow.ops.registry import TensorSpec

    spec = TensorSpec(dtypes.int32, Shape([None]))
    assert check_input("ids", np.array([1, 2], np.int64), spec).dtype == np.int32
    with pytest.raises(ExportError, match="input 'ids' holds values outside int32's range"):
        check_input("ids", np.array([2**40], np.int64), spec)
    with pytest.raises(ExportError, match="input 'ids' must be int32, got float32"):
        check_input("ids", np.array([1.5], np.float32), spec)
