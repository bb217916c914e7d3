"""Gradient cases for ragged_ops: the values get the padded output's gradient where they landed (cut
values none), the default the sum of the rest."""

import numpy as np

from tests.ops.grad_harness import GradCase, g64

_SPLITS = {"row_partition_types": ["ROW_SPLITS"], "num_row_partition_tensors": 1}

CASES = [
    GradCase("RaggedTensorToTensor", [np.int32(-1), g64(5), g64(), np.array([0, 2, 2, 5], np.int64)], _SPLITS),
    GradCase("RaggedTensorToTensor", [np.array([2, 2, -1], np.int32), g64(5, 2), g64(2), np.array([0, 1, 4, 5], np.int64)],
             _SPLITS, id="RaggedTensorToTensor-cut-inner-default"),
]
