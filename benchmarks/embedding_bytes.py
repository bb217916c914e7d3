"""Bytes crossing tasks per training step of an embedding model: ``python -m benchmarks.embedding_bytes``.

A bag-of-embeddings classifier (vocab 50,000 x 64 float32 = 12.8 MB table, 8 ids per example,
batch 128, SGD) placed on ps tasks + 1 worker; each row is one training step's tensors between
tasks, measured with a real batch (``specflow.distributed.transfer_bytes``: the plan's
transfers sized by the values a local run of the same step gives). Dense gradients send the
whole table's gradient to the ps every step; sparse ones (IndexedSlices) only the looked-up rows;
a partitioned table also spreads those rows (and the lookups) over the ps tasks. The sync rows
(``mode: sync``, 2 workers) measure worker 0's push (its gradients into its slots on the ps) and
the chief's apply (the average and update, on ps 0 and the table's ps) of one step. No Ray needed.
"""

from __future__ import annotations

import sys

import numpy as np

from specflow.distributed import ClusterSpec
from specflow.distributed.placement import TaskAssignment, compile_cluster_step, task_of
from specflow.distributed.replicas import DRIVER_TASK, ReplicaAssignment
from specflow.distributed.sync_replicas import SyncReplicas
from specflow.distributed.transfer_bytes import measured_cross_bytes
from specflow.schema.loader import load_spec_text
from specflow.train.graph import build_training_graph

BAG = """specflow: 1
name: bag
seed: 0
inputs:
  ids: {dtype: int32, shape: [null, 8]}
  labels: {dtype: int32, shape: [null]}
nodes:
  emb: {layer: embedding, inputs: [ids], input_dim: 50000, output_dim: 64EXTRA}
  pooled: {op: Mean, inputs: [emb], axis: 1}
  logits: {layer: dense, inputs: [pooled], units: 4}
  loss: {op: Mean, inputs: [{op: SparseSoftmaxCrossEntropyWithLogits, inputs: [logits, labels]}]}
train:
  loss: loss
  optimizer: {OPT}
  data: {source: {npz: unused.npz}, feeds: {ids: ids, labels: labels}, batch_size: 128}
"""

CASES = [  # label, spec extra, sparse gradients, ps tasks
    ("one table, dense gradients", "", False, 2),
    ("one table, sparse gradients", "", True, 2),
    ("partitions: 2, sparse", ", partitions: 2", True, 2),
    ("partitions: 4, sparse", ", partitions: 4", True, 2),
]
SYNC_CASES = [  # label, spec extra, sparse gradients
    ("sync, one table, dense", "", False),
    ("sync, one table, sparse", "", True),
    ("sync, partitions: 2, sparse", ", partitions: 2", True),
]
WORKER0 = "/job:worker/replica:0/task:0"


def _batch(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"ids": rng.integers(0, 50000, (128, 8)).astype(np.int32), "labels": rng.integers(0, 4, 128).astype(np.int32)}


def bag_step(extra: str, sparse: bool, ps: int = 2, optimizer: str = "sgd: {learning_rate: 0.1}"):
    """(tensor -> bytes crossing tasks in one training step of the bag-of-embeddings model on
    ``ps`` tasks + 1 worker, measured with a real batch; the compiled cluster step)."""
    spec = load_spec_text(BAG.replace("EXTRA", extra).replace("OPT", optimizer), "bag.yaml")
    tg = build_training_graph(spec, spec.train, None, sparse_gradients=sparse)
    cluster = ClusterSpec({"ps": ps, "worker": 1})
    step = compile_cluster_step(tg.graph_def, cluster, TaskAssignment(cluster), feeds=["ids", "labels"],
                                targets=[tg.train_op])  # fmt: skip
    feeds = _batch()
    return measured_cross_bytes(tg.graph_def, step, feeds, [tg.train_op], setup=[tg.init_op]), step


def step_bytes(extra: str, sparse: bool, ps: int, optimizer: str = "sgd: {learning_rate: 0.1}"):
    """(tensor -> bytes crossing tasks in one step, ps task -> bytes it receives)."""
    sizes, step = bag_step(extra, sparse, ps, optimizer)
    to_ps: dict[str, int] = {}
    for t in step.cross:
        dst = task_of(t.dst_device)
        if dst.startswith("/job:ps"):
            to_ps[dst] = to_ps.get(dst, 0) + sizes[t.tensor]
    return sizes, to_ps


def sync_step_bytes(extra: str, sparse: bool, optimizer: str = "sgd: {learning_rate: 0.1}", workers: int = 2):
    """Sync mode on 2 ps + ``workers``: (tensor -> bytes crossing tasks in worker 0's push, the
    same in the chief's apply once every worker pushed; ps task -> bytes the push sends it)."""
    spec = load_spec_text(BAG.replace("EXTRA", extra).replace("OPT", optimizer), "bag.yaml")
    sync = SyncReplicas(workers)
    tg = build_training_graph(spec, spec.train, None, replicas=sync, sparse_gradients=sparse)
    cluster = ClusterSpec({"ps": 2, "worker": workers}, placement="ps")
    push = compile_cluster_step(tg.graph_def, cluster, ReplicaAssignment(cluster, WORKER0),
                                feeds=["ids", "labels", sync.local_step], targets=[sync.push_ops[0]])  # fmt: skip
    pushes = [([sync.push_ops[k]], {**_batch(k), sync.local_step: 0}) for k in range(workers)]
    pushed = measured_cross_bytes(tg.graph_def, push, pushes[0][1], [sync.push_ops[0]], setup=[tg.init_op])
    apply = compile_cluster_step(tg.graph_def, cluster, ReplicaAssignment(cluster, DRIVER_TASK), targets=[tg.train_op])
    applied = measured_cross_bytes(tg.graph_def, apply, {}, [tg.train_op], setup=[tg.init_op], before=pushes)
    to_ps: dict[str, int] = {}
    for t in push.cross:
        if task_of(t.dst_device).startswith("/job:ps"):
            to_ps[task_of(t.dst_device)] = to_ps.get(task_of(t.dst_device), 0) + pushed[t.tensor]
    return pushed, applied, to_ps


def main() -> int:
    for optimizer in ("sgd: {learning_rate: 0.1}", "adam: {learning_rate: 0.001}"):
        print(f"bag of embeddings 50000 x 64, batch 128 x 8 ids, {optimizer.split(':')[0]}, 1 worker")
        print(f"{'':32s} {'total MB/step':>14s}  worker -> each ps (MB)")
        for label, extra, sparse, ps in CASES:
            sizes, to_ps = step_bytes(extra, sparse, ps, optimizer)
            per_ps = ", ".join(f"{to_ps.get(f'/job:ps/replica:0/task:{t}', 0) / 1e6:.3f}" for t in range(ps))
            print(f"{label:32s} {sum(sizes.values()) / 1e6:14.3f}  {per_ps}")
        print("sync, 2 workers: worker 0's step (push) and the chief's apply")
        print(f"{'':32s} {'push MB/step':>14s}  {'apply kB/step':>14s}  worker 0 -> each ps (MB)")
        for label, extra, sparse in SYNC_CASES:
            pushed, applied, to_ps = sync_step_bytes(extra, sparse, optimizer)
            per_ps = ", ".join(f"{to_ps.get(f'/job:ps/replica:0/task:{t}', 0) / 1e6:.3f}" for t in range(2))
            print(f"{label:32s} {sum(pushed.values()) / 1e6:14.3f}  {sum(applied.values()) / 1e3:14.3f}  {per_ps}")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
