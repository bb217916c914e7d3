"""Determinants, linear solves and decompositions on (batches of) matrices: MatrixDeterminant,
LogMatrixDeterminant, MatrixSolve, MatrixTriangularSolve, SelfAdjointEigV2, Svd, with TensorFlow's
gradients (linalg_grad.py; Svd's through its singular values only). TF's own gradient of
Cholesky solves with MatrixTriangularSolve, so TF training graphs carry it. Every op works on the
innermost two dims; outer dims are a batch (MatrixTriangularSolve's broadcast, as TF's do)."""

from __future__ import annotations

import numpy as np

from specflow.errors import GraphError
from specflow.graph.shapes import Shape, broadcast_shapes
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.linalg_ops import _LINALG_TYPES, _adjoint, _mm, _run_linalg, _square_shape
from specflow.ops.registry import gradient, kernel, register_op
from specflow.ops.shape_args import shape_of

# --- MatrixDeterminant ------------------------------------------------------------------------


def _determinant_shape(ic: InferenceContext) -> list[Shape]:
    s = _square_shape(ic.fail, ic.shape(0))
    return [Shape(s.dims[:-2]) if s.rank is not None else Shape.unknown()]


register_op(
    "MatrixDeterminant",
    inputs=["input: T"],
    outputs=["output: T"],
    attrs=["T: {float16, float32, float64, complex64, complex128}"],
    shape=_determinant_shape,
    doc="The determinant of each square matrix.",
)


@kernel("MatrixDeterminant")
def _determinant(ctx, x):
    _square_shape(ctx.fail, shape_of(x))
    return ctx.xp.asarray(ctx.xp.linalg.det(x)).astype(x.dtype, copy=False)


@gradient("MatrixDeterminant")
def _determinant_grad(b, node, dys):
    # d det(A) = det(A) tr(A^-1 dA): dA = g det(A) A^-H.
    return [_scaled_inverse_adjoint(b, node.data_inputs[0], gu.emit(b, "Mul", dys[0], node.name))]


def _scaled_inverse_adjoint(b, x: str, scale: str) -> str:
    """scale[..., None, None] * A^-H: the determinants' gradients."""
    minus1 = gu.const(b, -1, "int32")
    scale = gu.emit(b, "ExpandDims", gu.emit(b, "ExpandDims", scale, minus1), minus1)
    return gu.emit(b, "Mul", scale, gu.emit(b, "MatrixInverse", x, adjoint=True))


register_op(
    "LogMatrixDeterminant",
    inputs=["input: T"],
    outputs=["sign: T", "log_abs_determinant: T"],
    attrs=["T: {float16, float32, float64, complex64, complex128}"],
    shape=lambda ic: _determinant_shape(ic) * 2,
    doc="The sign (a unit complex number for complex input) and log |det| of each square matrix, "
    "without the overflow of the determinant itself.",
)


@kernel("LogMatrixDeterminant")
def _log_determinant(ctx, x):
    _square_shape(ctx.fail, shape_of(x))
    sign, logdet = ctx.xp.linalg.slogdet(x)
    return ctx.xp.asarray(sign).astype(x.dtype, copy=False), ctx.xp.asarray(logdet).astype(x.dtype, copy=False)


@gradient("LogMatrixDeterminant")
def _log_determinant_grad(b, node, dys):
    # d log|det A| = tr(A^-1 dA): dA = g A^-H (the sign has no gradient, as in TF).
    return [None if dys[1] is None else _scaled_inverse_adjoint(b, node.data_inputs[0], dys[1])]


# --- MatrixSolve ------------------------------------------------------------------------------


def _solve_operands(ic: InferenceContext) -> tuple[Shape, Shape] | None:
    """A solve's (matrix, rhs) shapes, checked as far as known; None while a rank is unknown."""
    a = _square_shape(ic.fail, ic.shape(0), "matrix")
    rhs = ic.shape(1)
    if rhs.rank is not None and rhs.rank < 2:
        raise ic.fail(f"rhs must have rank >= 2, got shape {rhs}")
    return None if a.rank is None or rhs.rank is None else (a, rhs)


def _mismatch(c, a, rhs):
    return c.fail(f"matrix of shape {a} and rhs of shape {rhs} do not match: rhs must be [..., {a[-1]}, K]")


