"""3-D convolution and pooling: Conv3D, Conv3DBackpropInputV2, Conv3DBackpropFilterV2, AvgPool3D,
AvgPool3DGrad, MaxPool3D, MaxPool3DGrad, MaxPool3DGradGrad, with their gradients.

Names, inputs, attrs and semantics are TensorFlow's (nn_ops.cc). Inputs are
[batch, depth, height, width, channels] (NDHWC) or NCDHW; filters [KD, KH, KW, in, out]. The
window machinery is conv_ops' own, over three spatial dims: TF's output sizes and SAME padding
(conv_ops._out_size), one strided slice of the unpadded input per window offset (window.py), im2col and one
matmul for the convolution, sums or maxima of the slices for the pools, scatter-adds for the gradients (MaxPool3DGrad's to
the first maximum of a window, MaxPool3DGradGrad's from it). MaxPool3D and MaxPool3DGrad follow
TF's graphs, which oneDNN runs (its only CPU types, float32 and bfloat16): a NaN never wins, no
output is below the lowest float, ties' gradient to the first (tf_cpu_pooling, window.max_pool_grad);
eager TF's Eigen kernels differ there (NaN propagates, every element within 1e-5 of the maximum
gets the gradient)."""

from __future__ import annotations

import itertools

from specflow.graph.shapes import Shape, as_shape
from specflow.ops import conv_ops as cv
from specflow.ops import grad_util as gu
from specflow.ops import window as wn
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import gradient, kernel, register_op
from specflow.ops.tf_cpu_pooling import tf_cpu_max_pool

_FORMAT = "data_format: {'NDHWC', 'NCDHW'} = 'NDHWC'"
_PADDING = "padding: {'SAME', 'VALID'}"
_CONV_ATTRS = ["T: {float}", "strides: list(int) >= 5", _PADDING, _FORMAT, "dilations: list(int) = [1, 1, 1, 1, 1]"]
_POOL_ATTRS = ["ksize: list(int) >= 5", "strides: list(int) >= 5", _PADDING, _FORMAT, "T: {float}"]


def _to_last(x, fmt: str):
    return x if fmt == "NDHWC" else x.transpose(0, 2, 3, 4, 1)


def _from_last(x, fmt: str):
    return x if fmt == "NDHWC" else x.transpose(0, 4, 1, 2, 3)


def _last_dims(dims, fmt: str) -> tuple:
    return tuple(dims) if fmt == "NDHWC" else (dims[0], *dims[2:], dims[1])


def _format_dims(fmt: str, dims) -> tuple:
    return tuple(dims) if fmt == "NDHWC" else (dims[0], dims[4], *dims[1:4])


def _rank5(c, shape, what: str) -> tuple:
    s = shape if isinstance(shape, Shape) else Shape(shape)
    if s.rank is None:
        return (None,) * 5
    if s.rank != 5:
        raise c.fail(f"{what} must be 5-D, got shape {s}")
    return s.dims


def _spatial_attr(c, name: str) -> tuple[int, int, int]:
    fmt = c.attrs["data_format"]
    vals = [int(v) for v in c.attrs[name]]
    if len(vals) != 5:
        raise c.fail(f"{name} must have 5 entries, one per dimension of {fmt}, got {vals}")
    n, *spatial, ch = _last_dims(vals, fmt)
    if n != 1 or ch != 1:
        raise c.fail(f"{name} {vals}: only the spatial dimensions of {fmt} may differ from 1")
    if min(vals) < 1:
        raise c.fail(f"{name} must be positive, got {vals}")
    return tuple(spatial)


def _window(c, spatial, ksize, dilations=(1, 1, 1)) -> cv._Window:
    strides = _spatial_attr(c, "strides")
    sizes = [cv._out_size(c, *args, None) for args in zip(spatial, ksize, strides, dilations)]
    return cv._Window(tuple(ksize), strides, tuple(dilations), tuple(o for o, _ in sizes), tuple(p for _, p in sizes))


# --- Conv3D and its gradients -----------------------------------------------------------------


