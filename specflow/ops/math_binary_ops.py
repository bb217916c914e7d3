"""Binary elementwise math ops with numpy broadcasting (Add, Sub, Mul, Div, Pow, Maximum, ...),
registered from one table, with their gradients (TensorFlow's math_grad.py). Part of the math
family: the shared helpers (output dtype pinning, broadcast and divisor checks) are in
``math_ops``."""

from __future__ import annotations

import numpy as np

from specflow.graph import dtypes
from specflow.ops import buffers, wide_rows
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
    scalar,
    trunc_div,
)
from specflow.ops.registry import gradient, kernel, not_differentiable, register_op

# --- binary elementwise ops (broadcasting) ----------------------------------------------------


def _div(ctx, x, y):
    if _is_int(x):
        check_nonzero_divisor(ctx, y, x)
        return trunc_div(ctx.xp, x, y)
    return ctx.xp.true_divide(x, y)


def _floordiv(ctx, x, y):
    if _is_int(x):
        check_nonzero_divisor(ctx, y, x)
        return ctx.xp.floor_divide(x, y)
    return ctx.xp.floor(_quotient_in_t(ctx, x, y))  # TF: floor(x / y), not numpy's fmod-based floor_divide


def _quotient_in_t(ctx, x, y):
    """x / y as TF's FloorDiv floors it and TruncateDiv truncates it: rounded to T (a bfloat16
    kernel sees float32, registry's _in_float32), denormals flushed to zero (floor(-1e-39) would
    be -1 where TF gives -0)."""
    q = x / y
    if q.dtype in (np.float32, np.float64):  # a denormal quotient is 0 on TF's flush-to-zero CPUs
        q = ctx.xp.where(ctx.xp.abs(q) < np.finfo(q.dtype).tiny, q * 0, q)
    if ctx.attrs.get("T") is dtypes.bfloat16:
        q = q.astype(dtypes.bfloat16.numpy).astype(q.dtype)
    return q


def _floormod(ctx, x, y):
    # numpy's remainder is TF's FloorMod on integers: the result takes the divisor's sign.
    check_nonzero_divisor(ctx, y, x)
    if x.dtype.kind != "f":
        return ctx.xp.remainder(x, y)
    # TF's float rule: fmod, moved into the divisor's sign unless it is 0 (so an exact multiple
    # keeps the dividend's zero: floormod(1, -0.5) is 0.0 where numpy's remainder gives -0.0).
    r = ctx.xp.fmod(x, y)
    return ctx.xp.where((r != 0) & ((y < 0) != (r < 0)), r + y, r)


def _pow(ctx, x, y):
    if _is_int(y) and x.size and bool(ctx.xp.any(y < 0)):  # per element computed, as TF
        raise ctx.fail("Integers to negative integer powers are not allowed")
    return ctx.xp.power(x, y)


def _squared_difference(ctx, x, y):
    d = x - y
    if ctx.attrs.get("T") is dtypes.bfloat16:  # Eigen rounds the bfloat16 difference before squaring
        d = d.astype(dtypes.bfloat16.numpy).astype(d.dtype)
    if not _is_complex(d):
        return d * d
    # Eigen's v * conj(v) part by part, each product rounded on its own: the imaginary part is
    # re*(-im) + im*re, exactly 0 for finite v (numpy's complex multiply may fuse it to a rounding residue).
    re, im = d.real, d.imag
    out = ctx.xp.empty_like(d)
    out.real = re * re - im * -im
    out.imag = re * -im + im * re
    return out


def _div_no_nan(ctx, x, y):
    # 0 wherever y is 0, even for x = 0, inf or nan (the divisor is swapped out before dividing).
    zero = y == 0
    return ctx.xp.where(zero, 0, x / ctx.xp.where(zero, 1, y))


def _mul_no_nan(ctx, x, y):
    return ctx.xp.where(y == 0, 0, x * y)  # 0 wherever y is 0, even for x = inf or nan


def _xlogy(ctx, x, y):
    return ctx.xp.where(x == 0, 0, x * ctx.xp.log(y))  # 0 wherever x is 0, even for y = 0


def _xlog1py(ctx, x, y):
    return ctx.xp.where(x == 0, 0, x * ctx.xp.log1p(y))  # 0 wherever x is 0, even for y = -1


