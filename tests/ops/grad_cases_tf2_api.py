"""Gradient cases for NthElement and MatrixSolveLs (fast=True; over- and under-determined, with
and without l2); TF's own values for MatrixSolveLs: tests/ops/test_tf2_api_ops.py."""

import numpy as np

from tests.ops.grad_harness import GradCase, g64

_x = np.array([[3.0, 1.0, 4.0, 1.5, 5.0], [9.0, 2.0, 6.0, 5.0, 3.0]])

CASES = [
    GradCase("NthElement", [_x, np.int32(1)]),
    GradCase("NthElement", [_x, np.int32(0)], attrs={"reverse": True}, id="NthElement-reverse"),
    GradCase("MatrixSolveLs", [g64(2, 5, 3), g64(2, 5, 2), np.float64(0.0)], wrt=[0, 1], id="MatrixSolveLs-over"),
    GradCase("MatrixSolveLs", [g64(4, 3), g64(4, 2), np.float64(0.7)], wrt=[0, 1], id="MatrixSolveLs-over-l2"),
    GradCase("MatrixSolveLs", [g64(2, 3, 5), g64(2, 3, 2), np.float64(0.0)], wrt=[0, 1], id="MatrixSolveLs-under"),
    GradCase("MatrixSolveLs", [g64(3, 4), g64(3, 1), np.float64(0.4)], wrt=[0, 1], id="MatrixSolveLs-under-l2"),
]
