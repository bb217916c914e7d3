"""Cases for set_ops against Python sets, row by row: the result rows sorted and laid out as a
sparse tensor as tf.sets returns them; SetSize counts distinct values per row."""

import numpy as np

from tests.ops.harness import Case

_A = np.array([[[1, 2, 2, 5], [3, 3, 1, 0]], [[7, 8, 9, 1], [0, 0, 0, 0]]], np.int32)
_B = np.array([[[2, 5, 6], [0, 4, 4]], [[1, 1, 1], [0, 2, 3]]], np.int32)
_PY = {"a-b": lambda a, b: a - b, "b-a": lambda a, b: b - a, "intersection": lambda a, b: a & b,
       "union": lambda a, b: a | b}  # fmt: skip


def _set_ref(operation):
    def ref(a, b):
        rows = {pos: sorted(_PY[operation](set(a[pos].tolist()), set(b[pos].tolist()))) for pos in np.ndindex(a.shape[:-1])}
        idx = [(*pos, j) for pos, row in rows.items() for j in range(len(row))]
        vals = [v for row in rows.values() for v in row]
        width = max(len(r) for r in rows.values())
        return (np.array(idx, np.int64).reshape(-1, a.ndim), np.array(vals, a.dtype),
                np.array([*a.shape[:-1], width], np.int64))  # fmt: skip

    return ref


def _size_ref(idx, vals, shape):
    out = np.zeros(shape[:-1], np.int32)
    for pos in np.ndindex(*shape[:-1]):
        out[pos] = len({v for i, v in zip(idx.tolist(), vals.tolist()) if tuple(i[:-1]) == pos})
    return out


_SIDX = np.array([[0, 0], [0, 1], [0, 2], [1, 0], [2, 1], [2, 3]], np.int64)

CASES = [
    *(Case("DenseToDenseSetOperation", [_A, _B], attrs={"set_operation": op}, ref=_set_ref(op), exact_shape=False,
           id=f"DenseToDenseSetOperation-{op}") for op in _PY),
    Case("DenseToDenseSetOperation", [np.array([[b"a", b"b"], [b"c", b"c"]], object),
                                      np.array([[b"b", b"z"], [b"c", b"d"]], object)],
         attrs={"set_operation": "union"}, ref=_set_ref("union"), exact_shape=False, id="DenseToDenseSetOperation-strings"),
    Case("SetSize", [_SIDX, np.array([5, 5, 6, 1, 7, 8], np.int32), np.array([3, 4], np.int64)], const_inputs=[2],
         ref=_size_ref),
]  # fmt: skip
