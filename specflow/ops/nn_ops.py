"""Neural-network ops: activations and their gradients, softmax, bias, top-k accuracy.

Names, inputs, attrs and semantics are TensorFlow's (nn_ops.cc), so graphs map 1:1 onto TF
GraphDefs. The gradient kernels (``ReluGrad``, ``BiasAddGrad``, ...) are what the gradient
functions registered beside each op emit, as TF's nn_grad.py does; the gradient kernels have
gradients too (second derivatives). Convolution and pooling live in ``conv_ops``, the losses
(softmax cross-entropy, L2Loss) in ``nn_loss_ops``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from specflow.graph import dtypes
from specflow.graph.shapes import Shape
from specflow.ops import buffers, wide_rows
from specflow.ops import grad_util as gu
from specflow.ops.eigen_math import exp_f32
from specflow.ops.inference import InferenceContext, same_shape_inputs, unchanged_shape
from specflow.ops.leading_sum import sum_leading
from specflow.ops.registry import bfloat16_native, gradient, kernel, not_differentiable, register_op

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_SELU_SCALE_ALPHA = 1.7580993408473768599402175208123  # TF's constant (not the rounded product)


def _with_rank(ic: InferenceContext, i: int, rank: int, what: str) -> Shape:
    try:
        return ic.shape(i).with_rank(rank)
    except ValueError:
        raise ic.fail(f"{what} must be {rank}-D, got shape {ic.shape(i)}") from None


def _rank_at_least(ic: InferenceContext, i: int, rank: int, what: str) -> Shape:
    s = ic.shape(i)
    if s.rank is not None and s.rank < rank:
        raise ic.fail(f"{what} must have rank at least {rank}, got shape {s}")
    return s


def _merge_dim(ic: InferenceContext, a: int | None, b: int | None, message: str) -> int | None:
    if a is not None and b is not None and a != b:
        raise ic.fail(message)
    return a if a is not None else b


def _sigmoid(xp, x):
    """The logistic function without overflow: ``exp`` only sees non-positive arguments."""
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


# --- elementwise activations and their gradient kernels ----------------------------------------


def _relu6_grad(xp, g, f):
    mask = ((f > 0) & (f < 6)).astype(g.dtype)
    if xp is not np:
        return g * mask
    with np.errstate(invalid="ignore"):  # inf * 0 is TF's NaN, not a mistake to warn about
        return g * mask


def _relu_grad(xp, attrs, g, f):
    """TF's ReluGrad, ``g * (f > 0)``: a product, so a NaN or inf gradient where f <= 0 gives
    NaN as in TF (``where`` would give 0). The mask cast to T and multiplied in place is the
    same product (IEEE multiplication commutes) at half the cost of numpy's mixed bool*float
    loop (~4.5 vs ~8.4 µs on [64, 128] float32)."""
    out = (f > 0).astype(g.dtype)
    out *= g
    return out


def _relu_grad_into(xp, attrs, out, g, f):
    xp.greater(f, 0, out=out, casting="unsafe")  # the mask as T (1 or 0), then the product
    out *= g
    return out



def _exp_minus_one(xp, attrs, x):
    """``exp(x) - 1`` as TF's Elu and Selu kernels compute it (not expm1): Eigen's exp in T, then
    1 subtracted in T. float32 and the half types use Eigen's float32 exp bit for bit (a half's
    exp is the float32 one rounded to it); bfloat16 arrives widened to float32 (registry's
    _in_float32), so its exp and difference are rounded to bfloat16 here, as Eigen's are."""
    if xp is not np or x.dtype not in (np.float16, np.float32):
        return xp.exp(x) - x.dtype.type(1)
    e = exp_f32(x.astype(np.float32, copy=False))
    if attrs.get("T") is dtypes.bfloat16:
        bf16 = dtypes.bfloat16.numpy
        return (e.astype(bf16).astype(np.float32) - np.float32(1)).astype(bf16).astype(np.float32)
    return e.astype(x.dtype, copy=False) - x.dtype.type(1)


def _in_type(attrs, x, value):
    """A constant as TF's static_cast<T> makes it (bfloat16 arrives as float32 here)."""
    if attrs.get("T") is dtypes.bfloat16:
        return np.float32(np.array(value).astype(dtypes.bfloat16.numpy))
    return x.dtype.type(value)


