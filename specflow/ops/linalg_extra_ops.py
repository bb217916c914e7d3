"""Lu (partial pivoting, TF's permutation convention), MatrixSquareRoot, BandedTriangularSolve and
Eig (general eigen decomposition, complex results), with TensorFlow's gradients (linalg_grad.py;
TF registers none for Lu). Outer dims are a batch; BandedTriangularSolve's batch dims broadcast."""

from __future__ import annotations

import numpy as np

from specflow.errors import GraphError
from specflow.graph import dtypes
from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.linalg_ops import _LINALG_TYPES, _adjoint, _mm, _square_shape, _transpose
from specflow.ops.linalg_solve_ops import triangular_result
from specflow.ops.manip_ops import _transpose_infer, _transpose_shape
from specflow.ops.registry import gradient, kernel, register_op
from specflow.ops.shape_args import shape_of, vector_arg

# --- ConjugateTranspose (tf.linalg.adjoint, tf.transpose(conjugate=True)) --------------------

register_op(
    "ConjugateTranspose",
    inputs=["x: T", "perm: Tperm"],
    outputs=["y: T"],
    attrs=["T: type", "Tperm: {int32, int64} = int32"],
    shape=_transpose_infer,
    doc="Transpose(x, perm), conjugated (a plain transpose for real types).",
)


@kernel("ConjugateTranspose", host_inputs=(1,))
def _conjugate_transpose(ctx, x, perm):
    perm = vector_arg(ctx.fail, ctx.host(perm), "perm")
    _transpose_shape(ctx.fail, shape_of(x), perm)
    y = ctx.xp.transpose(x, perm)
    return ctx.xp.conj(y) if y.dtype.kind == "c" else y


@gradient("ConjugateTranspose")
def _conjugate_transpose_grad(b, node, dys):
    perm = node.data_inputs[1]
    known = b.value(perm)
    inverse = gu.const(b, np.argsort(known).astype(known.dtype)) if known is not None else gu.emit(b, "InvertPermutation", perm)
    return [gu.emit(b, "ConjugateTranspose", dys[0], inverse), None]


# --- Lu ---------------------------------------------------------------------------------------


def _lu_shape(ic: InferenceContext) -> list[Shape]:
    s = _square_shape(ic.fail, ic.shape(0))
    return [s, Shape(s.dims[:-1]) if s.rank is not None else Shape.unknown()]


register_op(
    "Lu",
    inputs=["input: T"],
    outputs=["lu: T", "p: output_idx_type"],
    attrs=[f"T: {_LINALG_TYPES}", "output_idx_type: {int32, int64} = int32"],
    shape=_lu_shape,
    doc="The LU decomposition with partial pivoting of each square matrix: lu holds L (unit "
    "diagonal, strictly lower part) and U (upper part) with input[..., p, :] = L @ U.",
)


