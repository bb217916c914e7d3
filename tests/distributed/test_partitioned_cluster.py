"""Partitioned embeddings on a local Ray cluster (ps=2, worker=2; one Ray instance for the module):
lookups and gradients equal the local run's, the parts live on both ps tasks, and training
reaches the local run's accuracy with a checkpoint an unpartitioned run restores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specflow.distributed import Cluster, ClusterSpec
from specflow.io.tensor_bundle import read_bundle_index
from specflow.runtime.session import Session, SessionConfig
from specflow.schema.loader import load_spec
from specflow.train.evaluate import evaluate_checkpoint
from specflow.train.gradients import gradients
from specflow.train.loop import Trainer, TrainOptions

MODELS = Path(__file__).resolve().parents[2] / "models"
PARTS = [f"{t}/embeddings/part_{k}" for t in ("target_vec", "context_vec") for k in range(2)]


@pytest.fixture(scope="module")
def cluster(ray_local):
    with Cluster(ClusterSpec({"ps": 2, "worker": 2})) as c:
        yield c


def test_lookup_and_gradients_match_local_with_parts_on_both_ps(cluster):
    cluster.reset()
    spec = load_spec(MODELS / "word2vec_partitioned.yaml")
    b = spec.lowered.builder
    handles = [f"{p}:0" for p in PARTS]
    grads = gradients(b, ["loss:0"], handles)
    rng = np.random.default_rng(0)
    feeds = {"center": rng.integers(0, 35, 64).astype(np.int32), "context": rng.integers(0, 35, 64).astype(np.int32),
             "label": rng.integers(0, 2, 64).astype(np.float32)}  # fmt: skip
    fetches = ["target_vec:0", "context_vec:0", "loss:0", *grads]
    with Session(b.graph_def, SessionConfig(graph_seed=3)) as local:
        local.run([], targets=[spec.lowered.init_op])
        want = local.run(fetches, feeds)
    with Session(b.graph_def, SessionConfig(graph_seed=3), cluster=cluster) as sess:
        sess.run([], targets=[spec.lowered.init_op])
        got = sess.run(fetches, feeds)
        import ray

        held = ray.get([a.resources.remote() for a in sess.cluster.actors.values()])
        by_task = {t: sorted(v for r in res.values() for v in r) for t, res in zip(sess.cluster.actors, held)}
    for name, a, g in zip(fetches, want, got):
        np.testing.assert_allclose(g, a, rtol=1e-6, atol=1e-6, err_msg=name)
    on_ps = [by_task[f"/job:ps/replica:0/task:{t}"] for t in range(2)]
    assert all(any("/part_" in v for v in held_vars) for held_vars in on_ps), by_task  # parts on both ps


def test_training_on_two_workers_reaches_the_local_accuracy(cluster, tmp_path):
    from specflow.distributed.training import DistributedTrainer

    cluster.reset()
    spec = load_spec(MODELS / "word2vec_partitioned.yaml")
    local = Trainer(spec, TrainOptions(logdir=tmp_path / "local", steps=200)).run()
    dist = DistributedTrainer(spec, TrainOptions(logdir=tmp_path / "dist", steps=200), cluster=cluster).run()
    assert dist.step == local.step == 200
    # Each ps saved its parts as slices of the whole variable (TF's layout); the merge joined them.
    index = read_bundle_index(str(tmp_path / "dist" / "model.ckpt-200"))
    for name in ("target_vec/embeddings", "context_vec/embeddings"):
        assert [d.size for d in index[name].shape.dim] == [35, 16] and len(index[name].slices) == 2, name
    assert not [n for n in index if "/part_" in n and not n.startswith("_specflow/")]
    _, metrics = evaluate_checkpoint(spec, tmp_path / "dist")
    assert metrics["accuracy"] > local.eval_metrics["accuracy"] - 0.03, (metrics, local.eval_metrics)
    # The unpartitioned model restores the parts joined (target_vec looks ids up by `div`, so
    # its vectors are the same; context_vec's `mod` parts are joined as TensorFlow joins them).
    whole = load_spec(MODELS / "word2vec.yaml")
    _, restored = evaluate_checkpoint(whole, tmp_path / "dist")
    assert np.isfinite(restored["loss"])
