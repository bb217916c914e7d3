"""Local response normalization: LRN and LRNGrad (TF's nn_ops.cc, lrn_op.cc).

Over the last (depth) axis of a 4-D input:
    sqr_sum[..., d] = sum(input[..., d - depth_radius : d + depth_radius + 1] ** 2)
    output = input / (bias + alpha * sqr_sum) ** beta
The window sum is one padded, shifted slice per window offset (2 * depth_radius + 1 of them),
each vectorized over every pixel.
"""

from __future__ import annotations

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import gradient, kernel, register_op

_ATTRS = [
    "depth_radius: int = 5",
    "bias: float = 1.0",
    "alpha: float = 1.0",
    "beta: float = 0.5",
    "T: {float16, float32, float64} = float32",
]


def _rank4(c, shape, what: str) -> Shape:
    s = shape if isinstance(shape, Shape) else Shape(shape)
    if s.rank is not None and s.rank != 4:
        raise c.fail(f"{what} must be 4-D, got shape {s}")
    return s


def _params(ctx, dtype):
    """depth_radius and the float attrs, rounded to float32 as TF's attrs are, in x's dtype."""
    r = int(ctx.attrs["depth_radius"])
    if r < 0:
        raise ctx.fail(f"depth_radius must be non-negative, got {r}")
    cast = np.dtype(dtype).type
    return r, *(cast(np.float32(ctx.attrs[k])) for k in ("bias", "alpha", "beta"))


def _window_sum(xp, v, r: int):
    """sum of v[..., d - r : d + r + 1] for every depth d (clipped at the ends)."""
    depth = v.shape[-1]
    padded = xp.pad(v, [(0, 0)] * (v.ndim - 1) + [(r, r)])
    out = padded[..., 0:depth].copy()
    for k in range(1, 2 * r + 1):
        out += padded[..., k : k + depth]
    return out


def _norm(ctx, xp, x):
    r, bias, alpha, beta = _params(ctx, x.dtype)
    return bias + alpha * _window_sum(xp, x * x, r), alpha, beta, r


register_op(
    "LRN",
    inputs=["input: T"],
    outputs=["output: T"],
    attrs=_ATTRS,
    shape=lambda ic: [_rank4(ic, ic.shape(0), "input")],
    doc="Local response normalization over the depth axis: input / (bias + alpha * "
    "sum of squares within depth_radius) ** beta.",
)


@kernel("LRN")
def _lrn(ctx, x):
    xp = ctx.xp
    _rank4(ctx, x.shape, "input")
    r, bias, alpha, beta = _params(ctx, x.dtype)
    sq = x * x
    sums = _window_sum(xp, sq, r)
    if r < x.shape[-1] - 1:
        # TF's CPU kernel sums by a contraction with a 0/1 band matrix: an inf or NaN square
        # times a 0 outside a depth's window makes that depth's sum NaN (every depth of the
        # pixel but those within depth_radius of an infinite square). One isfinite pass.
        bad = ~xp.isfinite(sq)
        if bad.any():
            outside = bad.sum(axis=-1, keepdims=True) - _window_sum(xp, bad.astype(np.int32), r)
            sums = xp.where(outside > 0, sq.dtype.type(np.nan), sums)
    if xp is not np:
        return x / (bias + alpha * sums) ** beta
    with np.errstate(invalid="ignore"):  # an infinite input's inf / inf is TF's NaN, not a mistake to warn about
        return x / (bias + alpha * sums) ** beta


@gradient("LRN")
def _lrn_gradient(b, node, dys):
    attrs = {k: node.attrs[k] for k in ("depth_radius", "bias", "alpha", "beta")}
    return [gu.emit(b, "LRNGrad", dys[0], node.data_inputs[0], node.name, **attrs)]


def _lrn_grad_shape(ic: InferenceContext) -> list[Shape]:
    shapes = [_rank4(ic, ic.shape(i), what) for i, what in enumerate(("input_grads", "input_image", "output_image"))]
    out = shapes[0]
    for what, s in zip(("input_image", "output_image"), shapes[1:]):
        if not out.is_compatible_with(s):
            raise ic.fail(f"{what} has shape {s} but input_grads has {shapes[0]}")
        out = out.merge_with(s)
    return [out]


register_op(
    "LRNGrad",
    inputs=["input_grads: T", "input_image: T", "output_image: T"],
    outputs=["output: T"],
    attrs=_ATTRS,
    shape=_lrn_grad_shape,
    doc="The gradient of LRN, given its input (input_image) and output (output_image).",
)


@kernel("LRNGrad")
def _lrn_grad(ctx, dy, x, y):
    xp = ctx.xp
    if not dy.shape == x.shape == y.shape or dy.ndim != 4:
        raise ctx.fail(
            f"input_grads, input_image and output_image must be 4-D of one shape, got "
            f"{list(dy.shape)}, {list(x.shape)} and {list(y.shape)}"
        )
    norm, alpha, beta, r = _norm(ctx, xp, x)
    # d out_j / d in_k = [j == k] norm_j^-beta - 2 alpha beta in_k out_j / norm_j, for |j - k| <= r,
    # each pair's factor times dy_j as TF's loops (lrn_op.cc) compute it: an infinite dy_j gives
    # +-inf, not the inf - inf of dy_j * norm_j^-beta - (... dy_j ...) summed apart. One pass per
    # depth offset, as the window sum.
    depth = x.shape[-1]
    out = xp.zeros(dy.shape, dtype=dy.dtype)
    coef = dy.dtype.type(-2) * alpha * beta
    for o in range(-min(r, depth), min(r, depth) + 1):
        ks, js = slice(max(0, -o), min(depth, depth - o)), slice(max(0, o), min(depth, depth + o))
        term = coef * x[..., ks] * y[..., js] / norm[..., js]
        if o == 0:
            term += norm**-beta
        out[..., ks] += term * dy[..., js]
    return out
