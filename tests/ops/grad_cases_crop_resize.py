"""Gradient cases for crop_resize_ops: CropAndResize is linear in its image (float32 only, a
large step is exact); its boxes' gradient is checked in test_crop_resize.py."""

import numpy as np

from tests.ops.grad_harness import GradCase, g64

NO_GRADIENT = {
    "CropAndResizeGradImage": "TensorFlow registers no gradient for it",
    "CropAndResizeGradBoxes": "TensorFlow registers no gradient for it",
}
TESTED_ELSEWHERE = {}

_BOXES = np.array([[0.1, 0.15, 0.8, 0.9], [0.05, 0.2, 0.95, 0.7]], np.float32)

CASES = [
    GradCase("CropAndResize", [g64(2, 5, 6, 2).astype(np.float32), _BOXES, np.array([1, 0], np.int32),
                               np.array([3, 4], np.int32)], wrt=[0], keep_float32=True, eps=0.05, rtol=1e-3, atol=1e-3),
]  # fmt: skip
