"""Gradient cases for sparse_ops: the values' and b's gradients (indices, shapes and axes are integers)."""

import numpy as np

from tests.ops.grad_harness import GradCase, g64

_IDX = np.array([[0, 1], [1, 0], [2, 2]], np.int64)
_IDX3 = np.array([[0, 1, 2], [2, 0, 1], [0, 3, 2], [1, 3, 0]], np.int64)

CASES = [
    GradCase("SparseToDense", [_IDX, np.array([3, 3], np.int64), g64(3), g64()], wrt=[2, 3]),
    GradCase("SparseToDense", [np.array([1, 3], np.int32), np.array([5], np.int32), g64(), g64()], wrt=[2, 3],
             id="SparseToDense-scalar-value"),
    GradCase("SparseTensorDenseMatMul", [_IDX, g64(3), np.array([3, 3], np.int64), g64(3, 4)], wrt=[1, 3]),
    GradCase("SparseTensorDenseMatMul", [_IDX, g64(3), np.array([3, 3], np.int64), g64(4, 3)],
             {"adjoint_a": True, "adjoint_b": True}, wrt=[1, 3], id="SparseTensorDenseMatMul-adjoints"),
    GradCase("SparseReduceSum", [_IDX3, g64(4), np.array([3, 4, 3], np.int64), np.array([1], np.int32)], wrt=[1]),
    GradCase("SparseReduceSum", [_IDX3, g64(4), np.array([3, 4, 3], np.int64), np.array([0, -1], np.int32)],
             {"keep_dims": True}, wrt=[1], id="SparseReduceSum-keep-dims"),
]

NO_GRADIENT = {"SparseReduceSumSparse": "TensorFlow registers no gradient for it"}