def _solve_shape(ic: InferenceContext) -> list[Shape]:
    known = _solve_operands(ic)
    if known is None:
        return [Shape.unknown()]
    a, rhs = known
    if a.rank != rhs.rank or not Shape(a.dims[:-1]).is_compatible_with(Shape(rhs.dims[:-1])):
        raise _mismatch(ic, a, rhs)
    return [Shape([*Shape(a.dims[:-1]).merge_with(Shape(rhs.dims[:-1])).dims, rhs[-1]])]


register_op(
    "MatrixSolve",
    inputs=["matrix: T", "rhs: T"],
    outputs=["output: T"],
    attrs=["adjoint: bool = False", f"T: {_LINALG_TYPES}"],
    shape=_solve_shape,
    doc="X with matrix @ X = rhs (adjoint(matrix) @ X = rhs with adjoint=true), per batch entry; "
    "a singular matrix is an error.",
)


def _adjoint_of(xp, a):
    return xp.conj(xp.swapaxes(a, -1, -2))


@kernel("MatrixSolve")
def _solve(ctx, a, rhs):
    xp = ctx.xp
    _square_shape(ctx.fail, shape_of(a), "matrix")
    if a.ndim != rhs.ndim or a.shape[:-1] != rhs.shape[:-1]:
        raise _mismatch(ctx, list(a.shape), list(rhs.shape))
    if ctx.attrs["adjoint"]:
        a = _adjoint_of(xp, a)
    return _run_linalg(ctx, lambda m: xp.linalg.solve(m, rhs), a, "Input matrix is not invertible.").astype(
        rhs.dtype, copy=False
    )


def _solve_grads(b, node, dys, op: str, **attrs):
    """TF's gradient of a solve X = A^-1 B (or A^-H B): dB = A^-H g, dA = -dB X^H (or -X dB^H)."""
    a, _ = node.data_inputs
    adj = node.attrs["adjoint"]
    grad_b = gu.emit(b, op, a, dys[0], adjoint=not adj, **attrs)
    grad_a = _mm(b, node.name, grad_b, adj_y=True) if adj else _mm(b, grad_b, node.name, adj_y=True)
    return grad_b, gu.emit(b, "Neg", grad_a)


@gradient("MatrixSolve")
def _solve_grad(b, node, dys):
    grad_b, grad_a = _solve_grads(b, node, dys, "MatrixSolve")
    return [grad_a, grad_b]


# --- MatrixTriangularSolve --------------------------------------------------------------------


def _triangular_shape(ic: InferenceContext) -> list[Shape]:
    known = _solve_operands(ic)
    if known is None:
        return [Shape.unknown()]
    return triangular_result(ic, *known)


def triangular_result(ic: InferenceContext, a: Shape, rhs: Shape) -> list[Shape]:
    """A triangular solve's result for matrix ``a`` ([..., *, M]: square, or banded) and ``rhs``
    ([..., M, K]) of known ranks: the batch dims broadcast."""
    if not Shape([a[-1]]).is_compatible_with(Shape([rhs[-2]])):
        raise _mismatch(ic, a, rhs)
    try:
        batch = broadcast_shapes(Shape(a.dims[:-2]), Shape(rhs.dims[:-2]))
    except ValueError:
        raise ic.fail(f"the batch dims of matrix {a} and rhs {rhs} do not broadcast") from None
    return [Shape([*batch.dims, rhs[-2], rhs[-1]])]


register_op(
    "MatrixTriangularSolve",
    inputs=["matrix: T", "rhs: T"],
    outputs=["output: T"],
    attrs=["lower: bool = True", "adjoint: bool = False", f"T: {_LINALG_TYPES}"],
    shape=_triangular_shape,
    doc="X with matrix @ X = rhs for lower (or upper, lower=false) triangular matrices; only that "
    "triangle of matrix is read; adjoint=true solves adjoint(matrix) @ X = rhs. Batch dims "
    "broadcast.",
)


