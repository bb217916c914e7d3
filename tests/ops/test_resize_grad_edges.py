"""ResizeBilinearGrad and ResizeNearestNeighborGrad with non-finite grads, as TF's CPU kernels
(found by scripts/tf_fuzz_parity.py --family 2): each grads element reaches only the source
pixels it was sampled from (a zero-weight bilinear tap too: TF adds grad * 0 there), never the
whole row or column a matrix product would spread a NaN over."""

import numpy as np

from specflow.ops.eval import evaluate_op

inf, nan = np.inf, np.nan


def test_resize_nearest_grad_nan_stays_at_its_source():
    grads = np.array([nan, 1, 2, inf], np.float32).reshape(1, 1, 4, 1)  # width 4 from 2: 0, 0, 1, 1
    out = evaluate_op("ResizeNearestNeighborGrad", [grads, np.array([1, 2], np.int32)])[0]
    np.testing.assert_array_equal(out.ravel(), [nan, inf])
    grads = np.array([nan, 1, 2, 3], np.float32).reshape(1, 4, 1, 1)
    out = evaluate_op("ResizeNearestNeighborGrad", [grads, np.array([4, 1], np.int32)])[0]
    np.testing.assert_array_equal(out.ravel(), [nan, 1, 2, 3])


def test_resize_bilinear_grad_nan_reaches_its_taps_only():
    # align_corners, width 3 from 2: sources 0, 0.5, 1; from 4: sources 0, 1.5, 3
    grads = np.array([nan, 2, 4], np.float32).reshape(1, 1, 3, 1)
    out = evaluate_op("ResizeBilinearGrad", [grads, np.zeros((1, 1, 2, 1), np.float32)], align_corners=True)[0]
    np.testing.assert_array_equal(out.ravel(), [nan, 5])
    out = evaluate_op("ResizeBilinearGrad", [grads, np.zeros((1, 1, 4, 1), np.float32)], align_corners=True)[0]
    np.testing.assert_array_equal(out.ravel(), [nan, 1, 1, 4])
    grads = np.array([1, nan, 4], np.float32).reshape(1, 1, 3, 1)  # source 1.5: pixels 1 and 2
    out = evaluate_op("ResizeBilinearGrad", [grads, np.zeros((1, 1, 4, 1), np.float32)], align_corners=True)[0]
    np.testing.assert_array_equal(out.ravel(), [1, nan, nan, 4])


def test_resize_bicubic_nan_reaches_its_taps_only():
    # width 8 -> 4, no flags: sources 0, 2, 4, 6; taps -1..2 around each (clamped): a NaN at
    # pixel 7 is read by the last output only (by TF's 4-tap loop; a matrix product spread it)
    x = np.arange(8, dtype=np.float32).reshape(1, 1, 8, 1)
    x[0, 0, 7, 0] = nan
    out = evaluate_op("ResizeBicubic", [x, np.array([1, 4], np.int32)])[0].ravel()
    assert np.isfinite(out[:3]).all() and np.isnan(out[3])
    grads = np.array([1, 1, 1, inf], np.float32).reshape(1, 1, 4, 1)
    dx = evaluate_op("ResizeBicubicGrad", [grads, np.zeros((1, 1, 8, 1), np.float32)])[0].ravel()
    assert np.isfinite(dx[:4]).all() and not np.isfinite(dx[5:]).any()
