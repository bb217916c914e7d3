"""Stateful gamma and Poisson draws: RandomGamma (tf.random.gamma) and RandomPoissonV2
(tf.random.poisson), with RandomGamma's gradient in alpha (TF's implicit reparameterization,
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
