"""The master's deadlock watch for a step whose tasks push tensors to each other.

A task cannot tell a deadlock on its own: its receives may still be served by another task. The
master can, as TF's local executor does for devices: when every task still running the step is
quiet (each partition waits only on receives, or ended; nothing waits in an outbox) while
receives wait, and no batch is in flight to any of them, nothing can ever wake the step. In
flight is counted, not guessed: each task reports batches sent per task and received, a task
that ended reports what it sent in its result, and the snapshots of two polls in a row must
agree (a quiet task polled before a batch reached it shows up as a count that moved).

It costs nothing on a step that ends within ``WATCH_AFTER_S``; after that the master polls the
running tasks every ``WATCH_EVERY_S`` (one small call each).
"""

from __future__ import annotations

from typing import Any

from specflow.errors import RuntimeFailure

WATCH_AFTER_S = 0.5
WATCH_EVERY_S = 0.25


class DeadlockWatch:
    def __init__(self, tasks: list[str]) -> None:
        self.tasks = tasks
        self.last: tuple | None = None  # the previous poll's counters, when it found all quiet

    def check(self, actors: dict[str, Any], step_id: int, refs: list, pending: list) -> RuntimeFailure | None:
        """The deadlock error, or None while the step may still go on."""
        import ray

        waiting = set(pending)
        ended = [ray.get(r) for r in refs if r not in waiting]  # their results carry what they sent
        running = [t for t, r in zip(self.tasks, refs) if r in waiting]
        states = ray.get([actors[t].step_state.remote(step_id) for t in running])
        if any(s is None or not s[0] for s in states):  # one not begun yet, or busy
            self.last = None
            return None
        sent: dict[str, int] = {}
        for sent_to in [r[2] for r in ended] + [s[3] for s in states]:
            for t, n in sent_to.items():
                sent[t] = sent.get(t, 0) + n
        counts = tuple((t, s[2], sent.get(t, 0)) for t, s in zip(running, states))
        if any(received != sent_here for _, received, sent_here in counts):  # a batch in flight
            self.last = None
            return None
        stuck = [(t, key) for t, s in zip(running, states) for key in s[1]]
        if not stuck:  # all quiet, none waiting: they are ending
            self.last = None
            return None
        if self.last != counts:  # the first quiet poll: confirm on the next one
            self.last = counts
            return None
        where = [_describe(t, key) for t, key in stuck[:4]]
        more = f" and {len(stuck) - 4} more" if len(stuck) > 4 else ""
        return RuntimeFailure(
            "step deadlocked across tasks: every task running it is idle and no tensor is in flight, "
            f"and these receives wait for values no task will send: {'; '.join(where)}{more}"
        )


def _describe(task: str, key: str) -> str:
    """A rendezvous key (src;incarnation;dst;tensor;frame:iter) as the user reads it."""
    parts = key.split(";")
    if len(parts) < 4:
        return f"{key} on {task}"
    frame = f" in frame {parts[4]}" if len(parts) > 4 and parts[4] != "0:0" else ""
    return f"{parts[3]} on {parts[2]}{frame} (from {parts[0]})"
