"""Gradient cases for pool_ops, on tie-free inputs (well-spaced values in random order)."""

import numpy as np

from specflow.ops.eval import evaluate_op
from tests.ops.grad_cases_conv import _distinct
from tests.ops.grad_harness import GradCase, g64

_K, _S = np.array([1, 2, 2, 1], np.int32), np.array([1, 1, 2, 1], np.int32)

_x = _distinct(1, 4, 4, 2)
_y = evaluate_op("MaxPoolV2", [_x, _K, _S], padding="SAME")[0]
_ARGMAX = {"ksize": [1, 2, 2, 1], "strides": [1, 2, 1, 1], "padding": "SAME"}
_arg = evaluate_op("MaxPoolWithArgmax", [_x], **_ARGMAX)[1]

CASES = [
    # The gradient ops: linear in their grad input (the maxima's positions are locally constant).
    GradCase("MaxPoolGradV2", [_x, _y, g64(*_y.shape), _K, _S], {"padding": "SAME"}, wrt=[2]),
    GradCase("MaxPoolGradGradV2", [_x, _y, g64(*_x.shape), _K, _S], {"padding": "SAME"}, wrt=[2]),
    GradCase("MaxPoolGradWithArgmax", [_x, g64(*_arg.shape), _arg], _ARGMAX, wrt=[1]),
    GradCase("MaxPoolGradGradWithArgmax", [_x, g64(*_x.shape), _arg], _ARGMAX, wrt=[1]),
    GradCase("MaxPoolV2", [_distinct(1, 4, 4, 2), _K, _S], {"padding": "SAME"}),
    GradCase("MaxPoolV2", [_distinct(1, 2, 4, 3), np.array([1, 1, 2, 2], np.int32), np.array([1, 1, 1, 1], np.int32)],
             {"padding": "VALID", "data_format": "NCHW"}, id="MaxPoolV2-NCHW"),
    GradCase("MaxPoolWithArgmax", [_distinct(2, 4, 3, 2)], {"ksize": [1, 2, 2, 1], "strides": [1, 2, 1, 1],
                                                             "padding": "SAME"}, outputs=[0]),
    GradCase("MaxPoolWithArgmax", [_distinct(2, 3, 3, 1)], {"ksize": [1, 2, 2, 1], "strides": [1, 1, 1, 1],
                                                             "padding": "VALID", "include_batch_in_index": True},
             outputs=[0], id="MaxPoolWithArgmax-batch-index"),
]  # fmt: skip
