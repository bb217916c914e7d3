"""Cases for the trigonometric, hyperbolic and special-function ops, the NaN-safe and truncating
binary ops, and special_math_ops (ClipByValue, CheckNumerics, CumulativeLogsumexp, LinSpace).

References are plain numpy (or Python's math module for erf/erfc, which the kernels take from
scipy); the cases pinning TF's semantics (truncation toward zero, 0 where NaN-safe ops say so,
halves to even) carry literal expected values.
"""

import math

import numpy as np

from tests.ops.harness import Case, f32, f64, pos32


def _c128(*shape):
    return f64(*shape) + 1j * f64(*shape)


def _unit(*shape):
    return f64(*shape, low=-0.9, high=0.9)


def _inverse(f, y, lo=-10.0, hi=10.0):
    """The z with f(z) = y of an increasing f, by bisection."""
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) < y else (lo, mid)
    return (lo + hi) / 2


def _bessel_e(x, order):
    """exp(-|x|) I_order(x) from the power series sum (x/2)^(2k+n) / (k! (k+n)!)."""
    out = []
    for v in x:
        total = sum((v / 2) ** (2 * k + order) / (math.factorial(k) * math.factorial(k + order)) for k in range(40))
        out.append(math.exp(-abs(v)) * total)
    return np.array(out)


_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def _as(dtype, fn):
    return lambda *xs: fn(*xs).astype(dtype)


def _logcumsumexp(x, axis=0, exclusive=False, reverse=False):
    x = np.flip(x, axis) if reverse else x
    out = np.log(np.cumsum(np.exp(x.astype(np.float64)), axis=axis))
    if exclusive:
        out = np.concatenate([np.full_like(np.take(out, [0], axis), -np.inf), np.delete(out, -1, axis)], axis)
    return (np.flip(out, axis) if reverse else out).astype(x.dtype)


