"""Gradient cases for space_depth_ops: each op's gradient is its inverse."""

import numpy as np

from tests.ops.grad_harness import GradCase, g64

CASES = [
    GradCase("SpaceToDepth", [g64(1, 4, 2, 2)], {"block_size": 2}),
    GradCase("ExtractImagePatches", [g64(1, 5, 4, 2)],
             {"ksizes": [1, 3, 2, 1], "strides": [1, 2, 1, 1], "rates": [1, 1, 2, 1], "padding": "SAME"}),
    GradCase("ExtractImagePatches", [g64(2, 4, 4, 1)],
             {"ksizes": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "rates": [1, 1, 1, 1], "padding": "VALID"}, id="ExtractImagePatches-VALID"),
    GradCase("SpaceToDepth", [g64(1, 2, 4, 2)], {"block_size": 2, "data_format": "NCHW"}, id="SpaceToDepth-NCHW"),
    GradCase("DepthToSpace", [g64(1, 2, 1, 8)], {"block_size": 2}),
    GradCase("SpaceToBatchND", [g64(1, 3, 2, 2), np.array([2, 2], np.int32), np.array([[1, 0], [0, 0]], np.int32)]),
    GradCase("BatchToSpaceND", [g64(4, 2, 1, 2), np.array([2, 2], np.int32), np.array([[0, 1], [1, 0]], np.int32)]),
]