# Eigen's NumTraits<T>::epsilon(), from which TF's Softplus picks its cut-offs.
_SOFTPLUS_EPS = {"float16": 2.0**-13, "bfloat16": 2.0**-7, "float32": 2.0**-23}


def _softplus(xp, a, x):
    """TF's Softplus: x above -threshold, exp(x) below threshold, else log1p(exp(x)), with
    threshold = log(epsilon) + 2 computed in T; each step rounded to T, exp Eigen's (float16
    and bfloat16 equal TF bit for bit; float32 within an ulp, log1p being numpy's)."""
    t = a.get("T")
    name = t.name if t is not None else x.dtype.name
    if xp is not np or name not in _SOFTPLUS_EPS:  # float64 (and GPUs): the overflow-free form
        return xp.maximum(x, 0) + xp.log1p(xp.exp(-xp.abs(x)))
    kind = dtypes.bfloat16.numpy if name == "bfloat16" else np.dtype(name)

    def rounded(v):  # to T, and back to the kernel's float32 for bfloat16 (widened by the registry)
        with np.errstate(over="ignore"):
            return np.asarray(v, np.float32).astype(kind).astype(x.dtype)

    thr = rounded(rounded(np.log(np.float32(_SOFTPLUS_EPS[name]))) + 2)
    e = rounded(exp_f32(x.astype(np.float32, copy=False)))
    with np.errstate(invalid="ignore"):
        mid = rounded(np.log1p(e.astype(np.float32, copy=False)))
        return np.where(x > -thr, x, np.where(x < thr, e, mid))


def _softplus_grad(xp, a, g, f):
    """TF's SoftplusGrad, g / (exp(-f) + 1), each step rounded to T (Eigen's exp for float32 and
    the half types: an exp that overflows gives 0, as TF, not a tiny product)."""
    t = a.get("T")
    name = t.name if t is not None else f.dtype.name
    if xp is not np or name not in _SOFTPLUS_EPS:
        return g * _sigmoid(xp, f)
    kind = dtypes.bfloat16.numpy if name == "bfloat16" else np.dtype(name)

    def rounded(v):
        with np.errstate(over="ignore"):
            return np.asarray(v, np.float32).astype(kind).astype(f.dtype)

    e = rounded(exp_f32(-f.astype(np.float32, copy=False)))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        out = g / rounded(e + f.dtype.type(1))
    if out.dtype == np.float32:  # TF's CPU threads flush float32 denormal results to zero
        out = np.where(np.abs(out) < np.finfo(np.float32).tiny, out * np.float32(0), out)
    return out


def _selu(xp, a, x):
    # TF: x < 0 ? scale_alpha * (exp(x) - 1) : scale * x, each product rounded in T.
    neg = _in_type(a, x, _SELU_SCALE_ALPHA) * _exp_minus_one(xp, a, xp.minimum(x, 0))
    if a.get("T") is dtypes.bfloat16:
        neg = neg.astype(dtypes.bfloat16.numpy).astype(np.float32)
    return xp.where(x < 0, neg, _in_type(a, x, _SELU_SCALE) * x)


def _selu_grad(xp, a, g, y):
    # TF: y < 0 ? g * (y + scale_alpha) : g * scale, the sum rounded in T before the product.
    shifted = y + _in_type(a, y, _SELU_SCALE_ALPHA)
    if a.get("T") is dtypes.bfloat16:
        shifted = shifted.astype(dtypes.bfloat16.numpy).astype(np.float32)
    return xp.where(y < 0, g * shifted, g * _in_type(a, g, _SELU_SCALE))


class _Elementwise(NamedTuple):
    inputs: tuple[str, ...]
    output: str
    types: str  # the allowed types of the T attr, e.g. "real" or "float"
    doc: str
    fn: Callable  # fn(xp, attrs, *inputs) -> array
    attrs: tuple[str, ...] = ()  # extra attrs; T gets TF's default float32 when these exist
    # into(xp, attrs, out, *inputs) -> out: the same values written into ``out`` (a reused
    # buffer, ops/buffers.py), for the activations large training steps run.
    into: Callable | None = None
    # fn mirrors TF's functor step by step: run on bfloat16 arrays, each step rounded as Eigen's
    # (else bfloat16 is widened to float32 and rounded once, registry._in_float32).
    bf16_native: bool = False


_UNARY = ("features",)
_GRAD = ("gradients", "features")
_GRAD_OUT = ("gradients", "outputs")
_LEAKY = ("alpha: float = 0.2",)


