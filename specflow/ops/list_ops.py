"""TensorLists (TF's list_ops): what TF2 while loops carry (Keras RNNs read their inputs and
collect their outputs through them).

A list is a ``variant`` scalar: a 0-d object array holding a :class:`TensorList`. The ops are
functional, as in TensorFlow: SetItem, PushBack and PopBack return a new list and leave their input
alone (a shallow copy of the Python list; the arrays in it are never written). An element may be
unset (Reserve makes a list of them); reading one gives zeros of the list's element shape, which
must then be fully defined, as TF requires.

``element_shape`` inputs follow TF: a scalar -1 is an unknown rank, a vector with -1 for an
unknown dim. Gradients are TF's (list_ops.py): a list's gradient is a list of element gradients.
Kernels are CPU-only: a list is a host object (TF keeps its variants on the host too).
"""

from __future__ import annotations

import numpy as np

from specflow.graph import dtypes
from specflow.graph.shapes import Shape
from specflow.ops.grad_util import const, emit, outputs, shape_of
from specflow.ops.inference import InferenceContext, scalar_shape
from specflow.ops.registry import KernelContext, gradient, kernel, not_differentiable, register_op

_CPU = ("CPU",)
_SHAPE_T = "shape_type: {int32, int64}"


class TensorList:
    """The value of a TF TensorList: elements (None where unset), their dtype and shape."""

    __slots__ = ("tensors", "element_dtype", "element_shape", "max_num_elements")

    def __init__(self, tensors: list, element_dtype, element_shape: Shape, max_num_elements: int = -1):
        self.tensors = tensors
        self.element_dtype = dtypes.as_dtype(element_dtype)
        self.element_shape = element_shape
        self.max_num_elements = max_num_elements

    def copy(self, tensors: list | None = None) -> TensorList:
        return TensorList(list(self.tensors) if tensors is None else tensors, self.element_dtype,
                          self.element_shape, self.max_num_elements)

    def __repr__(self) -> str:
        return f"TensorList({len(self.tensors)} x {self.element_dtype.name}{self.element_shape})"

    def __add__(self, other: TensorList) -> TensorList:
        """Element-wise sum (AddN of list gradients); an unset element adds nothing."""
        if not isinstance(other, TensorList) or len(other.tensors) != len(self.tensors):
            n = len(other.tensors) if isinstance(other, TensorList) else type(other).__name__
            raise ValueError(f"cannot add a list of {len(self.tensors)} element(s) and {n}")
        summed = [b if a is None else a if b is None else a + b for a, b in zip(self.tensors, other.tensors)]
        return self.copy(summed)

    def zeros_like(self) -> np.ndarray:
        """A list as long as this one with zeros for its set elements (ZerosLike of a list)."""
        return wrap(self.copy([None if x is None else np.zeros_like(x) for x in self.tensors]))


def wrap(lst: TensorList) -> np.ndarray:
    """``lst`` as a variant scalar."""
    out = np.empty((), dtype=object)
    out[()] = lst
    return out


def unwrap(ctx: KernelContext, value, what: str = "input_handle") -> TensorList:
    lst = value.item() if isinstance(value, np.ndarray) and value.dtype == object and value.ndim == 0 else None
    if not isinstance(lst, TensorList):
        raise ctx.fail(f"{what} must be a TensorList (a variant scalar), got {type(value).__name__}")
    want = ctx.attrs.get("element_dtype")
    if want is not None and lst.element_dtype != want:
        raise ctx.fail(f"the list holds {lst.element_dtype.name} elements, but the op reads {want.name}")
    return lst


def shape_from_tensor(value) -> Shape:
    """An ``element_shape`` tensor (-1 scalar: unknown rank; -1 dims: unknown) as a Shape."""
    v = np.asarray(value)
    if v.ndim == 0:
        if int(v) != -1:
            raise ValueError(f"a scalar element_shape must be -1 (unknown rank), got {int(v)}")
        return Shape.unknown()
    return Shape([None if int(d) < 0 else int(d) for d in v.ravel()])


