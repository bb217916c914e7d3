"""TensorList gradients (specflow/ops/list_ops.py, TF's list_ops.py rules) against central finite
differences: a list's gradient is a list of its elements' gradients, built by the same ops."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.graph import dtypes
from specflow.graph.builder import GraphBuilder
from specflow.runtime.session import Session
from specflow.train.gradients import gradients

F64 = dtypes.float64
RNG = np.random.default_rng(7)
X = RNG.uniform(-2, 2, (3, 2))
Y = RNG.uniform(-2, 2, (2,))


def _shape(b, dims):
    return b.const(np.array(dims, np.int32), name="shape")


def from_tensor_get_item(b, x, y):  # row 1 of x, times y
    lst = b.add_op("TensorListFromTensor", [x, _shape(b, [2])], {"element_dtype": F64}).name
    row = b.add_op("TensorListGetItem", [lst, b.const(np.int32(1)), _shape(b, [2])], {"element_dtype": F64}).name
    return b.add_op("Mul", [row, y]).name


def from_tensor_stack(b, x, y):
    lst = b.add_op("TensorListFromTensor", [x, _shape(b, [2])], {"element_dtype": F64}).name
    return b.add_op("TensorListStack", [lst, _shape(b, [2])], {"element_dtype": F64, "num_elements": 3}).name


def reserve_set_stack(b, x, y):  # [y, x[0] * y, unset] stacked: element 0 overwritten once
    lst = b.add_op("TensorListReserve", [_shape(b, [2]), b.const(np.int32(3))], {"element_dtype": F64}).name
    row0 = b.add_op("StridedSlice", [x, b.const(np.array([0, 0], np.int32)), b.const(np.array([1, 2], np.int32)),
                                     b.const(np.array([1, 1], np.int32))], {"shrink_axis_mask": 1}).name
    lst = b.add_op("TensorListSetItem", [lst, b.const(np.int32(0)), row0], {"element_dtype": F64}).name
    lst = b.add_op("TensorListSetItem", [lst, b.const(np.int32(0)), y], {"element_dtype": F64}).name
    lst = b.add_op("TensorListSetItem", [lst, b.const(np.int32(1)), b.add_op("Mul", [row0, y]).name],
                   {"element_dtype": F64}).name
    return b.add_op("TensorListStack", [lst, _shape(b, [2])], {"element_dtype": F64, "num_elements": 3}).name


def push_pop(b, x, y):  # push x's rows and y, pop y back: stack(rows) + popped * 3
    lst = b.add_op("TensorListFromTensor", [x, _shape(b, [2])], {"element_dtype": F64}).name
    lst = b.add_op("TensorListPushBack", [lst, y], {"element_dtype": F64}).name
    popped = b.add_op("TensorListPopBack", [lst, _shape(b, [2])], {"element_dtype": F64})
    rows = b.add_op("TensorListStack", [popped.name, _shape(b, [2])], {"element_dtype": F64, "num_elements": 3}).name
    return b.add_op("AddV2", [rows, b.add_op("Mul", [f"{popped.name}:1", b.const(np.float64(3.0), F64)]).name]).name


def popped_only(b, x, y):  # the popped element alone: the list's own gradient is None (TF: empty list)
    lst = b.add_op("TensorListFromTensor", [x, _shape(b, [2])], {"element_dtype": F64}).name
    lst = b.add_op("TensorListPushBack", [lst, y], {"element_dtype": F64}).name
    popped = b.add_op("TensorListPopBack", [lst, _shape(b, [2])], {"element_dtype": F64})
    return b.add_op("Mul", [f"{popped.name}:1", y]).name


def resize_stack(b, x, y):  # x's rows grown to 4 (an unset row of zeros), then cut to 2, each stacked
    lst = b.add_op("TensorListFromTensor", [x, _shape(b, [2])], {"element_dtype": F64}).name
    grown = b.add_op("TensorListResize", [lst, b.const(np.int32(4))]).name
    cut = b.add_op("TensorListResize", [grown, b.const(np.int32(2))]).name
    big = b.add_op("TensorListStack", [grown, _shape(b, [2])], {"element_dtype": F64, "num_elements": 4}).name
    small = b.add_op("TensorListStack", [cut, _shape(b, [2])], {"element_dtype": F64, "num_elements": 2}).name
    return b.add_op("AddV2", [b.add_op("Sum", [big, b.const(np.int32(0))]).name,
                              b.add_op("Mul", [b.add_op("Sum", [small, b.const(np.int32(0))]).name, y]).name]).name


def scatter_gather(b, x, y):  # x's rows scattered to [2, 0, 1], rows 1 and 2 gathered; y scattered over row 0
    lst = b.add_op("TensorListReserve", [_shape(b, [2]), b.const(np.int32(3))], {"element_dtype": F64}).name
    lst = b.add_op("TensorListScatterIntoExistingList", [lst, x, b.const(np.array([2, 0, 1], np.int32))], {"element_dtype": F64}).name
    y2 = b.add_op("ExpandDims", [b.add_op("Mul", [y, y]).name, b.const(np.int32(0))]).name
    lst = b.add_op("TensorListScatterIntoExistingList", [lst, y2, b.const(np.array([0], np.int32))], {"element_dtype": F64}).name
    return b.add_op("TensorListGather", [lst, b.const(np.array([1, 2, 0], np.int32)), _shape(b, [2])], {"element_dtype": F64}).name


def split_concat(b, x, y):  # x's rows split 1, 0, 2; y one more row; an unset piece of 2 rows; joined (6 rows)
    rows = b.add_op("Reshape", [x, b.const(np.array([3, 2], np.int32))]).name
    lst = b.add_op("TensorListSplit", [rows, _shape(b, [-1, 2]), b.const(np.array([1, 0, 2], np.int64))],
                   {"element_dtype": F64}).name
    lst = b.add_op("TensorListResize", [lst, b.const(np.int32(5))]).name
    lst = b.add_op("TensorListSetItem", [lst, b.const(np.int32(3)), b.add_op("ExpandDims", [y, b.const(np.int32(0))]).name],
                   {"element_dtype": F64}).name
    joined = b.add_op("TensorListConcatV2", [lst, _shape(b, [-1, 2]), b.const(np.array([0, 0, 0, 0, 2], np.int64))],
                      {"element_dtype": F64})
    weighted = b.add_op("Mul", [joined.name, b.add_op("Sin", [joined.name]).name]).name
    return b.add_op("Sum", [b.add_op("Mul", [weighted, b.const(np.arange(1.0, 7.0).reshape(6, 1), F64)]).name,
                            b.const(np.int32(0))]).name


@pytest.mark.parametrize("build", [from_tensor_get_item, from_tensor_stack, reserve_set_stack, push_pop, popped_only,
                                   resize_stack, scatter_gather, split_concat])
def test_list_gradients_match_finite_differences(build):
    b = GraphBuilder()
    x = b.add_op("Placeholder", attrs={"dtype": F64, "shape": list(X.shape)}, name="x").name
    y = b.add_op("Placeholder", attrs={"dtype": F64, "shape": list(Y.shape)}, name="y").name
    out = build(b, x, y)
    shape = b.spec(out).shape.as_list()
    w = b.const(np.linspace(0.5, 1.5, int(np.prod(shape))).reshape(shape), name="w")
    loss = b.add_op("Sum", [b.add_op("Mul", [out, w]).name, b.const(np.arange(len(shape), dtype=np.int32))]).name
    grads = gradients(b, [loss], [x, y])
    feeds = {x: X, y: Y}
    with Session(b.graph_def) as s:
        got = s.run([g for g in grads if g is not None], feeds)
        for g, (name, value) in zip(got, [(n, v) for (n, v), gr in zip(feeds.items(), grads) if gr is not None]):
            want = np.zeros_like(value)
            for idx in np.ndindex(value.shape):
                hi, lo = value.copy(), value.copy()
                hi[idx] += 1e-6
                lo[idx] -= 1e-6
                want[idx] = (s.run(loss, {**feeds, name: hi}) - s.run(loss, {**feeds, name: lo})) / 2e-6
            np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-8, err_msg=f"d loss / d {name}")
