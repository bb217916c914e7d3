"""Cases for reverse_ops (ReverseV2, Roll, ReverseSequence), selection_ops (TopKV2, Where, Unique)
and BroadcastArgs. References are plain numpy, loops where the kernel is vectorized."""

import numpy as np

from tests.ops.harness import Case, bools, f32, f64, i32

_x = f32(2, 3, 4)


def _reverse_sequence_ref(x, lengths, seq_dim, batch_dim):
    out = x.copy()
    for b, n in enumerate(lengths):
        src = [slice(None)] * x.ndim
        src[batch_dim], src[seq_dim] = b, slice(0, int(n))
        piece = x[tuple(src)]
        out[tuple(src)] = np.flip(piece, axis=seq_dim - (batch_dim < seq_dim))
    return out


def _top_k_ref(x, k):
    rows = x.reshape(-1, x.shape[-1])
    idx = np.array([sorted(range(len(r)), key=lambda j: (-r[j], j))[: int(k)] for r in rows], np.int32)
    idx = idx.reshape(x.shape[:-1] + (int(k),))
    return np.take_along_axis(x, idx, axis=-1), idx


def _unique_ref(x):
    y, idx = [], []
    for v in x:
        if v not in y:
            y.append(v)
        idx.append(y.index(v))
    return np.array(y, x.dtype), np.array(idx, np.int32)


