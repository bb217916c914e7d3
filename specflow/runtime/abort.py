"""Stopping a running step from outside: the one abort path.

Every way a step is stopped while it runs ends in the step's ``Rendezvous.abort(error)``: Ctrl-C
(:func:`interrupted`, or a KeyboardInterrupt raised inside a kernel, see ``Executor._fail``),
the step's ``timeout_s``, ``Session.abort(error)`` (how a failure in another task or process
reaches the steps of this one), and a kernel failing on another device. Every executor reads
``rendezvous.error`` before each kernel it starts (the dataflow loop, the straight line, the
generated line and the loop frames alike), and pending receives fail at once, so the step ends
within one kernel's time: an infinite ``while`` stops after its current iteration's kernel.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from specflow.errors import StepAborted

# How long an interrupted step may take to wind down (its running kernels finish) before
# KeyboardInterrupt goes on up anyway. (A timeout raises at its deadline: the caller asked for
# that bound.)
INTERRUPT_GRACE_S = 1.0


def interrupt_error() -> StepAborted:
    """The abort error for Ctrl-C; :func:`raise_step_error` turns it back into KeyboardInterrupt."""
    error = StepAborted("step interrupted (KeyboardInterrupt)")
    error.__cause__ = KeyboardInterrupt()
    return error


def wind_down(handles: Iterable) -> None:
    """After an abort: give the step's executors up to INTERRUPT_GRACE_S (in all) to stop, so
    the program goes on after the step's kernels ended (a kernel that runs longer finishes in
    the background)."""
    deadline = time.monotonic() + INTERRUPT_GRACE_S
    for h in handles:
        h.wait(max(0.0, deadline - time.monotonic()))


def interrupted(rendezvous, handles: Iterable) -> None:
    """Ctrl-C while the caller waited for ``handles``: abort the step, let it wind down, then
    raise KeyboardInterrupt."""
    rendezvous.abort(interrupt_error())
    wind_down(handles)
    raise KeyboardInterrupt


def raise_step_error(error: BaseException) -> None:
    """Raise a failed step's error; an interrupted step raises KeyboardInterrupt, as Ctrl-C
    anywhere else in the program would."""
    if isinstance(error, StepAborted) and isinstance(error.__cause__, KeyboardInterrupt):
        raise KeyboardInterrupt from error
    raise error
