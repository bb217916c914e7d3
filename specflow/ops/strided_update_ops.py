"""TensorStridedSliceUpdate (``tensor[begin:end:strides] = value`` on a tensor, as
tf.experimental.numpy and XLA-bound graphs write it): a copy of `input` with the slice StridedSlice
would read replaced by `value`, broadcast to the slice's shape; with TF's gradient (the slice's
part of dy to `value`, summed over what was broadcast; the rest to `input`)."""

from __future__ import annotations

from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import gradient, kernel, register_op
from specflow.ops.shape_args import shape_of, vector_arg
from specflow.ops.slice_ops import _MASKS, _slice_spec, _strided_slice_plan


def _broadcasts(value: Shape, sliced: Shape) -> bool:
    if value.rank is None or sliced.rank is None:
        return True
    if value.rank > sliced.rank:
        return False
    return all(v is None or s is None or v in (1, s) for v, s in zip(value.dims[::-1], sliced.dims[::-1]))


def _update_infer(ic: InferenceContext) -> list[Shape]:
    spec = [vector_arg(ic.fail, ic.value(i), w) for i, w in ((1, "begin"), (2, "end"), (3, "strides"))]
    lens = {len(v) for v in spec if v is not None}
    if len(lens) > 1:
        raise ic.fail(f"begin, end and strides must have the same length, got {sorted(lens)}")
    if None not in spec:
        sliced = _strided_slice_plan(ic.fail, ic.shape(0), *spec, lens.pop(), ic.attrs)[0]
        if not _broadcasts(ic.shape(4), sliced):
            raise ic.fail(f"value of shape {ic.shape(4)} does not broadcast to the slice's shape {sliced}")
    return [ic.shape(0)]


register_op(
    "TensorStridedSliceUpdate",
    inputs=["input: T", "begin: Index", "end: Index", "strides: Index", "value: T"],
    outputs=["output: T"],
    attrs=["T: type", "Index: {int32, int64}"] + [f"{m}: int = 0" for m in _MASKS],
    shape=_update_infer,
    doc="A copy of `input` with input[begin:end:strides] (StridedSlice's slice, masks included) set to "
    "`value`, broadcast to the slice's shape.",
)


@kernel("TensorStridedSliceUpdate", host_inputs=(1, 2, 3))
def _update(ctx, x, begin, end, strides, value):
    sliced, index = _strided_slice_plan(ctx.fail, shape_of(x), *_slice_spec(ctx, begin, end, strides), ctx.attrs)
    if not _broadcasts(shape_of(value), sliced):
        raise ctx.fail(f"value of shape {shape_of(value)} does not broadcast to the slice's shape {sliced}")
    out = x.copy()
    out[index] = ctx.xp.broadcast_to(value, tuple(sliced.dims)) if value.shape != tuple(sliced.dims) else value
    return out


@gradient("TensorStridedSliceUpdate")
def _update_grad(b, node, dys):
    _, *spec, value = node.data_inputs
    masks = {k: node.attrs[k] for k in _MASKS}
    dx = gu.emit(b, "TensorStridedSliceUpdate", dys[0], *spec, gu.zeros_like(b, value), **masks)
    dvalue = gu.sum_to(b, gu.emit(b, "StridedSlice", dys[0], *spec, **masks), value)
    return [dx, None, None, None, dvalue]


