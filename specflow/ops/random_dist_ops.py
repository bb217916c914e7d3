"""Stateful gamma, Poisson and truncated normal draws: RandomGamma (tf.random.gamma),
RandomPoissonV2 (tf.random.poisson) and ParameterizedTruncatedNormal (per-batch means, stdevs and
bounds; scipy's truncnorm draws from the node's stream), with RandomGamma's gradient in alpha (TF's implicit reparameterization,
RandomGammaGrad from :mod:`specflow.ops.stateless_random_dist_ops`).

As every stateful random op here (:mod:`specflow.ops.random_ops`), the draws come from the node's
numpy generator seeded by TF's rules (seed/seed2, else the graph seed and the node's name): the
distributions are TF's, the values are not TF's stream. Out-of-domain parameters give what TF's
kernels give: Poisson of a rate <= 0 is 0 (a NaN rate is refused: TF's CPU kernel never returns);
gamma of alpha 0 is 0, of a negative or NaN alpha NaN.
"""

from __future__ import annotations

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.random_ops import _generator, _shape_arg
from specflow.ops.registry import gradient, kernel, not_differentiable, register_op

_SEEDS = ["seed: int = 0", "seed2: int = 0"]


def _param_shape(ic: InferenceContext) -> list[Shape]:
    """shape's value followed by the parameter's shape (one draw per parameter per sample)."""
    if ic.shape(0).rank not in (None, 1):
        raise ic.fail(f"shape must be a vector of dimensions, got a tensor of shape {ic.shape(0)}")
    lead, param = ic.shape_from_value(0), ic.shape(1)
    if lead.rank is None or param.rank is None:
        return [Shape.unknown()]
    return [lead.concatenate(param)]


# --- RandomGamma --------------------------------------------------------------------------------

register_op(
    "RandomGamma",
    inputs=["shape: S", "alpha: T"],
    outputs=["output: T"],
    attrs=[*_SEEDS, "S: {int32, int64}", "T: {float16, float32, float64}"],
    stateful=True,
    shape=_param_shape,
    doc="Gamma(alpha, 1) draws of shape shape + alpha.shape (scale them for other betas).",
)


@kernel("RandomGamma", devices=("CPU",), host_inputs=(0, 1))
def _random_gamma(ctx, shape, alpha):
    dims = _shape_arg(ctx, shape) + tuple(alpha.shape)
    a = np.broadcast_to(alpha.astype(np.float64), dims)
    bad = ~(a >= 0)  # negative or NaN: TF's NaN (alpha 0 draws 0)
    with np.errstate(invalid="ignore"):
        draws = _generator(ctx).standard_gamma(np.where(bad, 1.0, a))
    return np.where(bad, np.nan, draws).astype(alpha.dtype)


@gradient("RandomGamma")
def _random_gamma_grad(b, node, dys):
    # TF's: d sample / d alpha at fixed CDF times the incoming gradient, summed over the sample dims
    shape, alpha = node.data_inputs
    partial = gu.emit(b, "RandomGammaGrad", alpha, node.name)
    s_dt = b.spec(shape).dtype
    lead = gu.emit(b, "Size", shape, out_type=s_dt)
    axes = gu.emit(b, "Range", gu.const(b, np.zeros((), s_dt.numpy)), lead, gu.const(b, np.ones((), s_dt.numpy)))
    return [None, gu.emit(b, "Sum", gu.emit(b, "Mul", partial, dys[0]), axes)]


# --- RandomPoissonV2 ----------------------------------------------------------------------------

register_op(
    "RandomPoissonV2",
    inputs=["shape: S", "rate: R"],
    outputs=["output: dtype"],
    attrs=[*_SEEDS, "S: {int32, int64}", "R: {float16, float32, float64, int32, int64} = float64",
           "dtype: {float16, float32, float64, int32, int64} = int64"],  # fmt: skip
    stateful=True,
    shape=_param_shape,
    doc="Poisson(rate) counts of shape shape + rate.shape, in dtype.",
)
not_differentiable("RandomPoissonV2")


@kernel("RandomPoissonV2", devices=("CPU",), host_inputs=(0, 1))
def _random_poisson(ctx, shape, rate):
    dims = _shape_arg(ctx, shape) + tuple(rate.shape)
    lam = np.broadcast_to(rate.astype(np.float64), dims)
    if np.isnan(lam).any():
        raise ctx.fail("rate has a NaN: a Poisson rate must be a number (TF's kernel never returns)")
    return _generator(ctx).poisson(np.maximum(lam, 0.0)).astype(ctx.attrs["dtype"].numpy)


# --- ParameterizedTruncatedNormal ---------------------------------------------------------------


def _ptn_shape(ic: InferenceContext) -> list[Shape]:
    if ic.shape(0).rank not in (None, 1):
        raise ic.fail(f"shape must be a vector of dimensions, got a tensor of shape {ic.shape(0)}")
    for i, what in enumerate(("means", "stdevs", "minvals", "maxvals"), start=1):
        if ic.shape(i).rank not in (None, 0, 1):
            raise ic.fail(f"Input {what} should be a scalar or vector, got shape: {ic.shape(i)}")
    return [ic.shape_from_value(0)]


register_op(
    "ParameterizedTruncatedNormal",
    inputs=["shape: T", "means: dtype", "stdevs: dtype", "minvals: dtype", "maxvals: dtype"],
    outputs=["output: dtype"],
    attrs=[*_SEEDS, "dtype: {float16, bfloat16, float32, float64}", "T: {int32, int64}"],
    stateful=True,
    shape=_ptn_shape,
    doc="Normal(means, stdevs) draws kept within [minvals, maxvals] (one-sided with an infinite bound), "
    "one parameter set per batch entry (shape[0]; scalars for all).",
)
not_differentiable("ParameterizedTruncatedNormal")


@kernel("ParameterizedTruncatedNormal", devices=("CPU",), host_inputs=(0, 1, 2, 3, 4))
def _parameterized_truncated_normal(ctx, shape, means, stdevs, minvals, maxvals):
    from scipy.stats import truncnorm

    dims = _shape_arg(ctx, shape)
    if not dims:
        raise ctx.fail("shape must have at least one dimension (the batch), got []")
    batch = dims[0]
    params = []
    for what, p in (("means", means), ("stdevs", stdevs), ("minvals", minvals), ("maxvals", maxvals)):
        if p.ndim > 1:
            raise ctx.fail(f"Input {what} should be a scalar or vector, got shape: {list(p.shape)}")
        if p.ndim == 1 and p.shape[0] not in (1, batch):
            raise ctx.fail(f"Input {what} should have length 1 or shape[0] ({batch}), got shape: {list(p.shape)}")
        params.append(np.broadcast_to(p.astype(np.float64).reshape(-1, *[1] * (len(dims) - 1)) if p.ndim else
                                      p.astype(np.float64), dims))  # fmt: skip
    mean, std, lo, hi = params
    if mean.size and (not (std > 0).all() or not (lo < hi).all()):  # TF's test, before drawing anything
        raise ctx.fail("Invalid parameters: every stdev must be > 0 and every minval < its maxval")
    if not mean.size:
        return np.zeros(dims, ctx.attrs["dtype"].numpy)
    with np.errstate(invalid="ignore", divide="ignore"):
        draws = truncnorm.rvs((lo - mean) / std, (hi - mean) / std, loc=mean, scale=std, size=dims,
                              random_state=_generator(ctx))  # fmt: skip
    return np.clip(draws, lo, hi).astype(ctx.attrs["dtype"].numpy)
