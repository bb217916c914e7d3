"""Per-op ONNX mappings: small graphs run through specflow's Session and through onnxruntime.

Inputs are placeholders with a dynamic batch dim, so nothing folds away and each case exercises
its mapping; the reference is specflow's own kernels on the same graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from specflow.errors import ExportError
from specflow.export.onnx_export import to_onnx
from specflow.export.onnx_ops import MAPPINGS
from specflow.export.serving import ServingModel, SignatureIO
from specflow.graph.builder import GraphBuilder
from specflow.graph.dtypes import as_dtype
from specflow.graph.graph_def import GraphDef, NodeDef, canonical_tensor
from specflow.graph.shapes import Shape
from specflow.ops.registry import TensorSpec
from specflow.runtime.session import Session

ort = pytest.importorskip("onnxruntime")

RNG = np.random.default_rng(0)
F32 = as_dtype("float32")


def rand(*shape, lo=-2.0, hi=2.0, dtype=np.float32):
    return RNG.uniform(lo, hi, shape).astype(dtype)


def ints(*shape, lo=-9, hi=10, dtype=np.int32):
    return RNG.integers(lo, hi, shape).astype(dtype)


@dataclass
class Case:
    build: object  # (builder, {feed name: placeholder tensor}) -> output tensor or list of them
    feeds: dict[str, np.ndarray]
    dynamic: set[str] = field(default_factory=set)  # feeds whose every dim but the last is unknown
    static: set[str] = field(default_factory=set)  # feeds of fully static shape (others: dynamic batch)


def serving(b: GraphBuilder, inputs: dict[str, str], outputs: dict[str, str]) -> ServingModel:
    def io(d):
        return {a: (canonical_tensor(t), b.spec(t)) for a, t in d.items()}

    return ServingModel(b.graph_def, {"s": SignatureIO(io(inputs), io(outputs))}, {}, "")


def run_onnx_proto(proto, feeds):
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


def check_case(case: Case, atol=1e-5):
    b = GraphBuilder()
    phs = {}
    for name, value in case.feeds.items():
        dims = list(value.shape)
        if dims and name not in case.static:
            dims = [None] * (len(dims) - 1) + dims[-1:] if name in case.dynamic else [None] + dims[1:]
        phs[name] = b.add_op("Placeholder", [], {"dtype": as_dtype(value.dtype), "shape": dims}, name=name).name
    outs = case.build(b, phs)
    outs = {f"y{i}": t for i, t in enumerate(outs if isinstance(outs, list) else [outs])}
    got = run_onnx_proto(to_onnx(serving(b, phs, outs), "s"), case.feeds)
    with Session(b.graph_def) as sess:
        want = sess.run(outs, {phs[n]: v for n, v in case.feeds.items()})
    for alias, w in want.items():
        g = got[alias]
        assert g.dtype == w.dtype and g.shape == w.shape, (alias, g.dtype, g.shape, w.dtype, w.shape)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=atol)


def op(b, name, inputs, **attrs):
    return b.add_op(name, inputs, attrs).name


def gu_outputs(b, name, inputs, n, **attrs):
    node = b.add_op(name, inputs, attrs)
    return [node.name if k == 0 else f"{node.name}:{k}" for k in range(n)]


def c(b, value, dtype=None):
    return b.const(value, dtype)


def unary(name, lo=-2.0, hi=2.0, **attrs):
    return Case(lambda b, p: op(b, name, [p["x"]], **attrs), {"x": rand(3, 5, lo=lo, hi=hi)})


def binary(name, x, y):
    return Case(lambda b, p: op(b, name, [p["x"], p["y"]]), {"x": x, "y": y})


POSITIVE = {"Log", "Sqrt", "Rsqrt", "Reciprocal", "Log1p"}
UNARY = ["Relu", "Sigmoid", "Tanh", "Softplus", "Softsign", "Exp", "Neg", "Abs", "Floor", "Ceil", "Round",
         "Sign", "Sin", "Cos", "Elu", "Selu", "Relu6", "Square", "LeakyRelu", "Softmax", "LogSoftmax",
         "IsNan", "IsFinite", *sorted(POSITIVE)]  # fmt: skip
BINARY = ["Add", "AddV2", "Sub", "Mul", "Div", "RealDiv", "Maximum", "Minimum", "SquaredDifference",
          "FloorDiv", "FloorMod", "Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual"]  # fmt: skip
X4 = rand(3, 4)

CASES: dict[str, Case] = {
    **{u: unary(u, *((0.1, 3.0) if u in POSITIVE else (-8.0, 8.0))) for u in UNARY},
    **{f"{o}-broadcast": binary(o, X4, rand(4, lo=0.5, hi=2)) for o in BINARY},
    "Equal-ties": binary("Equal", np.round(X4), np.round(rand(4))),
    "Pow": binary("Pow", rand(3, 4, lo=0.5, hi=2), rand(4)),
    "Div-int": binary("Div", ints(3, 4), ints(4, lo=1, hi=5) * np.array([1, -1, 1, -1], np.int32)),
    "FloorMod-int": binary("FloorMod", ints(3, 4), ints(4, lo=1, hi=5) * np.array([1, -1, 1, -1], np.int32)),
    "FloorDiv-int": binary("FloorDiv", ints(3, 4), ints(4, lo=1, hi=5) * np.array([1, -1, 1, -1], np.int32)),
    "Add-int64": binary("AddV2", ints(3, 4, dtype=np.int64), ints(4, dtype=np.int64)),
    "LogicalAnd": binary("LogicalAnd", X4 > 0, rand(4) > 0),
    "LogicalOr": binary("LogicalOr", X4 > 0, rand(4) > 0),
    "LogicalNot": Case(lambda b, p: op(b, "LogicalNot", [p["x"]]), {"x": X4 > 0}),
    "AddN": Case(lambda b, p: op(b, "AddN", [p["x"], p["y"], p["x"]]), {"x": X4, "y": rand(3, 4)}),
    "Cast-float-int": Case(lambda b, p: op(b, "Cast", [p["x"]], DstT=as_dtype("int32")), {"x": X4 * 3}),
    "Cast-bool-float": Case(lambda b, p: op(b, "Cast", [p["x"]], DstT=F32), {"x": X4 > 0}),
    # trigonometric, hyperbolic and special functions (onnx_ops_math)
    **{u: unary(u, lo, hi) for u, lo, hi in [
        ("Tan", -1.2, 1.2), ("Asin", -0.9, 0.9), ("Acos", -0.9, 0.9), ("Atan", -8.0, 8.0), ("Sinh", -3.0, 3.0),
        ("Cosh", -3.0, 3.0), ("Asinh", -8.0, 8.0), ("Acosh", 1.1, 8.0), ("Atanh", -0.9, 0.9), ("Erf", -3.0, 3.0),
        ("Erfc", -3.0, 3.0), ("Expm1", -3.0, 3.0)]},
    "Rint-halves": Case(lambda b, p: op(b, "Rint", [p["x"]]), {"x": np.array([[0.5, 1.5, 2.5, -0.5, -1.5, 2.4]], np.float32)}),
    "IsInf": Case(lambda b, p: op(b, "IsInf", [p["x"]]), {"x": np.array([[0.0, np.inf, -np.inf, np.nan]], np.float32)}),
    "Atan2-quadrants": binary("Atan2", np.array([[1.0, 1.0, -1.0, -1.0, 0.5, -0.5, 0.0]], np.float32),
                              np.array([1.0, -1.0, 1.0, -1.0, 0.0, 0.0, -2.0], np.float32)),
    "DivNoNan-zeros": binary("DivNoNan", np.array([[1.0, 0.0, 6.0], [np.inf, np.nan, -3.0]], np.float32),
                             np.array([0.0, 0.0, 3.0], np.float32)),
    "MulNoNan-zeros": binary("MulNoNan", np.array([[np.inf, np.nan, 2.0]], np.float32), np.array([0.0, 0.0, 4.0], np.float32)),
    "Xlogy-zeros": binary("Xlogy", np.array([[0.0, 0.0, 2.0], [1.0, -1.0, 3.0]], np.float32), np.array([0.0, 5.0, 2.5], np.float32)),
    "Xdivy-zeros": binary("Xdivy", np.array([[0.0, 0.0, 2.0]], np.float32), np.array([0.0, 5.0, 2.5], np.float32)),
    "TruncateDiv-int": binary("TruncateDiv", np.array([[7, -7, 7, -7]], np.int32), np.array([2, 2, -2, -2], np.int32)),
    "TruncateMod-int": binary("TruncateMod", np.array([[7, -7, 7, -7]], np.int32), np.array([2, 2, -2, -2], np.int32)),
    "TruncateMod-float": binary("TruncateMod", np.array([[7.5, -7.5, 7.5, -7.5]], np.float32),
                                np.array([2.0, 2.0, -2.0, -2.0], np.float32)),
    "ClipByValue-scalars": Case(lambda b, p: op(b, "ClipByValue", [p["x"], c(b, np.float32(-0.5)), c(b, np.float32(0.5))]),
                                {"x": X4}),
    "ClipByValue-elementwise": Case(lambda b, p: op(b, "ClipByValue", [p["x"], p["lo"], p["hi"]]),
                                    {"x": X4, "lo": rand(3, 4, lo=-2, hi=0), "hi": rand(3, 4, lo=-1, hi=2)}),
    "LinSpace": Case(lambda b, p: op(b, "LinSpace", [p["a"], p["z"], c(b, np.int32(7))]),
                     {"a": np.array(-1.5, np.float32), "z": np.array(2.0, np.float32)}),
    "LinSpace-one": Case(lambda b, p: op(b, "LinSpace", [p["a"], p["z"], c(b, np.int64(1))]),
                         {"a": np.array(3.0, np.float32), "z": np.array(2.0, np.float32)}),
    # matrix products
    **{f"MatMul-{ta:d}{tb:d}": Case(
        lambda b, p, ta=ta, tb=tb: op(b, "MatMul", [p["x"], c(b, rand(*((5, 4) if tb else (4, 5))))],
                                      transpose_a=ta, transpose_b=tb),
        {"x": rand(4, 2) if ta else rand(2, 4)}) for ta in (False, True) for tb in (False, True)},
    "BatchMatMulV2-adj": Case(lambda b, p: op(b, "BatchMatMulV2", [p["x"], p["y"]], adj_x=True, adj_y=True),
                              {"x": rand(2, 4, 3), "y": rand(2, 5, 4)}),
    "BiasAdd-NHWC": Case(lambda b, p: op(b, "BiasAdd", [p["x"], c(b, rand(3))]), {"x": rand(2, 4, 4, 3)}),
    "BiasAdd-NCHW": Case(lambda b, p: op(b, "BiasAdd", [p["x"], c(b, rand(3))], data_format="NCHW"),
                         {"x": rand(2, 3, 4, 4)}),
    # reductions
    **{f"{r}-{keep:d}-{'_'.join(map(str, ax)) or 'none'}": Case(
        lambda b, p, r=r, ax=ax, keep=keep: op(b, r, [p["x"], c(b, np.array(ax, np.int32))], keep_dims=keep),
        {"x": rand(2, 3, 4, lo=0.5, hi=1.5)})
       for r in ("Mean", "Sum", "Max", "Min", "Prod") for keep in (False, True) for ax in ([1], [0, 2], [])},
    "Mean-scalar-axis": Case(lambda b, p: op(b, "Mean", [p["x"], c(b, -1)]), {"x": X4}),
    "Sum-runtime-axis": Case(lambda b, p: op(b, "Sum", [p["x"], p["a"]], keep_dims=True), {"x": X4, "a": np.array([1], np.int32)}, static={"a"}),
    "All": Case(lambda b, p: op(b, "All", [p["x"], c(b, [1])]), {"x": rand(4, 3) > -1.5}),
    "Any": Case(lambda b, p: op(b, "Any", [p["x"], c(b, [0])], keep_dims=True), {"x": rand(4, 3) > 1.5}),
    "ArgMax-int64": Case(lambda b, p: op(b, "ArgMax", [p["x"], c(b, 1)]), {"x": X4}),
    "ArgMax-ties": Case(lambda b, p: op(b, "ArgMax", [p["x"], c(b, 1)]), {"x": np.round(X4)}),
    "ArgMin-int32": Case(lambda b, p: op(b, "ArgMin", [p["x"], c(b, 0)], output_type=as_dtype("int32")), {"x": X4}),
    "L2Loss": Case(lambda b, p: op(b, "L2Loss", [p["x"]]), {"x": X4}),
    "Cumsum": Case(lambda b, p: op(b, "Cumsum", [p["x"], c(b, 1)]), {"x": X4}),
    "Cumsum-exclusive-reverse": Case(lambda b, p: op(b, "Cumsum", [p["x"], c(b, 1)], exclusive=True, reverse=True),
                                     {"x": X4}),
    # shapes and array manipulation
    "Reshape": Case(lambda b, p: op(b, "Reshape", [p["x"], c(b, [-1, 2, 2])]), {"x": X4}),
    "Reshape-runtime-shape": Case(lambda b, p: op(b, "Reshape", [p["x"], p["s"]]),
                                  {"x": X4, "s": np.array([2, 6], np.int32)}, static={"s"}),
    "ExpandDims-last": Case(lambda b, p: op(b, "ExpandDims", [p["x"], c(b, -1)]), {"x": X4}),
    "ExpandDims-first": Case(lambda b, p: op(b, "ExpandDims", [p["x"], c(b, 0)]), {"x": X4}),
    "Squeeze-dims": Case(lambda b, p: op(b, "Squeeze", [p["x"]], squeeze_dims=[1]), {"x": rand(3, 1, 4, 1)}),
    "Squeeze-all": Case(lambda b, p: op(b, "Squeeze", [p["x"]]), {"x": rand(3, 1, 4, 1)}, static={"x"}),
    "Transpose": Case(lambda b, p: op(b, "Transpose", [p["x"], c(b, [2, 0, 1])]), {"x": rand(2, 3, 4)}),
    "ConcatV2": Case(lambda b, p: op(b, "ConcatV2", [p["x"], p["y"], p["x"], c(b, -1)]), {"x": X4, "y": rand(3, 2)}),
    "Pack": Case(lambda b, p: op(b, "Pack", [p["x"], p["y"]], axis=1), {"x": X4, "y": rand(3, 4)}),
    "Pack-last": Case(lambda b, p: op(b, "Pack", [p["x"], p["y"]], axis=-1), {"x": X4, "y": rand(3, 4)}),
    "Unpack": Case(lambda b, p: [f"{op(b, 'Unpack', [p['x']], num=4, axis=1)}:{k}" for k in range(4)][::-1],
                   {"x": X4}),
    "Split": Case(lambda b, p: [f"{op(b, 'Split', [c(b, 1), p['x']], num_split=2)}:{k}" for k in range(2)],
                  {"x": X4}),
    "Shape": Case(lambda b, p: op(b, "Shape", [p["x"]]), {"x": X4}),
    "Shape-int64": Case(lambda b, p: op(b, "Shape", [p["x"]], out_type=as_dtype("int64")), {"x": X4}),
    "Size": Case(lambda b, p: op(b, "Size", [p["x"]]), {"x": X4}),
    "Rank": Case(lambda b, p: op(b, "Rank", [p["x"]]), {"x": X4}),
    "Fill": Case(lambda b, p: op(b, "Fill", [op(b, "Shape", [p["x"]]), p["v"]]), {"x": X4, "v": np.array(2.5, np.float32)}),
    "Range": Case(lambda b, p: op(b, "Range", [c(b, 1), p["n"], c(b, 3)]), {"n": np.array(11, np.int32)}),
    "Range-float": Case(lambda b, p: op(b, "Range", [c(b, 0.5), p["n"], c(b, 0.25)]), {"n": np.array(2.0, np.float32)}),
    "ZerosLike": Case(lambda b, p: op(b, "ZerosLike", [p["x"]]), {"x": X4}),
    "OnesLike": Case(lambda b, p: op(b, "OnesLike", [p["x"]]), {"x": ints(3, 4)}),
    "BroadcastTo": Case(lambda b, p: op(b, "BroadcastTo", [p["x"], c(b, [2, 3, 4])]), {"x": X4}),
    "Tile": Case(lambda b, p: op(b, "Tile", [p["x"], c(b, [2, 3])]), {"x": X4}),
    "GatherV2-axis0": Case(lambda b, p: op(b, "GatherV2", [c(b, rand(6, 3)), p["i"], c(b, 0)]),
                           {"i": np.array([[5, 0], [2, 2]], np.int32)}),
    "GatherV2-axis1": Case(lambda b, p: op(b, "GatherV2", [p["x"], c(b, np.array([3, 0], np.int64)), c(b, 1)]),
                           {"x": X4}),
    "Pad": Case(lambda b, p: op(b, "Pad", [p["x"], c(b, [[1, 0], [2, 3]])]), {"x": X4}),
    "Pad-runtime": Case(lambda b, p: op(b, "Pad", [p["x"], p["pads"]]),
                        {"x": X4, "pads": np.array([[0, 1], [1, 2]], np.int32)}),
    "PadV2": Case(lambda b, p: op(b, "PadV2", [p["x"], c(b, [[1, 1], [0, 2]]), c(b, np.float32(-7))]), {"x": X4}),
    "MirrorPad": Case(lambda b, p: op(b, "MirrorPad", [p["x"], c(b, [[1, 2], [2, 1]])], mode="REFLECT"), {"x": X4}),
    "Slice": Case(lambda b, p: op(b, "Slice", [p["x"], c(b, [1, 1]), c(b, [-1, 2])]), {"x": rand(4, 5)}),
    "Slice-runtime": Case(lambda b, p: op(b, "Slice", [p["x"], p["b"], p["s"]]),
                          {"x": rand(4, 5), "b": np.array([0, 2], np.int32), "s": np.array([2, -1], np.int32)}),
    "StridedSlice-masks": Case(lambda b, p: op(b, "StridedSlice", [p["x"], c(b, [1, 0, 3]), c(b, [0, 2, 0]),
                                                                    c(b, [1, 1, -1])],
                                               begin_mask=0b100, end_mask=0b101), {"x": rand(4, 3, 5)}),
    "StridedSlice-shrink": Case(lambda b, p: op(b, "StridedSlice", [p["x"], c(b, [0, -1]), c(b, [0, 0]), c(b, [1, 1])],
                                                begin_mask=1, end_mask=1, shrink_axis_mask=2), {"x": rand(4, 3)}),
    "StridedSlice-step2": Case(lambda b, p: op(b, "StridedSlice", [p["x"], c(b, [0, 1]), c(b, [0, 5]), c(b, [1, 2])],
                                               begin_mask=1, end_mask=1), {"x": rand(4, 6)}),
    "Select-vector-cond": Case(lambda b, p: op(b, "Select", [p["c"], p["x"], p["y"]]),
                               {"c": np.array([True, False, True]), "x": rand(3, 4), "y": rand(3, 4)}),
    "SelectV2-broadcast": Case(lambda b, p: op(b, "SelectV2", [p["c"], p["x"], c(b, np.float32(0))]),
                               {"c": rand(3, 4) > 0, "x": X4}),
    "SelectV2-fed-flag": Case(lambda b, p: op(b, "SelectV2", [p["t"], p["x"], op(b, "Neg", [p["x"]])]),
                              {"t": np.array(False), "x": X4}),
    "Identity-StopGradient": Case(lambda b, p: op(b, "StopGradient", [op(b, "Identity", [p["x"]])]), {"x": X4}),
    # neural-network ops
    **{f"Conv2D-{pad}-s{s}-d{d}{'-dyn' if dyn else ''}": Case(
        lambda b, p, pad=pad, s=s, d=d: op(b, "Conv2D", [p["x"], c(b, rand(3, 2, 3, 4))], strides=[1, s, s, 1],
                                           dilations=[1, d, d, 1], padding=pad),
        {"x": rand(2, 7, 6, 3)}, {"x"} if dyn else set())
       for pad, s, d, dyn in [("SAME", 2, 1, False), ("SAME", 1, 2, False), ("VALID", 2, 1, False),
                              ("VALID", 1, 2, False), ("SAME", 2, 1, True), ("SAME", 3, 1, True)]},
    "Conv2D-NCHW": Case(lambda b, p: op(b, "Conv2D", [p["x"], c(b, rand(3, 3, 3, 2))], strides=[1, 1, 2, 2],
                                        padding="SAME", data_format="NCHW"), {"x": rand(2, 3, 5, 6)}),
    "Conv2D-EXPLICIT": Case(lambda b, p: op(b, "Conv2D", [p["x"], c(b, rand(2, 2, 3, 2))], strides=[1, 1, 1, 1],
                                            padding="EXPLICIT", explicit_paddings=[0, 0, 1, 2, 0, 1, 0, 0]),
                            {"x": rand(2, 4, 4, 3)}),
    # Transposed convolution: constant sizes, and a run-time batch with constant trailing sizes
    # (as the conv2d_transpose layer builds them); SAME with stride 2 (odd and even sizes), VALID k < s.
    **{f"Conv2DBackpropInput-{pad}-s{s}-{size}{'-dynbatch' if dyn else ''}": Case(
        lambda b, p, pad=pad, s=s, size=size, k=k, dyn=dyn: op(
            b, "Conv2DBackpropInput",
            [op(b, "ConcatV2", [op(b, "StridedSlice", [op(b, "Shape", [p["x"]], out_type=as_dtype("int32")),
                                                      c(b, np.array([0], np.int32)), c(b, np.array([1], np.int32)),
                                                      c(b, np.array([1], np.int32))]),
                                c(b, np.array([size, size, 2], np.int32)), c(b, np.int32(0))])
             if dyn else c(b, np.array([2, size, size, 2], np.int32)),
             c(b, rand(k, k, 2, 3)), p["x"]], strides=[1, s, s, 1], padding=pad),
        {"x": rand(2, 3, 3, 3)})
       for pad, s, size, k, dyn in [("SAME", 2, 5, 3, False), ("SAME", 2, 6, 3, True), ("VALID", 2, 7, 3, False),
                                    ("VALID", 3, 9, 2, True)]},
    **{f"DepthwiseConv2dNative-{pad}-s{s}-d{d}{'-NCHW' if fmt == 'NCHW' else ''}": Case(
        lambda b, p, pad=pad, s=s, d=d, fmt=fmt: op(
            b, "DepthwiseConv2dNative", [p["x"], c(b, rand(3, 2, 3, 2))], padding=pad, data_format=fmt,
            strides=[1, s, s, 1] if fmt == "NHWC" else [1, 1, s, s],
            dilations=[1, d, d, 1] if fmt == "NHWC" else [1, 1, d, d]),
        {"x": rand(2, 7, 6, 3) if fmt == "NHWC" else rand(2, 3, 7, 6)})
       for pad, s, d, fmt in [("SAME", 2, 1, "NHWC"), ("VALID", 1, 2, "NHWC"), ("SAME", 1, 1, "NCHW")]},
    **{f"{bn}-inference-{fmt}": Case(
        lambda b, p, bn=bn, fmt=fmt: op(b, bn, [p["x"], *(c(b, v) for v in (rand(3), rand(3), rand(3),
                                                                          rand(3, lo=0.5)))],
                                        is_training=False, epsilon=0.01, data_format=fmt),
        {"x": rand(2, 4, 5, 3) if fmt == "NHWC" else rand(2, 3, 4, 5)})
       for bn in ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3") for fmt in ("NHWC", "NCHW")},
    **{f"{o}-{fmt}": Case(lambda b, p, o=o, fmt=fmt: op(b, o, [p["x"]], block_size=2, data_format=fmt),
                          {"x": rand(2, 4, 6, 8) if fmt == "NHWC" else rand(2, 8, 4, 6)})
       for o in ("SpaceToDepth", "DepthToSpace") for fmt in ("NHWC", "NCHW")},
    **{f"{o}-{flag or 'legacy'}-{oh}x{ow}{'-' + str(dt) if dt else ''}": Case(
        lambda b, p, o=o, flag=flag, oh=oh, ow=ow: op(b, o, [p["x"], c(b, np.array([oh, ow], np.int32))],
                                                      **({flag: True} if flag else {})),
        {"x": rand(2, 5, 4, 3) if dt is None else ints(2, 5, 4, 3, lo=0, hi=200, dtype=dt)})
       for o in ("ResizeBilinear", "ResizeNearestNeighbor") for flag in (None, "align_corners", "half_pixel_centers")
       for oh, ow, dt in [(8, 7, None), (3, 2, None), (1, 1, None), (7, 9, np.uint8)]},
    **{f"LRN-r{r}": Case(lambda b, p, r=r: op(b, "LRN", [p["x"]], depth_radius=r, bias=1.5, alpha=0.3, beta=0.6),
                         {"x": rand(2, 3, 4, 7)}) for r in (1, 5)},
    **{f"Conv3D-{pad}-{fmt}": Case(
        lambda b, p, pad=pad, fmt=fmt: op(b, "Conv3D", [p["x"], c(b, rand(2, 3, 2, 2, 3))], padding=pad, data_format=fmt,
                                          strides=[1, 1, 2, 1, 1] if fmt == "NDHWC" else [1, 1, 1, 2, 1]),
        {"x": rand(2, 4, 5, 3, 2) if fmt == "NDHWC" else rand(2, 2, 4, 5, 3)})
       for pad in ("SAME", "VALID") for fmt in ("NDHWC", "NCDHW")},
    **{f"AvgPool3D-{pad}": Case(lambda b, p, pad=pad: op(b, "AvgPool3D", [p["x"]], ksize=[1, 2, 3, 2, 1],
                                                        strides=[1, 2, 2, 1, 1], padding=pad), {"x": rand(2, 4, 5, 3, 2)})
       for pad in ("SAME", "VALID")},
    **{f"MaxPoolWithArgmax-{pad}-{batch}-{t}": Case(
        lambda b, p, pad=pad, batch=batch, t=t: gu_outputs(b, "MaxPoolWithArgmax", [p["x"]], 2, ksize=[1, 3, 2, 1],
                                                           strides=[1, 2, 2, 1], padding=pad, Targmax=as_dtype(t),
                                                           include_batch_in_index=batch),
        {"x": RNG.permutation(2 * 7 * 5 * 3).reshape(2, 7, 5, 3).astype(np.float32)})
       for pad, batch, t in [("SAME", False, "int64"), ("VALID", True, "int32")]},
    **{f"{o}-{i}": Case(
        lambda b, p, o=o, blk=blk, pads=pads: op(b, o, [p["x"], c(b, np.array(blk, np.int32)), c(b, np.array(pads, np.int32))]),
        {"x": rand(*shape)})
       for i, (o, shape, blk, pads) in enumerate([
           ("SpaceToBatchND", (2, 3, 4, 2), [2, 2], [[1, 0], [0, 2]]),
           ("SpaceToBatchND", (2, 6, 3), [3], [[0, 0]]),
           ("BatchToSpaceND", (8, 2, 3, 2), [2, 2], [[1, 0], [0, 2]]),
           ("BatchToSpaceND", (6, 2, 3, 1), [3, 1], [[0, 1], [0, 0]])])},
    "MaxPoolV2": Case(lambda b, p: op(b, "MaxPoolV2", [p["x"], c(b, np.array([1, 3, 2, 1], np.int32)),
                                                       c(b, np.array([1, 2, 2, 1], np.int32))], padding="SAME"),
                      {"x": rand(2, 7, 5, 3)}),
    **{f"{pool}-{pad}{'-dyn' if dyn else ''}": Case(
        lambda b, p, pool=pool, pad=pad: op(b, pool, [p["x"]], ksize=[1, 3, 2, 1], strides=[1, 2, 2, 1], padding=pad),
        {"x": rand(2, 7, 5, 3)}, {"x"} if dyn else set())
       for pool in ("MaxPool", "AvgPool") for pad in ("SAME", "VALID") for dyn in (False, True)},
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_mapping_matches_specflow(name):
    check_case(CASES[name])


def test_every_mapped_op_has_a_case():
    from tests.export.test_onnx_ops_array import CASES as ARRAY_CASES

    tested = {n.op for case in [*CASES.values(), *ARRAY_CASES.values()] for n in _graph_of(case).nodes}
    extra = {"ResourceGather"}  # tested below
    assert set(MAPPINGS) - tested - extra == set()


def _graph_of(case: Case) -> GraphDef:
    b = GraphBuilder()
    phs = {n: b.add_op("Placeholder", [], {"dtype": as_dtype(v.dtype), "shape": list(v.shape)}, name=n).name
           for n, v in case.feeds.items()}
    case.build(b, phs)
    return b.graph_def


def test_constant_select_on_an_unfed_flag_keeps_only_the_inference_branch():
    # Dropout as lowering writes it: SelectV2(training, x * mask, x) with training defaulting to
    # false. The random branch has no ONNX mapping; export must not need it.
    b = GraphBuilder()
    x = b.add_op("Placeholder", [], {"dtype": F32, "shape": [None, 4]}, name="x").name
    flag = b.add_op("PlaceholderWithDefault", [c(b, False)], {"dtype": as_dtype("bool"), "shape": []},
                    name="training").name
    noise = op(b, "RandomUniform", [op(b, "Shape", [x])], dtype=F32)
    y = op(b, "SelectV2", [flag, op(b, "Mul", [x, noise]), x])
    proto = to_onnx(serving(b, {"x": x}, {"y": y}), "s")
    assert [n.op_type for n in proto.graph.node] == ["Identity"]
    np.testing.assert_array_equal(run_onnx_proto(proto, {"x": X4})["y"], X4)


def test_resource_gather_reads_the_variable_initializer():
    b = GraphBuilder()
    ids = b.add_op("Placeholder", [], {"dtype": as_dtype("int32"), "shape": [None]}, name="ids").name
    h = b.add_op("VarHandleOp", [], {"dtype": F32, "shape": [5, 3], "shared_name": "emb"}, name="emb").name
    y = op(b, "ResourceGather", [h, ids], dtype=F32)
    table = rand(5, 3)
    model = serving(b, {"ids": ids}, {"y": y})
    model.variables = {"emb": table}
    got = run_onnx_proto(to_onnx(model, "s"), {"ids": np.array([4, 0, 4], np.int32)})["y"]
    np.testing.assert_array_equal(got, table[[4, 0, 4]])


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_fused_batch_norm_at_inference_matches_the_formula(fmt):
    # The mapping against the formula (not only against specflow's own kernel), on a graph as
    # one converted from TensorFlow carries it.
    x = rand(2, 4, 5, 3) if fmt == "NHWC" else rand(2, 3, 4, 5)
    scale, offset, mean, var = rand(3), rand(3), rand(3), rand(3, lo=0.5, hi=2)
    b = GraphBuilder()
    ph = b.add_op("Placeholder", [], {"dtype": F32, "shape": [None, *x.shape[1:]]}, name="x").name
    consts = [c(b, v) for v in (scale, offset, mean, var)]
    graph = b.graph_def.copy()
    graph.nodes.append(NodeDef("bn", "FusedBatchNormV3", [ph, *consts],
                               attrs={"T": F32, "epsilon": 0.001, "data_format": fmt, "is_training": False}))
    spec = TensorSpec(F32, Shape([None, *x.shape[1:]]))
    outputs = {"y": ("bn:0", spec), "m": ("bn:1", TensorSpec(F32, Shape([3])))}
    model = ServingModel(graph, {"s": SignatureIO({"x": ("x:0", spec)}, outputs)}, {}, "")
    got = run_onnx_proto(to_onnx(model, "s"), {"x": x})
    shape = [1, 1, 1, 3] if fmt == "NHWC" else [1, 3, 1, 1]
    want = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + 0.001) * scale.reshape(shape) + offset.reshape(shape)
    np.testing.assert_allclose(got["y"], want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got["m"], mean)
    graph.nodes[-1].attrs["is_training"] = True
    with pytest.raises(ExportError, match="is_training=true has no ONNX mapping"):
        to_onnx(model, "s")


@pytest.mark.parametrize("build, message", [
    (lambda b, x: op(b, "Cumprod", [x, c(b, 1)]), "node 'bad': op 'Cumprod' has no ONNX mapping"),
    (lambda b, x: op(b, "Transpose", [x, op(b, "Shape", [x])]), "input 1 .* must be a constant"),
    (lambda b, x: op(b, "StridedSlice", [x, c(b, [0]), c(b, [1]), c(b, [1])], ellipsis_mask=1),
     "ellipsis_mask or new_axis_mask has no ONNX mapping"),
    (lambda b, x: op(b, "MirrorPad", [x, c(b, [[1, 1], [1, 1]])], mode="SYMMETRIC"), "SYMMETRIC has no ONNX mapping"),
])  # fmt: skip
def test_unmappable_nodes_are_clear_errors(build, message):
    b = GraphBuilder()
    x = b.add_op("Placeholder", [], {"dtype": F32, "shape": [None, 4]}, name="x").name
    y = build(b, x)
    graph = b.graph_def.copy()
    graph.nodes[-1].name = "bad"
    model = ServingModel(graph, {"s": SignatureIO({"x": ("x:0", b.spec(x))}, {"y": ("bad:0", b.spec(y))})}, {}, "")
    with pytest.raises(ExportError, match=message):
        to_onnx(model, "s")


def test_pooling_over_channels_is_a_clear_error():
    # TF allows pooling across channels (ksize[3] > 1); ONNX pools spatial dims only.
    b = GraphBuilder()
    x = b.add_op("Placeholder", [], {"dtype": F32, "shape": [None, 4, 4, 2]}, name="x").name
    y = op(b, "MaxPool", [x], ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1], padding="VALID")
    model = serving(b, {"x": x}, {"y": y})
    model.graph_def.nodes[-1].attrs["ksize"] = [1, 1, 1, 2]
    with pytest.raises(ExportError, match="MaxPool over the batch or channel dim has no ONNX mapping"):
        to_onnx(model, "s")
