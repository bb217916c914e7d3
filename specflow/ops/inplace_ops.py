"""Empty: a new tensor of a given shape and dtype (TF's gen_array_ops.empty, which tf.nn.ctc_loss's
graph and tf.TensorArray-free accumulations start from). TF leaves its contents undefined unless
``init``; here they are always zeros (empty strings), so a graph never reads stale memory."""

from __future__ import annotations

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops.array_ops import _dims_arg
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import kernel, not_differentiable, register_op


def _empty_shape(ic: InferenceContext) -> list[Shape]:
    if ic.shape(0).rank not in (None, 1):
        raise ic.fail(f"shape must be a vector, got shape {ic.shape(0)}")
    if ic.value(0) is not None:
        _dims_arg(ic.fail, ic.value(0), "shape")
    return [ic.shape_from_value(0)]


register_op(
    "Empty",
    inputs=["shape: int32"],
    outputs=["output: dtype"],
    attrs=["dtype: type", "init: bool = false"],
    stateful=True,  # as in TF: each run makes a new tensor, never folded or shared
    shape=_empty_shape,
    doc="A new tensor of `shape` and `dtype`. TF leaves it uninitialized unless `init`; here it "
    "always holds zeros (empty strings).",
)


@kernel("Empty", host_inputs=(0,))
def _empty(ctx, shape):
    dims = _dims_arg(ctx.fail, ctx.host(shape), "shape")
    dtype = ctx.attrs["dtype"].numpy
    if np.dtype(dtype).kind == "O":
        return np.full(dims, b"", dtype=object)
    return ctx.xp.zeros(dims, dtype=dtype)


not_differentiable("Empty")


# --- InplaceUpdate / InplaceAdd / InplaceSub --------------------------------------------------
# (TF's Python inplace_ops; despite the names, here a new tensor: kernels never mutate inputs.)


def _inplace_shape(ic: InferenceContext) -> list[Shape]:
    x, i, v = ic.shape(0), ic.shape(1), ic.shape(2)
    if i.rank not in (None, 1):
        raise ic.fail(f"i must be a vector of row indices, got shape {i}")
    if x.rank is not None and v.rank is not None:
        if x.rank == 0 or v.rank != x.rank or not Shape(v.dims[1:]).is_compatible_with(Shape(x.dims[1:])):
            raise ic.fail(f"v must be [len(i)] + x.shape[1:], got v {v} for x {x}")
        if i.rank == 1 and not Shape([i[0]]).is_compatible_with(Shape([v[0]])):
            raise ic.fail(f"v must have one row per index in i ({i[0]}), got shape {v}")
    return [x]


def _register_inplace(op: str, what: str, combine) -> None:
    register_op(
        op,
        inputs=["x: T", "i: int32", "v: T"],
        outputs=["y: T"],
        attrs=["T: type"],
        shape=_inplace_shape,
        doc=f"A copy of x with rows i[k] {what} v[k] (rows of x's first dimension; repeated rows apply in order).",
    )
    not_differentiable(op)  # TF registers no gradient for it

    @kernel(op, host_inputs=(1,))
    def _run(ctx, x, i, v):
        rows = ctx.host(i)
        _inplace_shape(InferenceContext(ctx.node, ctx.attrs, [], [Shape(list(a.shape)) for a in (x, rows, v)]))
        bad = (rows < 0) | (rows >= x.shape[0])
        if bad.any():
            k = int(np.argmax(bad))
            raise ctx.fail(f"i[{k}] = {int(rows[k])} is not a row of x (x has {x.shape[0]})")
        out = x.copy()
        for k, r in enumerate(rows.tolist()):
            out[r] = combine(out[r], v[k])
        return out


_register_inplace("InplaceUpdate", "replaced by", lambda old, new: new)
_register_inplace("InplaceAdd", "plus", lambda old, new: old + new)
_register_inplace("InplaceSub", "minus", lambda old, new: old - new)
