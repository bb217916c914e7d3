"""How a command stops on a signal: SIGINT and SIGTERM ask it to stop cleanly (a final
checkpoint); a second signal exits at once; a run a signal stopped exits 128 + its number. Kept
apart from ``cli.py`` (the commands)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable


@contextlib.contextmanager
def _stop_on_signals(stop: Callable[[], None]):
    """SIGINT (Ctrl-C) and SIGTERM (docker stop, Kubernetes, Ray) alike: the first calls ``stop``
    (the trainer finishes its step and saves); a second exits at once, with no save (saves are
    atomic: the last complete checkpoint stays readable, and the kernel drops the logdir lock).
    Left installed when the block ends (the CLI then exits): a signal during the exit is dropped.
    Yields the signals seen: a run they stopped exits 128 + the signal's number once it has saved
    (130, 143), so a scheduler that sent SIGTERM (preemption) sees an unfinished run, not a success."""
    import signal

    seen: list[int] = []

    def handler(signum, _frame):
        if seen:
            os.write(2, f"{signal.Signals(signum).name} again: exiting without saving\n".encode())
            os._exit(128 + signum)
        seen.append(signum)
        stop()

    def finishing(signum, _frame):
        # The run is over; the process is on its way out (the result, Ray's shutdown at exit): a
        # first signal is dropped, not a KeyboardInterrupt traceback from an atexit hook; a
        # second exits at once.
        if seen:
            os._exit(128 + signum)
        seen.append(signum)

    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, handler)
    try:
        yield seen
    finally:
        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, finishing)


def exit_interrupted(signum: int, step: int) -> None:
    """A run a signal stopped ends non-zero (128 + signum, as a shell reports it) after its save."""
    import signal

    import typer

    from specflow.cli_errors import err

    name = signal.Signals(signum).name
    err.print(f"stopped by {name} at step {step} (saved); train again to continue", soft_wrap=True, highlight=False)
    raise typer.Exit(128 + signum)
