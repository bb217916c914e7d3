"""The CLI through Typer's CliRunner (fast) and a real subprocess (the user's path)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from specflow.cli import app

ROOT = Path(__file__).resolve().parents[2]
MLP = str(ROOT / "models" / "digits_mlp.yaml")
runner = CliRunner()


def run(*args):
    return runner.invoke(app, list(args), env={"COLUMNS": "220"})


def test_validate_ok():
    r = run("validate", MLP)
    assert r.exit_code == 0, r.output
    assert "ok" in r.output and "digits_mlp" in r.output


def test_validate_with_override_changes_graph():
    r = run("inspect", MLP, "--format", "json", "--set", "nodes.hidden.units=32")
    assert r.exit_code == 0, r.output
    g = json.loads(r.output)
    kernel = next(n for n in g["nodes"] if n["name"] == "hidden/kernel")
    assert kernel["attrs"]["shape"]["shape"] == [64, 32]


def test_validate_bad_override_is_one_line_exit_1():
    r = run("validate", MLP, "--set", "nodes.hidden.units=abc")
    assert r.exit_code == 1
    assert "--set nodes.hidden.units=abc" in r.output
    assert "Traceback" not in r.output


def test_missing_file_is_user_error():
    r = run("validate", "does/not/exist.yaml")
    assert r.exit_code == 1
    assert "no such file" in r.output


def test_usage_error_exit_2(tmp_path):
    r = run("inspect", MLP, "--format", "xml")
    assert r.exit_code == 2
    # a step count past int64 trained on forever instead (global_step cannot reach it); one
    # epoch of data ends such a run should the check go
    train = ("train", MLP, "--logdir", tmp_path / "run", "--set", "train.data.epochs=1", "--steps", 2**63)
    for args in (train, ("inspect", MLP, "--placed", "--batch-size", 2**63)):
        r = run(*args)
        assert r.exit_code == 2 and "less than or equal to" in r.output, r.output
    assert not (tmp_path / "run").exists()


def test_export_of_a_logdir_that_is_a_file_says_so(tmp_path):
    (tmp_path / "run").write_text("")
    r = run("export", MLP, "--logdir", tmp_path / "run", "--out", tmp_path / "e")
    assert r.exit_code == 1 and "run: not a directory" in r.output, r.output  # was "no such directory"
    assert not (tmp_path / "e").exists()


def test_inspect_formats():
    r = run("inspect", MLP)
    assert r.exit_code == 0, r.output
    assert "hidden/MatMul" in r.output and "float32[?, 128]" in r.output
    r = run("inspect", MLP, "--format", "json")
    g = json.loads(r.output)
    by = {n["name"]: n for n in g["nodes"]}
    assert by["hidden/MatMul"]["op"] == "MatMul"
    assert by["hidden"]["outputs"] == ["float32[?, 128]"]
    r = run("inspect", MLP, "--format", "dot")
    assert r.output.startswith("digraph specflow {") and '"images" -> "hidden/MatMul"' in r.output


def test_ops_list_and_detail():
    r = run("ops")
    assert r.exit_code == 0 and "MatMul" in r.output and "Conv2D" in r.output
    r = run("ops", "MatMul")
    assert r.exit_code == 0 and "transpose_a" in r.output
    r = run("ops", "MatMull")
    assert r.exit_code == 1 and "did you mean 'MatMul'" in r.output


def test_ops_missing_from_tf_lists_the_gap_and_the_coverage():
    r = run("ops", "--missing-from", "tf")
    assert r.exit_code == 0, r.output
    assert "/178 (" in r.output and "%) of " in r.output and "tf_common_ops.txt" in r.output
    missing = [line.strip() for line in r.output.split("coverage:")[0].splitlines()[1:]]
    colon = ":" if missing else ""  # nothing follows when none is missing
    assert r.output.splitlines()[0] == f"{len(missing)} op(s) of tf_common_ops.txt missing{colon}"
    assert f"coverage: {178 - len(missing)}/178 (" in r.output
    for op in ("Erf", "Tan", "LinSpace", "ClipByValue", "CumulativeLogsumexp", "MatMul"):
        assert op not in missing, op  # registered: not listed as missing
    # TF2 functional ops are lowered or inlined at load time: covered, and said so.
    for op in ("If", "While", "StatefulPartitionedCall"):
        assert op not in missing, op
    assert "counted as covered:" in r.output and "While" in r.output.split("counted as covered:")[1]


def test_ops_missing_from_a_file(tmp_path):
    names = tmp_path / "ops.txt"
    names.write_text("# a comment\nMatMul\nNoSuchOp  # trailing comment\n\nMatMul\nErf\n")
    r = run("ops", "--missing-from", str(names))
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[:3] == ["1 op(s) of ops.txt missing:", "  NoSuchOp", f"coverage: 2/3 (66.7%) of {names}"]
    r = run("ops", "--missing-from", str(tmp_path / "nope.txt"))
    assert r.exit_code == 1 and "takes tf or a file of op names" in r.output and "Traceback" not in r.output
    r = run("ops", "MatMul", "--missing-from", "tf")
    assert r.exit_code == 1 and "either an op or --missing-from" in r.output


def test_shipped_tf_op_list_is_the_shared_one():
    from specflow.ops.coverage import read_op_list

    shipped = ROOT / "specflow" / "data" / "tf_common_ops.txt"
    assert len(read_op_list(shipped)) == 178
    shared = ROOT.parent / "shared" / "tf_common_ops.txt"
    if shared.is_file():  # beside a checkout: the copy must not drift from the list
        assert read_op_list(shipped) == read_op_list(shared)


def test_schema_is_json_schema(tmp_path):
    r = run("schema")
    assert r.exit_code == 0
    s = json.loads(r.output)
    assert "properties" in s and "nodes" in s["properties"]


@pytest.mark.parametrize("model", sorted(p.name for p in (ROOT / "models").glob("*.yaml")))
def test_every_model_validates(model):
    r = run("validate", str(ROOT / "models" / model))
    assert r.exit_code == 0, r.output


def test_subprocess_validate_and_error(tmp_path):
    ok = subprocess.run([sys.executable, "-m", "specflow.cli", "validate", MLP], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("specflow: 1\nname: m\nnodes:\n  h: {layer: dense, inputs: [x], unit: 3}\n")
    r = subprocess.run([sys.executable, "-m", "specflow.cli", "validate", str(bad)], capture_output=True, text=True)
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    assert f"{bad}:4:" in r.stderr and "did you mean 'units'" in r.stderr


TWO = str(ROOT / "models" / "two_tower.yaml")


def test_inspect_placed_two_devices_json():
    r = run("inspect", TWO, "--placed", "--devices", "cpu:2", "--batch-size", "8", "--format", "json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert len(d["partitions"]) == 2
    assert d["assignment"]["left/MatMul"].endswith("CPU:0") and d["assignment"]["right/MatMul"].endswith("CPU:1")
    # `right` has two consumers on CPU:0 (joined, and the inline concat if placed there) but
    # crosses once per destination device: no (tensor, destination) pair appears twice.
    pairs = [(t["tensor"], t["to"]) for t in d["transfers"]]
    assert len(pairs) == len(set(pairs))
    right = [t for t in d["transfers"] if t["tensor"] == "right:0"]
    assert right and right[0]["bytes_per_step"] == 8 * 64 * 4
    sends = [n for g in d["partitions"].values() for n in g["nodes"] if n["op"] == "_Send"]
    recvs = [n for g in d["partitions"].values() for n in g["nodes"] if n["op"] == "_Recv"]
    assert len(sends) == len(recvs) == len(d["transfers"])
    assert d["bytes_per_step"] == sum(t["bytes_per_step"] for t in d["transfers"])


def test_inspect_placed_table_and_dot():
    r = run("inspect", TWO, "--placed", "--devices", "cpu:2")
    assert r.exit_code == 0, r.output
    assert "tensors crossing devices" in r.output and "_Send" in r.output
    r = run("inspect", TWO, "--placed", "--devices", "cpu:2", "--format", "dot")
    assert r.exit_code == 0 and "subgraph cluster_1" in r.output and "color=red" in r.output


def test_inspect_placed_impossible_device_explains():
    r = run("inspect", TWO, "--placed", "--devices", "cpu:1")
    assert r.exit_code == 1
    assert "right" in r.output and "CPU:1" in r.output and "Traceback" not in r.output


def test_run_fetches_values_and_trace(tmp_path):
    import numpy as np

    x = np.random.default_rng(0).random((4, 64), dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    out_file = tmp_path / "out.npz"
    trace = tmp_path / "trace.json"
    r = run("run", MLP, "--fetch", "probs", "--fetch", "hidden/kernel", "--feed", f"images={tmp_path / 'x.npy'}",
            "--out", str(out_file), "--trace", str(trace), "--seed", "1")
    assert r.exit_code == 0, r.output
    got = np.load(out_file)
    probs, kernel = got["probs"], got["hidden/kernel"]
    assert probs.shape == (4, 10) and kernel.shape == (64, 128)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
    events = json.loads(trace.read_text())["traceEvents"]
    # (hidden/MatMul is fused with its BiasAdd and Relu by the optimizer; the Softmax is not.)
    assert any(e.get("name") == "probs" and e["ph"] == "X" for e in events)


def test_run_unfed_placeholder_and_bad_feed_are_errors(tmp_path):
    r = run("run", MLP, "--fetch", "probs")
    assert r.exit_code == 1 and "must be fed" in r.output
    r = run("run", MLP, "--fetch", "probs", "--feed", "images")
    assert r.exit_code == 1 and "NAME=FILE.npy" in r.output
    import numpy as np

    np.save(tmp_path / "bad.npy", np.zeros((2, 3), np.float32))
    r = run("run", MLP, "--fetch", "probs", "--feed", f"images={tmp_path / 'bad.npy'}")
    assert r.exit_code == 1 and "images" in r.output and "Traceback" not in r.output


def test_subprocess_run(tmp_path):
    import numpy as np

    np.save(tmp_path / "x.npy", np.ones((2, 3), np.float32))
    r = subprocess.run(
        [sys.executable, "-m", "specflow.cli", "run", str(ROOT / "models" / "linear_regression.yaml"),
         "--fetch", "w", "--seed", "0"],
        capture_output=True, text=True,
    )
    assert r.returncode == 0, r.stderr
    assert "float32" in r.stdout
