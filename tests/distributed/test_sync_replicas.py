"""SyncReplicas' graph pieces in one local session (no Ray): averaging and stale dropping."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specflow.distributed.sync_replicas import SyncReplicas
from specflow.runtime.session import Session, SessionConfig
from specflow.schema.loader import load_spec_text
from specflow.train.graph import build_training_graph

DIGITS = (Path(__file__).resolve().parents[2] / "models" / "digits_mlp.yaml").read_text()
SPEC = load_spec_text(DIGITS.replace("{adam: {learning_rate: 0.001}}", "{sgd: {learning_rate: 0.5}}"), "digits.yaml")
W = ["hidden/kernel", "logits/kernel"]


def _batch(seed, n=16):
    rng = np.random.default_rng(seed)
    return {"images": rng.standard_normal((n, 64)).astype(np.float32), "labels": rng.integers(0, 10, n)}


def _plain_step(feeds):
    g = build_training_graph(SPEC, SPEC.train, None)
    with Session(g.graph_def, SessionConfig(graph_seed=SPEC.model.seed)) as s:
        s.run([], targets=[g.init_op])
        s.run([], feeds, targets=[g.train_op])
        return s.run([f"{w}/Read/ReadVariableOp" for w in W])


def _sync_step(pushes):
    """``pushes``: (worker, local_step, feeds); then one apply. Returns weights, global step."""
    sync = SyncReplicas(3)
    g = build_training_graph(SPEC, SPEC.train, None, replicas=sync)
    assert not any(v.name.startswith("sync_replicas/") for v in g.variables)  # never checkpointed
    with Session(g.graph_def, SessionConfig(graph_seed=SPEC.model.seed)) as s:
        s.run([], targets=[g.init_op])
        for k, step, feeds in pushes:
            s.run([], {**feeds, sync.local_step: step}, targets=[sync.push_ops[k]])
        s.run([], targets=[g.train_op])
        return s.run([f"{w}/Read/ReadVariableOp" for w in W]), int(s.run(g.global_step.read))


def test_average_of_fresh_pushes_equals_the_big_batch():
    a, b = _batch(1), _batch(2)
    want = _plain_step({k: np.concatenate([a[k], b[k]]) for k in a})
    got, step = _sync_step([(0, 0, a), (2, 0, b)])  # worker 1 never pushed: its slot counts nothing
    assert step == 1
    for x, y in zip(got, want):
        np.testing.assert_allclose(x, y, atol=1e-6)


def test_stale_gradients_are_dropped():
    a, stale = _batch(1), _batch(3)
    want = _plain_step(a)
    got, _ = _sync_step([(0, 0, a), (1, -4, stale)])  # computed at an older global step
    for x, y in zip(got, want):
        np.testing.assert_allclose(x, y, atol=1e-6)


BAG = """specflow: 1
name: bag
seed: 0
inputs:
  ids: {dtype: int32, shape: [null, 3]}
  labels: {dtype: int32, shape: [null]}
nodes:
  emb: {layer: embedding, inputs: [ids], input_dim: 20, output_dim: 4}
  logits: {layer: dense, inputs: [{op: Mean, inputs: [emb], axis: 1}], units: 2}
  loss: {op: Mean, inputs: [{op: SparseSoftmaxCrossEntropyWithLogits, inputs: [logits, labels]}]}
train:
  loss: loss
  optimizer: {OPT}
  data: {source: {npz: unused.npz}, feeds: {ids: ids, labels: labels}, batch_size: 4}
"""
OPTS = ["sgd: {learning_rate: 0.5}", "adagrad: {learning_rate: 0.5}", "momentum: {learning_rate: 0.5}"]
BAG_W = ["emb/embeddings", "logits/kernel"]


def _ids(seed, lo=0, hi=20, n=4):
    rng = np.random.default_rng(seed)  # ids repeat within and across batches: duplicates add up
    return {"ids": rng.integers(lo, hi, (n, 3)).astype(np.int32), "labels": rng.integers(0, 2, n).astype(np.int32)}


def _bag_runs(opt, steps, sync=None, clip=None):
    """Weights after ``steps`` (a list of per-step batches, or with ``sync`` of per-step pushes
    (worker, local_step, feeds) each followed by one apply), and the session's slot values."""
    text = BAG.replace("OPT", opt) + (f"  clip_global_norm: {clip}\n" if clip else "")
    spec = load_spec_text(text, "bag.yaml")
    g = build_training_graph(spec, spec.train, None, replicas=sync)
    with Session(g.graph_def, SessionConfig(graph_seed=0)) as s:
        s.run([], targets=[g.init_op])
        for step in steps:
            if sync is None:
                s.run([], step, targets=[g.train_op])
                continue
            for k, local, feeds in step:
                s.run([], {**feeds, sync.local_step: local}, targets=[sync.push_ops[k]])
            s.run([], targets=[g.train_op])
        slots = dict(zip([v.name for v in sync.slots], s.run([v.read for v in sync.slots]))) if sync else {}
        return s.run([f"{w}/Read/ReadVariableOp" for w in BAG_W]), slots


