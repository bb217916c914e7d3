"""TensorListConcatV2 and TensorListSplit (TF's list_ops): a list of tensors of rank >= 1 joined
along their first dimension, and a tensor cut into such a list (``TensorArray.concat`` and
``TensorArray.split``, and each other's gradients, as in TF's list_ops.py). The list machinery is
specflow/ops/list_ops.py's."""

from __future__ import annotations

import numpy as np

from specflow.graph import dtypes
from specflow.graph.shapes import Shape
from specflow.ops.grad_util import const, emit, shape_of
from specflow.ops.inference import InferenceContext, scalar_shape
from specflow.ops.list_ops import (
    _CPU,
    _SHAPE_T,
    TensorList,
    _element_shape,
    _element_shape_input,
    _merged,
    unwrap,
    wrap,
)
from specflow.ops.registry import gradient, kernel, register_op


def _concat_shape(ic: InferenceContext) -> list[Shape]:
    element = _element_shape_input(ic, 1)
    if element.rank is None:
        return [Shape.unknown(), Shape([None])]
    return [Shape([None, *element.dims[1:]]), Shape([None])]


register_op(
    "TensorListConcatV2",
    inputs=["input_handle: variant", "element_shape: shape_type", "leading_dims: int64"],
    outputs=["tensor: element_dtype", "lengths: int64"],
    attrs=["element_dtype: type", _SHAPE_T],
    shape=_concat_shape,
    doc="The elements joined along their first dimension, and each one's length there. An unset "
    "element is zeros: its first dimension from the element shape, else from `leading_dims`.",
)


@kernel("TensorListConcatV2", devices=_CPU, host_inputs=(1, 2))
def _concat(ctx, handle, element_shape, leading_dims):
    lst = unwrap(ctx, handle)
    shape = _merged(ctx, lst.element_shape, _element_shape(ctx, element_shape))
    if shape.rank == 0:
        raise ctx.fail("concat needs elements of rank >= 1, the element shape is a scalar's")
    lead = np.asarray(ctx.host(leading_dims)).ravel()
    rest = Shape.unknown() if shape.rank is None else Shape(shape.dims[1:])
    for x in lst.tensors:  # every set element's trailing dims must agree
        if x is not None:
            if x.ndim == 0:
                raise ctx.fail("concat needs elements of rank >= 1, got a scalar")
            rest = _merged(ctx, rest, Shape(x.shape[1:]))
    items, lengths = [], []
    for i, x in enumerate(lst.tensors):
        if x is None:
            first = shape.dims[0] if shape.rank is not None else None
            if first is None and i < lead.size:
                first = int(lead[i])
            if first is None or not rest.is_fully_defined:
                raise ctx.fail(f"element {i} of the list is unset and its shape [{first}] + {rest} is not fully "
                               "defined (leading_dims gives no first dimension for it)")
            x = ctx.xp.zeros([first, *rest.as_list()], lst.element_dtype.numpy)
        items.append(x)
        lengths.append(x.shape[0])
    if not items:
        if not rest.is_fully_defined:
            raise ctx.fail(f"cannot concat an empty list whose element shape {shape} is not fully defined past "
                           "its first dimension")
        return ctx.xp.zeros([0, *rest.as_list()], lst.element_dtype.numpy), np.zeros([0], np.int64)
    return ctx.xp.concatenate(items, axis=0), np.asarray(lengths, np.int64)


@gradient("TensorListConcatV2")
def _concat_grad(b, node, dys):
    # TF's: the gradient tensor split at the forward lengths, into a list of the input's element shape.
    dtensor = dys[0]
    if dtensor is None:
        dtensor = emit(b, "ZerosLike", f"{node.name}:0")
    shape = emit(b, "TensorListElementShape", node.data_inputs[0], shape_type=dtypes.int64)
    return [emit(b, "TensorListSplit", dtensor, shape, f"{node.name}:1", element_dtype=node.attrs["element_dtype"]),
            None, None]


register_op(
    "TensorListSplit",
    inputs=["tensor: element_dtype", "element_shape: shape_type", "lengths: int64"],
    outputs=["output_handle: variant"],
    attrs=["element_dtype: type", _SHAPE_T],
    shape=scalar_shape,
    doc="The list of `tensor`'s consecutive pieces along its first dimension, `lengths` long.",
)


@kernel("TensorListSplit", devices=_CPU, host_inputs=(1, 2))
def _split(ctx, tensor, element_shape, lengths):
    if tensor.ndim == 0:
        raise ctx.fail("tensor must have at least one dimension (the one it is split along)")
    shape = _element_shape(ctx, element_shape)
    if shape.rank == 0:
        raise ctx.fail("the element shape must have rank >= 1, got a scalar's")
    if shape.rank is not None and not Shape(shape.dims[1:]).is_compatible_with(Shape(tensor.shape[1:])):
        raise ctx.fail(f"tensor of shape {list(tensor.shape)} does not fit the element shape {shape}")
    lens = np.asarray(ctx.host(lengths)).ravel().astype(np.int64)
    if (lens < 0).any() or int(lens.sum()) != tensor.shape[0]:
        raise ctx.fail(f"lengths {lens.tolist()} must be non-negative and sum to the tensor's first dimension "
                       f"{tensor.shape[0]}")
    ends = np.cumsum(lens).tolist()
    starts = [0, *ends[:-1]]
    return wrap(TensorList([tensor[s:e] for s, e in zip(starts, ends)], ctx.attrs["element_dtype"], shape))


@gradient("TensorListSplit")
def _split_grad(b, node, dys):
    # TF's: the list's gradient joined again, unset elements as zeros of their forward lengths.
    (dlist,) = dys
    tensor, _, lengths = node.data_inputs
    dtype = b.spec(tensor).dtype
    if dlist is None:
        return [None, None, None]
    one = const(b, np.array([1], np.int32))
    rest = emit(b, "Slice", shape_of(b, tensor), one, const(b, np.array([-1], np.int32)))
    shape = emit(b, "ConcatV2", const(b, np.array([-1], np.int32)), rest, const(b, np.int32(0)))
    return [emit(b, "TensorListConcatV2", dlist, shape, lengths, element_dtype=dtype), None, None]
