"""TF1's TensorArray: TensorArrayV3 and the ops on its handle. What tf.TensorArray builds under TF1
control flow (frozen graphs, tf.compat.v1 while loops and dynamic_rnn): TensorArrayV3 makes a
fresh array each time it runs and returns its handle and a "flow" scalar; every write returns a
new flow, which the next op takes, so the flow edges order the ops on one array. The handle
carries the array itself (it lives as long as the step's values that reference it, as TF's per-
step array does). TF's rules: an index is written once (a gradient array sums repeated writes), a
fixed-size array refuses indices past its size, a read of an unwritten element gives zeros when
the element shape is fully known, and with clear_after_read an element read once cannot be read
again.
"""

from __future__ import annotations

import threading

import numpy as np

from specflow.graph.shapes import Shape, as_shape
from specflow.ops.inference import InferenceContext, no_outputs, scalar_shape
from specflow.ops.registry import KernelContext, kernel, register_op
from specflow.runtime.resources import ResourceHandle

_CPU = ("CPU",)



class TensorArray:
    """One TF1 TensorArray: its elements (None where unwritten) and TF's flags."""

    def __init__(self, dtype, size: int, element_shape: Shape, dynamic: bool, clear_after_read: bool,
                 identical: bool = False, aggregate: bool = False):
        self.dtype = dtype
        self.elements: list = [None] * size
        self.read: list[bool] = [False] * size
        self.element_shape = element_shape
        self.dynamic = dynamic
        self.clear_after_read = clear_after_read
        self.identical = identical  # identical_element_shapes (TF's infer_shape): the first write's shape rules
        self.aggregate = aggregate  # a gradient array: repeated writes to an index are summed
        self.grads: dict[str, TensorArray] = {}
        self.lock = threading.Lock()


class TensorArrayHandle(ResourceHandle):
    """A TensorArrayV3 handle: names no ResourceMgr entry, it holds its array."""

    __slots__ = ("array",)

    def __init__(self, device: str, name: str, array: TensorArray):
        super().__init__(device, "_tensor_arrays", name, array.dtype)
        self.array = array

    def __reduce__(self):
        return (_rebuild_handle, (self.device, self.name, self.array))


def _rebuild_handle(device, name, array):
    return TensorArrayHandle(device, name, array)


def _array(ctx: KernelContext, handle) -> TensorArray:
    if isinstance(handle, np.ndarray) and handle.dtype == object and handle.ndim == 0:
        handle = handle.item()
    if not isinstance(handle, TensorArrayHandle):
        raise ctx.fail(f"input 'handle' is not a TensorArray handle (got {type(handle).__name__})")
    return handle.array


def _flow_out(ctx: KernelContext, flow):
    return np.asarray(ctx.host(flow), dtype=np.float32)


def _ta_check(ctx: KernelContext, ta: TensorArray, dtype, what: str) -> None:
    if dtype is not ta.dtype and dtype != ta.dtype:
        raise ctx.fail(f"TensorArray holds {ta.dtype.name} but this op {what} {dtype.name}")


def _ta_write(ctx: KernelContext, ta: TensorArray, index: int, value: np.ndarray) -> None:
    """One element written under TF's rules (the caller holds ``ta.lock``)."""
    if index < 0:
        raise ctx.fail(f"TensorArray index {index} is negative")
    if index >= len(ta.elements):
        if not ta.dynamic:
            raise ctx.fail(f"TensorArray index {index} is out of range: the array's size is {len(ta.elements)} "
                           "(dynamic_size is false)")
        grow = index + 1 - len(ta.elements)
        ta.elements.extend([None] * grow)
        ta.read.extend([False] * grow)
    if not ta.element_shape.is_compatible_with(Shape(value.shape)):
        raise ctx.fail(f"cannot write a value of shape {list(value.shape)} to a TensorArray of elements "
                       f"{ta.element_shape}")
    old = ta.elements[index]
    if old is not None:
        if not ta.aggregate:
            raise ctx.fail(f"TensorArray index {index} has already been written to (each index is written once)")
        if old.shape != value.shape:
            raise ctx.fail(f"cannot add a gradient of shape {list(value.shape)} to one of shape {list(old.shape)} "
                           f"at TensorArray index {index}")
        value = old + value
    elif ta.read[index]:
        raise ctx.fail(f"TensorArray index {index} was read and cleared; it cannot be written again")
    ta.elements[index] = np.asarray(value, dtype=ta.dtype.numpy) if ta.dtype.numpy is not None else value
    if ta.identical and not ta.element_shape.is_fully_defined:
        ta.element_shape = ta.element_shape.merge_with(Shape(value.shape))  # every element's from now on