def _leaky_alpha(attrs, x):
    """alpha as TF's kernels use it: the attr is a float32, cast to T (so 0.2 on float64 is
    0.2000000029802322)."""
    return x.dtype.type(np.float32(attrs["alpha"]))

_ELEMENTWISE: dict[str, _Elementwise] = {
    "Relu": _Elementwise(
        _UNARY, "activations", "real", "max(features, 0).",
        lambda xp, a, x: wide_rows.relu(xp, x),
        into=lambda xp, a, out, x: wide_rows.relu(xp, x, out),
    ),
    "Relu6": _Elementwise(
        _UNARY, "activations", "real", "min(max(features, 0), 6).",
        lambda xp, a, x: xp.clip(x, 0, 6),
    ),
    "Elu": _Elementwise(
        _UNARY, "activations", "float", "features if > 0, else exp(features) - 1.",
        # exp sees only non-positive values, so large features cannot overflow.
        # TF selects on features < 0, so -0.0 stays -0.0.
        lambda xp, a, x: xp.where(x < 0, _exp_minus_one(xp, a, xp.minimum(x, 0)), x),
    ),
    "Selu": _Elementwise(
        _UNARY, "activations", "float",
        "scale * features if > 0, else scale * alpha * (exp(features) - 1) (the SELU constants).",
        _selu,
    ),
    "LeakyRelu": _Elementwise(
        _UNARY, "activations", "float", "features if > 0, else alpha * features.",
        lambda xp, a, x: xp.where(x > 0, x, _leaky_alpha(a, x) * x), _LEAKY,
    ),
    "Softplus": _Elementwise(
        _UNARY, "activations", "float", "log(exp(features) + 1), computed without overflow.",
        _softplus,
    ),
    "Softsign": _Elementwise(
        _UNARY, "activations", "float", "features / (abs(features) + 1).",
        lambda xp, a, x: x / (xp.abs(x) + 1),
    ),
    "ReluGrad": _Elementwise(
        _GRAD, "backprops", "real", "gradients where features > 0, else 0 (the gradient of Relu).",
        _relu_grad, into=_relu_grad_into,
    ),
    "Relu6Grad": _Elementwise(
        _GRAD, "backprops", "real",
        "gradients * (0 < features < 6): 0 elsewhere, NaN for a non-finite gradient there (TF's "
        "product); features may be Relu6's input or output.",
        lambda xp, a, g, f: _relu6_grad(xp, g, f),
    ),
    "EluGrad": _Elementwise(
        _GRAD_OUT, "backprops", "float", "gradients * (outputs + 1) where outputs < 0, else gradients.",
        lambda xp, a, g, y: xp.where(y < 0, g * (y + 1), g),
    ),
    "SeluGrad": _Elementwise(
        _GRAD_OUT, "backprops", "float",
        "gradients * (outputs + scale * alpha) where outputs < 0, else gradients * scale.",
        _selu_grad,
    ),
    "LeakyReluGrad": _Elementwise(
        _GRAD, "backprops", "float", "gradients where features > 0, else alpha * gradients.",
        lambda xp, a, g, f: xp.where(f > 0, g, _leaky_alpha(a, g) * g), _LEAKY,
    ),
    "SoftplusGrad": _Elementwise(
        _GRAD, "backprops", "float", "gradients / (1 + exp(-features)).",
        _softplus_grad,
    ),
    "SoftsignGrad": _Elementwise(
        _GRAD, "backprops", "float", "gradients / (1 + abs(features)) ** 2.",
        lambda xp, a, g, f: g / ((1 + xp.abs(f)) * (1 + xp.abs(f))),
        bf16_native=True,
    ),
    # As TF's kernels, no conjugation here: TF's gradients of Tanh and Sigmoid pass conj(y)
    # (Sqrt/Rsqrt/ReciprocalGrad conjugate in the kernel, math_grad_ops.py)
    "SigmoidGrad": _Elementwise(
        ("y", "dy"), "z", "float, complex", "dy * y * (1 - y), where y = sigmoid(x) (its conjugate for complex gradients).",
        lambda xp, a, y, dy: dy * (y * (1 - y)),
        bf16_native=True,
    ),
    "TanhGrad": _Elementwise(
        ("y", "dy"), "z", "float, complex", "dy * (1 - y * y), where y = tanh(x) (its conjugate for complex gradients).",
        lambda xp, a, y, dy: dy * (1 - y * y),
        bf16_native=True,
    ),
}  # fmt: skip


