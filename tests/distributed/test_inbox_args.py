"""A dataflow call's inbox values read as step arguments (distributed/inbox_args.py): the
receiving partitions become straight lines, and a dead value falls back to the receives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specflow.distributed import ClusterSpec
from specflow.distributed.inbox_args import arrives_by_inbox, inbox_as_args, inbox_values
from specflow.distributed.stages import stage_split
from specflow.distributed.task_partition import partition_piece
from specflow.distributed.training_plan import training_plan
from specflow.graph import dtypes
from specflow.graph.builder import GraphBuilder
from specflow.graph.control_flow import cond
from specflow.runtime.devices import local_devices
from specflow.runtime.executor import Executor
from specflow.schema.loader import load_spec

MODELS = Path(__file__).resolve().parents[2] / "models"
PS, W0 = "/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0"


def _staged_digits() -> dict:
    spec = load_spec(MODELS / "digits_mlp.yaml")
    return stage_split(training_plan(spec, ClusterSpec({"ps": 1, "worker": 1})).first.graphs)


@pytest.mark.parametrize("call", [f"{W0}#1", f"{PS}#2"])
def test_inbox_receives_become_arguments_and_the_partition_a_straight_line(call):
    """The worker's step receives the weights, the ps's updates the gradients (and a stage of
    its own task's handles): each becomes an _Arg past the feeds, and nothing async is left."""
    parts = list(partition_piece(_staged_digits()[call]).partitions.items())
    recvs = [n for _, g in parts for n in g.nodes if n.op == "_Recv"]
    assert recvs and all(arrives_by_inbox(n) for n in recvs)
    made = inbox_as_args([g for _, g in parts], n_feeds=2)
    assert made is not None
    graphs, slots = made
    assert sorted(slots.values()) == list(range(len(recvs)))
    args = {n.name: n.attrs["index"] for g in graphs for n in g.nodes if n.op == "_Arg" and n.name in
            {r.name for r in recvs}}  # fmt: skip
    assert sorted(args.values()) == [2 + k for k in range(len(recvs))]
    assert not any(n.op == "_Recv" for g in graphs for n in g.nodes)
    device = local_devices("cpu:1", job=call.split("/")[1][4:], task=0)[0]
    for g in graphs:
        for n in g.nodes:
            n.device = device.name
        assert Executor(g, device).straight_line


def test_inbox_values_want_each_slot_once_and_alive():
    slots = {"a": 0, "b": 1}
    assert inbox_values(slots, [("b", 2, False), ("a", 1, False)]) == [1, 2]
    assert inbox_values(slots, [("a", 1, False), ("b", 2, True)]) is None  # dead: flows as deadness
    assert inbox_values(slots, [("a", 1, False)]) is None
    assert inbox_values(slots, [("a", 1, False), ("a", 1, False)]) is None
    assert inbox_values(slots, [("a", 1, False), ("c", 2, False)]) is None


def _cond_across_tasks():
    """cond(flag, x * y on the ps, sin(x) on the worker), switched on the ps and merged on the
    worker: whichever way flag goes, a value crossing tasks is dead."""
    b = GraphBuilder()
    for name, dtype in (("flag", dtypes.bool_), ("x", dtypes.float32), ("y", dtypes.float32)):
        b.add_op("Placeholder", attrs={"dtype": dtype, "shape": [] if name == "flag" else [3]}, name=name)
    r = cond(b, "flag", lambda b, a, c: b.add_op("Mul", [a, c], name="prod").name,
             lambda b, a, c: b.add_op("Sin", [a], name="sine").name, ["x", "y"])  # fmt: skip
    b.add_op("Identity", [r.outputs[0]], name="out")
    g = b.graph_def
    for n in g.nodes:
        on_ps = n.name.endswith("prod") or n.op in ("Switch", "Placeholder")
        n.device = f"{PS}/device:CPU:0" if on_ps else f"{W0}/device:CPU:0"
    return g


@pytest.mark.parametrize("flag", [True, False])
def test_dead_values_across_tasks_fall_back_to_receives(ray_local, flag):
    from specflow.distributed import Cluster
    from specflow.runtime.session import Session

    g = _cond_across_tasks()
    feeds = {"flag": np.array(flag), "x": np.array([0.5, 1.0, -2.0], np.float32),
             "y": np.array([2.0, 3.0, 4.0], np.float32)}  # fmt: skip
    unplaced = g.copy()
    for n in unplaced.nodes:
        n.device = ""
    with Session(unplaced) as local:
        want = local.run("out", feeds)
    with Cluster(ClusterSpec({"ps": 1, "worker": 1})) as tasks, Session(g, cluster=tasks) as sess:
        for _ in range(2):  # the second time on the cached fast partitions or their fallback
            np.testing.assert_allclose(sess.run("out", feeds), want, rtol=1e-6)
        assert sess._plans and all(p.flow is not None for p in sess._plans.values())
