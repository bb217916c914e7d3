"""Matrix products: MatMul and BatchMatMul (v1: equal batch dims; V2: broadcasting; V3: input
and output types of their own), with their gradients (part of the math family)."""

from __future__ import annotations

import numpy as np

from specflow.errors import GraphError
from specflow.graph.shapes import Shape, broadcast_shapes
from specflow.ops import buffers
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.math_ops import _fmt, _is_complex, _out
from specflow.ops.registry import gradient, kernel, register_op

# --- MatMul / BatchMatMulV2 -------------------------------------------------------------------


def _flags(**flags) -> str:
    on = [k for k, v in flags.items() if v]
    return f" ({', '.join(k + '=true' for k in on)})" if on else ""


def _matmul_shape(ic: InferenceContext) -> list[Shape]:
    a, b = ic.shape(0), ic.shape(1)
    ta, tb = ic.attr("transpose_a"), ic.attr("transpose_b")
    for name, s in (("a", a), ("b", b)):
        if s.rank is not None and s.rank != 2:
            raise ic.fail(f"input '{name}' must be a matrix (rank 2), got shape {s}")
    a2, b2 = a.with_rank(2), b.with_rank(2)
    inner_a, inner_b = a2[0 if ta else 1], b2[1 if tb else 0]
    if inner_a is not None and inner_b is not None and inner_a != inner_b:
        raise ic.fail(f"inner dimensions differ: {a} x {b}" + _flags(transpose_a=ta, transpose_b=tb))
    return [Shape([a2[1 if ta else 0], b2[0 if tb else 1]])]


register_op(
    "MatMul",
    inputs=["a: T", "b: T"],
    outputs=["product: T"],
    attrs=[
        "transpose_a: bool = false",
        "transpose_b: bool = false",
        "T: {bfloat16, float16, float32, float64, int32, int64, complex64, complex128}",
    ],
    shape=_matmul_shape,
    doc="The matrix product a @ b of two matrices, each optionally transposed first.",
)


def _inner_check(ctx, x, y, kx, ky, **flags):
    if x.shape[kx] != y.shape[ky]:
        raise ctx.fail(f"inner dimensions differ: {_fmt(x.shape)} x {_fmt(y.shape)}" + _flags(**flags))


@kernel("MatMul")
def _matmul(ctx, a, b):
    attrs = ctx.attrs
    ta, tb = attrs["transpose_a"], attrs["transpose_b"]
    if a.ndim != 2 or b.ndim != 2:
        raise ctx.fail(f"inputs must be matrices, got shapes {_fmt(a.shape)} and {_fmt(b.shape)}")
    a2, b2 = a.T if ta else a, b.T if tb else b
    if a2.shape[1] != b2.shape[0]:  # the inner dimensions differ: say which, as TF does
        _inner_check(ctx, a, b, 0 if ta else 1, 1 if tb else 0, transpose_a=ta, transpose_b=tb)
    # Both operands have type T, and so has their product: into a reused buffer when large.
    m, n = a2.shape[0], b2.shape[1]
    if ctx.arena is not None and m * n * a.itemsize >= buffers.MIN_BYTES:
        return ctx.xp.matmul(a2, b2, out=ctx.empty((m, n), a.dtype))
    return ctx.xp.matmul(a2, b2)


def _batch_matmul_shape(ic: InferenceContext) -> list[Shape]:
    x, y = ic.shape(0), ic.shape(1)
    adj_x, adj_y = ic.attr("adj_x"), ic.attr("adj_y")
    for name, s in (("x", x), ("y", y)):
        if s.rank is not None and s.rank < 2:
            raise ic.fail(f"input '{name}' must have rank >= 2, got shape {s}")
    if x.rank is None or y.rank is None:
        return [Shape.unknown()]
    inner_x, inner_y = x[-2 if adj_x else -1], y[-1 if adj_y else -2]
    if inner_x is not None and inner_y is not None and inner_x != inner_y:
        raise ic.fail(f"inner dimensions differ: {x} x {y}" + _flags(adj_x=adj_x, adj_y=adj_y))
    try:
        batch = broadcast_shapes(Shape(x.dims[:-2]), Shape(y.dims[:-2]))
    except ValueError:
        raise ic.fail(f"batch dimensions cannot broadcast: {x} x {y}") from None
    return [batch.concatenate(Shape([x[-1 if adj_x else -2], y[-2 if adj_y else -1]]))]


register_op(
    "BatchMatMulV2",
    inputs=["x: T", "y: T"],
    outputs=["output: T"],
    attrs=[
        "T: {bfloat16, float16, float32, float64, int16, int32, int64, complex64, complex128}",
        "adj_x: bool = false",
        "adj_y: bool = false",
    ],
    shape=_batch_matmul_shape,
    doc="Matrix products over the last two dims, batch dims broadcasting like numpy; adj_x/adj_y "
    "take the adjoint (conjugate transpose) of each matrix first.",
)


def _adjoint(xp, m):
    m = xp.swapaxes(m, -1, -2)
    return xp.conj(m) if _is_complex(m) else m


@kernel("BatchMatMulV2")
def _batch_matmul(ctx, x, y):
    adj_x, adj_y = ctx.attrs["adj_x"], ctx.attrs["adj_y"]
    if x.ndim < 2 or y.ndim < 2:
        raise ctx.fail(f"inputs must have rank >= 2, got shapes {_fmt(x.shape)} and {_fmt(y.shape)}")
    _inner_check(ctx, x, y, -2 if adj_x else -1, -1 if adj_y else -2, adj_x=adj_x, adj_y=adj_y)
    try:
        np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    except ValueError:
        raise ctx.fail(f"batch dimensions cannot broadcast: {_fmt(x.shape)} x {_fmt(y.shape)}") from None
    xp = ctx.xp
    return _out(ctx, xp.matmul(_adjoint(xp, x) if adj_x else x, _adjoint(xp, y) if adj_y else y), x.dtype)