def _register_elementwise(name: str, spec: _Elementwise) -> None:
    # TF gives T a default (float32) only on the ops that also carry alpha (LeakyRelu*).
    t_attr = f"T: {{{spec.types}}}" + (" = float32" if spec.attrs else "")
    register_op(
        name,
        inputs=[f"{n}: T" for n in spec.inputs],
        outputs=[f"{spec.output}: T"],
        attrs=[t_attr, *spec.attrs],
        shape=unchanged_shape if len(spec.inputs) == 1 else same_shape_inputs,
        doc=spec.doc,
    )

    def _run(ctx, *xs):
        if len(xs) == 2 and xs[0].shape != xs[1].shape:
            raise ctx.fail(
                f"{spec.inputs[0]} and {spec.inputs[1]} must have the same shape, "
                f"got {list(xs[0].shape)} and {list(xs[1].shape)}"
            )
        x = xs[0]
        if spec.into is not None and ctx.arena is not None and x.nbytes >= buffers.MIN_BYTES:
            return spec.into(ctx.xp, ctx.attrs, ctx.empty(x.shape, x.dtype), *xs)
        # Python-scalar constants in the formulas must not change the result's dtype.
        return spec.fn(ctx.xp, ctx.attrs, *xs).astype(x.dtype, copy=False)

    kernel(name)(bfloat16_native(_run) if spec.bf16_native else _run)


for _name, _spec in _ELEMENTWISE.items():
    _register_elementwise(_name, _spec)


# --- gradients of the activations and of their gradient kernels (TF's nn_grad.py) ---------------


def _alpha(node) -> dict:
    """LeakyRelu's alpha, which its gradient ops take too."""
    return {"alpha": node.attrs["alpha"]} if "alpha" in node.attrs else {}


def _scalar(b, value, like: str) -> str:
    return gu.const(b, value, b.spec(like).dtype)




# Each activation's gradient is its *Grad kernel of (dy, t), t being the activation's output
# where that fixes the slope (relu(x) > 0 iff x > 0; elu and selu's slope is a function of the
# output), else its input.
_ACTIVATION_GRADS = {
    "Relu": ("ReluGrad", True),
    "Relu6": ("Relu6Grad", True),
    "Elu": ("EluGrad", True),
    "Selu": ("SeluGrad", True),
    "LeakyRelu": ("LeakyReluGrad", False),
    "Softplus": ("SoftplusGrad", False),
    "Softsign": ("SoftsignGrad", False),
}


def _register_activation_grad(op: str, grad_op: str, uses_output: bool) -> None:
    @gradient(op)
    def _grad(b, node, dys):
        t = node.name if uses_output else node.data_inputs[0]
        return [gu.emit(b, grad_op, dys[0], t, **_alpha(node))]


for _name, (_grad_op, _uses_output) in _ACTIVATION_GRADS.items():
    _register_activation_grad(_name, _grad_op, _uses_output)


def _where_negative(b, t: str, value: str) -> str:
    return gu.emit(b, "SelectV2", gu.emit(b, "Less", t, _scalar(b, 0, t)), value, gu.zeros_like(b, t))


def _softplus_curvature(b, ddx, g, x):
    # d/dx sigmoid(x) = 1 / (exp(-x) + 2 + exp(x)), which stays finite for large |x|.
    e = gu.emit(b, "AddV2", gu.emit(b, "Exp", gu.emit(b, "Neg", x)), gu.emit(b, "Exp", x))
    return gu.emit(b, "RealDiv", gu.product(b, ddx, g), gu.emit(b, "AddV2", e, _scalar(b, 2, x)))


def _softsign_curvature(b, ddx, g, x):
    # d/dx (1 + |x|) ** -2 = -2 sign(x) / (1 + |x|) ** 3
    t = gu.emit(b, "AddV2", gu.emit(b, "Abs", x), _scalar(b, 1, x))
    num = gu.product(b, ddx, g, gu.emit(b, "Sign", x), _scalar(b, -2, x))
    return gu.emit(b, "RealDiv", num, gu.product(b, t, t, t))


