"""How a command stops on a signal: SIGINT and SIGTERM ask it to stop cleanly (a final
checkpoint); a second signal exits at once. Kept apart from ``cli.py`` (the commands)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable


@contextlib.contextmanager
def _stop_on_signals(stop: Callable[[], None]):
    """SIGINT (Ctrl-C) and SIGTERM (docker stop, Kubernetes, Ray) alike: the first calls ``stop``
    (the trainer finishes its step and saves); a second exits at once, with no save (saves are
    atomic: the last complete checkpoint stays readable, and the kernel drops the logdir lock)."""
    import signal

    seen: list[int] = []

    def handler(signum, _frame):
        if seen:
            os.write(2, f"{signal.Signals(signum).name} again: exiting without saving\n".encode())
            os._exit(128 + signum)
        seen.append(signum)
        stop()

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
