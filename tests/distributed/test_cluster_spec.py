"""Cluster specs, their checks and planning on a cluster: all without Ray."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from specflow.cli import app
from specflow.distributed import ClusterSpec, as_cluster_spec, parse_cli
from specflow.distributed.placement import TaskAssignment, compile_cluster_step, task_of
from specflow.errors import DeviceError, SpecError, SpecflowError
from specflow.schema.loader import load_spec, load_spec_text

MODELS = Path(__file__).resolve().parents[2] / "models"
runner = CliRunner()


def test_forms():
    assert parse_cli("local:ps=1,worker=2") == {"ps": 1, "worker": 2}
    assert parse_cli("local") is None
    for bad in ("remote:ps=1", "local:ps=0", "local:ps", "local:ps=1,ps=2"):
        with pytest.raises(SpecError):
            parse_cli(bad)
    spec = as_cluster_spec({"worker": ["a:1", "b:2"], "ps": ["c:3"]})
    assert spec.jobs == {"worker": 2, "ps": 1}
    assert "ignored" in spec.notices[0]
    assert spec.tasks == [("ps", 0), ("worker", 0), ("worker", 1)]
    spec = ClusterSpec({"chief": 1, "worker": 1}, task_devices={"worker": "cpu:2"})
    assert spec.all_devices == [
        "/job:chief/replica:0/task:0/device:CPU:0",
        "/job:worker/replica:0/task:0/device:CPU:0",
        "/job:worker/replica:0/task:0/device:CPU:1",
    ]
    assert task_of(spec.all_devices[2]) == "/job:worker/replica:0/task:0"


@pytest.mark.parametrize("constraint, message", [
    ("/job:lab", "names job 'lab', which the cluster lacks (jobs: ps, worker)"),
    ("/job:worker/task:2", "names task 2, out of range (worker has 2 task(s))"),
    ("/job:ps/device:CPU:1", "no task of the cluster has device CPU:1"),
    ("/job:wroker", "(did you mean 'worker'?)"),
])  # fmt: skip
def test_node_constraints_checked_with_location(constraint, message):
    text = f"""specflow: 1
name: m
inputs:
  x: {{dtype: float32, shape: [2]}}
nodes:
  y: {{op: Neg, inputs: [x], device: "{constraint}"}}