def _ta_read(ctx: KernelContext, ta: TensorArray, index: int, shape_hint: Shape | None = None) -> np.ndarray:
    if index < 0 or index >= len(ta.elements):
        raise ctx.fail(f"TensorArray index {index} is out of range: the array's size is {len(ta.elements)}")
    value = ta.elements[index]
    if value is None:
        if ta.read[index]:
            raise ctx.fail(f"TensorArray index {index} was already read and cleared (clear_after_read)")
        shape = ta.element_shape
        if not shape.is_fully_defined and shape_hint is not None:
            shape = shape.merge_with(shape_hint) if shape.is_compatible_with(shape_hint) else shape
        if not shape.is_fully_defined:
            raise ctx.fail(f"TensorArray index {index} has not been written to, and its element shape {shape} "
                           "is not fully known")
        return np.zeros(shape.as_list(), dtype=ta.dtype.numpy)
    if ta.clear_after_read and not ta.aggregate:
        ta.elements[index] = None
        ta.read[index] = True
    return value


register_op(
    "TensorArrayV3",
    inputs=["size: int32"],
    outputs=["handle: resource", "flow: float"],
    attrs=["dtype: type", "element_shape: shape = None", "dynamic_size: bool = false",
           "clear_after_read: bool = true", "identical_element_shapes: bool = false",
           "tensor_array_name: string = ''"],
    stateful=True,
    shape=lambda ic: [Shape.scalar(), Shape.scalar()],
    doc="A new TensorArray of `size` elements of `dtype` (TF1's tf.TensorArray): its handle and a flow scalar.",
)


@kernel("TensorArrayV3", devices=_CPU)
def _tensor_array(ctx, size):
    n = int(ctx.host(size))
    if n < 0:
        raise ctx.fail(f"TensorArray size must be >= 0, got {n}")
    a = ctx.attrs
    ta = TensorArray(a["dtype"], n, as_shape(a["element_shape"]), a["dynamic_size"], a["clear_after_read"],
                     a["identical_element_shapes"])
    return TensorArrayHandle(ctx.device, a["tensor_array_name"] or ctx.node.name, ta), np.float32(0.0)


register_op(
    "TensorArrayGradV3",
    inputs=["handle: resource", "flow_in: float"],
    outputs=["grad_handle: resource", "flow_out: float"],
    attrs=["source: string"],
    stateful=True,
    shape=lambda ic: [Shape.scalar(), Shape.scalar()],
    doc="The gradient TensorArray of `handle` for `source` (made once, the array's size; writes to it add up).",
)


@kernel("TensorArrayGradV3", devices=_CPU)
def _tensor_array_grad(ctx, handle, flow_in):
    ta = _array(ctx, handle)
    with ta.lock:
        grad = ta.grads.get(ctx.attrs["source"])
        if grad is None:
            grad = TensorArray(ta.dtype, len(ta.elements), ta.element_shape, ta.dynamic, False, ta.identical,
                               aggregate=True)
            ta.grads[ctx.attrs["source"]] = grad
    return TensorArrayHandle(ctx.device, f"{ctx.node.name}/grad", grad), _flow_out(ctx, flow_in)


