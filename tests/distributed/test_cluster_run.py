"""Graphs run on a local Ray cluster give what they give locally (one Ray instance for the module)."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import pytest

from specflow.distributed import Cluster, ClusterSpec, cluster_from_section
from specflow.errors import RuntimeFailure
from specflow.runtime.session import Session, SessionConfig
from specflow.schema.loader import load_spec, load_spec_text

MODELS = sorted((Path(__file__).resolve().parents[2] / "models").glob("*.yaml"))
SPREAD = ClusterSpec({"ps": 1, "worker": 2}, task_devices={"ps": "cpu:2", "worker": "cpu:2"}, placement="round_robin")


def _feeds(spec, names, rng):
    out = {}
    for name in names:
        node = spec.graph_def.node(name)
        if node.op != "Placeholder":
            continue
        shape = [4 if d is None else d for d in node.attrs["shape"].dims]
        dtype = node.attrs["dtype"].numpy
        # ints are ids and labels: [0, 2) is valid for every model (the zoo has 2-class heads)
        out[name] = rng.integers(0, 2, shape).astype(dtype) if dtype.kind in "iu" else rng.standard_normal(shape).astype(dtype)
    return out


def _fetches(spec):
    outs = [t for sig in spec.signatures.values() for (t, _) in sig["outputs"].values()]
    if "loss" in spec.graph_def.node_map():
        outs.append("loss")
    return list(dict.fromkeys(outs))


def _tasks_used(sess):
    plans = [p for p in sess._plans.values()]
    return {t for p in plans for t in p.tasks}


@pytest.fixture(scope="module")
def spread(ray_local):
    """One set of three tasks for the models without a cluster section (reset between them)."""
    with Cluster(SPREAD) as cluster:
        yield cluster


@pytest.fixture
def ps_placed(spread):
    """The same tasks placing as replica_device_setter: variables on ps, compute on worker 0."""
    spread.reset()
    return spread.sharing(dataclasses.replace(SPREAD, placement="ps"))


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_model_matches_local_on_three_tasks(spread, path):
    spec = load_spec(path)
    # The spec's own cluster section where it has one; else every node spread round-robin.
    spread.reset()  # the last model's variables (same names, other shapes) go
    cluster = spread
    if spec.model.cluster:  # its placement and constraints, on the same tasks
        section = cluster_from_section(spec.model.cluster, spec.source, spec.graph_def)
        cluster = spread.sharing(dataclasses.replace(section, task_devices=dict(SPREAD.task_devices)))
    assert len(cluster.spec.tasks) == 3
    fetches = _fetches(spec)
    feeds = _feeds(spec, spec.model.inputs, np.random.default_rng(0))
    config = SessionConfig(devices="cpu:2", graph_seed=7)
    with Session(spec.graph_def, config) as local:
        if spec.variables:
            local.run([], targets=[spec.lowered.init_op])
        want = local.run(fetches, feeds)
    with Session(spec.graph_def, SessionConfig(graph_seed=7), cluster=cluster) as sess:
        if spec.variables:
            sess.run([], targets=[spec.lowered.init_op])
        before = sess.cross_task_batches
        got = sess.run(fetches, feeds)
        assert sess.cross_task_batches > before  # tensors crossed tasks in this very step
        step = next(p for p in sess._plans.values() if p.fetches == [f if ":" in f else f + ":0" for f in fetches])
        assert len(step.tasks) >= 2 and step.step.cross
        again = sess.run(fetches, feeds)  # cached plan, variables still on their tasks
    for name, a, b, c in zip(fetches, want, got, again):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6, err_msg=name)
        np.testing.assert_array_equal(c, b)


def test_variables_live_on_ps_and_compute_on_workers(ps_placed):
    spec = load_spec(MODELS[[p.stem for p in MODELS].index("digits_mlp")])
    with Session(spec.graph_def, SessionConfig(graph_seed=1), cluster=ps_placed) as sess:
        sess.run([], targets=[spec.lowered.init_op])
        x = np.random.default_rng(1).standard_normal((3, 64)).astype(np.float32)
        sess.run("probs", {"images": x})
        import ray

        held = ray.get([a.resources.remote() for a in sess.cluster.actors.values()])
        by_task = {t: sorted(v for r in res.values() for v in r) for t, res in zip(sess.cluster.actors, held)}
        assert by_task == {
            "/job:ps/replica:0/task:0": ["/hidden/bias", "/hidden/kernel", "/logits/bias", "/logits/kernel"],
            "/job:worker/replica:0/task:0": [],
            "/job:worker/replica:0/task:1": [],
        }
        plan = next(p for p in sess._plans.values() if p.fetches == ["probs:0"])
        compute = [n for g in plan.partitions.values() for n in g.nodes if n.op == "_FusedMatMul"]
        assert compute and all("/job:worker/replica:0/task:0/" in n.device for n in compute)


def test_rnn_loop_split_across_tasks(spread):
    """Every node of the loop, its control ops included, spread round-robin over 3 tasks (kept a
    loop: unroll_limit=0, else inference unrolls its 8 known steps)."""
    spread.reset()
    spec = load_spec(MODELS[[p.stem for p in MODELS].index("rnn_sequence_sum")])
    x = np.random.default_rng(2).uniform(-1, 1, (5, 8, 1)).astype(np.float32)
    with Session(spec.graph_def, SessionConfig(graph_seed=3)) as local:
        local.run([], targets=[spec.lowered.init_op])
        want = local.run("prediction", {"x": x})
    with Session(spec.graph_def, SessionConfig(graph_seed=3, unroll_limit=0), cluster=spread) as sess:
        sess.run([], targets=[spec.lowered.init_op])
        got = sess.run("prediction", {"x": x})
        plan = next(p for p in sess._plans.values() if p.fetches == ["prediction:0"])
        loop_tasks = {d.rsplit("/device", 1)[0] for d, g in plan.partitions.items()
                      for n in g.nodes if n.op in ("Enter", "Merge", "NextIteration") and n.name.startswith("rnn/")}
        assert len(loop_tasks) >= 2, loop_tasks
        loop_sends = [t for t in plan.step.cross if t.tensor.startswith("rnn/")]
        assert loop_sends
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


FAILING = """
specflow: 1
name: failing
inputs:
  x: {dtype: float32, shape: [4]}
  n: {dtype: int32, shape: [null]}
