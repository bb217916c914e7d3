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
