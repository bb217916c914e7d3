"""``sf.linalg``: TensorFlow's tf.linalg names with its signatures, on the registered ops
(inverse, determinants, Cholesky, QR, SVD, eigen-decompositions, solves, LU, diagonals and
bands, cross), and the ones TensorFlow composes in Python composed the same way (norm, logdet,
cholesky_solve, lstsq, pinv, matrix_rank, tensordot, global_norm, lu_solve, ...), so values and
gradients agree. NAMES are the ones TensorFlow also has at the top level (``sf.norm``, ``sf.eye``,
``sf.tensordot``, ...)."""

from __future__ import annotations

import builtins

import numpy as np

from specflow.api import tf_names as _tf
from specflow.api.op_functions import call
from specflow.api.tensor import Tensor
from specflow.api.tf_math_names import (
    _real_dtype,
    l2_normalize,  # noqa: F401 (tf.linalg has it too)
)
from specflow.api.tf_names import _t, einsum, matmul  # noqa: F401 (tf.linalg has einsum and matmul too)
from specflow.graph import dtypes
from specflow.graph.dtypes import as_dtype

# The names this module adds at the top level (api/__init__.py's TF_LINALG_NAMES; a test keeps
# the two equal).
NAMES = sorted("eig eigvals eye matrix_square_root norm tensordot".split())


def _unary(op: str, pyname: str):
    def fn(input, name: str | None = None):  # noqa: A002 (TensorFlow's name)
        return call(op, _t(input), name=name)

    fn.__name__ = pyname
    fn.__doc__ = f"TensorFlow's ``tf.linalg.{pyname}``: the {op} op."
    return fn


det = _unary("MatrixDeterminant", "det")
cholesky = _unary("Cholesky", "cholesky")
sqrtm = _unary("MatrixSquareRoot", "sqrtm")
matrix_square_root = sqrtm


def tensor_diag(diagonal, name: str | None = None):
    """TF's ``tf.linalg.tensor_diag`` (its argument is ``diagonal``): the Diag op."""
    return call("Diag", _t(diagonal), name=name)


tensor_diag_part = _unary("DiagPart", "tensor_diag_part")


def inv(input, adjoint: bool = False, name: str | None = None):  # noqa: A002
    return call("MatrixInverse", _t(input), adjoint=adjoint, name=name)


def slogdet(input, name: str | None = None):  # noqa: A002
    """(sign, log|det|): the LogMatrixDeterminant op."""
    return call("LogMatrixDeterminant", _t(input), name=name)


def logdet(matrix, name: str | None = None):
    """log det of a Hermitian positive definite matrix: 2 sum(log(diag(cholesky)))."""
    chol = call("Cholesky", _t(matrix))
    d = diag_part(chol)
    if d.dtype.is_complex:
        d = call("Real", d, Tout=_real_dtype(d.dtype))
    return 2.0 * _tf.reduce_sum(call("Log", d), [-1])


def cholesky_solve(chol, rhs, name: str | None = None):
    """Two triangular solves with the lower Cholesky factor."""
    y = call("MatrixTriangularSolve", chol, rhs, adjoint=False, lower=True)
    return call("MatrixTriangularSolve", chol, y, adjoint=True, lower=True, name=name)


def qr(input, full_matrices: bool = False, name: str | None = None):  # noqa: A002
    return call("Qr", _t(input), full_matrices=full_matrices, name=name)


def svd(tensor, full_matrices: bool = False, compute_uv: bool = True, name: str | None = None):
    """(s, u, v) with ``compute_uv``, else s (v, not its adjoint, as TensorFlow); s is real for
    a complex input too (TF's: the op's complex s, its real part)."""
    s, u, v = call("Svd", _t(tensor), compute_uv=compute_uv, full_matrices=full_matrices, name=name)
    if s.dtype.is_complex:
        s = call("Real", s, Tout=dtypes.float32 if s.dtype == dtypes.complex64 else dtypes.float64)
    return (s, u, v) if compute_uv else s


def eigh(tensor, name: str | None = None):
    return call("SelfAdjointEigV2", _t(tensor), compute_v=True, name=name)


def eigvalsh(tensor, name: str | None = None):
    """The eigenvalues (computed with the vectors, which their gradient needs)."""
    return call("SelfAdjointEigV2", _t(tensor), compute_v=True, name=name)[0]


def _eig_out(x: Tensor):
    return dtypes.complex128 if x.dtype in (dtypes.float64, dtypes.complex128) else dtypes.complex64


def eig(tensor, name: str | None = None):
    x = _t(tensor)
    return call("Eig", x, Tout=_eig_out(x), compute_v=True, name=name)


def eigvals(tensor, name: str | None = None):
    x = _t(tensor)
    return call("Eig", x, Tout=_eig_out(x), compute_v=False, name=name)[0]


