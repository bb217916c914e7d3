"""Elementwise ops between a contiguous [..., C] array and a [C] vector (a bias, a batch-norm
scale or shift), with few channels C.

numpy's broadcast loop runs C elements at a time, so with 16 or 32 channels the per-call cost
dominates (an [N*H*W, 16] float32 add: 2-3x the time of the same add over whole rows). Seen as
[M / R, R * C] rows against the vector tiled R times, the same elements meet the same operands
in one long loop: the results are identical, element for element. ``broadcast_channels``
materialises such a vector the same way (BroadcastTo), and ``relu`` takes numpy's fast
array-array maximum against a line of zeros instead of its slow array-scalar loop.
Arrays under ``MIN_SIZE`` elements take the plain loops (the set-up would cost more), and so
does cupy, whose broadcasting kernels have no such per-row cost (the tiling would only add
launches).
"""

from __future__ import annotations

import numpy as np

# Lines of up to 16K elements: numpy pays per line too (a [16384, 32] float32 Relu or Mul: 1K-element
# lines ~1.6x the time of 16K-element ones, which run about as fast as one array-array pass).
MAX_ROWS = 1024  # vector copies per line
_MAX_LINE = 16384
MIN_SIZE = 1 << 14  # elements: below, the plain broadcast loop costs less than setting this up


def rows_per_line(m: int, c: int) -> int:
    """How many C-element rows of an [m, c] matrix to treat as one line (a power of two
    dividing m; 1 when that does not pay)."""
    rows = 1
    while rows < MAX_ROWS and m % (2 * rows) == 0 and c * rows < _MAX_LINE:
        rows *= 2
    return rows


def channel_op(xp, ufunc, big, vec, out, vec_first: bool = False):
    """``ufunc(big, vec, out=out)`` (``ufunc(vec, big, ...)`` with ``vec_first``) for a
    C-contiguous ``big`` [..., C], a ``vec`` of C elements broadcasting over its last axis and
    a C-contiguous ``out`` shaped like ``big``."""
    if big.size < MIN_SIZE or xp is not np:
        return ufunc(vec, big, out=out) if vec_first else ufunc(big, vec, out=out)
    c = big.shape[-1] if big.ndim else 1
    rows = rows_per_line(big.size // c, c) if c else 1
    if rows == 1 or not (big.flags.c_contiguous and out.flags.c_contiguous):
        return ufunc(vec, big, out=out) if vec_first else ufunc(big, vec, out=out)
    wide = (big.size // (c * rows), c * rows)
    line = xp.tile(vec.reshape(c), rows)
    a, w = big.reshape(wide), out.reshape(wide)
    if vec_first:
        ufunc(line, a, out=w)
    else:
        ufunc(a, line, out=w)
    return out


def is_channel_vector(vec, big) -> bool:
    """Whether ``vec`` holds one value per entry of ``big``'s last axis (shape [C] or
    [1, ..., 1, C], no more dims than ``big``), so that broadcasting it gives ``big``'s shape."""
    return (
        0 < vec.ndim <= big.ndim
        and big.ndim >= 2
        and vec.shape[-1] == big.shape[-1]
        and vec.size == vec.shape[-1]
    )


def broadcast_channels(xp, vec, out):
    """``out[...] = vec`` for a C-contiguous ``out`` [..., C] and a ``vec`` of its C channels:
    the vector tiled into one line, copied to every line."""
    c = out.shape[-1]
    if out.size < MIN_SIZE or xp is not np:
        out[...] = vec
        return out
    rows = rows_per_line(out.size // c, c)
    line = xp.tile(vec.reshape(c), rows)
    out.reshape(out.size // (c * rows), c * rows)[...] = line
    return out


_ZERO_LINES: dict = {}  # (dtype, length) -> a read-only numpy line of zeros


def _zero_line(xp, dtype, length: int):
    if xp is not np:
        return xp.zeros(length, dtype=dtype)
    key = (np.dtype(dtype), length)
    line = _ZERO_LINES.get(key)
    if line is None:
        line = _ZERO_LINES[key] = np.zeros(length, dtype=dtype)
        line.flags.writeable = False
    return line


def relu(xp, x, out=None):
    """``max(x, 0)`` (into ``out``, which may be ``x``). numpy's maximum against a scalar takes
    a slow loop (~2.5x the time of maximum of two arrays, float32 on AVX-512): against a line of
    zeros, over lines of up to 16K elements, it takes the fast one. Same values."""
    size = x.size
    if size < MIN_SIZE or xp is not np:
        return xp.maximum(x, 0) if out is None else xp.maximum(x, 0, out=out)
    length = 1
    while length < _MAX_LINE and size % (2 * length) == 0:
        length *= 2
    contiguous = x.flags.c_contiguous and (out is None or out.flags.c_contiguous)
    if length < 64 or not contiguous or x.dtype.kind not in "fiu":
        return xp.maximum(x, 0) if out is None else xp.maximum(x, 0, out=out)
    if out is None:
        out = xp.empty(x.shape, dtype=x.dtype)
    xp.maximum(x.reshape(-1, length), _zero_line(xp, x.dtype, length), out=out.reshape(-1, length))
    return out
