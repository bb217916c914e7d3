"""Cases for depthwise_conv_ops: DepthwiseConv2dNative and its backprop ops.

References loop over every output position and window element (cases_conv's bounds-checked
window walk), channel by channel; EXPLICIT padding is checked as VALID on a hand-padded input.
"""

import itertools

import numpy as np

from tests.ops.cases_conv import _out_shape, _window, nchw, nhwc
from tests.ops.harness import Case, f32, f64

_TOL = {"rtol": 1e-5, "atol": 1e-5}


def depthwise_ref(x, f, strides, padding, dilations=(1, 1)):
    kh, kw, c, m = f.shape
    out = np.zeros(_out_shape(x.shape, (kh, kw), strides, padding, c * m, dilations), x.dtype)
    for n in range(x.shape[0]):
        for oh, ow, i, j, ih, iw in _window(x.shape, (kh, kw), strides, padding, dilations):
            for ci, mi in itertools.product(range(c), range(m)):
                out[n, oh, ow, ci * m + mi] += x[n, ih, iw, ci] * f[i, j, ci, mi]
    return out


def depthwise_input_grad_ref(x_shape, f, dy, strides, padding, dilations=(1, 1)):
    kh, kw, c, m = f.shape
    dx = np.zeros(x_shape, dy.dtype)
    for n in range(x_shape[0]):
        for oh, ow, i, j, ih, iw in _window(x_shape, (kh, kw), strides, padding, dilations):
            for ci, mi in itertools.product(range(c), range(m)):
                dx[n, ih, iw, ci] += dy[n, oh, ow, ci * m + mi] * f[i, j, ci, mi]
    return dx


def depthwise_filter_grad_ref(x, f_shape, dy, strides, padding, dilations=(1, 1)):
    kh, kw, c, m = f_shape
    df = np.zeros(f_shape, dy.dtype)
    for n in range(x.shape[0]):
        for oh, ow, i, j, ih, iw in _window(x.shape, (kh, kw), strides, padding, dilations):
            for ci, mi in itertools.product(range(c), range(m)):
                df[i, j, ci, mi] += x[n, ih, iw, ci] * dy[n, oh, ow, ci * m + mi]
    return df


def _cases(x, f, stride, padding, ident, dilation=1, fmt="NHWC"):
    s, d = (stride, stride), (dilation, dilation)
    kh, kw, c, m = f.shape
    dy = f32(*_out_shape(x.shape, (kh, kw), s, padding, c * m, d)).astype(x.dtype)
    attrs = {"strides": [1, stride, stride, 1], "padding": padding, "dilations": [1, dilation, dilation, 1]}
    tx, back = (lambda a: a), (lambda a: a)
    if fmt == "NCHW":
        attrs.update(data_format="NCHW", strides=[1, 1, stride, stride], dilations=[1, 1, dilation, dilation])
        tx, back = nchw, nhwc
    return [
        Case("DepthwiseConv2dNative", [tx(x), f], attrs=attrs, id=f"DepthwiseConv2dNative-{ident}",
             ref=lambda xx, ff: tx(depthwise_ref(back(xx), ff, s, padding, d)), **_TOL),
        Case("DepthwiseConv2dNativeBackpropInput", [np.array(tx(x).shape, np.int32), f, tx(dy)], attrs=attrs,
             const_inputs=[0], id=f"DepthwiseConv2dNativeBackpropInput-{ident}",
             ref=lambda sz, ff, g: tx(depthwise_input_grad_ref(x.shape, ff, back(g), s, padding, d)), **_TOL),
        Case("DepthwiseConv2dNativeBackpropFilter", [tx(x), np.array(f.shape, np.int32), tx(dy)], attrs=attrs,
             const_inputs=[1], id=f"DepthwiseConv2dNativeBackpropFilter-{ident}",
             ref=lambda xx, sz, g: depthwise_filter_grad_ref(back(xx), f.shape, back(g), s, padding, d), **_TOL),
    ]  # fmt: skip


_x, _f = f32(2, 5, 6, 3), f32(3, 3, 3, 2)
_xp = np.pad(_x, ((0, 0), (1, 0), (0, 2), (0, 0)))
_EXPLICIT = {"strides": [1, 1, 1, 1], "padding": "EXPLICIT", "explicit_paddings": [0, 0, 1, 0, 0, 2, 0, 0]}

CASES = [
    *_cases(_x, _f, 1, "SAME", "SAME"),
    *_cases(_x, _f, 2, "VALID", "VALID-stride2"),
    *_cases(_x, _f, 2, "SAME", "SAME-stride2"),
    *_cases(_x, f32(2, 2, 3, 1), 1, "SAME", "SAME-dilated-even", dilation=2),
    *_cases(_x, _f, 2, "SAME", "NCHW-SAME-stride2", fmt="NCHW"),
    *_cases(f64(1, 4, 5, 2), f64(2, 3, 2, 3), 1, "VALID", "float64"),
    Case("DepthwiseConv2dNative", [_x, _f], attrs=_EXPLICIT, id="DepthwiseConv2dNative-EXPLICIT",
         ref=lambda x, f: depthwise_ref(_xp, f, (1, 1), "VALID"), **_TOL),
    # A window larger than the input (VALID): an empty output, as TF (issue 14 item 5).
    Case("DepthwiseConv2dNative", [f32(1, 2, 2, 3), _f], attrs={"strides": [1, 1, 1, 1], "padding": "VALID"},
         id="DepthwiseConv2dNative-empty", ref=lambda x, f: np.zeros((1, 0, 0, 6), np.float32)),
]  # fmt: skip