def _element_shape(ctx: KernelContext, value) -> Shape:
    try:
        return shape_from_tensor(ctx.host(value))
    except ValueError as e:
        raise ctx.fail(str(e)) from None


def _merged(ctx: KernelContext, a: Shape, b: Shape) -> Shape:
    if not a.is_compatible_with(b):
        raise ctx.fail(f"element shape {b} is not compatible with the list's element shape {a}")
    return a.merge_with(b)


def _check_element(ctx: KernelContext, lst: TensorList, x) -> None:
    if not lst.element_shape.is_compatible_with(Shape(x.shape)):
        raise ctx.fail(f"cannot put a tensor of shape {list(x.shape)} in a list of elements of shape "
                       f"{lst.element_shape}")


def _read(ctx: KernelContext, lst: TensorList, i: int, shape: Shape):
    """Element ``i``, or zeros of ``shape`` where it is unset."""
    x = lst.tensors[i]
    if x is not None:
        return x
    if not shape.is_fully_defined:
        raise ctx.fail(f"element {i} of the list is unset and the element shape {shape} is not fully "
                       "defined, so its zeros cannot be made")
    return ctx.xp.zeros(shape.as_list(), lst.element_dtype.numpy)


def _index(ctx: KernelContext, lst: TensorList, index) -> int:
    i = int(ctx.host(index))
    if not 0 <= i < len(lst.tensors):
        raise ctx.fail(f"index {i} is out of range for a list of {len(lst.tensors)} element(s)")
    return i


def _element_shape_input(ic: InferenceContext, i: int) -> Shape:
    v = ic.value(i)
    if v is not None:
        try:
            return shape_from_tensor(v)
        except ValueError as e:
            raise ic.fail(str(e)) from None
    return Shape.unknown()


def _list_and_element(ic: InferenceContext, shape_input: int | None = None) -> list[Shape]:
    return [Shape([]), Shape.unknown() if shape_input is None else _element_shape_input(ic, shape_input)]


# --- making lists --------------------------------------------------------------------------------

register_op(
    "EmptyTensorList",
    inputs=["element_shape: shape_type", "max_num_elements: int32"],
    outputs=["handle: variant"],
    attrs=["element_dtype: type", _SHAPE_T],
    shape=scalar_shape,
    doc="An empty list of `element_dtype` tensors of shape `element_shape`; `max_num_elements` -1: unbounded.",
)


@kernel("EmptyTensorList", devices=_CPU, host_inputs=(0, 1))
def _empty(ctx, element_shape, max_num_elements):
    return wrap(TensorList([], ctx.attrs["element_dtype"], _element_shape(ctx, element_shape),
                           int(ctx.host(max_num_elements))))


register_op(
    "TensorListReserve",
    inputs=["element_shape: shape_type", "num_elements: int32"],
    outputs=["handle: variant"],
    attrs=["element_dtype: type", _SHAPE_T],
    shape=scalar_shape,
    doc="A list of `num_elements` unset elements (reading one gives zeros of `element_shape`).",
)


@kernel("TensorListReserve", devices=_CPU, host_inputs=(0, 1))
def _reserve(ctx, element_shape, num_elements):
    n = int(ctx.host(num_elements))
    if n < 0:
        raise ctx.fail(f"num_elements must be >= 0, got {n}")
    return wrap(TensorList([None] * n, ctx.attrs["element_dtype"], _element_shape(ctx, element_shape)))


register_op(
    "TensorListFromTensor",
    inputs=["tensor: element_dtype", "element_shape: shape_type"],
    outputs=["output_handle: variant"],
    attrs=["element_dtype: type", _SHAPE_T],
    shape=scalar_shape,
    doc="The list of `tensor`'s slices along its first dimension.",
)


