"""The one-line errors of the older forms, InplaceUpdate/Add/Sub, UniqueV2 and
TensorStridedSliceUpdate where TF raises (TF 2.21's messages, in specflow's words); a TF GraphDef
holding old forms binding and running; TensorStridedSliceUpdate's gradient against TF's."""

import numpy as np
import pytest

from specflow.errors import OpError, ShapeError
from specflow.ops.eval import evaluate_op


def test_errors_name_what_is_wrong():
    x = np.zeros((2, 3, 4), np.float32)
    with pytest.raises((OpError, ShapeError), match=r"dims must have one value per dimension of tensor \(3\), got 2"):
        evaluate_op("Reverse", [x, np.array([True, False])])
    with pytest.raises((OpError, ShapeError), match=r"x and y must be of the same shape"):
        evaluate_op("ApproximateEqual", [np.array([1.0, 2.0]), np.array([1.0])])
    for value, what in ((-np.inf, "-Inf"), (np.nan, "NaN"), (np.inf, r"\+Inf")):
        with pytest.raises(OpError, match=f"here : Tensor had {what} values"):
            evaluate_op("CheckNumericsV2", [np.array([1.0, value])], message="here")
    with pytest.raises(OpError, match=r"here : Tensor had NaN and -Inf values"):
        evaluate_op("CheckNumericsV2", [np.array([np.nan, -np.inf])], message="here")


def test_a_tensorflow_graph_def_with_old_forms_binds_and_runs():
    from tensorboard.compat.proto import graph_pb2, types_pb2
    from tensorboard.util import tensor_util

    from specflow.io.tf_graph import from_tf_graph_def
    from specflow.runtime.session import Session

    g = graph_pb2.GraphDef()

    def node(name, op, inputs=(), **attrs):
        n = g.node.add(name=name, op=op, input=list(inputs))
        for k, v in attrs.items():
            n.attr[k].CopyFrom(v)

    from tensorboard.compat.proto import attr_value_pb2 as av

    f32 = av.AttrValue(type=types_pb2.DT_FLOAT)
    node("x", "Placeholder", dtype=f32)
    node("dims", "Const", dtype=av.AttrValue(type=types_pb2.DT_BOOL),
         value=av.AttrValue(tensor=tensor_util.make_tensor_proto(np.array([False, True]))))
    node("axis", "Const", dtype=av.AttrValue(type=types_pb2.DT_INT32),
         value=av.AttrValue(tensor=tensor_util.make_tensor_proto(np.int32(0))))
    node("rev", "Reverse", ["x", "dims"], T=f32)
    node("cat", "Concat", ["axis", "x", "rev"], T=f32, N=av.AttrValue(i=2))
    node("top", "TopK", ["cat"], T=f32, k=av.AttrValue(i=1))
    graph = from_tf_graph_def(g)
    x = np.array([[1.0, 5.0, 2.0], [7.0, 3.0, 4.0]], np.float32)
    with Session(graph) as s:
        cat, top = s.run(["cat:0", "top:0"], {"x:0": x})
    np.testing.assert_array_equal(cat, np.concatenate([x, x[:, ::-1]]))
    np.testing.assert_array_equal(top, [[5], [7], [5], [7]])


def test_inplace_and_unique_errors():
    x = np.zeros((4, 3), np.float32)
    with pytest.raises(OpError, match=r"i\[0\] = 4 is not a row of x \(x has 4\)"):  # TF writes out of bounds
        evaluate_op("InplaceUpdate", [x, np.array([4], np.int32), np.ones((1, 3), np.float32)])
    with pytest.raises((OpError, ShapeError), match=r"v must be \[len\(i\)\] \+ x.shape\[1:\]"):
        evaluate_op("InplaceAdd", [x, np.array([1], np.int32), np.ones((1, 2), np.float32)])
    with pytest.raises((OpError, ShapeError), match="x must be a vector when axis is empty"):
        evaluate_op("UniqueV2", [x, np.zeros(0, np.int64)])
    with pytest.raises((OpError, ShapeError), match="out of range"):
        evaluate_op("UniqueV2", [x, np.array([2], np.int64)])


def test_tensor_strided_slice_update_gradient_is_tensorflows():
    from specflow.graph.builder import GraphBuilder
    from specflow.runtime.session import Session
    from specflow.train.gradients import gradients

    b = GraphBuilder()
    x = b.add_op("Placeholder", attrs={"dtype": "float64", "shape": [4, 6]}, name="x").name
    v = b.add_op("Placeholder", attrs={"dtype": "float64", "shape": [2, 3]}, name="v").name
    spec = [b.const(np.array(s, np.int32)) for s in ([1, 0], [3, 6], [1, 2])]
    y = b.add_op("TensorStridedSliceUpdate", [x, *spec, v]).name
    loss = b.add_op("Sum", [b.add_op("Mul", [y, b.const(np.arange(24.0).reshape(4, 6))]).name,
                            b.const(np.array([0, 1], np.int32))]).name  # fmt: skip
    gx, gv = gradients(b, [loss], [x, v])
    with Session(b.graph_def) as s:
        got_x, got_v = s.run([gx, gv], {x: np.zeros((4, 6)), v: np.ones((2, 3))})
    # TF 2.21's GradientTape values
    np.testing.assert_array_equal(got_x, [[0, 1, 2, 3, 4, 5], [0, 7, 0, 9, 0, 11], [0, 13, 0, 15, 0, 17],
                                          [18, 19, 20, 21, 22, 23]])  # fmt: skip
    np.testing.assert_array_equal(got_v, [[6, 8, 10], [12, 14, 16]])
    with pytest.raises((OpError, ShapeError), match=r"value of shape \[3, 2\] does not broadcast to the slice's shape \[4, 2\]"):
        evaluate_op("TensorStridedSliceUpdate", [np.zeros((4, 6), np.float32), *(np.array(s, np.int32) for s in
                    ([0, 1], [4, 3], [1, 1])), np.ones((3, 2), np.float32)])  # fmt: skip
