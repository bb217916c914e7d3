"""MatrixSolveLs (tf.linalg.lstsq): least squares per batch entry, with TF's two paths
(``matrix_solve_ls_op_impl.h``) and TF's gradient (linalg_grad.py's _MatrixSolveLsGrad).

``fast=True`` solves the regularized normal equations through a Cholesky factor: X = (A^H A +
l2 I)^-1 A^H B for M >= N, X = A^H (A A^H + l2 I)^-1 B for M < N (the minimum-norm solution at l2 =
0); a Gram matrix that is not positive definite is TF's error. ``fast=False`` is the minimum-norm
least-squares solution for any rank (a pseudo-inverse: TF's complete orthogonal decomposition
gives the same X) and ignores l2_regularizer; it has no gradient, as in TF.
"""

from __future__ import annotations

import numpy as np

from specflow.errors import GraphError
from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.linalg_ops import _LINALG_TYPES, _mm
from specflow.ops.registry import gradient, kernel, register_op
from specflow.ops.shape_args import shape_of

_INCOMPATIBLE = "Input matrix and rhs are incompatible."
_RANK_DEFICIENT = ("Input matrix was rank deficient or ill-conditioned. Try setting fast=False or provide a larger "
                   "l2_regularizer > 0.")  # fmt: skip


def _lstsq_shape(fail, a: Shape, rhs: Shape, l2: Shape) -> Shape:
    if l2.rank not in (None, 0):
        raise fail(f"l2_regularizer must be a scalar, got shape {l2}")
    for what, s in (("matrix", a), ("rhs", rhs)):
        if s.rank is not None and s.rank < 2:
            raise fail(f"{what} must have rank >= 2, got shape {s}")
    if a.rank is None or rhs.rank is None:
        return Shape.unknown()
    if a.rank != rhs.rank or not Shape(a.dims[:-1]).is_compatible_with(Shape(rhs.dims[:-1])):
        raise fail(f"{_INCOMPATIBLE} matrix {a} and rhs {rhs} must be [..., M, N] and [..., M, K]")
    batch = Shape(a.dims[:-2]).merge_with(Shape(rhs.dims[:-2]))
    return Shape([*batch.dims, a[-1], rhs[-1]])


register_op(
    "MatrixSolveLs",
    inputs=["matrix: T", "rhs: T", "l2_regularizer: float64"],
    outputs=["output: T"],
    attrs=[f"T: {_LINALG_TYPES}", "fast: bool = true"],
    shape=lambda ic: [_lstsq_shape(ic.fail, ic.shape(0), ic.shape(1), ic.shape(2))],
    doc="X of shape [..., N, K] solving matrix @ X = rhs ([..., M, N], [..., M, K]) in the least-squares "
    "sense: fast=true by the normal equations with l2_regularizer (Cholesky; a rank-deficient matrix "
    "needs l2 > 0), fast=false the minimum-norm solution for any rank (l2 ignored).",
)


def _adj(xp, x):
    return xp.conj(xp.swapaxes(x, -1, -2))


@kernel("MatrixSolveLs", host_inputs=(2,))
def _lstsq(ctx, a, rhs, l2):
    xp = ctx.xp
    _lstsq_shape(ctx.fail, shape_of(a), shape_of(rhs), shape_of(l2))
    dtype = a.dtype
    if dtype == np.float16:  # as TF's half kernel: in float32, rounded once
        a, rhs = a.astype(np.float32), rhs.astype(np.float32)
    m, n = a.shape[-2:]
    if a.size == 0 or rhs.size == 0:
        return xp.zeros(a.shape[:-2] + (n, rhs.shape[-1]), dtype)
    if not ctx.attrs["fast"]:
        return (xp.linalg.pinv(a) @ rhs).astype(dtype, copy=False)
    lam = float(ctx.host(l2))
    if m >= n:
        gram = _adj(xp, a) @ a
        b = _adj(xp, a) @ rhs
    else:
        gram = a @ _adj(xp, a)
        b = rhs
    gram = gram + lam * xp.eye(gram.shape[-1], dtype=gram.dtype)
    try:
        xp.linalg.cholesky(gram)  # TF's test: the factor exists
        x = xp.linalg.solve(gram, b)
    except Exception as e:
        if type(e).__name__ == "LinAlgError":
            raise ctx.fail(_RANK_DEFICIENT) from None
        raise
    if m < n:
        x = _adj(xp, a) @ x
    return x.astype(dtype, copy=False)


def _regularized_gram(b, a: str, l2: str, a_first: bool) -> str:
    """A^H A + l2 I (a_first False) or A A^H + l2 I, the diagonal raised by l2 (cast to A's type)."""
    gram = _mm(b, a, a, adj_y=True) if a_first else _mm(b, a, a, adj_x=True)
    zero = gu.const(b, 0, "int32")
    diag = gu.emit(b, "MatrixDiagPartV3", gram, zero, gu.const(b, 0, b.spec(a).dtype.name))
    raised = gu.emit(b, "AddV2", diag, gu.emit(b, "Cast", l2, DstT=b.spec(a).dtype))
    return gu.emit(b, "MatrixSetDiagV3", gram, raised, zero)


@gradient("MatrixSolveLs")
def _lstsq_grad(b, node, dys):
    if not node.attrs["fast"]:
        raise GraphError("MatrixSolveLs has no gradient with fast=False (as in TensorFlow)", node=node.name,
                         location=node.location)  # fmt: skip
    a, rhs, l2 = node.data_inputs
    shape = b.spec(a).shape
    g, x = dys[0], node.name
    if shape.rank is None or shape[-1] is None or shape[-2] is None:
        raise GraphError("the gradient of MatrixSolveLs needs the matrix's last two dims known", node=node.name,
                         location=node.location)  # fmt: skip
    if shape[-2] >= shape[-1]:
        # X = C^-1 A^H B, C = A^H A + l2 I: z = C^-1 g, dB = A z, dA = B z^H - A (X z^H + z X^H)
        z = gu.emit(b, "MatrixSolve", _regularized_gram(b, a, l2, a_first=False), g)
        xz = gu.emit(b, "AddV2", _mm(b, x, z, adj_y=True), _mm(b, z, x, adj_y=True))
        grad_a = gu.emit(b, "Sub", _mm(b, rhs, z, adj_y=True), _mm(b, a, xz))
        return [grad_a, _mm(b, a, z), None]
    # X = A^H y, y = C^-1 B, C = A A^H + l2 I: w = C^-1 A g, dB = w, dA = y g^H - (w y^H + y w^H) A
    gram = _regularized_gram(b, a, l2, a_first=True)
    y = gu.emit(b, "MatrixSolve", gram, rhs)
    w = gu.emit(b, "MatrixSolve", gram, _mm(b, a, g))
    wy = gu.emit(b, "AddV2", _mm(b, w, y, adj_y=True), _mm(b, y, w, adj_y=True))
    return [gu.emit(b, "Sub", _mm(b, y, g, adj_y=True), _mm(b, wy, a)), w, None]
