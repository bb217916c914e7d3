"""Reused output buffers for kernels with large results: an arena per executor.

A training step allocates the same multi-MB temporaries every step (im2col columns, conv and
matmul products, activations and their gradients). With glibc those are ``mmap``'d and unmapped
each time once they pass its (dynamic) mmap threshold, so a step pays page faults on fresh
memory and its time jumps with where the threshold happens to sit (the issue's 2x run-to-run
spread). An :class:`Arena` keeps such buffers, keyed by (size, dtype) so a buffer serves every
shape of that many elements (a conv's [N*H*W, C] product and the [N, H, W, C] activations
after it), and hands one out again, as a view of the requested shape, once nothing but the
arena refers to it.

Whether anything else holds a buffer is read from its reference count, as
``state_ops.writable_value`` does: a value is referenced while it waits in a consumer's input
slot or a straight line's local variable, is fetched (the call frame's return values), stored by
a variable, held by a rendezvous, a loop frame, a queue or the step's extras (a shared im2col),
or viewed by another array (a view refers to its base: the arrays handed out are such views).
Only when all of those are gone is the
count at its baseline (the arena's own list entry and the scan's temporaries), and only then is
the buffer handed out again: it can never be handed out while referenced.

A buffer held a moment longer than its value is needed (a pool thread still holding the step
that just finished, and through it the step's fetched values) is simply not reused that time: a
new one is allocated, and kept while fewer than ``MAX_PER_KEY`` of its size are.

Kernels take a buffer with :func:`empty` (an ``xp.empty`` when the context has no arena, e.g. in
eager mode, or the result is small) and must write every element of it. The executor makes one
arena per partition (``Executor.arena``): it lives and dies with the plan. An executor's arena
keeps buffers only from the plan's second step on (``step_started``): a plan run once (the
initializers, a restore) would otherwise hold its largest temporaries -- a big variable's random
draws -- for as long as the plan stays cached, and never hand them out again.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np

# Below this, malloc serves allocations from its heap without page faults: not worth keeping.
MIN_BYTES = 256 * 1024
# Buffers kept per (size, dtype): the most of one size a step holds at once, in practice.
MAX_PER_KEY = 8


def _baseline() -> int:
    """The reference count :meth:`Arena.empty` sees for a buffer nobody else holds (measured,
    not assumed: it depends on the interpreter), by the same scan over a list."""
    bufs = [np.empty(1)]
    for buf in bufs:
        return sys.getrefcount(buf)
    raise AssertionError("unreachable")


_FREE = _baseline()


class Arena:
    """Buffers of one device, reused across the steps of one executor; thread-safe."""

    __slots__ = ("xp", "_bufs", "_lock", "held_bytes", "hits", "misses", "keeping", "_steps")

    def __init__(self, xp: Any = np, keeping: bool = True):
        self.xp = xp
        self.keeping = keeping  # False: buffers are plain allocations until the second step
        self._steps = 0
        self._bufs: dict[tuple, list] = {}
        self._lock = threading.Lock()
        self.held_bytes = 0  # what the arena keeps (free or in use)
        self.hits = 0  # buffers handed out again
        self.misses = 0  # buffers newly allocated (kept or not)

    def empty(self, shape: tuple[int, ...], size: int, dtype: Any) -> Any:
        """An uninitialised array of ``shape`` (``size`` elements) and ``dtype``: a view of a
        free kept buffer if there is one."""
        if not self.keeping:
            self.misses += 1
            return self.xp.empty(shape, dtype)
        key = (size, dtype)
        with self._lock:
            bufs = self._bufs.get(key)
            if bufs is None:
                bufs = self._bufs[key] = []
            for buf in bufs:
                if sys.getrefcount(buf) == _FREE:
                    self.hits += 1
                    return buf.reshape(shape)
            buf = self.xp.empty(size, dtype)
            self.misses += 1
            if len(bufs) < MAX_PER_KEY:
                bufs.append(buf)
                self.held_bytes += buf.nbytes
            return buf.reshape(shape)

    def step_started(self) -> None:
        """A step of the arena's plan starts: the second one turns keeping on."""
        self._steps += 1
        if self._steps > 1:
            self.keeping = True

    def in_use(self) -> int:
        """Bytes of kept buffers something still refers to."""
        used = 0
        with self._lock:
            for bufs in self._bufs.values():
                for buf in bufs:
                    if sys.getrefcount(buf) != _FREE:
                        used += buf.nbytes
        return used

    def sizes(self) -> list[int]:
        """The byte size of each kept buffer."""
        with self._lock:
            return [b.nbytes for bufs in self._bufs.values() for b in bufs]

    def clear(self) -> None:
        with self._lock:
            self._bufs.clear()
            self.held_bytes = 0


def empty(ctx: Any, shape: tuple[int, ...], dtype: Any) -> Any:
    """A kernel's output buffer: from its executor's arena when large, else ``xp.empty``."""
    arena = ctx.arena
    if arena is not None:
        dtype = np.dtype(dtype)
        size = 1
        for d in shape:
            size *= d
        if size * dtype.itemsize >= MIN_BYTES:
            return arena.empty(tuple(shape), size, dtype)
    return ctx.xp.empty(shape, dtype)


# --- a kernel's own temporaries, kept in its state across steps ---------------------------------


def take(xp, state: dict | None, key: str, shape: tuple, dtype):
    """A buffer for a kernel-internal temporary: the one the kernel used last time (kept in
    ``state``, its per-node dict that lives across steps) when shape and dtype still fit, else
    a new one. A multi-MB temporary allocated anew every step is fresh memory each time (mapped,
    faulted and zeroed by the OS); reusing it skips that. The buffer leaves ``state`` while in
    use, so two steps running the same kernel at once never share one; ``give`` returns it."""
    buf = state.pop(key, None) if state is not None else None
    if buf is None or type(buf) is not xp.ndarray or buf.shape != shape or buf.dtype != dtype:
        return xp.empty(shape, dtype=dtype)
    return buf


def give(state: dict | None, key: str, buf) -> None:
    """Return a ``take`` buffer once nothing reads it any more."""
    if state is not None:
        state[key] = buf
