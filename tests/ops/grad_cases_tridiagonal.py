"""Gradient cases for tridiagonal_ops: every diagonal's and the right-hand side's (superdiag's
last and subdiag's first element get 0, as they are not used)."""

from tests.ops.grad_harness import GradCase, g64

CASES = [
    GradCase("TridiagonalMatMul", [g64(1, 4), g64(1, 4), g64(1, 4), g64(4, 3)]),
    GradCase("TridiagonalMatMul", [g64(2, 1, 3), g64(2, 1, 3), g64(2, 1, 3), g64(2, 3, 2)], id="TridiagonalMatMul-batch"),
]