nodes:
  slow: {op: Square, inputs: [x], device: /job:worker/task:0}
  bad: {op: Reshape, inputs: [slow, n], device: /job:worker/task:1}
  out: {op: AddV2, inputs: [bad, slow], device: /job:worker/task:0}
"""


def test_first_error_aborts_the_step_on_every_task(spread):
    spec = load_spec_text(FAILING, "failing.yaml")
    x = np.arange(4, dtype=np.float32)
    with Session(spec.graph_def, cluster=spread) as sess:
        np.testing.assert_array_equal(sess.run("out", {"x": x, "n": np.array([4], np.int32)}), 2 * x * x)
        # worker:0 waits for 'bad' from worker:1, whose Reshape fails: without the abort
        # reaching worker:0 the step would hang until the timeout.
        t0 = time.perf_counter()
        with pytest.raises(RuntimeFailure) as e:
            sess.run("out", {"x": x, "n": np.array([3, 3], np.int32)}, timeout_s=20)
        took = time.perf_counter() - t0
        msg = str(e.value)
        assert took < 1.0, took
        assert msg.startswith("failing.yaml:9:")  # the spec line of 'bad'
        assert e.value.node == "bad"
        assert "Reshape on /job:worker/replica:0/task:1/device:CPU:0" in msg
        assert "timed out" not in msg
        # The tasks are fine afterwards.
        assert sess.run("out", {"x": x, "n": np.array([4], np.int32)}).shape == (4,)


QUEUE = """
specflow: 1
name: waits
inputs:
  x: {dtype: float32, shape: [2]}
nodes:
  q: {op: FIFOQueueV2, component_types: [float32], shapes: [[2]], device: /job:worker/task:1}
  item: {op: QueueDequeueV2, inputs: [q], component_types: [float32], device: /job:worker/task:1}
  out: {op: AddV2, inputs: [item, x], device: /job:worker/task:0}