@kernel("TensorListFromTensor", devices=_CPU, host_inputs=(1,))
def _from_tensor(ctx, tensor, element_shape):
    if tensor.ndim == 0:
        raise ctx.fail("tensor must have at least one dimension (its first is the list's length)")
    shape = _merged(ctx, _element_shape(ctx, element_shape), Shape(tensor.shape[1:]))
    return wrap(TensorList([tensor[i] for i in range(tensor.shape[0])], ctx.attrs["element_dtype"], shape))


@gradient("TensorListFromTensor")
def _from_tensor_grad(b, node, dys):
    (dlist,) = dys
    tensor = node.data_inputs[0]
    dtype = b.spec(tensor).dtype
    if dlist is None:  # (a one-output op gets a gradient only when its output has one)
        dlist = _unset_like(b, node.name, dtype)
    # num_elements makes a list nothing wrote still stack to the tensor's length (TF does too).
    n = b.spec(tensor).shape.dims[0] if b.spec(tensor).shape.rank else None
    return [emit(b, "TensorListStack", dlist, node.data_inputs[1], element_dtype=dtype,
                 num_elements=-1 if n is None else n), None]


# --- reading and writing -------------------------------------------------------------------------

register_op(
    "TensorListGetItem",
    inputs=["input_handle: variant", "index: int32", "element_shape: Tshape"],
    outputs=["item: element_dtype"],
    attrs=["element_dtype: type", "Tshape: {int32, int64} = int32"],
    shape=lambda ic: [_element_shape_input(ic, 2)],
    doc="Element `index` of the list (zeros of `element_shape` if it is unset).",
)


@kernel("TensorListGetItem", devices=_CPU, host_inputs=(1, 2))
def _get_item(ctx, handle, index, element_shape):
    lst = unwrap(ctx, handle)
    i = _index(ctx, lst, index)
    return _read(ctx, lst, i, _merged(ctx, lst.element_shape, _element_shape(ctx, element_shape)))


@gradient("TensorListGetItem")
def _get_item_grad(b, node, dys):
    handle, index, _ = node.data_inputs
    (ditem,) = dys
    dtype = node.attrs["element_dtype"]
    shape = emit(b, "TensorListElementShape", handle, shape_type=dtypes.int32)
    reserved = emit(b, "TensorListReserve", shape, emit(b, "TensorListLength", handle), element_dtype=dtype)
    return [emit(b, "TensorListSetItem", reserved, index, ditem, element_dtype=dtype), None, None]


register_op(
    "TensorListSetItem",
    inputs=["input_handle: variant", "index: int32", "item: element_dtype"],
    outputs=["output_handle: variant"],
    attrs=["element_dtype: type", "resize_if_index_out_of_bounds: bool = false"],
    shape=scalar_shape,
    doc="A copy of the list with element `index` set to `item`.",
)


@kernel("TensorListSetItem", devices=_CPU, host_inputs=(1,))
def _set_item(ctx, handle, index, item):
    lst = unwrap(ctx, handle)
    i = int(ctx.host(index))
    tensors = list(lst.tensors)
    if ctx.attrs["resize_if_index_out_of_bounds"] and i >= len(tensors):
        tensors += [None] * (i + 1 - len(tensors))
    if not 0 <= i < len(tensors):
        raise ctx.fail(f"index {i} is out of range for a list of {len(tensors)} element(s)")
    _check_element(ctx, lst, item)
    tensors[i] = item
    return wrap(lst.copy(tensors))


@gradient("TensorListSetItem")
def _set_item_grad(b, node, dys):
    _, index, item = node.data_inputs
    (dlist,) = dys
    dtype = node.attrs["element_dtype"]
    if dlist is None:
        return [None, None, None]
    # The item's gradient is what the list's gradient holds at index; the input list's is the
    # same list with that element zeroed (it was overwritten).
    ditem = emit(b, "TensorListGetItem", dlist, index, shape_of(b, item), element_dtype=dtype)
    zeros = emit(b, "ZerosLike", item)
    return [emit(b, "TensorListSetItem", dlist, index, zeros, element_dtype=dtype), None, ditem]


