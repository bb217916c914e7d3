"""Math ops: the helpers the math family shares, comparisons, logic, Select, Cast, AddN.

Elementwise ops are registered from tables (one row per op). Every kernel result goes through
:func:`_out`, which pins the output dtype: numpy promotes (int / int is float, sums of int32
widen) and ufuncs on 0-d arrays return scalars, while TensorFlow's outputs have exactly type T.
The sub-families have their own modules: binary arithmetic in ``math_binary_ops``, unary
functions in ``math_unary_ops``, reductions and ArgMax in ``reduction_ops``, MatMul and
BatchMatMulV2 in ``matmul_ops``.
"""

from __future__ import annotations

import numpy as np

from specflow.errors import GraphError
from specflow.graph import dtypes
from specflow.graph.shapes import Shape, broadcast_shapes
from specflow.ops import grad_util as gu
from specflow.ops.inference import (
    InferenceContext,
    broadcast_shape,
    same_shape_inputs,
    unchanged_shape,
)
from specflow.ops.registry import gradient, kernel, not_differentiable, register_op

# --- helpers shared by the kernels ------------------------------------------------------------


# np.errstate(all="ignore") rebuilds numpy's error-state object on every entry (~1.2-1.7 µs, more
# than a small op itself); quiet_fp sets the same state, rebuilt only when the caller's state
# changed (numpy 2 keeps it in a context variable; another layout falls back to errstate).
try:
    from numpy._core._ufunc_config import _extobj_contextvar as _FP_STATE
    from numpy._core._ufunc_config import _make_extobj
except ImportError:  # pragma: no cover - numpy without the numpy 2 layout
    _FP_STATE = None


def _private_fp_state_works() -> bool:
    """Whether numpy's private error state behaves as quiet_fp assumes (checked once at import,
    so a numpy that changed it falls back to np.errstate instead of failing in a kernel)."""
    import warnings

    try:
        token = _FP_STATE.set(_make_extobj(all="ignore"))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                np.divide(np.ones(1), np.zeros(1))
        finally:
            _FP_STATE.reset(token)
        return True
    except Exception:  # pragma: no cover - depends on the numpy version
        return False


if _FP_STATE is not None and not _private_fp_state_works():  # pragma: no cover
    _FP_STATE = None
_quiet_for = (None, None)  # (the caller's state, the same with every error ignored)


class quiet_fp:
    """``with quiet_fp():`` is ``with np.errstate(all="ignore"):``, cheaper: float overflow,
    x/0 and invalid results are inf/nan silently, as in TF."""

    __slots__ = ("_token", "_fallback")

    def __enter__(self):
        global _quiet_for
        if _FP_STATE is None:
            self._fallback = np.errstate(all="ignore")
            return self._fallback.__enter__()
        outer = _FP_STATE.get()
        seen, quiet = _quiet_for
        if seen is not outer:
            quiet = _make_extobj(all="ignore")  # keeps the caller's buffer size and callback
            _quiet_for = (outer, quiet)
        self._token = _FP_STATE.set(quiet)
        return None

    def __exit__(self, *exc):
        if _FP_STATE is None:
            return self._fallback.__exit__(*exc)
        _FP_STATE.reset(self._token)
        return None


class _NoFpState:
    """Stands in for numpy's error-state context variable where quiet_fp falls back to
    np.errstate: nothing is installed per step, and every kernel quiets itself."""

    def get(self):
        return None

    def set(self, value):
        return None

    def reset(self, token):
        return None


# The executor installs QUIET_FP on the threads that run kernels (for a whole step on the
# caller's thread, for good on pool threads): a kernel that finds it current skips its own
# quiet_fp (~0.6 µs, more than a small op); called any other way, it quiets itself.
FP_STATE = _FP_STATE if _FP_STATE is not None else _NoFpState()
QUIET_FP = _make_extobj(all="ignore") if _FP_STATE is not None else object()


def _out(ctx, value, dtype):
    """``value`` as an array of exactly ``dtype`` on the kernel's device (as it is when it is
    one already: cupy's asarray costs microseconds even then)."""
    if type(value) is ctx.xp.ndarray and value.dtype == dtype:
        return value
    return ctx.xp.asarray(value, dtype=dtype)


def _is_int(x) -> bool:
    return x.dtype.kind in "iu"


def _is_complex(x) -> bool:
    return x.dtype.kind == "c"


def _fmt(shape) -> str:
    return str(Shape(shape))


def check_broadcast(ctx, *arrays) -> None:
    """Fail with TF's message when the inputs' runtime shapes cannot broadcast."""
    try:
        np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        raise ctx.fail("Incompatible shapes: " + " vs. ".join(_fmt(a.shape) for a in arrays)) from None


