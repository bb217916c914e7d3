"""Health checks: a task that dies or stops answering is noticed within ``timeout_s``.

A monitor thread in the client pings every task (``TaskWorker.ping``, answered on its own actor
thread even while steps run) every ``timeout_s / 3``. A task whose process is gone (Ray reports
the actor dead) or that leaves a ping unanswered for ``timeout_s`` is marked lost, and every
live task aborts its running steps that involve it (their receives from it would otherwise wait
forever, as TF's did) and a hung one is killed (its pending calls then fail rather than wait):
the step fails fast with an error naming the lost task, and the trainer recovers
(``recovery.py``).
"""

from __future__ import annotations

import threading
import time

from specflow.errors import RuntimeFailure

from .remote_rendezvous import pack_error

DEFAULT_TIMEOUT_S = 3.0


class HealthMonitor:
    def __init__(self, cluster, timeout_s: float = DEFAULT_TIMEOUT_S, on_lost=None):
        self.cluster = cluster
        self.timeout_s = float(timeout_s)
        self.on_lost = on_lost
        self.lost: dict[str, float] = {}  # task -> when it was noticed (monotonic)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._watch, name="health", daemon=True)

    def start(self) -> HealthMonitor:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self.timeout_s + 1)

    def check(self, timeout_s: float | None = None) -> list[str]:
        """Ping every task once; the tasks that are dead or did not answer in time."""
        return self._probe(timeout_s)[0]

    def _probe(self, timeout_s: float | None = None) -> tuple[list[str], dict]:
        """(the bad tasks, the actors pinged): a task recreated meanwhile is another actor."""
        import ray

        actors = dict(self.cluster.actors)
        refs = {t: a.ping.remote() for t, a in actors.items()}
        ready, _ = ray.wait(list(refs.values()), num_returns=len(refs), timeout=timeout_s or self.timeout_s)
        ready = set(ready)
        bad = []
        for task, ref in refs.items():
            if ref not in ready:
                bad.append(task)  # hung (or its process stopped)
                continue
            try:
                ray.get(ref)
            except Exception:  # RayActorError: the process is gone
                bad.append(task)
        return bad, actors

    def mark_lost(self, tasks: list[str], pinged: dict | None = None) -> None:
        """Abort, on every other task, the running steps that involve ``tasks``. ``pinged``:
        the actors found bad; a task recreated since (recovery raced this monitor) is left
        alone, or its fresh actor would be killed for its predecessor's death."""
        fresh = []
        with self._lock:
            for t in tasks:
                if pinged is not None and self.cluster.actors.get(t) is not pinged.get(t):
                    continue
                if t not in self.lost:
                    self.lost[t] = time.monotonic()
                    fresh.append(t)
        import ray

        for t in fresh:
            actor = self.cluster.actors.get(t)
            if actor is not None:  # a hung task is fenced off: its step calls fail instead of waiting
                try:
                    ray.kill(actor)
                except Exception:  # already gone
                    pass
            packed = pack_error(RuntimeFailure(f"task {t} was lost (dead or not answering for {self.timeout_s:g}s)"))
            for other, actor in dict(self.cluster.actors).items():
                if other not in self.lost:
                    actor.abort_steps_with.remote(t, packed)
            if self.on_lost is not None:
                self.on_lost(t)

    def recovered(self, task: str) -> None:
        with self._lock:
            self.lost.pop(task, None)

    def _watch(self) -> None:
        while not self._stop.wait(self.timeout_s / 3):
            try:
                bad, pinged = self._probe()
            except Exception:  # Ray going down with the client: nothing left to watch
                return
            if bad:
                self.mark_lost(bad, pinged)
