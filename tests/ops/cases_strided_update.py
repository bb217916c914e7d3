"""Cases for TensorStridedSliceUpdate: values TensorFlow 2.21 gave for the same inputs (negative
strides, a shrunk axis, a broadcast scalar, an ellipsis with a new axis)."""

import numpy as np

from tests.ops.harness import Case

_T = np.arange(24, dtype=np.float32).reshape(4, 6)


def _i(*v):
    return np.array(v, np.int32)


def _lit(value):
    return lambda *_: np.asarray(value, np.float32)


_OP = "TensorStridedSliceUpdate"
CASES = [
    Case(_OP, [_T, _i(1, 0), _i(3, 6), _i(1, 2), -np.ones((2, 3), np.float32)],
         _lit([[0, 1, 2, 3, 4, 5], [-1, 7, -1, 9, -1, 11], [-1, 13, -1, 15, -1, 17], [18, 19, 20, 21, 22, 23]]),
         const_inputs=[1, 2, 3]),
    Case(_OP, [_T, _i(-1, 5), _i(0, 0), _i(-2, -3), -np.arange(4, dtype=np.float32).reshape(2, 2)],
         _lit([[0, 1, 2, 3, 4, 5], [6, 7, -3, 9, 10, -2], [12, 13, 14, 15, 16, 17], [18, 19, -1, 21, 22, 0]]),
         const_inputs=[1, 2, 3], id=f"{_OP}-negative-strides"),
    Case(_OP, [_T, _i(2, 0), _i(3, 0), _i(1, 1), np.full(6, 7.0, np.float32)],
         _lit([[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11], [7] * 6, [18, 19, 20, 21, 22, 23]]),
         attrs={"shrink_axis_mask": 1, "end_mask": 2}, const_inputs=[1, 2, 3], id=f"{_OP}-shrink"),
    Case(_OP, [_T, _i(0, 1), _i(4, 3), _i(1, 1), np.float32(5)],
         _lit([[0, 5, 5, 3, 4, 5], [6, 5, 5, 9, 10, 11], [12, 5, 5, 15, 16, 17], [18, 5, 5, 21, 22, 23]]),
         const_inputs=[1, 2, 3], id=f"{_OP}-broadcast"),
    Case(_OP, [_T, _i(0, 0, 1), _i(0, 0, 2), _i(1, 1, 1), np.ones((4, 1, 1), np.float32)],
         _lit([[0, 1, 2, 3, 4, 5], [6, 1, 8, 9, 10, 11], [12, 1, 14, 15, 16, 17], [18, 1, 20, 21, 22, 23]]),
         attrs={"ellipsis_mask": 1, "new_axis_mask": 2}, const_inputs=[1, 2, 3], id=f"{_OP}-ellipsis-new-axis"),
]  # fmt: skip
