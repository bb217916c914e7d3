"""TridiagonalMatMul: a batch of tridiagonal matrices, given by their three diagonals, times
dense right-hand sides, with TF's gradient (linalg_grad.py)."""

from __future__ import annotations

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import gradient, kernel, register_op


def _tridiagonal_shape(ic: InferenceContext) -> list[Shape]:
    rhs = ic.shape(3)
    if rhs.rank is not None and rhs.rank < 2:
        raise ic.fail(f"rhs must be at least a matrix [..., M, N], got shape {rhs}")
    for i, name in enumerate(("superdiag", "maindiag", "subdiag")):
        s = ic.shape(i)
        if s.rank is not None and (s.rank < 2 or s.dims[-2] not in (None, 1)):
            raise ic.fail(f"{name} must have shape [..., 1, M], got {s}")
    return [rhs]


register_op(
    "TridiagonalMatMul",
    inputs=["superdiag: T", "maindiag: T", "subdiag: T", "rhs: T"],
    outputs=["output: T"],
    attrs=["T: {float32, float64, complex64, complex128}"],
    shape=_tridiagonal_shape,
    doc="The tridiagonal matrices with these diagonals ([..., 1, M] each; superdiag's last and "
    "subdiag's first element are not used) times rhs [..., M, N].",
)


@kernel("TridiagonalMatMul")
def _tridiagonal_matmul(ctx, sup, main, sub, rhs):
    xp = ctx.xp
    if rhs.ndim < 2:
        raise ctx.fail(f"rhs must be at least a matrix [..., M, N], got shape {list(rhs.shape)}")
    want = (*rhs.shape[:-2], 1, rhs.shape[-2])
    for name, d in (("superdiag", sup), ("maindiag", main), ("subdiag", sub)):
        if d.shape != want:
            raise ctx.fail(f"{name} must have shape {list(want)} for rhs of shape {list(rhs.shape)}, got {list(d.shape)}")
    up, mid, down = (xp.swapaxes(d, -1, -2) for d in (sup, main, sub))  # [..., M, 1]
    out = mid * rhs
    if rhs.shape[-2] > 1:
        out[..., :-1, :] += up[..., :-1, :] * rhs[..., 1:, :]
        out[..., 1:, :] += down[..., 1:, :] * rhs[..., :-1, :]
    return out


def _shift(b, x: str, left: bool) -> str:
    """x moved one row up (left) or down along the next-to-last axis, a zero row filling in
    (TF's _LeftShift and _RightShift)."""
    rows = gu.emit(b, "StridedSlice", x, gu.const(b, np.array([0, 1 if left else 0, 0], np.int32)),
                   gu.const(b, np.array([0, 0 if left else -1, 0], np.int32)), gu.const(b, np.array([1, 1, 1], np.int32)),
                   begin_mask=0b100 if left else 0b110, end_mask=0b110 if left else 0b100, ellipsis_mask=0b001)  # fmt: skip
    rank = gu.emit(b, "Rank", x)
    lead = gu.emit(b, "Fill", gu.emit(b, "Pack", gu.emit(b, "Sub", rank, gu.const(b, np.int32(2))),
                                      gu.const(b, np.int32(2)), N=2, axis=0), gu.const(b, np.int32(0)))  # fmt: skip
    last = gu.const(b, np.array([[0, 1] if left else [1, 0], [0, 0]], np.int32))
    return gu.emit(b, "Pad", rows, gu.emit(b, "ConcatV2", lead, last, gu.const(b, np.int32(0)), N=2))


@gradient("TridiagonalMatMul")
def _tridiagonal_matmul_grad(b, node, dys):
    # TF's: each diagonal's gradient sums conj(rhs) (shifted to meet it) times the output
    # gradient along N; rhs's is the conjugate-transposed product, with the diagonals shifted.
    sup, main, sub, rhs = node.data_inputs
    dy = dys[0]
    complex_ = b.spec(rhs).dtype.is_complex

    def conj(t):
        return gu.emit(b, "Conj", t) if complex_ else t

    def column(d):  # [..., 1, M] -> [..., M, 1], conjugated
        return conj(gu.emit(b, "Transpose", d, _swap_last_two(b, d)))

    rhs_c = conj(rhs)
    last = gu.const(b, np.array([-1], np.int32))

    def diag_grad(t):
        return gu.emit(b, "ExpandDims", gu.emit(b, "Sum", gu.emit(b, "Mul", t, dy), last), gu.const(b, np.int32(-2)))

    grads = [diag_grad(_shift(b, rhs_c, True)), diag_grad(rhs_c), diag_grad(_shift(b, rhs_c, False))]
    rhs_grad = gu.emit(b, "AddN", _shift(b, gu.emit(b, "Mul", column(sup), dy), False),
                       gu.emit(b, "Mul", column(main), dy), _shift(b, gu.emit(b, "Mul", column(sub), dy), True))  # fmt: skip
    return [*grads, rhs_grad]


