"""Cases for tridiagonal_ops against the dense tridiagonal matrix built by hand and numpy's matmul."""

import numpy as np

from tests.ops.harness import Case, f32, f64


def _dense(sup, main, sub):
    """[..., M, M] from the [..., 1, M] diagonals (superdiag's last, subdiag's first unused)."""
    m = main.shape[-1]
    out = np.zeros((*main.shape[:-2], m, m), main.dtype)
    for i in range(m):
        out[..., i, i] = main[..., 0, i]
        if i + 1 < m:
            out[..., i, i + 1] = sup[..., 0, i]
            out[..., i + 1, i] = sub[..., 0, i + 1]
    return out


def _ref(sup, main, sub, rhs):
    return _dense(sup, main, sub) @ rhs


def _c(*shape):
    return f64(*shape) + 1j * f64(*shape)


def _solvable(*lead_m):
    """Diagonals of a diagonally dominant tridiagonal matrix [..., 3, M]."""
    *lead, m = lead_m
    d = f64(*lead, 3, m)
    d[..., 1, :] += 4.0 * np.sign(d[..., 1, :]) + (d[..., 1, :] == 0)
    return d


def _solve_ref(d, rhs):
    rows = (d[..., 0:1, :], d[..., 1:2, :], d[..., 2:3, :])  # [..., 1, M]: super, main, sub
    return np.linalg.solve(_dense(*rows), rhs).astype(rhs.dtype)


CASES = [
    Case("TridiagonalMatMul", [f64(1, 4), f64(1, 4), f64(1, 4), f64(4, 3)], ref=_ref, rtol=1e-12),
    Case("TridiagonalMatMul", [f32(2, 1, 5), f32(2, 1, 5), f32(2, 1, 5), f32(2, 5, 2)], ref=_ref, rtol=1e-5,
         atol=1e-6, id="TridiagonalMatMul-batch-float32"),
    Case("TridiagonalMatMul", [_c(1, 3), _c(1, 3), _c(1, 3), _c(3, 2)], ref=_ref, rtol=1e-12,
         id="TridiagonalMatMul-complex"),
    Case("TridiagonalMatMul", [f64(1, 1), f64(1, 1), f64(1, 1), f64(1, 2)], ref=_ref, id="TridiagonalMatMul-1x1"),
    # TridiagonalSolve: diagonals [..., 3, M] (TF's compact format), checked by the dense solve.
    Case("TridiagonalSolve", [_solvable(4), f64(4, 3)], ref=_solve_ref, rtol=1e-10),
    Case("TridiagonalSolve", [_solvable(2, 5).astype(np.float32), f32(2, 5, 2)], ref=_solve_ref, rtol=1e-4,
         atol=1e-5, id="TridiagonalSolve-batch-float32"),
    Case("TridiagonalSolve", [np.array([[9.0], [2.0], [9.0]]), np.array([[4.0, -1.0]])], ref=_solve_ref,
         id="TridiagonalSolve-1x1"),
]

