"""Math ops that fit no elementwise table: ClipByValue, CheckNumerics, CumulativeLogsumexp and
LinSpace, each with its gradient (TensorFlow's math_grad.py / array_grad.py)."""

from __future__ import annotations

import numpy as np

from specflow.graph import dtypes
from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext, unchanged_shape
from specflow.ops.math_ops import FP_STATE, QUIET_FP, _fmt, _out, quiet_fp
from specflow.ops.reduction_ops import scan_axis
from specflow.ops.registry import gradient, kernel, not_differentiable, register_op

# --- ClipByValue ------------------------------------------------------------------------------


def _clip_shape(ic: InferenceContext) -> list[Shape]:
    t = ic.shape(0)
    for i, name in ((1, "clip_value_min"), (2, "clip_value_max")):
        s = ic.shape(i)
        if s.rank not in (None, 0) and not s.is_compatible_with(t):
            raise ic.fail(f"{name} must be a scalar or have the shape of t, got {s} and {t}")
    return [t]


register_op(
    "ClipByValue",
    inputs=["t: T", "clip_value_min: T", "clip_value_max: T"],
    outputs=["output: T"],
    attrs=["T: {numeric}"],
    shape=_clip_shape,
    doc="t clipped to [clip_value_min, clip_value_max] elementwise: min(max(t, lo), hi) as TF "
    "computes it (max(min(t, hi), lo), so lo wins where lo > hi). The bounds are scalars or have "
    "t's shape.",
)


@kernel("ClipByValue", T=dtypes.REAL)
def _clip_by_value(ctx, t, lo, hi):
    for bound in (lo, hi):
        if bound.ndim and bound.shape != t.shape:
            raise ctx.fail(
                "clip_value_min and clip_value_max must be either scalars or have the same shape as "
                f"the input t: {_fmt(t.shape)}, {_fmt(lo.shape)}, {_fmt(hi.shape)}"
            )
    xp = ctx.xp
    return _out(ctx, xp.maximum(xp.minimum(t, hi), lo), t.dtype)


@gradient("ClipByValue")
def _clip_by_value_grad(b, node, dys):
    # Where t is below lo the gradient goes to lo, above hi to hi, else to t.
    t, lo, hi = node.data_inputs
    dy = dys[0]
    zeros = gu.zeros_like(b, dy)
    below, above = gu.emit(b, "Less", t, lo), gu.emit(b, "Greater", t, hi)
    dt = gu.emit(b, "SelectV2", gu.emit(b, "LogicalOr", below, above), zeros, dy)
    dlo = gu.emit(b, "SelectV2", below, dy, zeros)
    dhi = gu.emit(b, "SelectV2", above, dy, zeros)
    return [dt, gu.sum_to(b, dlo, lo), gu.sum_to(b, dhi, hi)]


# --- CheckNumerics ----------------------------------------------------------------------------

register_op(
    "CheckNumerics",
    inputs=["tensor: T"],
    outputs=["output: T"],
    attrs=["T: {float}", "message: string"],
    stateful=True,  # as in TF: never folded away or merged, so the check always runs
    shape=unchanged_shape,
    doc="tensor unchanged; fails with `message` if it holds any NaN or infinity.",
)


@kernel("CheckNumerics")
def _check_numerics(ctx, x):
    xp = ctx.xp
    has_nan, has_inf = bool(xp.isnan(x).any()), bool(xp.isinf(x).any())
    if has_nan or has_inf:
        what = "Inf and NaN" if has_nan and has_inf else ("NaN" if has_nan else "Inf")
        raise ctx.fail(f"{ctx.attrs['message']} : Tensor had {what} values")
    return x


@gradient("CheckNumerics")
def _check_numerics_grad(b, node, dys):
    message = "Not a number (NaN) or infinity (Inf) values detected in gradient. " + node.attrs["message"]
    return [gu.emit(b, "CheckNumerics", dys[0], message=message)]


# --- CumulativeLogsumexp ----------------------------------------------------------------------

register_op(
    "CumulativeLogsumexp",
    inputs=["x: T", "axis: Tidx"],
    outputs=["out: T"],
    attrs=["exclusive: bool = false", "reverse: bool = false", "T: {float}", "Tidx: {int32, int64} = int32"],
    shape=unchanged_shape,
    doc="log(cumsum(exp(x))) along `axis`, computed without overflow. exclusive leaves out each "
    "element itself (the first result is -inf); reverse accumulates from the end.",
)


def _tf_logaddexp(xp, acc, v):
    """TF's LogSumExp reducer step: hi + log1p(exp(lo - hi)), hi and lo by Eigen's max/min,
    which keep ``acc`` against a NaN ``v`` (so a NaN input adds log 2, or nothing to -inf), and -inf
    when hi is -inf; inf + inf is NaN (numpy's logaddexp gives inf)."""
    lo, hi = xp.where(v < acc, v, acc), xp.where(acc < v, v, acc)
    return xp.where(hi == -np.inf, hi, hi + xp.log1p(xp.exp(lo - hi)))


