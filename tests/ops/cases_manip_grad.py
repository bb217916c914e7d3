"""Kernel cases for the ops that array gradients emit: InvertPermutation, MirrorPadGrad,
StridedSliceGrad, UnsortedSegmentSum."""

import numpy as np

from tests.ops.harness import Case, f32, f64, i32


def _v(*values, dtype=np.int32):
    return np.array(values, dtype)


def _mirror_pad_grad_ref(g, paddings, mode):
    """Adjoint of np.pad(mode): push each padded position's gradient onto the input it copies."""
    shape = [d - a - c for d, (a, c) in zip(g.shape, paddings.tolist())]
    probe = np.pad(np.arange(int(np.prod(shape))).reshape(shape), paddings.tolist(), mode=mode)
    out = np.zeros(int(np.prod(shape)), g.dtype)
    np.add.at(out, probe.reshape(-1), g.reshape(-1))
    return out.reshape(shape)


def _strided_slice_grad_ref(shape, index, dy):
    out = np.zeros(shape, dy.dtype)
    out[index] = dy
    return out


def _segment_sum_ref(data, ids, n):
    out = np.zeros((int(n),) + data.shape[ids.ndim :], data.dtype)
    keep = ids >= 0
    np.add.at(out, ids[keep], data[keep])
    return out


_p = _v(2, 1, 3, 2).reshape(2, 2)

CASES = [
    Case("InvertPermutation", [_v(2, 0, 3, 1)], ref=lambda x: np.argsort(x).astype(np.int32)),
    Case("InvertPermutation", [_v(0, dtype=np.int64)], ref=lambda x: x, id="InvertPermutation-int64"),
    Case("MirrorPadGrad", [f32(6, 9), _p], attrs={"mode": "REFLECT"}, const_inputs=[1],
         ref=lambda g, p: _mirror_pad_grad_ref(g, p, "reflect")),
    Case("MirrorPadGrad", [f64(5, 6), _v(0, 2, 3, 0, dtype=np.int64).reshape(2, 2)], attrs={"mode": "SYMMETRIC"},
         const_inputs=[1], ref=lambda g, p: _mirror_pad_grad_ref(g, p, "symmetric"), id="MirrorPadGrad-symmetric"),
    Case("StridedSliceGrad", [_v(3, 4), _v(0, 1), _v(0, 4), _v(1, 2), f32(3, 2)], attrs={"begin_mask": 1, "end_mask": 1},
         const_inputs=[0, 1, 2, 3], ref=lambda s, b, e, st, dy: _strided_slice_grad_ref((3, 4), np.s_[:, 1:4:2], dy)),
    Case("StridedSliceGrad", [_v(2, 3, 4, dtype=np.int64), _v(0, 0, 2, dtype=np.int64), _v(0, 0, 3, dtype=np.int64),
                              _v(1, 1, 1, dtype=np.int64), f64(1, 2, 3)],
         attrs={"new_axis_mask": 1, "ellipsis_mask": 2, "shrink_axis_mask": 4}, const_inputs=[0, 1, 2, 3],
         ref=lambda s, b, e, st, dy: _strided_slice_grad_ref((2, 3, 4), np.s_[..., 2], dy[0]),
         id="StridedSliceGrad-newaxis-shrink"),
    Case("UnsortedSegmentSum", [f32(5, 2), _v(2, 0, -1, 2, 1), np.int32(4)], const_inputs=[2], ref=_segment_sum_ref),
    # No data: TF checks no id (GatherV2's gradient of an unchecked empty gather).
    Case("UnsortedSegmentSum", [np.zeros((2, 0), np.float32), _v(5, 1), np.int32(3)], const_inputs=[2],
         ref=lambda d, i, n: np.zeros((3, 0), np.float32), id="UnsortedSegmentSum-no-data-ids-unchecked"),
    Case("UnsortedSegmentSum", [i32(2, 3), np.array([[0, 2, 2], [1, 0, 1]], np.int64), np.int64(3)],
         const_inputs=[2], ref=_segment_sum_ref, id="UnsortedSegmentSum-2d-ids-int"),
]