def check_nonzero_divisor(ctx, y, x=None) -> None:
    """Integer division by zero is an error in TF (numpy would warn and give 0), checked per
    element computed: an empty dividend ``x`` (an empty result) divides by nothing."""
    if x is not None and x.size == 0:
        return
    if _is_int(y) and bool((y == 0).any()):  # the method: np.any's wrapper costs microseconds
        raise ctx.fail("Integer division by zero")


def trunc_div(xp, x, y):
    """Integer division rounding toward zero (C semantics, TF's Div on integers)."""
    q = xp.floor_divide(x, y)
    # Floor and truncation differ only when the division is inexact and the signs differ.
    fix = (q * y != x) & ((x < 0) != (y < 0))
    return q + fix.astype(q.dtype)


# --- helpers shared by the gradients (TensorFlow's math_grad.py) -----------------------------


def require_real(node) -> None:
    """Gradients not written for complex inputs yet (MatMul's, the reductions' products) refuse
    them by name; the elementwise ops' gradients take complex inputs with TF's conj."""
    dt = node.attrs.get("T")
    if dt is not None and dt.is_complex:
        raise GraphError(
            f"the gradient of {node.op} is only defined here for real inputs, got {dt.name}",
            node=node.name,
            location=node.location,
        )


def scalar(b, value, like: str) -> str:
    """A scalar constant of ``like``'s dtype."""
    return gu.const(b, value, b.spec(like).dtype)


# --- comparisons and logic (bool outputs) -----------------------------------------------------


def _equality_shape(ic: InferenceContext) -> list[Shape]:
    """With incompatible_shape_error=false, unbroadcastable inputs give a scalar instead of an
    error, so the result is only predictable from fully known shapes."""
    if ic.attr("incompatible_shape_error"):
        return broadcast_shape(ic)
    x, y = ic.shape(0), ic.shape(1)
    if not (x.is_fully_defined and y.is_fully_defined):
        return [Shape.unknown()]
    try:
        return [broadcast_shapes(x, y)]
    except ValueError:
        return [Shape.scalar()]


def _register_equality(name, fn, on_mismatch):
    register_op(
        name,
        inputs=["x: T", "y: T"],
        outputs=["z: bool"],
        attrs=["T: type", "incompatible_shape_error: bool = true"],
        shape=_equality_shape,
        doc=f"x {'==' if on_mismatch is False else '!='} y elementwise, with broadcasting. With "
        f"incompatible_shape_error=false, unbroadcastable shapes give the scalar {on_mismatch}.",
    )

    @kernel(name)
    def run(ctx, x, y):
        if not ctx.attrs["incompatible_shape_error"]:
            try:
                np.broadcast_shapes(x.shape, y.shape)
            except ValueError:
                return ctx.xp.asarray(on_mismatch)
        check_broadcast(ctx, x, y)
        return _out(ctx, getattr(ctx.xp, fn)(x, y), np.bool_)


_register_equality("Equal", "equal", False)
_register_equality("NotEqual", "not_equal", True)


def _register_bool_binary(name, inp, types, fn, doc):
    register_op(
        name,
        inputs=[f"x: {inp}", f"y: {inp}"],
        outputs=["z: bool"],
        attrs=[f"T: {{{types}}}"] if types else [],
        shape=broadcast_shape,
        doc=doc + " Broadcasts like numpy.",
    )

    np_fn = getattr(np, fn)

    @kernel(name)
    def run(ctx, x, y):
        # A loop's predicate runs every iteration: equal shapes and scalars always broadcast (the
        # check costs more than the compare), and numpy's function is looked up once.
        if x.shape != y.shape and x.ndim and y.ndim:
            check_broadcast(ctx, x, y)
        return _out(ctx, (np_fn if ctx.xp is np else getattr(ctx.xp, fn))(x, y), np.bool_)


for _row in [
    ("Less", "T", "real", "less", "x < y elementwise."),
    ("LessEqual", "T", "real", "less_equal", "x <= y elementwise."),
    ("Greater", "T", "real", "greater", "x > y elementwise."),
    ("GreaterEqual", "T", "real", "greater_equal", "x >= y elementwise."),
    ("LogicalAnd", "bool", None, "logical_and", "x AND y elementwise."),
    ("LogicalOr", "bool", None, "logical_or", "x OR y elementwise."),
]:
    _register_bool_binary(*_row)

not_differentiable("Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual")
not_differentiable("LogicalAnd", "LogicalOr")


register_op(
    "LogicalNot",
    inputs=["x: bool"],
    outputs=["y: bool"],
    shape=unchanged_shape,
    doc="NOT x elementwise.",
)


@kernel("LogicalNot")
def _logical_not(ctx, x):
    return _out(ctx, ctx.xp.logical_not(x), np.bool_)


not_differentiable("LogicalNot")


# --- Select / SelectV2 ------------------------------------------------------------------------