def _stack_shape(ic: InferenceContext) -> list[Shape]:
    element = _element_shape_input(ic, 1)
    n = int(ic.attr("num_elements"))
    if element.rank is None:
        return [Shape.unknown()]
    return [Shape([None if n < 0 else n, *element.dims])]


register_op(
    "TensorListStack",
    inputs=["input_handle: variant", "element_shape: int32"],
    outputs=["tensor: element_dtype"],
    attrs=["element_dtype: type", "num_elements: int = -1"],
    shape=_stack_shape,
    doc="The elements stacked along a new first dimension (unset ones as zeros); `num_elements` "
        "-1 or the list's length.",
)


@kernel("TensorListStack", devices=_CPU, host_inputs=(1,))
def _stack(ctx, handle, element_shape):
    lst = unwrap(ctx, handle)
    n = int(ctx.attrs["num_elements"])
    if n >= 0 and n != len(lst.tensors):
        raise ctx.fail(f"the list has {len(lst.tensors)} element(s), num_elements says {n}")
    shape = _merged(ctx, lst.element_shape, _element_shape(ctx, element_shape))
    for x in lst.tensors:  # a set element gives the shape unset ones take
        if x is not None:
            shape = _merged(ctx, shape, Shape(x.shape))
    if not lst.tensors:
        if not shape.is_fully_defined:
            raise ctx.fail(f"cannot stack an empty list whose element shape {shape} is not fully defined")
        return ctx.xp.zeros([0, *shape.as_list()], lst.element_dtype.numpy)
    return ctx.xp.stack([_read(ctx, lst, i, shape) for i in range(len(lst.tensors))])


@gradient("TensorListStack")
def _stack_grad(b, node, dys):
    (dtensor,) = dys
    return [emit(b, "TensorListFromTensor", dtensor, node.data_inputs[1],
                 element_dtype=node.attrs["element_dtype"]), None]


# --- length and shape ----------------------------------------------------------------------------

register_op(
    "TensorListLength",
    inputs=["input_handle: variant"],
    outputs=["length: int32"],
    shape=scalar_shape,
    doc="The number of elements in the list.",
)


@kernel("TensorListLength", devices=_CPU)
def _length(ctx, handle):
    return np.asarray(len(unwrap(ctx, handle).tensors), np.int32)


def _element_shape_shape(ic: InferenceContext) -> list[Shape]:
    return [Shape.unknown()]  # a scalar -1 for an unknown rank, else a vector


register_op(
    "TensorListElementShape",
    inputs=["input_handle: variant"],
    outputs=["element_shape: shape_type"],
    attrs=[_SHAPE_T],
    shape=_element_shape_shape,
    doc="The list's element shape: -1 (a scalar) for an unknown rank, -1 for each unknown dim.",
)


@kernel("TensorListElementShape", devices=_CPU)
def _element_shape_kernel(ctx, handle):
    shape = unwrap(ctx, handle).element_shape
    dt = ctx.attrs["shape_type"].numpy
    if shape.rank is None:
        return np.asarray(-1, dt)
    return np.asarray([-1 if d is None else d for d in shape.dims], dt)


def _unset_like(b, handle: str, dtype) -> str:
    """A list as long as ``handle``'s with every element unset (zeros when read): the gradient of
    a list nothing read. TF uses an empty list there, which stacks to the wrong length."""
    shape = emit(b, "TensorListElementShape", handle, shape_type=dtypes.int32)
    return emit(b, "TensorListReserve", shape, emit(b, "TensorListLength", handle), element_dtype=dtype)


# --- push and pop --------------------------------------------------------------------------------

