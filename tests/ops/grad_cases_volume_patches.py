"""Gradient cases for ExtractVolumePatches (TF's own gradient values: tests/ops/test_tf2_api_ops.py)."""

from tests.ops.grad_harness import GradCase, g64

CASES = [
    GradCase("ExtractVolumePatches", [g64(1, 3, 4, 3, 2)],
             attrs={"ksizes": [1, 2, 2, 2, 1], "strides": [1, 1, 2, 1, 1], "padding": "SAME"}),
    GradCase("ExtractVolumePatches", [g64(2, 3, 3, 4, 1)],
             attrs={"ksizes": [1, 3, 2, 2, 1], "strides": [1, 1, 1, 2, 1], "padding": "VALID"}, id="ExtractVolumePatches-valid"),
]
