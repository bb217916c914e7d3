"""Cases for unique_axis_ops (UniqueV2, UniqueWithCountsV2) and inplace_ops' InplaceUpdate/Add/Sub:
values TensorFlow 2.21 gave for the same inputs (tf.raw_ops)."""

import numpy as np

from tests.ops.harness import Case

_XU = np.array([[1, 2, 1], [3, 4, 3], [1, 2, 1]], np.int32)
_XI = np.arange(12, dtype=np.float32).reshape(4, 3)


def _lit(*values):
    return lambda *_: [np.asarray(v) for v in values]


CASES = [
    Case("UniqueV2", [_XU, np.array([0], np.int64)], lambda *_: [_XU[:2], np.array([0, 1, 0], np.int32)],
         const_inputs=[1], exact_shape=False),
    Case("UniqueV2", [_XU, np.array([-1], np.int32)], lambda *_: [_XU[:, :2], np.array([0, 1, 0], np.int32)],
         attrs={"Taxis": "int32"}, const_inputs=[1], exact_shape=False, id="UniqueV2-last-axis"),
    Case("UniqueV2", [np.array([3, 1, 3, 2]), np.zeros(0, np.int64)],
         lambda *_: [np.array([3, 1, 2]), np.array([0, 1, 0, 2], np.int32)], const_inputs=[1], exact_shape=False,
         id="UniqueV2-no-axis"),
    Case("UniqueV2", [np.array([[0.0, 1.0], [-0.0, 1.0]]), np.array([0], np.int64)],
         lambda *_: [np.array([[0.0, 1.0]]), np.array([0, 0], np.int32)], const_inputs=[1], exact_shape=False,
         id="UniqueV2-signed-zero"),
    Case("UniqueWithCountsV2", [_XU, np.array([0], np.int64)],
         lambda *_: [_XU[:2], np.array([0, 1, 0]), np.array([2, 1])], attrs={"out_idx": "int64"}, const_inputs=[1],
         exact_shape=False),
    Case("UniqueWithCountsV2", [_XU, np.array([1], np.int64)],
         lambda *_: [_XU[:, :2], np.array([0, 1, 0], np.int32), np.array([2, 1], np.int32)], const_inputs=[1],
         exact_shape=False, id="UniqueWithCountsV2-axis1"),
    Case("InplaceUpdate", [_XI, np.array([3, 0], np.int32), -np.ones((2, 3), np.float32)],
         lambda *_: np.array([[-1, -1, -1], [3, 4, 5], [6, 7, 8], [-1, -1, -1]], np.float32)),
    Case("InplaceAdd", [_XI, np.array([1, 1], np.int32), np.ones((2, 3), np.float32)],  # a repeated row adds twice
         lambda *_: np.array([[0, 1, 2], [5, 6, 7], [6, 7, 8], [9, 10, 11]], np.float32)),
    Case("InplaceSub", [_XI, np.array([2], np.int32), np.ones((1, 3), np.float32)],
         lambda *_: np.array([[0, 1, 2], [3, 4, 5], [5, 6, 7], [9, 10, 11]], np.float32)),
]  # fmt: skip