def _conv_window(c, x_shape, f_shape) -> tuple[cv._Window, tuple]:
    fmt = c.attrs["data_format"]
    x, f = _rank5(c, x_shape, "input"), _rank5(c, f_shape, "filter")
    n, *spatial, ch = _last_dims(x, fmt)
    if ch is not None and f[3] is not None and ch != f[3]:
        raise c.fail(
            f"input has {ch} channels (input shape {Shape(x)}, {fmt}) but the filter expects {f[3]} in_channels "
            f"(filter shape {Shape(f)}, [depth, height, width, in_channels, out_channels])"
        )
    win = _window(c, spatial, f[:3], _spatial_attr(c, "dilations"))
    return win, _format_dims(fmt, (n, *win.out, f[4]))


def _backprop_window(c, x_shape, f_shape, dy_shape) -> cv._Window:
    win, out = _conv_window(c, x_shape, f_shape)
    how = f"Conv3D of input {as_shape(x_shape)} with filter {as_shape(f_shape)}"
    cv._check_shape(c, "out_backprop", _rank5(c, dy_shape, "out_backprop"), out, how)
    return win


register_op(
    "Conv3D",
    inputs=["input: T", "filter: T"],
    outputs=["output: T"],
    attrs=_CONV_ATTRS,
    shape=lambda ic: [Shape(_conv_window(ic, ic.shape(0), ic.shape(1))[1])],
    doc="3-D convolution (cross-correlation) of input [batch, depth, height, width, in_channels] "
    "(data_format order) with filter [depth, height, width, in_channels, out_channels].",
)


@kernel("Conv3D")
def _conv3d(ctx, x, f):
    xp, fmt = ctx.xp, ctx.attrs["data_format"]
    win, _ = _conv_window(ctx, x.shape, f.shape)
    cols = wn.im2col(xp, _to_last(x, fmt), win, ctx.state)
    k, o = cols.shape[-1], f.shape[4]
    out = xp.matmul(cols.reshape(-1, k), f.reshape(k, o))
    wn.give(ctx.state, "im2col", cols)
    return _from_last(out.reshape(*cols.shape[:4], o), fmt)


def _backprop_input_shape(ic: InferenceContext) -> list[Shape]:
    sizes = cv._sizes_value(ic, 0, "input_sizes", rank=5)
    _backprop_window(ic, sizes, ic.shape(1), ic.shape(2))
    return [sizes]


register_op(
    "Conv3DBackpropInputV2",
    inputs=["input_sizes: Tshape", "filter: T", "out_backprop: T"],
    outputs=["output: T"],
    attrs=[*_CONV_ATTRS, "Tshape: {int32, int64} = int32"],
    shape=_backprop_input_shape,
    doc="The gradient of Conv3D with respect to its input, whose shape is input_sizes.",
)


@kernel("Conv3DBackpropInputV2", host_inputs=[0])
def _conv3d_backprop_input(ctx, input_sizes, f, dy):
    xp, fmt = ctx.xp, ctx.attrs["data_format"]
    sizes = cv._sizes_input(ctx, input_sizes, "input_sizes", rank=5)
    win = _backprop_window(ctx, sizes, f.shape, dy.shape)
    return _from_last(wn.conv_input_grad(xp, _to_last(dy, fmt), f, _last_dims(sizes, fmt), win, ctx.state), fmt)


def _backprop_filter_shape(ic: InferenceContext) -> list[Shape]:
    sizes = cv._sizes_value(ic, 1, "filter_sizes", rank=5)
    _backprop_window(ic, ic.shape(0), sizes, ic.shape(2))
    return [sizes]


register_op(
    "Conv3DBackpropFilterV2",
    inputs=["input: T", "filter_sizes: int32", "out_backprop: T"],
    outputs=["output: T"],
    attrs=_CONV_ATTRS,
    shape=_backprop_filter_shape,
    doc="The gradient of Conv3D with respect to its filter, whose shape is filter_sizes.",
)


@kernel("Conv3DBackpropFilterV2", host_inputs=[1])
def _conv3d_backprop_filter(ctx, x, filter_sizes, dy):
    xp, fmt = ctx.xp, ctx.attrs["data_format"]
    sizes = cv._sizes_input(ctx, filter_sizes, "filter_sizes", rank=5)
    win = _backprop_window(ctx, x.shape, sizes, dy.shape)
    cols = wn.im2col(xp, _to_last(x, fmt), win, ctx.state)
    k = cols.shape[-1]
    grad = xp.matmul(cols.reshape(-1, k).T, _to_last(dy, fmt).reshape(-1, sizes[4])).reshape(sizes)
    wn.give(ctx.state, "im2col", cols)
    return grad


