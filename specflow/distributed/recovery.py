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
from .replicas import DRIVER_TASK, replica_session


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
            self.health.mark_lost(bad)
            for task in bad:
                self.cluster.restart(task)
                self.health.recovered(task)
            before = self.step
            if any(t.startswith("/job:ps/") for t in bad):
                self.restoring = True
                try:
                    self._replace_sessions(list(range(len(self.replicas))), driver=True)
                    self._restore_after_ps_loss()
                except BaseException:
                    self.restoring = False
                    raise
                after = self.step  # the restored global step (reports of lost steps are void meanwhile)
                what = (f"lost {', '.join(bad)}: restored {self.last_restored or 'the initial values'}; "
                        f"global step {before} -> {after}")  # fmt: skip
            else:
                self._replace_sessions([i for i, t in enumerate(self.tasks) if t in bad], driver=False)
                after = self.step
                what = f"lost {', '.join(bad)}: recreated, rejoined at global step {after}"
            self.gen += 1
            self.restoring = False
            self.recoveries.append({"tasks": bad, "step_before": before, "step_after": after,
                                    "seconds": time.monotonic() - t0})  # fmt: skip
            self._notice(what)

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
