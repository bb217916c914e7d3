"""Sums over an array's leading axes as one matrix-vector product.

numpy reduces a C-contiguous [M, R] array over axis 0 one row at a time, R elements wide: with
few channels (R = 16 or 32: a conv layer's BiasAddGrad, batch-norm moments over N, H, W) that
loop is ~100x slower than BLAS's gemv on the same data. ``ones[M] @ x[M, R]`` gives the same
sums, accumulated in the same order (row after row, in T), so results agree to rounding.
Written against ``xp``: cupy takes the same path.
"""

from __future__ import annotations

import math

import numpy as np

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
# Below this many elements numpy's reduction costs a few microseconds, about what handing a
# small gemv to a multi-threaded BLAS costs: the product only pays on larger arrays (a small
# MLP's BiasAddGrad [64, 128] was 5% of its training step slower through it).
MIN_ELEMENTS = 1 << 14
_ONES: dict[tuple[int, str], np.ndarray] = {}  # numpy's ones vectors, read-only, by (length, dtype)


def leading(axes: tuple[int, ...], ndim: int) -> int:
    """How many leading axes ``axes`` (sorted, non-negative) are, when they are exactly the
    first few and leave at least one axis; 0 otherwise."""
    k = len(axes)
    return k if 0 < k < ndim and axes == tuple(range(k)) else 0


def _ones(xp, m: int, dtype):
    if xp is not np:
        return xp.ones(m, dtype=dtype)
    key = (m, dtype.str)
    ones = _ONES.get(key)
    if ones is None:
        if len(_ONES) > 64:  # a bounded cache: shapes of one model, not every batch size ever
            _ONES.clear()
        ones = _ONES[key] = np.ones(m, dtype=dtype)
        ones.flags.writeable = False
    return ones


def sum_leading(xp, x, lead: int):
    """``x`` summed over its first ``lead`` axes (dropped), in x's dtype; None where the
    product does not apply (not float32/float64, not C-contiguous, under MIN_ELEMENTS, or
    ``lead`` not in 1..ndim-1), for the caller's general reduction."""
    if not 0 < lead < x.ndim or x.dtype not in _FLOATS or x.size == 0 or x.size < MIN_ELEMENTS or not x.flags.c_contiguous:
        return None
    m = math.prod(x.shape[:lead])
    return xp.matmul(_ones(xp, m, x.dtype), x.reshape(m, -1)).reshape(x.shape[lead:])