gu.conv_gradients("Conv3D", "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2", sizes_attrs=("Tshape",))


# --- AvgPool3D and its gradient ---------------------------------------------------------------


def _pool_window(c, x_shape, what: str) -> tuple[cv._Window, tuple]:
    fmt = c.attrs["data_format"]
    n, *spatial, ch = _last_dims(_rank5(c, x_shape, what), fmt)
    win = _window(c, spatial, _spatial_attr(c, "ksize"))
    return win, _format_dims(fmt, (n, *win.out, ch))


register_op(
    "AvgPool3D",
    inputs=["input: T"],
    outputs=["output: T"],
    attrs=_POOL_ATTRS,
    shape=lambda ic: [Shape(_pool_window(ic, ic.shape(0), "input")[1])],
    doc="The mean of each ksize window of a 5-D input; with SAME padding only the real "
    "(unpadded) elements are counted.",
)


@kernel("AvgPool3D")
def _avg_pool3d(ctx, x):
    xp, fmt = ctx.xp, ctx.attrs["data_format"]
    win, _ = _pool_window(ctx, x.shape, "input")
    x = _to_last(x, fmt)
    total = wn.window_sum(xp, x, win)
    total /= wn.window_counts(xp, x.shape[1:4], win, x.dtype)
    return _from_last(total, fmt)


@gradient("AvgPool3D")
def _avg_pool3d_gradient(b, node, dys):
    x = node.data_inputs[0]
    return [gu.emit(b, "AvgPool3DGrad", gu.shape_of(b, x), dys[0], **gu.window_attrs(node))]


def _avg_pool3d_grad_shape(ic: InferenceContext) -> list[Shape]:
    sizes = cv._sizes_value(ic, 0, "orig_input_shape", rank=5)
    _, out = _pool_window(ic, sizes, "orig_input_shape")
    cv._check_shape(ic, "grad", _rank5(ic, ic.shape(1), "grad"), out, f"AvgPool3D of an input of shape {sizes}")
    return [sizes]


register_op(
    "AvgPool3DGrad",
    inputs=["orig_input_shape: int32", "grad: T"],
    outputs=["output: T"],
    attrs=_POOL_ATTRS,
    shape=_avg_pool3d_grad_shape,
    doc="The gradient of AvgPool3D: each window's grad, divided by the window's element count, "
    "spread over the window's real elements.",
)


@kernel("AvgPool3DGrad", host_inputs=[0])
def _avg_pool3d_grad(ctx, orig_input_shape, dy):
    xp, fmt = ctx.xp, ctx.attrs["data_format"]
    sizes = cv._sizes_input(ctx, orig_input_shape, "orig_input_shape", rank=5)
    win, out = _pool_window(ctx, sizes, "orig_input_shape")
    cv._check_shape(ctx, "grad", dy.shape, out, f"AvgPool3D of an input of shape {list(sizes)}")
    shape = _last_dims(sizes, fmt)
    share = _to_last(dy, fmt) / wn.window_counts(xp, shape[1:4], win, dy.dtype)
    return _from_last(wn.scatter(xp, shape, win, dy.dtype, itertools.repeat(share)), fmt)


@gradient("AvgPool3DGrad")
def _avg_pool3d_grad_grad(b, node, dys):
    # Linear in grad; its transpose is AvgPool3D.
    return [None, gu.emit(b, "AvgPool3D", dys[0], **gu.window_attrs(node))]


# --- MaxPool3D and its gradients ---------------------------------------------------------------

_MAX_TYPES = "{float}"  # (every float type; TF registers half, bfloat16 and float32)


def _check_like(c, what: str, got, want, how: str) -> None:
    cv._check_shape(c, what, _rank5(c, got, what), want, how)


def _max_grad_window(c, x_shape, y_shape) -> cv._Window:
    """The window of a MaxPool3D gradient op, its orig_output checked against orig_input."""
    win, out = _pool_window(c, x_shape, "orig_input")
    _check_like(c, "orig_output", y_shape, out, f"MaxPool3D of an input of shape {list(x_shape)}")
    return win


register_op(
    "MaxPool3D",
    inputs=["input: T"],
    outputs=["output: T"],
    attrs=[*_POOL_ATTRS[:-1], f"T: {_MAX_TYPES}"],
    shape=lambda ic: [Shape(_pool_window(ic, ic.shape(0), "input")[1])],
    doc="The maximum of each ksize window of a 5-D input (padding and NaN never win; at least the "
    "lowest float).",
)


