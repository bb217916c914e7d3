"""Placement of variables, their optimizer slots and partitioned variables on ps tasks (no Ray)."""

from __future__ import annotations

from pathlib import Path

from specflow.distributed import ClusterSpec
from specflow.distributed.placement import TaskAssignment, compile_cluster_step, task_of
from specflow.schema.loader import load_spec
from specflow.train.graph import build_training_graph

MODELS = Path(__file__).resolve().parents[2] / "models"


def _variable_tasks(cs) -> dict[str, str]:
    return {n.name: task_of(n.device) for g in cs.compiled.partitioned.partitions.values() for n in g.nodes
            if n.op == "VarHandleOp"}  # fmt: skip


def test_slots_sit_with_their_variable_on_two_ps_tasks():
    # Greedy by bytes alone would put hidden/kernel's Adam slots on the other ps task than the
    # kernel; the update op needs all three on one device.
    spec = load_spec(MODELS / "digits_mlp.yaml")
    tg = build_training_graph(spec, spec.train, None)
    cluster = ClusterSpec({"ps": 2, "worker": 1})
    a = TaskAssignment(cluster)
    init = compile_cluster_step(tg.graph_def, cluster, a, targets=[tg.init_op])
    step = compile_cluster_step(tg.graph_def, cluster, a, feeds=["images", "labels"], targets=[tg.train_op])
    for cs in (init, step):
        where = _variable_tasks(cs)
        for v in tg.trainable:
            assert where[f"{v.name}/Adam"] == where[f"{v.name}/Adam_1"] == where[v.name]
    assert {where[v.name] for v in tg.trainable} == {"/job:ps/replica:0/task:0", "/job:ps/replica:0/task:1"}
