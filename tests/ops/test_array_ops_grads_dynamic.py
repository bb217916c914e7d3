"""Gradients of the gather/scatter, segment, reorder, selection and linalg ops with an unknown
batch dimension (and index arguments fed at run time), against the same gradient built from known
shapes, which the finite-difference cases check. The harness is test_array_grads_dynamic's."""

from __future__ import annotations

import numpy as np
import pytest

from tests.ops.test_array_grads_dynamic import _f, _v, check_unknown_batch

RNG = np.random.default_rng(11)


def _spd(n):
    a = RNG.uniform(-1, 1, size=(n, 3, 3))
    return a @ np.swapaxes(a, -1, -2) + 3 * np.eye(3)


# (id, op, inputs for batch size n, attrs, indices of non-float inputs fed at run time)
CASES = [
    ("Gather", "Gather", lambda n: [_f(n, 3), _v(0, 1, 0)], {}, [1]),
    ("GatherNd", "GatherNd", lambda n: [_f(n, 3, 2), _v(1, 2, 0, 0).reshape(2, 2)], {}, [1]),
    ("GatherNd-int16", "GatherNd", lambda n: [_f(n, 3), _v(1, 2, 0, 0, dtype=np.int16).reshape(2, 2)], {}, []),
    ("ScatterNd", "ScatterNd", lambda n: [_v(*range(n)).reshape(n, 1), _f(n, 2), _v(n + 1, 2)], {}, [0, 2]),
    ("TensorScatterUpdate", "TensorScatterUpdate", lambda n: [_f(n, 3), _v(0, 2, 1, 1).reshape(2, 2), _f(2)], {}, [1]),
    ("TensorScatterAdd", "TensorScatterAdd", lambda n: [_f(n, 3), _v(0, 0).reshape(2, 1), _f(2, 3)], {}, [1]),
    ("SegmentSum", "SegmentSum", lambda n: [_f(n, 2), np.sort(RNG.integers(0, 3, n)).astype(np.int32)], {}, [1]),
    ("UnsortedSegmentMax", "UnsortedSegmentMax", lambda n: [_f(n, 3), RNG.integers(-1, 3, n).astype(np.int32),
                                                            np.int32(3)], {}, [1]),  # fmt: skip
    ("UnsortedSegmentProd", "UnsortedSegmentProd", lambda n: [_f(n, 3), RNG.integers(-1, 3, n).astype(np.int32),
                                                              np.int32(3)], {}, [1]),  # fmt: skip
    ("DynamicPartition", "DynamicPartition", lambda n: [_f(n, 2), RNG.integers(0, 2, n).astype(np.int32)],
     {"num_partitions": 2}, [1]),
    ("DynamicStitch", "DynamicStitch", lambda n: [_v(*range(0, 2 * n, 2)), _v(*range(1, 2 * n, 2)), _f(n, 2), _f(n, 2)],
     {}, [0, 1]),
    ("ReverseV2", "ReverseV2", lambda n: [_f(n, 3), _v(0, 1)], {}, [1]),
    ("Roll", "Roll", lambda n: [_f(n, 3), _v(1, 2), _v(0, 1)], {}, [1, 2]),
    ("ReverseSequence", "ReverseSequence", lambda n: [_f(n, 4), RNG.integers(0, 5, n)], {"seq_dim": 1}, [1]),
    ("TopKV2", "TopKV2", lambda n: [_f(n, 5), np.int32(2)], {}, [1]),
    ("Einsum", "Einsum", lambda n: [_f(n, 3), _f(3, 2)], {"equation": "bi,ij->bj"}, []),
    ("Einsum-summed", "Einsum", lambda n: [_f(n, 3, 2)], {"equation": "bij->bi"}, []),
    ("Einsum-summed-batch", "Einsum", lambda n: [_f(n, 3)], {"equation": "ib->b"}, []),
    ("Einsum-trace", "Einsum", lambda n: [_f(n, 3, 3)], {"equation": "bii->b"}, []),
    ("Einsum-ellipsis", "Einsum", lambda n: [_f(n, 2, 3), _f(3, 2)], {"equation": "...ij,jk->...ik"}, []),
    ("BatchMatMul", "BatchMatMul", lambda n: [_f(n, 2, 3), _f(n, 3, 2)], {}, []),
    ("MatrixInverse", "MatrixInverse", lambda n: [_spd(n)], {}, []),
    ("Cholesky", "Cholesky", lambda n: [_spd(n)], {}, []),
    ("MatrixDiagPartV3", "MatrixDiagPartV3", lambda n: [_f(n, 3, 4), _v(-1, 1), np.float64(0)], {}, []),
    ("Cross", "Cross", lambda n: [_f(n, 3), _f(n, 3)], {}, []),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gradient_with_unknown_batch(case):
    check_unknown_batch(case, 1e-10)