@kernel("MaxPool3D")
def _max_pool3d(ctx, x):
    fmt = ctx.attrs["data_format"]
    win, _ = _pool_window(ctx, x.shape, "input")
    xp = ctx.xp
    return _from_last(tf_cpu_max_pool(xp, _to_last(x, fmt), lambda v: wn.max_pool(xp, v, win)), fmt)


@gradient("MaxPool3D")
def _max_pool3d_gradient(b, node, dys):
    x = node.data_inputs[0]
    return [gu.emit(b, "MaxPool3DGrad", x, node.name, dys[0], **gu.window_attrs(node))]


def _max_pool3d_grad_shape(ic: InferenceContext) -> list[Shape]:
    _max_grad_window(ic, ic.shape(0), ic.shape(1))
    _check_like(ic, "grad", ic.shape(2), ic.shape(1), "the shape of orig_output")
    return [ic.shape(0)]


register_op(
    "MaxPool3DGrad",
    inputs=["orig_input: TInput", "orig_output: TInput", "grad: T"],
    outputs=["output: T"],
    attrs=[*_POOL_ATTRS[:-1], f"T: {_MAX_TYPES} = float32", f"TInput: {_MAX_TYPES} = float32"],
    shape=_max_pool3d_grad_shape,
    doc="The gradient of MaxPool3D: each window's grad goes to its first maximum (as TF's graphs "
    "run it, by oneDNN); overlapping windows add up.",
)


def _max_grad_kernel(ctx, x, y, g, like, like_what: str, fn):
    """A MaxPool3D gradient op's kernel: ``fn(xp, x, y, g, win)`` channels-last, g shaped like
    ``like`` (orig_output for MaxPool3DGrad, orig_input for MaxPool3DGradGrad)."""
    fmt = ctx.attrs["data_format"]
    win = _max_grad_window(ctx, x.shape, y.shape)
    cv._check_shape(ctx, "grad", g.shape, like.shape, f"the shape of {like_what}")
    x, y, g = (_to_last(t, fmt) for t in (x, y, g))
    return _from_last(fn(ctx.xp, x, y, g, win), fmt)


@kernel("MaxPool3DGrad")
def _max_pool3d_grad(ctx, x, y, dy):
    dy = dy.astype(ctx.attrs["T"].numpy, copy=False)
    return _max_grad_kernel(ctx, x, y, dy, y, "orig_output", wn.max_pool_grad)


@gradient("MaxPool3DGrad")
def _max_pool3d_grad_grad(b, node, dys):
    # Away from ties the maxima's positions are locally constant: no gradient for x and y.
    x, y, _ = node.data_inputs
    attrs = gu.window_attrs(node, drop=("TInput",))
    return [gu.zeros_like(b, x), gu.zeros_like(b, y), gu.emit(b, "MaxPool3DGradGrad", x, y, dys[0], **attrs)]


def _max_pool3d_grad_grad_shape(ic: InferenceContext) -> list[Shape]:
    _max_grad_window(ic, ic.shape(0), ic.shape(1))
    _check_like(ic, "grad", ic.shape(2), ic.shape(0), "the shape of orig_input")
    return [ic.shape(1)]


register_op(
    "MaxPool3DGradGrad",
    inputs=["orig_input: T", "orig_output: T", "grad: T"],
    outputs=["output: T"],
    attrs=[*_POOL_ATTRS[:-1], "T: {float}"],
    shape=_max_pool3d_grad_grad_shape,
    doc="The gradient of MaxPool3DGrad for its grad input: grad (shaped like orig_input) read at "
    "each window's first maximum (depth, row, column order), shaped like orig_output.",
)


@kernel("MaxPool3DGradGrad")
def _max_pool3d_grad_grad_kernel(ctx, x, y, g):
    return _max_grad_kernel(ctx, x, y, g, x, "orig_input", wn.max_pool_grad_grad)


@gradient("MaxPool3DGradGrad")
def _max_pool3d_grad_grad_grad(b, node, dys):
    x, y, _ = node.data_inputs
    attrs = gu.window_attrs(node)
    return [gu.zeros_like(b, x), gu.zeros_like(b, y), gu.emit(b, "MaxPool3DGrad", x, y, dys[0], **attrs)]
