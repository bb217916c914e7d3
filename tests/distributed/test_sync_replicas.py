"""SyncReplicas' graph pieces in one local session (no Ray): averaging and stale dropping."""

from __future__ import annotations

from pathlib import Path

import numpy as np

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
