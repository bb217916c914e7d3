"""Cases for fused_ops: _FusedMatMul against the unfused numpy chain."""

import numpy as np

from tests.ops.harness import Case, f32, f64

_a, _b, _bias = f32(4, 3), f32(3, 5), f32(5)

CASES = [
    Case("_FusedMatMul", [_a, _b, _bias], attrs={"fused_ops": ["BiasAdd"], "num_args": 1},
         ref=lambda a, b, c: a @ b + c, rtol=1e-5, atol=1e-5),
    Case("_FusedMatMul", [_a, _b, _bias], attrs={"fused_ops": ["BiasAdd", "Relu"], "num_args": 1},
         ref=lambda a, b, c: np.maximum(a @ b + c, 0), rtol=1e-5, atol=1e-5, id="_FusedMatMul-relu"),
    Case("_FusedMatMul", [f64(3, 4), f64(5, 3), f64(5)],
         attrs={"fused_ops": ["BiasAdd", "Relu"], "num_args": 1, "transpose_a": True, "transpose_b": True},
         ref=lambda a, b, c: np.maximum(a.T @ b.T + c, 0), id="_FusedMatMul-transposed"),
]

# _FusedConv2D against the naive convolution loops of cases_conv, then the bias (and Relu).
from tests.ops.cases_conv import conv_ref, nchw, nhwc  # noqa: E402

_x, _f, _cb = f32(2, 5, 6, 3), f32(3, 3, 3, 4), f32(4)
_CONV = {"strides": [1, 1, 1, 1], "padding": "SAME", "num_args": 1, "num_host_args": 0}

CASES += [
    Case("_FusedConv2D", [_x, _f, _cb], attrs={**_CONV, "fused_ops": ["BiasAdd"]},
         ref=lambda x, f, b: conv_ref(x, f, (1, 1), "SAME") + b, rtol=1e-5, atol=1e-5, id="_FusedConv2D"),
    Case("_FusedConv2D", [_x, _f, _cb],
         attrs={**_CONV, "fused_ops": ["BiasAdd", "Relu"], "strides": [1, 2, 2, 1], "padding": "VALID"},
         ref=lambda x, f, b: np.maximum(conv_ref(x, f, (2, 2), "VALID") + b, 0), rtol=1e-5, atol=1e-5,
         id="_FusedConv2D-relu-strided"),
    Case("_FusedConv2D", [nchw(f64(2, 4, 4, 3)), f64(2, 2, 3, 5), f64(5)],
         attrs={**_CONV, "fused_ops": ["BiasAdd", "Relu"], "data_format": "NCHW"},
         ref=lambda x, f, b: nchw(np.maximum(conv_ref(nhwc(x), f, (1, 1), "SAME") + b, 0)), rtol=1e-9, atol=1e-9,
         id="_FusedConv2D-nchw"),
]
