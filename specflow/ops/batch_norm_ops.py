"""Fused batch normalization: FusedBatchNorm / V2 / V3 and their gradient ops.

Names, inputs, outputs, attrs and semantics are TensorFlow's CPU kernels (fused_batch_norm_op.cc):

- training (``is_training``): y normalizes x with the batch's mean and biased variance;
  batch_mean / batch_variance are the batch's mean and Bessel-corrected variance (n / (n - 1)),
  blended into the given mean / variance as ``(1 - f) * old + f * new`` when
  ``exponential_avg_factor`` f is not 1 (with f = 1 the mean / variance inputs are ignored and
  may be empty). reserve_space_1 / 2 hold the batch mean and *biased* variance, which the
  gradient op reads back.
- inference: y normalizes with the given mean / variance, which are also returned as
  batch_mean / batch_variance and the reserve spaces.

Statistics are over every axis but the channel one (NHWC / NDHWC: last; NCHW / NCDHW: 1),
computed in U (the statistics' dtype; float32 for a float16 x). V3's reserve_space_3 is a scalar
zero on CPU, and the gradient ops' reserve_space_3 / 4 (V3: 4 / 5) outputs are empty vectors:
placeholders that keep TF's signatures. float64 is accepted too (TF's are float32 / float16).
"""

from __future__ import annotations

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import gradient, kernel, register_op

_CHANNEL_AXIS = {"NHWC": -1, "NDHWC": -1, "NCHW": 1, "NCDHW": 1}
_RANK = {"NHWC": 4, "NCHW": 4, "NDHWC": 5, "NCDHW": 5}
_FORMAT_4D = "data_format: {'NHWC', 'NCHW'} = 'NHWC'"
_FORMAT_ANY = "data_format: {'NHWC', 'NCHW', 'NDHWC', 'NCDHW'} = 'NHWC'"
_COMMON = ["epsilon: float = 0.0001", "is_training: bool = true"]

# op: (T types, U attr or None (U is T), data_format attr, reserve outputs, gradient op)
_VERSIONS = {
    "FusedBatchNorm": ("{float32, float64}", None, _FORMAT_4D, 2, "FusedBatchNormGrad"),
    "FusedBatchNormV2": ("{float16, bfloat16, float32, float64}", "U: {float32, float64}", _FORMAT_4D, 2,
                         "FusedBatchNormGradV2"),
    "FusedBatchNormV3": ("{float16, bfloat16, float32, float64}", "U: {float32, float64}", _FORMAT_ANY, 3,
                         "FusedBatchNormGradV3"),
}  # fmt: skip


def _channels(c, x_shape) -> int | None:
    """The channel count of x (checking x's rank against data_format), None if unknown."""
    fmt = c.attrs["data_format"]
    s = x_shape if isinstance(x_shape, Shape) else Shape(x_shape)
    if s.rank is None:
        return None
    if s.rank != _RANK[fmt]:
        raise c.fail(f"x must be {_RANK[fmt]}-D for data_format {fmt}, got shape {s}")
    return s.dims[_CHANNEL_AXIS[fmt]]


def _check_vector(c, what: str, shape, channels: int | None) -> None:
    s = shape if isinstance(shape, Shape) else Shape(shape)
    if s.rank is not None and s.rank != 1:
        raise c.fail(f"{what} must be 1-D, got shape {s}")
    n = s.dims[0] if s.rank == 1 else None
    if n is not None and channels is not None and n != channels:
        raise c.fail(f"{what} has {n} entries but x has {channels} channels ({c.attrs['data_format']})")


def _needs_mean(c) -> bool:
    """Whether the mean / variance inputs are read: always but in training with a factor of 1."""
    return not c.attrs["is_training"] or float(c.attrs["exponential_avg_factor"]) != 1.0


def _check_inputs(c, x, scale, offset, mean, var) -> int | None:
    ch = _channels(c, x)
    _check_vector(c, "scale", scale, ch)
    _check_vector(c, "offset", offset, ch)
    if _needs_mean(c):
        _check_vector(c, "mean", mean, ch)
        _check_vector(c, "variance", var, ch)
    return ch


