"""More max pooling: MaxPoolV2 / MaxPoolGradV2 (ksize and strides as input tensors) and
MaxPoolWithArgmax / MaxPoolGradWithArgmax, with their gradients (TF's nn_ops.cc).

Both reuse conv_ops' pooling windows. The V2 ops are MaxPool / MaxPoolGrad with the window read
from the inputs on the host. MaxPoolWithArgmax keeps, per window, the first maximum (row-major,
padding never wins) and its flattened index into the NHWC input: (y * width + x) * channels + c,
plus batch * height * width * channels with ``include_batch_in_index``, as TF's CPU kernel does.
"""

from __future__ import annotations

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops import conv_ops as cv
from specflow.ops import grad_util as gu
from specflow.ops import window as wn
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import gradient, kernel, register_op


class _Window:
    """A kernel or inference context seen with the window attrs conv_ops' pooling code reads
    (ksize and strides from input tensors, NHWC for the argmax ops)."""

    def __init__(self, c, **attrs):
        self._c, self.node, self.xp = c, c.node, getattr(c, "xp", None)
        self.empty = getattr(c, "empty", None)  # a kernel context's reused buffers (ops/buffers.py)
        self.attrs = {"data_format": "NHWC", "explicit_paddings": [], **c.attrs, **attrs}

    def fail(self, message: str):
        return self._c.fail(message)


def _vector(c, value, what: str) -> list[int]:
    v = np.asarray(value)
    if v.ndim != 1 or v.size != 4:
        raise c.fail(f"{what} must be a 1-D tensor of 4 entries, got {v.tolist()}")
    return [int(a) for a in v]


def _v2_window(c, ksize, strides) -> _Window:
    return _Window(c, ksize=_vector(c, ksize, "ksize"), strides=_vector(c, strides, "strides"))


def _partial_pool_shape(ic: InferenceContext, x: Shape) -> Shape:
    """Batch and channels of the pooled output where the window is not known statically."""
    if x.rank is None:
        return Shape.unknown_of_rank(4)
    if x.rank != 4:
        raise ic.fail(f"input must be 4-D, got shape {x}")
    if ic.attrs["data_format"] == "NHWC":
        return Shape([x[0], None, None, x[3]])
    return Shape([x[0], x[1], None, None])


# --- MaxPoolV2 / MaxPoolGradV2 ----------------------------------------------------------------

_V2_ATTRS = ["padding: {'SAME', 'VALID'}", cv._FORMAT]


def _v2_attrs(node) -> dict:
    return {k: node.attrs[k] for k in ("padding", "data_format")}


def _grad_v2_gradient(other: str):
    """MaxPoolGradV2 and MaxPoolGradGradV2 are each other's gradient for grad. As MaxPoolGrad's:
    the maxima's positions are locally constant, so only grad has a gradient."""

    def fn(b, node, dys):
        x, y, _, ksize, strides = node.data_inputs
        dgrad = gu.emit(b, other, x, y, dys[0], ksize, strides, **_v2_attrs(node))
        return [gu.zeros_like(b, x), gu.zeros_like(b, y), dgrad, None, None]

    return fn


def _max_pool_v2_shape(ic: InferenceContext) -> list[Shape]:
    k, s = ic.value(1), ic.value(2)
    if k is None or s is None:
        return [_partial_pool_shape(ic, ic.shape(0))]
    return [Shape(cv._pool_window(_v2_window(ic, k, s), ic.shape(0))[1])]


register_op(
    "MaxPoolV2",
    inputs=["input: T", "ksize: int32", "strides: int32"],
    outputs=["output: T"],
    attrs=["T: {float, int8, int16, int32, int64, uint8, uint16} = float32", *_V2_ATTRS],
    shape=_max_pool_v2_shape,
    doc="MaxPool with ksize and strides given as 1-D input tensors (4 entries each).",
)


@kernel("MaxPoolV2", host_inputs=[1, 2])
def _max_pool_v2(ctx, x, ksize, strides):
    return cv._max_pool(_v2_window(ctx, ctx.host(ksize), ctx.host(strides)), x)


@gradient("MaxPoolV2")
def _max_pool_v2_gradient(b, node, dys):
    x, ksize, strides = node.data_inputs
    return [gu.emit(b, "MaxPoolGradV2", x, node.name, dys[0], ksize, strides, **_v2_attrs(node)), None, None]


def _max_pool_grad_v2_shape(ic: InferenceContext) -> list[Shape]:
    k, s = ic.value(3), ic.value(4)
    if k is not None and s is not None:
        cv._pool_grad_window(_v2_window(ic, k, s), ic.shape(0), orig_output=ic.shape(1), grad=ic.shape(2))
    return [ic.shape(0)]