# A gradient kernel is g * slope(t) for inputs (g, t): linear in g, so its gradient for g is
# the same kernel applied to the incoming ddx; for t it is ddx * g * slope'(t), given here.
_SLOPE_DERIVATIVES = {
    "ReluGrad": lambda b, ddx, g, t: gu.zeros_like(b, t),
    "Relu6Grad": lambda b, ddx, g, t: gu.zeros_like(b, t),
    "LeakyReluGrad": lambda b, ddx, g, t: gu.zeros_like(b, t),
    # (y + 1) and (y + scale * alpha) below zero: slope' is 1 there, 0 above.
    "EluGrad": lambda b, ddx, g, y: _where_negative(b, y, gu.product(b, ddx, g)),
    "SeluGrad": lambda b, ddx, g, y: _where_negative(b, y, gu.product(b, ddx, g)),
    "SoftplusGrad": _softplus_curvature,
    "SoftsignGrad": _softsign_curvature,
}


def _register_grad_grad(op: str, slope_derivative) -> None:
    @gradient(op)
    def _grad(b, node, dys):
        g, t = node.data_inputs
        return [gu.emit(b, op, dys[0], t, **_alpha(node)), slope_derivative(b, dys[0], g, t)]


for _name, _fn in _SLOPE_DERIVATIVES.items():
    _register_grad_grad(_name, _fn)


def _conj_inputs(b, node):
    return [gu.emit(b, "Conj", t) if b.spec(t).dtype.is_complex else t for t in node.data_inputs]


@gradient("SigmoidGrad")
def _sigmoid_grad_grad(b, node, dys):
    # z = dy * y * (1 - y): dz/dy = dy * (1 - 2y); z is linear in dy (conjugated inputs, as TF's).
    y, dy = _conj_inputs(b, node)
    gb = gu.product(b, dys[0], dy)
    return [gu.emit(b, "Sub", gb, gu.product(b, gb, y, _scalar(b, 2, y))), gu.emit(b, "SigmoidGrad", y, dys[0])]


@gradient("TanhGrad")
def _tanh_grad_grad(b, node, dys):
    # z = dy * (1 - y * y): dz/dy = -2 * dy * y; z is linear in dy (conjugated inputs, as TF's).
    y, dy = _conj_inputs(b, node)
    return [gu.product(b, dys[0], dy, y, _scalar(b, -2, y)), gu.emit(b, "TanhGrad", y, dys[0])]


# --- Softmax / LogSoftmax ---------------------------------------------------------------------


def _log_softmax(xp, x):
    """log(softmax(x)) over the last axis, stable: the row max is subtracted first."""
    shifted = x - xp.max(x, axis=-1, keepdims=True)
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=-1, keepdims=True))


def _softmax_shape(ic: InferenceContext) -> list[Shape]:
    return [_rank_at_least(ic, 0, 1, "logits")]


for _name, _out, _doc in (
    ("Softmax", "softmax", "exp(logits) / sum(exp(logits)) over the last axis."),
    ("LogSoftmax", "logsoftmax", "logits - log(sum(exp(logits))) over the last axis."),
):
    register_op(
        _name,
        inputs=["logits: T"],
        outputs=[f"{_out}: T"],
        attrs=["T: {float}"],
        shape=_softmax_shape,
        doc=_doc + " Numerically stable.",
    )


def _is_empty_logits(ctx, x) -> bool:
    """Checks the rank; True when there is nothing to normalise (an empty max would fail)."""
    if x.ndim < 1:
        raise ctx.fail("logits must have rank at least 1, got a scalar")
    return x.size == 0


@kernel("Softmax")
def _softmax(ctx, x):
    xp = ctx.xp
    if _is_empty_logits(ctx, x):
        return xp.empty_like(x)
    if x.size == x.shape[-1] and xp is np:
        # One row (a batch of one): whole-array reductions, a little cheaper than over an axis,
        # over the same contiguous elements in the same order (the same values).
        e = x - np.maximum.reduce(x, axis=None)
        np.exp(e, out=e)
        e /= np.add.reduce(e, axis=None)
        return e
    # The array methods, not xp.max/xp.sum: numpy's wrappers cost more than a small softmax.
    e = x - x.max(axis=-1, keepdims=True)  # fresh: the rest in place, no more temporaries
    xp.exp(e, out=e)
    e /= e.sum(axis=-1, keepdims=True)
    return e


@kernel("LogSoftmax")
def _log_softmax_kernel(ctx, x):
    if _is_empty_logits(ctx, x):
        return ctx.xp.empty_like(x)
    return _log_softmax(ctx.xp, x)


