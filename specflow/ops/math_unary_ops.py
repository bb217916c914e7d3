"""Unary elementwise math ops (Neg, Abs, Sqrt, Exp, Log, Sigmoid, Round, ...), registered from
one table, with their gradients (TensorFlow's math_grad.py). Part of the math family: the shared
helpers are in ``math_ops``."""

from __future__ import annotations

import functools

import numpy as np

from specflow.graph import dtypes
from specflow.ops import grad_util as gu
from specflow.ops.eigen_math import exp_f32, tanh_f32
from specflow.ops.inference import unchanged_shape
from specflow.ops.math_ops import (
    FP_STATE,
    QUIET_FP,
    _is_complex,
    _is_int,
    _out,
    check_nonzero_divisor,
    quiet_fp,
    scalar,
    trunc_div,
)
from specflow.ops.registry import gradient, kernel, not_differentiable, register_op

# --- unary elementwise ops (shape unchanged) --------------------------------------------------


def _sign(ctx, x):
    if _is_complex(x):  # TF: x / |x|, 0 at 0
        a = ctx.xp.abs(x)
        return ctx.xp.where(a == 0, 0, x / ctx.xp.where(a == 0, 1, a))
    return ctx.xp.sign(x)


def _sigmoid(ctx, x):
    xp = ctx.xp
    if _is_complex(x):
        return 1 / (1 + xp.exp(-x))
    if x.dtype == np.float16:
        # TF's half kernel: e / (1 + e) with e = exp(x), each step rounded to half (1 where e
        # overflows); an exactly rounded logistic differs from it by an ulp in 16% of inputs.
        with np.errstate(over="ignore", invalid="ignore"):
            e = xp.exp(x)
            return xp.where(xp.isinf(e), np.float16(1), e / (np.float16(1) + e))
    if ctx.attrs.get("T") is dtypes.bfloat16 and xp is np:
        # The same in bfloat16 (widened to float32 by the registry): Eigen's exp, the sum and the
        # quotient each rounded to bfloat16 (bit for bit TF's; a once-rounded logistic is 2 ulps off).
        bf16 = dtypes.bfloat16.numpy
        with np.errstate(over="ignore", invalid="ignore"):
            e = exp_f32(x).astype(bf16).astype(np.float32)
            q = (e / (np.float32(1) + e).astype(bf16).astype(np.float32)).astype(bf16).astype(np.float32)
        return np.where(np.isinf(e), np.float32(1), q)
    # exp of a non-positive number never overflows; pick the form that is exact on each side.
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _tanh(ctx, x):
    # TF's float32 (and half, via float32) tanh is Eigen's rational approximation, which differs
    # from numpy's correctly rounded one in the last bit for most inputs; its gradient
    # 1 - y * y near saturation magnifies that (0.4% at x = -5.5).
    # float32 keeps numpy's (correctly rounded; Eigen's polynomial in numpy costs 8-35x numpy's
    # SIMD tanh, which an RNN's every step pays): at most 2 ulps from TF's. The half types take
    # Eigen's, then one rounding, bit for bit TF's (bfloat16 arrives here as float32: its T says).
    half = x.dtype == np.float16 or ctx.attrs.get("T") in (dtypes.bfloat16, dtypes.float16)
    if ctx.xp is np and half:
        return tanh_f32(x.astype(np.float32, copy=False)).astype(x.dtype, copy=False)
    return ctx.xp.tanh(x)


def _reciprocal(ctx, x):
    if _is_int(x):
        check_nonzero_divisor(ctx, x)
        return trunc_div(ctx.xp, ctx.xp.ones_like(x), x)
    return 1 / x


def _round(ctx, x):
    # Half to even (banker's rounding), as TF and numpy both do; integers are already round.
    return x if _is_int(x) else ctx.xp.around(x)


def _special(ctx, name):
    """scipy.special's (or on GPU cupyx.scipy.special's) ``name``, imported when first used."""
    if ctx.xp is np:
        from scipy import special
    else:  # pragma: no cover - needs a GPU
        from cupyx.scipy import special
    return getattr(special, name)


def _sp(name):
    """A unary kernel body that is ``special.<name>(x)``."""
    return lambda ctx, x: _special(ctx, name)(x)