def solve(matrix, rhs, adjoint: bool = False, name: str | None = None):
    return call("MatrixSolve", _t(matrix), rhs, adjoint=adjoint, name=name)


def triangular_solve(matrix, rhs, lower: bool = True, adjoint: bool = False, name: str | None = None):
    return call("MatrixTriangularSolve", _t(matrix), rhs, lower=lower, adjoint=adjoint, name=name)


def banded_triangular_solve(bands, rhs, lower: bool = True, adjoint: bool = False, name: str | None = None):
    return call("BandedTriangularSolve", _t(bands), rhs, lower=lower, adjoint=adjoint, name=name)


def lstsq(matrix, rhs, l2_regularizer=0.0, fast: bool = True, name: str | None = None):
    """TensorFlow's composite: the regularized Gramian's Cholesky (MatrixSolveLs if not fast)."""
    a = _t(matrix)
    rows, cols = a.shape[-2], a.shape[-1]
    if not fast or rows is None or cols is None:
        return call("MatrixSolveLs", a, rhs, np.asarray(l2_regularizer, np.float64), fast=fast, name=name)
    over = rows >= cols
    gram = matmul(a, a, adjoint_a=over, adjoint_b=not over)
    if isinstance(l2_regularizer, Tensor) or l2_regularizer != 0:
        gram = gram + l2_regularizer * np.eye(cols if over else rows, dtype=a.dtype.numpy)
    chol = call("Cholesky", gram)
    if over:
        return cholesky_solve(chol, matmul(a, rhs, adjoint_a=True), name=name)
    return matmul(a, cholesky_solve(chol, rhs), adjoint_a=True, name=name)


def lu(input, output_idx_type=dtypes.int32, name: str | None = None):  # noqa: A002
    return call("Lu", _t(input), output_idx_type=as_dtype(output_idx_type), name=name)


def _lower_unit(lower_upper: Tensor):
    ones = call("OnesLike", diag_part(lower_upper))
    return set_diag(band_part(lower_upper, -1, 0), ones)


def lu_reconstruct(lower_upper, perm, validate_args: bool = False, name: str | None = None):
    """L U with the rows put back by the inverse permutation."""
    lower_upper = _t(lower_upper)
    x = matmul(_lower_unit(lower_upper), band_part(lower_upper, 0, -1))
    perm = _t(perm)
    r = lower_upper.shape.rank
    if r == 2:
        return _tf.gather(x, call("InvertPermutation", perm), axis=0, name=name)
    inverse = call("TopKV2", -perm, perm.shape[-1])[1]  # argsort: the inverse permutation per batch
    return _tf.gather(x, inverse, axis=r - 2, batch_dims=r - 2, name=name)


def lu_solve(lower_upper, perm, rhs, validate_args: bool = False, name: str | None = None):
    """Solve A x = rhs from lu(A): permute rhs, then the unit-lower and upper triangular solves."""
    lower_upper, perm, rhs = _t(lower_upper), _t(perm), _t(rhs)
    if rhs.shape.rank == 2 and perm.shape.rank == 1:
        permuted = _tf.gather(rhs, perm, axis=0)
    else:
        batch = np.broadcast_shapes(tuple(rhs.shape.as_list()[:-2]), tuple(perm.shape.as_list()[:-1]))
        d, m = rhs.shape[-2], rhs.shape[-1]
        rhs_b = call("BroadcastTo", rhs, np.asarray([*batch, d, m], np.int32))
        perm_b = call("BroadcastTo", perm, np.asarray([*batch, d], np.int32))
        permuted = _tf.gather(rhs_b, perm_b, axis=len(batch), batch_dims=len(batch))
    y = call("MatrixTriangularSolve", _lower_unit(lower_upper), permuted, lower=True, adjoint=False)
    return call("MatrixTriangularSolve", lower_upper, y, lower=False, adjoint=False, name=name)


def lu_matrix_inverse(lower_upper, perm, validate_args: bool = False, name: str | None = None):
    lower_upper = _t(lower_upper)
    dims = lower_upper.shape.as_list()
    return lu_solve(lower_upper, perm, eye(dims[-1], batch_shape=dims[:-2], dtype=lower_upper.dtype), name=name)


# --- diagonals, bands, transposes -----------------------------------------------------------------

def _k(k):
    return k if isinstance(k, Tensor) else np.asarray(k, np.int32)


def band_part(input, num_lower, num_upper, name: str | None = None):  # noqa: A002
    return call("MatrixBandPart", _t(input), np.int64(num_lower), np.int64(num_upper), name=name)


def diag(diagonal, name: str = "diag", k=0, num_rows=-1, num_cols=-1, padding_value=0, align: str = "RIGHT_LEFT"):
    x = _t(diagonal)
    return call("MatrixDiagV3", x, _k(k), np.int32(num_rows), np.int32(num_cols),
                np.asarray(padding_value, x.dtype.numpy), align=align)


