"""Gradient cases for pool_ops, on tie-free inputs (well-spaced values in random order)."""

import numpy as np

from tests.ops.grad_cases_conv import _distinct
from tests.ops.grad_harness import GradCase

NO_GRADIENT = {
    "MaxPoolGradV2": "its gradient (TF's MaxPoolGradGradV2) is not implemented",
    "MaxPoolGradWithArgmax": "its gradient (TF's MaxPoolGradGradWithArgmax) is not implemented",
}

_K, _S = np.array([1, 2, 2, 1], np.int32), np.array([1, 1, 2, 1], np.int32)

CASES = [
    GradCase("MaxPoolV2", [_distinct(1, 4, 4, 2), _K, _S], {"padding": "SAME"}),
    GradCase("MaxPoolV2", [_distinct(1, 2, 4, 3), np.array([1, 1, 2, 2], np.int32), np.array([1, 1, 1, 1], np.int32)],
             {"padding": "VALID", "data_format": "NCHW"}, id="MaxPoolV2-NCHW"),
    GradCase("MaxPoolWithArgmax", [_distinct(2, 4, 3, 2)], {"ksize": [1, 2, 2, 1], "strides": [1, 2, 1, 1],
                                                             "padding": "SAME"}, outputs=[0]),
    GradCase("MaxPoolWithArgmax", [_distinct(2, 3, 3, 1)], {"ksize": [1, 2, 2, 1], "strides": [1, 1, 1, 1],
                                                             "padding": "VALID", "include_batch_in_index": True},
             outputs=[0], id="MaxPoolWithArgmax-batch-index"),
]  # fmt: skip