def _polygamma(ctx, a, x):
    """The a-th derivative of Digamma at x; nan where a is not a whole number >= 0. As TF's:
    Digamma for a = 0, else (-1)^(a+1) a! Zeta(a + 1, x), with Zeta's domain (so at x = 0, -1, ...
    inf for odd a, nan for even a; an infinite a gives inf for x <= 1, nan above)."""
    from specflow.ops.math_unary_ops import _digamma, _special
    from specflow.ops.special_function_ops import _zeta

    xp = ctx.xp
    a, x = xp.broadcast_arrays(a, x)
    sign = xp.where(xp.fmod(a, 2) == 0, -1.0, 1.0).astype(x.dtype)
    rest = sign * xp.exp(_special(ctx, "gammaln")(a + 1)) * _zeta(ctx, a + 1, x)  # (float kernels run quiet)
    out = xp.where(a == 0, _digamma(ctx, x), rest)
    return xp.where((xp.floor(a) != a) | (a < 0), xp.nan, out).astype(x.dtype)


def _xdivy(ctx, x, y):
    return ctx.xp.where(x == 0, 0, x / y)  # 0 wherever x is 0, even for y = 0


def _truncate_div(ctx, x, y):
    check_nonzero_divisor(ctx, y, x)
    if x.dtype.kind == "f":  # trunc(x / y): TF's float kernel (inf and nan as the division gives them)
        return ctx.xp.trunc(_quotient_in_t(ctx, x, y))
    return trunc_div(ctx.xp, x, y)


def _truncate_mod(ctx, x, y):
    # C's % and fmod: the remainder takes the dividend's sign (numpy's fmod is exactly that).
    check_nonzero_divisor(ctx, y, x)
    return ctx.xp.fmod(x, y)


def _xp(name):
    """A binary kernel body that is just ``xp.<name>(x, y)``."""
    return lambda ctx, x, y: getattr(ctx.xp, name)(x, y)


_FLOAT_INT_COMPLEX = "float, int32, int64, complex"  # TF's BINARY_FEWER
_ALL_DIV = "float, int8, int16, int32, int64, uint8, uint16, uint32, uint64, complex"  # TF's BINARY_MORE

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
    ("Atan2", "float", _xp("arctan2"), None, "The angle of the point (x, y) with x the second input: atan(y / x) "
     "in the right quadrant (the first input is y)."),
    ("DivNoNan", "float, complex", _div_no_nan, None, "x / y elementwise, 0 wherever y is 0."),
    ("MulNoNan", "float, complex", _mul_no_nan, None, "x * y elementwise, 0 wherever y is 0 (even if x is inf or nan)."),
    ("Xlogy", "float, complex", _xlogy, None, "x * log(y) elementwise, 0 wherever x is 0."),
    ("Xdivy", "float, complex", _xdivy, None, "x / y elementwise, 0 wherever x is 0."),
    ("Xlog1py", "float, complex", _xlog1py, None, "x * log1p(y) elementwise, 0 wherever x is 0."),
    ("NextAfter", "float32, float64", lambda ctx, x, y: ctx.xp.nextafter(x, y), None,
     "The next representable value after x in the direction of y, elementwise (x1, x2 in TF)."),
    ("Polygamma", "float", _polygamma, None, "The a-th derivative of Digamma at x (Digamma's gradient "
     "is Polygamma(1, x)); nan where a is not a whole number >= 0."),
    ("TruncateDiv", _ALL_DIV, _truncate_div, dtypes.REAL, "x / y elementwise, rounded toward zero (C "
     "semantics for integers)."),
    ("TruncateMod", "int32, int64, float", _truncate_mod, None, "The remainder of x / y rounded toward zero: "
     "the sign follows x (C's % and fmod)."),
]


_DIVISIONS = {"Div", "RealDiv", "FloorDiv", "FloorMod", "Pow", "TruncateDiv", "TruncateMod"}
# Plain ufuncs: a large result of two same-shaped inputs goes into a reused buffer (ops/buffers.py).
_INTO = {"Add": "add", "AddV2": "add", "Sub": "subtract", "Mul": "multiply", "Maximum": "maximum", "Minimum": "minimum"}


