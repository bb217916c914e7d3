"""Bad indices and bad arguments of the gather/scatter, segment, reorder and linalg ops: one-line
errors naming the node and the bad index (TF's InvalidArgument on CPU), statically where the
inputs are constant and at run time otherwise."""

import numpy as np
import pytest

from specflow.errors import OpError, RuntimeFailure, ShapeError
from specflow.graph.builder import GraphBuilder
from specflow.ops.eval import evaluate_op
from specflow.runtime.session import Session, SessionConfig


def _run_error(op, inputs, **attrs) -> str:
    with pytest.raises(OpError) as e:
        evaluate_op(op, [np.asarray(x) for x in inputs], name="the_op", **attrs)
    assert e.value.node == "the_op"
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def _static_error(op, inputs, **attrs) -> str:
    b = GraphBuilder()
    names = [b.const(np.asarray(x), name=f"c{i}") for i, x in enumerate(inputs)]
    with pytest.raises(ShapeError) as e:
        b.add_op(op, names, attrs, name="the_op")
    assert e.value.node == "the_op"
    return str(e.value)


@pytest.mark.parametrize(
    "op, inputs, message",
    [
        ("Gather", [np.zeros((3, 2)), np.array([[1, 0], [3, 1]])], "indices[1, 0] = 3 is not in [0, 3)"),
        ("Gather", [np.zeros(3), np.array([-1], np.int32)], "indices[0] = -1 is not in [0, 3)"),
        ("GatherNd", [np.zeros((3, 2)), np.array([[1, 0], [2, 2]])], "indices[1] = [2, 2] does not index into shape [3, 2]"),
        ("GatherNd", [np.zeros((3, 2)), np.array([[[0], [-1]]])], "indices[0, 1] = [-1] does not index into shape [3, 2]"),
        ("ScatterNd", [np.array([[1], [4]]), np.zeros(2), np.array([4])], "indices[1] = [4] does not index into shape [4]"),
        ("TensorScatterUpdate", [np.zeros((2, 2)), np.array([[0, 2]]), np.zeros(1)],
         "indices[0] = [0, 2] does not index into shape [2, 2]"),
        ("TensorScatterAdd", [np.zeros(3), np.array([[5]]), np.zeros(1)], "indices[0] = [5] does not index into shape [3]"),
        ("UnsortedSegmentMax", [np.zeros(3), np.array([0, 3, 1]), np.int32(3)], "segment_ids[1] = 3 is not in [0, 3)"),
        ("SegmentSum", [np.zeros(3), np.array([0, 2, 1])], "segment_ids[2] = 1 follows 2"),
        ("SegmentSum", [np.zeros(2), np.array([-1, 0])], "segment_ids[0] = -1 is negative"),
        ("DynamicPartition", [np.zeros(3), np.array([0, 2, 1], np.int32)], "partitions[1] = 2 is not in [0, 2)"),
        ("DynamicStitch", [np.array([0, -2], np.int32), np.zeros(2)], "indices[0][1] = -2 is negative"),
        ("ReverseSequence", [np.zeros((2, 3)), np.array([1, 4])], "seq_lengths[1] = 4 is not in [0, 3]"),
        ("Bincount", [np.array([1, -1], np.int32), np.int32(3), np.zeros(0, np.int32)], "must be non-negative"),
        ("Cholesky", [-np.eye(2)], "Cholesky decomposition was not successful"),
        ("Where", [np.float32(1.5)], "WhereOp: Unhandled input dimensions: 0"),
        ("MirrorPadGrad", [np.zeros((3, 0)), np.array([[1, 1], [0, 0]])],
         "Total paddings must be less than the input dimension size: 0 was not less than 0"),
        ("StatelessRandomUniformV2", [np.array([2], np.int32), np.array([1], np.uint64), np.zeros(2, np.uint64),
                                      np.int32(2)], "Unsupported algorithm id: 2"),
    ],
)
def test_run_time_errors_name_the_bad_value(op, inputs, message):
    attrs = {"DynamicPartition": {"num_partitions": 2}, "ReverseSequence": {"seq_dim": 1},
             "MirrorPadGrad": {"mode": "SYMMETRIC"}}.get(op, {})
    assert message in _run_error(op, inputs, **attrs)


@pytest.mark.parametrize(
    "op, inputs, attrs, message",
    [
        ("GatherNd", [np.zeros((3, 2)), np.zeros((1, 3), np.int32)], {}, "innermost dimension 3 is larger than the rank"),
        ("ScatterNd", [np.zeros((2, 1), np.int32), np.zeros(3), np.array([4], np.int32)], {},
         "updates must have shape indices.shape[:-1] + shape[K:] = [2]"),
        ("ReverseV2", [np.zeros((2, 2)), np.array([0, -2], np.int32)], {}, "axis 0 specified more than once"),
        ("Roll", [np.zeros(3), np.array([1, 2], np.int32), np.array([0], np.int32)], {}, "same size"),
        ("TopKV2", [np.zeros((2, 3)), np.int32(4)], {}, "at least k = 4 columns"),
        ("Cross", [np.zeros((2, 2)), np.zeros((2, 2))], {}, "innermost dimension must be 3"),
        ("MatrixInverse", [np.zeros((2, 3))], {}, "square matrices"),
        ("Einsum", [np.zeros((2, 3)), np.zeros((4, 5))], {"equation": "ij,jk->ik"}, "label 'j' has size 3 in one input and 4"),
        ("Einsum", [np.zeros((2, 3))], {"equation": "ij->k"}, "output label 'k' does not appear"),
        ("Einsum", [np.zeros((2, 3))], {"equation": "...j->j"}, "but the output has no '...'"),
        ("MatrixBandPart", [np.zeros((2, 3)), np.int64(3), np.int64(0)], {}, "num_lower must be negative or at most"),
        ("BatchMatMul", [np.zeros((2, 2, 3)), np.zeros((1, 3, 2))], {}, "BatchMatMul does not broadcast"),
        ("Reshape", [np.zeros((2, 4)), np.array([-1, 0], np.int32)], {}, "[8, 0] has 0 elements"),
    ],
)
def test_static_errors_name_the_node(op, inputs, attrs, message):
    assert message in _static_error(op, inputs, **attrs)


def test_a_bad_index_fed_at_run_time_fails_the_step_with_the_node_and_index():
    b = GraphBuilder()
    i = b.add_op("Placeholder", attrs={"dtype": "int32", "shape": [None, 2]}, name="i").name
    b.add_op("GatherNd", [b.const(np.zeros((3, 2), np.float32)), i], name="pick")
    with Session(b.graph_def, SessionConfig(devices="cpu:1")) as sess, pytest.raises(RuntimeFailure) as e:
        sess.run("pick", {i: np.array([[0, 1], [0, 7]], np.int32)})
    assert e.value.node == "pick"
    assert str(e.value).endswith("GatherNd on /job:localhost/replica:0/task:0/device:CPU:0: indices[1] = [0, 7] "
                                 "does not index into shape [3, 2]")
