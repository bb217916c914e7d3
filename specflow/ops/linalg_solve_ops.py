"""Determinants and linear solves on (batches of) matrices: MatrixDeterminant, LogMatrixDeterminant,
MatrixSolve, MatrixTriangularSolve, with TensorFlow's gradients (linalg_grad.py). TF's own gradient of
Cholesky solves with MatrixTriangularSolve, so TF training graphs carry it. Every op works on the
innermost two dims; outer dims are a batch (MatrixTriangularSolve's broadcast, as TF's do)."""

from __future__ import annotations

import numpy as np

from specflow.graph.shapes import Shape, broadcast_shapes
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.linalg_ops import _LINALG_TYPES, _mm, _run_linalg, _square_shape
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
    x = node.data_inputs[0]
    scale = gu.emit(b, "Mul", dys[0], node.name)
    scale = gu.emit(b, "ExpandDims", gu.emit(b, "ExpandDims", scale, gu.const(b, -1, "int32")), gu.const(b, -1, "int32"))
    return [gu.emit(b, "Mul", scale, gu.emit(b, "MatrixInverse", x, adjoint=True))]


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
    x, g = node.data_inputs[0], dys[1]
    if g is None:
        return [None]
    scale = gu.emit(b, "ExpandDims", gu.emit(b, "ExpandDims", g, gu.const(b, -1, "int32")), gu.const(b, -1, "int32"))
    return [gu.emit(b, "Mul", scale, gu.emit(b, "MatrixInverse", x, adjoint=True))]


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
    a, rhs = known
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