def _forward_shape(ic: InferenceContext) -> list[Shape]:
    ch = _check_inputs(ic, *(ic.shape(i) for i in range(5)))
    if ch is None:
        ch = next((ic.shape(i)[0] for i in (1, 2) if ic.shape(i).rank == 1 and ic.shape(i)[0] is not None), None)
    vec = Shape([ch])
    extra = [Shape([])] if ic.node.op == "FusedBatchNormV3" else []
    return [ic.shape(0), vec, vec, vec, vec, *extra]


def _broadcast(v, x, fmt: str):
    """A per-channel vector shaped to broadcast against x."""
    shape = [1] * x.ndim
    shape[_CHANNEL_AXIS[fmt]] = v.shape[0]
    return v.reshape(shape)


def _reduce_axes(x, fmt: str) -> tuple[int, ...]:
    ch = _CHANNEL_AXIS[fmt] % x.ndim
    return tuple(a for a in range(x.ndim) if a != ch)


def _stat_dtype(ctx, x) -> np.dtype:
    return np.dtype(ctx.attr("U").numpy) if "U" in ctx.attrs else x.dtype


def _fused_batch_norm(ctx, x, scale, offset, mean, var):
    xp, fmt = ctx.xp, ctx.attrs["data_format"]
    _check_inputs(ctx, x.shape, scale.shape, offset.shape, mean.shape, var.shape)
    u = _stat_dtype(ctx, x)
    eps = u.type(np.float32(ctx.attrs["epsilon"]))  # TF's float attr is a float32
    xu = x.astype(u, copy=False)
    axes = _reduce_axes(x, fmt)
    if x.size == 0:  # TF: an empty y, NaN statistics (either mode)
        nan = xp.full(scale.shape, np.nan, dtype=u)
        extra = [xp.zeros((), dtype=u)] if ctx.node.op == "FusedBatchNormV3" else []
        return (xp.zeros(x.shape, dtype=x.dtype), nan, nan.copy(), nan.copy(), nan.copy(), *extra)
    if ctx.attrs["is_training"]:
        n = int(np.prod([x.shape[a] for a in axes]))
        batch_mean = xu.mean(axis=axes)
        centered = xu - _broadcast(batch_mean, x, fmt)
        batch_var = (centered * centered).mean(axis=axes)
        corrected = batch_var * u.type(n / max(n - 1, 1))
        factor = u.type(np.float32(ctx.attrs["exponential_avg_factor"]))
        new_mean, new_var = batch_mean, corrected
        if factor != 1:
            new_mean = (1 - factor) * mean.astype(u) + factor * batch_mean
            new_var = (1 - factor) * var.astype(u) + factor * corrected
        saved = (batch_mean, batch_var)
    else:
        mean, var = mean.astype(u, copy=False), var.astype(u, copy=False)
        centered = xu - _broadcast(mean, x, fmt)
        batch_var = var
        new_mean, new_var = saved = (mean, var)
    inv = (scale.astype(u) / xp.sqrt(batch_var + eps)).astype(u)
    y = (centered * _broadcast(inv, x, fmt) + _broadcast(offset.astype(u), x, fmt)).astype(x.dtype)
    outs = [y, new_mean, new_var, saved[0], saved[1]]
    if ctx.node.op == "FusedBatchNormV3":
        outs.append(xp.zeros((), dtype=u))
    return tuple(outs)


