"""TensorList ops (specflow/ops/list_ops.py) against numpy: a list is a variant scalar, built here
with the kernels' own ``wrap``; list outputs are checked element by element."""

import numpy as np

from specflow.graph.dtypes import float32, int32
from specflow.graph.shapes import Shape
from specflow.ops.list_ops import TensorList, wrap
from tests.ops.harness import Case, f32

X = f32(3, 2, 4)
UNKNOWN = np.int32(-1)


def listed(tensors, dtype=float32, shape=(None, None)) -> np.ndarray:
    return wrap(TensorList(list(tensors), dtype, Shape(shape)))


def elements_are(*want, shape=None):
    """check(): the output list holds ``want`` (None: unset) and has element shape ``shape``."""

    def check(outs, inputs):
        lst = outs[0].item()
        assert isinstance(lst, TensorList) and len(lst.tensors) == len(want)
        for got, w in zip(lst.tensors, want):
            assert (got is None) == (w is None)
            if w is not None:
                np.testing.assert_array_equal(got, w)
        if shape is not None:
            assert lst.element_shape == Shape(shape)

    return check


def _popped(outs, inputs):
    elements_are(X[0], X[1])(outs[:1], inputs)
    np.testing.assert_array_equal(outs[1], X[2])


SET = f32(2, 4)
CASES = [
    Case("TensorListGather", [listed([X[0], None, X[2]], shape=(2, 4)), np.array([2, 1, 2], np.int32), np.array([2, 4], np.int32)],
         ref=lambda *a: np.stack([X[2], np.zeros((2, 4), np.float32), X[2]]), attrs={"element_dtype": float32},
         const_inputs=(1, 2), id="TensorListGather-unset-zeros"),
    Case("TensorListScatterIntoExistingList", [listed([X[0]]), X[1:], np.array([2, 0], np.int32)],
         check=elements_are(X[2], None, X[1]), attrs={"element_dtype": float32}, const_inputs=(2,)),
    Case("EmptyTensorList", [np.array([2, -1], np.int32), np.int32(5)], attrs={"element_dtype": float32},
         check=elements_are(shape=(2, None)), const_inputs=(0, 1)),
    Case("TensorListReserve", [np.array([2, 4], np.int32), np.int32(3)], attrs={"element_dtype": float32},
         check=elements_are(None, None, None, shape=(2, 4)), const_inputs=(0, 1)),
    Case("TensorListFromTensor", [X, np.array([-1, 4], np.int32)], check=elements_are(*X, shape=(2, 4)),
         const_inputs=(1,)),
    Case("TensorListFromTensor", [np.arange(6, dtype=np.int32).reshape(2, 3), UNKNOWN],
         check=elements_are(np.arange(3), np.arange(3, 6), shape=(3,)), const_inputs=(1,), id="FromTensor_int32"),
    Case("TensorListGetItem", [listed(X), np.int32(2), UNKNOWN], ref=lambda lst, i, s: X[2],
         attrs={"element_dtype": float32}, const_inputs=(1, 2), exact_shape=False),
    Case("TensorListGetItem", [listed([None, X[1]], shape=(2, 4)), np.int32(0), np.array([2, 4], np.int32)],
         ref=lambda *a: np.zeros((2, 4), np.float32), attrs={"element_dtype": float32}, const_inputs=(1, 2),
         id="GetItem_unset_is_zeros"),
    Case("TensorListSetItem", [listed(X), np.int32(1), SET], check=elements_are(X[0], SET, X[2]),
         attrs={"element_dtype": float32}, const_inputs=(1,)),
    Case("TensorListSetItem", [listed([X[0]]), np.int32(2), SET], check=elements_are(X[0], None, SET),
         attrs={"element_dtype": float32, "resize_if_index_out_of_bounds": True}, const_inputs=(1,),
         id="SetItem_resize"),
    Case("TensorListStack", [listed(X), np.array([2, 4], np.int32)], ref=lambda *a: X,
         attrs={"element_dtype": float32, "num_elements": 3}, const_inputs=(1,)),
    Case("TensorListStack", [listed([None, X[1]]), UNKNOWN], ref=lambda *a: np.stack([np.zeros((2, 4)), X[1]]),
         attrs={"element_dtype": float32}, const_inputs=(1,), exact_shape=False, id="Stack_unset_takes_set_shape"),
    Case("TensorListStack", [listed([], shape=(3,)), UNKNOWN], ref=lambda *a: np.zeros((0, 3), np.float32),
         attrs={"element_dtype": float32}, const_inputs=(1,), exact_shape=False, id="Stack_empty"),
    Case("TensorListLength", [listed(X)], ref=lambda *a: np.int32(3)),
    Case("TensorListLength", [listed([], int32, (None,))], ref=lambda *a: np.int32(0), id="Length_empty"),
    Case("TensorListElementShape", [listed(X, shape=(None, 4))], ref=lambda *a: np.array([-1, 4], np.int32),
         attrs={"shape_type": int32}, exact_shape=False),
    Case("TensorListElementShape", [wrap(TensorList([], float32, Shape(None)))], ref=lambda *a: np.int32(-1),
         attrs={"shape_type": int32}, exact_shape=False, id="ElementShape_unknown_rank"),
    Case("TensorListPushBack", [listed(X[:2]), X[2]], check=elements_are(*X), attrs={"element_dtype": float32}),
    Case("TensorListResize", [listed(X), np.int32(2)], check=elements_are(X[0], X[1])),
    Case("TensorListResize", [listed(X[:1]), np.int32(3)], check=elements_are(X[0], None, None), id="TensorListResize-grow"),
    Case("TensorListConcatV2", [listed([X[0], None, X[2][:1]], shape=(None, 4)), UNKNOWN, np.array([5, 3, 5], np.int64)],
         ref=lambda *a: [np.concatenate([X[0], np.zeros((3, 4), np.float32), X[2][:1]]), np.array([2, 3, 1], np.int64)],
         attrs={"element_dtype": float32, "shape_type": int32}, const_inputs=(1, 2), exact_shape=False,
         id="TensorListConcatV2-unset-leading-dims"),
    Case("TensorListConcatV2", [listed([], shape=(None, 4)), UNKNOWN, np.zeros([0], np.int64)],
         ref=lambda *a: [np.zeros((0, 4), np.float32), np.zeros([0], np.int64)],
         attrs={"element_dtype": float32, "shape_type": int32}, const_inputs=(1, 2), exact_shape=False,
         id="TensorListConcatV2-empty"),
    Case("TensorListSplit", [X.reshape(6, 4), np.array([-1, 4], np.int32), np.array([1, 0, 5], np.int64)],
         check=elements_are(X.reshape(6, 4)[:1], X.reshape(6, 4)[1:1], X.reshape(6, 4)[1:], shape=(None, 4)),
         attrs={"element_dtype": float32, "shape_type": int32}, const_inputs=(1, 2)),
    Case("TensorListPopBack", [listed(X), UNKNOWN], check=_popped, attrs={"element_dtype": float32}, exact_shape=False,
         const_inputs=(1,)),
]
