"""Gradient cases for TensorStridedSliceUpdate (a broadcast value's gradient sums over the copies)."""

import numpy as np

from tests.ops.grad_harness import GradCase, g64

_OP = "TensorStridedSliceUpdate"
CASES = [
    GradCase(_OP, [g64(4, 6), np.array([1, 0], np.int32), np.array([3, 6], np.int32), np.array([1, 2], np.int32),
                   g64(2, 3)], wrt=[0, 4]),
    GradCase(_OP, [g64(4, 6), np.array([-1, 5], np.int32), np.array([0, 0], np.int32), np.array([-2, -3], np.int32),
                   g64(1, 2)], wrt=[0, 4], id=f"{_OP}-broadcast-negative"),
]  # fmt: skip
