"""``sf.TensorArray``: TensorFlow 2's TensorArray, a TensorList (a ``variant`` tensor) and the ops
TF2 emits for it (``TensorListReserve``, ``SetItem``, ``GetItem``, ``Stack``, ``Gather``,
``FromTensor``, ``Scatter``, ``ConcatV2``, ``Split``, ``Length``). Eagerly the ops run at once;
in ``sf.function`` they are traced, and a TensorArray is a loop variable of ``sf.while_loop``
(flattened to its list, api/function.flatten), as TF's composite is. Each ``write``/``unstack``/
``scatter`` returns the new array (TF 2's functional form; keep the result)."""

from __future__ import annotations

import numpy as np

from specflow.api.op_functions import call, convert_to_tensor
from specflow.api.tensor import Tensor
from specflow.graph.dtypes import as_dtype
from specflow.graph.shapes import Shape, as_shape


class TensorArray:
    _sf_composite = True  # api/function.flatten: one leaf, the list

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None, tensor_array_name=None,
                 handle=None, flow=None, infer_shape: bool = True, element_shape=None,
                 colocate_with_first_write_call: bool = True, name: str | None = None):
        self.dtype = as_dtype(dtype)
        self._dynamic = bool(dynamic_size)
        self._infer_shape = infer_shape
        self._element_shape = None if element_shape is None else as_shape(element_shape)
        if flow is not None:
            self._list = flow
        else:
            n = 0 if size is None else size
            self._list = call("TensorListReserve", self._shape_vector(), _int32(n), element_dtype=self.dtype,
                              name=name)

    # --- structure (sf.while_loop / sf.function carry the list) ------------------------------------

    def _sf_components(self) -> list:
        return [self._list]

    def _sf_meta(self):
        return (self.dtype, self._dynamic, self._infer_shape, self._element_shape)

    @classmethod
    def _sf_rebuild(cls, meta, components: list) -> TensorArray:
        dtype, dynamic, infer, element_shape = meta
        return cls(dtype, dynamic_size=dynamic, infer_shape=infer, element_shape=element_shape, flow=components[0])

    def _with(self, new_list, element_shape=None) -> TensorArray:
        out = TensorArray(self.dtype, dynamic_size=self._dynamic, infer_shape=self._infer_shape,
                          element_shape=element_shape if element_shape is not None else self._element_shape,
                          flow=new_list)
        return out

    # --- TF's methods -------------------------------------------------------------------------------

    @property
    def flow(self):
        return self._list

    @property
    def handle(self):
        return self._list

    @property
    def dynamic_size(self) -> bool:
        return self._dynamic

    @property
    def element_shape(self) -> Shape:
        return self._element_shape if self._element_shape is not None else Shape(None)

    def write(self, index, value, name: str | None = None) -> TensorArray:
        value = self._value(value)
        new = call("TensorListSetItem", self._list, _int32(index), value, element_dtype=self.dtype,
                   resize_if_index_out_of_bounds=self._dynamic, name=name)
        return self._with(new, self._merged(value.shape))

    def read(self, index, name: str | None = None):
        return call("TensorListGetItem", self._list, _int32(index), self._shape_vector(), element_dtype=self.dtype,
                    name=name)

    def stack(self, name: str | None = None):
        return call("TensorListStack", self._list, self._shape_vector(), element_dtype=self.dtype, num_elements=-1,
                    name=name)

    def gather(self, indices, name: str | None = None):
        return call("TensorListGather", self._list, _int32(indices), self._shape_vector(), element_dtype=self.dtype,
                    name=name)

    def unstack(self, value, name: str | None = None) -> TensorArray:
        value = self._value(value)
        element = Shape(value.shape.dims[1:]) if value.shape.rank else None
        new = call("TensorListFromTensor", value, _shape_vector(element), name=name)
        return self._with(new, self._merged(element))

    def scatter(self, indices, value, name: str | None = None) -> TensorArray:
        value = self._value(value)
        element = Shape(value.shape.dims[1:]) if value.shape.rank else None
        new = call("TensorListScatterIntoExistingList", self._list, value, _int32(indices), name=name)
        return self._with(new, self._merged(element))

    def concat(self, name: str | None = None):
        shape = None if self._element_shape is None or self._element_shape.rank is None else \
            Shape([None, *self._element_shape.dims[1:]])  # the pieces' first dims may differ
        return call("TensorListConcatV2", self._list, _shape_vector(shape), np.zeros([0], np.int64),
                    element_dtype=self.dtype, name=name)[0]

    def split(self, value, lengths, name: str | None = None) -> TensorArray:
        value = self._value(value)
        element = Shape([None, *value.shape.dims[1:]]) if value.shape.rank else None
        lengths = lengths if isinstance(lengths, Tensor) else np.asarray(lengths, np.int64)
        return self._with(call("TensorListSplit", value, _shape_vector(element), lengths, name=name))

    def size(self, name: str | None = None):
        return call("TensorListLength", self._list, name=name)

    def identity(self) -> TensorArray:
        return self._with(self._list)

    def close(self, name: str | None = None) -> None:
        return None

    # --- helpers --------------------------------------------------------------------------------------

    def _value(self, value) -> Tensor:
        t = value if isinstance(value, Tensor) else convert_to_tensor(np.asarray(value, self.dtype.numpy))
        if t.dtype != self.dtype:
            raise TypeError(f"TensorArray dtype is {self.dtype.name} but the value is {t.dtype.name}")
        return t

    def _merged(self, shape) -> Shape | None:
        """The element shape after a write of ``shape`` (TF's infer_shape: writes must agree)."""
        if not self._infer_shape or shape is None:
            return self._element_shape
        shape = as_shape(shape)
        if self._element_shape is None or self._element_shape.rank is None:
            return shape
        if shape.rank != self._element_shape.rank or any(
                a is not None and b is not None and a != b for a, b in zip(shape.dims, self._element_shape.dims)):
            raise ValueError(f"TensorArray: a value of shape {shape} where its elements are {self._element_shape}")
        return Shape([a if a is not None else b for a, b in zip(self._element_shape.dims, shape.dims)])

    def _shape_vector(self):
        return _shape_vector(self._element_shape)

    def __repr__(self) -> str:
        return f"<sf.TensorArray dtype={self.dtype.name} element_shape={self.element_shape}>"


def _shape_vector(shape: Shape | None):
    """A TensorList element shape: -1 for an unknown dimension, a scalar -1 for an unknown rank."""
    if shape is None or shape.rank is None:
        return np.int32(-1)
    return np.array([-1 if d is None else d for d in shape.dims], np.int32)


def _int32(v):
    if isinstance(v, Tensor):
        return v if v.dtype.name == "int32" else call("Cast", v, DstT=as_dtype("int32"))
    return np.asarray(v, np.int32)
