"""Special functions of two or three arguments: the regularized incomplete gamma functions Igamma
and Igammac (with IgammaGradA, their derivative in a), the regularized incomplete beta function
Betainc and the Hurwitz zeta function Zeta, with TensorFlow's gradients (math_grad.py: Betainc's
only in x, Zeta's only in q, as TF defines them).

The values come from scipy.special (cupyx.scipy.special on GPU); IgammaGradA is TF's own
method, forward-mode differentiation of the power series and of the continued fraction of the
incomplete gamma function (Moore, Algorithm AS 187), written against ``xp``.
"""

from __future__ import annotations

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext, broadcast_shape
from specflow.ops.math_ops import FP_STATE, QUIET_FP, check_broadcast, quiet_fp, scalar
from specflow.ops.math_unary_ops import _special
from specflow.ops.registry import gradient, kernel, not_differentiable, register_op


def _elementwise(body):
    """A kernel of broadcast inputs: ``body(ctx, *arrays)`` in the inputs' dtype, numpy's
    floating-point warnings off (out-of-domain arguments give nan, as in TF)."""

    def run(ctx, *args):
        check_broadcast(ctx, *args)
        args = ctx.xp.broadcast_arrays(*args)
        if FP_STATE.get() is QUIET_FP:
            return ctx.xp.asarray(body(ctx, *args), dtype=args[0].dtype)
        with quiet_fp():
            return ctx.xp.asarray(body(ctx, *args), dtype=args[0].dtype)

    return run


def _register_binary(name: str, inputs: list[str], body, doc: str) -> None:
    register_op(name, inputs=inputs, outputs=["z: T"], attrs=["T: {float}"], shape=broadcast_shape,
                doc=doc + " Broadcasts like numpy.")  # fmt: skip
    kernel(name)(_elementwise(body))


def _igamma(ctx, a, x):
    # TF's domain: 0 wherever x = 0 (even for a <= 0), else nan where a <= 0 or x < 0 (scipy
    # gives a = 0 its limit).
    xp = ctx.xp
    out = xp.where(xp.isposinf(a) & xp.isposinf(x), 0, _special(ctx, "gammainc")(a, x))  # TF's 0, scipy's nan
    return xp.where(x == 0, 0, xp.where((a <= 0) | (x < 0), xp.nan, out))


def _igammac(ctx, a, x):
    xp = ctx.xp
    out = xp.where(xp.isposinf(a) & xp.isposinf(x), 0, _special(ctx, "gammaincc")(a, x))  # TF's 0, scipy's nan
    return xp.where((a <= 0) | (x < 0), xp.nan, out)  # TF's domain


_register_binary("Igamma", ["a: T", "x: T"], _igamma,
                 "The lower regularized incomplete gamma function P(a, x) elementwise: 0 where x = 0, "
                 "else nan where a <= 0 or x < 0.")
_register_binary("Igammac", ["a: T", "x: T"], _igammac,
                 "The upper regularized incomplete gamma function Q(a, x) = 1 - P(a, x) elementwise; nan "
                 "where a <= 0 or x < 0.")
def _zeta(ctx, x, q):
    # TF's domain: nan for x < 1, inf at x = 1; for q <= 0, a whole q gives inf for an even
    # whole x and nan otherwise, and any other q needs a whole x (scipy continues to x < 1).
    xp = ctx.xp
    out = _special(ctx, "zeta")(x, q)
    whole_x, whole_q = xp.floor(x) == x, xp.floor(q) == q
    even_x = whole_x & (xp.fmod(x, 2) == 0)
    out = xp.where((q <= 0) & whole_q, xp.where(even_x, xp.inf, xp.nan), out)
    out = xp.where((q <= 0) & ~whole_q & ~whole_x, xp.nan, out)
    # x = +inf: the sum's terms are 0 (q > 1), 1 then 0 (q = 1) or at least one infinite (q < 1)
    out = xp.where(xp.isposinf(x), xp.where(q > 1, 0, xp.where(q == 1, 1, xp.where(q < 1, xp.inf, xp.nan))), out)
    return xp.where(x == 1, xp.inf, xp.where(x < 1, xp.nan, out))


_register_binary("Zeta", ["x: T", "q: T"], _zeta,
                 "The Hurwitz zeta function: the sum over n >= 0 of (n + q) ** -x, elementwise (nan for "
                 "x < 1, inf at x = 1).")


# --- IgammaGradA: d/da P(a, x) ----------------------------------------------------------------

_MAX_STEPS = {np.dtype(np.float32): 200, np.dtype(np.float64): 500}  # TF's (Eigen's) iteration caps


