"""Cases for ragged_ops: RaggedTensorToTensor, with padded results written out by hand."""

import numpy as np

from tests.ops.harness import Case

_V = np.array([1.0, 2.0, 3.0, 4.0, 5.0], np.float32)
_SPLITS = {"row_partition_types": ["ROW_SPLITS"], "num_row_partition_tensors": 1}
_NESTED = {"row_partition_types": ["ROW_SPLITS", "ROW_SPLITS"], "num_row_partition_tensors": 2}
_ROWIDS = {"row_partition_types": ["FIRST_DIM_SIZE", "VALUE_ROWIDS"], "num_row_partition_tensors": 2}

CASES = [
    # rows [1, 2], [], [3, 4, 5]
    Case("RaggedTensorToTensor", [np.int32(-1), _V, np.float32(0), np.array([0, 2, 2, 5], np.int64)], attrs=_SPLITS,
         const_inputs=[0], exact_shape=False,
         ref=lambda *a: np.array([[1, 2, 0], [0, 0, 0], [3, 4, 5]], np.float32)),
    # A fixed shape cuts rows and pads columns.
    Case("RaggedTensorToTensor", [np.array([2, 4], np.int32), _V, np.float32(-1), np.array([0, 2, 2, 5], np.int32)],
         attrs=_SPLITS, const_inputs=[0], id="RaggedTensorToTensor-shape",
         ref=lambda *a: np.array([[1, 2, -1, -1], [-1, -1, -1, -1]], np.float32)),
    # rows of [row][item][2] values; the default [9, 8] broadcast over the inner dim.
    Case("RaggedTensorToTensor", [np.int64(-1), np.arange(6, dtype=np.int32).reshape(3, 2), np.array([9, 8], np.int32),
                                  np.array([0, 1, 3], np.int64)], attrs={**_SPLITS, "Tshape": "int64"}, const_inputs=[0],
         exact_shape=False, id="RaggedTensorToTensor-inner",
         ref=lambda *a: np.array([[[0, 1], [9, 8]], [[2, 3], [4, 5]]], np.int32)),
    # two ragged dims: [[[1], []], [[2, 3, 4]]] then 5 is... lengths [2, 1] then [1, 0, 3]
    Case("RaggedTensorToTensor", [np.int32(-1), _V[:4], np.float32(0), np.array([0, 2, 3], np.int64),
                                  np.array([0, 1, 1, 4], np.int64)], attrs=_NESTED, const_inputs=[0], exact_shape=False,
         id="RaggedTensorToTensor-nested",
         ref=lambda *a: np.array([[[1, 0, 0], [0, 0, 0]], [[2, 3, 4], [0, 0, 0]]], np.float32)),
    Case("RaggedTensorToTensor", [np.int32(-1), _V, np.float32(0), np.int64(4), np.array([0, 0, 2, 2, 2], np.int64)],
         attrs=_ROWIDS, const_inputs=[0], exact_shape=False, id="RaggedTensorToTensor-value-rowids",
         ref=lambda *a: np.array([[1, 2, 0], [0, 0, 0], [3, 4, 5], [0, 0, 0]], np.float32)),
]
