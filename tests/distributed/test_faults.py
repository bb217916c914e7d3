"""Distributed training survives losing tasks: real processes killed with SIGKILL mid-run."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from specflow.distributed import Cluster, ClusterSpec
from specflow.distributed.replica_loop import CHUNK_MAX
from specflow.schema.loader import load_spec_text
from specflow.train.evaluate import evaluate_checkpoint
from specflow.train.loop import Listener, Trainer, TrainOptions

DIGITS = (Path(__file__).resolve().parents[2] / "models" / "digits_mlp.yaml").read_text()
STEPS = 80
PS, WORKER1 = "/job:ps/replica:0/task:0", "/job:worker/replica:0/task:1"
WORKER0 = "/job:worker/replica:0/task:0"


def _spec(mode: str, steps: int = STEPS):
    text = DIGITS.replace("  steps: 2000", f"  steps: {steps}\n  distributed: {{mode: {mode}, health_timeout_s: 2}}")
    text = text.replace("every_steps: 200, keep: 5", "every_steps: 20, keep: 3").replace("every_steps: 500", "every_steps: 1000")
    return load_spec_text(text, "digits_mlp.yaml")


@pytest.fixture(scope="module")
def cluster(ray_local):
    with Cluster(ClusterSpec({"ps": 1, "worker": 2})) as c:
        yield c


@pytest.fixture(scope="module")
def undisturbed(tmp_path_factory):
    """Held-out accuracy of the same model trained locally for the same steps."""
    spec = _spec("async")
    return Trainer(spec, TrainOptions(logdir=tmp_path_factory.mktemp("local"))).run().eval_metrics["accuracy"]


class KillAt(Listener):
    def __init__(self, step: int, task: str):
        self.step, self.task, self.trainer, self.killed = step, task, None, None

    def on_step(self, step, loss, rate):
        if self.killed is None and step >= self.step:
            self.killed, self.steps_then = step, list(self.trainer.worker_steps)
            os.kill(self.trainer.cluster.infos[self.task]["pid"], signal.SIGKILL)

    def slow_survivors(self, trainer) -> None:
        """Until the lost task is back, each surviving worker's step waits 20 ms first, so the
        run outlasts the recovery however fast the steps are (sync: the driver feeds each step;
        async: each worker's loop runs a chunk of steps)."""
        feeds, chunk = trainer._feeds, trainer._replica_chunk

        def idle() -> bool:
            return self.killed is not None and self._lost_worker_idle()

        def slowed(k, j):
            if idle():
                time.sleep(0.02)
            return feeds(k, j)

        def slowed_chunk(k, j, count):
            if idle():
                time.sleep(0.02 * count)
            return chunk(k, j, count)

        trainer._feeds, trainer._replica_chunk = slowed, slowed_chunk

    def _lost_worker_idle(self) -> bool:
        tasks = self.trainer.tasks
        if self.task not in tasks:  # a ps: until the recovery is recorded
            return not self.trainer.recoveries
        k = tasks.index(self.task)
        return self.trainer.worker_steps[k] <= self.steps_then[k]


def _kill(pid: int) -> None:
    """SIGKILL ``pid`` and wait until it is gone (a zombie or reaped)."""
    from specflow.distributed.reaper import alive

    os.kill(pid, signal.SIGKILL)
    while alive(pid):
        time.sleep(0.005)


def _run(spec, logdir, cluster, listener):
    from specflow.distributed.training import DistributedTrainer

    cluster.reset()
    trainer = DistributedTrainer(spec, TrainOptions(logdir=logdir), listener, cluster=cluster)
    listener.trainer = trainer
    if isinstance(listener, KillAt):
        listener.slow_survivors(trainer)
    return trainer, trainer.run()


def _check_finished(spec, logdir, result, undisturbed, extra: int = 0, steps: int = STEPS):
    assert steps <= result.step <= steps + extra
    path, metrics = evaluate_checkpoint(spec, logdir)
    assert path.endswith(f"model.ckpt-{result.step}")
    # Lost progress shows as lower accuracy; async runs differ in update order, so a recovered run
    # may as well end above the undisturbed one (0.956 against 0.903 in one CI run).
    assert metrics["accuracy"] > undisturbed - 0.05, (metrics, undisturbed)
    assert not [p for p in Path(logdir).iterdir() if "_temp_" in p.name or ".tempstate" in p.name]


def test_async_lost_worker_rejoins(cluster, tmp_path, undisturbed):
    spec = _spec("async", steps=200)  # long enough that the other worker cannot finish alone meanwhile
    old_pid = cluster.infos[WORKER1]["pid"]
    trainer, result = _run(spec, tmp_path, cluster, KillAt(20, WORKER1))
    assert [r["tasks"] for r in trainer.recoveries] == [[WORKER1]]
    assert cluster.infos[WORKER1]["pid"] != old_pid
    assert trainer.recoveries[0]["seconds"] < 10
    listener = trainer.listener
    assert trainer.worker_steps[1] > listener.steps_then[1]  # it rejoined and trained again
    assert trainer.worker_steps[0] > listener.steps_then[0]  # the other kept going
    # The killed worker's last updates (of its chunk in flight) may have reached the ps before it
    # died: kept, as in TF's async training, and those steps are handed out again; the ps refuses
    # updates past the last step, so the run ends exactly there (before: up to a chunk past).
    _check_finished(spec, tmp_path, result, undisturbed, steps=200)


def test_sync_lost_ps_restores_the_latest_checkpoint(cluster, tmp_path, undisturbed):
    spec = _spec("sync")
    trainer, result = _run(spec, tmp_path, cluster, KillAt(30, PS))
    (r,) = trainer.recoveries
    assert r["tasks"] == [PS] and r["step_after"] == 20 and r["step_before"] >= 30  # back to model.ckpt-20
    assert r["seconds"] < 10
    # each worker checked the model was ready before its first step, and again after the restore
    assert sorted(k for k, _ in trainer.ready_waits) == [0, 0, 1, 1], trainer.ready_waits
    _check_finished(spec, tmp_path, result, undisturbed)


def test_sync_lost_worker_step_is_retried(cluster, tmp_path, undisturbed):
    spec = _spec("sync")
    trainer, result = _run(spec, tmp_path, cluster, KillAt(25, WORKER1))
    (r,) = trainer.recoveries
    assert r["tasks"] == [WORKER1] and r["step_after"] == r["step_before"]  # nothing lost
    _check_finished(spec, tmp_path, result, undisturbed)


def test_lost_ps_during_a_checkpoint_save(cluster, tmp_path, undisturbed, monkeypatch):
    """The line a lost ps gives names the global step restored from the checkpoint and the steps
    lost. Before, it named the step read after the restore, when the async workers, which resume
    once the model is ready, had taken it further (here they get 0.3 s to)."""
    from specflow.distributed.readiness import Readiness
    from specflow.io.tensor_bundle import read_bundle

    prepare = Readiness.prepare

    def slow_prepare(self, session, init_op, restore=None):
        prepare(self, session, init_op, restore)
        if restore is not None:
            time.sleep(0.3)

    monkeypatch.setattr(Readiness, "prepare", slow_prepare)
    spec = _spec("async")

    class Notices(Listener):
        notices: list[str] = []
        saved: list[int] = []  # the global step in the checkpoint restored (kept by the time of the notice)

        def on_notice(self, text):
            if text.startswith("lost "):  # the loss's line (not another notice)
                self.notices.append(text)
                self.saved.append(int(read_bundle(self.trainer.last_restored, ["global_step"])["global_step"]))

    listener = Notices()
    killed = _kill_ps_in_a_save(monkeypatch, listener, lambda next_batch: next_batch >= 40)  # as the save step runs
    trainer, result = _run(spec, tmp_path, cluster, listener)
    assert killed and [r["tasks"] for r in trainer.recoveries] == [[PS]]
    # The save at killed[0] never happened: back to the one before (async: named by the global
    # step as it began, which the workers' loops took past the chief's multiple of 20, and
    # holding that step, though its other values were read a little later).
    restored = int(trainer.last_restored.rsplit("-", 1)[1])
    assert 20 <= restored < killed[0]
    r = trainer.recoveries[0]
    assert listener.saved == [restored] and r["step_after"] == restored
    back = r["step_before"] - r["step_after"]
    assert listener.notices == [f"lost {PS}: restored {trainer.last_restored} (global step {r['step_after']}); "
                                f"{back} step{'' if back == 1 else 's'} lost, trained again "
                                f"(global step {r['step_before']} -> {r['step_after']})"]
    _check_finished(spec, tmp_path, result, undisturbed)


def test_a_task_that_stops_answering_is_noticed_within_the_timeout(cluster):
    from specflow.distributed.health import HealthMonitor

    pid = cluster.infos[WORKER1]["pid"]
    monitor = HealthMonitor(cluster, timeout_s=1.0)
    assert monitor.check() == []
    os.kill(pid, signal.SIGSTOP)  # alive but silent, as a hung process
    try:
        t0 = time.monotonic()
        assert monitor.check() == [WORKER1]
        assert time.monotonic() - t0 < 2.0
    finally:
        os.kill(pid, signal.SIGCONT)
    assert monitor.check() == []


def test_stop_request_ends_every_worker_after_a_final_checkpoint(cluster, tmp_path):
    """What Ctrl-C/SIGTERM does through the CLI's _stop_on_signals: request_stop()."""

    class StopAt(Listener):
        at = None

        def on_step(self, step, loss, rate):
            if step >= 15 and self.at is None:
                self.at = time.monotonic()
                self.trainer.request_stop()

    listener = StopAt()
    trainer, result = _run(_spec("async", steps=2000), tmp_path, cluster, listener)
    # Each worker's loop stops after its current step; the chief saw the step at most two
    # chunks behind the workers.
    assert result.stopped_by == "interrupt" and 15 <= result.step < 15 + 4 * CHUNK_MAX
    assert time.monotonic() - listener.at < 2.0
    assert result.checkpoint.endswith(f"model.ckpt-{result.step}")


def test_a_hung_worker_is_fenced_off_and_replaced(cluster, tmp_path, undisturbed):
    """SIGSTOP (alive, silent): noticed within health_timeout_s, killed, recreated; no hang."""

    class StopAt(KillAt):
        def on_step(self, step, loss, rate):
            if self.killed is None and step >= self.step:
                self.killed, self.steps_then = step, list(self.trainer.worker_steps)
                self.pid = self.trainer.cluster.infos[self.task]["pid"]
                os.kill(self.pid, signal.SIGSTOP)

    spec = _spec("sync")
    listener = StopAt(20, WORKER1)
    try:
        trainer, result = _run(spec, tmp_path, cluster, listener)
    finally:
        if getattr(listener, "pid", None):
            try:
                os.kill(listener.pid, signal.SIGCONT)
            except ProcessLookupError:  # killed by the monitor, as it should be
                pass
    (r,) = trainer.recoveries
    assert r["tasks"] == [WORKER1] and r["seconds"] < 10
    _check_finished(spec, tmp_path, result, undisturbed)


def test_a_stop_before_the_first_step_still_saves_a_checkpoint(cluster, tmp_path):
    """Ctrl-C while the tasks start (step 0): a final checkpoint, model.ckpt-0, that a local run
    restores; before, the run ended with none."""

    class StopAtStart(Listener):
        def on_start(self, step, total):
            self.trainer.request_stop()

    spec = _spec("async", steps=2000)
    trainer, result = _run(spec, tmp_path, cluster, StopAtStart())
    assert result.stopped_by == "interrupt" and result.step == 0
    assert result.checkpoint.endswith("model.ckpt-0")
    path, metrics = evaluate_checkpoint(spec, tmp_path)
    assert path.endswith("model.ckpt-0") and 0 <= metrics["accuracy"] <= 1


def test_ray_reports_of_a_killed_task_stay_off_the_terminal(cluster, capsys):
    """Ray's driver prints each dead task process as a '(raylet) A worker died...' paragraph;
    the trainer says what was lost in one line of its own, so those are dropped; Ray's other
    messages still print."""
    from ray._private import worker as ray_worker

    death = ("A worker died or was killed while executing a task by an unexpected system error. To "
             "troubleshoot the problem, check the logs for the dead worker. Worker PID: 123")
    ray_worker.print_to_stdstream({"lines": [death], "pid": "raylet", "is_err": False}, ignore_prefix=False)
    ray_worker.print_to_stdstream({"lines": ["the object store is full"], "pid": "raylet", "is_err": False},
                                  ignore_prefix=False)  # fmt: skip
    out = capsys.readouterr().out
    assert "worker died" not in out and "the object store is full" in out


class KillBoth(KillAt):
    """Kills every task of ``tasks`` at once (two tasks killed together)."""

    def __init__(self, step: int, tasks: list[str]):
        super().__init__(step, tasks[0])
        self.tasks = tasks

    def on_step(self, step, loss, rate):
        if self.killed is None and step >= self.step:
            self.killed, self.steps_then = step, list(self.trainer.worker_steps)
            for t in self.tasks:
                os.kill(self.trainer.cluster.infos[t]["pid"], signal.SIGKILL)


def test_a_ps_and_a_worker_killed_together_are_recovered_together(cluster, tmp_path, undisturbed):
    """Before: restarting the ps told every task of it, the dead worker too, which failed the
    run with an internal error."""
    spec = _spec("async")
    trainer, result = _run(spec, tmp_path, cluster, KillBoth(30, [PS, WORKER1]))
    assert sorted(t for r in trainer.recoveries for t in r["tasks"]) == [PS, WORKER1]
    assert all(r["seconds"] < 10 for r in trainer.recoveries)
    _check_finished(spec, tmp_path, result, undisturbed)


def test_a_task_lost_while_a_lost_ps_is_restored_is_recovered_too(cluster, tmp_path, undisturbed, monkeypatch):
    """Worker 0 dies while the variables of a recreated ps are restored: the recovery starts
    over with it (before: 'error: a worker was lost while its state was restored')."""
    from specflow.distributed.recovery import Recovery

    original = Recovery._restore_after_ps_loss
    killed = []

    def restore(self):
        if not killed:
            killed.append(self.cluster.infos[WORKER0]["pid"])
            _kill(killed[0])
        return original(self)

    monkeypatch.setattr(Recovery, "_restore_after_ps_loss", restore)
    spec = _spec("sync")
    trainer, result = _run(spec, tmp_path, cluster, KillAt(30, PS))
    (r,) = trainer.recoveries
    assert killed and r["tasks"] == [PS, WORKER0] and r["seconds"] < 10
    _check_finished(spec, tmp_path, result, undisturbed)


def test_lost_ps_during_the_first_checkpoint_save(cluster, tmp_path, undisturbed, monkeypatch):
    """The ps dies as the run's first save begins, before any checkpoint exists: the save's
    graphs were never registered, and registering them on the dead ps failed the run with an
    internal error (ActorDiedError); now it is a lost task like any other, and the run starts
    over from the initial values."""
    listener = Listener()
    killed = _kill_ps_in_a_save(monkeypatch, listener, lambda next_batch: True)
    spec = _spec("sync")
    trainer, result = _run(spec, tmp_path, cluster, listener)
    (r,) = trainer.recoveries
    assert killed and r["tasks"] == [PS] and r["step_after"] == 0 and trainer.last_restored is None
    _check_finished(spec, tmp_path, result, undisturbed)


def test_lost_ps_during_the_last_save_trains_back_and_saves_the_requested_step(cluster, tmp_path, undisturbed,
                                                                                monkeypatch):
    """The ps dies in the save of the last step: its variables go back to the checkpoint before,
    so those steps are trained again and the requested step saved. Before, the saver hook took
    the failed save as done: the run ended at the requested step with model.ckpt-60 as its last."""
    listener = Listener()
    killed = _kill_ps_in_a_save(monkeypatch, listener, lambda next_batch: next_batch >= STEPS)
    spec = _spec("sync")
    trainer, result = _run(spec, tmp_path, cluster, listener)
    (r,) = trainer.recoveries
    assert killed and r["tasks"] == [PS] and r["step_before"] == STEPS and r["step_after"] == STEPS - 20
    assert result.checkpoint.endswith(f"model.ckpt-{STEPS}")
    _check_finished(spec, tmp_path, result, undisturbed)


def _kill_ps_in_a_save(monkeypatch, listener, when) -> list[int]:
    """SIGKILL the ps as the first sharded save whose ``next_batch`` satisfies ``when`` begins
    (once), and wait until it is gone; that save's ``next_batch`` is appended to the list returned."""
    from specflow.distributed import sharded_checkpoint

    original = sharded_checkpoint.ShardedSaver.write
    killed: list[int] = []

    def write(self, session, prefix, next_batch, *args, **kwargs):
        if when(next_batch) and not killed:
            killed.append(next_batch)
            _kill(listener.trainer.cluster.infos[PS]["pid"])
        return original(self, session, prefix, next_batch, *args, **kwargs)

    monkeypatch.setattr(sharded_checkpoint.ShardedSaver, "write", write)
    return killed


class KillAfterLastSave(Listener):
    """SIGKILL ``task`` once the run's final checkpoint is written, before its last evaluation."""

    def __init__(self, task: str):
        self.task, self.trainer, self.killed = task, None, False

    def on_checkpoint(self, step, path):
        if step >= STEPS and not self.killed:
            self.killed = True
            _kill(self.trainer.cluster.infos[self.task]["pid"])


def test_a_ps_lost_after_the_final_save_is_brought_back_for_the_last_evaluation(cluster, tmp_path, undisturbed):
    """The run's last evaluation follows its final save and reads the ps; a ps killed between the
    two failed the run ("The actor died unexpectedly"; once in ten chaos runs). Now the ps is
    brought back from that final checkpoint (nothing lost) and the evaluation runs."""
    task = PS
    listener = KillAfterLastSave(task)
    spec = _spec("sync")
    trainer, result = _run(spec, tmp_path, cluster, listener)
    (r,) = trainer.recoveries
    assert listener.killed and r["tasks"] == [task] and r["step_after"] == STEPS
    assert result.checkpoint.endswith(f"model.ckpt-{STEPS}") and result.eval_metrics["accuracy"] > undisturbed - 0.05
    _check_finished(spec, tmp_path, result, undisturbed)


@pytest.mark.parametrize("mode,task", [("async", WORKER0), ("async", PS), ("sync", WORKER0)])
def test_a_task_lost_after_the_final_save_is_brought_back(cluster, tmp_path, undisturbed, mode, task):
    """After the final save come the chief's reads (the global step, the last evaluation); a task
    killed then is brought back and the run ends as asked (one chaos run in ten of
    ``task-last-save`` failed with "The actor died unexpectedly")."""
    listener = KillAfterLastSave(task)
    spec = _spec(mode)
    try:
        trainer, result = _run(spec, tmp_path, cluster, listener)
    finally:
        if not _task_alive(cluster, task):
            cluster.restart(task)  # the run ended without needing it: the module's cluster does
    # brought back when a read after the save needed it (a worker's may not be: the run ends)
    assert listener.killed and [r["tasks"] for r in trainer.recoveries] in ([], [[task]])
    assert result.checkpoint.endswith(f"model.ckpt-{result.step}")
    _check_finished(spec, tmp_path, result, undisturbed)


def _task_alive(cluster, task: str) -> bool:
    """Whether ``task``'s actor is alive (a recovery brought it back, or it was never killed)."""
    from specflow.distributed.reaper import alive

    return alive(cluster.infos[task]["pid"])


def _kill_workers_as_they_start(monkeypatch, ray, times: int) -> list[int]:
    """The first ``times`` worker actors started are SIGKILLed once up, before the tasks connect."""
    from specflow.distributed import engine

    start, killed = engine.Cluster._start, []

    def start_then_kill(self, job, t):
        actor = start(self, job, t)
        if job == "worker" and len(killed) < times:
            killed.append(ray.get(actor.info.remote())["pid"])
            _kill(killed[-1])
        return actor

    monkeypatch.setattr(engine.Cluster, "_start", start_then_kill)
    return killed


def test_a_task_killed_while_the_tasks_start_is_started_again(ray_local, monkeypatch):
    """A task's process killed as the tasks start is replaced, as one lost while training is: the
    run failed with Ray's "The actor never ran - it was cancelled before it started running"."""
    from specflow.distributed.reaper import alive

    killed = _kill_workers_as_they_start(monkeypatch, ray_local, 1)
    with Cluster(ClusterSpec({"ps": 1, "worker": 1})) as c:
        pids = {task: info["pid"] for task, info in c.infos.items()}
        assert len(killed) == 1 and killed[0] not in pids.values()
        assert all(alive(p) for p in pids.values())
        ray_local.get([a.info.remote() for a in c.actors.values()])  # every task answers


def test_a_task_that_dies_at_every_start_is_an_error_naming_it(ray_local, monkeypatch):
    from specflow.distributed import engine
    from specflow.errors import SpecflowError

    killed = _kill_workers_as_they_start(monkeypatch, ray_local, 99)
    with pytest.raises(SpecflowError, match=r"^cannot start the cluster's tasks: /job:worker/replica:0/task:0 died "
                                            r"as it started: "):  # fmt: skip
        Cluster(ClusterSpec({"ps": 1, "worker": 1})).connect()
    assert len(killed) == engine.START_ATTEMPTS
