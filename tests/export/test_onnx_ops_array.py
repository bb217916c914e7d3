"""ONNX mappings of specflow/export/onnx_ops_array.py: each graph runs through specflow's Session
and through onnxruntime (the harness of test_onnx_ops.py) and must agree."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.graph.dtypes import as_dtype
from tests.export.test_onnx_ops import Case, c, check_case, ints, op, rand

pytest.importorskip("onnxruntime")

X = rand(4, 3)
IDS = np.array([2, 0, -1, 2, 1], np.int32)


def _multi(b, p, name, n, inputs, **attrs):
    node = op(b, name, inputs, **attrs)
    return [f"{node}:{k}" if k else node for k in range(n)]


CASES: dict[str, Case] = {
    "SplitV": Case(lambda b, p: _multi(b, p, "SplitV", 3, [p["x"], c(b, np.array([1, -1, 2], np.int32)),
                                                            c(b, np.int32(1))], num_split=3), {"x": rand(2, 6)}),
    "Gather": Case(lambda b, p: op(b, "Gather", [c(b, rand(6, 3)), p["i"]]), {"i": np.array([[5, 0], [2, 2]], np.int32)}),
    "GatherNd": Case(lambda b, p: op(b, "GatherNd", [p["x"], c(b, np.array([[1, 0], [0, 2]], np.int32))]),
                     {"x": rand(2, 3, 4)}),
    "GatherNd-slices": Case(lambda b, p: op(b, "GatherNd", [c(b, rand(5, 2)), p["i"]]),
                            {"i": np.array([[[4], [1]]], np.int64)}, static={"i"}),
    "ScatterNd-duplicates": Case(lambda b, p: op(b, "ScatterNd", [c(b, np.array([[1], [3], [1]], np.int32)), p["u"],
                                                                  c(b, np.array([5, 2], np.int32))]),
                                 {"u": rand(3, 2)}, static={"u"}),
    "TensorScatterUpdate": Case(lambda b, p: op(b, "TensorScatterUpdate", [p["x"], c(b, np.array([[0, 1], [2, 0]], np.int32)),
                                                                           c(b, rand(2))]), {"x": X}),
    "TensorScatterAdd": Case(lambda b, p: op(b, "TensorScatterAdd", [p["x"], c(b, np.array([[3], [3]], np.int64)),
                                                                     c(b, rand(2, 3))]), {"x": X}),
    **{f"{o}": Case(lambda b, p, o=o: op(b, o, [p["x"], c(b, IDS), c(b, np.int32(4))]), {"x": rand(5, 2)}, static={"x"})
       for o in ("UnsortedSegmentMax", "UnsortedSegmentMin", "UnsortedSegmentProd")},
    "SegmentSum": Case(lambda b, p: op(b, "SegmentSum", [p["x"], c(b, np.array([0, 0, 2, 2, 3], np.int32))]),
                       {"x": rand(5, 3)}, static={"x"}),
    "ReverseV2": Case(lambda b, p: op(b, "ReverseV2", [p["x"], c(b, np.array([0, -1], np.int32))]), {"x": rand(2, 3, 4)}),
    "Roll": Case(lambda b, p: op(b, "Roll", [p["x"], c(b, np.array([1, -5, 2], np.int32)), c(b, np.array([1, 2, 1], np.int32))]),
                 {"x": rand(2, 3, 4)}),
    "ReverseSequence": Case(lambda b, p: op(b, "ReverseSequence", [p["x"], c(b, np.array([3, 1, 4], np.int64))],
                                            seq_dim=1, batch_dim=0), {"x": rand(3, 4, 2)}, static={"x"}),
    "TopKV2-ties": Case(lambda b, p: _multi(b, p, "TopKV2", 2, [p["x"], c(b, np.int32(3))]),
                        {"x": np.round(rand(4, 6))}),
    "TopKV2-int64": Case(lambda b, p: _multi(b, p, "TopKV2", 2, [p["x"], c(b, np.int32(2))], index_type=as_dtype("int64")),
                         {"x": X}),
    "Where": Case(lambda b, p: op(b, "Where", [p["x"]]), {"x": X > 0}),
    "Unique": Case(lambda b, p: _multi(b, p, "Unique", 2, [p["x"]]), {"x": np.array([4, 1, 4, 7, 1, 0], np.int32)}),
    "BroadcastArgs": Case(lambda b, p: op(b, "BroadcastArgs", [p["s"], c(b, np.array([4, 1], np.int32))]),
                          {"s": np.array([2, 1, 3], np.int32)}, static={"s"}),
    "BatchMatMul-adj": Case(lambda b, p: op(b, "BatchMatMul", [p["x"], p["y"]], adj_x=True, adj_y=True),
                            {"x": rand(2, 4, 3), "y": rand(2, 5, 4)}),
    "BatchMatMulV3": Case(lambda b, p: op(b, "BatchMatMulV3", [p["x"], c(b, ints(3, 2, dtype=np.int8))],
                                          Tout=as_dtype("float32")), {"x": rand(2, 4, 3)}),
    "Einsum": Case(lambda b, p: op(b, "Einsum", [p["x"], p["y"]], equation="bij,bjk->bik"),
                   {"x": rand(2, 3, 4), "y": rand(2, 4, 5)}),
    "Einsum-ellipsis": Case(lambda b, p: op(b, "Einsum", [p["x"], c(b, rand(4))], equation="...j,j->..."),
                            {"x": rand(2, 3, 4)}),
    "MatrixBandPart": Case(lambda b, p: op(b, "MatrixBandPart", [p["x"], c(b, np.int64(1)), c(b, np.int64(0))]),
                           {"x": rand(2, 4, 5)}),
    "MatrixBandPart-upper": Case(lambda b, p: op(b, "MatrixBandPart", [p["x"], c(b, np.int64(-1)), c(b, np.int64(2))]),
                                 {"x": rand(3, 5)}),
    "DynamicPartition": Case(lambda b, p: _multi(b, p, "DynamicPartition", 3, [p["x"], c(b, np.array([[1, 0], [2, 1]], np.int32))],
                                                 num_partitions=3), {"x": rand(2, 2, 3)}, static={"x"}),
    "DynamicStitch": Case(lambda b, p: op(b, "DynamicStitch", [c(b, np.array([0, 4], np.int32)),
                                                               c(b, np.array([[3], [1]], np.int32)), p["x"], p["y"]]),
                          {"x": rand(2, 3), "y": rand(2, 1, 3)}, static={"x", "y"}),
    "Bincount": Case(lambda b, p: op(b, "Bincount", [p["a"], c(b, np.int32(4)), c(b, np.zeros(0, np.int32))]),
                     {"a": np.array([1, 3, 1, 7, 0], np.int32)}),
    "Bincount-weights": Case(lambda b, p: op(b, "Bincount", [p["a"], c(b, np.int32(3)), p["w"]]),
                             {"a": np.array([[1, 2], [1, 5]], np.int32), "w": rand(2, 2)}, static={"a", "w"}),
    "Cross": Case(lambda b, p: op(b, "Cross", [p["x"], p["y"]]), {"x": rand(4, 3), "y": rand(4, 3)}),
    "Diag": Case(lambda b, p: op(b, "Diag", [p["x"]]), {"x": rand(2, 3)}),
    "DiagPart": Case(lambda b, p: op(b, "DiagPart", [p["x"]]), {"x": rand(2, 3, 2, 3)}, static={"x"}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_array_op_mapping_matches_specflow(name):
    check_case(CASES[name])
