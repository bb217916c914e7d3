"""The step protocols: dataflow (tasks without a transfer cycle) against push, and the master's
deadlock watch over pushing tasks."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from specflow.distributed import Cluster, ClusterSpec
from specflow.errors import RuntimeFailure
from specflow.runtime import frame_info
from specflow.runtime.session import Session, SessionConfig
from specflow.schema.loader import load_spec

MLP = load_spec(Path(__file__).resolve().parents[2] / "models" / "digits_mlp.yaml")
X = np.random.default_rng(4).standard_normal((5, 64)).astype(np.float32)


@pytest.fixture(scope="module")
def ps_worker(ray_local):
    with Cluster(ClusterSpec({"ps": 1, "worker": 1})) as cluster:
        yield cluster


def _probs(cluster, **attrs):
    """Four steps of digits_mlp's probs on the cluster, and its plan (the tasks' state reset
    first: random initializers' state lives on the tasks across sessions)."""
    cluster.reset()
    with Session(MLP.graph_def, SessionConfig(graph_seed=2), cluster=cluster) as sess:
        for k, v in attrs.items():
            setattr(sess, k, v)
        sess.run([], targets=[MLP.lowered.init_op])
        before = sess.cross_task_batches
        got = [sess.run("probs", {"images": X}) for _ in range(4)]
        plan = next(p for p in sess._plans.values() if p.fetches == ["probs:0"])
        return got, plan, sess.cross_task_batches - before


def test_tasks_without_a_cycle_use_the_dataflow_protocol(ps_worker):
    with Session(MLP.graph_def, SessionConfig(graph_seed=2)) as local:
        local.run([], targets=[MLP.lowered.init_op])
        want = local.run("probs", {"images": X})
    flow, plan, batches = _probs(ps_worker)
    assert plan.flow is not None and [t for t, *_ in plan.flow] == ["/job:ps/replica:0/task:0",
                                                                   "/job:worker/replica:0/task:0"]
    assert batches == 4  # the weights, once a step, ps -> worker
    push, push_plan, push_batches = _probs(ps_worker, dataflow=False)
    assert push_plan.flow is None and push_batches >= 4
    for a, b in zip(flow, push):
        np.testing.assert_allclose(a, want, rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(a, b)


def test_a_deadlock_across_tasks_fails_naming_the_receives(ray_local, monkeypatch):
    """runtime/test_loops_split's deadlock (the old per-iteration gating of a loop var's Enter
    value), its two devices on two tasks: both tasks go idle with receives pending; the master's
    watch fails the step well before its timeout."""
    from tests.runtime.test_loops_split import FEEDS, loop_vars_entered_on_cpu1, rnn_graph

    monkeypatch.setattr(frame_info.ControlFlowInfo, "first_only", lambda self, name: False)
    b, r, _, ph = rnn_graph()
    loop_vars_entered_on_cpu1(b)
    for n in b.graph_def.nodes:
        n.device = n.device.replace("/cpu:", "/job:worker/task:")
    feeds = {ph[k]: v for k, v in FEEDS.items()}
    # unroll_limit=0: keep the loop (its trip count is known, so inference would unroll it)
    with Cluster(ClusterSpec({"worker": 2})) as cluster, \
            Session(b.graph_def, SessionConfig(unroll_limit=0), cluster=cluster) as sess:
        t0 = time.monotonic()
        with pytest.raises(RuntimeFailure, match="step deadlocked across tasks") as e:
            sess.run(r.outputs[1], feeds=feeds, timeout_s=30)
        assert time.monotonic() - t0 < 10  # found in about a second, not timed out
        assert "rnn/h/Enter:0 on /job:worker/replica:0/task:0/device:CPU:0 in frame" in str(e.value)
        assert "timed out" not in str(e.value)


def test_a_pure_read_is_passed_on_again_until_something_writes_the_task(ps_worker):
    """The ps's piece of a forward step only reads the weights: the master passes its last
    outbox on instead of calling it, until a step that may write there (here another session's
    init, with other random values) has run; a failed read is never kept."""
    ps_worker.reset()
    a = Session(MLP.graph_def, SessionConfig(graph_seed=2), cluster=ps_worker)
    b = Session(MLP.graph_def, SessionConfig(graph_seed=5), cluster=ps_worker)
    with a, b:
        with pytest.raises(RuntimeFailure) as e:  # not initialized: the ps's own error, not its worker's
            a.run("probs", {"images": X})
        assert "/job:ps/" in str(e.value) and "upstream" not in str(e.value)
        a.run([], targets=[MLP.lowered.init_op])
        first = a.run("probs", {"images": X})
        assert a.reads_reused == 0
        np.testing.assert_array_equal(a.run("probs", {"images": X}), first)
        assert a.reads_reused == 1
        b.run([], targets=[MLP.lowered.init_op])
        want = b.run("probs", {"images": X})
        got = a.run("probs", {"images": X})
        assert a.reads_reused == 1  # called again: the weights changed
        assert not np.allclose(want, first)
        np.testing.assert_array_equal(got, want)
        ps_worker.reset()
        with pytest.raises(RuntimeFailure):  # the variables are gone, and the read says so
            a.run("probs", {"images": X})
