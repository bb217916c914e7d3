"""Cases for bitwise_ops: BitwiseAnd/Or/Xor, Invert, LeftShift, RightShift (shift amounts out of
[0, bits - 1] clamped, as TF), PopulationCount. References are literals or numpy's own."""

import numpy as np

from tests.ops.harness import Case, i32

_a = np.array([[5, -3, 12], [0, 127, -128]], np.int32)
_b = np.array([3, -1, 10], np.int32)

CASES = [
    Case("BitwiseAnd", [_a, _b], ref=lambda x, y: np.array([[1, -3, 8], [0, 127, 0]], np.int32)),
    Case("BitwiseOr", [_a, _b], ref=lambda x, y: np.array([[7, -1, 14], [3, -1, -118]], np.int32)),
    Case("BitwiseXor", [i32(3, 4), i32(4)], ref=np.bitwise_xor),
    Case("BitwiseAnd", [np.array([200, 15], np.uint8), np.array([100, 255], np.uint8)],
         ref=lambda x, y: np.array([64, 15], np.uint8), id="BitwiseAnd-uint8"),
    Case("Invert", [np.array([0, 5, -1], np.int64)], ref=lambda x: np.array([-1, -6, 0], np.int64)),
    Case("Invert", [np.array([0, 200], np.uint8)], ref=lambda x: np.array([255, 55], np.uint8), id="Invert-uint8"),
    # int8: -1 << 7 is -128; 3 << 9 clamps to 3 << 7, which wraps to -128; a negative amount is 0.
    Case("LeftShift", [np.array([-1, 3, 7], np.int8), np.array([7, 9, -1], np.int8)],
         ref=lambda x, y: np.array([-128, -128, 7], np.int8)),
    Case("LeftShift", [np.array([[1, 2]], np.int32), np.array([[3], [31]], np.int32)],
         ref=lambda x, y: np.array([[8, 16], [-(2 ** 31), 0]], np.int32), id="LeftShift-broadcast"),
    # Arithmetic for signed types: the sign bit shifts in.
    Case("RightShift", [np.array([-128, 3, 7, -7], np.int8), np.array([7, 9, -1, 1], np.int8)],
         ref=lambda x, y: np.array([-1, 0, 7, -4], np.int8)),
    Case("RightShift", [np.array([255, 16], np.uint16), np.array([4, 100], np.uint16)],
         ref=lambda x, y: np.array([15, 0], np.uint16), id="RightShift-uint16"),
    Case("PopulationCount", [np.array([[0, 7], [-1, 256]], np.int32)], ref=lambda x: np.array([[0, 3], [32, 1]], np.uint8)),
    Case("PopulationCount", [np.int64(-2)], ref=lambda x: np.uint8(63), id="PopulationCount-scalar"),
]
