"""Cases for sparse_segment_ops: SparseSegmentSum/Mean/SqrtN (and WithNumSegments) against a loop
over the segments, and their *Grad ops against the same loop run backwards."""

import numpy as np

from tests.ops.harness import Case, f32, f64

IDX = np.array([0, 2, 2, 1, 3], np.int32)
SEG = np.array([0, 0, 2, 2, 3], np.int32)  # segment 1 empty


def _ref(norm, n=None):
    def ref(data, idx, seg, *num):
        rows = int(num[0]) if num else int(seg[-1]) + 1
        out = np.zeros((rows, *data.shape[1:]), np.float64)
        for s in range(rows):
            members = [data[i] for i, t in zip(idx, seg) if t == s]
            if members:
                total = np.sum(members, axis=0, dtype=np.float64)
                out[s] = total if norm == "sum" else total / (len(members) if norm == "mean" else np.sqrt(len(members)))
        return out.astype(data.dtype)
    return ref


def _grad_ref(norm):
    def ref(grad, idx, seg, dim0):
        out = np.zeros((int(dim0), *grad.shape[1:]), np.float64)
        for i, s in zip(idx, seg):
            c = int((seg == s).sum())
            out[i] += grad[s] * (1.0 if norm == "sum" else 1 / c if norm == "mean" else 1 / np.sqrt(c))
        return out.astype(grad.dtype)
    return ref


CASES = [
    *(Case(f"SparseSegment{k}", [f64(4, 3), IDX, SEG], ref=_ref(n), const_inputs=[1, 2], rtol=1e-12)
      for k, n in (("Sum", "sum"), ("Mean", "mean"), ("SqrtN", "sqrtn"))),
    *(Case(f"SparseSegment{k}WithNumSegments", [f32(4, 2), IDX.astype(np.int64), SEG, np.int32(6)], ref=_ref(n),
           const_inputs=[1, 2, 3], rtol=1e-6) for k, n in (("Sum", "sum"), ("Mean", "mean"), ("SqrtN", "sqrtn"))),
    Case("SparseSegmentSum", [np.arange(8, dtype=np.int32).reshape(4, 2), IDX, SEG], ref=_ref("sum"), const_inputs=[1, 2],
         id="SparseSegmentSum-int32"),
    *(Case(f"SparseSegment{k}Grad", [f64(4, 3), IDX, SEG, np.int32(5)], ref=_grad_ref(n), const_inputs=[1, 2, 3], rtol=1e-12)
      for k, n in (("Sum", "sum"), ("Mean", "mean"), ("SqrtN", "sqrtn"))),
    # the V2 gradients (TF 2.21's, embedding_lookup_sparse's): the dense gradient's rows at the
    # distinct indices, and those indices
    *(Case(f"SparseSegment{k}GradV2", [f64(4, 3), IDX, SEG, np.int32(5)], const_inputs=[1, 2, 3], rtol=1e-12, exact_shape=False,
           ref=lambda g, i, s, d, n=n: (_grad_ref(n)(g, i, s, d)[np.unique(i)], np.unique(i)))
      for k, n in (("Sum", "sum"), ("Mean", "mean"), ("SqrtN", "sqrtn"))),
    Case("SparseSegmentMeanGradV2", [f32(2, 2), np.array([4, 1, 4], np.int64), np.array([0, 0, 1], np.int32), np.int32(5)],
         const_inputs=[1, 2, 3], exact_shape=False, id="SparseSegmentMeanGradV2-int64-literal",
         ref=lambda g, i, s, d: (np.stack([g[0] / 2, g[0] / 2 + g[1]]), np.array([1, 4], np.int64))),
]
