"""Cases for index_ops (UnravelIndex, NthElement), linalg_lstsq_ops (MatrixSolveLs) and
edit_distance_ops (EditDistance): values TensorFlow 2.21 gave for the same inputs (tf.raw_ops),
and numpy references on random inputs."""

import json
from pathlib import Path

import numpy as np

from tests.ops.harness import Case, f32, f64

_TF_LS = json.loads((Path(__file__).parent / "data" / "tf_matrix_solve_ls.json").read_text())["solve"]
_rng = np.random.default_rng(0)
LS_A = _rng.uniform(-1, 1, (2, 4, 3))
LS_B = _rng.uniform(-1, 1, (2, 4, 2))


def _lit(value, dtype=None):
    return lambda *_: np.asarray(value, dtype)


def _nth_ref(n, reverse=False):
    return lambda x, _n: np.sort(x, axis=-1)[..., x.shape[-1] - 1 - n if reverse else n]


_NTH = np.array([[3.0, 1.0, 4.0, 1.0, 5.0], [9.0, 2.0, 6.0, 5.0, 3.0]], np.float32)

CASES = [
    Case("UnravelIndex", [np.array([0, 5, 11, 7], np.int32), np.array([3, 4], np.int32)],
         _lit([[0, 1, 2, 1], [0, 1, 3, 3]], np.int32), const_inputs=[1]),
    Case("UnravelIndex", [np.int64(22), np.array([2, 3, 4], np.int64)], _lit([1, 2, 2], np.int64),
         attrs={"Tidx": "int64"}, const_inputs=[1], id="UnravelIndex-scalar"),
    # TF's kernel: C's / and % on a negative index (no error)
    Case("UnravelIndex", [np.array([-1], np.int32), np.array([3, 4], np.int32)], _lit([[0], [-1]], np.int32),
         const_inputs=[1], id="UnravelIndex-negative"),
    Case("NthElement", [_NTH, np.int32(1)], _lit([1.0, 3.0], np.float32), const_inputs=[1]),
    Case("NthElement", [_NTH, np.int32(1)], _lit([4.0, 6.0], np.float32), attrs={"reverse": True},
         const_inputs=[1], id="NthElement-reverse"),
    Case("NthElement", [f64(3, 2, 7), np.int32(6)], _nth_ref(6), const_inputs=[1], id="NthElement-last"),
    Case("NthElement", [np.array([[5, -3, 9, 0]], np.int32), np.int32(0)], _nth_ref(0, True),
         attrs={"reverse": True}, const_inputs=[1], id="NthElement-int"),
    *[Case("MatrixSolveLs", [LS_A if kind == "over" else np.swapaxes(LS_A, -1, -2),
                             LS_B if kind == "over" else LS_A[..., :3, :2], np.float64(l2)],
           _lit(_TF_LS[f"{kind}-fast={fast}-l2={l2}"]), attrs={"fast": fast == "True"}, rtol=1e-10, atol=1e-12,
           id=f"MatrixSolveLs-{kind}-fast={fast}-l2={l2}")
      for kind in ("over", "under") for fast in ("True", "False") for l2 in ("0.0", "0.5")],
    # rank deficient: only the slow path solves it (the minimum-norm solution, TF's value)
    Case("MatrixSolveLs", [np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]]), np.array([[1.0], [2.0], [2.0]]),
                           np.float64(0)], _lit([[0.15714285714285717], [0.31428571428571433]]),
         attrs={"fast": False}, rtol=1e-10, id="MatrixSolveLs-rank-deficient"),
    Case("MatrixSolveLs", [f32(5, 3), f32(5, 2), np.float64(0.1)],
         lambda a, b, l2: np.linalg.solve(a.T @ a + l2 * np.eye(3), a.T @ b).astype(np.float32), rtol=1e-4,
         atol=1e-5, id="MatrixSolveLs-float32"),
    Case("EditDistance", [np.array([[0, 0, 0], [0, 0, 1], [0, 0, 2], [1, 0, 0], [1, 1, 0]]), np.array([1, 2, 3, 4, 5]),
                          np.array([2, 2, 3]), np.array([[0, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0], [1, 0, 1], [1, 0, 2]]),
                          np.array([1, 3, 7, 4, 5, 6]), np.array([2, 2, 3])],
         _lit([[0.5, 1.0], [0.6666666865348816, np.inf]], np.float32), const_inputs=[2, 5]),
    Case("EditDistance", [np.array([[0, 0, 0], [0, 0, 1], [0, 0, 2], [1, 0, 0], [1, 1, 0]]), np.array([1, 2, 3, 4, 5]),
                          np.array([2, 2, 3]), np.array([[0, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0], [1, 0, 1], [1, 0, 2]]),
                          np.array([1, 3, 7, 4, 5, 6]), np.array([2, 2, 3])],
         _lit([[1.0, 1.0], [2.0, 1.0]], np.float32), attrs={"normalize": False}, const_inputs=[2, 5],
         id="EditDistance-counts"),
    # strings; the output takes the larger prefix shape; a position neither names stays 0
    Case("EditDistance", [np.array([[0, 0], [0, 1], [1, 0]]), np.array([b"a", b"b", b"x"], object), np.array([2, 2]),
                          np.array([[0, 0], [0, 1], [0, 2]]), np.array([b"a", b"c", b"d"], object), np.array([3, 3])],
         _lit([0.6666666865348816, np.inf, 0.0], np.float32), const_inputs=[2, 5], id="EditDistance-strings"),
    Case("EditDistance", [np.zeros((0, 2), np.int64), np.zeros(0, np.int32), np.array([2, 2]),
                          np.zeros((0, 2), np.int64), np.zeros(0, np.int32), np.array([2, 2])],
         _lit([0.0, 0.0], np.float32), const_inputs=[2, 5], id="EditDistance-empty"),
]  # fmt: skip
