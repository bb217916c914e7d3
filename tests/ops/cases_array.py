"""Cases for array_ops: Const, Identity, NoOp, placeholders, shape queries, fills, Range, OneHot."""

import numpy as np

from tests.ops.harness import Case, bools, f32, f64, i32, i64

_v = np.arange(6, dtype=np.float32).reshape(2, 3)
_x = f32(2, 3, 4)


def _one_hot(indices, depth, on, off, axis=-1):
    out = np.where(indices[..., None] == np.arange(depth), on, off).astype(on.dtype)
    return np.moveaxis(out, -1, axis)


CASES = [
    Case("Const", [], attrs={"value": _v, "dtype": "float32"}, ref=lambda: _v),
    Case("Identity", [f32(2, 3)], ref=lambda x: x),
    Case("NoOp", [], ref=lambda: ()),
    Case("PlaceholderWithDefault", [f32(2, 3)], attrs={"shape": [2, 3]}, ref=lambda x: x),
    Case("StopGradient", [i64(4)], ref=lambda x: x),
    Case("Snapshot", [bools(2, 2)], ref=lambda x: x.copy()),
    Case("Shape", [_x], ref=lambda x: np.array([2, 3, 4], np.int32)),
    Case("Shape", [f32(0, 5)], attrs={"out_type": "int64"}, ref=lambda x: np.array([0, 5], np.int64), id="Shape-int64"),
    Case("ShapeN", [f32(2, 3), np.zeros((), np.float32), f32(4)],
         ref=lambda a, b, c: [np.array([2, 3], np.int32), np.array([], np.int32), np.array([4], np.int32)]),
    Case("Size", [_x], ref=lambda x: np.array(24, np.int32)),
    Case("Size", [f64()], attrs={"out_type": "int64"}, ref=lambda x: np.array(1, np.int64), id="Size-scalar-int64"),
    Case("Rank", [_x], ref=lambda x: np.array(3, np.int32)),
    Case("Fill", [np.array([2, 3], np.int32), np.float32(1.5)], ref=lambda d, v: np.full((2, 3), v, np.float32),
         const_inputs=[0]),
    Case("Fill", [np.array([0, 2], np.int64), np.int32(7)], ref=lambda d, v: np.full((0, 2), v, np.int32),
         const_inputs=[0], id="Fill-empty"),
    Case("ZerosLike", [f32(3, 2)], ref=np.zeros_like),
    Case("ZerosLike", [bools(3)], ref=np.zeros_like, id="ZerosLike-bool"),
    Case("OnesLike", [i32(2, 2)], ref=np.ones_like),
    Case("BroadcastTo", [f32(3, 1), np.array([2, 3, 4], np.int32)],
         ref=lambda x, s: np.broadcast_to(x, (2, 3, 4)), const_inputs=[1]),
    # a vector over the last axis: tiled into whole lines (ops/wide_rows.py)
    Case("BroadcastTo", [f32(1, 1, 5), np.array([6, 4, 5], np.int32)],
         ref=lambda x, s: np.broadcast_to(x, (6, 4, 5)), const_inputs=[1], id="BroadcastTo-channels"),
    Case("BroadcastTo", [f32(1, 1, 16), np.array([64, 32, 16], np.int32)],  # above wide_rows.MIN_SIZE
         ref=lambda x, s: np.broadcast_to(x, (64, 32, 16)), const_inputs=[1], id="BroadcastTo-channels-lines"),
    Case("BroadcastTo", [i64(3), np.array([0, 7, 3], np.int32)],
         ref=lambda x, s: np.broadcast_to(x, (0, 7, 3)), const_inputs=[1], id="BroadcastTo-channels-empty"),
    Case("Range", [np.int32(2), np.int32(11), np.int32(3)], ref=lambda a, b, c: np.arange(2, 11, 3, dtype=np.int32),
         const_inputs=[0, 1, 2]),
    Case("Range", [np.int64(5), np.int64(-4), np.int64(-2)],
         ref=lambda a, b, c: np.arange(5, -4, -2, dtype=np.int64), const_inputs=[0, 1, 2], id="Range-negative-delta"),
    Case("Range", [np.float32(0.5), np.float32(2.0), np.float32(0.25)],
         ref=lambda a, b, c: np.arange(0.5, 2.0, 0.25, dtype=np.float32), const_inputs=[0, 1, 2], id="Range-float"),
    Case("Range", [np.int32(0), np.int32(5), np.int32(1)], ref=lambda a, b, c: np.arange(5, dtype=np.int32),
         exact_shape=False, id="Range-unknown-limit"),
    # TF counts a float range in its element type: float32 (0.7 - 3.7) / -0.2 is exactly 15 (in
    # float64 it is 15.0000002, one element more), and adds delta to a running float32 value.
    Case("Range", [np.float32(3.7), np.float32(0.7), np.float32(-0.2)],
         ref=lambda a, b, c: np.array([3.7, 3.5, 3.3, 3.1, 2.8999999, 2.6999998, 2.4999998, 2.2999997,
                                       2.0999997, 1.8999996, 1.6999996, 1.4999995, 1.2999995, 1.0999994,
                                       0.89999944], np.float32),
         const_inputs=[0, 1, 2], rtol=0, atol=0, id="Range-float32-length-negative-delta"),
    Case("Range", [np.float32(0.7), np.float32(3.7), np.float32(0.2)],
         ref=lambda a, b, c: np.array([0.7, 0.9, 1.1, 1.3000001, 1.5000001, 1.7000002, 1.9000002, 2.1000001,
                                       2.3000002, 2.5000002, 2.7000003, 2.9000003, 3.1000004, 3.3000004,
                                       3.5000005], np.float32),
         const_inputs=[0, 1, 2], rtol=0, atol=0, id="Range-float32-length-positive-delta"),
    Case("OneHot", [np.array([0, 2, -1, 5], np.int64), np.int32(4), np.float32(1.0), np.float32(0.0)],
         ref=_one_hot, const_inputs=[1]),
    Case("OneHot", [np.array([[1, 0], [3, 2]], np.int32), np.int32(3), np.float64(5.0), np.float64(-1.0)],
         attrs={"axis": 0}, ref=lambda i, d, on, off: _one_hot(i, 3, on, off, axis=0), const_inputs=[1],
         id="OneHot-axis0"),
    Case("OneHot", [np.array([2, 1], np.uint8), np.int32(3), np.int32(1), np.int32(0)],
         attrs={"axis": 1}, ref=lambda i, d, on, off: _one_hot(i, 3, on, off, axis=1), const_inputs=[1],
         id="OneHot-uint8-axis1"),
]
