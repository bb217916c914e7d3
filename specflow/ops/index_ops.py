"""Index arithmetic and order statistics from TF2's Python API: UnravelIndex (tf.unravel_index)
and NthElement (tf.nn's nth_element, tfp's percentiles), with TF's checks and NthElement's gradient
(nn_grad.py: shared evenly among the entries equal to the value picked)."""

from __future__ import annotations

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import gradient, kernel, not_differentiable, register_op
from specflow.ops.shape_args import scalar_arg, shape_of

# --- UnravelIndex -------------------------------------------------------------------------------


def _unravel_shape(ic: InferenceContext) -> list[Shape]:
    indices, dims = ic.shape(0), ic.shape(1)
    if indices.rank is not None and indices.rank > 1:
        raise ic.fail(f"indices can only be a scalar or a vector, got shape {indices}")
    if dims.rank not in (None, 1):
        raise ic.fail(f"dims must be a vector, got shape {dims}")
    n = dims[0] if dims.rank == 1 else None
    if indices.rank is None:
        return [Shape.unknown()]
    return [Shape([n] + list(indices.dims))]


register_op(
    "UnravelIndex",
    inputs=["indices: Tidx", "dims: Tidx"],
    outputs=["output: Tidx"],
    attrs=["Tidx: {int32, int64} = int32"],
    shape=_unravel_shape,
    doc="The coordinates of flat `indices` (a scalar or a vector) in an array of shape `dims` (row-major): "
    "output[:, i] are indices[i]'s coordinates.",
)
not_differentiable("UnravelIndex")


@kernel("UnravelIndex", devices=("CPU",))
def _unravel(ctx, indices, dims):
    if indices.ndim > 1:
        raise ctx.fail(f"indices can only be a scalar or a vector, got shape {list(indices.shape)}")
    if dims.ndim != 1:
        raise ctx.fail(f"dims must be a vector, got shape {list(dims.shape)}")
    for i, d in enumerate(dims.tolist()):
        if d <= 0:
            raise ctx.fail(f"dims[{i}] = {d}: every dim must be positive")
    total = int(np.prod(dims, dtype=np.int64))
    if indices.size and int(indices.max()) >= total:
        bad = int(indices.max())
        raise ctx.fail(f"index {bad} is out of bounds for dims {dims.tolist()} (their product is {total})")
    # C's division and remainder, as TF's kernel: a negative index gives negative coordinates
    rest = indices.astype(np.int64)
    out = []
    for d in reversed(dims.tolist()):
        r = np.fmod(rest, d)
        out.append(r)
        rest = (rest - r) // d
    return np.stack(out[::-1]).astype(indices.dtype)


# --- NthElement ---------------------------------------------------------------------------------


def _nth_shape(fail, x: Shape, n: int | None) -> Shape:
    if x.rank == 0:
        raise fail("input must be at least rank 1 but is rank 0")
    if n is not None and n < 0:
        raise fail(f"n must be non-negative but is {n}")
    if x.rank is None:
        return Shape.unknown()
    if n is not None and x[-1] is not None and x[-1] <= n:
        raise fail(f"input must have last dimension > n = {n}, got shape {x}")
    return Shape(x.dims[:-1])


register_op(
    "NthElement",
    inputs=["input: T", "n: int32"],
    outputs=["values: T"],
    attrs=["reverse: bool = false", "T: {real}"],
    shape=lambda ic: [_nth_shape(ic.fail, ic.shape(0), scalar_arg(ic.fail, ic.value(1), "n"))],
    doc="The n-th smallest value along the last axis (counting from 0; the n-th largest with "
    "reverse=true).",
)


@kernel("NthElement", host_inputs=(1,))
def _nth_element(ctx, x, n):
    n = scalar_arg(ctx.fail, ctx.host(n), "n")
    _nth_shape(ctx.fail, shape_of(x), n)
    k = x.shape[-1] - 1 - n if ctx.attrs["reverse"] else n
    return ctx.xp.partition(x, k, axis=-1)[..., k]


@gradient("NthElement")
def _nth_element_grad(b, node, dys):
    x = node.data_inputs[0]
    dt = b.spec(x).dtype
    minus1 = gu.const(b, -1, "int32")
    hits = gu.emit(b, "Cast", gu.emit(b, "Equal", x, gu.emit(b, "ExpandDims", node.name, minus1)), DstT=dt)
    count = gu.emit(b, "ExpandDims", gu.emit(b, "Sum", hits, minus1), minus1)
    share = gu.emit(b, "Mul", gu.emit(b, "RealDiv", hits, count), gu.emit(b, "ExpandDims", dys[0], minus1))
    return [share, None]