@kernel("MatrixTriangularSolve")
def _triangular_solve(ctx, a, rhs):
    xp = ctx.xp
    _square_shape(ctx.fail, shape_of(a), "matrix")
    if rhs.ndim < 2 or a.shape[-1] != rhs.shape[-2]:
        raise _mismatch(ctx, list(a.shape), list(rhs.shape))
    tri = xp.tril(a) if ctx.attrs["lower"] else xp.triu(a)  # the other triangle is never read
    if ctx.attrs["adjoint"]:
        tri = _adjoint_of(xp, tri)
    try:
        batch = np.broadcast_shapes(a.shape[:-2], rhs.shape[:-2])
    except ValueError:
        raise ctx.fail(f"the batch dims of matrix {list(a.shape)} and rhs {list(rhs.shape)} do not broadcast") from None
    tri = xp.broadcast_to(tri, (*batch, *a.shape[-2:]))
    rhs_b = xp.broadcast_to(rhs, (*batch, *rhs.shape[-2:]))
    out = _run_linalg(ctx, lambda m: xp.linalg.solve(m, rhs_b), tri, "Input matrix is not invertible.")
    return out.astype(rhs.dtype, copy=False)


@gradient("MatrixTriangularSolve")
def _triangular_solve_grad(b, node, dys):
    a, rhs = node.data_inputs
    lower = node.attrs["lower"]
    grad_b, grad_a = _solve_grads(b, node, dys, "MatrixTriangularSolve", lower=lower)
    low, high = (-1, 0) if lower else (0, -1)
    grad_a = gu.emit(b, "MatrixBandPart", grad_a, gu.const(b, low, "int64"), gu.const(b, high, "int64"))
    return [gu.sum_to(b, grad_a, a), gu.sum_to(b, grad_b, rhs)]  # over the dims a batch broadcast


# --- SelfAdjointEigV2 and Svd -----------------------------------------------------------------
# Eigenvectors and singular vectors are unique only up to sign (a phase, for complex input):
# LAPACK's (numpy's) may differ from Eigen's (TensorFlow's) there. Eigenvalues, singular values
# and every gradient that does not single out a vector's sign agree.


def _eig_shape(ic: InferenceContext) -> list[Shape]:
    s = _square_shape(ic.fail, ic.shape(0))
    if s.rank is None:
        return [Shape.unknown(), Shape.unknown()]
    v = s if ic.attr("compute_v") else Shape([0])
    return [Shape(s.dims[:-1]), v]


register_op(
    "SelfAdjointEigV2",
    inputs=["input: T"],
    outputs=["e: T", "v: T"],
    attrs=["compute_v: bool = true", "T: {float64, float32, float16, complex64, complex128}"],
    shape=_eig_shape,
    doc="Eigenvalues (ascending) and, with compute_v, eigenvectors (columns) of each Hermitian "
    "matrix; only its lower triangle is read.",
)


@kernel("SelfAdjointEigV2")
def _self_adjoint_eig(ctx, x):
    _square_shape(ctx.fail, shape_of(x))
    xp = ctx.xp
    e, v = _run_linalg(ctx, lambda m: xp.linalg.eigh(m, UPLO="L"), x,
                       "Self-adjoint eigen decomposition was not successful.")  # fmt: skip
    v = v.astype(x.dtype, copy=False) if ctx.attrs["compute_v"] else xp.zeros((0,), dtype=x.dtype)
    return e.astype(x.dtype), v  # (real eigenvalues in T, as TF's)


@gradient("SelfAdjointEigV2")
def _self_adjoint_eig_grad(b, node, dys):
    # TF's: with F_ij = 1 / (e_j - e_i) off the diagonal, dA = V (diag(de) + F * (V^H dV)) V^H,
    # then symmetrized onto the lower triangle it was read from (half the diagonal).
    if not node.attrs["compute_v"]:
        raise GraphError("the gradient of SelfAdjointEigV2 needs compute_v=true (as TensorFlow's)",
                         node=node.name, location=node.location)  # fmt: skip
    x = node.data_inputs[0]
    e, v = node.name, f"{node.name}:1"
    de = dys[0] if dys[0] is not None else gu.zeros_like(b, e)
    inner = _diag(b, de)
    if dys[1] is not None:
        diff = gu.emit(b, "Sub", gu.emit(b, "ExpandDims", e, gu.const(b, -2, "int32")),
                       gu.emit(b, "ExpandDims", e, gu.const(b, -1, "int32")))  # fmt: skip
        f = gu.emit(b, "MatrixSetDiagV3", gu.emit(b, "Reciprocal", diff), gu.zeros_like(b, e), gu.const(b, 0, "int32"))
        inner = gu.emit(b, "AddV2", inner, gu.emit(b, "Mul", f, _mm(b, v, dys[1], adj_x=True)))
    grad = _mm(b, _mm(b, v, inner), v, adj_y=True)
    grad = gu.emit(b, "AddV2", grad, _adjoint(b, grad))
    low = gu.emit(b, "MatrixBandPart", grad, gu.const(b, -1, "int64"), gu.const(b, 0, "int64"))
    half = gu.emit(b, "Mul", gu.emit(b, "MatrixDiagPartV3", low, gu.const(b, 0, "int32"), gu.const(b, 0, b.spec(x).dtype)),
                   gu.const(b, 0.5, b.spec(x).dtype))  # fmt: skip
    return [gu.emit(b, "MatrixSetDiagV3", low, half, gu.const(b, 0, "int32"))]


