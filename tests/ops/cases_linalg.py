"""Cases for linalg_ops: Cholesky, MatrixInverse, Qr, MatrixBandPart, MatrixDiagV3/MatrixDiagPartV3/MatrixSetDiagV3,
Diag/DiagPart, Cross. MatrixDiag references follow TF's documented element rule with loops; the
fixed RIGHT_LEFT example is TF's own docstring example."""

import numpy as np

from tests.ops.harness import Case, f32, f64, i32


def _spd(*batch, n=3, dtype=np.float64):
    a = np.random.default_rng(7).uniform(-1, 1, size=(*batch, n, n))
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dtype)


def _band_ref(x, lo, up):
    out = np.zeros_like(x)
    for i in range(x.shape[-2]):
        for j in range(x.shape[-1]):
            if (lo < 0 or i - j <= lo) and (up < 0 or j - i <= up):
                out[..., i, j] = x[..., i, j]
    return out


def _offset(d, rows, cols, max_len, align):
    length = min(rows + min(d, 0), cols - max(d, 0))
    right = align.split("_")[0 if d >= 0 else 1] == "RIGHT"
    return max_len - length if right else 0


def _diag_ref(diag, k, rows, cols, pad, align="RIGHT_LEFT"):
    lo, hi = (int(k), int(k)) if np.ndim(k) == 0 else (int(k[0]), int(k[1]))
    packed = diag[..., None, :] if lo == hi else diag
    out = np.full(packed.shape[:-2] + (rows, cols), pad, diag.dtype)
    for i in range(rows):
        for j in range(cols):
            d = j - i
            if lo <= d <= hi:
                out[..., i, j] = packed[..., hi - d, min(i, j) + _offset(d, rows, cols, packed.shape[-1], align)]
    return out


def _diag_part_ref(x, k, pad, align="RIGHT_LEFT"):
    lo, hi = (int(k), int(k)) if np.ndim(k) == 0 else (int(k[0]), int(k[1]))
    rows, cols = x.shape[-2:]
    max_len = min(rows + min(hi, 0), cols - max(lo, 0))
    out = np.full(x.shape[:-2] + (hi - lo + 1, max_len), pad, x.dtype)
    for d in range(lo, hi + 1):
        for i in range(rows):
            j = i + d
            if 0 <= j < cols:
                out[..., hi - d, min(i, j) + _offset(d, rows, cols, max_len, align)] = x[..., i, j]
    return out[..., 0, :] if lo == hi else out


def _set_diag_ref(x, diag, k, align="RIGHT_LEFT"):
    lo, hi = (int(k), int(k)) if np.ndim(k) == 0 else (int(k[0]), int(k[1]))
    rows, cols = x.shape[-2:]
    packed = diag[..., None, :] if lo == hi else diag
    out = x.copy()
    for i in range(rows):
        for j in range(cols):
            d = j - i
            if lo <= d <= hi:
                out[..., i, j] = packed[..., hi - d, min(i, j) + _offset(d, rows, cols, packed.shape[-1], align)]
    return out


def _check_eig(a, e, v):
    np.testing.assert_allclose(e, np.linalg.eigvalsh(a), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(v @ (e[..., :, None] * np.swapaxes(v, -1, -2)), a, atol=1e-10)


def _check_svd(a, s, u, v, full=False):
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-10, atol=1e-12)
    k = s.shape[-1]
    np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ np.swapaxes(v[..., :k], -1, -2), a, atol=1e-10)
    for q in (u, v):
        np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2] + (q.shape[-1],) * 2),
                                   atol=1e-10)


def _qr_ref(mode="reduced"):
    # numpy.linalg.qr runs the same LAPACK Householder routine (geqrf) as TF's CPU kernel, so
    # even the signs of q's columns and r's rows agree.
    return lambda x: np.linalg.qr(x, mode=mode)


def _qr_props(full=False, tol=1e-10):
    """q @ r rebuilds the input, q's columns are orthonormal, r is upper triangular (sign-free)."""

    def check(outs, inputs):
        q, r = (np.asarray(o) for o in outs)
        x = inputs[0]
        m, n = x.shape[-2:]
        p = m if full else min(m, n)
        assert q.shape == x.shape[:-2] + (m, p) and r.shape == x.shape[:-2] + (p, n)
        np.testing.assert_allclose(q @ r, x, atol=tol * 10)
        eye = np.broadcast_to(np.eye(p), q.shape[:-2] + (p, p))
        np.testing.assert_allclose(np.conj(np.swapaxes(q, -1, -2)) @ q, eye, atol=tol)
        np.testing.assert_array_equal(np.tril(r, -1), 0)

    return check


_cplx = (f64(3, 2) + 1j * f64(3, 2)).astype(np.complex128)

