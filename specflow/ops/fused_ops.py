"""Fused ops the graph optimizer's remapper creates (``specflow/runtime/optimize.py``,
``optimize_fuse.py``), with TensorFlow's names and attrs: ``_FusedMatMul`` and ``_FusedConv2D``
are MatMul and Conv2D followed by ``fused_ops``.

They exist only in optimized step graphs, after gradients are built, so they need no gradient.
The kernels save the intermediate arrays and executor nodes of the unfused chain: the bias and
the activation are applied in place to the product, which no one else has seen yet.
"""

from __future__ import annotations

import math

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops import window as wn
from specflow.ops.conv_ops import (
    _CONV_ATTRS,
    _conv_window,
    _from_nhwc,
    _rank4,
    _window,
    conv2d_matrix,
)
from specflow.ops.inference import InferenceContext
from specflow.ops.math_ops import _fmt
from specflow.ops.matmul_ops import _matmul, _matmul_shape
from specflow.ops.registry import kernel, not_differentiable, register_op
from specflow.ops.tf_cpu_pooling import tf_cpu_max_pool
from specflow.ops.wide_rows import channel_op, relu
from specflow.ops.window_gather import gather_source, give_source, window_index

# fused_ops lists this kernel runs (TF's remapper makes more; only these are created here).
_SUPPORTED = (("BiasAdd",), ("BiasAdd", "Relu"))
_SUPPORTED_LISTS = tuple(list(f) for f in _SUPPORTED)  # attrs hold lists: compared as they are


def _check_fused_ops(fused_ops, num_args: int, fail) -> None:
    if tuple(fused_ops) not in _SUPPORTED:
        raise fail(f"unsupported fused_ops {list(fused_ops)}; supported: {[list(f) for f in _SUPPORTED]}")
    if num_args != 1:
        raise fail(f"fused_ops {list(fused_ops)} take one extra argument (the bias), got num_args={num_args}")


def _check_bias_shape(ic: InferenceContext, channels, against) -> Shape:
    """Input 2 (the bias) is a vector of ``channels`` entries where both are known; ``against()``
    names what it must match."""
    bias = ic.shape(2)
    if bias.rank is not None and bias.rank != 1:
        raise ic.fail(f"the bias must be a vector, got shape {bias}")
    if bias.rank == 1 and channels is not None and bias[0] is not None and bias[0] != channels:
        raise ic.fail(f"bias of shape {bias} does not match {against()}")
    return bias


def _fused_bias(ctx, args):
    """The bias of a fused op whose fused_ops are BiasAdd [+ Relu] (any other list fails)."""
    fused_ops = ctx.attrs["fused_ops"]
    if len(args) != 1 or fused_ops not in _SUPPORTED_LISTS:
        _check_fused_ops(fused_ops, len(args), ctx.fail)
    return args[0]


def _bias_then_relu(ctx, out, bias, channels: int, against) -> None:
    """fused_ops on the fresh ``out`` ([rows, channels]) in place: BiasAdd, then Relu if listed;
    ``against()`` names what a bias of the wrong size fails to match."""
    if bias.ndim != 1 or bias.shape[0] != channels:
        raise ctx.fail(f"bias of shape {_fmt(bias.shape)} does not match {against()}")
    add_rows(ctx.xp, out, bias)
    if len(ctx.attrs["fused_ops"]) == 2:  # Relu
        relu(ctx.xp, out, out)


def _fused_matmul_shape(ic: InferenceContext) -> list[Shape]:
    _check_fused_ops(ic.attr("fused_ops"), ic.attr("num_args"), ic.fail)
    (out,) = _matmul_shape(ic)
    bias = _check_bias_shape(ic, out[1], lambda: f"the product's columns {out}")
    return [Shape([out[0], out[1] if out[1] is not None else (bias[0] if bias.rank == 1 else None)])]


register_op(
    "_FusedMatMul",
    inputs=["a: T", "b: T", "args: num_args * T"],
    outputs=["product: T"],
    attrs=[
        "transpose_a: bool = false",
        "transpose_b: bool = false",
        "T: {float16, float32, float64}",
        "num_args: int >= 0",
        "fused_ops: list(string) = []",
        "epsilon: float = 0.0001",
        "leakyrelu_alpha: float = 0.2",
    ],
    shape=_fused_matmul_shape,
    doc="MatMul(a, b) followed by fused_ops: BiasAdd with args[0], then optionally Relu "
    "(created by the graph optimizer from MatMul + BiasAdd [+ Relu]).",
)