def diag_part(input, name: str = "diag_part", k=0, padding_value=0, align: str = "RIGHT_LEFT"):  # noqa: A002
    x = _t(input)
    return call("MatrixDiagPartV3", x, _k(k), np.asarray(padding_value, x.dtype.numpy), align=align)


def set_diag(input, diagonal, name: str = "set_diag", k=0, align: str = "RIGHT_LEFT"):  # noqa: A002
    return call("MatrixSetDiagV3", _t(input), diagonal, _k(k), align=align)


def trace(x, name: str | None = None):
    return _tf.reduce_sum(diag_part(x), [-1])


def matrix_transpose(a, name: str = "matrix_transpose", conjugate: bool = False):
    x = _t(a)
    r = x.shape.rank
    if r is None or r < 2:
        raise ValueError(f"matrix_transpose: a must be a (batch) matrix of rank >= 2, got shape {x.shape}")
    perm = np.array([*builtins.range(r - 2), r - 1, r - 2], np.int32)
    return call("ConjugateTranspose" if conjugate and x.dtype.is_complex else "Transpose", x, perm)


def adjoint(matrix, name: str | None = None):
    return matrix_transpose(matrix, conjugate=True)


def eye(num_rows, num_columns=None, batch_shape=None, dtype=dtypes.float32, name: str | None = None):
    """Ones on the diagonal of zeros: MatrixDiag of a ones vector (MatrixSetDiag when not square)."""
    dt = as_dtype(dtype)
    square = num_columns is None or num_columns == num_rows
    num_columns = num_rows if num_columns is None else num_columns
    batch = [] if batch_shape is None else [int(b) for b in batch_shape]
    ones = np.ones([*batch, min(int(num_rows), int(num_columns))], dt.numpy)
    if square:
        return diag(ones)
    return set_diag(np.zeros([*batch, int(num_rows), int(num_columns)], dt.numpy), ones)


def cross(a, b, name: str | None = None):
    return call("Cross", _t(a), b, name=name)


def matvec(a, b, transpose_a: bool = False, adjoint_a: bool = False, a_is_sparse: bool = False,
           b_is_sparse: bool = False, name: str | None = None):
    return _tf.squeeze(matmul(a, _tf.expand_dims(b, -1), transpose_a=transpose_a, adjoint_a=adjoint_a), [-1])


def tensordot(a, b, axes, name: str | None = None):
    """Transposes and reshapes onto one MatMul, as TensorFlow (shapes known)."""
    a, b = _t(a), _t(b)
    if isinstance(axes, (int, np.integer)):
        if axes < 0 or axes > a.shape.rank:
            raise ValueError(f"tensordot: axes must be in [0, rank(a)], got {axes}")
        a_axes, b_axes = list(builtins.range(a.shape.rank - axes, a.shape.rank)), list(builtins.range(axes))
    else:
        if len(axes) != 2:
            raise ValueError(f"tensordot: axes must be an int or a pair of lists, got {axes}")
        a_axes, b_axes = ([int(v)] if np.ndim(v) == 0 else [int(i) for i in v] for v in axes)
        if len(a_axes) != len(b_axes):
            raise ValueError(f"tensordot: different numbers of contraction axes, {len(a_axes)} != {len(b_axes)}")

    def flat(x: Tensor, axes, flipped: bool):
        dims = x.shape.as_list()
        if dims is None or None in dims:
            raise ValueError(f"tensordot: needs known shapes, got {x.shape}")
        axes = [i % len(dims) for i in axes]
        free = [i for i in builtins.range(len(dims)) if i not in axes]
        free_dims = [dims[i] for i in free]
        n_free, n_axes = int(np.prod(free_dims)), int(np.prod([dims[i] for i in axes]))
        perm = axes + free if flipped else free + axes
        if perm != list(builtins.range(len(dims))):
            x = _tf.transpose(x, perm)
        new = [n_axes, n_free] if flipped else [n_free, n_axes]
        return (x if x.shape.as_list() == new else _tf.reshape(x, new)), free_dims

    a2, a_free = flat(a, a_axes, False)
    b2, b_free = flat(b, b_axes, True)
    out = matmul(a2, b2)
    if out.shape.as_list() == a_free + b_free:
        return out
    return _tf.reshape(out, a_free + b_free, name=name)


# --- norms ----------------------------------------------------------------------------------------