register_op(
    "MaxPoolGradV2",
    inputs=["orig_input: T", "orig_output: T", "grad: T", "ksize: int32", "strides: int32"],
    outputs=["output: T"],
    attrs=["T: {real} = float32", *_V2_ATTRS],
    shape=_max_pool_grad_v2_shape,
    doc="The gradient of MaxPoolV2 (MaxPoolGrad with ksize and strides as input tensors).",
)


@kernel("MaxPoolGradV2", host_inputs=[3, 4])
def _max_pool_grad_v2(ctx, x, y, dy, ksize, strides):
    return cv._max_pool_grad(_v2_window(ctx, ctx.host(ksize), ctx.host(strides)), x, y, dy)


gradient("MaxPoolGradV2")(_grad_v2_gradient("MaxPoolGradGradV2"))


def _max_pool_grad_grad_v2_shape(ic: InferenceContext) -> list[Shape]:
    k, s = ic.value(3), ic.value(4)
    if k is None or s is None:
        return [ic.shape(1) if ic.shape(1).rank is not None else _partial_pool_shape(ic, ic.shape(0))]
    return cv._max_pool_grad_grad_shape(_V2Inference(ic, k, s))


class _V2Inference(_Window):
    """An inference context for the V2 grad-grad op, seen as MaxPoolGradGrad's (its first three
    inputs, the window from inputs 3 and 4)."""

    def __init__(self, ic, ksize, strides):
        super().__init__(ic, ksize=_vector(ic, ksize, "ksize"), strides=_vector(ic, strides, "strides"))
        self.shape = ic.shape


register_op(
    "MaxPoolGradGradV2",
    inputs=["orig_input: T", "orig_output: T", "grad: T", "ksize: int32", "strides: int32"],
    outputs=["output: T"],
    attrs=["T: {real}", *_V2_ATTRS],
    shape=_max_pool_grad_grad_v2_shape,
    doc="The gradient of MaxPoolGradV2 for its grad input (MaxPoolGradGrad with ksize and strides "
    "as input tensors).",
)


@kernel("MaxPoolGradGradV2", host_inputs=[3, 4])
def _max_pool_grad_grad_v2(ctx, x, y, g, ksize, strides):
    return cv._max_pool_grad_grad_kernel(_v2_window(ctx, ctx.host(ksize), ctx.host(strides)), x, y, g)


gradient("MaxPoolGradGradV2")(_grad_v2_gradient("MaxPoolGradV2"))


# --- MaxPoolWithArgmax / MaxPoolGradWithArgmax ------------------------------------------------

_ARGMAX_ATTRS = [
    "ksize: list(int) >= 4",
    "strides: list(int) >= 4",
    "Targmax: {int32, int64} = int64",
    "padding: {'SAME', 'VALID'}",
    "include_batch_in_index: bool = false",
    "T: {real}",
]


def _grad_argmax_gradient(other: str):
    """MaxPoolGradWithArgmax and MaxPoolGradGradWithArgmax are each other's gradient for grad
    (linear in it, the positions fixed by argmax)."""

    def fn(b, node, dys):
        x, _, argmax = node.data_inputs
        return [gu.zeros_like(b, x), gu.emit(b, other, x, dys[0], argmax, **gu.window_attrs(node)), None]

    return fn


def _argmax_shape(ic: InferenceContext) -> list[Shape]:
    out = Shape(cv._pool_window(_Window(ic), ic.shape(0))[1])
    return [out, out]


register_op(
    "MaxPoolWithArgmax",
    inputs=["input: T"],
    outputs=["output: T", "argmax: Targmax"],
    attrs=_ARGMAX_ATTRS,
    shape=_argmax_shape,
    doc="MaxPool of an NHWC input, and where each maximum is: its flattened index "
    "(y * width + x) * channels + c (+ batch * height * width * channels with include_batch_in_index).",
)


