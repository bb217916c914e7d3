"""Gradient cases for reverse_ops, TopKV2 and ApproxTopK."""

import numpy as np

from tests.ops.grad_harness import GradCase, g64

CASES = [
    GradCase("ReverseV2", [g64(2, 3, 2), np.array([0, 2], np.int32)]),
    GradCase("Roll", [g64(3, 4), np.array([1, -6], np.int32), np.array([0, 1], np.int32)]),
    GradCase("ReverseSequence", [g64(4, 3, 2), np.array([2, 4, 1], np.int64)], attrs={"seq_dim": 0, "batch_dim": 1}),
    GradCase("TopKV2", [g64(2, 3, 5), np.int32(2)]),  # distinct random values: no ties to break
    GradCase("ApproxTopK", [g64(2, 5, 3).astype(np.float32)], attrs={"k": 2, "reduction_dimension": 1}, keep_float32=True,
             eps=1e-3, rtol=1e-3, atol=1e-4),
    GradCase("ApproxTopK", [g64(4, 3).astype(np.float32)], attrs={"k": 2, "is_max_k": False}, keep_float32=True, eps=1e-3,
             rtol=1e-3, atol=1e-4, id="ApproxTopK-min"),
]