def _logaddexp_scan(xp, x, axis):
    """The running log(sum(exp)) along ``axis``, one element after another as TF's scan adds."""
    acc = getattr(xp.logaddexp, "accumulate", None)
    if not bool(xp.isfinite(x).all()):  # TF's NaN and inf rules: its reducer, step by step
        out = xp.moveaxis(x.copy(), axis, 0)
        run = xp.full(out.shape[1:], -np.inf, x.dtype)
        for i in range(out.shape[0]):
            out[i] = run = _tf_logaddexp(xp, run, out[i])
        return xp.moveaxis(out, 0, axis)
    if acc is not None:
        try:
            return acc(x, axis=axis, dtype=x.dtype)
        except (NotImplementedError, TypeError, ValueError):  # pragma: no cover - cupy may lack it
            pass
    out = xp.moveaxis(x.copy(), axis, 0)  # pragma: no cover - cupy
    for i in range(1, out.shape[0]):  # pragma: no cover
        out[i] = xp.logaddexp(out[i - 1], out[i])
    return xp.moveaxis(out, 0, axis)  # pragma: no cover


@kernel("CumulativeLogsumexp", host_inputs=(1,))
def _cumulative_logsumexp(ctx, x, axis):
    a = scan_axis(ctx, axis, x.ndim)
    xp, reverse = ctx.xp, ctx.attrs["reverse"]
    if x.shape[a] == 0:
        return x.copy()
    if reverse:
        x = xp.flip(x, axis=a)
    if FP_STATE.get() is QUIET_FP:
        out = _logaddexp_scan(xp, x, a)
    else:
        with quiet_fp():  # -inf inputs give -inf silently, as in TF
            out = _logaddexp_scan(xp, x, a)
    if ctx.attrs["exclusive"]:
        # Shift by one along the axis, log(0) = -inf entering first.
        head = xp.full(x.shape[:a] + (1,) + x.shape[a + 1 :], -np.inf, dtype=x.dtype)
        out = xp.concatenate([head, xp.take(out, xp.arange(x.shape[a] - 1), axis=a)], axis=a)
    return _out(ctx, xp.flip(out, axis=a) if reverse else out, x.dtype)


@gradient("CumulativeLogsumexp")
def _cumulative_logsumexp_grad(b, node, dys):
    # TF's formula: split dy by sign so that its logs exist; each part is a cumulative logsumexp
    # in the opposite direction of log|dy| - out, plus x, exponentiated.
    x, axis = node.data_inputs
    dy, out = dys[0], node.name
    dt = b.spec(dy).dtype
    lowest = gu.const(b, np.finfo(dt.numpy).min, dt)
    zero = gu.const(b, 0, dt)
    attrs = {"exclusive": node.attrs["exclusive"], "reverse": not node.attrs["reverse"]}

    def part(mask, magnitude):
        safe = gu.emit(b, "SelectV2", mask, magnitude, gu.emit(b, "OnesLike", magnitude))
        log_dy = gu.emit(b, "SelectV2", mask, gu.emit(b, "Log", safe), lowest)
        scan = gu.emit(b, "CumulativeLogsumexp", gu.emit(b, "Sub", log_dy, out), axis, **attrs)
        return gu.emit(b, "Exp", gu.emit(b, "AddV2", scan, x))

    positive = part(gu.emit(b, "Greater", dy, zero), dy)
    negative = part(gu.emit(b, "Less", dy, zero), gu.emit(b, "Neg", dy))
    return [gu.emit(b, "Sub", positive, negative), None]


# --- LinSpace ---------------------------------------------------------------------------------


def _linspace_shape(ic: InferenceContext) -> list[Shape]:
    for i, name in enumerate(("start", "stop", "num")):
        if ic.shape(i).rank not in (None, 0):
            raise ic.fail(f"{name} must be a scalar, got shape {ic.shape(i)}")
    num = ic.value(2)
    if num is None:
        return [Shape([None])]
    if int(num) <= 0:
        raise ic.fail(f"Requires num > 0: {int(num)}")
    return [Shape([int(num)])]


register_op(
    "LinSpace",
    inputs=["start: T", "stop: T", "num: Tidx"],
    outputs=["output: T"],
    attrs=["T: {float}", "Tidx: {int32, int64} = int32"],
    shape=_linspace_shape,
    doc="num evenly spaced values from start to stop, both included (start + i * step, the step "
    "computed in T; the last value is exactly stop).",
)


@kernel("LinSpace", host_inputs=(0, 1, 2))
def _linspace(ctx, start, stop, num):
    start, stop, num = (ctx.host(v) for v in (start, stop, num))
    for v, name in ((start, "start"), (stop, "stop"), (num, "num")):
        if v.ndim != 0:
            raise ctx.fail(f"{name} must be a scalar, got shape {_fmt(v.shape)}")
    n = int(num)
    if n <= 0:
        raise ctx.fail(f"Requires num > 0: {n}")
    dt = ctx.attrs["T"].numpy
    start, stop = dt.type(start), dt.type(stop)
    xp = ctx.xp
    if n == 1:
        return xp.full(1, start, dtype=dt)
    with quiet_fp():
        step = (stop - start) / dt.type(n - 1)  # in T, as TF computes it
        out = start + step * xp.arange(n, dtype=dt)
    out[-1] = stop  # exactly stop, whatever the rounding
    return _out(ctx, out, dt)


not_differentiable("LinSpace")  # as in TensorFlow
