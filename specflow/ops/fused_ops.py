"""Fused ops the graph optimizer's remapper creates (``specflow/runtime/optimize.py``,
``optimize_fuse.py``), with TensorFlow's names and attrs: ``_FusedMatMul`` and ``_FusedConv2D``
are MatMul and Conv2D followed by ``fused_ops``.

They exist only in optimized step graphs, after gradients are built, so they need no gradient.
The kernels save the intermediate arrays and executor nodes of the unfused chain: the bias and
the activation are applied in place to the product, which no one else has seen yet.
"""

from __future__ import annotations

from specflow.graph.shapes import Shape
from specflow.ops.conv_ops import _CONV_ATTRS, _conv_window, _from_nhwc, conv2d_matrix
from specflow.ops.inference import InferenceContext
from specflow.ops.math_ops import _fmt
from specflow.ops.matmul_ops import _matmul, _matmul_shape
from specflow.ops.registry import kernel, not_differentiable, register_op
from specflow.ops.wide_rows import channel_op, relu

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


@kernel("_FusedConv2D")
def _fused_conv2d(ctx, x, f, *args):
    bias = _fused_bias(ctx, args)
    out, shape = conv2d_matrix(ctx, x, f)  # [N * OH * OW, O], fresh: updated in place
    _bias_then_relu(ctx, out, bias, shape[3], lambda: f"the convolution's {shape[3]} output channels")
    return _from_nhwc(out.reshape(shape), ctx.attrs["data_format"])


def add_rows(xp, out, bias) -> None:
    """``out += bias`` for a contiguous [M, O] product and an [O] vector, over whole rows."""
    channel_op(xp, xp.add, out, bias, out)


not_differentiable("_FusedConv2D")