register_op(
    "TensorListPushBack",
    inputs=["input_handle: variant", "tensor: element_dtype"],
    outputs=["output_handle: variant"],
    attrs=["element_dtype: type"],
    shape=scalar_shape,
    doc="A copy of the list with `tensor` appended.",
)


@kernel("TensorListPushBack", devices=_CPU)
def _push_back(ctx, handle, tensor):
    lst = unwrap(ctx, handle)
    _check_element(ctx, lst, tensor)
    if 0 <= lst.max_num_elements <= len(lst.tensors):
        raise ctx.fail(f"the list is full: it holds at most {lst.max_num_elements} element(s)")
    return wrap(lst.copy([*lst.tensors, tensor]))


@gradient("TensorListPushBack")
def _push_back_grad(b, node, dys):
    handle, tensor = node.data_inputs
    (dlist,) = dys
    dtype = node.attrs["element_dtype"]
    if dlist is None:  # (a one-output op gets a gradient only when its output has one)
        dlist = _unset_like(b, node.name, dtype)
    dhandle, dtensor = outputs(b, "TensorListPopBack", 2, dlist, shape_of(b, tensor), element_dtype=dtype)
    return [dhandle, dtensor]


register_op(
    "TensorListPopBack",
    inputs=["input_handle: variant", "element_shape: int32"],
    outputs=["output_handle: variant", "tensor: element_dtype"],
    attrs=["element_dtype: type"],
    shape=lambda ic: _list_and_element(ic, 1),
    doc="A copy of the list without its last element, and that element (zeros if unset).",
)


@kernel("TensorListPopBack", devices=_CPU, host_inputs=(1,))
def _pop_back(ctx, handle, element_shape):
    lst = unwrap(ctx, handle)
    if not lst.tensors:
        raise ctx.fail("cannot pop from an empty list")
    shape = _merged(ctx, lst.element_shape, _element_shape(ctx, element_shape))
    last = _read(ctx, lst, len(lst.tensors) - 1, shape)
    return wrap(lst.copy(lst.tensors[:-1])), last


@gradient("TensorListPopBack")
def _pop_back_grad(b, node, dys):
    dlist, dtensor = dys
    dtype = node.attrs["element_dtype"]
    if dlist is None:  # nothing read the shorter list: unset elements (zeros) as long as it is
        dlist = _unset_like(b, node.name, dtype)
    if dtensor is None:
        dtensor = emit(b, "ZerosLike", f"{node.name}:1")
    return [emit(b, "TensorListPushBack", dlist, dtensor, element_dtype=dtype), None]


register_op(
    "TensorListResize",
    inputs=["input_handle: variant", "size: int32"],
    outputs=["output_handle: variant"],
    shape=scalar_shape,
    doc="A copy of the list with `size` elements: its first ones, then unset elements (a TensorArray "
    "of dynamic size stacked after a loop).",
)


@kernel("TensorListResize", devices=_CPU, host_inputs=(1,))
def _resize(ctx, handle, size):
    lst = unwrap(ctx, handle)
    n = int(ctx.host(size))
    if n < 0:
        raise ctx.fail(f"size must be >= 0, got {n}")
    return wrap(lst.copy(lst.tensors[:n] + [None] * (n - len(lst.tensors))))


@gradient("TensorListResize")
def _resize_grad(b, node, dys):
    # TF's: the gradient list resized back to the input list's length.
    (dlist,) = dys
    handle = node.data_inputs[0]
    if dlist is None:
        return [None, None]
    return [emit(b, "TensorListResize", dlist, emit(b, "TensorListLength", handle)), None]


# Sizes, shapes and fresh lists carry no gradient (TF registers none for them).
not_differentiable("EmptyTensorList", "TensorListReserve", "TensorListLength", "TensorListElementShape")


# --- gather and scatter (TensorArray.gather/scatter) ---------------------------------------------