@pytest.mark.parametrize("opt", OPTS)
def test_sparse_gradients_stay_sparse_and_average_to_the_big_batch(opt):
    a, b = _ids(1), _ids(2)
    both = {k: np.concatenate([a[k], b[k]]) for k in a}
    sync = SyncReplicas(3)
    got, slots = _bag_runs(opt, [[(0, 0, a), (2, 0, b)]], sync)  # worker 1 never pushed
    want, _ = _bag_runs(opt, [both])
    for w, x, y in zip(BAG_W, got, want):
        assert not np.allclose(x, _bag_runs(opt, [])[0][BAG_W.index(w)]), w  # it moved
        np.testing.assert_allclose(x, y, atol=1e-6, err_msg=w)
    # Only the batch's rows were pushed (12 lookups of 4 floats), never the 20 x 4 table.
    assert slots["sync_replicas/emb/embeddings/rows_0"].shape == (12, 4)
    np.testing.assert_array_equal(slots["sync_replicas/emb/embeddings/ids_0"], a["ids"].ravel())
    assert slots["sync_replicas/emb/embeddings/rows_1"].shape == (0, 4)
    assert "sync_replicas/emb/embeddings/grad_0" not in slots and "sync_replicas/logits/kernel/grad_0" in slots


def test_a_stale_workers_rows_touch_nothing():
    """Momentum decays the velocity of every row a sparse update touches: a stale worker's rows
    (ids 0..9, moving since step 1, which step 2's fresh batch does not look up) must not be
    among them, not even as zeros."""
    opt = "momentum: {learning_rate: 0.5}"
    a, c, stale = _ids(1, hi=10), _ids(3, lo=10), _ids(4, hi=10)
    want, _ = _bag_runs(opt, [a, c])
    got, _ = _bag_runs(opt, [[(0, 0, a)], [(0, 1, c), (1, 0, stale)]], SyncReplicas(2))
    for w, x, y in zip(BAG_W, got, want):
        np.testing.assert_allclose(x, y, atol=1e-6, err_msg=w)


def test_clipped_sparse_gradients_stay_sparse_and_count_rows_unmerged():
    """clip_global_norm keeps the embedding's gradient sparse (TF's norm of an IndexedSlices: its
    rows unmerged); a sync worker clips its own gradient before pushing it."""
    opt, a = "sgd: {learning_rate: 0.5}", _ids(1)
    spec = load_spec_text(BAG.replace("OPT", opt) + "  clip_global_norm: 0.01\n", "bag.yaml")
    g = build_training_graph(spec, spec.train, None)
    with Session(g.graph_def, SessionConfig(graph_seed=0)) as s:
        s.run([], targets=[g.init_op])
        before = s.run([f"{w}/Read/ReadVariableOp" for w in BAG_W])
        *grads, norm = s.run([g.gradients[v.name] for v in g.trainable] + [g.global_norm], a)  # clipped
        s.run([], a, targets=[g.train_op])
        after = s.run([f"{w}/Read/ReadVariableOp" for w in BAG_W])
    assert [v.name for v in g.trainable][:2] == BAG_W
    assert grads[0].shape == (12, 4) and norm > 0.01  # the table's: one row per lookup; it clipped
    # Clipped to norm 0.01 counting each row as it is (merging repeated ids first would not).
    np.testing.assert_allclose(np.sqrt(sum(np.sum(x.astype(np.float64) ** 2) for x in grads)), 0.01, rtol=1e-5)
    table = before[0].copy()
    np.add.at(table, a["ids"].ravel(), -0.5 * grads[0])
    np.testing.assert_allclose(after[0], table, atol=1e-6)
    np.testing.assert_allclose(after[1], before[1] - 0.5 * grads[1], atol=1e-6)
    got, slots = _bag_runs(opt, [[(1, 0, a)]], SyncReplicas(2), clip=0.01)
    for w, x, y in zip(BAG_W, got, after):
        np.testing.assert_allclose(x, y, atol=1e-6, err_msg=w)
    assert slots["sync_replicas/emb/embeddings/rows_1"].shape == (12, 4)