@kernel("_FusedMatMul")
def _fused_matmul(ctx, a, b, *args):
    bias = _fused_bias(ctx, args)
    out = _matmul(ctx, a, b)  # a fresh array: updating it in place is safe
    _bias_then_relu(ctx, out, bias, out.shape[1], lambda: f"the product's shape {_fmt(out.shape)}")
    return out


not_differentiable("_FusedMatMul")


# --- _FusedConv2D -------------------------------------------------------------------------------


def _fused_conv2d_shape(ic: InferenceContext) -> list[Shape]:
    _check_fused_ops(ic.attr("fused_ops"), ic.attr("num_args"), ic.fail)
    if ic.attr("num_host_args"):
        raise ic.fail(f"num_host_args must be 0 for fused_ops {list(ic.attr('fused_ops'))}")
    out = Shape(_conv_window(ic, ic.shape(0), ic.shape(1))[1])
    channels = out[3 if ic.attr("data_format") == "NHWC" else 1]
    _check_bias_shape(ic, channels, lambda: f"the convolution's {channels} output channels")
    return [out]


register_op(
    "_FusedConv2D",
    inputs=["input: T", "filter: T", "args: TArgs", "host_args: num_host_args * float"],
    outputs=["output: T"],
    attrs=[
        "T: {float16, float32, float64}",
        "TArgs: list(type) >= 1",
        "num_args: int >= 0",
        "num_host_args: int >= 0 = 0",
        *_CONV_ATTRS,
        "filter_format: {'HWIO'} = 'HWIO'",
        "fused_ops: list(string) = []",
        "epsilon: float = 0.0001",
        "leakyrelu_alpha: float = 0.2",
    ],
    shape=_fused_conv2d_shape,
    doc="Conv2D(input, filter) followed by fused_ops: BiasAdd with args[0] over the channels, then "
    "optionally Relu (created by the graph optimizer from Conv2D + BiasAdd [+ Relu]).",
)


# A planned convolution's product of at most this many rows takes its bias as a ones column of
# im2col (a batch of one: a numpy call fewer, ~2 us); a larger one adds it after, which costs less
# than C more columns in the product.
_SMALL_ROWS = 256


@kernel("_FusedConv2D")
def _fused_conv2d(ctx, x, f, *args):
    bias = _fused_bias(ctx, args)
    plan = ctx.state.get("gather_plan")  # (conv2d_matrix's: NHWC on the CPU, checked shapes)
    if plan is not None and plan[0] == x.shape and plan[1] == f.shape and bias.shape == (f.shape[3],):
        n, oh, ow, o = plan[6]
        if n * oh * ow <= _SMALL_ROWS:
            return _small_product(ctx, x, f, bias, plan)
    out, shape = conv2d_matrix(ctx, x, f)  # [N * OH * OW, O], fresh: updated in place
    _bias_then_relu(ctx, out, bias, shape[3], lambda: f"the convolution's {shape[3]} output channels")
    return _from_nhwc(out.reshape(shape), ctx.attrs["data_format"])