def _last_axis_sum(b, x: str) -> str:
    return gu.emit(b, "Sum", x, gu.const(b, -1, "int32"), keep_dims=True)


def _softmax_backprop(b, dy: str, softmax: str) -> str:
    """dy pulled back through softmax: (dy - sum(dy * softmax)) * softmax, per row."""
    return gu.product(b, gu.emit(b, "Sub", dy, _last_axis_sum(b, gu.product(b, dy, softmax))), softmax)


@gradient("Softmax")
def _softmax_grad(b, node, dys):
    return [_softmax_backprop(b, dys[0], node.name)]


@gradient("LogSoftmax")
def _log_softmax_grad(b, node, dys):
    softmax = gu.emit(b, "Exp", node.name)
    return [gu.emit(b, "Sub", dys[0], gu.product(b, _last_axis_sum(b, dys[0]), softmax))]


# --- BiasAdd / BiasAddGrad --------------------------------------------------------------------

_BIAS_FORMAT = "data_format: {'NHWC', 'NCHW'} = 'NHWC'"


def _channel_axis(data_format: str, rank: int) -> int:
    """NHWC-like layouts keep channels last; NCHW-like ones right after the batch."""
    return 1 if data_format == "NCHW" else rank - 1


def _min_bias_rank(data_format: str) -> int:
    return 3 if data_format == "NCHW" else 2


def _bias_add_shape(ic: InferenceContext) -> list[Shape]:
    fmt = ic.attr("data_format")
    value = _rank_at_least(ic, 0, _min_bias_rank(fmt), f"value ({fmt})")
    bias = _with_rank(ic, 1, 1, "bias")
    if value.rank is None:
        return [value]
    axis = _channel_axis(fmt, value.rank)
    dims = list(value.dims)
    dims[axis] = _merge_dim(
        ic, dims[axis], bias[0],
        f"bias of shape {bias} does not match the channel dimension (axis {axis}, {fmt}) of value {value}",
    )  # fmt: skip
    return [Shape(dims)]


register_op(
    "BiasAdd",
    inputs=["value: T", "bias: T"],
    outputs=["output: T"],
    attrs=["T: {numeric}", _BIAS_FORMAT],
    shape=_bias_add_shape,
    doc="value + bias, the 1-D bias added along the channel dimension given by data_format.",
)


def _bias_axis(ctx, x) -> int:
    fmt = ctx.attrs["data_format"]
    if x.ndim < _min_bias_rank(fmt):
        raise ctx.fail(
            f"value must have rank at least {_min_bias_rank(fmt)} for {fmt}, got shape {list(x.shape)}"
        )
    return _channel_axis(fmt, x.ndim)


@kernel("BiasAdd")
def _bias_add(ctx, value, bias):
    if (value.ndim == 2 and bias.ndim == 1 and bias.shape[0] == value.shape[1] and value.nbytes < buffers.MIN_BYTES
            and ctx.attrs["data_format"] != "NCHW"):  # fmt: skip
        return value + bias  # a small [batch, channels] (a dense layer, an RNN cell): all checked
    axis = _bias_axis(ctx, value)
    if bias.ndim != 1 or bias.shape[0] != value.shape[axis]:
        raise ctx.fail(
            f"bias of shape {list(bias.shape)} does not match the channel dimension "
            f"(axis {axis}, {ctx.attrs['data_format']}) of value {list(value.shape)}"
        )
    if ctx.arena is not None and value.nbytes >= buffers.MIN_BYTES:
        out = ctx.empty(value.shape, value.dtype)
        if axis == value.ndim - 1:  # channels last: whole rows at a time (ops/wide_rows.py)
            return wide_rows.channel_op(ctx.xp, ctx.xp.add, value, bias, out)
        return ctx.xp.add(value, bias.reshape((-1,) + (1,) * (value.ndim - 1 - axis)), out=out)
    bias = bias.reshape((-1,) + (1,) * (value.ndim - 1 - axis))
    return value + bias


@gradient("BiasAdd")
def _bias_add_gradient(b, node, dys):
    return [dys[0], gu.emit(b, "BiasAddGrad", dys[0], data_format=node.attrs["data_format"])]


def _bias_add_grad_shape(ic: InferenceContext) -> list[Shape]:
    fmt = ic.attr("data_format")
    s = _rank_at_least(ic, 0, _min_bias_rank(fmt), f"out_backprop ({fmt})")
    return [Shape([None if s.rank is None else s[_channel_axis(fmt, s.rank)]])]


