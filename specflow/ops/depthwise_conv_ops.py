"""Depthwise convolution: DepthwiseConv2dNative and its two backprop ops, with their gradients.

Names, inputs, attrs and semantics are TensorFlow's (nn_ops.cc). The filter is
[height, width, in_channels, channel_multiplier]; input channel c, convolved with
filter[:, :, c, m], gives output channel c * channel_multiplier + m. Window geometry (strides,
dilations, SAME/VALID/EXPLICIT padding, NHWC/NCHW) is conv_ops' own: the same strided slice per
window offset, each multiplied by that offset's [in_channels, multiplier] filter slice and added
up (one vectorized step per window offset, none per pixel; window.py's taps: no padding copies).
"""

from __future__ import annotations

from specflow.graph.shapes import Shape
from specflow.ops import conv_ops as cv
from specflow.ops import grad_util as gu
from specflow.ops import window as wn
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import kernel, register_op

_ALL = slice(None)
_ATTRS = [
    "T: {float}",
    "strides: list(int)",
    cv._PADDING,
    cv._EXPLICIT,
    cv._FORMAT,
    "dilations: list(int) = [1, 1, 1, 1]",
]


def _depthwise_window(c, x_shape, f_shape) -> tuple[cv._Window, tuple]:
    """Check input against filter; the window and the output dims (data_format order)."""
    win, out = cv._conv_window(c, x_shape, f_shape, "channel_multiplier")  # checks in_channels
    f = cv._rank4(c, f_shape, "filter")
    n, oh, ow, _ = cv._nhwc_dims(out, c.attrs["data_format"])
    channels = None if f[2] is None or f[3] is None else f[2] * f[3]
    return win, cv._format_dims(c.attrs["data_format"], n, oh, ow, channels)


def _backprop_window(c, x_shape, f_shape, dy_shape) -> cv._Window:
    win, out = _depthwise_window(c, x_shape, f_shape)
    dy = cv._rank4(c, dy_shape, "out_backprop")
    cv._check_shape(
        c, "out_backprop", dy, out,
        f"DepthwiseConv2dNative of input {Shape(x_shape)} with filter {Shape(f_shape)}",
    )  # fmt: skip
    return win


register_op(
    "DepthwiseConv2dNative",
    inputs=["input: T", "filter: T"],
    outputs=["output: T"],
    attrs=_ATTRS,
    shape=lambda ic: [Shape(_depthwise_window(ic, ic.shape(0), ic.shape(1))[1])],
    doc="Depthwise 2-D convolution: each input channel convolved with its own channel_multiplier "
    "filters (filter [height, width, in_channels, channel_multiplier]); output channel "
    "c * channel_multiplier + m.",
)


@kernel("DepthwiseConv2dNative")
def _depthwise(ctx, x, f):
    xp, fmt = ctx.xp, ctx.attrs["data_format"]
    win, _ = _depthwise_window(ctx, x.shape, f.shape)
    x = cv._to_nhwc(x, fmt)
    kh, kw, c, m = f.shape
    n, (oh, ow) = x.shape[0], win.out
    out = xp.zeros((n, oh, ow, c, m), dtype=x.dtype)
    for t in wn.taps(win, x.shape[1:3]):
        if not t.empty:
            out[(_ALL, *t.out)] += x[(_ALL, *t.inp)][..., None] * f[t.index // kw, t.index % kw]
    return cv._from_nhwc(out.reshape(n, oh, ow, c * m), fmt)


def _backprop_input_shape(ic: InferenceContext) -> list[Shape]:
    sizes = cv._sizes_value(ic, 0, "input_sizes")
    _backprop_window(ic, sizes, ic.shape(1), ic.shape(2))
    return [sizes]


register_op(
    "DepthwiseConv2dNativeBackpropInput",
    inputs=["input_sizes: int32", "filter: T", "out_backprop: T"],
    outputs=["output: T"],
    attrs=_ATTRS,
    shape=_backprop_input_shape,
    doc="The gradient of DepthwiseConv2dNative with respect to its input, whose shape is input_sizes.",
)


@kernel("DepthwiseConv2dNativeBackpropInput", host_inputs=[0])
def _depthwise_backprop_input(ctx, input_sizes, f, dy):
    xp, fmt = ctx.xp, ctx.attrs["data_format"]
    sizes = cv._sizes_input(ctx, input_sizes, "input_sizes")
    win = _backprop_window(ctx, sizes, f.shape, dy.shape)
    kh, kw, c, m = f.shape
    dy = cv._to_nhwc(dy, fmt)
    dy = dy.reshape(*dy.shape[:3], c, m)
    parts = ((dy * f[k // kw, k % kw]).sum(axis=-1) for k in range(kh * kw))
    return cv._from_nhwc(wn.scatter(xp, cv._nhwc_dims(sizes, fmt), win, dy.dtype, parts), fmt)


def _backprop_filter_shape(ic: InferenceContext) -> list[Shape]:
    sizes = cv._sizes_value(ic, 1, "filter_sizes")
    _backprop_window(ic, ic.shape(0), sizes, ic.shape(2))
    return [sizes]


register_op(
    "DepthwiseConv2dNativeBackpropFilter",
    inputs=["input: T", "filter_sizes: int32", "out_backprop: T"],
    outputs=["output: T"],
    attrs=_ATTRS,
    shape=_backprop_filter_shape,
    doc="The gradient of DepthwiseConv2dNative with respect to its filter, whose shape is filter_sizes.",
)


@kernel("DepthwiseConv2dNativeBackpropFilter", host_inputs=[1])
def _depthwise_backprop_filter(ctx, x, filter_sizes, dy):
    xp, fmt = ctx.xp, ctx.attrs["data_format"]
    sizes = cv._sizes_input(ctx, filter_sizes, "filter_sizes")
    win = _backprop_window(ctx, x.shape, sizes, dy.shape)
    kh, kw, c, m = sizes
    dy = cv._to_nhwc(dy, fmt)
    n, oh, ow, _ = dy.shape
    x = cv._to_nhwc(x, fmt)
    dy = dy.reshape(n, oh, ow, c, m)
    # Per offset: sum over the output positions that read a real element of x[..., c] * dy[..., c, m].
    grad = xp.zeros((kh * kw, c, m), dtype=dy.dtype)
    for t in wn.taps(win, x.shape[1:3]):
        if not t.empty:
            grad[t.index] = (x[(_ALL, *t.inp)][..., None] * dy[(_ALL, *t.out)]).reshape(-1, c, m).sum(axis=0)
    return grad.reshape(kh, kw, c, m)


# Bilinear in (input, filter), as Conv2D: each op's gradient is one of the other two.
gu.conv_gradients("DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter")