def _fused_batch_norm_grad(ctx, dy, x, scale, rs1, rs2, *_rs3):
    xp, fmt = ctx.xp, ctx.attrs["data_format"]
    ch = _channels(ctx, x.shape)
    if dy.shape != x.shape:
        raise ctx.fail(f"y_backprop has shape {list(dy.shape)} but x has {list(x.shape)}")
    for what, v in (("scale", scale), ("reserve_space_1", rs1), ("reserve_space_2", rs2)):
        _check_vector(ctx, what, v.shape, ch)
    u = _stat_dtype(ctx, x)
    eps = u.type(np.float32(ctx.attrs["epsilon"]))
    axes = _reduce_axes(x, fmt)
    dyu, xu = dy.astype(u, copy=False), x.astype(u, copy=False)
    inv_std = (1 / xp.sqrt(rs2.astype(u) + eps)).astype(u)
    x_hat = (xu - _broadcast(rs1.astype(u), x, fmt)) * _broadcast(inv_std, x, fmt)
    doffset = dyu.sum(axis=axes)
    dscale = (dyu * x_hat).sum(axis=axes)
    k = _broadcast(scale.astype(u) * inv_std, x, fmt)
    if ctx.attrs["is_training"]:
        n = max(int(np.prod([x.shape[a] for a in axes])), 1)
        dx = k * (dyu - _broadcast(doffset / n, x, fmt) - x_hat * _broadcast(dscale / n, x, fmt))
    else:
        dx = k * dyu
    empty = xp.zeros((0,), dtype=u)
    return dx.astype(x.dtype), dscale, doffset, empty, empty


def _grad_shape(ic: InferenceContext) -> list[Shape]:
    dy, x = ic.shape(0), ic.shape(1)
    ch = _channels(ic, x)
    if not dy.is_compatible_with(x) and dy.rank is not None and x.rank is not None:
        raise ic.fail(f"y_backprop has shape {dy} but x has {x}")
    for i, what in ((2, "scale"), (3, "reserve_space_1"), (4, "reserve_space_2")):
        _check_vector(ic, what, ic.shape(i), ch)
    if ch is None:
        ch = ic.shape(2)[0] if ic.shape(2).rank == 1 else None
    return [x.merge_with(dy) if x.is_compatible_with(dy) else x, Shape([ch]), Shape([ch]), Shape([0]), Shape([0])]


for _op, (_t, _u, _fmt, _n_reserve, _grad_op) in _VERSIONS.items():
    _stats = "U" if _u else "T"
    _attrs = [f"T: {_t}", *([_u] if _u else []), *_COMMON, _fmt]
    register_op(
        _op,
        inputs=["x: T", f"scale: {_stats}", f"offset: {_stats}", f"mean: {_stats}", f"variance: {_stats}"],
        outputs=["y: T", f"batch_mean: {_stats}", f"batch_variance: {_stats}",
                 *(f"reserve_space_{k}: {_stats}" for k in range(1, _n_reserve + 1))],
        attrs=[*_attrs, "exponential_avg_factor: float = 1.0"],
        shape=_forward_shape,
        doc="Batch normalization of x over every axis but the channel one: y = (x - mean) / "
        "sqrt(variance + epsilon) * scale + offset, with the batch's statistics when is_training "
        "(returned, Bessel-corrected and blended by exponential_avg_factor) or the given ones.",
    )  # fmt: skip
    kernel(_op)(_fused_batch_norm)
    register_op(
        _grad_op,
        inputs=["y_backprop: T", "x: T", f"scale: {_stats}", f"reserve_space_1: {_stats}",
                f"reserve_space_2: {_stats}", *([f"reserve_space_3: {_stats}"] if _n_reserve == 3 else [])],
        outputs=["x_backprop: T", f"scale_backprop: {_stats}", f"offset_backprop: {_stats}",
                 *(f"reserve_space_{k}: {_stats}" for k in range(_n_reserve + 1, _n_reserve + 3))],
        attrs=_attrs,
        shape=_grad_shape,
        doc=f"The gradient of {_op} for x, scale and offset; reserve_space_1 / 2 are the forward "
        "op's (batch mean and biased variance) when is_training, else the population mean and variance.",
    )  # fmt: skip
    kernel(_grad_op)(_fused_batch_norm_grad)


