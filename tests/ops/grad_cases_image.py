"""Gradient cases for image_ops (resizing) and lrn_ops.

ResizeBilinear's output is float32 whatever its input, so its case stays in float32; the op is
linear in the image, so a large step has no truncation error and float32 rounding stays small.
"""

import numpy as np

from tests.ops.grad_harness import GradCase, g64

NO_GRADIENT = {
    "ResizeBilinearGrad": "TensorFlow registers no gradient for it",
    "ResizeBicubicGrad": "TensorFlow registers no gradient for it",
    "ResizeNearestNeighborGrad": "TensorFlow registers no gradient for it",
    "LRNGrad": "TensorFlow registers no gradient for it",
}

_SIZE = np.array([5, 3], np.int32)
_x = g64(1, 2, 2, 7)

CASES = [
    *(GradCase("ResizeBilinear", [g64(1, 3, 4, 2).astype(np.float32), _SIZE], attrs, keep_float32=True,
               eps=0.05, rtol=1e-3, atol=1e-3, id=f"ResizeBilinear-{i}")
      for i, attrs in enumerate([{}, {"align_corners": True}, {"half_pixel_centers": True}])),
    *(GradCase("ResizeNearestNeighbor", [g64(1, 3, 4, 2), _SIZE], attrs, id=f"ResizeNearestNeighbor-{i}")
      for i, attrs in enumerate([{}, {"align_corners": True}, {"half_pixel_centers": True}])),
    GradCase("LRN", [_x], {"depth_radius": 2, "bias": 1.5, "alpha": 0.4, "beta": 0.75}),
    GradCase("LRN", [g64(1, 1, 2, 3)], {}, id="LRN-defaults"),
    GradCase("ResizeBicubic", [g64(1, 3, 4, 2).astype(np.float32), _SIZE], {"half_pixel_centers": True}, keep_float32=True,
             eps=1e-2, rtol=1e-3, atol=1e-4, wrt=[0]),
    GradCase("ResizeBicubic", [g64(1, 4, 3, 1).astype(np.float32), np.array([2, 5], np.int32)], {"align_corners": True},
             keep_float32=True, eps=1e-2, rtol=1e-3, atol=1e-4, wrt=[0], id="ResizeBicubic-align-corners"),
]  # fmt: skip