register_op(
    "TensorArrayWriteV3",
    inputs=["handle: resource", "index: int32", "value: T", "flow_in: float"],
    outputs=["flow_out: float"],
    attrs=["T: type"],
    stateful=True,
    shape=scalar_shape,
    doc="Writes `value` at `index`; returns the new flow.",
)


@kernel("TensorArrayWriteV3", devices=_CPU)
def _ta_write_kernel(ctx, handle, index, value, flow_in):
    ta = _array(ctx, handle)
    _ta_check(ctx, ta, ctx.attrs["T"], "writes")
    with ta.lock:
        _ta_write(ctx, ta, int(ctx.host(index)), ctx.host(value))
    return _flow_out(ctx, flow_in)


register_op(
    "TensorArrayReadV3",
    inputs=["handle: resource", "index: int32", "flow_in: float"],
    outputs=["value: dtype"],
    attrs=["dtype: type"],
    stateful=True,
    shape=lambda ic: [Shape.unknown()],
    doc="The element at `index` (zeros of the element shape if unwritten and that shape is fully known).",
)


@kernel("TensorArrayReadV3", devices=_CPU)
def _ta_read_kernel(ctx, handle, index, flow_in):
    ta = _array(ctx, handle)
    _ta_check(ctx, ta, ctx.attrs["dtype"], "reads")
    with ta.lock:
        return _ta_read(ctx, ta, int(ctx.host(index)))


def _gather_shape(ic: InferenceContext) -> list[Shape]:
    indices = ic.shape(1)
    n = indices.dims[0] if indices.dims is not None and len(indices.dims) == 1 else None
    return [Shape([n]).concatenate(as_shape(ic.attr("element_shape")))]


register_op(
    "TensorArrayGatherV3",
    inputs=["handle: resource", "indices: int32", "flow_in: float"],
    outputs=["value: dtype"],
    attrs=["dtype: type", "element_shape: shape = None"],
    stateful=True,
    shape=_gather_shape,
    doc="The elements at `indices`, stacked (TensorArray.stack/gather).",
)


@kernel("TensorArrayGatherV3", devices=_CPU)
def _ta_gather(ctx, handle, indices, flow_in):
    ta = _array(ctx, handle)
    _ta_check(ctx, ta, ctx.attrs["dtype"], "reads")
    idx = ctx.host(indices).reshape(-1)
    hint = as_shape(ctx.attrs["element_shape"])
    with ta.lock:
        values = [_ta_read(ctx, ta, int(i), hint) for i in idx]
        if not values:
            shape = ta.element_shape if ta.element_shape.is_fully_defined else hint
            if not shape.is_fully_defined:
                raise ctx.fail("cannot gather no elements from a TensorArray whose element shape "
                               f"{ta.element_shape} is not fully known")
            return np.zeros([0, *shape.as_list()], dtype=ta.dtype.numpy)
    shapes = {v.shape for v in values}
    if len(shapes) > 1:
        raise ctx.fail(f"cannot stack TensorArray elements of different shapes {sorted(map(list, shapes))}")
    return np.stack(values)


register_op(
    "TensorArrayScatterV3",
    inputs=["handle: resource", "indices: int32", "value: T", "flow_in: float"],
    outputs=["flow_out: float"],
    attrs=["T: type"],
    stateful=True,
    shape=scalar_shape,
    doc="Writes `value[i]` at `indices[i]` (TensorArray.scatter/unstack).",
)


@kernel("TensorArrayScatterV3", devices=_CPU)
def _ta_scatter(ctx, handle, indices, value, flow_in):
    ta = _array(ctx, handle)
    _ta_check(ctx, ta, ctx.attrs["T"], "writes")
    idx, value = ctx.host(indices).reshape(-1), ctx.host(value)
    if value.ndim == 0 or value.shape[0] != len(idx):
        raise ctx.fail(f"scatter needs one row of value per index: {len(idx)} indices, value of shape "
                       f"{list(value.shape)}")
    with ta.lock:
        for k, i in enumerate(idx):
            _ta_write(ctx, ta, int(i), value[k])
    return _flow_out(ctx, flow_in)


