"""Convolution and pooling: Conv2D, MaxPool, AvgPool, their gradient kernels and gradients.

Names, inputs, attrs and semantics are TensorFlow's (nn_ops.cc). Kernels compute in NHWC;
NCHW tensors are transposed in and out. Every window op is one loop over the kh * kw window
offsets (window.py): at each offset, one strided slice of the unpadded input holds the element
that the output positions in one rectangle see there. Conv2D copies those slices into one
buffer (im2col) and does one matmul; pools reduce them in place with maximum / add; gradients
add back into the same slices (the input gradient as one matmul per offset). Only xp functions
with identical numpy and cupy semantics are used, so the code runs on both.

Padding is TF's: SAME gives ceil(size / stride) outputs and puts the odd extra row or column
of padding at the bottom/right; VALID pads nothing; EXPLICIT takes ``explicit_paddings``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from specflow.errors import GraphError
from specflow.graph.shapes import Shape, as_shape
from specflow.ops import grad_util as gu
from specflow.ops import window as wn
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import get_op, gradient, kernel, register_op
from specflow.ops.tf_cpu_pooling import tf_cpu_avg_pool_grad, tf_cpu_max_pool
from specflow.ops.window import _Window
from specflow.ops.window_gather import gather_source, give_source, window_index

_LAYOUT = {"NHWC": (1, 2, 3), "NCHW": (2, 3, 1)}  # axes of H, W and C in a 4-D tensor
_FORMAT = "data_format: {'NHWC', 'NCHW'} = 'NHWC'"
_PADDING = "padding: {'SAME', 'VALID', 'EXPLICIT'}"
_EXPLICIT = "explicit_paddings: list(int) = []"
_CONV_ATTRS = [
    "strides: list(int)",
    "use_cudnn_on_gpu: bool = true",
    _PADDING,
    _EXPLICIT,
    _FORMAT,
    "dilations: list(int) = [1, 1, 1, 1]",
]
_WINDOW = ["ksize: list(int) >= 4", "strides: list(int) >= 4"]
_AVG_POOL_ATTRS = [*_WINDOW, "padding: {'SAME', 'VALID'}", _FORMAT]
_MAX_POOL_ATTRS = [*_WINDOW, _PADDING, _EXPLICIT, _FORMAT]

Dims = Sequence[int | None]


# --- layouts ----------------------------------------------------------------------------------


def _to_nhwc(x, fmt: str):
    return x if fmt == "NHWC" else x.transpose(0, 2, 3, 1)


def _from_nhwc(x, fmt: str):
    return x if fmt == "NHWC" else x.transpose(0, 3, 1, 2)


def _nhwc_dims(dims: Dims, fmt: str) -> tuple:
    h, w, c = _LAYOUT[fmt]
    return dims[0], dims[h], dims[w], dims[c]


def _format_dims(fmt: str, n, h, w, c) -> tuple:
    return (n, h, w, c) if fmt == "NHWC" else (n, c, h, w)


def _rank4(c, shape, what: str) -> tuple:
    """The dims of a 4-D (possibly partial) shape; all None when the rank is unknown."""
    s = shape if isinstance(shape, Shape) else Shape(shape)
    if s.rank is None:
        return (None,) * 4
    if s.rank != 4:
        raise c.fail(f"{what} must be 4-D, got shape {s}")
    return s.dims


def _sizes_input(ctx, sizes, what: str, rank: int = 4) -> tuple[int, ...]:
    """A 1-D int shape input (input_sizes, filter_sizes, orig_input_shape) of ``rank`` sizes,
    read on the host."""
    host = ctx.host(sizes)
    dims = tuple(int(v) for v in host.ravel())
    if host.ndim != 1 or len(dims) != rank or min(dims) < 0:
        raise ctx.fail(f"{what} must hold {rank} non-negative sizes, got {list(dims)}")
    return dims


def _sizes_value(ic: InferenceContext, i: int, what: str, rank: int = 4) -> Shape:
    """The shape a sizes input holds, as far as it is known at graph time."""
    s = ic.shape_from_value(i)
    if s.rank is None:
        return Shape.unknown_of_rank(rank)
    if s.rank != rank:
        raise ic.fail(f"{what} must hold {rank} sizes, got {s}")
    return s


# --- window geometry --------------------------------------------------------------------------


def _spatial_attr(c, name: str) -> tuple[int, int]:
    """The (rows, cols) entries of a per-dimension attr (strides, ksize, dilations)."""
    fmt = c.attrs["data_format"]
    vals = [int(v) for v in c.attrs[name]]
    if len(vals) != 4:
        raise c.fail(f"{name} must have 4 entries, one per dimension of {fmt}, got {vals}")
    h, w, ch = _LAYOUT[fmt]
    if vals[0] != 1 or vals[ch] != 1:
        raise c.fail(f"{name} {vals}: only the spatial dimensions of {fmt} may differ from 1")
    if min(vals) < 1:
        raise c.fail(f"{name} must be positive, got {vals}")
    return vals[h], vals[w]


def _explicit_pads(c) -> tuple[tuple[int, int], tuple[int, int]] | None:
    pads = [int(p) for p in c.attrs.get("explicit_paddings") or []]
    if c.attrs["padding"] != "EXPLICIT":
        if pads:
            raise c.fail(f"explicit_paddings must be empty unless padding is 'EXPLICIT', got {pads}")
        return None
    fmt = c.attrs["data_format"]
    h, w, ch = _LAYOUT[fmt]
    if len(pads) != 8 or min(pads) < 0:
        raise c.fail(
            f"explicit_paddings must be 8 non-negative sizes (before, after per dimension of {fmt}), got {pads}"
        )
    if pads[0] or pads[1] or pads[2 * ch] or pads[2 * ch + 1]:
        raise c.fail(f"explicit_paddings {pads} may pad only the spatial dimensions of {fmt}")
    return (pads[2 * h], pads[2 * h + 1]), (pads[2 * w], pads[2 * w + 1])


def _out_size(c, size, k, stride, dilation, explicit) -> tuple[int | None, tuple[int, int]]:
    """Output size and (before, after) padding of one spatial dim, exactly as TF computes them."""
    if size is None or k is None:
        return None, (0, 0)
    if k < 1:
        raise c.fail(f"window sizes must be positive, got {k}")
    span = (k - 1) * dilation + 1
    if c.attrs["padding"] == "SAME":
        out = -(-size // stride)
        total = max((out - 1) * stride + span - size, 0)
        return out, (total // 2, total - total // 2)  # the odd one goes after (bottom/right)
    before, after = explicit or (0, 0)
    # TF's formula, in C++ integer division (truncating toward zero): a window up to
    # stride - 1 wider than the padded input gives an empty (0-sized) output, not an error.
    num = size + before + after - span + stride
    out = abs(num) // stride * (1 if num >= 0 else -1)
    if out < 0:
        raise c.fail(
            f"the window ({span} wide after dilation) is larger than the padded input "
            f"({size} + {before} + {after}) by {stride} or more; the output size would be negative"
        )
    return out, (before, after)


def _window(c, in_hw: Dims, ksize: Dims, dilations=(1, 1)) -> _Window:
    strides = _spatial_attr(c, "strides")
    explicit = _explicit_pads(c)
    rows, cols = (
        _out_size(c, in_hw[d], ksize[d], strides[d], dilations[d], explicit and explicit[d]) for d in (0, 1)
    )
    return _Window(tuple(ksize), strides, tuple(dilations), (rows[0], cols[0]), (rows[1], cols[1]))


def kernel_window(ctx, shapes: tuple, make) -> _Window:
    """A kernel's window, checked and built by ``make()`` once per input shapes (the attrs are
    the node's, fixed): every step of a training run asks again with the same shapes."""
    state = getattr(ctx, "state", None)  # None: a V2 pool's proxy, whose ksize is an input
    if state is None:
        return make()
    key = ("window", tuple(tuple(s) if not isinstance(s, tuple) else s for s in shapes))
    win = state.get(key)
    if win is None:
        win = state[key] = make()
    return win


