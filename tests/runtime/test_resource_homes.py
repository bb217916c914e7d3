"""A Session's resources keep one device across its steps (runtime/resource_homes.py): the init
step and a training step, each placed on its own pruned graph, used to put a variable (Adam's
beta2_power) on different devices, and the training step failed reading it uninitialized."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from specflow import load_spec
from specflow.graph.graph_def import GraphDef, NodeDef
from specflow.runtime.resource_homes import ResourceHomes, creates_resource
from specflow.runtime.session import Session, SessionConfig
from specflow.train.evaluate import load_split
from specflow.train.graph import build_training_graph

MLP = Path(__file__).resolve().parents[2] / "models" / "digits_mlp.yaml"


def _homes(plans) -> dict[str, set[str]]:
    homes: dict[str, set[str]] = {}
    for plan in plans:
        for dev, g in plan.partitions.items():
            for n in g.nodes:
                if n.op == "VarHandleOp":
                    homes.setdefault(n.name, set()).add(dev)
    return homes


def test_every_step_of_a_session_places_a_variable_on_the_same_device():
    """The CLI trainer's steps: init, the global step, a training step fed by the input queue."""
    spec = load_spec(MLP)
    tg = build_training_graph(spec, spec.train, load_split(spec, spec.train)[0])
    with Session(tg.graph_def, SessionConfig(devices="cpu:2", graph_seed=0)) as sess:
        plans = [sess.plan_for([], targets=[tg.init_op]), sess.plan_for(tg.global_step.read),
                 sess.plan_for(tg.loss, targets=[tg.train_op])]
    homes = _homes(plans)
    assert "beta2_power" in homes
    assert {v: d for v, d in homes.items() if len(d) > 1} == {}


def test_training_on_two_devices_matches_one_device():
    spec = load_spec(MLP)
    tg = build_training_graph(spec, spec.train, None)
    rng = np.random.default_rng(0)
    feeds = [{"images": rng.random((8, 64), dtype=np.float32), "labels": rng.integers(0, 10, 8)} for _ in range(3)]
    runs = []
    for devices in ("cpu:2", "cpu:1"):
        with Session(tg.graph_def, SessionConfig(devices=devices, graph_seed=0)) as sess:
            sess.run([], targets=[tg.init_op])
            losses = [sess.run(tg.loss, f, targets=[tg.train_op]) for f in feeds]
            runs.append((losses, sess.run([v.read for v in tg.trainable])))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    for a, b in zip(runs[0][1], runs[1][1], strict=True):
        np.testing.assert_array_equal(a, b)


def test_homes_cover_nodes_added_by_extend_and_keep_the_earlier_ones():
    devices = ["/job:localhost/replica:0/task:0/device:CPU:0", "/job:localhost/replica:0/task:0/device:CPU:1"]
    var = {"dtype": "float32", "shape": [2], "shared_name": ""}
    homes = ResourceHomes(devices)
    g = GraphDef([NodeDef("a", "VarHandleOp", attrs=dict(var), device="/cpu:1")])
    homes.update(g)
    assert homes.homes == {"a": devices[1]}
    g = GraphDef([*g.nodes, NodeDef("b", "VarHandleOp", attrs=dict(var))])
    homes.update(g)
    assert homes.homes["a"] == devices[1] and homes.homes["b"] in devices
    pinned = homes.pin(GraphDef([NodeDef("b", "VarHandleOp", attrs=dict(var))]))
    assert pinned.nodes[0].device == homes.homes["b"]
    assert creates_resource("VarHandleOp") and creates_resource("FIFOQueueV2")
    assert not creates_resource("ReadVariableOp") and not creates_resource("MatMul")


def test_homes_are_found_beside_nodes_of_ops_specflow_lacks():
    """A loaded SavedModel's graph holds restore functions' ops specflow lacks: the homes come
    from the graph without them (and what depends on them), not from each step on its own,
    which put a GRU's variables on one device for the restore and another for its loop's reads."""
    devices = ["/job:localhost/replica:0/task:0/device:CPU:0", "/job:localhost/replica:0/task:0/device:CPU:1"]
    var = {"dtype": "float32", "shape": [2], "shared_name": ""}
    g = GraphDef([
        NodeDef("a", "VarHandleOp", attrs=dict(var), device="/cpu:1"),
        NodeDef("odd", "ImaginaryOpXyz", ["a"]),
        NodeDef("after", "Identity", ["odd"], attrs={"T": "resource"}),
    ])  # fmt: skip
    homes = ResourceHomes(devices)
    homes.update(g)
    assert homes.homes == {"a": devices[1]}
