"""Cases for segment_ops: SegmentSum, UnsortedSegmentMax/Min/Prod, DynamicPartition, DynamicStitch,
Bincount. References loop over the segments in plain numpy."""

import numpy as np

from tests.ops.harness import Case, f32, f64, i32

_ids = np.array([2, 0, -1, 2, 4], np.int32)


def _unsorted_ref(fn, empty):
    def ref(data, ids, n):
        rows = data.reshape((ids.size,) + data.shape[ids.ndim:])
        flat = ids.reshape(-1)
        out = np.full((int(n),) + rows.shape[1:], empty, data.dtype)
        for s in range(int(n)):
            if (flat == s).any():
                out[s] = fn(rows[flat == s], axis=0)
        return out

    return ref


def _segment_sum_ref(data, ids):
    n = int(ids[-1]) + 1 if ids.size else 0
    return np.stack([data[ids == s].sum(axis=0) for s in range(n)]).astype(data.dtype)


def _stitch_ref(*args):
    n = len(args) // 2
    pairs = [(int(i), d) for idx, dat in zip(args[:n], args[n:]) for i, d in
             zip(idx.reshape(-1), dat.reshape((idx.size,) + dat.shape[idx.ndim:]))]
    out = np.zeros((max(i for i, _ in pairs) + 1,) + pairs[0][1].shape, args[n].dtype)
    for i, d in pairs:
        out[i] = d
    return out


def _tf_fold_ref(kind):
    """TF's CPU rule, element by element: start at the lowest (Max) or largest (Min) finite value,
    then ``cur = x < cur ? cur : x`` (Max) for each row in order."""
    def ref(data, ids, n):
        out = np.full((int(n),) + data.shape[1:], _lowest if kind == "max" else _largest, data.dtype)
        for x, s in zip(data, ids):
            for j in np.ndindex(*x.shape):
                cur = out[(s,) + j]
                out[(s,) + j] = cur if (x[j] < cur if kind == "max" else x[j] > cur) else x[j]
        return out

    return ref


_lowest, _largest = np.finfo(np.float32).min, np.finfo(np.float32).max
# -inf (or inf) alone in a segment gives the start value; NaN wins until a later row replaces it.
_NAN_INF = np.array([[np.nan, -np.inf], [1, 2], [2, np.nan], [np.nan, np.inf], [-np.inf, np.nan]], np.float32)
_SD = np.array([[1.0, 2], [3, 4], [5, 6], [7, -8]])
_SIDS = np.array([0, 0, 2, 2], np.int32)