def _product_grads(b, op, grad, a, c, ta, tb, flag_a, flag_b):
    """TF's four cases: d(op(a, c)) for a, c each maybe transposed (adjointed)."""

    def mm(x, y, fx, fy):
        return gu.emit(b, op, x, y, **{flag_a: fx, flag_b: fy})

    if not ta and not tb:
        return mm(grad, c, False, True), mm(a, grad, True, False)
    if not ta and tb:
        return mm(grad, c, False, False), mm(grad, a, True, False)
    if ta and not tb:
        return mm(c, grad, False, True), mm(a, grad, False, False)
    return mm(c, grad, True, True), mm(grad, a, True, True)


@gradient("MatMul")
def _matmul_grad(b, node, dys):
    # MatMul transposes without conjugating: for complex inputs TF's formulas take conj(a), conj(b).
    a, c = node.data_inputs
    if b.spec(a).dtype.is_complex:
        a, c = gu.emit(b, "Conj", a), gu.emit(b, "Conj", c)
    ta, tb = node.attrs["transpose_a"], node.attrs["transpose_b"]
    return list(_product_grads(b, "MatMul", dys[0], a, c, ta, tb, "transpose_a", "transpose_b"))


@gradient("BatchMatMulV2")
def _batch_matmul_grad(b, node, dys):
    # Adjoints make these the right formulas for complex inputs as well.
    x, y = node.data_inputs
    dx, dy = _product_grads(b, "BatchMatMulV2", dys[0], x, y, node.attrs["adj_x"], node.attrs["adj_y"], "adj_x", "adj_y")
    return [gu.sum_to(b, dx, x), gu.sum_to(b, dy, y)]  # sum over broadcast batch dims


# --- BatchMatMul (v1) / BatchMatMulV3 ---------------------------------------------------------


def _batch_matmul_v1_shape(ic: InferenceContext) -> list[Shape]:
    x, y = ic.shape(0), ic.shape(1)
    if x.rank is not None and y.rank is not None:
        if x.rank != y.rank:
            raise ic.fail(f"x and y must have the same rank, got shapes {x} and {y}")
        if not Shape(x.dims[:-2]).is_compatible_with(Shape(y.dims[:-2])):
            raise ic.fail(f"batch dimensions must be equal (BatchMatMul does not broadcast): {x} x {y}")
    return _batch_matmul_shape(ic)


register_op(
    "BatchMatMul",
    inputs=["x: T", "y: T"],
    outputs=["output: T"],
    attrs=[
        "T: {bfloat16, float16, float32, float64, int32, int64, complex64, complex128}",
        "adj_x: bool = false",
        "adj_y: bool = false",
    ],
    shape=_batch_matmul_v1_shape,
    doc="BatchMatMulV2 without broadcasting: x and y have the same rank and batch dims.",
)


@kernel("BatchMatMul")
def _batch_matmul_v1(ctx, x, y):
    if x.ndim != y.ndim or x.shape[:-2] != y.shape[:-2]:
        raise ctx.fail(f"x and y must have the same rank and batch dimensions, got {_fmt(x.shape)} and {_fmt(y.shape)}")
    return _batch_matmul(ctx, x, y)


@gradient("BatchMatMul")
def _batch_matmul_v1_grad(b, node, dys):
    x, y = node.data_inputs
    return list(_product_grads(b, "BatchMatMul", dys[0], x, y, node.attrs["adj_x"], node.attrs["adj_y"], "adj_x", "adj_y"))


_V3_TYPES = "{bfloat16, float16, float32, float64, uint8, int8, int16, int32, int64, complex64, complex128}"

register_op(
    "BatchMatMulV3",
    inputs=["x: Ta", "y: Tb"],
    outputs=["output: Tout"],
    attrs=[f"Ta: {_V3_TYPES}", f"Tb: {_V3_TYPES}", f"Tout: {_V3_TYPES}", "adj_x: bool = false", "adj_y: bool = false",
           "grad_x: bool = false", "grad_y: bool = false"],  # fmt: skip  (TF's hints: which product a gradient is)
    shape=_batch_matmul_shape,
    doc="BatchMatMulV2 with its own input types: x and y are converted to Tout, then multiplied.",
)


@kernel("BatchMatMulV3")
def _batch_matmul_v3(ctx, x, y):
    out = ctx.attrs["Tout"].numpy
    return _batch_matmul(ctx, x.astype(out, copy=False), y.astype(out, copy=False))


@gradient("BatchMatMulV3")
def _batch_matmul_v3_grad(b, node, dys):
    x, y = node.data_inputs
    if not node.attrs["Ta"] == node.attrs["Tb"] == node.attrs["Tout"]:
        raise GraphError("the gradient of BatchMatMulV3 needs Ta, Tb and Tout to be the same type",
                         node=node.name, location=node.location)  # fmt: skip
    dx, dy = _product_grads(b, "BatchMatMulV2", dys[0], x, y, node.attrs["adj_x"], node.attrs["adj_y"], "adj_x", "adj_y")
    return [gu.sum_to(b, dx, x), gu.sum_to(b, dy, y)]
