"""Gradient cases for sparse_segment_ops, through each op's *Grad op (rows read twice add up)."""

import numpy as np

from tests.ops.grad_harness import GradCase, g64

IDX = np.array([0, 2, 2, 1], np.int32)
SEG = np.array([0, 0, 2, 2], np.int32)

CASES = [
    *(GradCase(f"SparseSegment{k}", [g64(3, 2), IDX, SEG], wrt=[0]) for k in ("Sum", "Mean", "SqrtN")),
    *(GradCase(f"SparseSegment{k}WithNumSegments", [g64(3, 2), IDX, SEG, np.int32(4)], wrt=[0]) for k in ("Sum", "Mean", "SqrtN")),
]
