"""Gradient cases for tridiagonal_ops: every diagonal's and the right-hand side's (superdiag's
last and subdiag's first element get 0, as they are not used)."""

import numpy as np

from tests.ops.grad_harness import GradCase, g64


def _solvable(*lead_m):
    """Diagonals [..., 3, M] of a diagonally dominant (well conditioned) tridiagonal matrix."""
    *lead, m = lead_m
    d = g64(*lead, 3, m)
    d[..., 1, :] += 4.0 * np.sign(d[..., 1, :]) + (d[..., 1, :] == 0)
    return d

CASES = [
    GradCase("TridiagonalMatMul", [g64(1, 4), g64(1, 4), g64(1, 4), g64(4, 3)]),
    GradCase("TridiagonalMatMul", [g64(2, 1, 3), g64(2, 1, 3), g64(2, 1, 3), g64(2, 3, 2)], id="TridiagonalMatMul-batch"),
    GradCase("TridiagonalSolve", [_solvable(4), g64(4, 2)]),
    GradCase("TridiagonalSolve", [_solvable(2, 3), g64(2, 3, 1)], id="TridiagonalSolve-batch"),
]