def _erf(ctx, x):
    # TF's float64 Erf (Eigen's double rational approximation) is NaN at +-inf; its float16 and
    # float32 kernels give +-1, as scipy does.
    y = _special(ctx, "erf")(x)
    return ctx.xp.where(ctx.xp.isinf(x), np.nan, y) if x.dtype == np.float64 else y


@functools.cache
def _host_value_at_inf(name: str, dtype) -> float:
    from scipy import special

    with np.errstate(all="ignore"):
        return float(getattr(special, name)(np.array(np.inf, dtype)))


def _sp_tf(name, below, zero=None, pos_inf=None):
    """``special.<name>(x)`` with TF's values off scipy's domain (its Cephes ports, seen in TF
    2.21): ``below`` for every x < 0 (-inf included, where scipy gives NaN or continues the
    function), ``zero`` at +-0 in float16/float32 (if not None), ``pos_inf`` at +inf."""
    def body(ctx, x):
        xp = ctx.xp
        y = _special(ctx, name)(x)
        if xp is not np and pos_inf is None:  # cupyx's value at +inf may not be Cephes's (K1e: NaN, Y0: 0)
            y = xp.where(xp.isposinf(x), xp.asarray(_host_value_at_inf(name, x.dtype), x.dtype), y)
        y = xp.where(x < 0, xp.asarray(below, x.dtype), y)
        if zero is not None and x.dtype != np.float64:
            y = xp.where(x == 0, xp.asarray(zero, x.dtype), y)
        if pos_inf is not None:
            y = xp.where(xp.isposinf(x), xp.asarray(pos_inf, x.dtype), y)
        return y
    return body


def _lgamma(ctx, x):
    # TF's Lgamma(-inf) is +inf (log|Gamma| grows without bound both ways); scipy says -inf
    xp = ctx.xp
    return xp.where(xp.isneginf(x), xp.asarray(np.inf, x.dtype), _special(ctx, "gammaln")(x))


def _digamma(ctx, x):
    # TF's Digamma is NaN at +-0 (a pole whose sign Eigen does not pick); scipy gives -+inf
    xp = ctx.xp
    return xp.where(x == 0, xp.asarray(np.nan, x.dtype), _special(ctx, "digamma")(x))


def _u(name):
    """A unary kernel body that is just ``xp.<name>(x)``."""
    return lambda ctx, x: getattr(ctx.xp, name)(x)


_UNARY_ALL = "float, signed, complex"  # TF's UNARY
_UNARY_FC = "float, complex"  # TF's UNARY_COMPLEX
_FLOAT_COMPLEX = dtypes.FLOATING | dtypes.COMPLEX
_REAL_ROUNDABLE = dtypes.FLOATING | dtypes.SIGNED_INTEGER