register_op(
    "TensorListGather",
    inputs=["input_handle: variant", "indices: int32", "element_shape: int32"],
    outputs=["values: element_dtype"],
    attrs=["element_dtype: type"],
    shape=lambda ic: [Shape([ic.shape(1).dims[0] if ic.shape(1).rank == 1 else None]).concatenate(_element_shape_input(ic, 2))],
    doc="The list's elements at `indices`, stacked (unset ones as zeros of `element_shape`).",
)


@kernel("TensorListGather", devices=_CPU, host_inputs=(1, 2))
def _gather(ctx, handle, indices, element_shape):
    lst = unwrap(ctx, handle)
    idx = ctx.host(indices)
    if idx.ndim != 1:
        raise ctx.fail(f"indices must be a vector, got shape {list(idx.shape)}")
    shape = _merged(ctx, lst.element_shape, _element_shape(ctx, element_shape))
    items = []
    for i in idx.tolist():
        if not 0 <= i < len(lst.tensors):
            raise ctx.fail(f"index {i} is out of range for a list of {len(lst.tensors)} element(s)")
        items.append(_read(ctx, lst, i, shape))
    if not items:
        if not shape.is_fully_defined:
            raise ctx.fail(f"gathering no elements needs a fully defined element shape, got {shape}")
        return ctx.xp.zeros([0, *shape.as_list()], lst.element_dtype.numpy)
    return ctx.xp.stack(items)


@gradient("TensorListGather")
def _gather_grad(b, node, dys):
    handle, indices, _ = node.data_inputs
    dtype = node.attrs["element_dtype"]
    shape = emit(b, "TensorListElementShape", handle, shape_type=dtypes.int32)
    reserved = emit(b, "TensorListReserve", shape, emit(b, "TensorListLength", handle), element_dtype=dtype)
    return [emit(b, "TensorListScatterIntoExistingList", reserved, dys[0], indices, element_dtype=dtype), None, None]


register_op(
    "TensorListScatterIntoExistingList",
    inputs=["input_handle: variant", "tensor: element_dtype", "indices: int32"],
    outputs=["output_handle: variant"],
    attrs=["element_dtype: type"],
    shape=scalar_shape,
    doc="A copy of the list with element indices[i] set to tensor[i], growing the list to reach "
    "the largest index.",
)


@kernel("TensorListScatterIntoExistingList", devices=_CPU, host_inputs=(2,))
def _scatter_into(ctx, handle, tensor, indices):
    lst = unwrap(ctx, handle)
    idx = ctx.host(indices)
    if tensor.ndim == 0 or idx.ndim != 1 or idx.shape[0] != tensor.shape[0]:
        raise ctx.fail(f"tensor [n, ...] and indices [n] do not fit: shapes {list(tensor.shape)} and {list(idx.shape)}")
    if (idx < 0).any():
        raise ctx.fail(f"indices must be non-negative, got {idx.tolist()}")
    tensors = list(lst.tensors)
    if idx.size and int(idx.max()) >= len(tensors):
        tensors += [None] * (int(idx.max()) + 1 - len(tensors))
    for j, i in enumerate(idx.tolist()):
        _check_element(ctx, lst, tensor[j])
        tensors[i] = tensor[j]
    return wrap(lst.copy(tensors))


@gradient("TensorListScatterIntoExistingList")
def _scatter_into_grad(b, node, dys):
    _, tensor, indices = node.data_inputs
    (dlist,) = dys
    dtype = node.attrs["element_dtype"]
    if dlist is None:
        return [None, None, None]
    one = const(b, np.array([1], np.int32))
    rest = emit(b, "StridedSlice", shape_of(b, tensor), one, const(b, np.array([0], np.int32)), one, end_mask=1)
    dtensor = emit(b, "TensorListGather", dlist, indices, rest, element_dtype=dtype)
    cleared = emit(b, "TensorListScatterIntoExistingList", dlist, emit(b, "ZerosLike", tensor), indices, element_dtype=dtype)
    return [cleared, dtensor, None]