def norm(tensor, ord="euclidean", axis=None, keepdims=None, name: str | None = None):  # noqa: A002
    """Vector norms (p > 0, inf); matrix norms ('fro', 1, 2, inf) over two axes; TF's arithmetic."""
    matrix = isinstance(axis, (tuple, list)) and len(axis) == 2
    if matrix:
        axis = tuple(axis)
        if not all(isinstance(a, (int, np.integer)) for a in axis) or axis[0] == axis[1]:
            raise ValueError(f"norm: axis must be None, an int or 2 distinct ints, got {axis}")
        if ord not in ("euclidean", "fro", 1, 2, np.inf):
            raise ValueError(f"norm: ord must be a supported matrix norm ('euclidean', 'fro', 1, 2, inf), got {ord}")
    else:
        if not (axis is None or isinstance(axis, (int, np.integer))):
            raise ValueError(f"norm: axis must be None, an int or 2 distinct ints, got {axis}")
        if ord not in ("euclidean", 1, 2, np.inf) and (isinstance(ord, str) or not np.isreal(ord) or ord <= 0):
            raise ValueError(f"norm: ord must be a supported vector norm, got {ord}")
        if axis is not None:
            axis = (int(axis),)
    x = _t(tensor)
    red = None if axis is None else list(axis)
    if ord in ("fro", "euclidean", 2, 2.0) and matrix and ord in (2, 2.0):
        r = x.shape.rank
        pos = [a % r for a in axis]
        before = [i for i in builtins.range(r) if i not in pos] + pos
        s = call("Svd", _tf.transpose(x, before), compute_uv=False)[0]
        result = _tf.expand_dims(_tf.reduce_max(call("Abs", s), -1, keepdims=True), -1)
        result = _tf.transpose(result, list(np.argsort(before)))
    elif ord in ("fro", "euclidean", 2, 2.0):
        conj = call("Conj", x) if x.dtype.is_complex else x
        result = call("Sqrt", _tf.reduce_sum(x * conj, red, keepdims=True))
    else:
        result = call("Abs", x)
        if ord == 1:
            result = _tf.reduce_sum(result, None if axis is None else axis[0], keepdims=True)
            if matrix:
                result = _tf.reduce_max(result, axis[-1], keepdims=True)
        elif ord == np.inf:
            if matrix:
                result = _tf.reduce_sum(result, axis[1], keepdims=True)
            result = _tf.reduce_max(result, None if axis is None else axis[0], keepdims=True)
        else:
            p = np.asarray(ord, result.dtype.numpy)
            result = call("Pow", _tf.reduce_sum(call("Pow", result, p), red, keepdims=True), np.asarray(1.0, p.dtype) / p)
    if not keepdims:
        result = _tf.squeeze(result, red)
    return result


def normalize(tensor, ord="euclidean", axis=None, name: str | None = None):  # noqa: A002
    """(tensor / norm, norm), the norm kept with its reduced axes."""
    x = _t(tensor)
    n = _tf.cast(norm(x, ord, axis, keepdims=True), x.dtype)
    return x / n, n


def global_norm(t_list, name: str | None = None):
    """sqrt(2 * sum of L2Loss): TensorFlow's arithmetic (None entries skipped)."""
    if isinstance(t_list, (str, Tensor)) or not hasattr(t_list, "__iter__"):
        raise TypeError(f"global_norm: t_list should be a sequence of tensors, got {type(t_list).__name__}")
    halves = [call("L2Loss", _t(t)) for t in t_list if t is not None]
    half = _tf.reduce_sum(call("Pack", halves, axis=0))
    return call("Sqrt", half * np.asarray(2.0, half.dtype.numpy), name=name)


def pinv(a, rcond=None, validate_args: bool = False, name: str | None = None):
    """The pseudo-inverse from the SVD, singular values below rcond * max set to inf."""
    a = _t(a)
    dt = a.dtype.numpy
    if rcond is None:
        rows, cols = a.shape[-2], a.shape[-1]
        rcond = 10.0 * max(rows, cols) * np.finfo(dt).eps
    rcond = rcond if isinstance(rcond, Tensor) else np.asarray(rcond, dt)
    s, u, v = call("Svd", a, compute_uv=True, full_matrices=False)
    cutoff = rcond * _tf.reduce_max(s, -1)
    s = call("SelectV2", s > _tf.expand_dims(cutoff, -1), s, np.asarray(np.inf, dt))
    return matmul(v / _tf.expand_dims(s, -2), u, adjoint_b=True, name=name)


def matrix_rank(a, tol=None, validate_args: bool = False, name: str | None = None):
    """The number of singular values above ``tol`` (default eps * max(m, n) * max singular value)."""
    a = _t(a, dtypes.float32) if not isinstance(a, Tensor) else a
    s = call("Svd", a, compute_uv=False)[0]
    if tol is None:
        m = max(a.shape[-2], a.shape[-1])
        tol = np.asarray(np.finfo(a.dtype.numpy).eps * m, a.dtype.numpy) * _tf.reduce_max(s, -1, keepdims=True)
    return _tf.reduce_sum(_tf.cast(s > tol, dtypes.int32), -1)