_UNARY = [
    Case("Tan", [f32(2, 3, low=-1.2, high=1.2)], ref=np.tan, rtol=1e-5),
    Case("Tan", [_c128(4)], ref=np.tan, id="Tan-complex"),
    Case("Asin", [_unit(5)], ref=np.arcsin),
    Case("Acos", [_unit(5).astype(np.float32)], ref=np.arccos, rtol=1e-5),
    Case("Atan", [f64(2, 3, low=-9, high=9)], ref=np.arctan),
    Case("Asin", [_c128(3)], ref=np.arcsin, id="Asin-complex"),
    Case("Sinh", [f32(4)], ref=np.sinh, rtol=1e-5),
    Case("Cosh", [f64(4)], ref=np.cosh),
    Case("Asinh", [f64(2, 2, low=-9, high=9)], ref=np.arcsinh),
    Case("Acosh", [np.array([1.0, 1.5, 10.0, 0.5])],
         ref=lambda x: np.array([0.0, 0.9624236501192069, 2.993222846126381, np.nan]), id="Acosh-nan-below-1"),
    Case("Atanh", [_unit(6)], ref=np.arctanh),
    Case("Erf", [f64(3, 2, low=-3, high=3)], ref=_erf, rtol=1e-12),
    Case("Erf", [f32(5)], ref=_as(np.float32, _erf), rtol=1e-6, id="Erf-float32"),
    Case("Erf", [np.array([-np.inf, np.inf, 0.5])], ref=lambda x: np.array([np.nan, np.nan, _erf(np.array(0.5))]),
         rtol=1e-12, id="Erf-float64-inf-is-nan"),  # TF's double kernel
    Case("Erf", [np.array([-np.inf, np.inf], np.float32)], ref=lambda x: np.array([-1.0, 1.0], np.float32),
         id="Erf-float32-inf"),
    Case("Erfc", [f64(6, low=-3, high=8)], ref=_erfc, rtol=1e-12),
    # math.lgamma is log|Gamma|, as TF's Lgamma; Digamma's reference by the reflection and
    # recurrence from scipy-free literals (psi(1) = -gamma, psi(1/2) = -gamma - 2 ln 2)
    # Erf(Erfinv(y)) = y and Phi(Ndtri(p)) = p; the Bessel functions against their series.
    Case("Erfinv", [np.array([-0.9, -0.3, 0.0, 0.5, 0.99])], rtol=1e-10,
         ref=lambda y: np.array([_inverse(math.erf, v) for v in y])),
    Case("Ndtri", [np.array([0.01, 0.3, 0.5, 0.975])], rtol=1e-10,
         ref=lambda p: np.array([_inverse(lambda z: 0.5 * math.erfc(-z / math.sqrt(2)), v) for v in p])),
    Case("BesselI0e", [np.array([-2.0, 0.0, 0.5, 3.0])], rtol=1e-12, ref=lambda x: _bessel_e(x, 0)),
    Case("BesselI1e", [np.array([-2.0, 0.0, 0.5, 3.0])], rtol=1e-12, atol=1e-15, ref=lambda x: _bessel_e(x, 1)),
    # tf.math.special at x = 1 (Abramowitz and Stegun's tables) and at their special points.
    *[Case(op, [np.array([1.0, 0.0])], rtol=1e-12, atol=1e-15, ref=lambda x, w=want: np.array(w), id=f"{op}-table")
      for op, want in (("BesselI0", [1.2660658777520082, 1.0]), ("BesselI1", [0.5651591039924851, 0.0]),
                       ("BesselJ0", [0.7651976865579666, 1.0]), ("BesselJ1", [0.44005058574493355, 0.0]),
                       ("BesselK0", [0.42102443824070834, np.inf]), ("BesselK1", [0.6019072301972346, np.inf]),
                       ("BesselK0e", [1.1444630798068949, np.inf]), ("BesselK1e", [1.636153486263258, np.inf]),
                       ("BesselY0", [0.08825696421567697, -np.inf]), ("BesselY1", [-0.7812128213002887, -np.inf]),
                       ("Dawsn", [0.5380795069127684, 0.0]), ("Expint", [1.8951178163559368, -np.inf]),
                       ("FresnelCos", [0.7798934003768228, 0.0]), ("FresnelSin", [0.4382591473903548, 0.0]))],
    # TF's values off the real domain (TF 2.21's numbers, found by tf_fuzz_parity.py --family 4):
    # K is +inf and Y -inf for every x < 0, Expint NaN there and at +inf, float32 Y1(0) NaN
    *[Case(op, [np.array([-np.inf, -2.5, -0.5, 1.0, np.inf], dt)], rtol=1e-6, atol=1e-15, id=f"{op}-{dt}-negative",
           ref=lambda x, w=want, dt=dt: np.array(w, dt))
      for dt in ("float32", "float64")
      for op, want in (("BesselK0", [np.inf, np.inf, np.inf, 0.42102443824070834, 0.0]),
                       ("BesselK1e", [np.inf, np.inf, np.inf, 1.636153486263258, 0.0]),
                       ("BesselY0", [-np.inf, -np.inf, -np.inf, 0.08825696421567697, np.nan]),
                       ("Expint", [np.nan, np.nan, np.nan, 1.8951178163559368, np.nan]))],
    Case("BesselY1", [np.array([0.0, -0.0, -1.0, 1.0], np.float32)], rtol=1e-6, id="BesselY1-float32-zero",
         ref=lambda x: np.array([np.nan, np.nan, -np.inf, -0.7812128213002887], np.float32)),
    Case("Lgamma", [np.array([-np.inf, np.inf, 1.0])], ref=lambda x: np.array([np.inf, np.inf, 0.0]), id="Lgamma-infinities"),
    Case("Digamma", [np.array([0.0, -0.0, 1.0])], ref=lambda x: np.array([np.nan, np.nan, -np.euler_gamma]), id="Digamma-zero"),
    Case("Spence", [np.array([1.0, 0.0, 2.0])], rtol=1e-12, ref=lambda x: np.array([0.0, np.pi**2 / 6, -np.pi**2 / 12])),
    Case("BesselJ0", [f32(4, low=-5, high=5)], rtol=1e-5, atol=1e-6, id="BesselJ0-float32",
         ref=lambda x: np.array([sum((-1) ** k * (v / 2) ** (2 * k) / math.factorial(k) ** 2 for k in range(30)) for v in
                                 x.astype(np.float64)], np.float32)),
    Case("Lgamma", [np.array([0.5, 1.0, 2.5, 7.0, -0.5, -2.5])], rtol=1e-12,
         ref=lambda x: np.array([math.lgamma(v) for v in x])),
    Case("Lgamma", [f32(4, low=0.1, high=5)], ref=lambda x: np.array([math.lgamma(v) for v in x], np.float32),
         rtol=1e-5, id="Lgamma-float32"),
    Case("Digamma", [np.array([1.0, 0.5, 2.0, 3.5])], rtol=1e-12,
         ref=lambda x: np.array([-np.euler_gamma, -np.euler_gamma - 2 * np.log(2), 1 - np.euler_gamma,
                                 -np.euler_gamma - 2 * np.log(2) + 2 + 2 / 3 + 2 / 5])),  # fmt: skip
    # polygamma(1, 1) = pi^2 / 6, polygamma(2, 1) = -2 zeta(3), polygamma(0, x) = digamma; a fraction: nan
    Case("Polygamma", [np.array([1.0, 2.0, 0.0, 0.5, -1.0]), np.array([1.0, 1.0, 1.0, 1.0, 1.0])], rtol=1e-12,
         ref=lambda a, x: np.array([np.pi**2 / 6, -2 * 1.2020569031595942, -np.euler_gamma, np.nan, np.nan])),
    # TF's Polygamma is (-1)^(a+1) a! Zeta(a + 1, x) for a >= 1: at x = 0, -1, -inf inf for odd a, nan
    # for even a; Digamma's nan at 0 for a = 0; an infinite a inf for x <= 1, nan above (TF 2.21)
    Case("Polygamma", [np.array([1.0, 2.0, 3.0, 2.0, 0.0, np.inf, np.inf]), np.array([-1.0, -1.0, 0.0, -np.inf, 0.0, 0.5, 2.0])],
         ref=lambda a, x: np.array([np.inf, np.nan, np.inf, np.nan, np.nan, np.inf, np.nan]), id="Polygamma-poles"),
    Case("Polygamma", [np.array([[1.0], [3.0]]), np.array([0.5, 2.0])], rtol=1e-10, id="Polygamma-broadcast",
         ref=lambda a, x: np.array([[np.pi**2 / 2, np.pi**2 / 6 - 1], [np.pi**4, 6 * (np.pi**4 / 90 - 1)]])),
    Case("Erfc", [np.array([10.0, 26.0])], ref=lambda x: np.array([2.088487583762545e-45, 5.663192408856143e-296]),
         rtol=1e-12, atol=0, id="Erfc-tail-literal"),
    Case("Expm1", [np.array([1e-10, -1e-8, 0.5, -3.0], np.float32)], ref=np.expm1, rtol=1e-6, atol=0),
    Case("Expm1", [_c128(3)], ref=np.expm1, id="Expm1-complex"),
    Case("Rint", [np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4, -2.6], np.float32)],
         ref=lambda x: np.array([0.0, 2.0, 2.0, -0.0, -2.0, 2.0, -3.0], np.float32), id="Rint-halves-to-even"),
    Case("IsInf", [np.array([0.0, np.inf, -np.inf, np.nan, 1e38], np.float32)],
         ref=lambda x: np.array([False, True, True, False, False])),
    Case("Conj", [np.array([1 + 2j, -3 - 0.5j], np.complex64)], ref=lambda x: np.array([1 - 2j, -3 + 0.5j], np.complex64)),
    Case("Conj", [_c128(2, 2)], ref=np.conj, id="Conj-complex128"),
]