def _svd_shape(ic: InferenceContext) -> list[Shape]:
    s = ic.shape(0)
    if s.rank is not None and s.rank < 2:
        raise ic.fail(f"input must have rank >= 2, got shape {s}")
    if s.rank is None:
        return [Shape.unknown()] * 3
    *batch, m, n = s.dims
    k = None if m is None or n is None else min(m, n)
    if not ic.attr("compute_uv"):
        return [Shape([*batch, k]), Shape([0]), Shape([0])]
    full = ic.attr("full_matrices")
    return [Shape([*batch, k]), Shape([*batch, m, m if full else k]), Shape([*batch, n, n if full else k])]


register_op(
    "Svd",
    inputs=["input: T"],
    outputs=["s: T", "u: T", "v: T"],
    attrs=["compute_uv: bool = true", "full_matrices: bool = false",
           "T: {float64, float32, float16, complex64, complex128}"],  # fmt: skip
    shape=_svd_shape,
    doc="Singular values (descending) of each matrix and, with compute_uv, u and v with "
    "input = u @ diag(s) @ adjoint(v) (square u and v with full_matrices).",
)


@kernel("Svd")
def _svd(ctx, x):
    xp = ctx.xp
    if x.ndim < 2:
        raise ctx.fail(f"input must have rank >= 2, got shape {shape_of(x)}")
    if not ctx.attrs["compute_uv"]:
        s = _run_linalg(ctx, lambda m: xp.linalg.svd(m, compute_uv=False), x, "SVD did not converge.")
        empty = xp.zeros((0,), dtype=x.dtype)
        return s.astype(x.dtype), empty, empty
    u, s, vh = _run_linalg(ctx, lambda m: xp.linalg.svd(m, full_matrices=ctx.attrs["full_matrices"]), x,
                           "SVD did not converge.")  # fmt: skip
    return s.astype(x.dtype), u.astype(x.dtype, copy=False), _adjoint_of(xp, vh).astype(x.dtype, copy=False)


