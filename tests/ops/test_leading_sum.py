"""Sums over leading axes as a matrix-vector product (leading_sum.py) against numpy in float64."""

import numpy as np
import pytest

from specflow.ops import leading_sum
from specflow.ops.eval import evaluate_op
from specflow.ops.leading_sum import leading, sum_leading


@pytest.fixture(autouse=True)
def every_size(monkeypatch):
    """The product on these small arrays too (it serves only large ones by default)."""
    monkeypatch.setattr(leading_sum, "MIN_ELEMENTS", 0)


def _data(shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("shape,lead", [((64, 10), 1), ((8, 4, 4, 16), 3), ((8, 4, 4, 16), 2), ((3, 1, 5), 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sum_leading_matches_numpy(shape, lead, dtype):
    x = _data(shape, dtype)
    got = sum_leading(np, x, lead)
    assert got.dtype == dtype and got.shape == shape[lead:]
    np.testing.assert_allclose(got, x.astype(np.float64).sum(axis=tuple(range(lead))), rtol=1e-5, atol=1e-5)


def test_sum_leading_declines_what_it_cannot_do():
    x = _data((4, 6))
    assert sum_leading(np, x.astype(np.int32), 1) is None  # integers: numpy's reduction
    assert sum_leading(np, x.astype(np.float16), 1) is None  # float16 accumulates in float32 there
    assert sum_leading(np, x.T, 1) is None  # not C-contiguous
    assert sum_leading(np, x[:0], 1) is None  # nothing to sum
    assert sum_leading(np, x, 0) is None and sum_leading(np, x, 2) is None
    leading_sum.MIN_ELEMENTS = 25  # (the fixture restores it)
    assert sum_leading(np, x, 1) is None  # 24 elements: numpy's reduction costs less than BLAS's call
    assert leading((0, 1), 3) == 2 and leading((0, 2), 3) == 0 and leading((0, 1, 2), 3) == 0


@pytest.mark.parametrize("op", ["Sum", "Mean"])
@pytest.mark.parametrize("keep", [False, True])
def test_sum_and_mean_over_leading_axes(op, keep):
    x = _data((16, 3, 3, 8))
    got = evaluate_op(op, [x, np.array([0, 1, 2], np.int32)], keep_dims=keep)[0]
    ref = getattr(x.astype(np.float64), op.lower())(axis=(0, 1, 2), keepdims=keep)
    assert got.dtype == np.float32 and got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_sum_leading_keeps_nan_and_inf():
    x = _data((5, 3))
    x[2, 0], x[1, 1], x[3, 1] = np.nan, np.inf, np.inf
    got = evaluate_op("Sum", [x, np.array([0], np.int32)])[0]
    assert np.isnan(got[0]) and got[1] == np.inf and np.isfinite(got[2])


@pytest.mark.parametrize("fmt,shape", [("NHWC", (4, 5, 5, 16)), ("NCHW", (4, 16, 5, 5)), ("NHWC", (7, 3))])
def test_bias_add_grad_sums_all_but_channels(fmt, shape):
    dy = _data(shape)
    got = evaluate_op("BiasAddGrad", [dy], data_format=fmt)[0]
    channel = 1 if fmt == "NCHW" else len(shape) - 1
    ref = dy.astype(np.float64).sum(axis=tuple(i for i in range(len(shape)) if i != channel))
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