def _swap_last_two(b, x: str) -> str:
    """The permutation that swaps x's last two axes (its rank read at run time)."""
    rank = gu.emit(b, "Rank", x)
    head = gu.emit(b, "Range", gu.const(b, np.int32(0)), gu.emit(b, "Sub", rank, gu.const(b, np.int32(2))),
                   gu.const(b, np.int32(1)))  # fmt: skip
    tail = gu.emit(b, "Pack", gu.emit(b, "Sub", rank, gu.const(b, np.int32(1))),
                   gu.emit(b, "Sub", rank, gu.const(b, np.int32(2))), N=2, axis=0)  # fmt: skip
    return gu.emit(b, "ConcatV2", head, tail, gu.const(b, np.int32(0)), N=2)


# --- TridiagonalSolve ---------------------------------------------------------------------------
# diagonals [..., 3, M] in TF's compact format: rows superdiagonal (its last element unused), main
# diagonal, subdiagonal (its first unused), which is MatrixDiagV3's k = (-1, 1) with LEFT_RIGHT
# alignment: the gradient densifies through it.

_COMPACT = {"align": "LEFT_RIGHT"}


def _solve_shape(ic: InferenceContext) -> list[Shape]:
    diags, rhs = ic.shape(0), ic.shape(1)
    if diags.rank is not None and (diags.rank < 2 or diags.dims[-2] not in (None, 3)):
        raise ic.fail(f"diagonals must have shape [..., 3, M] (TF's compact format), got {diags}")
    if rhs.rank is not None and rhs.rank < 2:
        raise ic.fail(f"rhs must be at least a matrix [..., M, K], got shape {rhs}")
    return [rhs]


register_op(
    "TridiagonalSolve",
    inputs=["diagonals: T", "rhs: T"],
    outputs=["output: T"],
    attrs=["partial_pivoting: bool = true", "perturb_singular: bool = false", "T: {float32, float64}"],
    shape=_solve_shape,
    doc="x with A x = rhs for the tridiagonal A whose diagonals are [..., 3, M] (superdiagonal, "
    "main, subdiagonal; the superdiagonal's last and the subdiagonal's first element unused).",
)


@kernel("TridiagonalSolve", devices=("CPU",))
def _tridiagonal_solve(ctx, diags, rhs):
    if diags.ndim < 2 or diags.shape[-2] != 3:
        raise ctx.fail(f"diagonals must have shape [..., 3, M] (TF's compact format), got {list(diags.shape)}")
    if rhs.ndim < 2 or rhs.shape[:-2] != diags.shape[:-2] or rhs.shape[-2] != diags.shape[-1]:
        raise ctx.fail(f"rhs must have shape {[*diags.shape[:-2], diags.shape[-1], 'K']} for diagonals of "
                       f"shape {list(diags.shape)}, got {list(rhs.shape)}")  # fmt: skip
    if ctx.attrs["perturb_singular"]:
        raise ctx.fail("perturb_singular is not supported (TF's perturbation of singular pivots)")
    m = diags.shape[-1]
    a = np.zeros((*diags.shape[:-2], m, m), diags.dtype)
    i = np.arange(m)
    a[..., i, i] = diags[..., 1, :]
    a[..., i[:-1], i[1:]] = diags[..., 0, :-1]
    a[..., i[1:], i[:-1]] = diags[..., 2, 1:]
    try:
        return np.linalg.solve(a, rhs).astype(rhs.dtype, copy=False)
    except np.linalg.LinAlgError:
        raise ctx.fail("the tridiagonal matrix is not invertible") from None


@gradient("TridiagonalSolve")
def _tridiagonal_solve_grad(b, node, dys):
    # TF's: rhs's gradient solves with the transposed matrix; the diagonals' is minus the three
    # diagonals of rhs_grad @ x^T (the unused corners 0).
    diags = node.data_inputs[0]
    x = f"{node.name}:0"
    k, zero = gu.const(b, np.array([-1, 1], np.int32)), gu.const(b, np.zeros((), b.spec(diags).dtype.numpy))
    minus_one = gu.const(b, np.int32(-1))
    dense = gu.emit(b, "MatrixDiagV3", diags, k, minus_one, minus_one, zero, **_COMPACT)
    rhs_grad = gu.emit(b, "MatrixSolve", dense, dys[0], adjoint=True)
    outer = gu.emit(b, "BatchMatMulV2", rhs_grad, x, adj_y=True)
    return [gu.emit(b, "Neg", gu.emit(b, "MatrixDiagPartV3", outer, k, zero, **_COMPACT)), rhs_grad]
