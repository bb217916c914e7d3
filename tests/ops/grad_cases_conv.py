"""Gradient cases for conv_ops: Conv2D and its two backprop ops (each other's gradients),
MaxPool / AvgPool and their gradient ops.

Tiny shapes keep finite differences fast. Max-pool inputs are a permutation of well-spaced
values, so no window has a tie (or a near tie a finite difference could flip); their gradient
ops are checked for the ``grad`` input only, as the maxima's positions are locally constant.
"""

import numpy as np

from specflow.ops.eval import evaluate_op
from tests.ops.grad_harness import GradCase, g64

_SAME2 = {"strides": [1, 2, 2, 1], "padding": "SAME"}
_VALID1 = {"strides": [1, 1, 1, 1], "padding": "VALID"}


def _nchw(attrs):
    """NHWC attrs as NCHW: every per-dimension list moved to the NCHW order."""
    out = {
        k: [v[0], v[3], v[1], v[2]] if isinstance(v, list) and len(v) == 4 else v for k, v in attrs.items()
    }
    return {**out, "data_format": "NCHW"}


def _conv_cases(x, f, attrs, ident):
    """Conv2D and both backprop ops, for one input/filter geometry."""
    y = evaluate_op("Conv2D", [x, f], **attrs)[0]
    dy = g64(*y.shape)
    return [
        GradCase("Conv2D", [x, f], attrs, id=f"Conv2D-{ident}"),
        GradCase(
            "Conv2DBackpropInput",
            [np.array(x.shape, np.int32), f, dy],
            attrs,
            id=f"Conv2DBackpropInput-{ident}",
        ),
        GradCase(
            "Conv2DBackpropFilter",
            [x, np.array(f.shape, np.int32), dy],
            attrs,
            id=f"Conv2DBackpropFilter-{ident}",
        ),
    ]


def _distinct(*shape, seed=3):
    """Values 0.1 apart in random order: no ties in any pooling window."""
    n = int(np.prod(shape))
    return np.random.default_rng(seed).permutation(n).reshape(shape).astype(np.float64) * 0.1


def _pool_cases(x, k, attrs, ident):
    """MaxPool, AvgPool and their gradient ops (and MaxPoolGradGrad) for one window geometry."""
    fmt = attrs.get("data_format", "NHWC")
    ksize = [1, k, k, 1] if fmt == "NHWC" else [1, 1, k, k]
    attrs = {**attrs, "ksize": ksize}
    y = evaluate_op("MaxPool", [x], **attrs)[0]
    return [
        GradCase("MaxPool", [x], attrs, id=f"MaxPool-{ident}"),
        GradCase("MaxPoolGrad", [x, y, g64(*y.shape)], attrs, wrt=[2], id=f"MaxPoolGrad-{ident}"),
        GradCase("MaxPoolGradGrad", [x, y, g64(*x.shape)], attrs, wrt=[2], id=f"MaxPoolGradGrad-{ident}"),
        GradCase("AvgPool", [x], attrs, id=f"AvgPool-{ident}"),
        GradCase(
            "AvgPoolGrad", [np.array(x.shape, np.int32), g64(*y.shape)], attrs, id=f"AvgPoolGrad-{ident}"
        ),
    ]


_X, _F = g64(1, 4, 4, 2), g64(2, 2, 2, 3)

CASES = [
    *_conv_cases(_X, _F, _VALID1, "VALID"),
    *_conv_cases(_X, _F, _SAME2, "SAME-stride2"),
    *_conv_cases(g64(2, 3, 4, 2), _F, {**_SAME2, "strides": [1, 1, 2, 1]}, "SAME-batch2-uneven-strides"),
    *_conv_cases(g64(1, 5, 5, 1), g64(2, 2, 1, 2), {**_VALID1, "dilations": [1, 2, 2, 1]}, "VALID-dilated"),
    *_conv_cases(
        _X, _F, {**_VALID1, "padding": "EXPLICIT", "explicit_paddings": [0, 0, 1, 0, 0, 1, 0, 0]}, "EXPLICIT"
    ),
    *_conv_cases(np.ascontiguousarray(_X.transpose(0, 3, 1, 2)), _F, _nchw(_SAME2), "NCHW-SAME-stride2"),
    *_conv_cases(g64(1, 4, 4, 4), g64(2, 2, 2, 2), _SAME2, "grouped"),
    *_pool_cases(_distinct(1, 4, 4, 2), 2, {"strides": [1, 2, 2, 1], "padding": "VALID"}, "VALID"),
    *_pool_cases(_distinct(1, 4, 4, 1), 3, {"strides": [1, 2, 2, 1], "padding": "SAME"}, "SAME-3x3-stride2"),
    *_pool_cases(_distinct(1, 3, 4, 1), 2, _VALID1, "VALID-overlapping"),
    *_pool_cases(_distinct(1, 2, 4, 4), 2, _nchw(_SAME2), "NCHW-SAME"),
]
