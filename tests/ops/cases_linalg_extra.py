"""Cases for linalg_extra_ops: Lu against a plain Doolittle loop with Eigen's pivots (the first
entry of largest modulus) and, for real input, scipy's LAPACK factorization, MatrixSquareRoot against the eigen decomposition's root,
BandedTriangularSolve against a dense solve of the matrix its bands describe (built entry by
entry here), and Eig by its defining property A V = V diag(e) with unit columns."""

import numpy as np
import scipy.linalg

from tests.ops.harness import Case, f64


def _lu_ref(a):
    """Doolittle with partial pivoting, one matrix at a time: the pivot is the first entry of
    largest modulus (Eigen's rule, TF's; LAPACK's zgetrf scores complex entries by |re| + |im|)."""
    flat = a.reshape(-1, *a.shape[-2:]).astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    lus, perms = [], []
    for m in flat:
        m, n = m.copy(), m.shape[0]
        perm = list(range(n))
        for k in range(n):
            piv = k + int(np.argmax(np.abs(m[k:, k])))
            m[[k, piv]], perm[k], perm[piv] = m[[piv, k]], perm[piv], perm[k]
            m[k + 1:, k] /= m[k, k]
            m[k + 1:, k + 1:] -= np.outer(m[k + 1:, k], m[k, k + 1:])
        lus.append(m)
        perms.append(perm)
    return np.array(lus).reshape(a.shape).astype(a.dtype), np.array(perms, np.int32).reshape(a.shape[:-1])


def _check_lu_scipy(outs, ins):
    """Real input: the same factors as scipy's LAPACK getrf (same pivots), perm from its swaps."""
    lu, piv = scipy.linalg.lu_factor(ins[0])
    perm = np.arange(ins[0].shape[0])
    for i, p in enumerate(piv):
        perm[[i, p]] = perm[[p, i]]
    np.testing.assert_allclose(outs[0], lu, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(outs[1], perm)


def _sqrtm_ref(a):
    w, v = np.linalg.eig(a.astype(np.complex128))
    r = v @ (np.sqrt(w)[..., :, None] * np.linalg.inv(v))
    return (r.real if a.dtype.kind == "f" else r).astype(a.dtype)


def _spd(*shape):
    x = f64(*shape)
    return x @ np.swapaxes(x, -1, -2) + np.eye(shape[-1])


def _dense(bands, lower):
    k, m = bands.shape[-2:]
    a = np.zeros((*bands.shape[:-2], m, m), bands.dtype)
    for i in range(m):
        for j in range(m):
            d = i - j if lower else j - i
            if 0 <= d < k:
                a[..., i, j] = bands[..., d if lower else k - 1 - d, i]
    return a


def _banded_ref(lower=True, adjoint=False):
    def ref(bands, rhs):
        a = _dense(bands, lower)
        if adjoint:
            a = np.conj(np.swapaxes(a, -1, -2))
        batch = np.broadcast_shapes(a.shape[:-2], rhs.shape[:-2])
        return np.linalg.solve(np.broadcast_to(a, (*batch, *a.shape[-2:])),
                               np.broadcast_to(rhs, (*batch, *rhs.shape[-2:]))).astype(rhs.dtype)
    return ref


def _bands(*shape, lower=True):
    b = f64(*shape)
    b[..., 0 if lower else -1, :] += 4.0  # a well-conditioned diagonal
    return b


def _check_eig(outs, ins):
    a, (e, v) = ins[0], outs
    assert e.dtype == np.complex128 and v.shape == a.shape
    np.testing.assert_allclose(a @ v, v * e[..., None, :], atol=1e-10)
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1.0, rtol=1e-12)
    np.testing.assert_allclose(np.sort_complex(e.reshape(-1, e.shape[-1])),
                               np.sort_complex(np.linalg.eigvals(a).reshape(-1, e.shape[-1])), rtol=1e-10)