_NUM = np.array([7, -7, 7, -7, 6, -6, 0, 1], dtype=np.int32)
_DEN = np.array([2, 2, -2, -2, 4, 4, 5, -3], dtype=np.int32)

_BINARY = [
    Case("Atan2", [f32(2, 3), f32(3)], ref=np.arctan2, rtol=1e-6),
    Case("Atan2", [np.array([1.0, 1.0, -1.0, -1.0, 0.0]), np.array([1.0, -1.0, 1.0, -1.0, -1.0])],
         ref=lambda y, x: np.array([np.pi / 4, 3 * np.pi / 4, -np.pi / 4, -3 * np.pi / 4, np.pi]),
         id="Atan2-quadrants-literal"),
    Case("DivNoNan", [np.array([1.0, 0.0, np.inf, np.nan, 6.0], np.float32), np.array([0.0, 0.0, 0.0, 0.0, 3.0], np.float32)],
         ref=lambda x, y: np.array([0.0, 0.0, 0.0, 0.0, 2.0], np.float32), id="DivNoNan-literal"),
    Case("DivNoNan", [f64(2, 3), pos32(3).astype(np.float64)], ref=np.divide, id="DivNoNan-broadcast"),
    Case("DivNoNan", [_c128(3), np.array([0j, 1 + 1j, 2j])],
         ref=lambda x, y: np.where(y == 0, 0, x / np.where(y == 0, 1, y)), id="DivNoNan-complex"),
    Case("MulNoNan", [np.array([np.inf, np.nan, 2.0, 3.0]), np.array([0.0, 0.0, 4.0, -1.0])],
         ref=lambda x, y: np.array([0.0, 0.0, 8.0, -3.0]), id="MulNoNan-literal"),
    Case("MulNoNan", [f32(3, 1), f32(4)], ref=np.multiply, id="MulNoNan-broadcast"),
    Case("Xlogy", [np.array([0.0, 0.0, 2.0, 3.0]), np.array([0.0, 5.0, np.e, 1.0])],
         ref=lambda x, y: np.array([0.0, 0.0, 2.0, 0.0]), id="Xlogy-literal"),
    Case("Xlogy", [f32(2, 3), pos32(3)], ref=lambda x, y: x * np.log(y), rtol=1e-5, id="Xlogy-broadcast"),
    Case("Xdivy", [np.array([0.0, 0.0, 3.0]), np.array([0.0, 2.0, 4.0])],
         ref=lambda x, y: np.array([0.0, 0.0, 0.75]), id="Xdivy-literal"),
    Case("Xdivy", [_c128(3), _c128(3)], ref=lambda x, y: x / y, id="Xdivy-complex"),
    Case("NextAfter", [np.array([1.0, 0.0, 2.0], np.float32), np.array([2.0, -1.0, 2.0], np.float32)], rtol=0, atol=0,
         ref=lambda x, y: np.array([1 + 2.0**-23, -(2.0**-149), 2.0], np.float32)),
    Case("Xlog1py", [np.array([0.0, 0.0, 3.0, -2.0]), np.array([-1.0, 2.0, 4.0, 1e-10])],
         ref=lambda x, y: np.array([0.0, 0.0, 3 * np.log(5.0), -2e-10]), rtol=1e-12, id="Xlog1py-literal"),
    Case("TruncateDiv", [np.array([7.5, -7.5, 7.5, -0.5], np.float32), np.array([2, 2, -2, 4], np.float32)],
         ref=lambda x, y: np.array([3, -3, -3, 0], np.float32), id="TruncateDiv-float"),
    Case("TruncateDiv", [_NUM, _DEN], ref=lambda x, y: np.array([3, -3, -3, 3, 1, -1, 0, 0], np.int32),
         id="TruncateDiv-literal"),
    Case("TruncateDiv", [np.array([-9, 9], np.int64), np.array(4, np.int64)],
         ref=lambda x, y: np.array([-2, 2], np.int64), id="TruncateDiv-int64-scalar"),
    Case("TruncateMod", [_NUM, _DEN], ref=lambda x, y: np.array([1, -1, 1, -1, 2, -2, 0, 1], np.int32),
         id="TruncateMod-literal"),
    Case("TruncateMod", [np.array([7.5, -7.5, 7.5, -7.5], np.float32), np.array([2.0, 2.0, -2.0, -2.0], np.float32)],
         ref=lambda x, y: np.array([1.5, -1.5, 1.5, -1.5], np.float32), id="TruncateMod-float-literal"),
]