cluster: {{ps: 1, worker: 2}}
"""
    with pytest.raises(DeviceError) as e:
        load_spec_text(text, "m.yaml")
    assert e.value.format().startswith("m.yaml:6:3: ") and message in e.value.format()


def test_section_errors_are_located():
    base = "specflow: 1\nname: m\ninputs:\n  x: {dtype: float32, shape: [2]}\nnodes:\n  y: {op: Neg, inputs: [x]}\n"
    cases = {
        "cluster:\n  jobs: {ps: 1}\n  placement: spread\n": "m.yaml:9:14: cluster.placement: expected one of ps, round_robin",
        "cluster:\n  jobs: {ps: 1}\n  task_devices: {worker: cpu:2}\n": "m.yaml:9:18: cluster.task_devices.worker: unknown job",
        "cluster:\n  jobs: {ps: 1}\n  place: {z: /job:ps}\n": "m.yaml:9:11: cluster.place.z: no node or scope of that name",
        "cluster:\n  jobs: {ps: -1}\n": "m.yaml:8:10: cluster.jobs.ps: a job needs at least one task",
        "cluster:\n  jobs: {ps: 1}\n  task_threads: {ps: 0}\n": "m.yaml:9:22: cluster.task_threads.ps: expected a thread count >= 1",
        "cluster:\n  jobs: {ps: 1}\n  task_threads: {worker: 2}\n": "m.yaml:9:18: cluster.task_threads.worker: unknown job",
        "cluster: [ps]\n": "m.yaml:7:10: cluster: expected a mapping",
        # what Ray refused as the tasks started, with an internal error (a ValueError)
        "cluster:\n  jobs: {ps: 1}\n  resources: {ps: {CPU: 1}}\n":
            "m.yaml:9:20: cluster.resources.ps.CPU: a task's CPUs and GPUs come from its devices",
        "cluster:\n  jobs: {ps: 1}\n  resources: {ps: {node_b: -1}}\n":
            "m.yaml:9:28: cluster.resources.ps.node_b: expected an amount >= 0 (at least 0.0001 when not 0), got -1",
        "cluster:\n  jobs: {ps: 1}\n  resources: {ps: {node_b: .inf}}\n": "cluster.resources.ps.node_b: expected an amount",
        "cluster:\n  jobs: {ps: 1}\n  resources: {ps: {node_b: 0.00001}}\n": "cluster.resources.ps.node_b: expected an amount",
    }
    for section, message in cases.items():
        with pytest.raises(SpecflowError) as e:
            load_spec_text(base + section, "m.yaml")
        assert message in e.value.format(), (section, e.value.format())


def test_ps_placement_spreads_variables_by_bytes_and_keeps_them_across_signatures():
    spec = load_spec(MODELS / "digits_mlp.yaml")
    cluster = ClusterSpec({"ps": 2, "worker": 2})
    assignment = TaskAssignment(cluster)
    init = compile_cluster_step(spec.graph_def, cluster, assignment, targets=[spec.lowered.init_op])
    step = compile_cluster_step(spec.graph_def, cluster, assignment, feeds=["images"], fetches=["probs:0"])
    for cs in (init, step):
        where = {n.name: task_of(n.device) for g in cs.compiled.partitioned.partitions.values() for n in g.nodes
                 if n.op == "VarHandleOp"}  # fmt: skip
        assert where == {"hidden/kernel": "/job:ps/replica:0/task:0", "hidden/bias": "/job:ps/replica:0/task:1",
                         "logits/kernel": "/job:ps/replica:0/task:1", "logits/bias": "/job:ps/replica:0/task:1"}
    assert set(step.tasks) == {"/job:ps/replica:0/task:0", "/job:ps/replica:0/task:1", "/job:worker/replica:0/task:0"}
    assert {t.dst_device for t in step.cross} == {"/job:worker/replica:0/task:0/device:CPU:0"}


def test_round_robin_spreads_over_every_task():
    spec = load_spec(MODELS / "residual_mlp.yaml")
    cluster = ClusterSpec({"ps": 1, "worker": 2}, placement="round_robin")
    step = compile_cluster_step(spec.graph_def, cluster, TaskAssignment(cluster), feeds=["images"], fetches=["probs:0"])
    assert len(step.tasks) == 3 and step.cross


def test_inspect_cluster_never_starts_ray(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # importing ray now fails
    r = runner.invoke(app, ["inspect", str(MODELS / "towers_on_tasks.yaml"), "--cluster", "local", "--placed",
                            "-f", "json"])  # fmt: skip
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    tasks = {t["task"]: t for t in data["tasks"]}
    assert tasks["/job:worker/replica:0/task:1"]["variables"] == ["right/bias", "right/kernel"]
    assert tasks["/job:ps/replica:0/task:0"]["variables"] == ["left/bias", "left/kernel", "out/bias", "out/kernel"]
    assert data["cross_task_bytes_per_step"] > 0 and len(data["cross_task_transfers"]) == 6
    # the towers send both ways between ps and workers: stages, the fed x read where it is used
    assert data["step_protocol"]["protocol"] == "stages" and len(data["step_protocol"]["calls"]) == 3
    r = runner.invoke(app, ["inspect", str(MODELS / "digits_mlp.yaml"), "--cluster", "local:ps=1,worker=1",
                            "--placed", "--task-devices", "worker=cpu:2", "-f", "json"])  # fmt: skip
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["cluster"]["task_devices"] == {"worker": "cpu:2"} and data["cross_task_transfers"]
    r = runner.invoke(app, ["inspect", str(MODELS / "digits_mlp.yaml"), "--cluster", "local:ps=1,worker=1", "--placed"])
    assert r.exit_code == 0, r.output
    assert "tensors crossing tasks" in r.output and "/job:ps/replica:0/task:0" in r.output
    r = runner.invoke(app, ["inspect", str(MODELS / "digits_mlp.yaml"), "--cluster", "local:ps=1,worker=1",
                            "-f", "dot"])  # fmt: skip (--cluster implies --placed)
    assert r.exit_code == 0 and r.output.startswith("digraph")


def test_run_cluster_without_ray_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    r = runner.invoke(app, ["run", str(MODELS / "digits_mlp.yaml"), "--cluster", "local:ps=1,worker=1",
                            "--fetch", "probs"])  # fmt: skip
    assert r.exit_code == 1
    assert r.output.strip().splitlines() == ["error: running on a cluster needs Ray: pip install 'specflow[distributed]' (or pip install 'ray>=2.40')"]


def test_cli_cluster_errors():
    r = runner.invoke(app, ["run", str(MODELS / "digits_mlp.yaml"), "--cluster", "local", "--fetch", "probs"])
    assert r.exit_code == 1 and "has no cluster: section" in r.output
    r = runner.invoke(app, ["inspect", str(MODELS / "towers_on_tasks.yaml"), "--cluster", "local:ps=1", "--placed"])
    assert r.exit_code == 1 and "names job 'worker', which the cluster lacks" in r.output
    r = runner.invoke(app, ["inspect", str(MODELS / "digits_mlp.yaml"), "--cluster", "local:worker=1", "--placed",
                            "--devices", "cpu:2"])  # fmt: skip
    assert r.exit_code == 1 and "--task-devices" in r.output
    r = runner.invoke(app, ["inspect", str(MODELS / "digits_mlp.yaml"), "--placed", "--placement", "round_robin"])
    assert r.exit_code == 1 and "need --cluster" in r.output


DIGITS = (MODELS / "digits_mlp.yaml").read_text()


@pytest.mark.parametrize("edit, args, expected", [
    # TensorFlow's cluster rules, refused in one line before Ray starts (importing ray fails here)
    (None, ["train", "--cluster", "local:chief=2,ps=1,worker=1"],
     r"^error: --cluster 'local:chief=2,ps=1,worker=1': a cluster has at most one chief task .*got chief=2"),
    (None, ["run", "--fetch", "probs", "--cluster", "local:ps=1,worker=1,evaluator=2"],
     r"^error: --cluster '.*': a cluster has at most one evaluator task"),
    (("train:", "cluster: {jobs: {chief: 2, ps: 1, worker: 1}}\ntrain:"), ["validate"],
     r"^error: d\.yaml:\d+:\d+: cluster\.jobs\.chief: a cluster has at most one chief task"),
    (None, ["train", "--cluster", "local:ps=2"], r"^error: training on a cluster needs a worker job, got ps=2"),
    # the spec's own cluster section is checked for training by validate and a local train, at its line
    (("train:", "cluster: {ps: 1}\ntrain:"), ["validate"],
     r"^error: d\.yaml:\d+:\d+: cluster: training on a cluster needs a worker job, got ps=1"),
    (("train:", "cluster: {ps: 1, worker: 1, evaluator: 1}\ntrain:"), ["train"],
     r"^error: d\.yaml:\d+:\d+: cluster\.evaluator: a job no part of training runs on"),
    (("train:", "cluster: {ps: 1, worker: 2}\ntrain:\n  distributed: {mode: sync, replicas_to_aggregate: 3}"),
     ["validate"], r"^error: d\.yaml:\d+:\d+: train\.distributed\.replicas_to_aggregate: 3, but the cluster has 2 "
     r"worker replicas \(the spec's cluster: ps=1, worker=2\)"),
    # replicas_to_aggregate is sync's: with async (the default) it is refused wherever the spec loads
    (("train:", "train:\n  distributed: {replicas_to_aggregate: 2}"), ["train"],
     r"^error: d\.yaml:\d+:\d+: train\.distributed\.replicas_to_aggregate: applies to mode: sync"),
])  # fmt: skip
def test_cluster_and_distributed_sections_refused_in_one_line_without_ray(tmp_path, monkeypatch, edit, args, expected):
    import re

    monkeypatch.setitem(sys.modules, "ray", None)
    spec = tmp_path / "d.yaml"
    spec.write_text(DIGITS.replace(*edit) if edit else DIGITS)
    extra = ["--logdir", str(tmp_path / "run"), "--steps", "2"] if args[0] == "train" else []
    r = runner.invoke(app, [args[0], str(spec), *args[1:], *extra], env={"COLUMNS": "300"})
    lines = r.output.strip().splitlines()
    assert r.exit_code == 1 and len(lines) == 1 and re.search(expected, lines[0].replace(str(tmp_path) + "/", "")), r.output
    assert not (tmp_path / "run").exists()


def test_local_train_says_once_that_train_distributed_applies_with_cluster(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    spec = tmp_path / "d.yaml"
    spec.write_text(DIGITS.replace("train:", "train:\n  distributed: {mode: sync}"))
    r = runner.invoke(app, ["train", str(spec), "--logdir", str(tmp_path / "run"), "--steps", "2"], env={"COLUMNS": "300"})
    assert r.exit_code == 0, r.output
    notes = [line for line in r.output.splitlines() if "train.distributed" in line]
    assert notes == ["note: train.distributed (mode: sync) applies with --cluster; this run trains locally, in one process"]
    assert (tmp_path / "run" / "model.ckpt-2.index").exists()
    r = runner.invoke(app, ["validate", str(spec)])
    assert r.exit_code == 0 and "train.distributed" not in r.output


def test_more_tasks_than_a_machine_runs_is_a_clear_error_before_ray_starts():
    """worker=99999 hung (Ray never finished starting 100,000 processes): now one line naming
    the limit, raised before any Ray is started."""
    import time

    from specflow.distributed import Cluster
    from specflow.distributed.cluster_spec import TASKS_PER_MACHINE, check_task_count

    ray = sys.modules.get("ray")
    t0 = time.monotonic()
    if ray is not None and ray.is_initialized():  # another test of this process started one: checked on connect
        # (specflow's own private Ray of an earlier test counts as this machine, another as it is)
        with pytest.raises(SpecError, match=r"has 100,000 tasks, but (the running Ray cluster|a local cluster)"):
            Cluster(ClusterSpec({"ps": 1, "worker": 99999})).connect()
    else:
        with pytest.raises(SpecError, match=r"ps=1, worker=99999 has 100,000 tasks, but a local cluster \(this "
                                            r"machine\) runs at most 64 .*--address"):
            Cluster(ClusterSpec({"ps": 1, "worker": 99999}))
    assert time.monotonic() - t0 < 1.0
    check_task_count(ClusterSpec({"ps": 1, "worker": TASKS_PER_MACHINE - 1}))  # at the limit: fine
    check_task_count(ClusterSpec({"ps": 2, "worker": 100}), machines=2, where="the Ray cluster at auto (2 nodes)")
    with pytest.raises(SpecError, match=r"the Ray cluster at auto \(1 node\) runs at most 64 \(64 per machine"):
        check_task_count(ClusterSpec({"ps": 1, "worker": 64}), machines=1, where="the Ray cluster at auto (1 node)")


def test_a_ray_client_address_nothing_listens_on_fails_at_once():
    """ray://host:port (Ray Client) is checked as host:port is: Ray took 30 s to give up on it,
    after a multi-line warning of its own."""
    import socket
    import time

    from specflow.distributed.engine import _check_reachable

    with socket.socket() as s:  # a port nothing listens on once this socket is closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    with pytest.raises(SpecflowError, match=rf"cannot reach the Ray cluster at ray://127.0.0.1:{port}: .*client server"):
        _check_reachable(f"ray://127.0.0.1:{port}")
    assert time.monotonic() - t0 < 5


def test_a_head_that_wants_a_token_is_a_one_line_error_at_once(monkeypatch):
    """A Ray head with token authentication refuses a driver without RAY_AUTH_MODE=token: Ray
    retried for 20 s, printing a gcs_client warning each second. A stand-in GCS that answers as
    such a head does (UNAUTHENTICATED) gives one line at once; one that answers does not."""
    grpc = pytest.importorskip("grpc")
    import time
    from concurrent import futures

    from specflow.distributed.engine import _check_reachable

    def serve(status):
        def get_cluster_id(request, context):
            if status is not None:
                context.abort(status, "InvalidAuthToken: Authentication token is missing or incorrect")
            return b""

        server = grpc.server(futures.ThreadPoolExecutor(2))
        handler = grpc.method_handlers_generic_handler("ray.rpc.NodeInfoGcsService", {
            "GetClusterId": grpc.unary_unary_rpc_method_handler(get_cluster_id, lambda b: b, lambda b: b)})
        server.add_generic_rpc_handlers((handler,))
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        return server, port

    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    server, port = serve(grpc.StatusCode.UNAUTHENTICATED)
    try:
        t0 = time.monotonic()
        with pytest.raises(SpecflowError, match=r"requires Ray's token authentication: set RAY_AUTH_MODE=token"):
            _check_reachable(f"127.0.0.1:{port}")
        assert time.monotonic() - t0 < 5
        monkeypatch.setenv("RAY_AUTH_MODE", "token")  # the driver sends its token: left to Ray
        _check_reachable(f"127.0.0.1:{port}")
    finally:
        server.stop(None)
    monkeypatch.delenv("RAY_AUTH_MODE")
    server, port = serve(None)
    try:
        _check_reachable(f"127.0.0.1:{port}")
    finally:
        server.stop(None)


def test_a_grpc_server_that_is_no_ray_head_is_a_one_line_error_at_once():
    """Another program's gRPC server (or an HTTP/2 proxy) at --address answers UNIMPLEMENTED:
    ray.init retried it for 20 s, printing a gcs_client warning each second."""
    grpc = pytest.importorskip("grpc")
    import time
    from concurrent import futures

    from specflow.distributed.engine import _check_reachable

    server = grpc.server(futures.ThreadPoolExecutor(2))  # no services at all
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        t0 = time.monotonic()
        with pytest.raises(SpecflowError, match=rf"^cannot reach the Ray cluster at 127.0.0.1:{port}: a gRPC server "
                                                r"answers there, but not a Ray head's"):  # fmt: skip
            _check_reachable(f"127.0.0.1:{port}")
        assert time.monotonic() - t0 < 5
    finally:
        server.stop(None)


@pytest.mark.parametrize("address", [":6379", "127.0.0.1", "127.0.0.1:99999", "host:0", "http://127.0.0.1:8265"])
def test_an_address_that_is_none_is_a_one_line_error(address):
    """Ray logged a traceback for ":6379" and cut its own http:// message at "either:"; a port out
    of range read as "Connection refused"."""
    from specflow.distributed.engine import _check_reachable

    with pytest.raises(SpecflowError, match=r"^cannot reach the Ray cluster at .*: not an address \(expected "
                                            r"host:port .*, ray://host:port, or auto\)$"):  # fmt: skip
        _check_reachable(address)


def test_early_stopping_on_a_cluster_is_refused_at_its_spec_line(tmp_path):
    import subprocess
    import sys

    text = (Path(__file__).resolve().parents[2] / "models" / "digits_mlp.yaml").read_text()
    spec = tmp_path / "es.yaml"
    spec.write_text(text.replace("train:\n", "train:\n  early_stopping: {metric: accuracy, patience: 2}\n", 1))
    out = subprocess.run([sys.executable, "-m", "specflow", "train", str(spec), "--cluster", "local:ps=1,worker=1",
                          "--logdir", str(tmp_path / "run")], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "es.yaml:" in out.stderr and "train.early_stopping: early_stopping is not supported with --cluster" in out.stderr
