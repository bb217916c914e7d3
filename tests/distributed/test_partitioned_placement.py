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


def bag_step_bytes(extra: str, sparse: bool, ps: int = 2):
    """Bytes crossing tasks in one training step of the benchmark's bag-of-embeddings model
    (vocab 50k x 64, batch 128 of 8 ids) on ps tasks + 1 worker, measured with a real batch."""
    from benchmarks.embedding_bytes import bag_step

    return bag_step(extra, sparse, ps)


def test_sparse_updates_send_only_the_batch_rows():
    dense, _ = bag_step_bytes("", sparse=False)
    sparse, _ = bag_step_bytes("", sparse=True)
    parted, step = bag_step_bytes(", partitions: 2", sparse=True)
    table = 50000 * 64 * 4
    assert sum(dense.values()) > table  # the whole table's gradient goes to the ps every step
    rows = 128 * 8 * 64 * 4  # every looked-up row's gradient, at most (+ ids)
    assert sum(sparse.values()) < 3 * rows and sum(parted.values()) < 3 * rows
    assert sum(parted.values()) < sum(dense.values()) / 20
    # The parts sit on both ps tasks; each gets its own ids and its rows' updates, sized by the batch.
    where = _variable_tasks(step)
    assert {where["emb/embeddings/part_0"], where["emb/embeddings/part_1"]} == {"/job:ps/replica:0/task:0",
                                                                                "/job:ps/replica:0/task:1"}
    for k in range(2):
        to_part = [t for t in step.cross if t.dst_device.startswith(where[f"emb/embeddings/part_{k}"] + "/")
                   and parted[t.tensor] > 1024]  # fmt: skip
        assert to_part and all(t.shape.dims[0] is None for t in to_part)  # rows: known only from the batch


def test_inspect_shows_the_parts():
    import json

    from typer.testing import CliRunner

    from specflow.cli import app

    r = CliRunner().invoke(app, ["inspect", str(MODELS / "word2vec_partitioned.yaml"), "--cluster", "local:ps=2,worker=1",
                                 "--placed", "--fetch", "score", "-f", "json"])  # fmt: skip
    assert r.exit_code == 0, r.output
    parted = {v["variable"]: v for v in json.loads(r.output)["partitioned_variables"]}
    assert set(parted) == {"target_vec/embeddings", "context_vec/embeddings"}
    target = parted["target_vec/embeddings"]
    assert target["shape"] == [35, 16]
    assert [(p["part"], p["rows"], p["bytes"]) for p in target["parts"]] == [
        ("target_vec/embeddings/part_0", [0, 18], 18 * 16 * 4), ("target_vec/embeddings/part_1", [18, 35], 17 * 16 * 4)]
    tasks = {p["task"] for v in parted.values() for p in v["parts"]}
    assert tasks == {"/job:ps/replica:0/task:0", "/job:ps/replica:0/task:1"}
    r = CliRunner().invoke(app, ["inspect", str(MODELS / "word2vec_partitioned.yaml"), "--cluster", "local:ps=2,worker=1",
                                 "--placed"])  # fmt: skip
    assert r.exit_code == 0 and "partitioned variables" in r.output and "18:35" in r.output


def test_sync_pushes_only_the_batch_rows_and_the_apply_stays_on_each_ps():
    """mode: sync keeps an embedding's gradient sparse: worker 0's push sends the batch's rows and
    ids into its slots on the table's ps (each part's to its own ps), and the chief's apply
    averages them there (only scalars cross between tasks)."""
    from benchmarks.embedding_bytes import sync_step_bytes

    rows = 128 * 8 * 64 * 4 + 128 * 8 * 4  # every looked-up row's gradient and its id
    dense, _, _ = sync_step_bytes("", sparse=False)
    assert sum(dense.values()) > 50000 * 64 * 4
    for extra in ("", ", partitions: 2"):
        pushed, applied, to_ps = sync_step_bytes(extra, sparse=True)
        assert rows <= sum(to_ps.values()) < rows + 8192, to_ps  # + the lookups' ids, the dense layer
        assert sum(applied.values()) < 1024
    assert min(to_ps.values()) > rows / 3  # the parts' rows went to both ps tasks