def lu_factor(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Eigen's PartialPivLU on a batch: column by column, the pivot is the first entry of largest
    modulus at or below the diagonal. Returns (lu, perm, min |pivot|) per matrix."""
    lu = np.array(a, copy=True)
    n = lu.shape[-1]
    batch = lu.shape[:-2]
    flat = lu.reshape(-1, n, n)
    perm = np.broadcast_to(np.arange(n), (flat.shape[0], n)).copy()
    rows = np.arange(flat.shape[0])
    for k in range(n):
        piv = k + np.argmax(np.abs(flat[:, k:, k]), axis=-1)
        swap = piv != k
        if swap.any():
            r, p = rows[swap], piv[swap]
            flat[r, k], flat[r, p] = flat[r, p].copy(), flat[r, k].copy()
            perm[r, k], perm[r, p] = perm[r, p], perm[r, k]
        pivot = flat[:, k, k]
        nonzero = pivot != 0
        with np.errstate(all="ignore"):
            flat[:, k + 1:, k] = np.where(nonzero[:, None], flat[:, k + 1:, k] / np.where(nonzero, pivot, 1)[:, None],
                                          flat[:, k + 1:, k])  # fmt: skip
        flat[:, k + 1:, k + 1:] -= flat[:, k + 1:, k:k + 1] * flat[:, k:k + 1, k + 1:]
    min_pivot = np.abs(np.diagonal(flat, axis1=-2, axis2=-1)).min(axis=-1) if n else np.ones(flat.shape[0])
    return flat.reshape(lu.shape), perm.reshape(*batch, n), min_pivot


@kernel("Lu", devices=("CPU",))
def _lu(ctx, x):
    _square_shape(ctx.fail, shape_of(x))
    work = np.float32 if x.dtype == np.float16 else x.dtype
    lu, perm, min_pivot = lu_factor(x.astype(work))
    if (min_pivot == 0).any() or np.isnan(min_pivot).any():
        raise ctx.fail("Input is not invertible.")
    return lu.astype(x.dtype), perm.astype(ctx.attrs["output_idx_type"].numpy)


# --- MatrixSquareRoot -------------------------------------------------------------------------

register_op(
    "MatrixSquareRoot",
    inputs=["input: T"],
    outputs=["output: T"],
    attrs=[f"T: {_LINALG_TYPES}"],
    shape=lambda ic: [_square_shape(ic.fail, ic.shape(0))],
    doc="The principal square root of each square matrix (its Schur form's); NaN where a real "
    "matrix has no real principal root (a negative real eigenvalue).",
)


@kernel("MatrixSquareRoot", devices=("CPU",))
def _sqrtm(ctx, x):
    from scipy.linalg import sqrtm

    _square_shape(ctx.fail, shape_of(x))
    real = x.dtype.kind == "f"
    work = np.float64 if real else np.complex128
    flat = x.astype(work).reshape(-1, *x.shape[-2:])
    out = np.empty(flat.shape, work)
    for i, m in enumerate(flat):
        if m.shape[-1] == 0:
            continue
        with np.errstate(all="ignore"):
            r = np.asarray(sqrtm(m))
        if real and np.iscomplexobj(r):
            imag_free = np.abs(r.imag).max() <= 1e-12 * max(1.0, np.abs(r.real).max())
            r = r.real if imag_free else np.full(m.shape, np.nan)
        out[i] = r
    return out.reshape(x.shape).astype(x.dtype)


def _batch_shape_with(b, x: str, tail) -> str:
    """x's batch dims (all but the last two, read at run time) followed by the ints ``tail``."""
    shape = gu.shape_of(b, x)
    lead = gu.emit(b, "StridedSlice", shape, gu.const(b, [0], "int32"), gu.const(b, [-2], "int32"), gu.const(b, [1], "int32"))
    return gu.emit(b, "ConcatV2", lead, gu.const(b, np.array(tail, np.int32)), gu.const(b, 0, "int32"), N=2)


@gradient("MatrixSquareRoot")
def _sqrtm_grad(b, node, dys):
    # TF's: dA = R dR + dR R is a Sylvester equation; with row-major vec, (I (x) R^T + R (x) I)
    # vec(dR^T)... solved as one m^2 x m^2 system per matrix (MatrixSolve).
    r = f"{node.name}:0"
    s = b.spec(r).shape
    m = s[-1] if s.rank is not None else None
    if m is None:
        raise GraphError(f"MatrixSquareRoot '{node.name}': its gradient needs the matrix size statically, got {s}")
    eye = gu.const(b, np.eye(m, dtype=b.spec(r).dtype.numpy))

    def kron(x, y):  # batch kron of [..., m, m] x and y; an unbatched eye broadcasts
        xr = gu.emit(b, "Reshape", x, _batch_shape_with(b, r, [m, 1, m, 1]))
        yr = gu.emit(b, "Reshape", y, _batch_shape_with(b, r, [1, m, 1, m]))
        return gu.emit(b, "Reshape", gu.emit(b, "Mul", xr, yr), _batch_shape_with(b, r, [m * m, m * m]))

    eye_b = gu.emit(b, "Add", gu.emit(b, "ZerosLike", r), eye)
    ksum = gu.emit(b, "AddV2", kron(eye_b, _transpose(b, r)), kron(r, eye_b))
    vec = gu.emit(b, "Reshape", _transpose(b, dys[0]), _batch_shape_with(b, r, [m * m, 1]))
    solved = gu.emit(b, "MatrixSolve", ksum, vec)
    return [_transpose(b, gu.emit(b, "Reshape", solved, gu.shape_of(b, r)))]


# --- BandedTriangularSolve --------------------------------------------------------------------
# bands [..., K, M] in LEFT_RIGHT alignment: lower, row k is the k-th subdiagonal (its first k
# entries unused); upper, row r is the (K - 1 - r)-th superdiagonal (its last K - 1 - r unused).


def _banded_shape(ic: InferenceContext) -> list[Shape]:
    a, rhs = ic.shape(0), ic.shape(1)
    if a.rank is not None and a.rank < 2:
        raise ic.fail(f"matrix must have rank >= 2 ([..., num_bands, M]), got shape {a}")
    if rhs.rank is not None and rhs.rank < 2:
        raise ic.fail(f"rhs must have rank >= 2 ([..., M, N]), got shape {rhs}")
    if a.rank is None or rhs.rank is None:
        return [Shape.unknown()]
    return triangular_result(ic, a, rhs)


register_op(
    "BandedTriangularSolve",
    inputs=["matrix: T", "rhs: T"],
    outputs=["output: T"],
    attrs=["lower: bool = true", "adjoint: bool = false", f"T: {_LINALG_TYPES}"],
    shape=_banded_shape,
    doc="X with A @ X = rhs for the triangular A whose bands matrix [..., K, M] holds (LEFT_RIGHT "
    "aligned: lower, the diagonal then the subdiagonals; upper, the superdiagonals down to the "
    "diagonal); adjoint solves adjoint(A) @ X = rhs. Batch dims broadcast.",
)


def banded_to_dense(bands: np.ndarray, lower: bool) -> np.ndarray:
    k, m = bands.shape[-2:]
    dense = np.zeros((*bands.shape[:-2], m, m), bands.dtype)
    j = np.arange(m)
    for r in range(k):
        d = r if lower else k - 1 - r
        if d >= m:
            continue
        if lower:
            dense[..., j[d:], j[d:] - d] = bands[..., r, d:]
        else:
            dense[..., j[:m - d], j[:m - d] + d] = bands[..., r, :m - d]
    return dense


@kernel("BandedTriangularSolve", devices=("CPU",))
def _banded_solve(ctx, bands, rhs):
    if bands.ndim < 2 or rhs.ndim < 2 or bands.shape[-1] != rhs.shape[-2]:
        raise ctx.fail(f"matrix [..., K, M] and rhs [..., M, N] do not fit: shapes {list(bands.shape)} and {list(rhs.shape)}")
    try:
        batch = np.broadcast_shapes(bands.shape[:-2], rhs.shape[:-2])
    except ValueError:
        raise ctx.fail(f"the batch dims of matrix {list(bands.shape)} and rhs {list(rhs.shape)} do not broadcast") from None
    lower = bool(ctx.attrs["lower"])
    a = banded_to_dense(bands, lower)
    if ctx.attrs["adjoint"]:
        a, lower = np.conj(np.swapaxes(a, -1, -2)), not lower
    work = np.result_type(a.dtype, np.float32)
    a = np.broadcast_to(a, (*batch, *a.shape[-2:])).astype(work)
    x = np.broadcast_to(rhs, (*batch, *rhs.shape[-2:])).astype(work).copy()
    m = a.shape[-1]
    with np.errstate(all="ignore"):  # TF substitutes through a zero pivot (inf/NaN), as here
        for i in (range(m) if lower else range(m - 1, -1, -1)):
            done = slice(0, i) if lower else slice(i + 1, m)
            acc = x[..., i, :] - np.einsum("...k,...kn->...n", a[..., i, done], x[..., done, :])
            x[..., i, :] = acc / a[..., i, i][..., None]
    return x.astype(rhs.dtype)


@gradient("BandedTriangularSolve")
def _banded_solve_grad(b, node, dys):
    # TF's: rhs's gradient solves with the adjoint; the bands' is -grad_b c^H (c^H grad_b with
    # adjoint) read back into the band layout (MatrixDiagPartV3, LEFT_RIGHT).
    a, rhs = node.data_inputs
    lower, adjoint = node.attrs["lower"], node.attrs["adjoint"]
    c = f"{node.name}:0"
    k = b.spec(a).shape[-2] if b.spec(a).shape.rank is not None else None
    if k is None:
        raise GraphError(f"BandedTriangularSolve '{node.name}': its gradient needs the number of bands statically")
    grad_b = gu.emit(b, "BandedTriangularSolve", a, dys[0], lower=lower, adjoint=not adjoint)
    outer = _mm(b, c, grad_b, adj_y=True) if adjoint else _mm(b, grad_b, c, adj_y=True)
    ks = gu.const(b, np.array([-(k - 1), 0] if lower else [0, k - 1], np.int32))
    zero = gu.const(b, np.zeros((), b.spec(a).dtype.numpy))
    bands = gu.emit(b, "MatrixDiagPartV3", gu.emit(b, "Neg", outer), ks, zero, align="LEFT_RIGHT")
    bands = gu.emit(b, "Reshape", bands, _batch_shape_with(b, outer, [k, -1]))
    return [gu.sum_to(b, bands, a), gu.sum_to(b, grad_b, rhs)]


_REAL = {dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}

# --- Eig ----------------------------------------------------------------------------------------
# Eigenvalues in LAPACK's order (numpy's), eigenvectors of unit 2-norm as TF's (Eigen's). Neither
# order nor the eigenvectors' phase is specified by TF: Eigen's Schur iteration usually finds them
# in LAPACK's order, not always.


def _eig_shape(ic: InferenceContext) -> list[Shape]:
    s = _square_shape(ic.fail, ic.shape(0))
    if s.rank is None:
        return [Shape.unknown(), Shape.unknown()]
    return [Shape(s.dims[:-1]), s if ic.attr("compute_v") else Shape([0])]


register_op(
    "Eig",
    inputs=["input: T"],
    outputs=["e: Tout", "v: Tout"],
    attrs=["compute_v: bool = true", "T: {float32, float64, complex64, complex128}", "Tout: {complex64, complex128}"],
    shape=_eig_shape,
    doc="Eigenvalues and, with compute_v, unit-norm eigenvectors (columns) of each square matrix, "
    "complex (tf.linalg.eig/eigvals).",
)


@kernel("Eig", devices=("CPU",))
def _eig(ctx, x):
    _square_shape(ctx.fail, shape_of(x))
    out = ctx.attrs["Tout"].numpy
    if not np.isfinite(x).all():
        raise ctx.fail("Eig: the input has non-finite values")
    try:
        e, v = np.linalg.eig(x)
    except np.linalg.LinAlgError:
        raise ctx.fail("Eigen decomposition was not successful.") from None
    v = v.astype(out) if ctx.attrs["compute_v"] else np.zeros((0,), out)
    return e.astype(out), v


def _diag(b, d: str, dtype) -> str:
    zero, m1 = gu.const(b, np.zeros((), dtype.numpy)), gu.const(b, -1, "int32")
    return gu.emit(b, "MatrixDiagV3", d, gu.const(b, 0, "int32"), m1, m1, zero)


def _diag_part(b, x: str, dtype) -> str:
    return gu.emit(b, "MatrixDiagPartV3", x, gu.const(b, 0, "int32"), gu.const(b, np.zeros((), dtype.numpy)))


@gradient("Eig")
def _eig_grad(b, node, dys):
    # TF's (Boeddeker et al., eq. 4.77), distinct eigenvalues: with f_ij = 1 / (e_j - e_i) off
    # the diagonal, dA = V^-H (diag(de) + conj(f) * (V^H dV - V^H V diag(re(diag(V^H dV))))) V^H.
    x = node.data_inputs[0]
    ge, gv = dys
    e = f"{node.name}:0"
    tout = node.attrs["Tout"]
    if node.attrs["compute_v"]:
        v = f"{node.name}:1"
    else:
        v = gu.outputs(b, "Eig", 2, x, compute_v=True, Tout=tout)[1]
    vt = _adjoint(b, v)
    ge = ge if ge is not None else gu.emit(b, "ZerosLike", e)
    mid = _diag(b, ge, tout)
    if node.attrs["compute_v"] and gv is not None:
        diff = gu.emit(b, "Sub", gu.emit(b, "ExpandDims", e, gu.const(b, -2, "int32")), gu.emit(b, "ExpandDims", e, gu.const(b, -1, "int32")))
        eps = gu.const(b, np.array(1e-20, tout.numpy))
        safe = gu.emit(b, "Mul", diff, gu.emit(b, "Reciprocal", gu.emit(b, "AddV2", gu.emit(b, "Mul", diff, diff), eps)))
        f = gu.emit(b, "Conj", gu.emit(b, "MatrixSetDiagV3", safe, gu.emit(b, "ZerosLike", e), gu.const(b, 0, "int32")))
        vgv = _mm(b, vt, gv)
        real_diag = gu.emit(b, "Cast", gu.emit(b, "Real", _diag_part(b, vgv, tout), Tout=_REAL[tout]), DstT=tout)
        inner = gu.emit(b, "Sub", vgv, _mm(b, _mm(b, vt, v), _diag(b, real_diag, tout)))
        mid = gu.emit(b, "AddV2", mid, gu.emit(b, "Mul", f, inner))
    grad = gu.emit(b, "MatrixSolve", vt, _mm(b, mid, vt))
    t = b.spec(x).dtype
    return [grad if t == tout else gu.emit(b, "Real", grad, Tout=t) if t in (dtypes.float32, dtypes.float64) else gu.emit(b, "Cast", grad, DstT=t)]
