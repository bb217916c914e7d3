"""Gradient cases for gather_scatter_ops (repeated indices must add their gradients)."""

import numpy as np

from tests.ops.grad_harness import GradCase, g64

_ids = np.array([[2, 0], [1, 0], [2, 0]], np.int32)

CASES = [
    GradCase("Gather", [g64(4, 3), np.array([[3, 0], [3, 1]], np.int64)]),
    GradCase("GatherNd", [g64(3, 2, 2), _ids]),
    GradCase("GatherNd", [g64(3, 2, 2), np.array([[2], [0], [2]], np.int64)], id="GatherNd-slices"),
    GradCase("ScatterNd", [_ids, g64(3, 2), np.array([3, 2, 2], np.int32)]),
    GradCase("TensorScatterUpdate", [g64(3, 2, 2), np.array([[2, 0], [1, 1]], np.int32), g64(2, 2)]),
    GradCase("TensorScatterAdd", [g64(3, 2, 2), _ids, g64(3, 2)]),
    GradCase("TensorScatterSub", [g64(3, 2, 2), _ids, g64(3, 2)]),
    GradCase("TensorScatterMax", [g64(3, 2, 2), np.array([[2, 0], [1, 1]], np.int32), g64(2, 2)]),
    GradCase("TensorScatterMin", [g64(3, 2, 2), np.array([[2], [0]], np.int32), g64(2, 2, 2)]),
]