def _series_grad_a(ctx, a, x, steps):
    """d/da P(a, x) from P = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1)...(a + n)),
    each term's derivative carried along with it (for x <= 1 or x <= a)."""
    xp, eps = ctx.xp, np.finfo(a.dtype).eps / 2
    r, c, total = a.copy(), xp.ones_like(a), xp.ones_like(a)
    dc, dtotal = xp.zeros_like(a), xp.zeros_like(a)
    going = xp.ones(a.shape, bool)
    for _ in range(steps):
        r = r + 1
        ratio = x / r
        dc = xp.where(going, ratio * dc - c * x / (r * r), dc)
        dtotal = xp.where(going, dtotal + dc, dtotal)
        c = xp.where(going, c * ratio, c)
        total = xp.where(going, total + c, total)
        going &= ~(xp.abs(dc) <= eps * xp.abs(dtotal))
        if not bool(going.any()):
            break
    log_front = a * xp.log(x) - x - _special(ctx, "gammaln")(a + 1)
    dlog_front = xp.log(x) - _special(ctx, "digamma")(a + 1)
    front = xp.exp(log_front)
    return total * front * dlog_front + dtotal * front


def _fraction_grad_a(ctx, a, x, steps):
    """d/da Q(a, x) from Q's continued fraction (Legendre's, as Cephes evaluates it), the
    numerators' and denominators' derivatives carried along (for x > 1 and x > a)."""
    xp, eps = ctx.xp, np.finfo(a.dtype).eps / 2
    big = 1 / np.finfo(a.dtype).eps if a.dtype == np.float64 else 1 / eps
    y, z, c = 1 - a, x + (1 - a) + 1, xp.zeros_like(a)
    p2, q2, p1, q1 = xp.ones_like(a), x.copy(), x + 1, (x + (1 - a) + 1) * x
    dp2, dq2, dp1, dq1 = xp.zeros_like(a), xp.zeros_like(a), xp.zeros_like(a), -x
    value = p1 / q1
    dvalue = (dp1 - value * dq1) / q1
    going = xp.ones(a.shape, bool)
    for _ in range(steps):
        c, y, z = c + 1, y + 1, z + 2
        yc = y * c
        pk, qk = p1 * z - p2 * yc, q1 * z - q2 * yc
        dpk, dqk = dp1 * z - p1 - dp2 * yc + p2 * c, dq1 * z - q1 - dq2 * yc + q2 * c
        ok = going & (qk != 0)
        safe_q = xp.where(qk != 0, qk, 1)
        new_value = pk / safe_q
        new_dvalue = (dpk - new_value * dqk) / safe_q
        done = ok & (xp.abs(new_dvalue - dvalue) <= eps)
        value, dvalue = xp.where(ok, new_value, value), xp.where(ok, new_dvalue, dvalue)
        p2, p1 = xp.where(going, p1, p2), xp.where(going, pk, p1)
        q2, q1 = xp.where(going, q1, q2), xp.where(going, qk, q1)
        dp2, dp1 = xp.where(going, dp1, dp2), xp.where(going, dpk, dp1)
        dq2, dq1 = xp.where(going, dq1, dq2), xp.where(going, dqk, dq1)
        scale = going & (xp.abs(pk) > big)
        factor = xp.where(scale, 1 / big, 1)
        p2, p1, q2, q1, dp2, dp1, dq2, dq1 = (t * factor for t in (p2, p1, q2, q1, dp2, dp1, dq2, dq1))
        going &= ~done
        if not bool(going.any()):
            break
    front = xp.exp(a * xp.log(x) - x - _special(ctx, "gammaln")(a))
    dlog_front = xp.log(x) - _special(ctx, "digamma")(a)
    return xp.where(xp.isinf(x), 0, value * front * dlog_front + dvalue * front)


def _igamma_grad_a(ctx, a, x):
    xp = ctx.xp
    steps = _MAX_STEPS.get(a.dtype, 2000)
    work = np.float64 if a.dtype == np.float64 else np.float32
    a, x = a.astype(work), x.astype(work)
    nan = xp.isnan(a) | xp.isnan(x) | (x < 0) | (a <= 0)
    use_fraction = (x > 1) & (x > a)
    safe_a = xp.where(nan, 1, a)
    out = xp.zeros(a.shape, work)
    series = ~nan & ~use_fraction & (x != 0)
    if bool(series.any()):
        out[series] = _series_grad_a(ctx, safe_a[series], x[series], steps)
    fraction = ~nan & use_fraction
    if bool(fraction.any()):
        out[fraction] = -_fraction_grad_a(ctx, safe_a[fraction], x[fraction], steps)
    out = xp.where(nan & (x != 0), xp.nan, out)
    # an infinite a: P(a, x) is 0 for every finite x near it, so its slope is 0 (TF's; inf - inf here)
    return xp.where(xp.isposinf(a) & ~nan, 0, out)


register_op("IgammaGradA", inputs=["a: T", "x: T"], outputs=["z: T"], attrs=["T: {float32, float64}"],
            shape=broadcast_shape, doc="d/da Igamma(a, x) elementwise (Igamma's gradient in a); 0 where x = 0. "
            "Broadcasts like numpy.")  # fmt: skip
kernel("IgammaGradA")(_elementwise(_igamma_grad_a))
not_differentiable("IgammaGradA")  # as in TF


