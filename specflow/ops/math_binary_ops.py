"""Binary elementwise math ops with numpy broadcasting (Add, Sub, Mul, Div, Pow, Maximum, ...),
registered from one table, with their gradients (TensorFlow's math_grad.py). Part of the math
family: the shared helpers (output dtype pinning, broadcast and divisor checks) are in
``math_ops``."""

from __future__ import annotations

from specflow.graph import dtypes
from specflow.ops import grad_util as gu
from specflow.ops.inference import broadcast_shape
from specflow.ops.math_ops import (
    FP_STATE,
    QUIET_FP,
    _is_complex,
    _is_int,
    _out,
    check_broadcast,
    check_nonzero_divisor,
    quiet_fp,
    require_real,
    scalar,
    trunc_div,
)
from specflow.ops.registry import gradient, kernel, not_differentiable, register_op

# --- binary elementwise ops (broadcasting) ----------------------------------------------------


def _div(ctx, x, y):
    if _is_int(x):
        check_nonzero_divisor(ctx, y)
        return trunc_div(ctx.xp, x, y)
    return ctx.xp.true_divide(x, y)


def _floordiv(ctx, x, y):
    if _is_int(x):
        check_nonzero_divisor(ctx, y)
        return ctx.xp.floor_divide(x, y)
    return ctx.xp.floor(x / y)  # TF: floor(x / y), not numpy's fmod-based floor_divide


def _floormod(ctx, x, y):
    # numpy's remainder is TF's FloorMod: the result takes the divisor's sign.
    check_nonzero_divisor(ctx, y)
    return ctx.xp.remainder(x, y)


def _pow(ctx, x, y):
    if _is_int(y) and bool(ctx.xp.any(y < 0)):
        raise ctx.fail("Integers to negative integer powers are not allowed")
    return ctx.xp.power(x, y)


def _squared_difference(ctx, x, y):
    d = x - y
    return d * ctx.xp.conj(d) if _is_complex(d) else d * d


def _xp(name):
    """A binary kernel body that is just ``xp.<name>(x, y)``."""
    return lambda ctx, x, y: getattr(ctx.xp, name)(x, y)


_FLOAT_INT_COMPLEX = "float, int32, int64, complex"  # TF's BINARY_FEWER

# name, allowed T, body(ctx, x, y), kernel-only type restriction, doc
_BINARY = [
    ("Add", "numeric, string", _xp("add"), None, "x + y elementwise (strings concatenate)."),
    ("AddV2", "numeric", _xp("add"), None, "x + y elementwise."),
    ("Sub", "numeric", _xp("subtract"), None, "x - y elementwise."),
    ("Mul", "numeric", _xp("multiply"), None, "x * y elementwise."),
    ("Div", "numeric", _div, None, "x / y elementwise; integers truncate toward zero (C semantics)."),
    ("RealDiv", "numeric", _div, None, "x / y elementwise for real types (integers truncate like Div)."),
    ("FloorDiv", "numeric", _floordiv, dtypes.REAL, "floor(x / y) elementwise (integers floor)."),
    ("FloorMod", "real", _floormod, None, "x - floor(x / y) * y elementwise: the sign follows y."),
    ("Pow", "float, signed, complex", _pow, None, "x ** y elementwise."),
    ("Maximum", "real", _xp("maximum"), None, "max(x, y) elementwise (NaN propagates)."),
    ("Minimum", "real", _xp("minimum"), None, "min(x, y) elementwise (NaN propagates)."),
    (
        "SquaredDifference",
        _FLOAT_INT_COMPLEX,
        _squared_difference,
        None,
        "(x - y) * conj(x - y) elementwise.",
    ),
]


_DIVISIONS = {"Div", "RealDiv", "FloorDiv", "FloorMod", "Pow"}