register_op(
    "TensorArrayConcatV3",
    inputs=["handle: resource", "flow_in: float"],
    outputs=["value: dtype", "lengths: int64"],
    attrs=["dtype: type", "element_shape_except0: shape = None"],
    stateful=True,
    shape=lambda ic: [Shape([None]).concatenate(as_shape(ic.attr("element_shape_except0"))), Shape([None])],
    doc="Every element joined along its first dimension, and each element's length there.",
)


@kernel("TensorArrayConcatV3", devices=_CPU)
def _ta_concat(ctx, handle, flow_in):
    ta = _array(ctx, handle)
    _ta_check(ctx, ta, ctx.attrs["dtype"], "reads")
    with ta.lock:
        values = [_ta_read(ctx, ta, i) for i in range(len(ta.elements))]
    if any(v.ndim == 0 for v in values):
        raise ctx.fail("concat needs TensorArray elements of rank >= 1, got a scalar")
    lengths = np.asarray([v.shape[0] for v in values], dtype=np.int64)
    if not values:
        rest = as_shape(ctx.attrs["element_shape_except0"])
        if not rest.is_fully_defined:
            raise ctx.fail("cannot concat an empty TensorArray without a fully known element_shape_except0")
        return np.zeros([0, *rest.as_list()], dtype=ta.dtype.numpy), lengths
    if len({v.shape[1:] for v in values}) > 1:
        raise ctx.fail("cannot concat TensorArray elements that differ past their first dimension")
    return np.concatenate(values), lengths


register_op(
    "TensorArraySplitV3",
    inputs=["handle: resource", "value: T", "lengths: int64", "flow_in: float"],
    outputs=["flow_out: float"],
    attrs=["T: type"],
    stateful=True,
    shape=scalar_shape,
    doc="Writes `value` split along its first dimension into pieces of `lengths` (TensorArray.split).",
)


@kernel("TensorArraySplitV3", devices=_CPU)
def _ta_split(ctx, handle, value, lengths, flow_in):
    ta = _array(ctx, handle)
    _ta_check(ctx, ta, ctx.attrs["T"], "writes")
    value, lengths = ctx.host(value), ctx.host(lengths).reshape(-1).astype(np.int64)
    if value.ndim == 0:
        raise ctx.fail("split needs a value of rank >= 1, got a scalar")
    if (lengths < 0).any() or int(lengths.sum()) != value.shape[0]:
        raise ctx.fail(f"split lengths {lengths.tolist()} must be >= 0 and sum to the value's first dimension "
                       f"{value.shape[0]}")
    if not ta.dynamic and len(lengths) != len(ta.elements):
        raise ctx.fail(f"split into {len(lengths)} pieces, but the TensorArray's size is {len(ta.elements)}")
    ends = np.cumsum(lengths)
    with ta.lock:
        for i, (start, end) in enumerate(zip(ends - lengths, ends)):
            _ta_write(ctx, ta, i, value[int(start):int(end)])
    return _flow_out(ctx, flow_in)


register_op(
    "TensorArraySizeV3",
    inputs=["handle: resource", "flow_in: float"],
    outputs=["size: int32"],
    stateful=True,
    shape=scalar_shape,
    doc="The TensorArray's current size.",
)


@kernel("TensorArraySizeV3", devices=_CPU)
def _ta_size(ctx, handle, flow_in):
    ta = _array(ctx, handle)
    with ta.lock:
        return np.asarray(len(ta.elements), dtype=np.int32)


register_op(
    "TensorArrayCloseV3",
    inputs=["handle: resource"],
    stateful=True,
    shape=no_outputs,
    doc="Releases the TensorArray's elements.",
)


@kernel("TensorArrayCloseV3", devices=_CPU)
def _ta_close(ctx, handle):
    ta = _array(ctx, handle)
    with ta.lock:
        ta.elements = [None] * len(ta.elements)
    return ()