# name, allowed T, body(ctx, x), output dtype (None: T), kernel-only type restriction, doc
_UNARY = [
    ("Neg", _UNARY_ALL, _u("negative"), None, None, "-x elementwise."),
    ("Abs", "float, signed", _u("abs"), None, None, "|x| elementwise."),
    ("Square", "float, int, complex", lambda ctx, x: x * x, None, None, "x * x elementwise (unsigned too, wrapping)."),
    ("Sqrt", _UNARY_FC, _u("sqrt"), None, None, "sqrt(x) elementwise."),
    ("Rsqrt", _UNARY_FC, lambda ctx, x: 1 / ctx.xp.sqrt(x), None, None, "1 / sqrt(x) elementwise."),
    ("Exp", _UNARY_FC, _u("exp"), None, None, "e ** x elementwise."),
    ("Log", _UNARY_FC, _u("log"), None, None, "Natural logarithm elementwise."),
    ("Log1p", _UNARY_FC, _u("log1p"), None, None, "log(1 + x) elementwise, accurate near 0."),
    ("Tanh", _UNARY_FC, _tanh, None, None, "Hyperbolic tangent elementwise."),
    ("Sigmoid", _UNARY_FC, _sigmoid, None, None, "1 / (1 + exp(-x)) elementwise."),
    ("Sin", _UNARY_FC, _u("sin"), None, None, "sin(x) elementwise."),
    ("Cos", _UNARY_FC, _u("cos"), None, None, "cos(x) elementwise."),
    ("Sign", _UNARY_ALL, _sign, None, None, "-1, 0 or 1 by the sign of x (x / |x| for complex)."),
    ("Floor", "float", _u("floor"), None, None, "Largest integer not greater than x."),
    ("Ceil", "float", _u("ceil"), None, None, "Smallest integer not less than x."),
    ("Round", _UNARY_ALL, _round, None, _REAL_ROUNDABLE, "Nearest integer, halves to even."),
    ("Reciprocal", _UNARY_ALL, _reciprocal, None, None, "1 / x elementwise (integers truncate)."),
    ("IsNan", "float", _u("isnan"), np.bool_, None, "Whether each element is NaN."),
    ("IsFinite", "float", _u("isfinite"), np.bool_, None, "Whether each element is finite."),
    ("IsInf", "float", _u("isinf"), np.bool_, None, "Whether each element is +inf or -inf."),
    ("Rint", "float", _u("rint"), None, None, "Nearest integer, halves to even."),
    ("Conj", "complex", _u("conj"), None, None, "The complex conjugate elementwise."),
    ("Tan", _UNARY_FC, _u("tan"), None, None, "tan(x) elementwise."),
    # TF's OpDefs allow integers (UNARY) but it registers float and complex kernels only.
    ("Asin", _UNARY_ALL, _u("arcsin"), None, _FLOAT_COMPLEX, "The inverse sine elementwise."),
    ("Acos", _UNARY_ALL, _u("arccos"), None, _FLOAT_COMPLEX, "The inverse cosine elementwise."),
    ("Atan", _UNARY_ALL, _u("arctan"), None, _FLOAT_COMPLEX, "The inverse tangent elementwise."),
    ("Sinh", _UNARY_FC, _u("sinh"), None, None, "Hyperbolic sine elementwise."),
    ("Cosh", _UNARY_FC, _u("cosh"), None, None, "Hyperbolic cosine elementwise."),
    ("Asinh", _UNARY_FC, _u("arcsinh"), None, None, "Inverse hyperbolic sine elementwise."),
    ("Acosh", _UNARY_FC, _u("arccosh"), None, None, "Inverse hyperbolic cosine elementwise (nan below 1)."),
    ("Atanh", _UNARY_FC, _u("arctanh"), None, None, "Inverse hyperbolic tangent elementwise."),
    ("Erf", "float", _erf, None, None, "The Gauss error function elementwise."),
    ("Erfc", "float", _sp("erfc"), None, None, "1 - erf(x) elementwise, accurate for large x."),
    ("Lgamma", "float", _lgamma, None, None, "log |Gamma(x)| elementwise."),
    ("Digamma", "float", _digamma, None, None, "The derivative of Lgamma elementwise (psi)."),
    ("Erfinv", "float", _sp("erfinv"), None, None, "The inverse of Erf elementwise."),
    ("Ndtri", "float", _sp("ndtri"), None, None, "The inverse of the standard normal CDF elementwise."),
    ("BesselI0e", "float", _sp("i0e"), None, None, "exp(-|x|) I0(x): the scaled modified Bessel function of order 0."),
    ("BesselI1e", "float", _sp("i1e"), None, None, "exp(-|x|) I1(x): the scaled modified Bessel function of order 1."),
    ("Expm1", _UNARY_FC, _u("expm1"), None, None, "exp(x) - 1 elementwise, accurate near 0."),
    # tf.math.special: scipy.special's functions, which TF's kernels (Cephes) match.
    ("BesselI0", "float", _sp("i0"), None, None, "I0(x): the modified Bessel function of the first kind, order 0."),
    ("BesselI1", "float", _sp("i1"), None, None, "I1(x): the modified Bessel function of the first kind, order 1."),
    ("BesselK0", "float", _sp_tf("k0", np.inf), None, None, "K0(x): the modified Bessel function of the second kind, order 0."),
    ("BesselK1", "float", _sp_tf("k1", np.inf), None, None, "K1(x): the modified Bessel function of the second kind, order 1."),
    ("BesselK0e", "float", _sp_tf("k0e", np.inf), None, None, "exp(x) K0(x): the scaled K0."),
    ("BesselK1e", "float", _sp_tf("k1e", np.inf), None, None, "exp(x) K1(x): the scaled K1."),
    ("BesselJ0", "float", _sp("j0"), None, None, "J0(x): the Bessel function of the first kind, order 0."),
    ("BesselJ1", "float", _sp("j1"), None, None, "J1(x): the Bessel function of the first kind, order 1."),
    ("BesselY0", "float", _sp_tf("y0", -np.inf), None, None, "Y0(x): the Bessel function of the second kind, order 0."),
    ("BesselY1", "float", _sp_tf("y1", -np.inf, zero=np.nan), None, None, "Y1(x): the Bessel function of the second kind, order 1."),
    ("Dawsn", "float", _sp("dawsn"), None, None, "Dawson's integral exp(-x^2) * integral of exp(t^2) from 0 to x."),
    ("Expint", "float", _sp_tf("expi", np.nan, pos_inf=np.nan), None, None, "The exponential integral Ei(x)."),
    ("FresnelCos", "float", lambda ctx, x: _special(ctx, "fresnel")(x)[1], None, None,
     "The Fresnel integral C(x) = integral of cos(pi t^2 / 2) from 0 to x."),
    ("FresnelSin", "float", lambda ctx, x: _special(ctx, "fresnel")(x)[0], None, None,
     "The Fresnel integral S(x) = integral of sin(pi t^2 / 2) from 0 to x."),
    ("Spence", "float", _sp("spence"), None, None, "Spence's integral: integral of log(t) / (1 - t) from 1 to x."),
]


