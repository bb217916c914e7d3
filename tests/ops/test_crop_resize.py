"""CropAndResize's gradient for its boxes against central differences (float32: boxes chosen so no
sample crosses a pixel boundary within the step), and its errors."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.errors import OpError
from specflow.ops.eval import evaluate_op

RNG = np.random.default_rng(4)


@pytest.mark.parametrize("crop", [(3, 4), (1, 3), (4, 1)])
def test_boxes_gradient_matches_central_differences(crop):
    image = RNG.standard_normal((2, 6, 7, 2)).astype(np.float32)
    boxes = np.array([[0.13, 0.11, 0.77, 0.86], [0.21, 0.07, 0.93, 0.62]], np.float32)
    ind, size = np.array([0, 1], np.int32), np.array(crop, np.int32)
    g = RNG.standard_normal((2, *crop, 2)).astype(np.float32)
    got = evaluate_op("CropAndResizeGradBoxes", [g, image, boxes, ind])[0]
    want = np.zeros((2, 4))
    eps = 1e-3
    for k in range(2):
        for j in range(4):
            up, down = boxes.copy(), boxes.copy()
            up[k, j] += eps
            down[k, j] -= eps
            f = [float(np.sum(g.astype(np.float64) * evaluate_op("CropAndResize", [image, b, ind, size])[0]))
                 for b in (up, down)]  # fmt: skip
            want[k, j] = (f[0] - f[1]) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-3)


def test_a_box_index_outside_the_batch_is_named():
    with pytest.raises(OpError, match="box_ind has 2, not in \\[0, 2\\)"):
        evaluate_op("CropAndResize", [np.zeros((2, 3, 3, 1), np.float32), np.zeros((1, 4), np.float32),
                                      np.array([2], np.int32), np.array([2, 2], np.int32)])  # fmt: skip
