"""Gradient cases for conv3d_ops: Conv3D and its backprop ops (each other's gradients),
AvgPool3D and AvgPool3DGrad, MaxPool3D and its gradient ops, on tiny 5-D shapes."""

import numpy as np

from specflow.ops.eval import evaluate_op
from tests.ops.grad_harness import GradCase, g64


def _conv_cases(x, f, attrs, ident):
    dy = g64(*evaluate_op("Conv3D", [x, f], **attrs)[0].shape)
    return [
        GradCase("Conv3D", [x, f], attrs, id=f"Conv3D-{ident}"),
        GradCase("Conv3DBackpropInputV2", [np.array(x.shape, np.int32), f, dy], attrs,
                 id=f"Conv3DBackpropInputV2-{ident}"),
        GradCase("Conv3DBackpropFilterV2", [x, np.array(f.shape, np.int32), dy], attrs,
                 id=f"Conv3DBackpropFilterV2-{ident}"),
    ]  # fmt: skip


def _pool_cases(x, attrs, ident):
    dy = g64(*evaluate_op("AvgPool3D", [x], **attrs)[0].shape)
    return [
        GradCase("AvgPool3D", [x], attrs, id=f"AvgPool3D-{ident}"),
        GradCase("AvgPool3DGrad", [np.array(x.shape, np.int32), dy], attrs, id=f"AvgPool3DGrad-{ident}"),
    ]


def _max_pool_cases(x, attrs, ident):
    """Distinct values (no ties: the maxima's positions stay put under the differences' steps);
    the gradient ops are linear in grad, their other inputs fixed."""
    x = x + np.arange(x.size).reshape(x.shape) * 0.1
    y = evaluate_op("MaxPool3D", [x], **attrs)[0]
    return [
        GradCase("MaxPool3D", [x], attrs, id=f"MaxPool3D-{ident}"),
        GradCase("MaxPool3DGrad", [x, y, g64(*y.shape)], attrs, wrt=[2], id=f"MaxPool3DGrad-{ident}"),
        GradCase("MaxPool3DGradGrad", [x, y, g64(*x.shape)], attrs, wrt=[2], id=f"MaxPool3DGradGrad-{ident}"),
    ]


CASES = [
    *_conv_cases(g64(1, 3, 3, 2, 2), g64(2, 2, 1, 2, 2), {"strides": [1, 1, 1, 1, 1], "padding": "VALID"}, "VALID"),
    *_conv_cases(g64(1, 3, 2, 3, 1), g64(2, 2, 2, 1, 2), {"strides": [1, 2, 1, 2, 1], "padding": "SAME"}, "SAME"),
    *_conv_cases(g64(1, 2, 2, 3, 3), g64(1, 2, 2, 2, 1), {"strides": [1, 1, 1, 1, 2], "padding": "SAME",
                                                          "data_format": "NCDHW"}, "NCDHW"),
    *_pool_cases(g64(1, 3, 4, 2, 2), {"ksize": [1, 2, 2, 2, 1], "strides": [1, 1, 2, 1, 1], "padding": "SAME"}, "SAME"),
    *_pool_cases(g64(1, 2, 4, 4, 1), {"ksize": [1, 2, 2, 2, 1], "strides": [1, 2, 2, 2, 1], "padding": "VALID"}, "VALID"),
    *_max_pool_cases(g64(1, 3, 4, 2, 2), {"ksize": [1, 2, 2, 2, 1], "strides": [1, 1, 2, 1, 1], "padding": "SAME"}, "SAME"),
]  # fmt: skip