def _small_product(ctx, x, f, bias, plan):
    """_FusedConv2D by conv_ops._gathered_product's plan, the bias in the product."""
    state = ctx.state
    _, _, idx, _, rows, cols_shape, shape = plan
    n, c = x.shape[0], x.shape[3]
    k, m = cols_shape[3], shape[0] * shape[1] * shape[2]
    ext_order = state.get("conv_ext_order")
    if ext_order is None or ext_order[0] is not plan:
        ext_order = state["conv_ext_order"] = (plan, _with_ones(idx, k // c, rows))
    ext_order = ext_order[1]
    src = _ones_source(x, rows, state)
    cols = wn.take(np, state, "ones_cols", (n, ext_order.size, c), x.dtype)
    src.take(ext_order, axis=1, out=cols, mode="wrap")
    wn.give(state, "ones_src", src)
    out = ctx.empty((m, shape[3]), x.dtype)
    np.matmul(cols.reshape(m, k + c), _filter_with_bias(ctx, f, bias, k, c), out=out)
    wn.give(state, "ones_cols", cols)
    if len(ctx.attrs["fused_ops"]) == 2:  # Relu
        relu(np, out, out)
    return out.reshape(shape)


def add_rows(xp, out, bias) -> None:
    """``out += bias`` for a contiguous [M, O] product and an [O] vector, over whole rows."""
    channel_op(xp, xp.add, out, bias, out)


not_differentiable("_FusedConv2D")


# --- _FusedConv2DMaxPool ------------------------------------------------------------------------
#
# Not a TF op: the optimize stage's ``fuse_conv_pool`` (runtime/optimize_fuse.py) makes it from
# MaxPool(_FusedConv2D(x, f, bias)) (+ Relu) at inference. A per-channel bias commutes with a max
# (rounding is monotone: max(fl(a + b), fl(c + b)) == fl(max(a, c) + b)) and so does Relu, so
# the bias and the Relu run on the pooled tensor. When the pool's windows tile the convolution's
# output, im2col gathers the rows in (window offset, pooled position) order per example: the
# product is then [N, KH * KW, PH * PW * O] and the pool is KH * KW - 1 ``maximum`` calls over
# contiguous blocks (no strided window view of the conv output, which is never NHWC).

_POOL_MAX_ELEMENTS = 1 << 22  # a larger im2col runs the unfused way (conv2d_matrix's buffers)


class _PoolAttrs:
    """The pool's window attrs under MaxPool's names, for conv_ops._window."""

    def __init__(self, ctx):
        a = ctx.attrs
        self.attrs = {"ksize": a["pool_ksize"], "strides": a["pool_strides"], "padding": a["pool_padding"],
                      "data_format": "NHWC"}  # fmt: skip
        self.fail = ctx.fail


def _pool_of(ic, conv_out) -> wn._Window:
    return _window(_PoolAttrs(ic), conv_out[1:3], _spatial_attr_pool(ic))


def _spatial_attr_pool(c) -> tuple[int, int]:
    k = [int(v) for v in c.attrs["pool_ksize"]]
    if len(k) != 4 or k[0] != 1 or k[3] != 1 or min(k) < 1:
        raise c.fail(f"pool_ksize must be [1, rows, cols, 1] with positive sizes, got {k}")
    return k[1], k[2]


def _fused_conv2d_max_pool_shape(ic: InferenceContext) -> list[Shape]:
    if tuple(ic.attr("fused_ops")) not in _SUPPORTED:
        raise ic.fail(f"unsupported fused_ops {list(ic.attr('fused_ops'))}")
    if ic.attr("data_format") != "NHWC":
        raise ic.fail("only NHWC is supported")
    conv = _conv_window(ic, ic.shape(0), ic.shape(1))[1]
    pool = _pool_of(ic, conv)
    _check_bias_shape(ic, conv[3], lambda: f"the convolution's {conv[3]} output channels")
    return [Shape([conv[0], *pool.out, conv[3]])]


register_op(
    "_FusedConv2DMaxPool",
    inputs=["input: T", "filter: T", "bias: T"],
    outputs=["output: T"],
    attrs=[
        "T: {float16, float32, float64}",
        *_CONV_ATTRS,
        "pool_ksize: list(int) >= 4",
        "pool_strides: list(int) >= 4",
        "pool_padding: {'SAME', 'VALID'}",
        "fused_ops: list(string) = []",
    ],
    shape=_fused_conv2d_max_pool_shape,
    doc="MaxPool(Conv2D(input, filter)) (NHWC; the pool's window in pool_ksize, pool_strides, "
    "pool_padding) plus bias over the channels, then Relu if fused_ops lists it (created by the "
    "graph optimizer from MaxPool of a _FusedConv2D at inference).",
)


def _pooled_order(win, spatial: tuple, pool) -> np.ndarray | None:
    """window_index's rows reordered (window offset, pooled position), or None when the pool's
    windows do not tile the convolution's output."""
    if not wn.tiles(pool, win.out):
        return None
    idx, _ = window_index(win, spatial)
    (oh, ow), (kh, kw), k = win.out, pool.ksize, math.prod(win.ksize)
    order = idx.reshape(oh // kh, kh, ow // kw, kw, k).transpose(1, 3, 0, 2, 4)
    return np.ascontiguousarray(order).ravel()


def _conv_pool_plan(ctx, xp, x, f, limit: bool = True) -> tuple:
    """Per input shapes (kept in kernel state): the two windows, and for the gathered way its
    row order (None: the unfused way), whether it reads padding, and the product's dims."""
    win, out = _conv_window(ctx, x.shape, f.shape)
    pool = _pool_of(ctx, out)
    n, *spatial, c = x.shape
    k = math.prod(win.ksize) * c
    order = None
    if xp is np and (not limit or n * math.prod(win.out) * k <= _POOL_MAX_ELEMENTS) and 0 not in x.shape[int(not limit):]:
        order = _pooled_order(win, tuple(spatial), pool)
    padded = order is not None and window_index(win, tuple(spatial))[1]
    return win, pool, order, padded, math.prod(spatial), k, math.prod(pool.ksize), math.prod(pool.out)


# CPU only: numpy's take into a kept buffer (mode "wrap") has no cupy form; on a GPU the
# placer keeps the node on the host rather than fail (the pass makes it for inference graphs).
@kernel("_FusedConv2DMaxPool", devices=("CPU",))
def _fused_conv2d_max_pool(ctx, x, f, bias):
    xp = ctx.xp
    if ctx.attrs["data_format"] != "NHWC":
        raise ctx.fail("only NHWC is supported")
    plan = ctx.state.get("pool_plan")  # (checked once per input and filter shapes)
    if plan is None or plan[0] != x.shape or plan[1] != f.shape:
        plan = ctx.state["pool_plan"] = (x.shape, f.shape, *_conv_pool_plan(ctx, xp, x, f))
    _, _, win, pool, order, padded, rows, k, taps, cells = plan
    n, o = x.shape[0], f.shape[3]
    if bias.ndim != 1 or bias.shape[0] != o:
        raise ctx.fail(f"bias of shape {_fmt(bias.shape)} does not match the convolution's {o} output channels")
    if n == 0:  # an empty batch: an empty result (the gather and the matmul need a row)
        return xp.zeros((0, *pool.out, o), x.dtype)
    if order is not None and len(ctx.attrs["fused_ops"]) == 2 and xp is np:
        return _pooled_relu(ctx, x, f, bias, plan)
    if order is None:  # the unfused way: conv, pool, then the bias (and Relu) on the pooled
        conv, shape = conv2d_matrix(ctx, x, f)
        out = tf_cpu_max_pool(xp, conv.reshape(shape), lambda v: wn.max_pool(xp, v, pool, ctx.empty))
    else:
        src = gather_source(xp, x, rows, padded, ctx.state)
        # [N, taps * cells * window, C] into a kept buffer (indices in range: "wrap" checks none)
        cols = wn.take_cols(xp, ctx.state, (n, order.size, x.shape[3]), x.dtype)
        src.take(order, axis=1, out=cols, mode="wrap")
        give_source(ctx.state, src, padded)
        prod = wn.take(xp, ctx.state, "product", (n, taps, cells * o), x.dtype)
        xp.matmul(cols.reshape(n * taps * cells, k), f.reshape(k, o), out=prod.reshape(n * taps * cells, o))
        out = ctx.empty((n, *pool.out, o), x.dtype)
        flat = out.reshape(n, cells * o)
        out = tf_cpu_max_pool(xp, prod, lambda p: _max_over_taps(xp, p, flat, taps)).reshape(out.shape)
        wn.give(ctx.state, "product", prod)
        wn.give(ctx.state, "im2col", cols)
    flat = out.reshape(-1, o)
    add_rows(xp, flat, bias)
    if len(ctx.attrs["fused_ops"]) == 2:  # Relu
        relu(xp, flat, flat)
    return out


def _pooled_relu(ctx, x, f, bias, plan):
    """The gathered way with a Relu: the bias comes in the product (a ones column of im2col, as
    _FusedConv2DMaxPoolTrain's), which the max commutes with, and the Relu runs on the pooled.
    After the Relu, TF's floor at float's lowest changes nothing (lowest + bias <= 0): two numpy
    calls fewer, which is what a batch of one pays for (~1-3 us each)."""
    state = ctx.state
    _, _, win, pool, order, _, rows, k, taps, cells = plan
    ext_order = state.get("pool_ext_order")
    if ext_order is None or ext_order[0] is not plan:
        ext_order = state["pool_ext_order"] = (plan, _with_ones(order, math.prod(win.ksize), rows))
    ext_order = ext_order[1]
    n, c, o = x.shape[0], x.shape[3], f.shape[3]
    src = _ones_source(x, rows, state)
    cols = wn.take_cols(np, state, (n, ext_order.size, c), x.dtype)
    src.take(ext_order, axis=1, out=cols, mode="wrap")
    wn.give(state, "ones_src", src)
    prod = wn.take(np, state, "product", (n, taps, cells * o), x.dtype)
    np.matmul(cols.reshape(n * taps * cells, k + c), _filter_with_bias(ctx, f, bias, k, c),
              out=prod.reshape(n * taps * cells, o))  # fmt: skip
    out = ctx.empty((n, *pool.out, o), x.dtype)
    flat = _max_over_taps(np, prod, out.reshape(n, cells * o), taps)
    if np.isnan(flat).any():  # NaN never wins a window (tf_cpu_max_pool)
        _max_over_taps(np, np.where(np.isnan(prod), prod.dtype.type(-np.inf), prod), flat, taps)
    relu(np, flat, flat)
    wn.give(state, "product", prod)
    wn.give(state, "im2col", cols)
    return out


def _with_ones(order, kwin: int, rows: int):
    """A gather order with the ones row (index ``rows + 1``, _ones_source's) after each window."""
    order = order.reshape(-1, kwin)
    return np.ascontiguousarray(np.concatenate([order, np.full((len(order), 1), rows + 1, order.dtype)], 1)).ravel()


# A node attr the optimizer sets when the filter and bias are variable reads or constants.
PARAMS_KEPT = "_params_kept"


def _filter_with_bias(ctx, f, bias, k: int, c: int):
    """[K + C, O]: the filter's rows, the bias, C - 1 rows of zeros (the product of a ones
    column adds the bias). Kept for the same filter and bias objects when those cannot change
    in place: read-only arrays (memo.py's arithmetic at inference, constants) or variable reads
    (PARAMS_KEPT: a variable's array is never updated in place while referenced, as here); a
    fed array may be its caller's, changed between steps."""
    state = ctx.state
    kept = state.get("filter_ext")
    if kept is not None and kept[0] is f and kept[1] is bias:
        return kept[2]
    ext = np.zeros((k + c, f.shape[3]), f.dtype)
    ext[:k] = f.reshape(k, f.shape[3])
    ext[k] = bias
    if ctx.attrs.get(PARAMS_KEPT) or not (f.flags.writeable or bias.flags.writeable):
        state["filter_ext"] = (f, bias, ext)
    else:
        state.pop("filter_ext", None)
    return ext


def _max_over_taps(xp, prod, flat, taps: int):
    """The pooled [N, cells * O] of ``prod`` [N, taps, cells * O]: the maximum over its taps
    (a NaN propagates: ``tf_cpu_max_pool`` takes it out, as MaxPool's kernel does)."""
    if taps == 1:
        flat[...] = prod[:, 0]
    else:
        xp.maximum(prod[:, 0], prod[:, 1], out=flat)
        for t in range(2, taps):
            xp.maximum(flat, prod[:, t], out=flat)
    return flat


not_differentiable("_FusedConv2DMaxPool")


# --- _FusedConv2DMaxPoolTrain and its gradient ----------------------------------------------------
#
# Training's form of the above (runtime/optimize_fuse.py ``fuse_conv_pool_training``): MaxPool of
# a _FusedConv2D whose only other reader is the pool's MaxPoolGrad, whose gradient goes only to the
# bias's BiasAddGrad and the filter's Conv2DBackpropFilter. The activations are kept in the
# gathered (window offset, pooled position) row order: the pool is KH * KW - 1 ``maximum`` calls
# over contiguous blocks, the pool's gradient one comparison and one product per offset over
# contiguous blocks (MaxPoolGrad of NHWC activations walks strided 16-element runs), and
# the filter gradient multiplies the same rows' im2col, which the forward kernel hands on. Each
# im2col row ends in C ones (a gathered ones row) and the filter in the bias and C - 1 zero rows:
# the product adds the bias, and the filter gradient's row of the ones is the bias gradient.
# The Relu runs before the pool: the gradient compares the very activations the unfused
# MaxPoolGrad would (each window's first maximum).


def _fused_conv_pool_train_shape(ic: InferenceContext) -> list[Shape]:
    (pooled,) = _fused_conv2d_max_pool_shape(ic)
    conv = _conv_window(ic, ic.shape(0), ic.shape(1))[1]
    pool = _pool_of(ic, conv)
    x, f = _rank4(ic, ic.shape(0), "input"), _rank4(ic, ic.shape(1), "filter")
    taps, cells = math.prod(pool.ksize), None if None in pool.out else math.prod(pool.out)
    k = None if None in (f[0], f[1]) else f[0] * f[1] + 1  # (+ the ones)
    width = None if cells is None or conv[3] is None else cells * conv[3]
    rows = None if cells is None or k is None else taps * cells * k
    return [pooled, Shape([conv[0], taps, width]), Shape([conv[0], rows, x[3]])]


register_op(
    "_FusedConv2DMaxPoolTrain",
    inputs=["input: T", "filter: T", "bias: T"],
    outputs=["output: T", "activations: T", "columns: T"],
    attrs=[
        "T: {float16, float32, float64}",
        *_CONV_ATTRS,
        "pool_ksize: list(int) >= 4",
        "pool_strides: list(int) >= 4",
        "pool_padding: {'SAME', 'VALID'}",
        "fused_ops: list(string) = []",
    ],
    shape=_fused_conv_pool_train_shape,
    doc="_FusedConv2DMaxPool for training: also the activations (bias added, Relu if listed) "
    "[N, pool taps, pooled positions * O] and the gathered im2col they came from (each window's "
    "KH * KW input rows, then a row of ones), for _FusedConv2DMaxPoolTrainGrad (the pool's "
    "windows must tile the convolution's output).",
)


def _ones_source(x, rows: int, state):
    """x as [N, rows, C] rows, then a zero row (what padding reads) and a ones row (the bias's
    column), in a kept buffer whose last two rows are written once."""
    n, c = x.shape[0], x.shape[-1]
    src = wn.take(np, state, "ones_src", (n, rows + 2, c), x.dtype)
    src[:, :rows] = x.reshape(n, rows, c)
    if state.get("ones_src_ends") is not src:
        src[:, rows] = 0
        src[:, rows + 1] = 1
        state["ones_src_ends"] = src
    return src


def _train_plan(ctx, x, f):
    """_conv_pool_plan's, with the gather's order extended by the ones row after each window."""
    win, pool, order, _, rows, k, taps, cells = _conv_pool_plan(ctx, np, x, f, limit=False)
    if order is not None:
        order = _with_ones(order, math.prod(win.ksize), rows)
    return win, pool, order, rows, k, taps, cells


@kernel("_FusedConv2DMaxPoolTrain", devices=("CPU",))
def _fused_conv2d_max_pool_train(ctx, x, f, bias):
    if ctx.attrs["data_format"] != "NHWC":
        raise ctx.fail("only NHWC is supported")
    # (not "pool_plan": a node's state is its name's, and the inference graph's pool1 has that)
    plan = ctx.state.get("train_pool_plan")
    if plan is None or plan[0] != x.shape or plan[1] != f.shape:
        if f.shape[2] != x.shape[3]:
            raise ctx.fail(f"the filter {_fmt(f.shape)} must read all {x.shape[3]} input channels (no groups)")
        plan = ctx.state["train_pool_plan"] = (x.shape, f.shape, *_train_plan(ctx, x, f))
    _, _, win, pool, order, rows, k, taps, cells = plan
    n, c, o = x.shape[0], x.shape[3], f.shape[3]
    if order is None:
        raise ctx.fail(f"the pool's windows {pool.ksize} must tile the convolution's output {win.out}")
    if bias.ndim != 1 or bias.shape[0] != o:
        raise ctx.fail(f"bias of shape {_fmt(bias.shape)} does not match the convolution's {o} output channels")
    src = _ones_source(x, rows, ctx.state)
    cols = ctx.empty((n, order.size, c), x.dtype)  # an output: the arena's, not kept
    src.take(order, axis=1, out=cols, mode="wrap")
    wn.give(ctx.state, "ones_src", src)
    ext = np.zeros((k + c, o), x.dtype)  # the filter, the bias, zeros (new every step here)
    ext[:k] = f.reshape(k, o)
    ext[k] = bias
    act = ctx.empty((n, taps, cells * o), x.dtype)
    flat = act.reshape(n * taps * cells, o)
    np.matmul(cols.reshape(n * taps * cells, k + c), ext, out=flat)
    relu_first = len(ctx.attrs["fused_ops"]) == 2
    if relu_first:
        relu(np, flat, flat)
    out = ctx.empty((n, *pool.out, o), x.dtype)
    _pool_taps(act, out.reshape(n, cells * o), taps, relu_first)
    return out, act, cols


def _pool_taps(act, pooled, taps: int, relu_first: bool) -> None:
    """tf_cpu_max_pool of _max_over_taps into ``pooled``; activations after a Relu are >= 0 or
    NaN, so the floor at float's lowest matters only where a window was all NaN."""
    _max_over_taps(np, act, pooled, taps)
    nan = np.isnan(pooled).any()
    if nan:
        _max_over_taps(np, np.where(np.isnan(act), act.dtype.type(-np.inf), act), pooled, taps)
    if nan or not relu_first:
        np.maximum(pooled, np.finfo(pooled.dtype).min, out=pooled)


def _train_grad_shape(ic: InferenceContext) -> list[Shape]:
    sizes = ic.shape_from_value(4)
    if sizes.rank is None:
        return [Shape.unknown_of_rank(4), Shape([None])]
    if sizes.rank != 4:
        raise ic.fail(f"filter_sizes must hold 4 sizes, got {sizes}")
    return [sizes, Shape([sizes[3]])]


register_op(
    "_FusedConv2DMaxPoolTrainGrad",
    inputs=["activations: T", "output: T", "grad: T", "columns: T", "filter_sizes: int32"],
    outputs=["filter_grad: T", "bias_grad: T"],
    attrs=["T: {float16, float32, float64}"],
    shape=_train_grad_shape,
    doc="The filter and bias gradients of _FusedConv2DMaxPoolTrain from the gradient of its pooled "
    "output: MaxPoolGrad (each window's grad to its first maximum) in the activations' row "
    "order, then BiasAddGrad and Conv2DBackpropFilter as one product with the forward's im2col.",
)


@kernel("_FusedConv2DMaxPoolTrainGrad", devices=("CPU",), host_inputs=[4])
def _fused_conv2d_max_pool_train_grad(ctx, act, y, dy, cols, filter_sizes):
    sizes = tuple(int(s) for s in np.asarray(filter_sizes).ravel())
    n, taps, width = act.shape
    o = sizes[3] if len(sizes) == 4 else -1
    k = math.prod(sizes[:3])
    if y.size != n * width or dy.shape != y.shape or o < 1 or width % o or cols.size != n * taps * (width // o) * (k + sizes[2]):
        raise ctx.fail(f"inconsistent shapes: activations {_fmt(act.shape)}, output {_fmt(y.shape)}, grad "
                       f"{_fmt(dy.shape)}, columns {_fmt(cols.shape)}, filter_sizes {list(sizes)}")  # fmt: skip
    y, dy = y.reshape(n, width), dy.reshape(n, width)
    dact = ctx.empty(act.shape, act.dtype)
    hit = wn.take(np, ctx.state, "hit", (n, width), np.dtype(bool))
    seen = wn.take(np, ctx.state, "seen", (n, width), np.dtype(bool))
    for t in range(taps):  # window.first_max's masks: the first maximum of each window
        np.equal(act[:, t], y, out=hit)
        if t == 0:
            seen[...] = hit
        else:
            np.greater(hit, seen, out=hit)
            if t + 1 < taps:
                seen |= hit
        # (a product with the mask: a masked copy branches on every element, ~10x slower here)
        np.multiply(dy, hit, out=dact[:, t])
    wn.give(ctx.state, "hit", hit)
    wn.give(ctx.state, "seen", seen)
    rows = dact.reshape(-1, o)
    grad = wn.tall_product(np, cols.reshape(rows.shape[0], -1), rows)  # [K + C, O]: the ones' rows last
    return grad[:k].reshape(sizes), grad[k].copy()


not_differentiable("_FusedConv2DMaxPoolTrain")
not_differentiable("_FusedConv2DMaxPoolTrainGrad")
