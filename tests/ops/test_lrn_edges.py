"""LRN and LRNGrad with infinities, as TF's CPU kernels (found by scripts/tf_fuzz_parity.py
--family 2): LRN sums squares by a contraction with a 0/1 band matrix, so an infinite square
makes NaN the sums of the depths whose window leaves it out; LRNGrad multiplies each pair's
factor by dy, so an infinite dy gives an infinite gradient, not inf - inf."""

import numpy as np

from specflow.ops.eval import evaluate_op

inf, nan = np.inf, np.nan
_ATTRS = {"bias": 1.0, "alpha": 0.1, "beta": 0.5}


def test_lrn_infinite_square_outside_a_window_gives_nan():
    x = np.array([inf, -0.5, 0.25], np.float32).reshape(1, 1, 1, 3)
    np.testing.assert_array_equal(evaluate_op("LRN", [x], depth_radius=1, **_ATTRS)[0].ravel(), [nan, -0.0, nan])
    np.testing.assert_array_equal(evaluate_op("LRN", [x], depth_radius=0, **_ATTRS)[0].ravel(), [nan, nan, nan])
    out = evaluate_op("LRN", [x], depth_radius=2, **_ATTRS)[0].ravel()  # every window holds the inf
    np.testing.assert_array_equal(out, [nan, -0.0, 0.0])


def test_lrn_grad_infinite_dy_stays_infinite():
    x = np.ones((1, 1, 1, 1), np.float32)
    y = evaluate_op("LRN", [x], depth_radius=0, **_ATTRS)[0]
    dy = np.full_like(x, inf)
    np.testing.assert_array_equal(evaluate_op("LRNGrad", [dy, x, y], depth_radius=0, **_ATTRS)[0].ravel(), [inf])