def _select_shape(ic: InferenceContext) -> list[Shape]:
    """TF1 Select: t and e alike; condition a scalar, t's shape, or a vector over t's rows."""
    cond, t, e = ic.shape(0), ic.shape(1), ic.shape(2)
    try:
        out = t.merge_with(e)
    except ValueError:
        raise ic.fail(f"'t' and 'e' must have the same shape, got {t} and {e}") from None
    if cond.rank == 0 or cond.rank is None or out.rank is None:
        return [out]
    if cond.rank == 1 and out.rank > 1:
        if cond[0] is not None and out[0] is not None and cond[0] != out[0]:
            raise ic.fail(f"a vector condition must match the first dimension of 't': {cond} vs. {out}")
        return [Shape((cond[0] if out[0] is None else out[0],) + out.dims[1:])]
    try:
        return [out.merge_with(cond)]
    except ValueError:
        raise ic.fail(
            f"condition must be a scalar, a vector or have the shape of 't': {cond} vs. {out}"
        ) from None


register_op(
    "Select",
    inputs=["condition: bool", "t: T", "e: T"],
    outputs=["output: T"],
    attrs=["T: type"],
    shape=_select_shape,
    doc="Elements of t where condition is true, else of e. condition is a scalar, has t's shape, "
    "or is a vector choosing whole rows of t and e.",
)


@kernel("Select")
def _select(ctx, cond, t, e):
    if t.shape != e.shape:
        raise ctx.fail(f"'t' and 'e' must have the same shape, got {_fmt(t.shape)} and {_fmt(e.shape)}")
    if cond.ndim == 1 and t.ndim > 1:
        if cond.shape[0] != t.shape[0]:
            raise ctx.fail(
                f"a vector condition must match the first dimension of 't': "
                f"{_fmt(cond.shape)} vs. {_fmt(t.shape)}"
            )
        cond = cond.reshape(cond.shape + (1,) * (t.ndim - 1))
    elif cond.ndim != 0 and cond.shape != t.shape:
        raise ctx.fail(
            f"condition must be a scalar, a vector or have the shape of 't': "
            f"{_fmt(cond.shape)} vs. {_fmt(t.shape)}"
        )
    return _out(ctx, ctx.xp.where(cond, t, e), t.dtype)


@gradient("Select")
def _select_grad(b, node, dys):
    cond, t, _ = node.data_inputs
    zeros = gu.zeros_like(b, t)
    return [None, gu.emit(b, "Select", cond, dys[0], zeros), gu.emit(b, "Select", cond, zeros, dys[0])]


register_op(
    "SelectV2",
    inputs=["condition: bool", "t: T", "e: T"],
    outputs=["output: T"],
    attrs=["T: type"],
    shape=broadcast_shape,
    doc="Elements of t where condition is true, else of e; all three broadcast like numpy.",
)


@kernel("SelectV2")
def _select_v2(ctx, cond, t, e):
    check_broadcast(ctx, cond, t, e)
    if cond.ndim == 0 and t.dtype == e.dtype:
        # A scalar condition (a fed ``training`` flag) picks one operand whole: pass it on
        # when it has the result's shape, else broadcast it once (a gradient's zero), instead
        # of an elementwise where over both.
        chosen = t if bool(ctx.host(cond)) else e  # (a fed flag's host copy: no wait for a GPU)
        shape = t.shape if t.shape == e.shape else np.broadcast_shapes(t.shape, e.shape)
        if chosen.shape == shape:
            return chosen
        out = ctx.empty(shape, t.dtype)
        out[...] = chosen
        return out
    return _out(ctx, ctx.xp.where(cond, t, e), t.dtype)


@gradient("SelectV2")
def _select_v2_grad(b, node, dys):
    cond, t, e = node.data_inputs
    zero = scalar(b, 0, dys[0])
    dt = gu.emit(b, "SelectV2", cond, dys[0], zero)
    de = gu.emit(b, "SelectV2", cond, zero, dys[0])
    return [None, gu.sum_to(b, dt, t), gu.sum_to(b, de, e)]


# --- Cast -------------------------------------------------------------------------------------

register_op(
    "Cast",
    inputs=["x: SrcT"],
    outputs=["y: DstT"],
    attrs=["SrcT: type", "DstT: type", "Truncate: bool = false"],
    shape=unchanged_shape,
    doc="x converted to DstT with C++ static_cast rules: float to int truncates toward zero, "
    "complex to real keeps the real part. Truncate=true rounds narrowing float casts toward zero.",
)

_CASTABLE = dtypes.ALL - {dtypes.string}  # TF has no numeric <-> string Cast (AsString does it)


