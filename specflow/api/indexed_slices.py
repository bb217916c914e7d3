"""``sf.IndexedSlices``: TensorFlow's sparse gradient of a gathered variable. ``values[i]`` is
the gradient of row ``indices[i]`` of a tensor of shape ``dense_shape``; rows may repeat (they
add up). ``GradientTape.gradient`` returns one for a variable read only through gathers
(``sf.gather(v, ids)``, an Embedding), as TF's tape does; ops take it as its dense tensor
(UnsortedSegmentSum, TF's conversion), and the optimizers apply it as Keras 3 does
(api/keras_sparse.py)."""

from __future__ import annotations

import numpy as np

from specflow.api.tensor import Tensor


class IndexedSlices:
    _sf_composite = True  # api/function.flatten: values, indices, dense_shape

    def __init__(self, values, indices, dense_shape=None):
        from specflow.api.op_functions import convert_to_tensor

        self.values = convert_to_tensor(values)
        self.indices = convert_to_tensor(indices)
        self.dense_shape = None if dense_shape is None else convert_to_tensor(dense_shape)

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def shape(self):
        from specflow.graph.shapes import Shape

        static = None if self.dense_shape is None else _static(self.dense_shape)
        if static is not None:
            return Shape([int(d) for d in static])
        return Shape([None] + list(self.values.shape.dims[1:])) if self.values.shape.rank is not None else Shape.unknown()

    @property
    def device(self):
        return getattr(self.values, "device", None)

    def with_values(self, values) -> IndexedSlices:
        return IndexedSlices(values, self.indices, self.dense_shape)

    def __neg__(self) -> IndexedSlices:
        return self.with_values(-self.values)

    def _dense(self) -> Tensor:
        """The dense tensor: the rows' values added up where they go (TF's conversion)."""
        from specflow.api.op_functions import call

        if self.dense_shape is None:
            raise ValueError("an IndexedSlices without dense_shape cannot be made a dense tensor")
        rows = call("StridedSlice", self.dense_shape, np.array([0], np.int32), np.array([1], np.int32),
                    np.array([1], np.int32), shrink_axis_mask=1)  # fmt: skip
        return call("UnsortedSegmentSum", self.values, self.indices, rows)

    def __array__(self, dtype=None, copy=None):
        out = np.asarray(self._dense())
        return out if dtype is None else out.astype(dtype)

    def __repr__(self) -> str:
        return f"IndexedSlices(indices={self.indices!r}, values={self.values!r}, dense_shape={self.dense_shape!r})"

    # --- api/function's composite protocol -----------------------------------------------------

    def _sf_components(self) -> list:
        return [self.values, self.indices] + ([] if self.dense_shape is None else [self.dense_shape])

    def _sf_meta(self):
        return self.dense_shape is not None

    @classmethod
    def _sf_rebuild(cls, meta, components: list) -> IndexedSlices:
        return cls(components[0], components[1], components[2] if meta else None)


def _static(t):
    from specflow.api.tf_control_names import get_static_value

    return get_static_value(t)