"""


def test_step_timeout_across_tasks(spread):
    spec = load_spec_text(QUEUE, "waits.yaml")
    spread.reset()
    with Session(spec.graph_def, cluster=spread) as sess:
        for _ in range(2):  # the second time with the plan built and registered
            t0 = time.perf_counter()
            with pytest.raises(RuntimeFailure, match="timed out after 0.5s"):
                sess.run("out", {"x": np.ones(2, np.float32)}, timeout_s=0.5)
        assert time.perf_counter() - t0 < 1.5
        # The abort reached the blocked dequeue on worker:1: no step is left running there (the
        # abort and cleanup messages run on the task's threads, maybe after this one: poll).
        import ray

        task = sess.cluster.actors["/job:worker/replica:0/task:1"]
        deadline = time.monotonic() + 2
        while ray.get(task.running_steps.remote()) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert ray.get(task.running_steps.remote()) == []


def test_extend_and_shared_cluster(spread):
    spec = load_spec_text(FAILING, "f.yaml")
    x = np.ones(4, np.float32)
    with Session(spec.graph_def, cluster=spread) as a:
        a.run("out", {"x": x, "n": np.array([4], np.int32)})
        extra = load_spec_text(FAILING.replace("out:", "out2:").replace("bad:", "bad2:")
                               .replace("[bad,", "[bad2,").replace("slow:", "slow2:")
                               .replace("[slow", "[slow2").replace("slow]", "slow2]"), "g.yaml")
        a.extend(type(spec.graph_def)([n for n in extra.graph_def.nodes if n.name.endswith("2")]))
        assert a.run("out2", {"x": x, "n": np.array([4], np.int32)}).tolist() == [2.0] * 4
    assert spread.connected  # a session does not stop a cluster it was given
    with Session(spec.graph_def, cluster=spread) as b:
        assert b.run("out", {"x": x, "n": np.array([4], np.int32)}).tolist() == [2.0] * 4


def test_tasks_import_this_worktree(spread):
    import os

    import specflow

    assert len(spread.infos) == 3
    for info in spread.infos.values():
        # The same file, not the same string: a checkout reached through a symlink or a bind
        # mount has two names, and Ray hands workers the driver's physical working directory.
        assert os.path.samefile(info["specflow"], specflow.__file__)
        assert info["pid"] != os.getpid()
    assert len({info["pid"] for info in spread.infos.values()}) == 3


def test_tasks_share_the_cores_unless_told(spread):
    """Each task's BLAS gets its share of this machine's cores (three tasks on 2 cores: one
    thread each, not two apiece contending), or what ``cluster.task_threads`` says."""
    import os

    share = str(max(1, (os.cpu_count() or 1) // 3))
    assert {info["blas_threads"] for info in spread.infos.values()} == {share}
    with Cluster(ClusterSpec({"ps": 1, "worker": 1}, task_threads={"worker": 3})) as told:
        threads = {t.split("/")[1]: info["blas_threads"] for t, info in told.infos.items()}
    assert threads == {"job:ps": str(max(1, (os.cpu_count() or 1) // 2)), "job:worker": "3"}


@pytest.mark.parametrize("name, placement", [
    ("digits_mlp", "ps"),  # variables and Adam slots on ps, gradients from the worker
    ("rnn_sequence_sum", "round_robin"),  # a loop's gradient (stacks pushed forward, popped backward) over 3 tasks
])  # fmt: skip
def test_training_steps_match_local(spread, name, placement):
    from specflow.train.graph import build_training_graph

    spread.reset()
    cluster = spread.sharing(dataclasses.replace(SPREAD, placement=placement))
    spec = load_spec(MODELS[[p.stem for p in MODELS].index(name)])
    tg = build_training_graph(spec, spec.train, None)
    rng = np.random.default_rng(5)
    feeds = _feeds(spec, [n for n in spec.model.inputs], rng)
    if name == "digits_mlp":
        feeds["images"] = rng.standard_normal((16, 64)).astype(np.float32)
        feeds["labels"] = rng.integers(0, 10, 16)
    reads = [v.read for v in tg.trainable]
    runs = []
    for where in (None, cluster):
        with Session(tg.graph_def, SessionConfig(graph_seed=11), cluster=where) as sess:
            sess.run([], targets=[tg.init_op])
            losses = [sess.run([tg.loss, tg.train_op], feeds)[0] for _ in range(3)]
            runs.append((losses, sess.run(reads)))
            if where is not None:
                assert sess.cross_task_batches > 0
    (want_loss, want_vars), (got_loss, got_vars) = runs
    np.testing.assert_allclose(got_loss, want_loss, rtol=1e-5, atol=1e-6)
    for a, b in zip(got_vars, want_vars):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_large_tensors_travel_through_the_object_store(spread):
    """Arrays over STORE_BYTES cross by ray.put and arrive intact (and read-only: a variable
    assigned from one copies before updating it in place)."""
    from specflow.distributed.remote_rendezvous import STORE_BYTES

    n = STORE_BYTES // 4 * 3  # float32: three times the limit
    text = f"""
specflow: 1
name: big
inputs:
  x: {{dtype: float32, shape: [{n}]}}
variables:
  w: {{shape: [{n}], initializer: zeros, device: /job:ps/task:0}}
nodes:
  y: {{op: Mul, inputs: [x], y: 2.0, device: /job:worker/task:1}}
  set: {{op: AssignAddVariableOp, inputs: [w, y], device: /job:ps/task:0}}
  s: {{op: Sum, inputs: [w], axis: 0, device: /job:worker/task:0}}
"""
    spread.reset()
    spec = load_spec_text(text, "big.yaml")
    x = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    with Session(spec.graph_def, cluster=spread) as sess:
        sess.run([], targets=[spec.lowered.init_op])
        for _ in range(2):
            sess.run([], {"x": x}, targets=["set"])
        got = sess.run("s")
    np.testing.assert_allclose(got, (4 * x).sum(dtype=np.float64), rtol=1e-4)


def test_tasks_are_pointed_at_the_drivers_package(monkeypatch):
    """Ray puts only the driver's working directory on the tasks' path; a driver whose working
    directory is elsewhere (a test that chdir'd, a script run from /tmp) must still hand its
    own checkout to the tasks, ahead of any other editable install in site-packages."""
    import os

    import specflow
    from specflow.distributed.engine import _driver_code_env

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["/elsewhere", ""]))
    paths = _driver_code_env()["env_vars"]["PYTHONPATH"].split(os.pathsep)
    assert os.path.samefile(os.path.join(paths[0], "specflow", "__init__.py"), specflow.__file__)
    assert paths[1:] == ["/elsewhere"]