@kernel("Cast", SrcT=_CASTABLE, DstT=_CASTABLE)
def _cast(ctx, x):
    xp = ctx.xp
    dst = ctx.attrs["DstT"].numpy
    if dst.kind == "b":
        return _out(ctx, x != 0, dst)  # complex too: nonzero real or imaginary part
    if _is_complex(x) and dst.kind != "c":
        x = xp.real(x)
    if x.dtype.kind in "iub" and dst.kind in "fc" and dst.itemsize >= 4:
        return x.astype(dst)  # exact or rounded, never out of range: nothing to silence
    with quiet_fp():  # NaN/inf to int is implementation-defined, as in C++
        y = x.astype(dst)
        if (
            ctx.attrs["Truncate"]
            and x.dtype.kind == "f"
            and dst.kind == "f"
            and dst.itemsize < x.dtype.itemsize
        ):
            # Round toward zero: step back one ulp wherever rounding moved away from zero.
            away = xp.abs(y.astype(x.dtype)) > xp.abs(x)
            y = xp.where(away, xp.nextafter(y, xp.zeros_like(y)), y)
    return _out(ctx, y, dst)


@gradient("Cast")
def _cast_grad(b, node, dys):
    # Only between float/complex types does a gradient make sense; cast it back to the source.
    src, dst = node.attrs["SrcT"], node.attrs["DstT"]
    if dys[0] is None or not all(t.is_floating or t.is_complex for t in (src, dst)):
        return [None]
    return [gu.emit(b, "Cast", dys[0], DstT=src)]


# --- Bitcast ----------------------------------------------------------------------------------

_BITCASTABLE = "{half, float, double, int64, int32, uint8, uint16, uint32, uint64, int8, int16, complex64, complex128}"


def _bitcast_shape(ic: InferenceContext) -> list[Shape]:
    x, src, dst = ic.shape(0), ic.attr("T").numpy, ic.attr("type").numpy
    a, b = np.dtype(src).itemsize, np.dtype(dst).itemsize
    if x.rank is None or a == b:
        return [x]
    if a > b:
        return [Shape([*x.dims, a // b])]
    if x.rank == 0 or x[-1] not in (None, b // a):
        raise ic.fail(f"cannot bitcast {ic.attr('T').name} {x} to {ic.attr('type').name}: the last dimension must be {b // a}")
    return [Shape(x.dims[:-1])]


register_op(
    "Bitcast",
    inputs=["input: T"],
    outputs=["output: type"],
    attrs=[f"T: {_BITCASTABLE}", f"type: {_BITCASTABLE}"],
    shape=_bitcast_shape,
    doc="The same bytes read as another type: a wider type takes the last dimension's elements "
    "(which must be the size ratio), a narrower one adds a last dimension of that ratio.",
)


@kernel("Bitcast")
def _bitcast(ctx, x):
    dst = ctx.attrs["type"].numpy
    a, b = x.dtype.itemsize, np.dtype(dst).itemsize
    if a < b and (x.ndim == 0 or x.shape[-1] != b // a):
        raise ctx.fail(f"cannot bitcast {ctx.attrs['T'].name} {_fmt(x.shape)} to {ctx.attrs['type'].name}: "
                       f"the last dimension must be {b // a}")  # fmt: skip
    y = ctx.xp.asarray(x, order="C").reshape(x.shape or (1,)).view(dst)  # a scalar viewed as a 1-D array
    if a > b:
        return y.reshape((*x.shape, a // b))
    return y.reshape(x.shape[:-1] if a < b else x.shape)


not_differentiable("Bitcast")


# --- AddN -------------------------------------------------------------------------------------

register_op(
    "AddN",
    inputs=["inputs: N * T"],
    outputs=["sum: T"],
    attrs=["N: int >= 1", "T: {numeric, variant}"],
    shape=same_shape_inputs,
    doc="The elementwise sum of N tensors of the same shape (no broadcasting); of TensorLists, "
        "element by element (gradients of a list meet here).",
)


@kernel("AddN")
def _add_n(ctx, *xs):
    for x in xs[1:]:
        if x.shape != xs[0].shape:
            raise ctx.fail(f"inputs must all have the same shape: {_fmt(xs[0].shape)} vs. {_fmt(x.shape)}")
    if len(xs) == 1:
        return xs[0].copy()
    # The first sum into a fresh array (the arena's when large), the rest added to it in place:
    # never into an input, and no copy of the first.
    total = ctx.xp.add(xs[0], xs[1], out=ctx.empty(xs[0].shape, xs[0].dtype))
    for x in xs[2:]:
        ctx.xp.add(total, x, out=total)
    return total


@gradient("AddN")
def _add_n_grad(b, node, dys):
    return [dys[0]] * len(node.data_inputs)


# The sub-families use the helpers above, so they are imported last; importing registers them.
from specflow.ops import math_binary_ops, math_unary_ops, matmul_ops  # noqa: E402,F401