def _check_shape(c, what: str, got: Dims, want: Dims, how: str) -> None:
    if not as_shape(got).is_compatible_with(as_shape(want)):
        raise c.fail(f"{what} has shape {as_shape(got)}, but {how} gives {as_shape(want)}")


# --- Conv2D and its gradients -----------------------------------------------------------------


def _conv_window(c, x_shape, f_shape, layout="out_channels") -> tuple[_Window, tuple]:
    """Check input against filter; the window and the output dims (in data_format order).
    ``layout`` names the filter's last dim in messages."""
    fmt = c.attrs["data_format"]
    x = _rank4(c, x_shape, "input")
    f = _rank4(c, f_shape, "filter")
    n, h, w, ch = _nhwc_dims(x, fmt)
    if layout == "out_channels" and f[2] == 0:  # TF's kernel refuses it too (it would divide by 0 groups)
        raise c.fail(f"the filter's in_channels must be positive, got filter shape {Shape(f)}")
    grouped = layout == "out_channels" and None not in (ch, f[2], f[3]) and f[2] > 0 and ch % f[2] == 0 and f[3] % (ch // f[2]) == 0
    if ch is not None and f[2] is not None and ch != f[2] and not grouped:
        raise c.fail(
            f"input has {ch} channels (input shape {Shape(x)}, {fmt}) but the filter expects "
            f"{f[2]} in_channels (filter shape {Shape(f)}, [height, width, in_channels, {layout}])"
            + (" (a grouped convolution needs in_channels dividing the input's channels and the groups "
               "dividing out_channels)" if layout == "out_channels" else "")
        )
    win = _window(c, (h, w), f[:2], _spatial_attr(c, "dilations"))
    return win, _format_dims(fmt, n, *win.out, f[3])


def _conv_backprop_window(c, x_shape, f_shape, dy_shape) -> _Window:
    """The window of Conv2D(input, filter), checking out_backprop has that Conv2D's output shape."""
    win, out = _conv_window(c, x_shape, f_shape)
    dy = _rank4(c, dy_shape, "out_backprop")
    _check_shape(
        c, "out_backprop", dy, out, f"Conv2D of input {as_shape(x_shape)} with filter {as_shape(f_shape)}"
    )
    return win


register_op(
    "Conv2D",
    inputs=["input: T", "filter: T"],
    outputs=["output: T"],
    attrs=["T: {float, int32}", *_CONV_ATTRS],
    shape=lambda ic: [Shape(_conv_window(ic, ic.shape(0), ic.shape(1))[1])],
    doc="2-D convolution (cross-correlation) of input [batch, height, width, in_channels] "
    "(data_format order) with filter [height, width, in_channels, out_channels].",
)


# The optimize stage pairs a Conv2D with the Conv2DBackpropFilter of the same input and window
# (runtime/optimize.py _share_im2col): the forward kernel leaves its im2col in the step's extras
# under this key, and the filter gradient takes it instead of building it again.
SHARE_ATTR, FROM_ATTR = "_im2col_keep", "_im2col_from"
SHARE_MAX_BYTES = 256 << 20  # larger ones are rebuilt rather than held from forward to backward


def _dense_filter(xp, f, channels: int):
    """A grouped convolution's filter [kh, kw, C / g, O] as the dense [kh, kw, C, O] filter that is
    zero outside each group's block (TF's Conv2D with groups = C / in_channels); ``f`` itself when
    it is not grouped. The zeros add exact zeros to each output's sum."""
    kh, kw, cg, o = f.shape
    if cg == channels:
        return f
    groups = channels // cg
    og = o // groups
    full = xp.zeros((kh, kw, channels, o), f.dtype)
    for i in range(groups):
        full[:, :, i * cg:(i + 1) * cg, i * og:(i + 1) * og] = f[:, :, :, i * og:(i + 1) * og]
    return full


def _group_blocks(xp, grad, cg: int):
    """The inverse of _dense_filter for a gradient: each group's block of a dense [kh, kw, C, O]
    filter gradient, as the grouped [kh, kw, C / g, O]."""
    channels, o = grad.shape[2], grad.shape[3]
    if cg == channels:
        return grad
    groups = channels // cg
    og = o // groups
    return xp.concatenate([grad[:, :, i * cg:(i + 1) * cg, i * og:(i + 1) * og] for i in range(groups)], axis=3)


def conv2d_matrix(ctx, x, f):
    """Conv2D's output as a fresh [N * OH * OW, O] matrix (NHWC rows) and its NHWC shape: one
    im2col and one matmul. Shared by Conv2D and _FusedConv2D (fused_ops.py), which applies its
    bias and activation to the matrix in place before it takes its final shape."""
    plan = ctx.state.get("gather_plan")
    if plan is not None and plan[0] == x.shape and plan[1] == f.shape:
        return _gathered_product(ctx, x, f, plan)
    xp, fmt = ctx.xp, ctx.attrs["data_format"]
    win = kernel_window(ctx, (x.shape, f.shape), lambda: _conv_window(ctx, x.shape, f.shape)[0])
    f = _dense_filter(xp, f, x.shape[3 if fmt == "NHWC" else 1])
    if x.shape[0] == 0:  # an empty batch (a zero-row prediction): an empty result, no im2col
        return ctx.empty((0, f.shape[3]), x.dtype), (0, *win.out, f.shape[3])
    cols = wn.im2col(xp, _to_nhwc(x, fmt), win, ctx.state)
    n, oh, ow, k = cols.shape
    out = ctx.empty((n * oh * ow, f.shape[3]), cols.dtype)
    xp.matmul(cols.reshape(n * oh * ow, k), f.reshape(k, f.shape[3]), out=out)
    if ctx.node.attrs.get(SHARE_ATTR) and cols.nbytes <= SHARE_MAX_BYTES:
        # The filter gradient gives the buffer back to this kernel's state when done with it.
        ctx.extras[("im2col", ctx.node.name)] = (x, cols, ctx.state)
    else:
        wn.give(ctx.state, "im2col", cols)
        if xp is np and fmt == "NHWC" and wn.gathers(x, win) and 0 not in cols.shape:
            # The next call with these shapes goes straight to the gather (the checks done).
            idx, padded = window_index(win, tuple(x.shape[1:3]))
            ctx.state["gather_plan"] = (x.shape, f.shape, idx, padded, x.shape[1] * x.shape[2], cols.shape,
                                        (n, oh, ow, f.shape[3]))  # fmt: skip
    return out, (n, oh, ow, f.shape[3])


def _gathered_product(ctx, x, f, plan):
    """conv2d_matrix by a gather im2col (window_gather.im2col_gather's), for input and filter
    shapes it checked before: no window, layout or path decisions again (a batch of one at
    inference spends more on those than on its arithmetic)."""
    _, _, idx, padded, rows, cols_shape, shape = plan
    state = ctx.state
    n, c = x.shape[0], x.shape[3]
    src = gather_source(np, x, rows, padded, state)
    cols = wn.take_cols(np, state, cols_shape, x.dtype)
    src.take(idx, axis=1, out=cols.reshape(n, -1, c), mode="wrap")
    give_source(state, src, padded)
    m, k = n * cols_shape[1] * cols_shape[2], cols_shape[3]
    out = ctx.empty((m, shape[3]), x.dtype)
    np.matmul(cols.reshape(m, k), f.reshape(k, shape[3]), out=out)
    wn.give(state, "im2col", cols)
    return out, shape


@kernel("Conv2D")
def _conv2d(ctx, x, f):
    out, shape = conv2d_matrix(ctx, x, f)
    return _from_nhwc(out.reshape(shape), ctx.attrs["data_format"])


def _backprop_input_shape(ic: InferenceContext) -> list[Shape]:
    sizes = _sizes_value(ic, 0, "input_sizes")
    _conv_backprop_window(ic, sizes, ic.shape(1), ic.shape(2))
    return [sizes]


register_op(
    "Conv2DBackpropInput",
    inputs=["input_sizes: int32", "filter: T", "out_backprop: T"],
    outputs=["output: T"],
    attrs=["T: {float, int32}", *_CONV_ATTRS],
    shape=_backprop_input_shape,
    doc="The gradient of Conv2D with respect to its input, whose shape is input_sizes.",
)


@kernel("Conv2DBackpropInput", host_inputs=[0])
def _conv2d_backprop_input(ctx, input_sizes, f, dy):
    xp, fmt = ctx.xp, ctx.attrs["data_format"]
    sizes = _sizes_input(ctx, input_sizes, "input_sizes")
    win = kernel_window(ctx, (sizes, f.shape, dy.shape), lambda: _conv_backprop_window(ctx, sizes, f.shape, dy.shape))
    if dy.size == 0 or f.size == 0:  # no products to sum (an empty batch, no out_channels): zeros
        return xp.zeros(tuple(sizes), dy.dtype)
    f = _dense_filter(xp, f, sizes[3 if fmt == "NHWC" else 1])
    return _from_nhwc(wn.conv_input_grad(xp, _to_nhwc(dy, fmt), f, _nhwc_dims(sizes, fmt), win, ctx.state,
                                         ctx.empty), fmt)  # fmt: skip


def _backprop_filter_shape(ic: InferenceContext) -> list[Shape]:
    sizes = _sizes_value(ic, 1, "filter_sizes")
    _conv_backprop_window(ic, ic.shape(0), sizes, ic.shape(2))
    return [sizes]


register_op(
    "Conv2DBackpropFilter",
    inputs=["input: T", "filter_sizes: int32", "out_backprop: T"],
    outputs=["output: T"],
    attrs=["T: {float}", *_CONV_ATTRS],
    shape=_backprop_filter_shape,
    doc="The gradient of Conv2D with respect to its filter, whose shape is filter_sizes.",
)


@kernel("Conv2DBackpropFilter", host_inputs=[1])
def _conv2d_backprop_filter(ctx, x, filter_sizes, dy):
    xp, fmt = ctx.xp, ctx.attrs["data_format"]
    sizes = _sizes_input(ctx, filter_sizes, "filter_sizes")
    win = kernel_window(ctx, (x.shape, sizes, dy.shape), lambda: _conv_backprop_window(ctx, x.shape, sizes, dy.shape))
    source = ctx.node.attrs.get(FROM_ATTR)
    shared = ctx.extras.pop(("im2col", source), None) if source else None
    if dy.size == 0 or x.size == 0:  # no products to sum (an empty batch or input): zeros
        if shared is not None:
            wn.give(shared[2], "im2col", shared[1])
        return xp.zeros(tuple(sizes), dy.dtype)
    # The same array the forward kernel read (another iteration's or step's x is not).
    if shared is not None and shared[0] is x:
        cols, owner = shared[1], shared[2]
    else:
        cols, owner = wn.im2col(xp, _to_nhwc(x, fmt), win, ctx.state), ctx.state
    n, oh, ow, k = cols.shape
    dy = _to_nhwc(dy, fmt).reshape(n * oh * ow, sizes[3])
    dense = (sizes[0], sizes[1], k // (sizes[0] * sizes[1]), sizes[3])  # [kh, kw, C, O]
    grad = wn.tall_product(xp, cols.reshape(n * oh * ow, k), dy).reshape(dense)
    wn.give(owner, "im2col", cols)
    return _group_blocks(xp, grad, sizes[2])


# Conv2D is bilinear in (input, filter): each of the three ops' gradients is one of the
# other two (TF's nn_grad.py), with the same window attrs.


# All three are bilinear in (input, filter): each one's gradient is made of the other two.
gu.conv_gradients("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter")


# --- MaxPool / AvgPool and their gradients ----------------------------------------------------


def _pool_window(c, x_shape) -> tuple[_Window, tuple]:
    """The pooling window over input ``x_shape`` and the output dims (data_format order)."""
    fmt = c.attrs["data_format"]
    what = get_op(c.node.op).inputs[0].name  # input, value, orig_input or orig_input_shape
    n, h, w, ch = _nhwc_dims(_rank4(c, x_shape, what), fmt)
    win = _window(c, (h, w), _spatial_attr(c, "ksize"))
    return win, _format_dims(fmt, n, *win.out, ch)


def _pool_grad_window(c, x_shape, **grads) -> _Window:
    """The pooling window, checking each named tensor has the pooled output's shape."""
    win, out = _pool_window(c, x_shape)
    for what, shape in grads.items():
        _check_shape(
            c,
            what,
            _rank4(c, shape, what),
            out,
            f"{c.node.op.split('Grad')[0]} of an input of shape {as_shape(x_shape)}",
        )
    return win


def _pool_shape(ic: InferenceContext) -> list[Shape]:
    return [Shape(_pool_window(ic, ic.shape(0))[1])]


register_op(
    "MaxPool",
    inputs=["input: T"],
    outputs=["output: T"],
    attrs=["T: {float, int8, int16, int32, int64, uint8, uint16} = float32", *_MAX_POOL_ATTRS],
    shape=_pool_shape,
    doc="The maximum of each ksize window of input; padding never wins.",
)


@kernel("MaxPool")
def _max_pool(ctx, x):
    xp, fmt = ctx.xp, ctx.attrs["data_format"]
    win = kernel_window(ctx, (x.shape,), lambda: _pool_window(ctx, x.shape)[0])
    return _from_nhwc(tf_cpu_max_pool(xp, _to_nhwc(x, fmt), lambda v: wn.max_pool(xp, v, win, ctx.empty)), fmt)


@gradient("MaxPool")
def _max_pool_gradient(b, node, dys):
    return [gu.emit(b, "MaxPoolGrad", node.data_inputs[0], node.name, dys[0], **gu.window_attrs(node))]


register_op(
    "AvgPool",
    inputs=["value: T"],
    outputs=["output: T"],
    attrs=["T: {float}", *_AVG_POOL_ATTRS],
    shape=_pool_shape,
    doc="The mean of each ksize window of value; with SAME padding only the real (unpadded) "
    "elements are counted.",
)


@kernel("AvgPool")
def _avg_pool(ctx, x):
    xp, fmt = ctx.xp, ctx.attrs["data_format"]
    win, _ = _pool_window(ctx, x.shape)
    x = _to_nhwc(x, fmt)
    total = wn.window_sum(xp, x, win)
    total /= wn.window_counts(xp, x.shape[1:3], win, x.dtype)
    return _from_nhwc(total, fmt)


@gradient("AvgPool")
def _avg_pool_gradient(b, node, dys):
    x = node.data_inputs[0]
    return [gu.emit(b, "AvgPoolGrad", gu.shape_of(b, x), dys[0], **gu.window_attrs(node))]


def _max_pool_grad_shape(ic: InferenceContext) -> list[Shape]:
    _pool_grad_window(ic, ic.shape(0), orig_output=ic.shape(1), grad=ic.shape(2))
    return [ic.shape(0)]


register_op(
    "MaxPoolGrad",
    inputs=["orig_input: T", "orig_output: T", "grad: T"],
    outputs=["output: T"],
    attrs=["T: {real} = float32", *_MAX_POOL_ATTRS],
    shape=_max_pool_grad_shape,
    doc="The gradient of MaxPool: each window's grad goes to its maximum (the first one, "
    "row-major, on ties); overlapping windows add up.",
)


@kernel("MaxPoolGrad")
def _max_pool_grad(ctx, x, y, dy):
    xp, fmt = ctx.xp, ctx.attrs["data_format"]
    win = kernel_window(ctx, (x.shape, y.shape, dy.shape),
                        lambda: _pool_grad_window(ctx, x.shape, orig_output=y.shape, grad=dy.shape))
    x, y, dy = (_to_nhwc(t, fmt) for t in (x, y, dy))
    return _from_nhwc(wn.max_pool_grad(xp, x, y, dy, win, ctx.empty, getattr(ctx, "state", None)), fmt)


@gradient("MaxPoolGrad")
def _max_pool_grad_grad(b, node, dys):
    # Away from ties the maxima's positions are locally constant: no gradient for x and y.
    x, y, _ = node.data_inputs
    attrs = gu.window_attrs(node)
    if attrs.pop("explicit_paddings"):
        raise GraphError(
            "no second derivative of MaxPool with EXPLICIT padding: MaxPoolGradGrad takes only "
            "SAME or VALID padding (as in TensorFlow)",
            node=node.name,
            location=node.location,
        )
    return [gu.zeros_like(b, x), gu.zeros_like(b, y), gu.emit(b, "MaxPoolGradGrad", x, y, dys[0], **attrs)]


def _max_pool_grad_grad_shape(ic: InferenceContext) -> list[Shape]:
    _pool_grad_window(ic, ic.shape(0), orig_output=ic.shape(1))
    _check_shape(ic, "grad", _rank4(ic, ic.shape(2), "grad"), ic.shape(0), "the shape of orig_input")
    return [Shape(_pool_window(ic, ic.shape(0))[1]).merge_with(ic.shape(1))]


register_op(
    "MaxPoolGradGrad",
    inputs=["orig_input: T", "orig_output: T", "grad: T"],
    outputs=["output: T"],
    attrs=[
        "ksize: list(int) >= 4",
        "strides: list(int) >= 4",
        "padding: {'SAME', 'VALID'}",
        _FORMAT,
        "T: {real}",
    ],
    shape=_max_pool_grad_grad_shape,
    doc="The gradient of MaxPoolGrad for its grad input: grad (shaped like orig_input) read at "
    "each window's maximum (the first one, row-major, on ties), shaped like orig_output.",
)


@kernel("MaxPoolGradGrad")
def _max_pool_grad_grad_kernel(ctx, x, y, g):
    xp, fmt = ctx.xp, ctx.attrs["data_format"]
    win = _pool_grad_window(ctx, x.shape, orig_output=y.shape)
    _check_shape(ctx, "grad", g.shape, x.shape, "the shape of orig_input")
    x, y, g = (_to_nhwc(t, fmt) for t in (x, y, g))
    return _from_nhwc(wn.max_pool_grad_grad(xp, x, y, g, win), fmt)


@gradient("MaxPoolGradGrad")
def _max_pool_grad_grad_grad(b, node, dys):
    x, y, _ = node.data_inputs
    return [
        gu.zeros_like(b, x),
        gu.zeros_like(b, y),
        gu.emit(b, "MaxPoolGrad", x, y, dys[0], **gu.window_attrs(node)),
    ]


def _avg_pool_grad_shape(ic: InferenceContext) -> list[Shape]:
    sizes = _sizes_value(ic, 0, "orig_input_shape")
    _pool_grad_window(ic, sizes, grad=ic.shape(1))
    return [sizes]


register_op(
    "AvgPoolGrad",
    inputs=["orig_input_shape: int32", "grad: T"],
    outputs=["output: T"],
    attrs=["T: {float}", *_AVG_POOL_ATTRS],
    shape=_avg_pool_grad_shape,
    doc="The gradient of AvgPool: each window's grad, divided by the window's element count, "
    "spread over the window's real elements.",
)


@kernel("AvgPoolGrad", host_inputs=[0])
def _avg_pool_grad(ctx, orig_input_shape, dy):
    xp, fmt = ctx.xp, ctx.attrs["data_format"]
    sizes = _sizes_input(ctx, orig_input_shape, "orig_input_shape")
    win = _pool_grad_window(ctx, sizes, grad=dy.shape)
    n, h, w, c = _nhwc_dims(sizes, fmt)
    if any(k > d and p[0] > 0 for k, d, p in zip(win.ksize, (h, w), win.pads)):
        return _from_nhwc(tf_cpu_avg_pool_grad(xp, _to_nhwc(dy, fmt), (h, w), win), fmt)
    share = _to_nhwc(dy, fmt) / wn.window_counts(xp, (h, w), win, dy.dtype)
    return _from_nhwc(wn.scatter(xp, (n, h, w, c), win, dy.dtype, itertools.repeat(share)), fmt)


@gradient("AvgPoolGrad")
def _avg_pool_grad_grad(b, node, dys):
    # AvgPoolGrad is linear in grad; its transpose is AvgPool.
    return [None, gu.emit(b, "AvgPool", dys[0], **gu.window_attrs(node))]
