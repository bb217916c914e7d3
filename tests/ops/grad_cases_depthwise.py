"""Gradient cases for depthwise_conv_ops: the forward op and its two backprop ops (each other's
gradients), over tiny geometries (stride, dilation, EXPLICIT padding, NCHW)."""

import numpy as np

from specflow.ops.eval import evaluate_op
from tests.ops.grad_cases_conv import _nchw
from tests.ops.grad_harness import GradCase, g64


def _cases(x, f, attrs, ident):
    y = evaluate_op("DepthwiseConv2dNative", [x, f], **attrs)[0]
    dy = g64(*y.shape)
    return [
        GradCase("DepthwiseConv2dNative", [x, f], attrs, id=f"DepthwiseConv2dNative-{ident}"),
        GradCase("DepthwiseConv2dNativeBackpropInput", [np.array(x.shape, np.int32), f, dy], attrs,
                 id=f"DepthwiseConv2dNativeBackpropInput-{ident}"),
        GradCase("DepthwiseConv2dNativeBackpropFilter", [x, np.array(f.shape, np.int32), dy], attrs,
                 id=f"DepthwiseConv2dNativeBackpropFilter-{ident}"),
    ]  # fmt: skip


_X, _F = g64(1, 4, 4, 2), g64(2, 2, 2, 2)
_SAME2 = {"strides": [1, 2, 2, 1], "padding": "SAME"}

CASES = [
    *_cases(_X, _F, {"strides": [1, 1, 1, 1], "padding": "VALID"}, "VALID"),
    *_cases(_X, _F, _SAME2, "SAME-stride2"),
    *_cases(g64(1, 5, 4, 1), g64(2, 2, 1, 2), {"strides": [1, 1, 1, 1], "padding": "SAME",
                                               "dilations": [1, 2, 2, 1]}, "SAME-dilated"),
    *_cases(_X, g64(2, 2, 2, 1), {"strides": [1, 1, 1, 1], "padding": "EXPLICIT",
                                  "explicit_paddings": [0, 0, 1, 0, 0, 1, 0, 0]}, "EXPLICIT"),
    *_cases(np.ascontiguousarray(_X.transpose(0, 3, 1, 2)), _F, _nchw(_SAME2), "NCHW-SAME-stride2"),
]  # fmt: skip
