"""im2col as one gather, and its adjoint as one scatter-add (window.py's other path).

Every window's elements are read from the input's [N, rows, C] rows, plus one zero row after
them that every padded position reads, by one precomputed index: no bordered copy and no
per-tap copies. On the CPU this wins for small inputs (a batch of one at inference, where the
per-tap calls cost more than the bytes; window.GATHER_MAX); on a GPU always, since each call there is a kernel
launch: im2col is one ``take`` whatever the window, and the input gradient's col2im one
``add.at`` (cupy's atomic adds; a numpy ``add.at`` would be slower than the taps).
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Sequence

import numpy as np

from specflow.ops.buffers import give, take

Dims = Sequence[int | None]

@functools.lru_cache(maxsize=256)
def window_index(win, spatial: Dims) -> tuple[np.ndarray, bool]:
    """Row positions in an input of ``spatial`` (flattened; ``prod(spatial)`` for the zero row)
    read by each output position's window, in (output position, tap) order: [prod(out) * K];
    and whether any is padding."""
    axes = [np.arange(o)[:, None] * s + np.arange(kk)[None, :] * d - a
            for o, kk, s, d, (a, _) in zip(win.out, win.ksize, win.strides, win.dilations, win.pads)]  # fmt: skip
    # per dim [out_d, k_d] input positions; combined in (out..., k...) order, then flattened
    grids = np.broadcast_arrays(*np.ix_(*[a.ravel() for a in axes]))
    inside = np.logical_and.reduce([(g >= 0) & (g < size) for g, size in zip(grids, spatial)])
    flat = np.where(inside, np.ravel_multi_index(tuple(np.clip(g, 0, size - 1) for g, size in zip(grids, spatial)),
                                                 spatial), math.prod(spatial))  # fmt: skip
    d = len(spatial)
    shape = [x for o, kk in zip(win.out, win.ksize) for x in (o, kk)]
    flat = flat.reshape(shape)  # (out_0, k_0, out_1, k_1, ...)
    order = [2 * i for i in range(d)] + [2 * i + 1 for i in range(d)]
    return np.ascontiguousarray(flat.transpose(order)).ravel(), not inside.all()


# im2col buffers up to this size are kept in kernel state between steps; a larger one is
# allocated afresh each call. Measured on the zoo CNN's training step at batch 1024 (conv2's
# 9.4 MB im2col, single thread, 3 process pairs): 21.5-21.6 ms a step fresh, 24.0-27.5 kept,
# whatever made them: a gather or a copy; inference at batch 256 (2.4 MB) the same either way.
COLS_KEEP_MAX = 4 << 20


def take_cols(xp, state: dict | None, shape: tuple, dtype):
    """``take``'s "im2col" buffer of ``shape``, or a fresh one above COLS_KEEP_MAX bytes."""
    if math.prod(shape) * np.dtype(dtype).itemsize > COLS_KEEP_MAX:
        if state is not None:
            state.pop("im2col", None)  # (the last one, given back: dropped before the new one)
        return xp.empty(shape, dtype=dtype)
    return take(xp, state, "im2col", shape, dtype)


_ON_DEVICE: dict[tuple, object] = {}  # (win, spatial, GPU id) -> the index as a device array
_ON_DEVICE_LOCK = threading.Lock()


def _index(xp, win, spatial: tuple) -> tuple[object, bool]:
    """``window_index`` as ``xp`` holds it: copied to a GPU once per window and device."""
    idx, padded = window_index(win, spatial)
    if xp is np:
        return idx, padded
    key = (win, spatial, xp.cuda.Device().id)
    dev = _ON_DEVICE.get(key)
    if dev is None:
        with _ON_DEVICE_LOCK:
            if len(_ON_DEVICE) > 1024:
                _ON_DEVICE.clear()
            dev = _ON_DEVICE.setdefault(key, xp.asarray(idx))
    return dev, padded


def gather_source(xp, x, rows: int, padded: bool, state):
    """What the gathers read: channels-last ``x`` as [N, rows, C] rows and, when ``padded``, one
    zero row after them that every padded position reads, in the kernel's kept "gather_src"
    buffer (its zero row written once: the copy of ``x`` never reaches it). Give it back with
    ``give_source`` once the gather is done."""
    n, c = x.shape[0], x.shape[-1]
    if not padded:
        return x.reshape(n, rows, c)
    src = take(xp, state, "gather_src", (n, rows + 1, c), x.dtype)
    src[:, :rows] = x.reshape(n, rows, c)
    if state is None or state.get("gather_zeroed") is not src:
        src[:, rows] = 0
        if state is not None:
            state["gather_zeroed"] = src
    return src


def give_source(state, src, padded: bool) -> None:
    if padded:
        give(state, "gather_src", src)


def im2col_gather(xp, x, win, state):
    """[N, *out, K * C]: one ``take`` of every window's elements (window.im2col's order)."""
    n, *spatial, c = x.shape
    k = math.prod(win.ksize)
    idx, padded = _index(xp, win, tuple(spatial))
    src = gather_source(xp, x, math.prod(spatial), padded, state)
    if xp is np:  # into the kernel's kept buffer (its callers give it back as "im2col")
        cols = take_cols(xp, state, (n, *win.out, k * c), x.dtype)
        # (every index is in range: "wrap" skips the bounds check and the buffered copy of "raise")
        np.take(src, idx, axis=1, out=cols.reshape(n, -1, c), mode="wrap")
    else:
        cols = xp.take(src, idx, axis=1).reshape(n, *win.out, k * c)
    give_source(state, src, padded)
    return cols


def col2im_scatter(xp, cols, shape: Dims, win, empty=None):
    """The adjoint of ``im2col_gather`` on a GPU: ``cols`` [N, *out, K * C] added into an input
    of ``shape`` where each window reads (what lands on the zero row is dropped)."""
    n, *spatial, c = shape
    idx, padded = _index(xp, win, tuple(spatial))
    rows = math.prod(spatial)
    acc = xp.zeros((n, rows + int(padded), c), dtype=cols.dtype)
    xp.add.at(acc, (slice(None), idx), cols.reshape(n, -1, c))
    if not padded:
        return acc.reshape(tuple(shape))
    out = empty(tuple(shape), cols.dtype) if empty is not None else xp.empty(tuple(shape), dtype=cols.dtype)
    out.reshape(n, rows, c)[...] = acc[:, :rows]
    return out
