"""Async replicas' own loops (replica_loop.py) against the driver running every step."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.distributed import Cluster, ClusterSpec
from specflow.io.checkpoint import CheckpointManager
from specflow.train.loop import Trainer, TrainOptions
from tests.distributed.digits import digits_spec, summaries


def _spec(steps: int):
    return digits_spec("{mode: async}", steps=steps)


@pytest.fixture(scope="module")
def cluster(ray_local):
    with Cluster(ClusterSpec({"ps": 1, "worker": 1})) as c:
        yield c


def _train(cluster, logdir, loops: bool, steps: int = 40):
    from specflow.distributed.training import DistributedTrainer

    cluster.reset()
    trainer = DistributedTrainer(_spec(steps), TrainOptions(logdir=logdir), cluster=cluster)
    trainer.worker_loops = loops
    result = trainer.run()
    m = CheckpointManager(logdir)
    return trainer, result, m.restore(m.latest())


def _held(cluster) -> list[tuple[int, int]]:
    """Per task: (graphs registered there, replica loops it holds)."""
    import ray

    return ray.get([a.__ray_call__.remote(lambda w: (len(w.graphs), len(w.replica_loops.loops)))
                    for a in cluster.actors.values()])  # fmt: skip


def test_one_workers_loop_and_the_driver_compute_the_local_run(cluster, tmp_path):
    """One worker: no other writer between its steps, so its own loop (prefetched reads, its
    piece run in-process, chunks) and the driver running each step must both give the local
    run's numbers. 40 steps cross an epoch's short last batch (a second plan, whose update
    voids the first plan's prefetched reads)."""
    t_loop, r_loop, loop = _train(cluster, tmp_path / "loop", True)
    t_drv, r_drv, drv = _train(cluster, tmp_path / "driver", False)
    r_local = Trainer(_spec(40), TrainOptions(logdir=tmp_path / "local")).run()
    m = CheckpointManager(tmp_path / "local")
    local = m.restore(m.latest())
    assert r_loop.step == r_drv.step == 40 and t_loop.worker_steps == [40]
    for got, r in ((loop, r_loop), (drv, r_drv)):
        assert abs(r.last_loss - r_local.last_loss) < 1e-6
        for name in ("hidden/kernel", "logits/bias", "hidden/kernel/Adam"):
            np.testing.assert_allclose(got[name], local[name], atol=1e-6, rtol=0, err_msg=name)
    # the worker ran the steps: its replica's session here took no prefetched reads, the driver's did
    assert t_loop.replicas[0].reads_prefetched == 0 and t_drv.replicas[0].reads_prefetched > 30
    # the chief's loop fetched the summaries in its own steps (TF's chief runs the summary op
    # with its train op): the local run's values, at the local run's steps (the driver's are
    # evaluated after the step, in a step of their own)
    got, want = summaries(tmp_path / "loop"), summaries(tmp_path / "local")
    assert sorted(got) == sorted(want) == [1, 20, 40]
    for step in want:
        assert got[step].keys() == want[step].keys() == {"loss", "accuracy", "learning_rate", "hidden/kernel"}
        for tag, value in want[step].items():
            np.testing.assert_allclose(got[step][tag], value, rtol=1e-6, err_msg=f"{tag} at {step}")



def test_a_run_leaves_no_graphs_or_loops_on_the_tasks(cluster, tmp_path):
    _train(cluster, tmp_path, True, steps=10)
    assert _held(cluster) == [(0, 0), (0, 0)]


def test_a_workers_loop_calls_the_ps_once_a_step(cluster, tmp_path):
    """Each step's updates and the next step's reads go to the ps in one call: a step reads
    afresh (a second call) only as the loop's first or after a pause. Not at a plan change:
    80 steps cross 3 epoch ends, whose short last batch has a plan of its own, and the two
    plans' first calls on the ps are the same read, so each takes what the other prefetched
    (the one-worker test above checks the numbers across such a change). The driver's turn
    between two chunks is no pause."""
    import ray

    trainer, result, _ = _train(cluster, tmp_path, True, steps=80)
    counts = ray.get(cluster.actors[trainer.tasks[0]].__ray_call__.remote(
        lambda w: dict(w.replica_loops.counts)))  # fmt: skip
    steps, prefetched, pauses = counts[trainer._run_id]
    assert result.step == steps == 80
    assert pauses <= 2 and steps - prefetched == pauses, (steps, prefetched, pauses)
