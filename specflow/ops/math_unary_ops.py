"""Unary elementwise math ops (Neg, Abs, Sqrt, Exp, Log, Sigmoid, Round, ...), registered from
one table, with their gradients (TensorFlow's math_grad.py). Part of the math family: the shared
helpers are in ``math_ops``."""

from __future__ import annotations

import numpy as np

from specflow.graph import dtypes
from specflow.ops import grad_util as gu
from specflow.ops.inference import unchanged_shape
from specflow.ops.math_ops import (
    FP_STATE,
    QUIET_FP,
    _is_complex,
    _is_int,
    _out,
    check_nonzero_divisor,
    quiet_fp,
    require_real,
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
    # exp of a non-positive number never overflows; pick the form that is exact on each side.
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _reciprocal(ctx, x):
    if _is_int(x):
        check_nonzero_divisor(ctx, x)
        return trunc_div(ctx.xp, ctx.xp.ones_like(x), x)
    return 1 / x


def _round(ctx, x):
    # Half to even (banker's rounding), as TF and numpy both do; integers are already round.
    return x if _is_int(x) else ctx.xp.around(x)


def _u(name):
    """A unary kernel body that is just ``xp.<name>(x)``."""
    return lambda ctx, x: getattr(ctx.xp, name)(x)


_UNARY_ALL = "float, signed, complex"  # TF's UNARY
_UNARY_FC = "float, complex"  # TF's UNARY_COMPLEX
_REAL_ROUNDABLE = dtypes.FLOATING | dtypes.SIGNED_INTEGER

# name, allowed T, body(ctx, x), output dtype (None: T), kernel-only type restriction, doc
_UNARY = [
    ("Neg", _UNARY_ALL, _u("negative"), None, None, "-x elementwise."),
    ("Abs", "float, signed", _u("abs"), None, None, "|x| elementwise."),
    ("Square", _UNARY_ALL, lambda ctx, x: x * x, None, None, "x * x elementwise."),
    ("Sqrt", _UNARY_FC, _u("sqrt"), None, None, "sqrt(x) elementwise."),
    ("Rsqrt", _UNARY_FC, lambda ctx, x: 1 / ctx.xp.sqrt(x), None, None, "1 / sqrt(x) elementwise."),
    ("Exp", _UNARY_FC, _u("exp"), None, None, "e ** x elementwise."),
    ("Log", _UNARY_FC, _u("log"), None, None, "Natural logarithm elementwise."),
    ("Log1p", _UNARY_FC, _u("log1p"), None, None, "log(1 + x) elementwise, accurate near 0."),
    ("Tanh", _UNARY_FC, _u("tanh"), None, None, "Hyperbolic tangent elementwise."),
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
]


# Unary ops that never overflow or leave their domain, on any type.
_NEVER_WARN = {"Neg", "Floor", "Ceil", "IsNan", "IsFinite"}


def _register_unary(name, types, body, out_dtype, kernel_types, doc):
    register_op(
        name,
        inputs=["x: T"],
        outputs=["y: bool" if out_dtype is np.bool_ else "y: T"],
        attrs=[f"T: {{{types}}}"],
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

    kernel(name, **({"T": kernel_types} if kernel_types else {}))(run)


for _row in _UNARY:
    _register_unary(*_row)


def _mul(b, *ts):
    return gu.emit(b, "Mul", *ts)


# op -> fn(b, x, y, dy) -> dx, where y is the op's output (TF's math_grad.py, real inputs)
_UNARY_GRADS = {
    "Abs": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "Sign", x)),
    "Square": lambda b, x, y, dy: _mul(b, dy, _mul(b, x, scalar(b, 2, x))),
    "Sqrt": lambda b, x, y, dy: gu.emit(b, "RealDiv", _mul(b, dy, scalar(b, 0.5, y)), y),
    "Rsqrt": lambda b, x, y, dy: _mul(b, dy, _mul(b, _mul(b, gu.emit(b, "Square", y), y), scalar(b, -0.5, y))),
    "Exp": lambda b, x, y, dy: _mul(b, dy, y),
    "Log": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "Reciprocal", x)),
    "Log1p": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "Reciprocal", gu.emit(b, "AddV2", scalar(b, 1, x), x))),
    "Tanh": lambda b, x, y, dy: gu.emit(b, "TanhGrad", y, dy),
    "Sigmoid": lambda b, x, y, dy: gu.emit(b, "SigmoidGrad", y, dy),
    "Sin": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "Cos", x)),
    "Cos": lambda b, x, y, dy: _mul(b, gu.emit(b, "Neg", dy), gu.emit(b, "Sin", x)),
    "Reciprocal": lambda b, x, y, dy: _mul(b, dy, gu.emit(b, "Neg", gu.emit(b, "Square", y))),
}


def _register_unary_gradient(name, fn):
    @gradient(name)
    def grad(b, node, dys):
        require_real(node)
        return [fn(b, node.data_inputs[0], node.name, dys[0])]


for _name, _fn in _UNARY_GRADS.items():
    _register_unary_gradient(_name, _fn)


@gradient("Neg")
def _neg_grad(b, node, dys):
    return [gu.emit(b, "Neg", dys[0])]


@gradient("Sign")
def _sign_grad(b, node, dys):
    return [gu.zeros_like(b, node.data_inputs[0])]  # piecewise constant: zeros, as in TF


# Piecewise constant or boolean results: no gradient flows (TF returns None for these too).
not_differentiable("Floor", "Ceil", "Round", "IsNan", "IsFinite")