_OTHER = [
    Case("ClipByValue", [f32(3, 4), np.float32(-0.5), np.float32(0.5)], ref=lambda t, a, b: np.clip(t, a, b)),
    Case("ClipByValue", [f64(2, 3), f64(2, 3, low=-2, high=0), f64(2, 3, low=0, high=2)],
         ref=lambda t, a, b: np.minimum(np.maximum(t, a), b), id="ClipByValue-elementwise-bounds"),
    Case("ClipByValue", [np.array([-5, 0, 3, 9], np.int32), np.int32(4), np.int32(2)],
         ref=lambda t, a, b: np.array([4, 4, 4, 4], np.int32), id="ClipByValue-min-above-max-literal"),
    Case("CheckNumerics", [f32(2, 3)], attrs={"message": "m"}, ref=lambda x: x),
    Case("CumulativeLogsumexp", [f64(3, 4), np.int32(1)], ref=lambda x, a: _logcumsumexp(x, 1), const_inputs=[1]),
    # TF's reducer on non-finite values (TF 2.21's results): a NaN keeps the sum and adds log 2
    # (nothing to -inf), inf + inf (or inf + NaN) is NaN, -inf + -inf stays -inf.
    Case("CumulativeLogsumexp", [np.array([[1.0, np.nan, np.inf, np.nan], [np.nan, 1.0, np.inf, 2.0],
                                           [-np.inf, -np.inf, 0.0, np.inf]], np.float32), np.int32(1)], const_inputs=[1],
         ref=lambda x, a: np.array([[1.0, 1 + np.log(2), np.inf, np.nan], [-np.inf, 1.0, np.inf, np.inf],
                                    [-np.inf, -np.inf, 0.0, np.inf]], np.float32), id="CumulativeLogsumexp-nan-inf"),
    Case("CumulativeLogsumexp", [np.array([np.inf, np.inf, 1.0]), np.int32(0)], const_inputs=[1],
         ref=lambda x, a: np.array([np.inf, np.nan, np.nan]), id="CumulativeLogsumexp-inf-plus-inf-is-nan"),
    Case("CumulativeLogsumexp", [f32(5, 2), np.int32(0)], attrs={"exclusive": True, "reverse": True},
         ref=lambda x, a: _logcumsumexp(x, 0, True, True), rtol=1e-5, const_inputs=[1], id="CumulativeLogsumexp-excl-rev"),
    # No overflow: exp(1000) is inf in float64, the running log-sum is not.
    Case("CumulativeLogsumexp", [np.array([1000.0, 1000.0, -1000.0]), np.int64(-1)],
         ref=lambda x, a: np.array([1000.0, 1000.0 + np.log(2.0), 1000.0 + np.log(2.0)]), const_inputs=[1],
         id="CumulativeLogsumexp-large-literal"),
    Case("LinSpace", [np.float32(-1.0), np.float32(1.0), np.int32(5)],
         ref=lambda a, b, n: np.array([-1.0, -0.5, 0.0, 0.5, 1.0], np.float32), const_inputs=[2]),
    # The step is computed in float32 and the last value is stop exactly.
    Case("LinSpace", [np.float32(0.0), np.float32(1.0), np.int64(4)],
         ref=lambda a, b, n: np.array([0.0, 0.33333334, 0.6666667, 1.0], np.float32), rtol=0, atol=0,
         const_inputs=[2], id="LinSpace-float32-literal"),
    Case("LinSpace", [np.float64(3.0), np.float64(-3.0), np.int32(1)], ref=lambda a, b, n: np.array([3.0]),
         id="LinSpace-one", exact_shape=False),
]

CASES = _UNARY + _BINARY + _OTHER
