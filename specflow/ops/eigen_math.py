"""Eigen's float32 exp, bit for bit: where TF's kernels use ``exp(x) - 1`` (Elu, Selu), the
cancellation near 0 magnifies exp's last-place differences (numpy's exp differs from Eigen's
in about half the float32 values) into relative errors up to 1e-3; with Eigen's own polynomial
the results equal TF 2.21's CPU kernels.

Eigen's ``pexp_float`` (GenericPacketMathFunctions.h): Cephes' range reduction x = m ln2 + r,
a degree-6 polynomial for exp(r), scaled by 2^m; TF's x86 builds have no FMA, so each
multiply-add rounds twice (as numpy's float32 arithmetic here). Results below float32's
smallest normal are flushed to 0, as TF's CPU threads run with flush-to-zero.
"""

from __future__ import annotations

import numpy as np

_F = np.float32
_TINY = _F(np.finfo(np.float32).tiny)


def _madd(a, b, c):
    return a * b + c  # two roundings: TF's pmadd without FMA


def exp_f32(x: np.ndarray) -> np.ndarray:
    """Eigen's float32 exp of a float32 array (NaN stays NaN, -inf gives 0, +inf gives inf)."""
    x0 = np.asarray(x, np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        x = np.minimum(x0, _F(88.723))
        m = np.floor(_madd(x, _F(1.44269504088896341), _F(0.5)))
        r = _madd(m, _F(-0.693359375), x)
        r = _madd(m, _F(2.12194440e-4), r)
        r2 = r * r
        p_even = _madd(r2, _F(1.37449637986719608306884765625e-3), _F(4.166965186595916748046875e-2))
        p_odd = _madd(r2, _F(8.36894474923610687255859375e-3), _F(0.16666518151760101318359375))
        p_even = _madd(p_even, r2, _F(0.49999988079071044921875))
        y = _madd(_madd(p_odd, r, p_even), r2, r + _F(1))
        scale = np.where(np.isfinite(m), m, 0).astype(np.int32)
        out = np.maximum(np.ldexp(y, scale).astype(np.float32), x0)
    out = np.where((x0 < _F(-104.0)) | (np.abs(out) < _TINY), _F(0), out)
    return out.astype(np.float32, copy=False)


# Eigen's ptanh_float without FMA: a [9/8] rational approximation on x clamped to +-c (c the
# smallest argument where it gives exactly 1), coefficients as TF 2.21's Eigen has them.
_TANH_CLAMP = _F(7.90738964080810547)
_TANH_ALPHA = tuple(_F(v) for v in (1.394553628e-8, 2.102733560e-5, 3.520756727e-3, 1.340216100e-1))
_TANH_BETA = tuple(_F(v) for v in (8.015776984e-7, 3.326951409e-4, 2.597254514e-2, 4.673548340e-1, 1.0))


def tanh_f32(x: np.ndarray) -> np.ndarray:
    """Eigen's float32 tanh of a float32 array, bit for bit TF's (NaN stays NaN; denormal
    inputs give 0, TF's flush-to-zero). In place on temporaries: about 5x numpy's tanh."""
    x = np.asarray(x, np.float32)
    xc = np.clip(x, -_TANH_CLAMP, _TANH_CLAMP)
    x2 = xc * xc
    p = x2 * _TANH_ALPHA[0]  # Horner, each multiply and add rounded (no FMA)
    for c in _TANH_ALPHA[1:-1]:
        p += c
        p *= x2
    p += _TANH_ALPHA[-1]
    q = x2 * _TANH_BETA[0]
    for c in _TANH_BETA[1:-1]:
        q += c
        q *= x2
    q += _TANH_BETA[-1]
    x2 *= xc  # x^3 * p + x, over q
    x2 *= p
    x2 += xc
    x2 /= q
    tiny = np.abs(x) < _TINY
    if tiny.any():
        x2[tiny] *= _F(0)
    return x2
