"""Gradient cases for the trigonometric, hyperbolic and special-function ops, the NaN-safe
binary ops, Atan2 and special_math_ops. Inputs stay inside each function's domain and away from
the points where a piecewise op switches (ClipByValue's bounds, DivNoNan's y = 0)."""

import numpy as np

from tests.ops.grad_harness import GradCase, away_from, g64, gpos


def _unit(*shape):
    return g64(*shape, low=-0.8, high=0.8)


_UNARY = [
    GradCase("Tan", [g64(2, 3, low=-1.2, high=1.2)]),
    GradCase("Asin", [_unit(2, 3)]),
    GradCase("Acos", [_unit(2, 3)]),
    GradCase("Atan", [g64(2, 3)]),
    GradCase("Sinh", [g64(2, 3)]),
    GradCase("Cosh", [g64(2, 3)]),
    GradCase("Asinh", [g64(2, 3)]),
    GradCase("Acosh", [gpos(2, 3, low=1.2, high=4.0)]),
    GradCase("Atanh", [_unit(2, 3)]),
    GradCase("Erf", [g64(2, 3)]),
    GradCase("Erfc", [g64(2, 3)]),
    GradCase("Lgamma", [gpos(2, 3) + 0.3]),
    GradCase("Digamma", [gpos(2, 3) + 0.3]),
    GradCase("Erfinv", [g64(2, 3, low=-0.9, high=0.9)]),
    GradCase("Ndtri", [g64(2, 3, low=0.05, high=0.95)]),
    GradCase("BesselI0e", [away_from(g64(2, 3), gap=0.2)]),
    GradCase("BesselI1e", [away_from(g64(2, 3), gap=0.2)]),
    GradCase("Expm1", [g64(2, 3)]),
    *[GradCase(op, [gpos(2, 3, low=0.3, high=3.0)]) for op in (
        "BesselI0", "BesselI1", "BesselK0", "BesselK1", "BesselK0e", "BesselK1e", "BesselJ0", "BesselJ1", "BesselY0",
        "BesselY1", "Expint", "Spence")],
    *[GradCase(op, [g64(2, 3)]) for op in ("Dawsn", "FresnelCos", "FresnelSin")],
    GradCase("BesselJ1", [np.array([0.0, 0.5, -1.5])], id="BesselJ1-at-zero"),
    # The harness perturbs the real part only: d sum(w * conj(x)) / d re(x) = w = conj(w).
    GradCase("Conj", [g64(2, 3) + 1j * g64(2, 3)], id="Conj-real-direction"),
]

_BINARY = [
    GradCase("Atan2", [g64(2, 3), away_from(g64(3), gap=0.3)]),
    GradCase("Atan2", [g64(), g64(2, 2)], id="Atan2-scalar-y"),
    GradCase("DivNoNan", [g64(2, 3), away_from(g64(3), gap=0.3)]),
    # Where y is 0 both gradients are 0 (DivNoNan of the gradient), and x's stays 0 nearby.
    GradCase("DivNoNan", [g64(3), np.array([0.0, 1.5, -0.7])], wrt=[0], id="DivNoNan-zero-divisor"),
    GradCase("MulNoNan", [g64(2, 3), g64(2, 1)]),
    GradCase("Xlogy", [away_from(g64(2, 3), gap=0.2), gpos(3)]),
    GradCase("Xdivy", [away_from(g64(2, 3), gap=0.2), away_from(g64(2, 1), gap=0.3)]),
    GradCase("Xlog1py", [away_from(g64(2, 3), gap=0.2), gpos(3)]),
    GradCase("NextAfter", [g64(2, 3), g64(3)], wrt=[0]),  # TF's: 1 for x1, 0 for x2 (a step of one ulp)
    GradCase("Polygamma", [np.array([[1.0], [2.0]]), gpos(3) + 0.5], wrt=[1]),
]

_OTHER = [
    GradCase("ClipByValue", [np.array([[-1.7, -0.2, 0.4], [1.3, 0.9, -0.6]]), np.array(-0.5), np.array(0.7)]),
    GradCase("ClipByValue", [np.array([-1.7, -0.2, 0.4, 1.3]), np.array([-1.0, 0.0, -1.0, 0.0]),
                             np.array([1.0, 1.0, 0.2, 1.0])], id="ClipByValue-elementwise-bounds"),
    GradCase("CheckNumerics", [g64(2, 3)], attrs={"message": "m"}),
    GradCase("CumulativeLogsumexp", [g64(3, 4), np.int32(1)]),
    GradCase("CumulativeLogsumexp", [g64(4, 2), np.int32(0)], attrs={"reverse": True},
             id="CumulativeLogsumexp-reverse"),
]

CASES = _UNARY + _BINARY + _OTHER
