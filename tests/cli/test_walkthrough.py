"""A fresh clone's walkthrough of the README, beyond its shell commands (test_readme_walk.py):
the Python examples run as written, twice; an unreachable --address is a one-line error, not
minutes of Ray retrying; sf.save's refusal names its own keyword."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            "COLUMNS": "200"}


def test_the_readmes_python_examples_run_as_written_twice(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    assert len(blocks) >= 2
    shutil.copytree(ROOT / "models", tmp_path / "models")
    script = tmp_path / "readme_examples.py"
    # Each block in its own namespace, as a reader pastes it; the second pass sees the first's files.
    script.write_text("import sys\nblocks = sys.argv[1:]\nfor _ in range(2):\n"
                      "    for b in blocks:\n        exec(compile(b, 'README.md', 'exec'), {})\n")
    r = subprocess.run([sys.executable, str(script), *blocks], cwd=tmp_path, env=_env(),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "export" / "linear" / "saved_model.pb").is_file()
    assert (tmp_path / "runs" / "x" / "checkpoint").is_file()


def test_sf_save_into_an_existing_directory_names_the_python_keyword(tmp_path):
    import specflow as sf
    from specflow.errors import ExportError

    class M(sf.Module):
        def __init__(self):
            super().__init__()
            self.w = sf.Variable(np.ones((2, 1), np.float32), name="w")

        @sf.function(input_signature=[sf.TensorSpec([None, 2], "float32")])
        def predict(self, x):
            return {"y": sf.ops.mat_mul(x, self.w)}

    m, out = M(), tmp_path / "m"
    sf.save(m, out)
    with pytest.raises(ExportError, match=r"already exists \(pass overwrite=True to replace it\)"):
        sf.save(m, out)
    sf.save(m, out, overwrite=True)
    assert (out / "saved_model.pb").is_file()


def test_an_unreachable_ray_address_is_a_one_line_error_at_once(tmp_path):
    pytest.importorskip("ray")
    with socket.socket() as s:  # a port nothing listens on once this socket is closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    x = tmp_path / "x.npy"
    np.save(x, np.zeros((2, 64), np.float32))
    for argv in (["run", "--fetch", "probs", "--feed", f"images={x}"],
                 ["train", "--logdir", str(tmp_path / "run"), "--steps", "2"]):
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, "-m", "specflow", argv[0], str(ROOT / "models" / "digits_mlp.yaml"),
                            *argv[1:], "--cluster", "local:ps=1,worker=1", "--address", f"127.0.0.1:{port}"],
                           env=_env(), capture_output=True, text=True, timeout=60)
        assert time.monotonic() - t0 < 30
        assert r.returncode == 1, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"error: cannot reach the Ray cluster at 127.0.0.1:{port}"), lines
    assert not (tmp_path / "run").exists()


def test_an_address_where_something_else_listens_is_a_one_line_error_at_once(tmp_path):
    """A port that accepts connections but speaks no gRPC (a web server, the dashboard's port
    8265 given by mistake): Ray would retry it for minutes, printing its own warnings."""
    pytest.importorskip("ray")
    import http.server
    import threading

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, "-m", "specflow", "train", str(ROOT / "models" / "digits_mlp.yaml"),
                            "--logdir", str(tmp_path / "run"), "--steps", "2", "--cluster", "local:ps=1,worker=1",
                            "--address", f"127.0.0.1:{port}"], env=_env(), capture_output=True, text=True, timeout=90)
    finally:
        server.shutdown()
        server.server_close()
    assert time.monotonic() - t0 < 30
    assert r.returncode == 1, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: cannot reach the Ray cluster at 127.0.0.1:{port}"), lines
    assert "not a Ray head" in lines[0], lines
    assert not (tmp_path / "run").exists()


CTRL_C_IN_RAY_INIT = """
import os, signal, sys, threading, time
import ray
real_init = ray.init
def init(*a, **kw):  # Ctrl-C while Ray starts (it takes seconds): the signal lands mid-init
    after = os.environ.get("CTRL_C_AFTER")
    if after:
        threading.Timer(float(after), os.kill, (os.getpid(), signal.SIGINT)).start()
    t0 = time.monotonic()
    real_init(*a, **kw)
    print(f"init took {time.monotonic() - t0}", file=sys.stderr)
