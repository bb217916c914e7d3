"""Gradient cases for batch_norm_ops. As in TF, only y's gradient flows back (the statistics
outputs feed moving averages), so the loss is over y alone, and x, scale and offset are checked
(no gradient reaches mean / variance, in either mode). The gradient ops' own gradients (second
derivatives) are checked for y_backprop, x and scale."""

import numpy as np

from tests.ops.grad_harness import GradCase, g64, gpos


def _case(op, x, c, training=True, factor=1.0, fmt="NHWC", ident=""):
    mean, var = (g64(c), gpos(c)) if not training or factor != 1.0 else (np.zeros(0), np.zeros(0))
    attrs = {"epsilon": 1e-3, "is_training": training, "exponential_avg_factor": factor, "data_format": fmt}
    return GradCase(op, [x, g64(c), g64(c), mean, var], attrs, wrt=[0, 1, 2], outputs=[0], id=f"{op}-{ident}")


CASES = [
    _case("FusedBatchNorm", g64(2, 2, 3, 2), 2, ident="training"),
    _case("FusedBatchNorm", g64(2, 2, 3, 2), 2, training=False, ident="inference"),
    _case("FusedBatchNormV2", g64(2, 2, 2, 3), 2, fmt="NCHW", ident="NCHW"),
    _case("FusedBatchNormV3", g64(2, 2, 3, 2), 2, factor=0.5, ident="training-factor"),
    _case("FusedBatchNormV3", g64(2, 2, 2, 3), 2, fmt="NCHW", training=False, ident="NCHW-inference"),
    _case("FusedBatchNormV3", g64(2, 1, 2, 2, 2), 2, fmt="NDHWC", ident="NDHWC"),
]


def _grad_case(op, x, c, training=True, fmt="NHWC", ident=""):
    """The gradient op's own gradient for y_backprop, x and scale (reserve spaces held fixed, as
    in TF); the loss is over x_backprop, scale_backprop and offset_backprop."""
    extra = [np.zeros(())] if op == "FusedBatchNormGradV3" else []
    attrs = {"epsilon": 1e-3, "is_training": training, "data_format": fmt}
    return GradCase(op, [g64(*x.shape), x, g64(c), g64(c), gpos(c), *extra], attrs, wrt=[0, 1, 2],
                    outputs=[0, 1, 2], id=f"{op}-{ident}")  # fmt: skip


CASES += [
    _grad_case("FusedBatchNormGrad", g64(2, 2, 3, 2), 2, ident="training"),
    _grad_case("FusedBatchNormGrad", g64(2, 2, 3, 2), 2, training=False, ident="inference"),
    _grad_case("FusedBatchNormGradV2", g64(2, 2, 2, 3), 2, fmt="NCHW", ident="NCHW"),
    _grad_case("FusedBatchNormGradV3", g64(2, 3, 2, 2), 2, ident="training"),
    _grad_case("FusedBatchNormGradV3", g64(2, 2, 1, 2, 2), 2, fmt="NCDHW", training=False, ident="NCDHW-inference"),
]