@kernel("MaxPoolWithArgmax")
def _max_pool_with_argmax(ctx, x):
    xp, c = ctx.xp, _Window(ctx)
    win, _ = cv._pool_window(c, x.shape)
    n, h, w, ch = x.shape
    (kh, kw), (sh, sw), (oh, ow), ((top, _), (left, _)) = win.ksize, win.strides, win.out, win.pads
    # Which window offsets lie inside the image depends on the output position only: small
    # [1, OH, OW, 1] masks, and the first such offset per position takes its value unconditionally.
    rows, cols = np.arange(oh) * sh - top, np.arange(ow) * sw - left
    inside = [
        ((0 <= rows + i) & (rows + i < h))[:, None] & ((0 <= cols + j) & (cols + j < w))[None, :]
        for i in range(kh) for j in range(kw)
    ]  # fmt: skip
    seen = np.zeros((oh, ow), dtype=bool)
    xpad = wn.pad(xp, x, win, wn.lowest(x.dtype))
    best, offset = None, xp.zeros((n, oh, ow, ch), dtype=np.int32)
    for k, s in enumerate(wn.offsets(win)):
        first, seen = inside[k] & ~seen, seen | inside[k]
        v = xpad[s]
        if best is None:
            best = v.copy()
            continue
        take = xp.asarray(inside[k][None, :, :, None]) & (
            (v > best) | xp.asarray(first[None, :, :, None])
        )  # strictly larger: the first maximum stays
        best, offset = xp.where(take, v, best), xp.where(take, k, offset)
    # The winning offset -> the flattened NHWC index of the input element it read.
    row = xp.asarray(rows)[None, :, None, None] + offset // kw
    col = xp.asarray(cols)[None, None, :, None] + offset % kw
    index = (row.astype(np.int64) * w + col) * ch + xp.arange(ch)
    if ctx.attrs["include_batch_in_index"]:
        index = index + (xp.arange(n, dtype=np.int64) * (h * w * ch))[:, None, None, None]
    return best, index.astype(ctx.attr("Targmax").numpy)


@gradient("MaxPoolWithArgmax")
def _max_pool_with_argmax_gradient(b, node, dys):
    x = node.data_inputs[0]
    return [gu.emit(b, "MaxPoolGradWithArgmax", x, dys[0], f"{node.name}:1", **gu.window_attrs(node))]


def _argmax_grad_shape(ic: InferenceContext) -> list[Shape]:
    cv._pool_grad_window(_Window(ic), ic.shape(0), grad=ic.shape(1), argmax=ic.shape(2))
    return [ic.shape(0)]


register_op(
    "MaxPoolGradWithArgmax",
    inputs=["input: T", "grad: T", "argmax: Targmax"],
    outputs=["output: T"],
    attrs=_ARGMAX_ATTRS,
    shape=_argmax_grad_shape,
    doc="The gradient of MaxPoolWithArgmax: each grad element added at the input position its "
    "argmax names.",
)


def _flat_argmax(ctx, x, argmax):
    """argmax as indices into x.ravel() (the batch offset added where argmax leaves it out)."""
    xp, n = ctx.xp, x.shape[0]
    flat = argmax.astype(np.int64).reshape(n, -1)
    if not ctx.attrs["include_batch_in_index"]:
        flat = flat + (xp.arange(n, dtype=np.int64) * (x.size // max(n, 1)))[:, None]
    flat = flat.ravel()
    if flat.size and (int(flat.min()) < 0 or int(flat.max()) >= x.size):
        raise ctx.fail(f"argmax holds an index outside the input (of {x.size} elements, shape {list(x.shape)})")
    return flat


@kernel("MaxPoolGradWithArgmax")
def _max_pool_grad_with_argmax(ctx, x, dy, argmax):
    cv._pool_grad_window(_Window(ctx), x.shape, grad=dy.shape, argmax=argmax.shape)
    flat = _flat_argmax(ctx, x, argmax)
    out = ctx.xp.bincount(flat, weights=dy.ravel().astype(np.float64), minlength=x.size)
    return out.astype(x.dtype).reshape(x.shape)


gradient("MaxPoolGradWithArgmax")(_grad_argmax_gradient("MaxPoolGradGradWithArgmax"))


def _argmax_grad_grad_checks(c, x, grad, argmax) -> tuple:
    """MaxPoolGradGradWithArgmax's output dims (MaxPool's of x); grad must match x, argmax them."""
    _, out = cv._pool_window(_Window(c), x)
    cv._check_shape(c, "grad", grad, x, "the shape of input")
    cv._check_shape(c, "argmax", argmax, out, "MaxPool of input")
    return out


def _argmax_grad_grad_shape(ic: InferenceContext) -> list[Shape]:
    out = _argmax_grad_grad_checks(ic, ic.shape(0), ic.shape(1), ic.shape(2))
    return [Shape(out).merge_with(ic.shape(2))]


register_op(
    "MaxPoolGradGradWithArgmax",
    inputs=["input: T", "grad: T", "argmax: Targmax"],
    outputs=["output: T"],
    attrs=_ARGMAX_ATTRS,
    shape=_argmax_grad_grad_shape,
    doc="The gradient of MaxPoolGradWithArgmax for its grad input: grad (shaped like input) read "
    "where argmax points, shaped like the pooled output.",
)


@kernel("MaxPoolGradGradWithArgmax")
def _max_pool_grad_grad_with_argmax(ctx, x, g, argmax):
    _argmax_grad_grad_checks(ctx, x.shape, g.shape, argmax.shape)
    return g.ravel()[_flat_argmax(ctx, x, argmax)].reshape(argmax.shape)


gradient("MaxPoolGradGradWithArgmax")(_grad_argmax_gradient("MaxPoolGradWithArgmax"))