ray.init = init
sys.argv = ["specflow", *sys.argv[1:]]
from specflow.cli import app
app()
"""


def test_ctrl_c_late_in_ray_init_is_interrupted_not_a_crash(tmp_path):
    """Ctrl-C late in ray.init (Ray's start takes seconds) printed 'interrupted', then the
    process died of SIGSEGV (exit 139) on its way out: the signal now waits for the init."""
    pytest.importorskip("ray")

    def train(after: str | None):
        shutil.rmtree(tmp_path / "run", ignore_errors=True)
        env = {**_env(), **({"CTRL_C_AFTER": after} if after else {})}
        return subprocess.run([sys.executable, "-c", CTRL_C_IN_RAY_INIT, "train", str(ROOT / "models" / "digits_mlp.yaml"),
                               "--cluster", "local:ps=1,worker=1", "--steps", "2", "--logdir", str(tmp_path / "run")],
                              env=env, capture_output=True, text=True, timeout=120)

    r = train(None)
    assert r.returncode == 0, r.stderr[-2000:]
    took = float(re.search(r"init took ([\d.]+)", r.stderr).group(1))
    for share in (0.8, 0.9, 0.95):
        r = train(f"{share * took:.2f}")
        err = [ln for ln in r.stderr.strip().splitlines() if not ln.startswith("init took")]
        # interrupted in the init; or (the init done first) a clean stop at step 0, saved; or (the
        # init faster than when timed) the run done first and the signal dropped on the way out,
        # not a KeyboardInterrupt traceback from Ray's shutdown at exit
        stopped = ["stopped by SIGINT at step 0 (saved); train again to continue"]
        assert (r.returncode, err) in ((130, ["interrupted"]), (130, stopped), (0, [])), (share * took, r.returncode,
                                                                                     r.stderr[-2000:])


@pytest.mark.parametrize("argv, named", [
    (["--fetch", "probs"], "--fetch only shapes the placed graph: add --placed"),
    (["--devices", "cpu:2", "--batch-size", "8"], "--devices, --batch-size only shape the placed graph"),
    (["--optimize", "--lossy-transfers"], "--optimize, --lossy-transfers only shape"),
])
def test_inspects_placement_flags_without_placed_are_refused_not_ignored(argv, named):
    from typer.testing import CliRunner

    from specflow.cli import app

    r = CliRunner().invoke(app, ["inspect", str(ROOT / "models" / "digits_mlp.yaml"), *argv], env={"COLUMNS": "200"})
    assert r.exit_code == 1 and r.output.count("error:") == 1 and named in r.output, r.output
    ok = CliRunner().invoke(app, ["inspect", str(ROOT / "models" / "digits_mlp.yaml"), "--placed", *argv])
    assert ok.exit_code == 0, ok.output


def test_inspect_of_a_graph_def_refuses_placement_flags():
    from typer.testing import CliRunner

    from specflow.cli import app

    frozen = ROOT / "tests" / "io" / "data" / "tf2" / "frozen_cnn.pb"
    r = CliRunner().invoke(app, ["inspect", str(frozen), "--placed", "--fetch", "x"], env={"COLUMNS": "200"})
    assert r.exit_code == 1 and "error: --placed, --fetch: inspect shows a SavedModel or GraphDef as it is" in r.output


def test_run_checkpoint_refuses_a_seed_other_than_the_runs(tmp_path):
    """README: run --checkpoint reads the run's --seed/--set; one given with another value is an
    error naming both (it was silently used as the step's graph seed)."""
    from typer.testing import CliRunner

    from specflow.cli import app

    mlp, logdir, x = ROOT / "models" / "digits_mlp.yaml", tmp_path / "run", tmp_path / "x.npy"
    np.save(x, np.zeros((2, 64), np.float32))
    runner = CliRunner()
    assert runner.invoke(app, ["train", str(mlp), "--logdir", str(logdir), "--steps", "1", "--seed", "7"]).exit_code == 0
    argv = ["run", str(mlp), "--fetch", "probs", "--feed", f"images={x}", "--checkpoint", str(logdir), "--seed"]
    r = runner.invoke(app, [*argv, "8"], env={"COLUMNS": "200"})
    assert r.exit_code == 1 and r.output.count("error:") == 1, r.output
    assert "--seed 8 differs from the run's --seed 7" in r.output
    assert runner.invoke(app, [*argv, "7"]).exit_code == 0


def test_train_on_two_devices_runs_and_matches_one_device(tmp_path):
    """train --devices cpu:2 failed at its first step: a variable initialized on one device was
    read on the other (runtime/resource_homes.py)."""
    from typer.testing import CliRunner

    from specflow.cli import app
    from specflow.io.checkpoint import CheckpointManager

    mlp, runner, got = str(ROOT / "models" / "digits_mlp.yaml"), CliRunner(), []
    for devices in ("cpu:2", "cpu:1"):
        logdir = tmp_path / devices.replace(":", "")
        r = runner.invoke(app, ["train", mlp, "--logdir", str(logdir), "--steps", "3", "--devices", devices])
        assert r.exit_code == 0, r.output
        m = CheckpointManager(str(logdir), keep=10)
        got.append(m.restore(m.path_for_step(3)))
    assert got[0].keys() == got[1].keys()
    for name in got[0]:
        np.testing.assert_array_equal(got[0][name], got[1][name], err_msg=name)


def test_the_readmes_layer_table_lists_every_layer_and_its_keys():
    from specflow.schema.layers import LAYERS

    table = README[README.index("| layer | keys (defaults) |"):]
    table = table[: table.index("\n\n")]
    rows = {}
    for line in table.splitlines()[2:]:
        first, keys = line.split(" | ", 1)
        for name in re.findall(r"`(\w+)`", first):
            rows[name] = keys
    assert set(LAYERS) - set(rows) == set()
    for name, config in LAYERS.items():  # every key a layer takes is named in its row
        row = rows[name]
        missing = [f for f in config.model_fields
                   if not re.search(rf"`{f}\b", row) and not (f.endswith("_initializer") and "initializers" in row)]
        assert not missing, (name, missing)


def test_an_onnx_file_given_as_a_spec_says_what_it_is(tmp_path):
    from typer.testing import CliRunner

    from specflow.cli import app

    onnx = tmp_path / "m.onnx"
    onnx.write_bytes(b"\x08\x0d\x12\x07specflow\xff\xfe")  # not UTF-8, as a real ONNX file
    for argv in (["validate"], ["inspect"], ["run", "--fetch", "probs"]):
        r = CliRunner().invoke(app, [argv[0], str(onnx), *argv[1:]], env={"COLUMNS": "200"})
        assert r.exit_code == 1 and r.output.count("error:") == 1, r.output
        assert "is an ONNX model; specflow reads specs, SavedModels and GraphDefs" in r.output
    r = CliRunner().invoke(app, ["predict", str(onnx), "--input", "x=x.npy"], env={"COLUMNS": "200"})
    assert r.exit_code == 1 and "predict runs a SavedModel directory or a GraphDef (.pb, .pbtxt)" in r.output


@pytest.mark.parametrize("argv", [["inspect", "--placed"], ["run", "--fetch", "probs"]])
def test_no_devices_is_the_same_one_line_error_everywhere(argv, tmp_path):
    from typer.testing import CliRunner

    from specflow.cli import app

    x = tmp_path / "x.npy"
    np.save(x, np.zeros((1, 64), np.float32))
    feed = ["--feed", f"images={x}"] if argv[0] == "run" else []
    r = CliRunner().invoke(app, [argv[0], str(ROOT / "models" / "digits_mlp.yaml"), *argv[1:], *feed,
                                 "--devices", "cpu:0"], env={"COLUMNS": "200"})
    assert r.exit_code == 1 and r.output.strip() == "error: devices 'cpu:0': no devices requested", r.output


def test_a_run_failing_as_it_starts_leaves_no_logdir_it_made(tmp_path):
    """A data file not found is only found as training starts, after run.json was written: the
    logdir the run made is removed again (one it did not make keeps the user's files)."""
    from typer.testing import CliRunner

    from specflow.cli import app

    mlp, runner = str(ROOT / "models" / "digits_mlp.yaml"), CliRunner()
    bad = ["--steps", "2", "--set", "train.data.source={npz: nowhere.npz}"]
    r = runner.invoke(app, ["train", mlp, "--logdir", str(tmp_path / "new"), *bad], env={"COLUMNS": "200"})
    assert r.exit_code == 1 and "data file not found" in r.output, r.output
    assert not (tmp_path / "new").exists()
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    assert runner.invoke(app, ["train", mlp, "--logdir", str(mine), *bad]).exit_code == 1
    assert (mine / "notes.txt").read_text() == "keep"
    # the corrected command then trains as if nothing had happened
    r = runner.invoke(app, ["train", mlp, "--logdir", str(tmp_path / "new"), "--steps", "2"])
    assert r.exit_code == 0, r.output