register_op(
    "BiasAddGrad",
    inputs=["out_backprop: T"],
    outputs=["output: T"],
    attrs=["T: {numeric}", _BIAS_FORMAT],
    shape=_bias_add_grad_shape,
    doc="The gradient of BiasAdd for the bias: out_backprop summed over all but the channel axis.",
)


@kernel("BiasAddGrad")
def _bias_add_grad(ctx, dy):
    if dy.ndim == 2 and ctx.attrs["data_format"] != "NCHW":  # [batch, channels], every dense layer
        axes: tuple[int, ...] = (0,)
    else:
        axes = _other_axes(dy.ndim, _bias_axis(ctx, dy))
    if axes[-1] == dy.ndim - 2:  # channels last: every other axis leads
        total = sum_leading(ctx.xp, dy, dy.ndim - 1)
        if total is not None:
            return total
    if type(dy) is np.ndarray:  # what dy.sum calls, without numpy's Python wrapper
        return np.add.reduce(dy, axes, dy.dtype)
    return dy.sum(axis=axes, dtype=dy.dtype)


@functools.lru_cache(maxsize=64)
def _other_axes(rank: int, axis: int) -> tuple[int, ...]:
    return tuple(i for i in range(rank) if i != axis)


@gradient("BiasAddGrad")
def _bias_add_grad_grad(b, node, dys):
    # The bias gradient sums over all but the channel axis: its gradient broadcasts back.
    (out_backprop,) = node.data_inputs
    grad = dys[0]
    if node.attrs["data_format"] == "NCHW":  # channels are not last: [C] -> [C, 1, ..., 1]
        grad = gu.emit(b, "Reshape", grad, _channels_first_shape(b, out_backprop))
    return [gu.emit(b, "BroadcastTo", grad, gu.shape_of(b, out_backprop))]


def _channels_first_shape(b, x: str) -> str:
    """[-1, 1, ..., 1] with one 1 per dimension of NCHW ``x`` after the channels."""
    rank = b.spec(x).shape.rank
    if rank is not None:
        return gu.const(b, [-1] + [1] * (rank - 2), "int32")
    after_channels = gu.emit(
        b, "Slice", gu.emit(b, "Shape", x), gu.const(b, [2], "int32"), gu.const(b, [-1], "int32")
    )
    ones = gu.emit(b, "OnesLike", after_channels)
    return gu.emit(b, "ConcatV2", gu.const(b, [-1], "int32"), ones, gu.const(b, 0, "int32"))


# --- InTopKV2 ---------------------------------------------------------------------------------


def _in_top_k_shape(ic: InferenceContext) -> list[Shape]:
    p = _with_rank(ic, 0, 2, "predictions")
    t = _with_rank(ic, 1, 1, "targets")
    _with_rank(ic, 2, 0, "k")
    return [
        Shape([_merge_dim(ic, p[0], t[0], f"predictions {p} and targets {t} disagree on the batch size")])
    ]


register_op(
    "InTopKV2",
    inputs=["predictions: float32", "targets: T", "k: T"],
    outputs=["precision: bool"],
    attrs=["T: {int32, int64} = int32"],
    shape=_in_top_k_shape,
    doc="Whether predictions[i, targets[i]] is among the k largest of row i: fewer than k "
    "classes score strictly higher. False for an out-of-range target or a non-finite row.",
)


@kernel("InTopKV2", host_inputs=[2])
def _in_top_k(ctx, predictions, targets, k):
    xp = ctx.xp
    if predictions.ndim != 2 or targets.ndim != 1 or predictions.shape[0] != targets.shape[0]:
        raise ctx.fail(
            f"predictions must be [batch, classes] and targets [batch], got {list(predictions.shape)} "
            f"and {list(targets.shape)}"
        )
    k = ctx.host(k)
    if k.ndim != 0:
        raise ctx.fail(f"k must be a scalar, got shape {list(k.shape)}")
    batch, classes = predictions.shape
    if classes == 0:
        return xp.zeros(batch, dtype=bool)
    valid = (targets >= 0) & (targets < classes)
    target_score = predictions[xp.arange(batch), xp.where(valid, targets, 0)]
    higher = xp.sum(predictions > target_score[:, None], axis=1)
    finite = xp.all(xp.isfinite(predictions), axis=1)
    return valid & finite & (higher < int(k))


not_differentiable("InTopKV2")