_BINARY_INPUTS = {"Atan2": ["y: T", "x: T"], "Polygamma": ["a: T", "x: T"], "NextAfter": ["x1: T", "x2: T"]}


def _register_binary(name, types, body, kernel_types, doc):
    register_op(
        name,
        inputs=_BINARY_INPUTS.get(name, ["x: T", "y: T"]),  # TF's names
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
    into = _INTO.get(name)

    def run(ctx, x, y):
        if (into is not None and ctx.arena is not None and x.nbytes >= buffers.MIN_BYTES and x.shape == y.shape
                and x.dtype == y.dtype and x.dtype.kind in "fiuc"):  # fmt: skip
            if x.dtype.kind in "fc" and FP_STATE.get() is not QUIET_FP:
                with quiet_fp():
                    return getattr(ctx.xp, into)(x, y, out=ctx.empty(x.shape, x.dtype))
            return getattr(ctx.xp, into)(x, y, out=ctx.empty(x.shape, x.dtype))
        if into is not None and ctx.arena is not None and x.dtype == y.dtype and x.dtype.kind in "fiu":
            # A large [..., C] array with a vector over C (a batch norm's scale): whole rows
            # at a time (ops/wide_rows.py).
            big, vec = (x, y) if x.size >= y.size else (y, x)
            if big.nbytes >= buffers.MIN_BYTES and wide_rows.is_channel_vector(vec, big):
                with quiet_fp():
                    return wide_rows.channel_op(ctx.xp, getattr(ctx.xp, into), big, vec,
                                                ctx.empty(big.shape, big.dtype), vec_first=big is y)  # fmt: skip
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
    # d(x**y)/dy = z * log(x), taken as 0 where log is undefined: x <= 0 for real x (as TF does),
    # x == 0 for complex x.
    zero = scalar(b, 0, x)
    ok = gu.emit(b, "NotEqual", x, zero) if b.spec(x).dtype.is_complex else gu.emit(b, "Greater", x, zero)
    safe_x = gu.emit(b, "SelectV2", ok, x, gu.emit(b, "OnesLike", x))
    log_x = gu.emit(b, "SelectV2", ok, gu.emit(b, "Log", safe_x), gu.zeros_like(b, x))
    return gu.emit(b, "Mul", dy, gu.emit(b, "Mul", z, log_x))


def _select_by(compare):
    """Maximum/Minimum: dz goes to x where x wins (ties to x), to y elsewhere."""

    def grads(b, x, y, z, dy):
        xwins, zeros = gu.emit(b, compare, x, y), gu.zeros_like(b, dy)
        return gu.emit(b, "SelectV2", xwins, dy, zeros), gu.emit(b, "SelectV2", xwins, zeros, dy)

    return grads


def _squared_difference_grads(b, x, y, z, dy):
    # TF's formula, without conj even for complex: 2 * dz * (x - y).
    dx = gu.emit(b, "Mul", gu.emit(b, "Mul", scalar(b, 2, dy), dy), gu.emit(b, "Sub", x, y))
    return dx, gu.emit(b, "Neg", dx)


def _div_grads(div):
    def grads(b, x, y, z, dy):
        neg_x_over_y2 = gu.emit(b, div, gu.emit(b, div, gu.emit(b, "Neg", x), y), y)
        return gu.emit(b, div, dy, y), gu.emit(b, "Mul", dy, neg_x_over_y2)

    return grads


def _nonzero(b, x):
    """1 where x != 0, else 0, in x's dtype."""
    return gu.emit(b, "Cast", gu.emit(b, "NotEqual", x, scalar(b, 0, x)), DstT=b.spec(x).dtype)


def _xlogy_grads(b, x, y, z, dy):
    dx = gu.emit(b, "Xlogy", _nonzero(b, x), y)
    return gu.emit(b, "Mul", dx, dy), gu.emit(b, "Mul", gu.emit(b, "Xdivy", x, y), dy)


def _xlog1py_grads(b, x, y, z, dy):
    dx = gu.emit(b, "Xlog1py", _nonzero(b, x), y)
    return gu.emit(b, "Mul", dx, dy), gu.emit(b, "Mul", gu.emit(b, "Xdivy", x, gu.emit(b, "AddV2", y, scalar(b, 1, y))), dy)


def _xdivy_grads(b, x, y, z, dy):
    dx = gu.emit(b, "Xdivy", _nonzero(b, x), y)
    dy_ = gu.emit(b, "Xdivy", gu.emit(b, "Neg", x), gu.emit(b, "Square", y))
    return gu.emit(b, "Mul", dx, dy), gu.emit(b, "Mul", dy_, dy)


def _atan2_grads(b, y, x, z, dz):
    # Inputs are (y, x): d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2).
    inv = gu.emit(b, "RealDiv", dz, gu.emit(b, "AddV2", gu.emit(b, "Square", x), gu.emit(b, "Square", y)))
    return gu.emit(b, "Mul", x, inv), gu.emit(b, "Mul", gu.emit(b, "Neg", y), inv)


# op -> (fn(b, x, y, z, dz) -> (dx, dy) at the broadcast shape, conj): with conj, complex x, y
# and z are conjugated before fn sees them, as TF's math_grad.py does for these ops (its
# convention: the gradient of a holomorphic f is dz * conj(f'(x))); the others take them as they
# are, also as in TF (linear ops need nothing; SquaredDifference, MulNoNan, Xlogy, Xlog1py, Xdivy have no conj).
_BINARY_GRADS = {
    "Add": (lambda b, x, y, z, dy: (dy, dy), False),
    "AddV2": (lambda b, x, y, z, dy: (dy, dy), False),
    "Sub": (lambda b, x, y, z, dy: (dy, gu.emit(b, "Neg", dy)), False),
    "Mul": (lambda b, x, y, z, dy: (gu.emit(b, "Mul", dy, y), gu.emit(b, "Mul", x, dy)), True),
    "Div": (_div_grads("Div"), True),
    "RealDiv": (_div_grads("RealDiv"), True),
    "DivNoNan": (_div_grads("DivNoNan"), True),
    "MulNoNan": (lambda b, x, y, z, dy: (gu.emit(b, "MulNoNan", dy, y), gu.emit(b, "MulNoNan", x, dy)), False),
    "FloorMod": (
        lambda b, x, y, z, dy: (dy, gu.emit(b, "Mul", dy, gu.emit(b, "Neg", gu.emit(b, "FloorDiv", x, y)))),
        False,
    ),
    "Pow": (_pow_grads, True),
    "Maximum": (_select_by("GreaterEqual"), False),
    "Minimum": (_select_by("LessEqual"), False),
    "SquaredDifference": (_squared_difference_grads, False),
    "Xlogy": (_xlogy_grads, False),
    "Xdivy": (_xdivy_grads, False),
    "Xlog1py": (_xlog1py_grads, False),
    "NextAfter": (lambda b, x, y, z, dy: (dy, gu.zeros_like(b, dy)), False),  # TF's: x's step is 1
    "Atan2": (_atan2_grads, False),
}


def _register_binary_gradient(name, fn, conj):
    @gradient(name)
    def grad(b, node, dys):
        x, y = node.data_inputs
        ax, ay, z = x, y, node.name
        if conj and b.spec(x).dtype.is_complex:
            ax, ay, z = (gu.emit(b, "Conj", t) for t in (x, y, z))
        dx, dy = fn(b, ax, ay, z, dys[0])
        return [gu.sum_to(b, dx, x), gu.sum_to(b, dy, y)]  # undo broadcasting


for _name, (_fn, _conj) in _BINARY_GRADS.items():
    _register_binary_gradient(_name, _fn, _conj)


@gradient("Polygamma")
def _polygamma_grad(b, node, dys):
    # d/dx polygamma(a, x) = polygamma(a + 1, x); none for the order a (as in TF).
    a, x = node.data_inputs
    dx = gu.emit(b, "Mul", dys[0], gu.emit(b, "Polygamma", gu.emit(b, "AddV2", a, scalar(b, 1, a)), x))
    return [None, gu.sum_to(b, dx, x)]


# Piecewise constant (TF returns None for both inputs); TruncateMod has no gradient in TF either.
not_differentiable("FloorDiv", "TruncateDiv", "TruncateMod")