_ties = np.array([[3, 1, 3, 2, 1], [0, 0, 5, 5, 4]], np.float32)
CASES = [
    Case("ReverseV2", [_x, np.array([0, 2], np.int32)], ref=lambda x, a: x[::-1, :, ::-1], const_inputs=[1]),
    Case("ReverseV2", [i32(3, 2), np.array([-1], np.int64)], ref=lambda x, a: x[:, ::-1], const_inputs=[1],
         id="ReverseV2-negative-axis"),
    Case("ReverseV2", [_x, np.zeros(0, np.int32)], ref=lambda x, a: x, const_inputs=[1], id="ReverseV2-no-axes"),
    Case("Roll", [_x, np.array([1, -5], np.int32), np.array([2, 1], np.int32)],
         ref=lambda x, s, a: np.roll(np.roll(x, 1, axis=2), -5, axis=1)),
    Case("Roll", [i32(5), np.int64(7), np.int64(0)], ref=lambda x, s, a: np.concatenate([x[-2:], x[:-2]]),
         id="Roll-scalar"),
    Case("Roll", [f32(4, 3), np.array([1, 2], np.int32), np.array([0, 0], np.int32)],
         ref=lambda x, s, a: np.concatenate([x[-3:], x[:-3]]), id="Roll-repeated-axis"),
    Case("ReverseSequence", [_x, np.array([3, 0], np.int64)], attrs={"seq_dim": 2, "batch_dim": 0},
         ref=lambda x, n: _reverse_sequence_ref(x, n, 2, 0)),
    Case("ReverseSequence", [f64(4, 3, 2), np.array([2, 4, 1], np.int32)], attrs={"seq_dim": 0, "batch_dim": 1},
         ref=lambda x, n: _reverse_sequence_ref(x, n, 0, 1), id="ReverseSequence-batch-after-seq"),
    Case("TopKV2", [_ties, np.int32(3)], ref=_top_k_ref, const_inputs=[1]),
    Case("TopKV2", [f32(2, 3, 6), np.int32(6)], ref=_top_k_ref, const_inputs=[1], id="TopKV2-all"),
    Case("TopKV2", [i32(4, 5), np.int64(2)], attrs={"index_type": "int64"}, const_inputs=[1],
         ref=lambda x, k: [a.astype(t) for a, t in zip(_top_k_ref(x, k), (np.int32, np.int64))], id="TopKV2-int"),
    Case("Where", [bools(3, 4)], ref=lambda x: np.argwhere(x).astype(np.int64), exact_shape=False),
    Case("Where", [f32(5) * (f32(5) > 0)], ref=lambda x: np.argwhere(x != 0).astype(np.int64), exact_shape=False,
         id="Where-float"),
    Case("Unique", [np.array([4, 1, 4, 7, 1, 0], np.int32)], ref=_unique_ref, exact_shape=False),
    Case("UniqueWithCounts", [np.array([4, 1, 4, 7, 1, 4], np.int64)], attrs={"out_idx": "int64"}, exact_shape=False,
         ref=lambda x: [np.array([4, 1, 7], np.int64), np.array([0, 1, 0, 2, 1, 0], np.int64), np.array([3, 2, 1], np.int64)]),
    # A value equal to a boundary goes above it; 0.1 is above the float32 boundary 0.1 in float64.
    Case("Bucketize", [np.array([[-1.0, 0.0, 0.5], [0.7, 3.0, 0.1]], np.float64)], attrs={"boundaries": [0.0, 0.1, 0.5, 1.0]},
         ref=lambda x: np.array([[0, 1, 3], [3, 4, 1]], np.int32)),
    Case("Bucketize", [np.array([-3, 0, 1, 5, 9], np.int64)], attrs={"boundaries": [0.0, 1.5, 5.0]},
         ref=lambda x: np.array([0, 1, 1, 3, 3], np.int32), id="Bucketize-int64"),
    Case("LowerBound", [np.array([[1.0, 3, 3, 7], [0, 1, 2, 3]]), np.array([[0.0, 3, 8], [2.5, -1, 3]])],
         ref=lambda s, v: np.array([[0, 1, 4], [3, 0, 3]], np.int32)),
    Case("UpperBound", [np.array([[1, 3, 3, 7]], np.int32), np.array([[0, 3, 8]], np.int32)], attrs={"out_type": "int64"},
         ref=lambda s, v: np.array([[0, 3, 4]], np.int64)),
    # NaN: TF's binary search compares with <, false for NaN (numpy puts NaN last); TF 2.21's
    # numbers (found by tf_fuzz_parity.py --family 4)
    *(Case(op, [np.array([[-1.0, 0, 0.5, 1], [-1, np.nan, 0.5, 1]], np.float32),
                np.array([[np.nan, np.inf, -np.inf, 0.5, -0.0]] * 2, np.float32)], id=f"{op}-nan",
           ref=lambda s, v, w=want: np.array(w, np.int32))
      for op, want in (("LowerBound", [[0, 4, 0, 2, 1], [0, 4, 0, 1, 1]]), ("UpperBound", [[4, 4, 0, 3, 2], [4, 4, 2, 3, 2]]))),
    Case("ListDiff", [np.array([1, 2, 3, 4, 1, 6], np.int64), np.array([3, 1, 9], np.int64)], exact_shape=False,
         ref=lambda x, y: [np.array([2, 4, 6], np.int64), np.array([1, 3, 5], np.int32)]),
    Case("ListDiff", [np.array([0.5, 1.5], np.float32), np.array([], np.float32)], attrs={"out_idx": "int64"},
         exact_shape=False, ref=lambda x, y: [x, np.array([0, 1], np.int64)], id="ListDiff-empty-y"),
    Case("Unique", [np.array([2.5, -1.0, 2.5], np.float64)], attrs={"out_idx": "int64"}, exact_shape=False,
         ref=lambda x: (np.array([2.5, -1.0]), np.array([0, 1, 0], np.int64)), id="Unique-float-int64"),
    Case("BroadcastArgs", [np.array([2, 1, 3], np.int32), np.array([4, 1], np.int32)],
         ref=lambda a, c: np.array([2, 4, 3], np.int32), const_inputs=[0, 1]),
    Case("BroadcastArgs", [np.array([0, 1], np.int64), np.array([1], np.int64)],
         ref=lambda a, c: np.array([0, 1], np.int64), id="BroadcastArgs-empty-dim"),
    # ApproxTopK: TF's CPU kernel is the exact top k, along any dimension; min-k ascending.
    Case("ApproxTopK", [_ties], attrs={"k": 3}, ref=lambda x: _top_k_ref(x, 3)),
    Case("ApproxTopK", [np.array([[4.0, 1.0, 2.0], [0.5, 7.0, 7.0]], np.float32)], attrs={"k": 1, "reduction_dimension": 0},
         ref=lambda x: (np.array([[4.0, 7.0, 7.0]], np.float32), np.array([[0, 1, 1]], np.int32)), id="ApproxTopK-axis0"),
    Case("ApproxTopK", [np.array([3.0, -1.0, 2.0, -1.0], np.float16)], attrs={"k": 2, "is_max_k": False},
         ref=lambda x: (np.array([-1.0, -1.0], np.float16), np.array([1, 3], np.int32)), id="ApproxTopK-min-f16"),
]
