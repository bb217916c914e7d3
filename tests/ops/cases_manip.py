"""Cases for manip_ops and slice_ops: reshape, transpose, concat/split, slicing, gather, pad, ..."""

import numpy as np

from tests.ops.harness import Case, f32, i32, i64

_x = f32(2, 3, 4)
_m = f32(4, 5)


def _vec(*v, dtype=np.int32):
    return np.array(v, dtype)


def _ss(x, begin, end, strides, ref, id, **masks):
    """A StridedSlice case; ``ref(x)`` is the numpy indexing it must equal."""
    return Case("StridedSlice", [x, _vec(*begin), _vec(*end), _vec(*strides)], attrs=masks,
                ref=lambda x, b, e, s: ref(x), const_inputs=[1, 2, 3], id=f"StridedSlice-{id}")  # fmt: skip


def _gather_batched(p, i, axis):
    # batch_dims=1, axis=2: for every batch row b, take p[b] along its axis 1.
    return np.stack([np.take(p[b], i[b], axis=1) for b in range(p.shape[0])])


CASES = [
    # Reshape
    Case("Reshape", [_x, _vec(4, 6)], ref=lambda x, s: x.reshape(4, 6), const_inputs=[1]),
    Case("Reshape", [_x, _vec(-1, 2, dtype=np.int64)], ref=lambda x, s: x.reshape(-1, 2), const_inputs=[1],
         id="Reshape-minus1"),
    Case("Reshape", [f32(1), _vec(dtype=np.int32).reshape(0)], ref=lambda x, s: x.reshape(()), const_inputs=[1],
         id="Reshape-to-scalar"),
    Case("Reshape", [_x, _vec(-1)], ref=lambda x, s: x.reshape(-1), id="Reshape-shape-unknown"),
    # Transpose
    Case("Transpose", [_x, _vec(2, 0, 1)], ref=lambda x, p: x.transpose(2, 0, 1), const_inputs=[1]),
    Case("Transpose", [_m, _vec(1, 0, dtype=np.int64)], ref=lambda x, p: x.T, id="Transpose-perm-unknown",
         exact_shape=False),
    # ConcatV2 / Pack / Unpack
    Case("ConcatOffset", [np.int32(1), np.array([2, 3, 5], np.int32), np.array([2, 4, 5], np.int32),
                          np.array([2, 1, 5], np.int32)],
         ref=lambda a, *s: [np.array([0, 0, 0], np.int32), np.array([0, 3, 0], np.int32), np.array([0, 7, 0], np.int32)]),
    Case("ConcatOffset", [np.int32(-1), np.array([2, 3], np.int64), np.array([2, 4], np.int64)],
         attrs={"shape_type": "int64"}, ref=lambda a, *s: [np.array([0, 0], np.int64), np.array([0, 3], np.int64)],
         id="ConcatOffset-negative-dim-int64"),
    Case("ConcatV2", [f32(2, 3), f32(2, 5), np.int32(1)], ref=lambda a, b, ax: np.concatenate([a, b], 1),
         const_inputs=[2]),
    Case("ConcatV2", [f32(2, 3), f32(1, 3), f32(4, 3), np.int64(-2)],
         ref=lambda a, b, c, ax: np.concatenate([a, b, c], 0), const_inputs=[3], id="ConcatV2-negative-axis"),
    Case("Pack", [f32(3, 4), f32(3, 4)], ref=lambda a, b: np.stack([a, b])),
    Case("Pack", [i32(3), i32(3), i32(3)], attrs={"axis": -1}, ref=lambda *v: np.stack(v, -1),
         id="Pack-negative-axis"),
    Case("Unpack", [_x], attrs={"num": 2}, ref=lambda x: [x[0], x[1]]),
    Case("Unpack", [_x], attrs={"num": 4, "axis": -1}, ref=lambda x: [x[..., i] for i in range(4)],
         id="Unpack-last-axis"),
    # Split / SplitV
    Case("Split", [np.int32(2), _x], attrs={"num_split": 2}, ref=lambda a, x: np.split(x, 2, axis=2),
         const_inputs=[0]),
    Case("Split", [np.int32(-2), _x], attrs={"num_split": 3}, ref=lambda a, x: np.split(x, 3, axis=1),
         const_inputs=[0], id="Split-negative-axis"),
    Case("SplitV", [_m, _vec(1, 3, 1, dtype=np.int64), np.int32(1)], attrs={"num_split": 3},
         ref=lambda x, s, a: np.split(x, [1, 4], axis=1), const_inputs=[1, 2]),
    Case("SplitV", [_m, _vec(-1, 3), np.int32(0)], attrs={"num_split": 2},
         ref=lambda x, s, a: np.split(x, [1], axis=0), const_inputs=[1, 2], id="SplitV-minus1"),
    Case("SplitV", [_m, _vec(0, -1), np.int32(-1)], attrs={"num_split": 2},
         ref=lambda x, s, a: np.split(x, [0], axis=1), const_inputs=[1, 2], id="SplitV-empty-piece"),
    # ExpandDims / Squeeze
    Case("ExpandDims", [_m, np.int32(1)], ref=lambda x, d: x[:, None], const_inputs=[1]),
    Case("ExpandDims", [_m, np.int64(-1)], ref=lambda x, d: x[..., None], const_inputs=[1],
         id="ExpandDims-negative"),
    Case("Squeeze", [f32(1, 3, 1, 2)], ref=np.squeeze),
    Case("Squeeze", [f32(1, 3, 1, 2)], attrs={"squeeze_dims": [-2]}, ref=lambda x: x[:, :, 0],
         id="Squeeze-dims"),
    # Tile
    Case("Tile", [f32(2, 3), _vec(2, 1)], ref=lambda x, m: np.tile(x, (2, 1)), const_inputs=[1]),
    Case("Tile", [i64(2, 1), _vec(0, 3, dtype=np.int64)], ref=lambda x, m: np.tile(x, (0, 3)), const_inputs=[1],
         id="Tile-zero"),
    # Pad / PadV2 / MirrorPad
    Case("Pad", [_m, _vec(1, 2, 0, 3).reshape(2, 2)], ref=lambda x, p: np.pad(x, [(1, 2), (0, 3)]),
         const_inputs=[1]),
    Case("Pad", [i32(3), _vec(2, 0, dtype=np.int64).reshape(1, 2)], ref=lambda x, p: np.pad(x, [(2, 0)]),
         id="Pad-unknown-paddings", exact_shape=False),
    Case("PadV2", [_m, _vec(1, 1, 2, 0).reshape(2, 2), np.float32(-3.0)],
         ref=lambda x, p, c: np.pad(x, [(1, 1), (2, 0)], constant_values=-3.0), const_inputs=[1]),
    Case("MirrorPad", [_m, _vec(3, 1, 2, 4).reshape(2, 2)], attrs={"mode": "REFLECT"},
         ref=lambda x, p: np.pad(x, [(3, 1), (2, 4)], mode="reflect"), const_inputs=[1]),
    Case("MirrorPad", [_m, _vec(4, 0, 5, 1).reshape(2, 2)], attrs={"mode": "SYMMETRIC"},
         ref=lambda x, p: np.pad(x, [(4, 0), (5, 1)], mode="symmetric"), const_inputs=[1],
         id="MirrorPad-symmetric"),
    # Slice
    Case("Slice", [_x, _vec(1, 0, 2), _vec(1, -1, 2)], ref=lambda x, b, s: x[1:2, 0:, 2:4], const_inputs=[1, 2]),
    Case("Slice", [_m, _vec(2, 1), _vec(-1, 3)], ref=lambda x, b, s: x[2:, 1:4], id="Slice-unknown-begin",
         const_inputs=[2], exact_shape=False),
    # StridedSlice: x[:, 1] (begin/end masks on entry 0, shrink on entry 1)
    _ss(_x, (0, 1), (0, 2), (1, 1), lambda x: x[:, 1], "x[:,1]", begin_mask=1, end_mask=1, shrink_axis_mask=2),
    _ss(_x, (1, -3), (2, 0), (1, -1), lambda x: x[1:2, -3::-1], "negative-stride", end_mask=2),
    _ss(_m, (-1,), (0,), (1,), lambda x: x[-1], "shrink-negative", shrink_axis_mask=1),
    _ss(_x, (0, 1), (0, 3), (1, 2), lambda x: x[..., 1:3:2], "ellipsis", ellipsis_mask=1),
    _ss(_x, (0, 0, 2), (0, 0, 3), (1, 1, 1), lambda x: x[None, ..., 2], "newaxis-ellipsis-shrink",
        new_axis_mask=1, ellipsis_mask=2, shrink_axis_mask=4),
    _ss(_m, (1, 0, -10), (3, 0, 10), (1, 1, 1), lambda x: x[1:3, None, -10:10], "newaxis-middle-clamped",
        new_axis_mask=2),
    _ss(_m, (10,), (20,), (1,), lambda x: x[10:20], "empty"),
    _ss(_x, (1, 2, 3), (0, 0, 0), (1, 1, 1), lambda x: x[1, 2, 3], "all-shrink", shrink_axis_mask=7),
    _ss(_m, (3, 4), (0, 0), (-2, -3), lambda x: x[3::-2, ::-3], "masked-negative-strides",
        begin_mask=2, end_mask=3),
    # GatherV2
    Case("GatherV2", [_m, _vec(3, 0, 3), np.int32(0)], ref=lambda p, i, a: p[[3, 0, 3]], const_inputs=[2]),
    # TF checks indices only when a slice holds something: here none does, so 5 is no error.
    Case("GatherV2", [np.zeros((3, 0), np.float32), _vec(5, 1), np.int32(0)], ref=lambda p, i, a: np.zeros((2, 0), np.float32),
         const_inputs=[2], id="GatherV2-empty-slices-unchecked"),
    Case("GatherV2", [np.zeros((0, 3), np.float32), np.int32(7), np.int32(1)], ref=lambda p, i, a: np.zeros(0, np.float32),
         const_inputs=[2], id="GatherV2-empty-outer-scalar-index-unchecked"),
    Case("GatherV2", [_x, np.array([[3, 1], [0, 0]], np.int64), np.int64(-1)],
         ref=lambda p, i, a: np.take(p, i, axis=2), const_inputs=[2], id="GatherV2-axis-last"),
    Case("GatherV2", [_x, np.int32(2), np.int32(1)], ref=lambda p, i, a: p[:, 2], const_inputs=[2],
         id="GatherV2-scalar-index"),
    Case("GatherV2", [_x, np.array([[3, 1, 1], [0, 2, 3]], np.int32), np.int32(2)], attrs={"batch_dims": 1},
         ref=lambda p, i, a: _gather_batched(p, i, 2), const_inputs=[2], id="GatherV2-batch-dims"),
]