# Unary ops that never overflow or leave their domain, on any type.
# scipy.special functions that cupyx.scipy.special (cupy 14) lacks: CPU kernels only, so the placer
# keeps them on the host, as TF does an op without a GPU kernel.
_HOST_ONLY = {"Dawsn", "FresnelCos", "FresnelSin", "Spence"}

_NEVER_WARN = {"Neg", "Floor", "Ceil", "IsNan", "IsFinite", "IsInf", "Rint", "Conj"}


def _register_unary(name, types, body, out_dtype, kernel_types, doc):
    register_op(
        name,
        inputs=["input: T"] if name == "Conj" else ["x: T"],  # TF's names
        outputs=["y: bool" if out_dtype is np.bool_ else "output: T" if name == "Conj" else "y: T"],
        attrs=[f"T: {{{types}}}" + (" = complex64" if name == "Conj" else "")],
        shape=unchanged_shape,
        doc=doc,
    )

    quiet = name in _NEVER_WARN

    def run(ctx, x):
        # Nothing to silence, or the step is quiet already (math_ops.QUIET_FP): no quiet_fp.
        if quiet or x.dtype.kind in "iub" or FP_STATE.get() is QUIET_FP:
            return _out(ctx, body(ctx, x), out_dtype or x.dtype)
        with quiet_fp():  # log(0), sqrt(-1), ... give inf/nan silently, as in TF
            return _out(ctx, body(ctx, x), out_dtype or x.dtype)

    devices = ("CPU",) if name in _HOST_ONLY else ("CPU", "GPU")
    kernel(name, devices, **({"T": kernel_types} if kernel_types else {}))(run)


for _row in _UNARY:
    _register_unary(*_row)


def _mul(b, *ts):
    return gu.emit(b, "Mul", *ts)


def _one_minus_square(b, x):
    return gu.emit(b, "Sub", scalar(b, 1, x), gu.emit(b, "Square", x))


_TWO_OVER_ROOT_PI = 2 / np.sqrt(np.pi)