def _batch_norm_gradient(b, node, dys):
    """TF's: only y's gradient flows back (the statistics outputs feed moving averages);
    none for mean / variance."""
    x, scale, _, mean, var = node.data_inputs
    attrs = {k: v for k, v in node.attrs.items() if not k.startswith("_") and k != "exponential_avg_factor"}
    grad_op = _VERSIONS[node.op][4]
    if node.attrs.get("is_training", True):
        reserve = [f"{node.name}:{k}" for k in range(3, 3 + _VERSIONS[node.op][3])]
    else:
        reserve = [mean, var] + ([mean] if node.op == "FusedBatchNormV3" else [])
    dx, dscale, doffset, _, _ = gu.outputs(b, grad_op, 5, dys[0], x, scale, *reserve, **attrs)
    return [dx, dscale, doffset, None, None]


for _op in _VERSIONS:
    gradient(_op)(_batch_norm_gradient)


# --- second derivatives -------------------------------------------------------------------------
# TF differentiates its gradient op by taping a primitive-op version of it (nn_grad.py); here
# its derivatives are written out in primitive ops. Per channel, with r = (var + eps) ** -1/2,
# xh = (x - mean) * r and P(g) = g - mean(g) - xh * mean(g * xh) (training; P(g) = g at inference):
#   dx = scale * r * P(dy),  dscale = sum(dy * xh),  doffset = sum(dy).
# Given upstream gdx, gdscale, gdoffset (P is symmetric, mean / var are held fixed, as in TF):
#   d dy    = gdoffset + gdscale * xh + scale * r * P(gdx)
#   d scale = sum(gdx * r * P(dy))
#   d x     = r * gdscale * dy - scale * r^2 * (gdx * mean(dy * xh) + dy * mean(gdx * xh))  (training)
#           = r * gdscale * dy                                                             (inference)


def _batch_norm_grad_gradient(b, node, dys):
    dy, x, scale, mean, var = node.data_inputs[:5]
    fmt, training = node.attrs.get("data_format", "NHWC"), node.attrs.get("is_training", True)
    u = b.spec(scale).dtype
    rank, ch = _RANK[fmt], _CHANNEL_AXIS[fmt] % _RANK[fmt]
    axes = gu.const(b, np.array([a for a in range(rank) if a != ch], np.int32))
    shape = gu.const(b, np.array([-1 if a == ch else 1 for a in range(rank)], np.int32))

    def op(name, *ins, **attrs):
        return gu.emit(b, name, *ins, **attrs)

    def chan(v):  # a per-channel vector, broadcastable against x
        return op("Reshape", v, shape)

    def in_u(t):
        return gu.cast_like(b, t, scale)

    def mean_of(t):
        return op("Mean", t, axes, keep_dims=True)

    gdx, gds, gdo = in_u(dys[0]), chan(dys[1]), chan(dys[2])
    dy_u, x_u = in_u(dy), in_u(x)
    eps = gu.const(b, np.float32(node.attrs.get("epsilon", 1e-4)), u)
    r = chan(op("Rsqrt", op("AddV2", var, eps)))
    xh = op("Mul", op("Sub", x_u, chan(mean)), r)
    scale_r = op("Mul", chan(scale), r)

    def project(g):
        if not training:
            return g
        return op("Sub", op("Sub", g, mean_of(g)), op("Mul", xh, mean_of(op("Mul", g, xh))))

    d_dy = op("AddV2", op("AddV2", gdo, op("Mul", gds, xh)), op("Mul", scale_r, project(gdx)))
    d_scale = op("Sum", op("Mul", op("Mul", gdx, r), project(dy_u)), axes, keep_dims=False)
    d_x = op("Mul", op("Mul", r, gds), dy_u)
    if training:
        cross = op("AddV2", op("Mul", gdx, mean_of(op("Mul", dy_u, xh))), op("Mul", dy_u, mean_of(op("Mul", gdx, xh))))
        d_x = op("Sub", d_x, op("Mul", op("Mul", scale_r, r), cross))
    back = [gu.cast_like(b, d_dy, dy), gu.cast_like(b, d_x, x), d_scale]
    return back + [None] * (len(node.data_inputs) - 3)


for _op in _VERSIONS:
    gradient(_VERSIONS[_op][4])(_batch_norm_grad_gradient)