CASES = [
    Case("SegmentSum", [f32(6, 2), np.array([0, 0, 1, 3, 3, 3], np.int32)], ref=_segment_sum_ref, exact_shape=False),
    Case("SegmentSum", [i32(3), np.array([1, 1, 2], np.int64)], ref=_segment_sum_ref, exact_shape=False,
         id="SegmentSum-int-leading-empty"),
    Case("UnsortedSegmentMax", [f32(5, 2), _ids, np.int32(5)], const_inputs=[2], ref=_unsorted_ref(np.max, _lowest)),
    Case("UnsortedSegmentMax", [i32(2, 3), np.array([[0, 2, 2], [1, 0, 1]], np.int64), np.int64(4)], const_inputs=[2],
         ref=_unsorted_ref(np.max, np.iinfo(np.int32).min), id="UnsortedSegmentMax-2d-ids-int"),
    Case("UnsortedSegmentMin", [f64(5, 2), _ids, np.int32(5)], const_inputs=[2],
         ref=_unsorted_ref(np.min, np.finfo(np.float64).max)),
    Case("UnsortedSegmentMax", [_NAN_INF, np.array([0, 0, 1, 1, 2], np.int32), np.int32(4)], const_inputs=[2],
         ref=_tf_fold_ref("max"), id="UnsortedSegmentMax-nan-inf"),
    Case("UnsortedSegmentMin", [-_NAN_INF, np.array([0, 0, 1, 1, 2], np.int32), np.int32(4)], const_inputs=[2],
         ref=_tf_fold_ref("min"), id="UnsortedSegmentMin-nan-inf"),
    Case("UnsortedSegmentProd", [f32(5, 2), _ids, np.int32(5)], const_inputs=[2], ref=_unsorted_ref(np.prod, 1)),
    Case("DynamicPartition", [f32(5, 2), np.array([1, 0, 2, 1, 1], np.int32)], attrs={"num_partitions": 3},
         ref=lambda d, p: [d[p == i] for i in range(3)], exact_shape=False),
    Case("DynamicPartition", [i32(2, 3), np.array([[0, 1, 0], [0, 0, 0]], np.int32)], attrs={"num_partitions": 2},
         ref=lambda d, p: [d[p == i] for i in range(2)], exact_shape=False, id="DynamicPartition-2d"),
    Case("DynamicStitch", [np.array([0, 4], np.int32), np.array([[2], [1]], np.int32), f32(2, 3), f32(2, 1, 3)],
         ref=_stitch_ref, exact_shape=False),
    Case("DynamicStitch", [np.array([1, 0, 1], np.int32), np.array([1], np.int32), i32(3), i32(1)],
         ref=_stitch_ref, exact_shape=False, id="DynamicStitch-later-write-wins"),
    Case("ParallelDynamicStitch", [np.array([0, 4], np.int32), np.array([[2], [1]], np.int32), f32(2, 3), f32(2, 1, 3)],
         ref=_stitch_ref, exact_shape=False),
    Case("Bincount", [np.array([1, 3, 1, 7, 0], np.int32), np.int32(5), np.zeros(0, np.int32)],
         ref=lambda a, n, w: np.array([1, 2, 0, 1, 0], np.int32), const_inputs=[1]),
    Case("Bincount", [np.array([[1, 3], [1, 2]], np.int32), np.int32(4), np.array([[0.5, 1], [2, 4]], np.float32)],
         ref=lambda a, n, w: np.array([0, 2.5, 4, 1], np.float32), const_inputs=[1], id="Bincount-weights"),
    # sorted ids with a gap (segment 1 empty: 0, or 1 for Prod, as TF gives)
    Case("SegmentMean", [_SD, _SIDS], const_inputs=[1], ref=lambda d, i: np.array([[2.0, 3], [0, 0], [6, -1]])),
    Case("SegmentMax", [_SD, _SIDS], const_inputs=[1], ref=lambda d, i: np.array([[3.0, 4], [0, 0], [7, 6]])),
    Case("SegmentMin", [_SD, _SIDS], const_inputs=[1], ref=lambda d, i: np.array([[1.0, 2], [0, 0], [5, -8]])),
    Case("SegmentProd", [_SD, _SIDS], const_inputs=[1], ref=lambda d, i: np.array([[3.0, 8], [1, 1], [35, -48]])),
    Case("SegmentMax", [np.array([3, 1], np.int32), np.array([1, 1], np.int64)], const_inputs=[1], ref=lambda d, i: np.array([0, 3], np.int32),
         id="SegmentMax-int-empty-first"),
    Case("HistogramFixedWidth", [np.array([-1.0, 0, 1.5, 2, 4.999, 5, 10]), np.array([0.0, 5.0]), np.int32(5)],
         const_inputs=[2], ref=lambda v, r, n: np.array([2, 1, 1, 0, 3], np.int32)),
    Case("HistogramFixedWidth", [np.array([[3, 7], [1, 9]], np.int64), np.array([0, 10], np.int64), np.int32(2)],
         attrs={"dtype": "int64"}, const_inputs=[2], ref=lambda v, r, n: np.array([2, 2], np.int64), id="HistogramFixedWidth-int"),
    # rows with no values: every count 0 (TF's; found by tf_fuzz_parity.py --family 4)
    Case("DenseBincount", [np.zeros((2, 0), np.int32), np.int32(3), np.zeros(0, np.int32)], const_inputs=[1],
         ref=lambda *a: np.zeros((2, 3), np.int32), id="DenseBincount-empty-rows"),
    Case("DenseBincount", [np.array([1, 3, 1, 7, 0], np.int32), np.int32(5), np.zeros(0, np.float32)],
         ref=lambda a, n, w: np.array([1, 2, 0, 1, 0], np.float32), const_inputs=[1]),
    Case("DenseBincount", [np.array([[1, 3, 1], [0, 0, 4]], np.int64), np.int64(5),
                           np.array([[1, 2, 3], [4, 5, 6]], np.float64)], const_inputs=[1], id="DenseBincount-rows-weights",
         ref=lambda a, n, w: np.array([[0, 4, 0, 2, 0], [9, 0, 0, 0, 6]], np.float64)),
    Case("DenseBincount", [np.array([[1, 3, 1], [0, 0, 9]], np.int32), np.int32(5), np.zeros(0, np.int32)],
         attrs={"binary_output": True}, const_inputs=[1], id="DenseBincount-binary",
         ref=lambda a, n, w: np.array([[0, 1, 0, 1, 0], [1, 0, 0, 0, 0]], np.int32)),
]