# TF's MatrixDiagV3 docstring: k = (-1, 1), align RIGHT_LEFT, diagonals [[0, 2, 3], [1, 2, 3], [4, 5, 0]]
# (superdiagonal left-padded, subdiagonal right-padded) give [[1, 2, 0], [4, 2, 3], [0, 5, 3]].
_tf_diags = np.array([[0, 2, 3], [1, 2, 3], [4, 5, 0]], np.int32)
_tf_matrix = np.array([[1, 2, 0], [4, 2, 3], [0, 5, 3]], np.int32)
_k = np.array([-1, 1], np.int32)
_m1 = np.int32(-1)

_LOWER = np.tril(f64(3, 3)) + 3 * np.eye(3)

CASES = [
    Case("Cholesky", [_spd(2)], ref=np.linalg.cholesky),
    Case("Cholesky", [_spd(n=4, dtype=np.float32)], ref=np.linalg.cholesky, rtol=1e-5, id="Cholesky-float32"),
    Case("Cholesky", [np.triu(np.full((3, 3), 9.0), 1) + _spd()], ref=lambda x: np.linalg.cholesky(_spd()),
         id="Cholesky-reads-lower-triangle"),
    Case("MatrixInverse", [_spd(2)], ref=np.linalg.inv),
    Case("MatrixInverse", [f32(3, 3) + 3 * np.eye(3, dtype=np.float32)], attrs={"adjoint": True}, rtol=1e-5,
         ref=lambda x: np.linalg.inv(x.T), id="MatrixInverse-adjoint"),
    Case("Qr", [f64(2, 4, 3)], ref=_qr_ref(), id="Qr-tall-batch"),
    Case("Qr", [f64(3, 5)], ref=_qr_ref(), id="Qr-wide"),
    Case("Qr", [f64(4, 2)], attrs={"full_matrices": True}, ref=_qr_ref("complete"), id="Qr-full-matrices"),
    Case("Qr", [f32(3, 3)], ref=_qr_ref(), rtol=1e-5, atol=1e-5, id="Qr-float32"),
    Case("Qr", [_cplx], ref=_qr_ref(), id="Qr-complex128"),
    Case("Qr", [f64(2, 3, 5)], check=_qr_props(), id="Qr-properties-wide"),
    Case("Qr", [f64(5, 3)], attrs={"full_matrices": True}, check=_qr_props(full=True), id="Qr-properties-full"),
    Case("Qr", [np.zeros((2, 0, 3))], ref=_qr_ref(), id="Qr-empty"),
    Case("Qr", [f32(4, 3).astype(np.float16)], check=_qr_props(tol=5e-3), id="Qr-float16"),
    Case("MatrixBandPart", [f32(2, 3, 4), np.int64(1), np.int64(-1)], ref=lambda x, lo, up: _band_ref(x, 1, -1),
         const_inputs=[1, 2]),
    Case("MatrixBandPart", [i32(4, 3), np.int32(0), np.int32(0)], ref=lambda x, lo, up: _band_ref(x, 0, 0),
         const_inputs=[1, 2], id="MatrixBandPart-diagonal"),
    Case("MatrixDiagV3", [_tf_diags, _k, _m1, _m1, np.int32(0)], ref=lambda *a: _tf_matrix, const_inputs=[1, 2, 3],
         id="MatrixDiagV3-tf-example"),
    Case("MatrixDiagV3", [f32(2, 3), np.int32(0), _m1, _m1, np.float32(0)], const_inputs=[1, 2, 3],
         ref=lambda d, k, r, c, p: _diag_ref(d, 0, 3, 3, 0.0)),
    Case("MatrixDiagV3", [f32(2, 3), np.int32(1), np.int32(3), np.int32(5), np.float32(7)], const_inputs=[1, 2, 3],
         ref=lambda d, k, r, c, p: _diag_ref(d, 1, 3, 5, 7.0), id="MatrixDiagV3-superdiag-padded"),
    Case("MatrixDiagV3", [f64(2, 3, 4), np.array([-2, 0], np.int32), np.int32(5), np.int32(4), np.float64(-1)],
         attrs={"align": "LEFT_RIGHT"}, const_inputs=[1, 2, 3],
         ref=lambda d, k, r, c, p: _diag_ref(d, (-2, 0), 5, 4, -1.0, "LEFT_RIGHT"), id="MatrixDiagV3-band-left-right"),
    Case("MatrixDiagPartV3", [_tf_matrix, _k, np.int32(0)], ref=lambda *a: _tf_diags, const_inputs=[1],
         id="MatrixDiagPartV3-tf-example"),
    Case("MatrixDiagPartV3", [f32(2, 4, 3), np.array([-1, 2], np.int32), np.float32(9)], const_inputs=[1],
         ref=lambda x, k, p: _diag_part_ref(x, (-1, 2), 9.0)),
    Case("MatrixDiagPartV3", [f64(3, 5), np.int32(-1), np.float64(0)], attrs={"align": "LEFT_LEFT"}, const_inputs=[1],
         ref=lambda x, k, p: _diag_part_ref(x, -1, 0.0, "LEFT_LEFT"), id="MatrixDiagPartV3-sub-left"),
    Case("MatrixSetDiagV3", [f64(3, 4), f64(3), np.int32(0)], const_inputs=[2],
         ref=lambda x, d, k: _set_diag_ref(x, d, 0)),
    Case("MatrixSetDiagV3", [f32(2, 4, 3), f32(2, 3, 3), np.array([-1, 1], np.int32)], attrs={"align": "LEFT_RIGHT"},
         const_inputs=[2], ref=lambda x, d, k: _set_diag_ref(x, d, (-1, 1), "LEFT_RIGHT"), id="MatrixSetDiagV3-band"),
    Case("MatrixSetDiagV3", [f64(3, 5), f64(2, 3), np.array([1, 2], np.int32)], attrs={"align": "LEFT_LEFT"},
         const_inputs=[2], ref=lambda x, d, k: _set_diag_ref(x, d, (1, 2), "LEFT_LEFT"), id="MatrixSetDiagV3-super"),
    Case("Diag", [f32(3)], ref=np.diag),
    Case("Diag", [i32(2, 2)], ref=lambda x: np.einsum("ij,ik,jl->ijkl", x, np.eye(2, dtype=np.int32),
                                                       np.eye(2, dtype=np.int32)), id="Diag-rank2"),
    Case("DiagPart", [f32(3, 3)], ref=np.diagonal),
    Case("DiagPart", [i32(2, 3, 2, 3)], ref=lambda x: np.array([[x[i, j, i, j] for j in range(3)] for i in range(2)]),
         id="DiagPart-rank4"),
    Case("Cross", [f32(2, 3), f32(2, 3)], ref=np.cross),
    Case("Cross", [i32(3), i32(3)], ref=np.cross, id="Cross-int"),
    # linalg_solve_ops
    Case("MatrixDeterminant", [_spd(2)], ref=np.linalg.det),
    Case("MatrixDeterminant", [f32(3, 3)], ref=lambda x: np.float32(np.linalg.det(x.astype(np.float64))), rtol=1e-5,
         id="MatrixDeterminant-float32"),
    Case("LogMatrixDeterminant", [f64(2, 3, 3)], ref=lambda x: list(np.linalg.slogdet(x))),
    # Vectors are unique up to sign: checked by what they must satisfy, values against numpy.
    Case("SelfAdjointEigV2", [_spd(2)], check=lambda outs, ins: _check_eig(ins[0], *outs)),
    Case("SelfAdjointEigV2", [np.triu(np.full((3, 3), 5.0), 1) + _spd()], attrs={"compute_v": False}, exact_shape=False,
         check=lambda outs, ins: np.testing.assert_allclose(outs[0], np.linalg.eigvalsh(_spd())),
         id="SelfAdjointEigV2-values-lower-triangle"),
    Case("Svd", [f64(2, 4, 3)], check=lambda outs, ins: _check_svd(ins[0], *outs)),
    Case("Svd", [f64(3, 5)], attrs={"full_matrices": True}, check=lambda outs, ins: _check_svd(ins[0], *outs, full=True),
         id="Svd-full"),
    Case("Svd", [f64(4, 2)], attrs={"compute_uv": False}, exact_shape=False,
         check=lambda outs, ins: np.testing.assert_allclose(outs[0], np.linalg.svd(ins[0], compute_uv=False)),
         id="Svd-values"),
    Case("MatrixSolve", [_spd(2), f64(2, 3, 2)], ref=np.linalg.solve),
    Case("MatrixSolve", [_LOWER, f64(3, 1)], attrs={"adjoint": True}, ref=lambda a, r: np.linalg.solve(a.T, r),
         id="MatrixSolve-adjoint"),
    Case("MatrixTriangularSolve", [_LOWER + np.triu(np.full((3, 3), 7.0), 1), f64(3, 2)],
         ref=lambda a, r: np.linalg.solve(_LOWER, r), id="MatrixTriangularSolve-reads-lower-triangle"),
    Case("MatrixTriangularSolve", [_LOWER.T, f64(2, 3, 2)], attrs={"lower": False, "adjoint": True},
         ref=lambda a, r: np.linalg.solve(_LOWER, r), id="MatrixTriangularSolve-upper-adjoint-broadcast"),
]
