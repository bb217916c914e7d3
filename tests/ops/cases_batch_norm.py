"""Cases for batch_norm_ops: FusedBatchNorm / V2 / V3 and their gradient ops.

The reference loops over channels and writes TF's CPU formulas out per channel: the batch's
mean and biased variance normalize, the returned variance is Bessel-corrected, the blend is
(1 - f) * old + f * new; the gradient is the textbook batch-norm backward pass.
"""

import numpy as np

from tests.ops.harness import Case, f32, pos32

_AXIS = {"NHWC": -1, "NDHWC": -1, "NCHW": 1, "NCDHW": 1}


def _per_channel(x, fmt):
    """x as [C, everything else]."""
    return np.moveaxis(x, _AXIS[fmt], 0).reshape(x.shape[_AXIS[fmt]], -1)


def _from_channels(cols, like, fmt):
    moved = np.moveaxis(like, _AXIS[fmt], 0)
    return np.moveaxis(cols.reshape(moved.shape), 0, _AXIS[fmt])


def bn_ref(x, scale, offset, mean, var, eps=1e-4, training=True, factor=1.0, fmt="NHWC", v3=True):
    cols = _per_channel(x.astype(np.float64), fmt)
    y = np.empty_like(cols)
    outs = [np.empty(len(cols)) for _ in range(4)]  # batch mean, batch var, saved mean, saved var
    for c, v in enumerate(cols):
        if training:
            m, s2 = v.mean(), ((v - v.mean()) ** 2).mean()
            unbiased = s2 * len(v) / max(len(v) - 1, 1)
            bm = m if factor == 1 else (1 - factor) * mean[c] + factor * m
            bv = unbiased if factor == 1 else (1 - factor) * var[c] + factor * unbiased
            outs[0][c], outs[1][c], outs[2][c], outs[3][c] = bm, bv, m, s2
        else:
            m, s2 = mean[c], var[c]
            outs[0][c] = outs[2][c] = m
            outs[1][c] = outs[3][c] = s2
        y[c] = (v - m) / np.sqrt(s2 + eps) * scale[c] + offset[c]
    u = scale.dtype
    res = [_from_channels(y, x, fmt).astype(x.dtype), *(o.astype(u) for o in outs)]
    return res + [np.zeros((), u)] if v3 else res


def bn_grad_ref(dy, x, scale, rs1, rs2, *_rs3, eps=1e-4, training=True, fmt="NHWC"):
    g, cols = _per_channel(dy.astype(np.float64), fmt), _per_channel(x.astype(np.float64), fmt)
    dx = np.empty_like(cols)
    dscale, doffset = np.empty(len(cols)), np.empty(len(cols))
    for c, (gc, xc) in enumerate(zip(g, cols)):
        inv = 1 / np.sqrt(rs2[c] + eps)
        x_hat = (xc - rs1[c]) * inv
        doffset[c], dscale[c] = gc.sum(), (gc * x_hat).sum()
        if training:
            dx[c] = scale[c] * inv * (gc - gc.mean() - x_hat * (gc * x_hat).mean())
        else:
            dx[c] = scale[c] * inv * gc
    u = scale.dtype
    empty = np.zeros((0,), u)
    return [_from_channels(dx, x, fmt).astype(x.dtype), dscale.astype(u), doffset.astype(u), empty, empty]


_TOL = {"rtol": 1e-4, "atol": 1e-4}


def _case(op, x, c, training=True, factor=1.0, fmt="NHWC", eps=1e-3, ident=""):
    scale, offset, mean, var = f32(c), f32(c), f32(c), pos32(c)
    if training and factor == 1.0:
        mean, var = np.zeros(0, scale.dtype), np.zeros(0, scale.dtype)  # ignored: may be empty
    attrs = {"epsilon": eps, "is_training": training, "exponential_avg_factor": factor, "data_format": fmt}
    v3 = op == "FusedBatchNormV3"
    return Case(op, [x, scale, offset, mean, var], attrs=attrs, id=f"{op}-{ident}",
                ref=lambda *a: bn_ref(*a, eps=eps, training=training, factor=factor, fmt=fmt, v3=v3), **_TOL)


def _grad_case(op, x, c, training=True, fmt="NHWC", eps=1e-3, ident=""):
    dy, scale = f32(*x.shape).astype(x.dtype), f32(c)
    if training:
        rs1, rs2 = bn_ref(x, scale, scale, scale, scale, fmt=fmt)[3:5]
    else:
        rs1, rs2 = f32(c), pos32(c)
    extra = [np.zeros((), np.float32)] if op == "FusedBatchNormGradV3" else []
    attrs = {"epsilon": eps, "is_training": training, "data_format": fmt}
    return Case(op, [dy, x, scale, rs1, rs2, *extra], attrs=attrs, id=f"{op}-{ident}",
                ref=lambda *a: bn_grad_ref(*a, eps=eps, training=training, fmt=fmt), **_TOL)


_x = f32(3, 4, 5, 2)
_xc = f32(2, 3, 4, 5)
CASES = [
    _case("FusedBatchNorm", _x, 2, ident="training"),
    _case("FusedBatchNorm", _x, 2, training=False, ident="inference"),
    _case("FusedBatchNorm", _xc, 3, fmt="NCHW", factor=0.3, ident="NCHW-factor"),
    _case("FusedBatchNormV2", _x, 2, ident="training"),
    _case("FusedBatchNormV3", _x, 2, ident="training"),
    _case("FusedBatchNormV3", _x, 2, factor=0.25, ident="training-factor"),
    _case("FusedBatchNormV3", _x, 2, training=False, ident="inference"),
    _case("FusedBatchNormV3", _xc, 3, fmt="NCHW", ident="NCHW"),
    _case("FusedBatchNormV3", f32(2, 3, 2, 4, 3), 3, fmt="NDHWC", ident="NDHWC"),
    _case("FusedBatchNormV3", f32(2, 3, 2, 4, 3), 3, fmt="NCDHW", training=False, ident="NCDHW-inference"),
    _case("FusedBatchNormV3", f32(2, 3, 4, 2).astype(np.float16), 2, ident="float16", eps=1e-2),
    _case("FusedBatchNormV3", f32(1, 1, 1, 2), 2, ident="one-element"),  # n / (n - 1) with n = 1: 1
    # An empty x: TF returns an empty y and NaN statistics (its reserve spaces are left unset).
    Case("FusedBatchNormV3", [np.zeros((0, 2, 2, 3), np.float32), *[np.ones(3, np.float32)] * 4], id="FusedBatchNormV3-empty",
         ref=lambda x, *_: [x, *[np.full(3, np.nan, np.float32)] * 4, np.zeros((), np.float32)]),
    _grad_case("FusedBatchNormGrad", _x, 2, ident="training"),
    _grad_case("FusedBatchNormGrad", _x, 2, training=False, ident="inference"),
    _grad_case("FusedBatchNormGradV2", _xc, 3, fmt="NCHW", ident="NCHW"),
    _grad_case("FusedBatchNormGradV3", _x, 2, ident="training"),
    _grad_case("FusedBatchNormGradV3", _xc, 3, training=False, fmt="NCHW", ident="NCHW-inference"),
    _grad_case("FusedBatchNormGradV3", f32(2, 2, 3, 2, 3), 3, fmt="NDHWC", ident="NDHWC"),
]