def _register_binary(name, types, body, kernel_types, doc):
    register_op(
        name,
        inputs=["x: T", "y: T"],
        outputs=["z: T"],
        attrs=[f"T: {{{types}}}"],
        shape=broadcast_shape,
        doc=doc + " Broadcasts like numpy.",
    )

    # Only float math and integer division can warn (inf, nan, INT_MIN // -1): other integer
    # ops skip the errstate context, which costs more than a small op itself. The divisions
    # also check their divisor before computing, and a shape error must come first; the other
    # ops leave the (slow) broadcast check to when numpy refuses the shapes.
    divides = name in _DIVISIONS

    def run(ctx, x, y):
        # Equal shapes and scalars always broadcast: only other pairs need the check.
        if divides and x.shape != y.shape and x.ndim and y.ndim:
            check_broadcast(ctx, x, y)
        try:
            if (divides or x.dtype.kind in "fc") and FP_STATE.get() is not QUIET_FP:
                with quiet_fp():  # float x/0 is inf/nan silently, as in TF
                    return _out(ctx, body(ctx, x, y), x.dtype)
            # Nothing can warn, or the step is quiet already (see math_ops.QUIET_FP).
            return _out(ctx, body(ctx, x, y), x.dtype)
        except ValueError:
            check_broadcast(ctx, x, y)  # TF's message when the shapes are the cause
            raise

    kernel(name, **({"T": kernel_types} if kernel_types else {}))(run)


for _row in _BINARY:
    _register_binary(*_row)


def _pow_grads(b, x, y, z, dy):
    y_minus_1 = gu.emit(b, "Sub", y, scalar(b, 1, y))
    return gu.emit(b, "Mul", dy, gu.emit(b, "Mul", y, gu.emit(b, "Pow", x, y_minus_1))), _pow_dy(b, x, y, z, dy)


def _pow_dy(b, x, y, z, dy):
    # d(x**y)/dy = z * log(x), taken as 0 where x <= 0 (log undefined; TF does the same).
    pos = gu.emit(b, "Greater", x, scalar(b, 0, x))
    safe_x = gu.emit(b, "SelectV2", pos, x, gu.emit(b, "OnesLike", x))
    log_x = gu.emit(b, "SelectV2", pos, gu.emit(b, "Log", safe_x), gu.zeros_like(b, x))
    return gu.emit(b, "Mul", dy, gu.emit(b, "Mul", z, log_x))


def _select_by(compare):
    """Maximum/Minimum: dz goes to x where x wins (ties to x), to y elsewhere."""

    def grads(b, x, y, z, dy):
        xwins, zeros = gu.emit(b, compare, x, y), gu.zeros_like(b, dy)
        return gu.emit(b, "SelectV2", xwins, dy, zeros), gu.emit(b, "SelectV2", xwins, zeros, dy)

    return grads


def _squared_difference_grads(b, x, y, z, dy):
    dx = gu.emit(b, "Mul", gu.emit(b, "Mul", scalar(b, 2, dy), dy), gu.emit(b, "Sub", x, y))
    return dx, gu.emit(b, "Neg", dx)


def _div_grads(b, x, y, z, dy):
    neg_x_over_y2 = gu.emit(b, "RealDiv", gu.emit(b, "RealDiv", gu.emit(b, "Neg", x), y), y)
    return gu.emit(b, "RealDiv", dy, y), gu.emit(b, "Mul", dy, neg_x_over_y2)


# op -> (fn(b, x, y, z, dz) -> (dx, dy) at the broadcast shape, linear in complex too)
_BINARY_GRADS = {
    "Add": (lambda b, x, y, z, dy: (dy, dy), True),
    "AddV2": (lambda b, x, y, z, dy: (dy, dy), True),
    "Sub": (lambda b, x, y, z, dy: (dy, gu.emit(b, "Neg", dy)), True),
    "Mul": (lambda b, x, y, z, dy: (gu.emit(b, "Mul", dy, y), gu.emit(b, "Mul", x, dy)), False),
    "Div": (_div_grads, False),
    "RealDiv": (_div_grads, False),
    "FloorMod": (
        lambda b, x, y, z, dy: (dy, gu.emit(b, "Mul", dy, gu.emit(b, "Neg", gu.emit(b, "FloorDiv", x, y)))),
        False,
    ),
    "Pow": (_pow_grads, False),
    "Maximum": (_select_by("GreaterEqual"), False),
    "Minimum": (_select_by("LessEqual"), False),
    "SquaredDifference": (_squared_difference_grads, False),
}


def _register_binary_gradient(name, fn, linear):
    @gradient(name)
    def grad(b, node, dys):
        if not linear:
            require_real(node)
        x, y = node.data_inputs
        dx, dy = fn(b, x, y, node.name, dys[0])
        return [gu.sum_to(b, dx, x), gu.sum_to(b, dy, y)]  # undo broadcasting


for _name, (_fn, _linear) in _BINARY_GRADS.items():
    _register_binary_gradient(_name, _fn, _linear)
not_differentiable("FloorDiv")  # piecewise constant (TF returns None for both inputs)
