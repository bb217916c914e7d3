"""Recovering a distributed training run from lost tasks (the DistributedTrainer's half that
deals with faults).

A failed step calls :meth:`Recovery.recover` with the generation it started in. The first caller
for a generation checks every task (``health.py``); if none was lost the error is real and is
raised. Otherwise, under one lock:

- a lost worker: its actor is recreated and its replica gets a fresh session (graphs register
  again on first use); the other replicas keep their sessions (async: they keep training; sync:
  the lost worker's push is retried);
- a lost ps: its actor is recreated, every session is replaced, the chief restores the latest
  checkpoint (or initializes, without one) while every replica waits until the model is ready
  again (``readiness.py``); the steps since it are lost and redone, and the log says from which
  global step to which.

Later callers of the same generation just continue on the new sessions.
"""

from __future__ import annotations

import threading
import time

from specflow.errors import RuntimeFailure

from .health import DEFAULT_TIMEOUT_S, HealthMonitor
from .master import ray_error_line
from .replicas import DRIVER_TASK, replica_session

# How many times one recovery starts over when more tasks are lost while it runs.
MAX_ATTEMPTS = 5


class Recovery:
    """Mixed into DistributedTrainer (uses its graph, sessions, checkpoints and listener)."""

    def _start_health(self, timeout_s: float | None) -> None:
        self.gen = 0
        # True while a lost ps's variables are restored: steps reported meanwhile ran on the
        # lost values (their generation is still the current one until the restore ends).
        self.restoring = False
        self.recoveries: list[dict] = []  # what was lost, when, and how long recovery took
        self._recover_lock = threading.Lock()
        self.health = HealthMonitor(self.cluster, timeout_s or DEFAULT_TIMEOUT_S).start()

    def _notice(self, text: str) -> None:
        on_notice = getattr(self.listener, "on_notice", None)
        if on_notice is not None:
            on_notice(text)

    def recover(self, seen_gen: int, error: BaseException) -> None:
        """Recover from ``error`` (a step of generation ``seen_gen`` failed), or raise it."""
        if not isinstance(error, RuntimeFailure):
            raise error
        with self._recover_lock:
            if self.gen != seen_gen:
                return  # another thread recovered already
            t0 = time.monotonic()
            bad = sorted(set(self.health.lost) | set(self.health.check()))
            if not bad:
                raise error
            before, lost = self.step, set(bad)
            # Another task may die while this one is brought back (two killed at once, one killed
            # during a restore): that shows as a failure of the recovery itself; the tasks lost
            # by then are recreated too and the recovery starts over, at most MAX_ATTEMPTS times.
            for attempt in range(MAX_ATTEMPTS):
                try:
                    self._bring_back(bad, lost)
                    break
                except Exception as e:  # noqa: BLE001 - a RayError or RuntimeFailure from a task lost meanwhile
                    self.restoring = False
                    bad = sorted(set(self.health.lost) | set(self.health.check()))
                    if not bad or attempt == MAX_ATTEMPTS - 1:
                        raise RuntimeFailure(f"recovering from the loss of {', '.join(sorted(lost))} failed: "
                                             f"{ray_error_line(e)}") from None  # fmt: skip
                    lost |= set(bad)
            after = self.step  # the restored global step (reports of lost steps are void meanwhile)
            tasks = ", ".join(sorted(lost))
            if any(t.startswith("/job:ps/") for t in lost):
                before = max(before, after)  # async: the chief's view lags the workers' steps
                back = before - after
                what = (f"lost {tasks}: restored {self.last_restored or 'the initial values'} (global step {after}); "
                        f"{back} step{'' if back == 1 else 's'} lost, trained again (global step {before} -> {after})")
            else:
                what = f"lost {tasks}: recreated, rejoined at global step {after}"
            self.gen += 1
            self.restoring = False
            self.recoveries.append({"tasks": sorted(lost), "step_before": before, "step_after": after,
                                    "seconds": time.monotonic() - t0})  # fmt: skip
            self._notice(what)

    def _bring_back(self, bad: list[str], lost: set[str]) -> None:
        """Recreate the tasks ``bad``; then new sessions for the replicas of the ``lost`` ones
        (every session, and the variables restored, when a ps is among them)."""
        self.health.mark_lost(bad)
        self.cluster.restart(*bad)
        for task in bad:
            self.health.recovered(task)
        if any(t.startswith("/job:ps/") for t in lost):
            self.restoring = True
            self._replace_sessions(list(range(len(self.replicas))), driver=True)
            self._restore_after_ps_loss()
        else:
            self._replace_sessions([i for i, t in enumerate(self.tasks) if t in lost], driver=False)

    def _replace_sessions(self, indices: list[int], driver: bool) -> None:
        seed, g = self.spec.model.seed, self.graph.graph_def
        old = [self.replicas[i] for i in indices] + ([self.session] if driver else [])
        for i in indices:
            self.replicas[i] = replica_session(g, self.cluster, seed, self.strategy, self.tasks[i])
        if driver:
            self.session = replica_session(g, self.cluster, seed, self.strategy, DRIVER_TASK)
        for s in old:
            try:
                s.close()
            except Exception:  # its tasks are partly gone: nothing to deregister there
                pass

    def _restore_after_ps_loss(self) -> None:
        latest = self.checkpoints.latest()
        self.last_restored = latest
        self.prepare(latest)  # the replicas wait for it again (readiness.py)
        self.on_restored()

    def on_restored(self) -> None:
        """The global step went back (a ps was restored): the loop resets its own counters."""

    def _stop_health(self) -> None:
        health = getattr(self, "health", None)
        if health is not None:
            health.stop()