# op -> fn(b, x, y, dy) -> dx, where y is the op's output (TF's math_grad.py). For complex x the
# gradient function sees conj(x) and conj(y): TF's convention, the gradient of a holomorphic f is
# dy * conj(f'(x)), and f'(conj(x)) = conj(f'(x)) for these functions.
_UNARY_GRADS = {
    "Abs": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "Sign", x)),
    "Square": lambda b, x, y, dy: _mul(b, dy, _mul(b, x, scalar(b, 2, x))),
    "Exp": lambda b, x, y, dy: _mul(b, dy, y),
    "Log": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "Reciprocal", x)),
    "Log1p": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "Reciprocal", gu.emit(b, "AddV2", scalar(b, 1, x), x))),
    "Tanh": lambda b, x, y, dy: gu.emit(b, "TanhGrad", y, dy),
    "Sigmoid": lambda b, x, y, dy: gu.emit(b, "SigmoidGrad", y, dy),
    "Sin": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "Cos", x)),
    "Cos": lambda b, x, y, dy: _mul(b, gu.emit(b, "Neg", dy), gu.emit(b, "Sin", x)),
    "Tan": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "Square", gu.emit(b, "Reciprocal", gu.emit(b, "Cos", x)))),
    "Asin": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "Rsqrt", _one_minus_square(b, x))),
    "Acos": lambda b, x, y, dy: _mul(b, gu.emit(b, "Neg", dy), gu.emit(b, "Rsqrt", _one_minus_square(b, x))),
    "Atan": lambda b, x, y, dy: _mul(
        b, dy, gu.emit(b, "Reciprocal", gu.emit(b, "AddV2", scalar(b, 1, x), gu.emit(b, "Square", x)))
    ),
    "Sinh": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "Cosh", x)),
    "Cosh": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "Sinh", x)),
    "Asinh": lambda b, x, y, dy: gu.emit(b, "RealDiv", dy, gu.emit(b, "Cosh", y)),
    "Acosh": lambda b, x, y, dy: gu.emit(b, "RealDiv", dy, gu.emit(b, "Sinh", y)),
    "Atanh": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "Reciprocal", _one_minus_square(b, x))),
    "Erf": lambda b, x, y, dy: _mul(
        b, dy, _mul(b, scalar(b, _TWO_OVER_ROOT_PI, x), gu.emit(b, "Exp", gu.emit(b, "Neg", gu.emit(b, "Square", x))))
    ),
    "Erfc": lambda b, x, y, dy: _mul(
        b, dy, _mul(b, scalar(b, -_TWO_OVER_ROOT_PI, x), gu.emit(b, "Exp", gu.emit(b, "Neg", gu.emit(b, "Square", x))))
    ),
    "Expm1": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "Exp", x)),
    "Lgamma": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "Digamma", x)),
    "Digamma": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "Polygamma", scalar(b, 1, x), x)),
    "Erfinv": lambda b, x, y, dy: _mul(b, dy, _mul(b, scalar(b, np.sqrt(np.pi) / 2, x), gu.emit(b, "Exp", gu.emit(b, "Square", y)))),
    "Ndtri": lambda b, x, y, dy: _mul(
        b, dy, _mul(b, scalar(b, np.sqrt(2 * np.pi), x), gu.emit(b, "Exp", _mul(b, gu.emit(b, "Square", y), scalar(b, 0.5, x))))
    ),
    "BesselI0e": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "Sub", gu.emit(b, "BesselI1e", x), _mul(b, gu.emit(b, "Sign", x), y))),
    "BesselI1e": lambda b, x, y, dy: _mul(b, dy, _bessel_i1e_slope(b, x, y)),
    # tf.math.special's gradients (TF's special_math_ops.py)
    "BesselI0": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "BesselI1", x)),
    "BesselI1": lambda b, x, y, dy: _mul(b, dy, _at_zero_half(b, x, gu.emit(b, "Sub", gu.emit(b, "BesselI0", x), _div(b, y, x)))),
    "BesselK0": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "Neg", gu.emit(b, "BesselK1", x))),
    "BesselK0e": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "Sub", y, gu.emit(b, "BesselK1e", x))),
    "BesselK1": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "Sub", gu.emit(b, "Neg", gu.emit(b, "BesselK0", x)), _div(b, y, x))),
    "BesselK1e": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "Sub", _mul(b, y, gu.emit(b, "Sub", scalar(b, 1, x),
                                                                                         gu.emit(b, "Reciprocal", x))),
                                                         gu.emit(b, "BesselK0e", x))),
    "BesselJ0": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "Neg", gu.emit(b, "BesselJ1", x))),
    "BesselJ1": lambda b, x, y, dy: _mul(b, dy, _at_zero_half(b, x, gu.emit(b, "Sub", gu.emit(b, "BesselJ0", x), _div(b, y, x)))),
    "BesselY0": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "Neg", gu.emit(b, "BesselY1", x))),
    "BesselY1": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "Sub", gu.emit(b, "BesselY0", x), _div(b, y, x))),
    "Dawsn": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "Sub", scalar(b, 1, x), _mul(b, _mul(b, scalar(b, 2, x), x), y))),
    "Expint": lambda b, x, y, dy: _mul(b, dy, _div(b, gu.emit(b, "Exp", x), x)),
    "FresnelCos": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "Cos", _mul(b, scalar(b, np.pi / 2, x), gu.emit(b, "Square", x)))),
    "FresnelSin": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "Sin", _mul(b, scalar(b, np.pi / 2, x), gu.emit(b, "Square", x)))),
    "Spence": lambda b, x, y, dy: _mul(b, dy, gu.emit(
        b, "SelectV2", gu.emit(b, "Equal", x, scalar(b, 1, x)), gu.emit(b, "Neg", gu.emit(b, "OnesLike", x)),
        _div(b, gu.emit(b, "Log", x), gu.emit(b, "Sub", scalar(b, 1, x), x)))),
}