_TRI = np.array([[2.0, 1.0, 0.5], [0.0, -3.0, 1.0], [0.0, 0.0, 0.5]])

CASES = [
    Case("ConjugateTranspose", [f64(2, 3, 4) + 1j * f64(2, 3, 4), np.array([0, 2, 1], np.int32)],
         ref=lambda x, p: np.conj(np.transpose(x, p)), const_inputs=[1]),
    Case("ConjugateTranspose", [f64(3, 4), np.array([1, 0], np.int64)], ref=lambda x, p: x.T, const_inputs=[1],
         id="ConjugateTranspose-real"),
    Case("Lu", [f64(4, 4)], ref=_lu_ref, rtol=1e-10, atol=1e-12),
    Case("Lu", [f64(5, 5)], check=_check_lu_scipy, id="Lu-as-lapack"),
    Case("Lu", [f64(2, 3, 3).astype(np.float32)], ref=_lu_ref, rtol=1e-5, atol=1e-5, id="Lu-batch-float32"),
    Case("Lu", [f64(3, 3) + 1j * f64(3, 3)], ref=_lu_ref, rtol=1e-10, atol=1e-12, id="Lu-complex"),
    # Ties pick the first row of largest modulus: here row 0 (|1| = |-1|), then no swap.
    Case("Lu", [np.array([[1.0, 2.0], [-1.0, 3.0]])], ref=lambda a: (np.array([[1.0, 2.0], [-1.0, 5.0]]), np.array([0, 1], np.int32)),
         id="Lu-tie"),
    Case("Lu", [np.array([[0.0, 2.0], [3.0, 1.0]])], attrs={"output_idx_type": "int64"},
         ref=lambda a: (np.array([[3.0, 1.0], [0.0, 2.0]]), np.array([1, 0], np.int64)), id="Lu-swap-int64"),
    Case("MatrixSquareRoot", [_spd(3, 3)], ref=_sqrtm_ref, rtol=1e-9, atol=1e-10),
    Case("MatrixSquareRoot", [_spd(2, 4, 4).astype(np.float32)], ref=_sqrtm_ref, rtol=1e-4, atol=1e-5, id="MatrixSquareRoot-batch-f32"),
    # A rotation-scaling block: complex eigenvalues, a real principal root.
    Case("MatrixSquareRoot", [np.array([[3.0, -1.0], [1.0, 3.0]])], ref=_sqrtm_ref, rtol=1e-10, id="MatrixSquareRoot-complex-eigs"),
    Case("BandedTriangularSolve", [_bands(2, 4), f64(4, 2)], ref=_banded_ref(), rtol=1e-10),
    Case("BandedTriangularSolve", [_bands(3, 4, lower=False), f64(4, 3)], attrs={"lower": False}, ref=_banded_ref(False),
         rtol=1e-10, id="BandedTriangularSolve-upper"),
    Case("BandedTriangularSolve", [_bands(2, 5), f64(3, 5, 2)], attrs={"adjoint": True}, ref=_banded_ref(True, True),
         rtol=1e-10, id="BandedTriangularSolve-adjoint-broadcast"),
    Case("BandedTriangularSolve", [_bands(2, 1, 3, lower=False).astype(np.float32), f64(2, 3, 1).astype(np.float32)],
         attrs={"lower": False, "adjoint": True}, ref=_banded_ref(False, True), rtol=1e-4, atol=1e-5,
         id="BandedTriangularSolve-upper-adjoint-f32"),
    Case("Eig", [f64(4, 4)], attrs={"Tout": "complex128"}, check=_check_eig),
    Case("Eig", [f64(2, 3, 3)], attrs={"Tout": "complex128"}, check=_check_eig, id="Eig-batch"),
    Case("Eig", [_TRI], attrs={"Tout": "complex128", "compute_v": False},
         ref=lambda a: (np.array([2.0, -3.0, 0.5], np.complex128), np.zeros(0, np.complex128)), id="Eig-values-triangular"),
]