def _igamma_grads(b, node, dys, sign: float):
    # TF's: d/da by IgammaGradA, d/dx = x^(a-1) e^-x / Gamma(a), in log space; Igammac's negated.
    a, x = node.data_inputs
    dy = dys[0]
    one = scalar(b, 1, a)
    log_dx = gu.emit(b, "Sub", gu.emit(b, "AddV2", gu.emit(b, "Neg", x),
                                       gu.emit(b, "Mul", gu.emit(b, "Sub", a, one), gu.emit(b, "Log", x))),
                     gu.emit(b, "Lgamma", a))  # fmt: skip
    da, dx = gu.emit(b, "IgammaGradA", a, x), gu.emit(b, "Exp", log_dx)
    if sign < 0:
        da, dx = gu.emit(b, "Neg", da), gu.emit(b, "Neg", dx)
    return [gu.sum_to(b, gu.emit(b, "Mul", da, dy), a), gu.sum_to(b, gu.emit(b, "Mul", dx, dy), x)]


gradient("Igamma")(lambda b, node, dys: _igamma_grads(b, node, dys, 1.0))
gradient("Igammac")(lambda b, node, dys: _igamma_grads(b, node, dys, -1.0))


@gradient("Zeta")
def _zeta_grad(b, node, dys):
    # TF's: d/dq zeta(x, q) = -x zeta(x + 1, q); none for x.
    x, q = node.data_inputs
    dq = gu.emit(b, "Mul", gu.emit(b, "Neg", x), gu.emit(b, "Zeta", gu.emit(b, "AddV2", x, scalar(b, 1, x)), q))
    return [None, gu.sum_to(b, gu.emit(b, "Mul", dq, dys[0]), q)]


# --- Betainc ----------------------------------------------------------------------------------


def _betainc_shape(ic: InferenceContext) -> list[Shape]:
    shapes = [ic.shape(i) for i in range(3)]
    out = Shape(None)
    for s in shapes:
        if s.rank == 0:
            continue
        if not s.is_compatible_with(out):
            raise ic.fail(f"Shapes of a, b and x are inconsistent: {shapes[0]} vs. {shapes[1]} vs. {shapes[2]}")
        out = s.merge_with(out) if out.rank is not None else s
    if out.rank is None and all(s.rank == 0 for s in shapes):
        return [Shape([])]
    return [out]


register_op(
    "Betainc",
    inputs=["a: T", "b: T", "x: T"],
    outputs=["z: T"],
    attrs=["T: {float32, float64}"],
    shape=_betainc_shape,
    doc="The regularized incomplete beta function I_x(a, b) elementwise; a, b and x each have "
    "the output's shape or are scalars.",
)


@kernel("Betainc")
def _betainc(ctx, a, b, x):
    shapes = [t.shape for t in (a, b, x) if t.ndim]
    if any(s != shapes[0] for s in shapes):
        raise ctx.fail(f"Shapes of a, b and x are inconsistent: {list(a.shape)} vs. {list(b.shape)} vs. {list(x.shape)}")
    return _elementwise(_betainc_values)(ctx, a, b, x)


def _betainc_values(ctx, a, b, x):
    # TF's domain: nan where a <= 0 or b <= 0; else 0 at x = 0 and 1 at x = 1 whatever a and b
    # are (nan and inf too), and nan between them for an infinite a or b (scipy takes limits)
    xp = ctx.xp
    out = xp.where(xp.isinf(a) | xp.isinf(b), xp.nan, _special(ctx, "betainc")(a, b, x))
    out = xp.where(x == 0, 0, xp.where(x == 1, 1, out))
    return xp.where((a <= 0) | (b <= 0), xp.nan, out)


@gradient("Betainc")
def _betainc_grad(b, node, dys):
    # TF's: only x's, x^(a-1) (1-x)^(b-1) / B(a, b), in log space (Xlogy and Xlog1py keep the
    # a = 1 and b = 1 edges finite); none for a and b. Summed to x's shape over the output's
    # (TF's sums over a's only, and fails for a scalar a and x with a vector b).
    a, bb, x = node.data_inputs
    one = scalar(b, 1, a)
    log_beta = gu.emit(b, "Sub", gu.emit(b, "AddV2", gu.emit(b, "Lgamma", a), gu.emit(b, "Lgamma", bb)),
                       gu.emit(b, "Lgamma", gu.emit(b, "AddV2", a, bb)))  # fmt: skip
    log_dx = gu.emit(b, "Sub", gu.emit(b, "AddV2", gu.emit(b, "Xlog1py", gu.emit(b, "Sub", bb, one), gu.emit(b, "Neg", x)),
                                       gu.emit(b, "Xlogy", gu.emit(b, "Sub", a, one), x)), log_beta)  # fmt: skip
    dx = gu.emit(b, "Mul", gu.emit(b, "Exp", log_dx), dys[0])
    return [None, None, gu.sum_to(b, dx, x)]
