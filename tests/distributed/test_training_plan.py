"""inspect --cluster --placed on a spec with train: shows the training step as train --cluster
places it (no Ray: run in a fresh interpreter to prove it is never imported)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

DIGITS = Path(__file__).resolve().parents[2] / "models" / "digits_mlp.yaml"

SCRIPT = """
import sys
from typer.testing import CliRunner
from specflow.cli import app
r = CliRunner().invoke(app, sys.argv[1:])
assert r.exit_code == 0, r.output
assert "ray" not in sys.modules, "inspect imported Ray"
sys.stdout.write(r.output)
"""


def _inspect(*args: str) -> str:
    r = subprocess.run([sys.executable, "-c", SCRIPT, "inspect", *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_inspect_shows_the_training_steps_placement_and_traffic(tmp_path):
    sync = tmp_path / "digits.yaml"
    sync.write_text(DIGITS.read_text().replace("  steps: 2000", "  steps: 2000\n  distributed: {mode: sync}"))
    data = json.loads(_inspect(str(sync), "--cluster", "local:ps=2,worker=2", "--format", "json"))
    t = data["training"]
    # the replica's step cut into stages: the ps tasks' reads, the worker's step, their writes
    # (each variable's tag sits with its slots: no ordering between the ps tasks; the fed local
    # step is read as a feed on each ps, not forwarded from one ps to the other)
    protocol = data["step_protocol"]
    assert [c.rsplit("#", 1)[1] for c in protocol["calls"]] == ["0", "0", "1", "2", "2"], protocol
    assert t["mode"] == "sync" and t["batch_size"] == 64
    where = {n: v["task"] for n, v in t["variables"].items()}
    ps0, ps1 = "/job:ps/replica:0/task:0", "/job:ps/replica:0/task:1"
    # greedy by bytes: the big kernel alone on ps 0, with its Adam slots and sync's gradient slots
    assert {n for n, w in where.items() if w == ps0} == {
        "hidden/kernel", "hidden/kernel/Adam", "hidden/kernel/Adam_1",
        "sync_replicas/hidden/kernel/grad_0", "sync_replicas/hidden/kernel/grad_1",
        "sync_replicas/hidden/kernel/step_0", "sync_replicas/hidden/kernel/step_1"}, where
    assert where["global_step"] == ps1 and where["sync_replicas/logits/bias/step_1"] == ps1
    weights = (64 * 128 + 128 + 128 * 10 + 10) * 4
    for w in t["workers"]:  # each worker reads every weight and sends back a gradient of each
        assert weights <= w["bytes_pulled_per_step"] < weights + 1024, w
        assert weights <= w["bytes_pushed_per_step"] < weights + 1024, w
    assert t["apply_step_cross_task_bytes"] is not None
    # worker 0's push step touches its gradient slot on ps 0, not the Adam slots (the apply does)
    assert data["tasks"][0]["variables"] == ["hidden/kernel", "sync_replicas/hidden/kernel/grad_0",
                                             "sync_replicas/hidden/kernel/step_0"]

    table = _inspect(str(DIGITS), "--cluster", "local:ps=1,worker=2")
    assert "worker 0's training step" in table and "pulled/step" in table and "hidden/kernel/Adam" in table


def test_inspect_refuses_what_train_refuses_at_the_spec_line(tmp_path):
    """More replicas to aggregate than workers, or a job no training task runs: the error train
    --cluster gives, at the setting's line, rather than a plan of a run that cannot start."""
    from typer.testing import CliRunner

    from specflow.cli import app

    text = DIGITS.read_text()
    cases = {
        "rta.yaml": (text.replace("  steps: 2000", "  steps: 2000\n  distributed: {mode: sync, replicas_to_aggregate: 3}"),
                     "local:ps=1,worker=2", "train.distributed.replicas_to_aggregate: 3, but the cluster has 2 worker"),
        "jobs.yaml": (text.replace("train:", "cluster:\n  jobs: {ps: 1, worker: 1, wrker: 1}\ntrain:"), "local",
                      "cluster.jobs.wrker: a job no part of training runs on"),
    }
    for name, (body, flag, message) in cases.items():
        (tmp_path / name).write_text(body)
        r = CliRunner().invoke(app, ["inspect", str(tmp_path / name), "--cluster", flag], env={"COLUMNS": "300"})
        line = (body.split(message.split(":")[0].rsplit(".", 1)[-1])[0].count("\n")) + 1
        assert r.exit_code == 1 and r.output.startswith(f"error: {tmp_path / name}:{line}:"), r.output
        assert message in r.output and len(r.output.strip().splitlines()) == 1, r.output


SEPARABLE = """
specflow: 1
name: separable
inputs:
  images: {dtype: float32, shape: [null, 64]}
  labels: {dtype: int64, shape: [null]}
nodes:
  img: {op: Reshape, inputs: [images], shape: [-1, 8, 8, 1]}
  c1: {layer: conv2d, inputs: [img], filters: 4, kernel_size: 3, padding: same}
  c2: {layer: separable_conv2d, inputs: [c1], filters: 8, kernel_size: 3, padding: same}
  gp: {layer: global_avg_pool, inputs: [c2]}
  logits: {layer: dense, inputs: [gp], units: 10}
  xent: {op: SparseSoftmaxCrossEntropyWithLogits, inputs: [logits, labels]}
  loss: {op: Mean, inputs: ["xent:0"]}
train:
  loss: loss
  optimizer: {sgd: {learning_rate: 0.1}}
  data: {source: {builtin: digits}, feeds: {images: x, labels: y}, batch_size: 8}
  steps: 10
"""


def test_inspect_places_a_depthwise_gradient_whose_sizes_cross_tasks(tmp_path):
    # The depthwise input gradient's input_sizes arrives by _Recv on the worker's piece (a shape
    # of unknown rank): its shape check once failed formatting its message.
    spec = tmp_path / "separable.yaml"
    spec.write_text(SEPARABLE)
    data = json.loads(_inspect(str(spec), "--cluster", "local:ps=2,worker=2", "--format", "json"))
    assert {"c2/depthwise_kernel", "c2/pointwise_kernel", "c1/kernel"} <= set(data["training"]["variables"])
