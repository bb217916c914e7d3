"""MaxPoolGrad and MaxPool3DGrad at their edges, as TensorFlow's CPU kernels (TF 2.21, found by
scripts/tf_fuzz_parity.py --family 2): the upstream gradient is routed to the maxima, never
multiplied by a mask (an inf or NaN dy reaches its maximum only); a 2-D window with no element
equal to its output (all -inf or NaN: MaxPool gives the lowest float) gives its dy to its first
element; MaxPool3D and MaxPool3DGrad follow the same rules (oneDNN runs both in TF's graphs)."""

import numpy as np

from specflow.ops.eval import evaluate_op

inf, nan = np.inf, np.nan
_POOL2 = {"ksize": [1, 1, 2, 1], "strides": [1, 1, 2, 1], "padding": "VALID"}


def _pool2(x, dy):
    x = np.array(x, np.float32).reshape(1, 1, -1, 1)
    y = evaluate_op("MaxPool", [x], **_POOL2)[0]
    return y.ravel(), evaluate_op("MaxPoolGrad", [x, y, np.array(dy, np.float32).reshape(y.shape)], **_POOL2)[0].ravel()


def test_max_pool_grad_routes_non_finite_dy():
    _, dx = _pool2([nan, 1, 1, nan, 5, 4, 0, 0], [nan, inf, -inf, 2])
    np.testing.assert_array_equal(dx, [0, nan, inf, 0, -inf, 0, 2, 0])


def test_max_pool_grad_window_without_maximum_gives_first():
    y, dx = _pool2([-inf, -inf, nan, nan, -inf, nan, nan, -inf], [1, 2, 3, 4])
    np.testing.assert_array_equal(y, np.full(4, np.finfo(np.float32).min))
    np.testing.assert_array_equal(dx, [1, 0, 2, 0, 3, 0, 4, 0])


def test_max_pool_grad_window_without_maximum_overlapping():
    attrs = {"ksize": [1, 1, 2, 1], "strides": [1, 1, 1, 1], "padding": "SAME"}
    x = np.array([3, -inf, -inf, nan], np.float32).reshape(1, 1, 4, 1)
    y = evaluate_op("MaxPool", [x], **attrs)[0]
    dx = evaluate_op("MaxPoolGrad", [x, y, np.array([1, 2, 4, 8], np.float32).reshape(y.shape)], **attrs)[0]
    np.testing.assert_array_equal(dx.ravel(), [1, 2, 4, 8])  # windows [3,-inf] [-inf,-inf] [-inf,nan] [nan]


def test_max_pool3d_as_tf_graphs_run_it():
    # TF 2.21's graphs run MaxPool3D by oneDNN (float32 and bfloat16, its only CPU types): a NaN
    # never wins, the output is at least the lowest float, and the gradient goes to the first
    # maximum as MaxPoolGrad's (not to every element within 1e-5, TF's eager Eigen kernel)
    attrs = {"ksize": [1, 1, 1, 2, 1], "strides": [1, 1, 1, 2, 1], "padding": "VALID"}
    x = np.array([1, 1 + 3e-6, inf, inf, 7, 7, -inf, -inf, 2, nan], np.float32).reshape(1, 1, 1, 10, 1)
    y = evaluate_op("MaxPool3D", [x], **attrs)[0]
    np.testing.assert_array_equal(y.ravel(), np.array([1 + 3e-6, inf, 7, np.finfo(np.float32).min, 2], np.float32))
    dy = np.array([1, 2, inf, 3, 5], np.float32).reshape(y.shape)
    dx = evaluate_op("MaxPool3DGrad", [x, y, dy], **attrs)[0]
    np.testing.assert_array_equal(dx.ravel(), [0, 1, 2, 0, inf, 0, 3, 0, 5, 0])


def test_max_pool_grad_leading_nan_keeps_dy_in_float64():
    # TF's Eigen kernel (float64, float16): the argmax starts at the window's first element and
    # moves only to a strictly greater one; float32 (oneDNN) gives it to the finite maximum
    for dt, want in ((np.float64, [1, 0, 2, 0, 3, 0]), (np.float16, [1, 0, 2, 0, 3, 0]), (np.float32, [0, 1, 2, 0, 3, 0])):
        x = np.array([nan, 1, 1, nan, -inf, nan], dt).reshape(1, 1, 6, 1)
        y = evaluate_op("MaxPool", [x], **_POOL2)[0]
        dx = evaluate_op("MaxPoolGrad", [x, y, np.array([1, 2, 3], dt).reshape(y.shape)], **_POOL2)[0]
        np.testing.assert_array_equal(dx.ravel(), want, err_msg=str(dt))


def test_avg_pool_grad_window_longer_than_input_keeps_inf_in_its_span():
    # ksize 3 over a height of 1 with SAME padding: TF's broadcast spans (tf_cpu_pooling); an
    # infinite grad reaches its own span only
    attrs = {"ksize": [1, 3, 1, 1], "strides": [1, 2, 3, 1], "padding": "SAME"}
    dy = np.array([1.0, inf], np.float32).reshape(1, 1, 2, 1)
    dx = evaluate_op("AvgPoolGrad", [np.array([1, 1, 5, 1], np.int32), dy], **attrs)[0]
    np.testing.assert_array_equal(dx.ravel(), [1, 0, 0, inf, 0])