@gradient("Svd")
def _svd_grad(b, node, dys):
    # TF's SvdGrad. Through s alone: u diag(ds) v^H (u, v of a reduced SVD of the input when the
    # op made none). Through u and v (m <= n; a tall input as its adjoint, the result adjoined
    # back), with F_ij = 1 / (s_j^2 - s_i^2) off the diagonal (a safe reciprocal: 0 where equal):
    # dA = u (diag(ds) + (F*(u^H du) + h.c.) S + S (F*(v1^H dv1) + h.c.)) v1^H
    #      + u S^-1 (dv1^H - dv1^H v1 v1^H [- v1^H dv2 v2^H with full_matrices]) for m < n,
    #      + u S^-1 (L^H - L) v1^H / 2 for complex inputs, L the diagonal of v1^H dv1.
    x = node.data_inputs[0]
    dt = b.spec(x).dtype
    ds = gu.emit(b, "Cast", dys[0], DstT=dt) if b.spec(dys[0]).dtype != dt else dys[0]
    if not node.attrs["compute_uv"]:
        again = gu.emit(b, "Svd", x, compute_uv=True, full_matrices=False)
        return [_mm(b, _mm(b, f"{again}:1", _diag(b, ds)), f"{again}:2", adj_y=True)]
    shape = b.spec(x).shape
    m, n = (shape.dims[-2], shape.dims[-1]) if shape.rank is not None else (None, None)
    if m is None or n is None:
        raise GraphError("the gradient of Svd needs the input's matrix dims known (as TensorFlow's)",
                         node=node.name, location=node.location)  # fmt: skip
    s, u, v, du, dv = node.name, f"{node.name}:1", f"{node.name}:2", dys[1], dys[2]
    tall = m > n
    if tall:
        m, n, u, v, du, dv = n, m, v, u, dv, du
    full = node.attrs["full_matrices"]
    if full and abs(m - n) > 1:
        raise GraphError(f"the gradient of Svd with full_matrices is not implemented for |m - n| > 1 (as "
                         f"TensorFlow's), got m={m}, n={n}", node=node.name, location=node.location)  # fmt: skip
    s_mat = _diag(b, s)
    s2 = gu.emit(b, "Square", s)
    diff = gu.emit(b, "Sub", gu.emit(b, "ExpandDims", s2, gu.const(b, -2, "int32")),
                   gu.emit(b, "ExpandDims", s2, gu.const(b, -1, "int32")))  # fmt: skip
    f = gu.emit(b, "MatrixSetDiagV3", _safe_reciprocal(b, diff), gu.zeros_like(b, s), gu.const(b, 0, "int32"))
    s_inv = _diag(b, _safe_reciprocal(b, s))
    v1, dv1 = _cols(b, v, 0, m), _cols(b, dv, 0, m)
    f_u = gu.emit(b, "Mul", f, _mm(b, u, du, adj_x=True))
    v_gv = _mm(b, v1, dv1, adj_x=True)
    f_v = gu.emit(b, "Mul", f, v_gv)
    inner = gu.emit(b, "AddV2", gu.emit(b, "AddV2", _diag(b, ds), _mm(b, gu.emit(b, "AddV2", f_u, _adjoint(b, f_u)), s_mat)),
                    _mm(b, s_mat, gu.emit(b, "AddV2", f_v, _adjoint(b, f_v))))  # fmt: skip
    grad = _mm(b, u, _mm(b, inner, v1, adj_y=True))
    if m != n:
        gv1t = _adjoint(b, dv1)
        rest = gu.emit(b, "Sub", gv1t, _mm(b, _mm(b, gv1t, v1), v1, adj_y=True))
        if full:
            v2, dv2 = _cols(b, v, m, n), _cols(b, dv, m, n)
            rest = gu.emit(b, "Sub", rest, _mm(b, _mm(b, v1, dv2, adj_x=True), v2, adj_y=True))
        grad = gu.emit(b, "AddV2", grad, _mm(b, _mm(b, u, s_inv), rest))
    if dt.is_complex:
        diag_l = _diag(b, gu.emit(b, "MatrixDiagPartV3", v_gv, gu.const(b, 0, "int32"), gu.const(b, 0, dt)))
        term = _mm(b, s_inv, gu.emit(b, "Sub", _adjoint(b, diag_l), diag_l))
        half = gu.const(b, np.asarray(0.5, dt.numpy))
        grad = gu.emit(b, "AddV2", grad, gu.emit(b, "Mul", half, _mm(b, u, _mm(b, term, v1, adj_y=True))))
    return [_adjoint(b, grad) if tall else grad]


def _safe_reciprocal(b, x: str) -> str:
    """x / (x^2 + 1e-20): 1/x, and 0 at 0 (TF's SVD gradient's guard against equal values)."""
    eps = gu.const(b, np.asarray(1e-20, b.spec(x).dtype.numpy))
    return gu.emit(b, "Mul", x, gu.emit(b, "Reciprocal", gu.emit(b, "AddV2", gu.emit(b, "Mul", x, x), eps)))


def _cols(b, x: str, lo: int, hi: int) -> str:
    """x[..., :, lo:hi]."""
    return gu.emit(b, "StridedSlice", x, gu.const(b, np.array([0, 0, lo], np.int32)), gu.const(b, np.array([0, 0, hi], np.int32)),
                   gu.const(b, np.array([1, 1, 1], np.int32)), ellipsis_mask=1, begin_mask=2, end_mask=2)  # fmt: skip


def _diag(b, vec: str) -> str:
    """Square matrices with ``vec`` (a batch of vectors) on their diagonals."""
    minus1 = gu.const(b, -1, "int32")
    return gu.emit(b, "MatrixDiagV3", vec, gu.const(b, 0, "int32"), minus1, minus1, gu.const(b, 0, b.spec(vec).dtype))
