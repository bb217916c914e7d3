"""Array, manipulation and slicing gradients with an unknown batch dimension.

Each graph is built with ``shape=[None, ...]`` float placeholders (and, where listed, with shape,
axis, index or padding arguments fed at run time instead of constant), run with two batch sizes,
and compared with the same gradient built from fully known shapes and constant arguments, which
the finite-difference cases in grad_cases_array check.
"""

from __future__ import annotations

import numpy as np
import pytest

from specflow.graph import dtypes
from specflow.graph.builder import GraphBuilder
from specflow.runtime.session import Session
from specflow.train.gradients import gradients

RNG = np.random.default_rng(7)


def _grads(op, inputs, attrs, dynamic: bool, fed=()):
    """d sum(out ** 2 / 2) / d float inputs, summed over the op's float outputs (each output
    seeds its own gradient)."""
    b = GraphBuilder()
    names, feeds, xs = [], {}, []
    for i, x in enumerate(inputs):
        is_float = x.dtype.kind == "f"
        if not is_float and not (dynamic and i in fed):
            names.append(b.const(x, dtypes.as_dtype(x.dtype), name=f"c{i}"))
            continue
        shape = list(x.shape)
        if dynamic:
            shape = [None] + shape[1:] if is_float and shape else [None] * len(shape)
        ph = b.add_op("Placeholder", [], {"dtype": dtypes.as_dtype(x.dtype), "shape": shape}, name=f"x{i}").name
        names.append(ph)
        feeds[ph] = x
        if is_float:
            xs.append(ph)
    node = b.add_op(op, names, dict(attrs), name="op")
    outs = [node.name if k == 0 else f"{node.name}:{k}" for k in range(len(b.inferencer.specs[node.name]))]
    outs = [o for o in outs if b.spec(o).dtype.is_floating]
    grads = [g for g in gradients(b, outs, xs, grad_ys=outs) if g is not None]  # PadV2's constant_values
    with Session(b.graph_def) as sess:
        return sess.run(grads, feeds)


def _f(*shape):
    return RNG.uniform(-2.0, 2.0, size=shape)


def _v(*values, dtype=np.int32):
    return np.array(values, dtype)


# (id, op, inputs for batch size n, attrs, indices of non-float inputs fed at run time)
CASES = [
    ("Reshape", "Reshape", lambda n: [_f(n, 4), _v(-1, 2)], {}, [1]),
    ("ExpandDims", "ExpandDims", lambda n: [_f(n, 3), np.int32(-1)], {}, [1]),
    ("Squeeze", "Squeeze", lambda n: [_f(n, 1, 3)], {"squeeze_dims": [1]}, []),
    ("Transpose", "Transpose", lambda n: [_f(n, 3, 2), _v(2, 0, 1)], {}, []),
    ("Transpose-perm-fed", "Transpose", lambda n: [_f(n, 3, 2), _v(2, 0, 1)], {}, [1]),
    ("ConcatV2-axis1", "ConcatV2", lambda n: [_f(n, 3), _f(n, 2), np.int32(1)], {}, []),
    ("ConcatV2-batch-axis", "ConcatV2", lambda n: [_f(n, 3), _f(2, 3), np.int32(0)], {}, []),
    ("ConcatV2-axis-fed", "ConcatV2", lambda n: [_f(n, 3), _f(n, 2), np.int64(-1)], {}, [2]),
    ("Split", "Split", lambda n: [np.int32(1), _f(n, 4)], {"num_split": 2}, []),
    ("SplitV", "SplitV", lambda n: [_f(n, 5), _v(2, -1), np.int32(1)], {"num_split": 2}, [1]),
    ("Pack", "Pack", lambda n: [_f(n, 2), _f(n, 2)], {"axis": 1}, []),
    ("Unpack", "Unpack", lambda n: [_f(n, 3)], {"num": 3, "axis": 1}, []),
    ("Tile", "Tile", lambda n: [_f(n, 3), _v(2, 1)], {}, []),
    ("Tile-multiples-fed", "Tile", lambda n: [_f(n, 3), _v(2, 3, dtype=np.int64)], {}, [1]),
    ("Pad", "Pad", lambda n: [_f(n, 3), _v(1, 0, 2, 1).reshape(2, 2)], {}, []),
    ("Pad-paddings-fed", "PadV2", lambda n: [_f(n, 3), _v(1, 0, 2, 1).reshape(2, 2), np.float64(0.0)], {}, [1]),
    ("MirrorPad", "MirrorPad", lambda n: [_f(n, 3), _v(1, 1, 2, 0).reshape(2, 2)], {"mode": "SYMMETRIC"}, [1]),
    ("BroadcastTo", "BroadcastTo", lambda n: [_f(n, 1, 4), _v(n, 3, 4)], {}, [1]),
    ("Fill", "Fill", lambda n: [_v(n, 3), np.float64(0.7)], {}, [0]),
    ("GatherV2", "GatherV2", lambda n: [_f(n, 3), _v(0, 1, 0), np.int32(0)], {}, [1]),
    ("GatherV2-axis1", "GatherV2", lambda n: [_f(n, 3), _v(2, 0, 2), np.int32(1)], {}, []),
    ("GatherV2-batch", "GatherV2", lambda n: [_f(n, 3, 2), RNG.integers(0, 3, (n, 2)).astype(np.int32), np.int32(1)],
     {"batch_dims": 1}, [1]),
    ("GatherV2-batch-axis2", "GatherV2", lambda n: [_f(n, 3, 2), RNG.integers(0, 2, (n, 4)), np.int32(2)],
     {"batch_dims": 1}, [1]),
    ("Slice", "Slice", lambda n: [_f(n, 4), _v(0, 1), _v(-1, 2)], {}, []),
    ("Slice-begin-fed", "Slice", lambda n: [_f(n, 4), _v(1, 1), _v(-1, 2)], {}, [1]),
    ("StridedSlice", "StridedSlice", lambda n: [_f(n, 4), _v(0, 1), _v(0, 3), _v(1, 1)],
     {"begin_mask": 1, "end_mask": 1}, []),
    ("StridedSlice-fed", "StridedSlice", lambda n: [_f(n, 4), _v(1, 3), _v(0, 0), _v(1, -2)],
     {"end_mask": 3}, [1, 2, 3]),
    ("UnsortedSegmentSum", "UnsortedSegmentSum",
     lambda n: [_f(n, 3), RNG.integers(-1, 4, n).astype(np.int32), np.int32(4)], {}, [1]),
]


def check_unknown_batch(case, tol: float) -> None:
    """A case's gradients with an unknown batch (and its ``fed`` inputs fed) equal the static ones,
    for two batch sizes."""
    _, op, make_inputs, attrs, fed = case
    for n in (2, 3):
        inputs = make_inputs(n)
        want = _grads(op, inputs, attrs, dynamic=False)
        got = _grads(op, inputs, attrs, dynamic=True, fed=fed)
        assert len(got) == len(want) > 0
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gradient_with_unknown_batch(case):
    check_unknown_batch(case, 1e-12)