def _div(b, x, y):
    return gu.emit(b, "RealDiv", x, y)


def _at_zero_half(b, x, slope):
    """``slope`` with 1/2 where x is 0 (the limit TF's BesselI1/J1 gradients give there)."""
    zero = gu.emit(b, "Equal", x, scalar(b, 0, x))
    return gu.emit(b, "SelectV2", zero, gu.emit(b, "Mul", gu.emit(b, "OnesLike", x), scalar(b, 0.5, x)), slope)


def _bessel_i1e_slope(b, x, y):
    # i0e(x) - y (sign(x) + 1 / x), and its limit 1/2 at x = 0 (as TF's, for |x| tiny).
    tiny = gu.emit(b, "Less", gu.emit(b, "Abs", x), scalar(b, np.finfo(b.spec(x).dtype.numpy).tiny, x))
    safe = gu.emit(b, "SelectV2", tiny, gu.emit(b, "OnesLike", x), x)
    slope = gu.emit(b, "Sub", gu.emit(b, "BesselI0e", safe),
                    _mul(b, y, gu.emit(b, "AddV2", gu.emit(b, "Sign", safe), gu.emit(b, "Reciprocal", safe))))  # fmt: skip
    return gu.emit(b, "SelectV2", tiny, gu.emit(b, "Mul", gu.emit(b, "OnesLike", x), scalar(b, 0.5, x)), slope)


def _register_unary_gradient(name, fn):
    @gradient(name)
    def grad(b, node, dys):
        x, y = node.data_inputs[0], node.name
        if b.spec(x).dtype.is_complex:  # (TanhGrad and SigmoidGrad get conj(y), as from TF's gradients)
            x, y = gu.emit(b, "Conj", x), gu.emit(b, "Conj", y)
        return [fn(b, x, y, dys[0])]


for _name, _fn in _UNARY_GRADS.items():
    _register_unary_gradient(_name, _fn)


def _register_grad_op_gradient(name: str, grad_op: str) -> None:
    """TF's gradient of Sqrt, Rsqrt and Reciprocal: its SqrtGrad/RsqrtGrad/ReciprocalGrad of
    the output (math_grad_ops.py; the kernel conjugates). Those give 0 where dy is 0: the
    usual guard ``where(x > 0, sqrt(x), 0)`` has gradient 0, not NaN, at x <= 0."""

    @gradient(name)
    def grad(b, node, dys):
        return [gu.emit(b, grad_op, node.name, dys[0])]


for _name in ("Sqrt", "Rsqrt", "Reciprocal"):
    _register_grad_op_gradient(_name, _name + "Grad")


@gradient("Neg")
def _neg_grad(b, node, dys):
    return [gu.emit(b, "Neg", dys[0])]


@gradient("Conj")
def _conj_grad(b, node, dys):
    return [gu.emit(b, "Conj", dys[0])]


@gradient("Sign")
def _sign_grad(b, node, dys):
    return [gu.zeros_like(b, node.data_inputs[0])]  # piecewise constant: zeros, as in TF


# Piecewise constant or boolean results: no gradient flows (TF returns None for these too).
not_differentiable("Floor", "Ceil", "Round", "Rint", "IsNan", "IsFinite", "IsInf")
