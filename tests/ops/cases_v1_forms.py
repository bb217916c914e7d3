"""Cases for v1_forms (older graphs' forms run as their successors): values TensorFlow 2.21 gave
for the same inputs (tf.raw_ops), except TopK (TF 2.21's CPU kernel for it no longer binds: its
values are TopKV2's) and AccumulateNV2 (a graph rewrite in TF, no kernel: AddN's values)."""

import numpy as np

from tests.ops.harness import Case, f32, f64, i32

_X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
_D = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)
_PRED = np.array([[1.0, 3.0, 2.0, 3.0], [5.0, 4.0, 6.0, 0.0]], np.float32)


def _lit(value, dtype=None):
    return lambda *_: np.asarray(value, dtype)


CASES = [
    Case("Inv", [f32(3, 2, low=0.5)], lambda x: 1 / x),
    Case("Mod", [np.array([7, -7, 7, -7], np.int32), np.array([3, 3, -3, -3], np.int32)], _lit([1, -1, 1, -1], np.int32)),
    Case("Mod", [np.array([7.5, -7.5, 7.5, -7.5], np.float32), np.array([2, 2, -2, -2], np.float32)],
         _lit([1.5, -1.5, 1.5, -1.5], np.float32), id="Mod-float"),
    Case("AccumulateNV2", [f64(2, 3), f64(2, 3), f64(2, 3)], lambda a, b, c: a + b + c, attrs={"shape": [2, 3]}),
    Case("CheckNumericsV2", [f32(3)], lambda x: x, attrs={"message": "m"}),
    Case("Concat", [np.int32(1), _X[:, :2], _X[:, 2:]], _lit(_X), const_inputs=[0]),
    Case("Concat", [np.int32(-1), i32(2, 1), i32(2, 3)], lambda a, x, y: np.concatenate([x, y], -1), const_inputs=[0],
         id="Concat-negative-axis"),
    Case("Reverse", [_X, np.array([True, False, True])], _lit(_X[::-1, :, ::-1]), const_inputs=[1]),
    Case("Reverse", [_X, np.array([False, False, False])], _lit(_X), const_inputs=[1], id="Reverse-none"),
    Case("BiasAddV1", [_X, np.array([1, 2, 3, 4], np.float32)],
         _lit([[[1, 3, 5, 7], [5, 7, 9, 11], [9, 11, 13, 15]], [[13, 15, 17, 19], [17, 19, 21, 23], [21, 23, 25, 27]]],
              np.float32)),
    Case("TopK", [_PRED], attrs={"k": 2},
         check=lambda outs, ins: (np.testing.assert_array_equal(outs[0], [[3, 3], [6, 5]]),
                                  np.testing.assert_array_equal(outs[1], np.array([[1, 3], [2, 0]], np.int32)))),
    Case("InTopK", [_PRED, np.array([3, 1], np.int32)], _lit([True, False]), attrs={"k": 1}),
    Case("MatrixDiag", [_D], _lit([[[1, 0, 0], [0, 2, 0], [0, 0, 3]], [[4, 0, 0], [0, 5, 0], [0, 0, 6]]], np.float32)),
    Case("MatrixDiagPart", [_X], _lit([[0, 5, 10], [12, 17, 22]], np.float32)),
    Case("MatrixSetDiag", [_X, -_D],
         _lit([[[-1, 1, 2, 3], [4, -2, 6, 7], [8, 9, -3, 11]], [[-4, 13, 14, 15], [16, -5, 18, 19], [20, 21, -6, 23]]],
              np.float32)),
    # V2: the diagonals packed from the left (LEFT_LEFT)
    Case("MatrixDiagV2", [np.array([[[1, 2, 0], [3, 4, 5]]], np.float32), np.array([-1, 0], np.int32), np.int32(-1),
                          np.int32(-1), np.float32(9)], _lit([[[1, 9, 9], [3, 2, 9], [9, 4, 0]]], np.float32),
         const_inputs=[1, 2, 3]),
    Case("MatrixDiagPartV2", [_X, np.array([-1, 1], np.int32), np.float32(9)],
         _lit([[[1, 6, 11], [0, 5, 10], [4, 9, 9]], [[13, 18, 23], [12, 17, 22], [16, 21, 9]]], np.float32),
         const_inputs=[1]),
    Case("MatrixSetDiagV2", [_X[:, :, :3], np.array([[[1, 2, 0], [3, 4, 5]]] * 2, np.float32), np.array([-1, 0], np.int32)],
         _lit([[[1, 1, 2], [3, 2, 6], [8, 4, 0]], [[1, 13, 14], [3, 2, 18], [20, 4, 0]]], np.float32), const_inputs=[2]),
    Case("ToBool", [np.float32(0)], _lit(False)),
    Case("ToBool", [np.int32(3)], _lit(True), id="ToBool-scalar"),
    Case("ToBool", [np.zeros(0, np.float32)], _lit(False), id="ToBool-empty"),
    Case("ToBool", [np.zeros(1, np.float32)], _lit(True), id="ToBool-zero-vector"),
    Case("ToBool", [np.array(b"", object)], _lit(False), id="ToBool-empty-string"),
    Case("ToBool", [np.array([b""], object)], _lit(True), id="ToBool-strings"),
    Case("ApproximateEqual", [np.array([1.0, 2.0, 3.0, np.nan]), np.array([1.000001, 2.1, 3.0, np.nan])],
         _lit([True, False, True, False])),
    Case("ApproximateEqual", [np.array([1, 2], np.int32), np.array([1, 3], np.int32)], _lit([False, False]),
         id="ApproximateEqual-int"),  # TF casts the tolerance to T: 0, which nothing is below
]  # fmt: skip
