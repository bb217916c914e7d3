"""The specflow-op -> ONNX-op table (elementwise, math, reductions, array manipulation).

Each mapping is a small function of a context ``cx`` (see :class:`specflow.export.onnx_export.
NodeContext`): it reads the node's inputs (``cx.inp(i)``: an ONNX tensor name; ``cx.const(i)``: a
numpy value), emits ONNX nodes with ``cx.op(...)`` and writes the node's outputs to
``cx.out(k)``. ``consts`` names the inputs a mapping reads as constants (folded into ONNX
attributes), so the exporter neither emits nor needs their producers. Neural-network ops (conv,
pooling, batch norm, softmax) live in :mod:`specflow.export.onnx_ops_nn`.

Semantics follow TensorFlow's op definitions; where ONNX differs (no Rsqrt, pads layout, empty
reduction axes, Slice's size -1) the mapping composes ONNX ops to match.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


@dataclass(frozen=True)
class Mapping:
    fn: Callable
    consts: tuple[int, ...] = ()  # input indices read as constants; negative counts from the end


MAPPINGS: dict[str, Mapping] = {}


def maps(*ops: str, consts: tuple[int, ...] = ()):
    """Register the decorated function as the ONNX mapping of each op in ``ops``."""

    def deco(fn):
        for op in ops:
            MAPPINGS[op] = Mapping(fn, consts)
        return fn

    return deco


# --- elementwise ------------------------------------------------------------------------------

# TF op -> ONNX op with the same inputs and semantics (Selu and Elu: ONNX's default constants are
# TF's; Round: both round half to even; Div: both truncate integers toward zero).
UNARY = {
    "Relu": "Relu", "Sigmoid": "Sigmoid", "Tanh": "Tanh", "Softplus": "Softplus",
    "Softsign": "Softsign", "Exp": "Exp", "Log": "Log", "Sqrt": "Sqrt", "Neg": "Neg", "Abs": "Abs",
    "Floor": "Floor", "Ceil": "Ceil", "Round": "Round", "Sign": "Sign", "Sin": "Sin", "Cos": "Cos",
    "Reciprocal": "Reciprocal", "Elu": "Elu", "Selu": "Selu", "LogicalNot": "Not", "IsNan": "IsNaN",
}  # fmt: skip
BINARY = {
    "Add": "Add", "AddV2": "Add", "Sub": "Sub", "Mul": "Mul", "Div": "Div", "RealDiv": "Div",
    "Maximum": "Max", "Minimum": "Min", "Pow": "Pow", "Equal": "Equal", "Less": "Less",
    "LessEqual": "LessOrEqual", "Greater": "Greater", "GreaterEqual": "GreaterOrEqual",
    "LogicalAnd": "And", "LogicalOr": "Or",
}  # fmt: skip


def _direct(onnx_op: str):
    def fn(cx):
        cx.op(onnx_op, [cx.inp(i) for i in range(cx.n_inputs)], out=cx.out())

    return fn


for _tf, _onnx in {**UNARY, **BINARY, "AddN": "Sum"}.items():
    maps(_tf)(_direct(_onnx))


def scalar(cx, value, i: int = 0) -> str:
    """A scalar initializer of input ``i``'s dtype."""
    return cx.tensor(np.array(value, dtype=cx.dtype(i).numpy))


@maps("Rsqrt")
def _rsqrt(cx):
    cx.op("Reciprocal", [cx.op("Sqrt", [cx.inp(0)])], out=cx.out())


@maps("Square")
def _square(cx):
    cx.op("Mul", [cx.inp(0), cx.inp(0)], out=cx.out())


@maps("SquaredDifference")
def _squared_difference(cx):
    d = cx.op("Sub", [cx.inp(0), cx.inp(1)])
    cx.op("Mul", [d, d], out=cx.out())


@maps("Relu6")
def _relu6(cx):
    cx.op("Clip", [cx.inp(0), scalar(cx, 0), scalar(cx, 6)], out=cx.out())


@maps("LeakyRelu")
def _leaky_relu(cx):
    cx.op("LeakyRelu", [cx.inp(0)], out=cx.out(), alpha=float(cx.attr("alpha")))


@maps("Log1p")
def _log1p(cx):
    cx.op("Log", [cx.op("Add", [cx.inp(0), scalar(cx, 1)])], out=cx.out())


@maps("NotEqual")
def _not_equal(cx):
    cx.op("Not", [cx.op("Equal", [cx.inp(0), cx.inp(1)])], out=cx.out())


@maps("IsFinite")
def _is_finite(cx):
    bad = cx.op("Or", [cx.op("IsNaN", [cx.inp(0)]), cx.op("IsInf", [cx.inp(0)])])
    cx.op("Not", [bad], out=cx.out())


@maps("FloorDiv")
def _floor_div(cx):
    x, y = cx.inp(0), cx.inp(1)
    if cx.dtype(0).is_floating:
        cx.op("Floor", [cx.op("Div", [x, y])], out=cx.out())
        return
    # ONNX's Div truncates integers: one less where the remainder is nonzero and x, y differ in sign.
    rem = cx.op("Mod", [x, y], fmod=1)  # the sign follows x
    zero = scalar(cx, 0, 0)
    inexact = cx.op("Not", [cx.op("Equal", [rem, zero])])
    signs = cx.op("Xor", [cx.op("Less", [rem, zero]), cx.op("Less", [y, zero])])
    down = cx.op("Cast", [cx.op("And", [inexact, signs])], to=cx.onnx_type(cx.dtype(0)))
    cx.op("Sub", [cx.op("Div", [x, y]), down], out=cx.out())


@maps("FloorMod")
def _floor_mod(cx):
    x, y = cx.inp(0), cx.inp(1)
    if cx.dtype(0).is_floating:  # ONNX's Mod takes the divisor's sign only for integers
        q = cx.op("Floor", [cx.op("Div", [x, y])])
        cx.op("Sub", [x, cx.op("Mul", [q, y])], out=cx.out())
    else:
        cx.op("Mod", [x, y], out=cx.out(), fmod=0)


@maps("Cast")
def _cast(cx):
    cx.op("Cast", [cx.inp(0)], out=cx.out(), to=cx.onnx_type(cx.attr("DstT")))


@maps("Select", "SelectV2")
def _select(cx):
    cond = cx.inp(0)
    c, t = cx.spec(0), cx.spec(1)
    # TF's v1 Select picks whole rows with a vector condition; Where broadcasts from the right.
    if cx.node.op == "Select" and c is not None and t is not None and c.shape.rank == 1 and (t.shape.rank or 0) > 1:
        cond = cx.op("Unsqueeze", [cond, cx.tensor(np.arange(1, t.shape.rank, dtype=np.int64))])
    cx.op("Where", [cond, cx.inp(1), cx.inp(2)], out=cx.out())


# --- matrix products ------------------------------------------------------------------------


def _matmul(cx, adj_a: str, adj_b: str, rank: int | None):
    def maybe_t(i, flag):
        if not cx.attr(flag):
            return cx.inp(i)
        r = rank if rank is not None else cx.rank(i)
        perm = list(range(r - 2)) + [r - 1, r - 2]
        return cx.op("Transpose", [cx.inp(i)], perm=perm)

    cx.op("MatMul", [maybe_t(0, adj_a), maybe_t(1, adj_b)], out=cx.out())


maps("MatMul")(lambda cx: _matmul(cx, "transpose_a", "transpose_b", 2))
maps("BatchMatMulV2")(lambda cx: _matmul(cx, "adj_x", "adj_y", None))


@maps("BiasAdd")
def _bias_add(cx):
    bias = cx.inp(1)
    if cx.attr("data_format") == "NCHW":  # channels at axis 1: bias [C] -> [C, 1, ..., 1]
        bias = cx.op("Unsqueeze", [bias, cx.tensor(np.arange(1, cx.rank(0) - 1, dtype=np.int64))])
    cx.op("Add", [cx.inp(0), bias], out=cx.out())


# --- reductions -----------------------------------------------------------------------------

REDUCTIONS = {"Mean": "ReduceMean", "Sum": "ReduceSum", "Max": "ReduceMax", "Min": "ReduceMin",
              "Prod": "ReduceProd", "All": "ReduceMin", "Any": "ReduceMax"}  # fmt: skip


@maps(*REDUCTIONS)
def _reduce(cx):
    x = cx.inp(0)
    boolean = cx.node.op in ("All", "Any")
    if boolean:  # reduce bools as 0/1 integers
        x = cx.op("Cast", [x], to=cx.onnx_type("int32"))
    # TF reduces nothing over an empty axis list; ONNX reduces everything unless told otherwise.
    attrs = {"keepdims": int(bool(cx.attr("keep_dims"))), "noop_with_empty_axes": 1}
    if boolean:
        r = cx.op(REDUCTIONS[cx.node.op], [x, cx.int64_1d(1)], **attrs)
        cx.op("Cast", [r], out=cx.out(), to=cx.onnx_type("bool"))
    else:
        cx.op(REDUCTIONS[cx.node.op], [x, cx.int64_1d(1)], out=cx.out(), **attrs)


@maps("ArgMax", "ArgMin", consts=(1,))
def _arg_max(cx):
    # keepdims=0 and select_last_index=0: TF's output shape and its first-index tie-break.
    r = cx.op(cx.node.op, [cx.inp(0)], axis=int(cx.const(1)), keepdims=0)
    cx.cast_to(r, cx.attr("output_type"), cx.out())


@maps("L2Loss")
def _l2_loss(cx):
    s = cx.op("ReduceSumSquare", [cx.inp(0)], keepdims=0)
    cx.op("Mul", [s, scalar(cx, 0.5)], out=cx.out())


@maps("Cumsum")
def _cumsum(cx):
    cx.op("CumSum", [cx.inp(0), cx.inp(1)], out=cx.out(),
          exclusive=int(bool(cx.attr("exclusive"))), reverse=int(bool(cx.attr("reverse"))))


# --- shapes and array manipulation -----------------------------------------------------------


@maps("Reshape")
def _reshape(cx):
    # allowzero: a 0 in TF's shape is a zero-sized dim, not "copy the input's dim".
    cx.op("Reshape", [cx.inp(0), cx.int64_1d(1)], out=cx.out(), allowzero=1)


@maps("ExpandDims")
def _expand_dims(cx):
    cx.op("Unsqueeze", [cx.inp(0), cx.int64_1d(1)], out=cx.out())


@maps("Squeeze")
def _squeeze(cx):
    dims = cx.attr("squeeze_dims") or []
    axes = [cx.tensor(np.array(dims, dtype=np.int64))] if dims else []
    cx.op("Squeeze", [cx.inp(0), *axes], out=cx.out())


@maps("Transpose", consts=(1,))
def _transpose(cx):
    cx.op("Transpose", [cx.inp(0)], out=cx.out(), perm=[int(p) for p in cx.const(1)])


@maps("ConcatV2", consts=(-1,))
def _concat(cx):
    cx.op("Concat", [cx.inp(i) for i in range(cx.n_inputs - 1)], out=cx.out(), axis=int(cx.const(-1)))


@maps("Pack")
def _pack(cx):
    axis = int(cx.attr("axis"))
    axes = cx.tensor(np.array([axis], dtype=np.int64))
    parts = [cx.op("Unsqueeze", [cx.inp(i), axes]) for i in range(cx.n_inputs)]
    cx.op("Concat", parts, out=cx.out(), axis=axis)


def _split(cx, x: str, axis: int, n: int, squeeze: bool):
    outs = [cx.out(k) for k in range(n)]
    if not squeeze:
        cx.op("Split", [x], out=outs, axis=axis, num_outputs=n)
        return
    parts = cx.op("Split", [x], out=n, axis=axis, num_outputs=n)
    axes = cx.tensor(np.array([axis], dtype=np.int64))
    for part, out in zip(parts, outs):
        cx.op("Squeeze", [part, axes], out=out)


maps("Unpack")(lambda cx: _split(cx, cx.inp(0), int(cx.attr("axis")), int(cx.attr("num")), True))
maps("Split", consts=(0,))(lambda cx: _split(cx, cx.inp(1), int(cx.const(0)), int(cx.attr("num_split")), False))


@maps("SplitV", consts=(1, 2))
def _split_v(cx):
    sizes, axis = [int(v) for v in cx.const(1)], int(cx.const(2))
    if -1 in sizes:  # TF's "the rest": from the static size of the split axis
        spec = cx.spec(0)
        dim = spec.shape[axis] if spec is not None and spec.shape.rank is not None else None
        if dim is None:
            raise cx.fail("a SplitV size of -1 needs the split axis's size known statically")
        sizes[sizes.index(-1)] = dim - (sum(sizes) + 1)
    cx.op("Split", [cx.inp(0), cx.tensor(np.array(sizes, dtype=np.int64))],
          out=[cx.out(k) for k in range(len(sizes))], axis=axis)


@maps("Shape", "Size")
def _shape(cx):
    cx.cast_to(cx.op(cx.node.op, [cx.inp(0)]), cx.attr("out_type"), cx.out())


@maps("Rank")
def _rank(cx):
    cx.cast_to(cx.op("Size", [cx.op("Shape", [cx.inp(0)])]), "int32", cx.out())


@maps("Fill")
def _fill(cx):
    cx.op("Expand", [cx.inp(1), cx.int64_1d(0)], out=cx.out())


@maps("BroadcastTo")
def _broadcast_to(cx):
    cx.op("Expand", [cx.inp(0), cx.int64_1d(1)], out=cx.out())


@maps("ZerosLike", "OnesLike")
def _zeros_like(cx):
    value = np.array([cx.node.op == "OnesLike"], dtype=cx.dtype(0).numpy)
    cx.op("ConstantOfShape", [cx.op("Shape", [cx.inp(0)])], out=cx.out(), value=cx.tensor_proto(value))


@maps("Range")
def _range(cx):
    cx.op("Range", [cx.inp(0), cx.inp(1), cx.inp(2)], out=cx.out())


@maps("Tile")
def _tile(cx):
    cx.op("Tile", [cx.inp(0), cx.int64_1d(1)], out=cx.out())


@maps("GatherV2", consts=(2,))
def _gather(cx):
    if int(cx.attr("batch_dims")):
        raise cx.fail("GatherV2 with batch_dims != 0 has no ONNX mapping")
    cx.op("Gather", [cx.inp(0), cx.inp(1)], out=cx.out(), axis=int(cx.const(2)))


@maps("ResourceGather")
def _resource_gather(cx):
    if int(cx.attr("batch_dims")):
        raise cx.fail("ResourceGather with batch_dims != 0 has no ONNX mapping")
    cx.op("Gather", [cx.variable(0), cx.inp(1)], out=cx.out(), axis=0)


PAD_MODES = {"Pad": "constant", "PadV2": "constant", "MirrorPad": "reflect"}


@maps(*PAD_MODES)
def _pad(cx):
    if cx.node.op == "MirrorPad" and cx.attr("mode") != "REFLECT":
        raise cx.fail(f"MirrorPad mode {cx.attr('mode')} has no ONNX mapping (ONNX reflects only)")
    # TF's paddings [rank, 2] (before, after per dim) -> ONNX's [all befores, all afters].
    if cx.is_const(1):
        pads = cx.tensor(cx.const(1).astype(np.int64).T.reshape(-1))
    else:
        p = cx.op("Transpose", [cx.op("Cast", [cx.inp(1)], to=cx.onnx_type("int64"))], perm=[1, 0])
        pads = cx.op("Reshape", [p, cx.tensor(np.array([-1], dtype=np.int64))])
    value = [cx.inp(2)] if cx.node.op == "PadV2" else []
    cx.op("Pad", [cx.inp(0), pads, *value], out=cx.out(), mode=PAD_MODES[cx.node.op])


@maps("Slice")
def _slice(cx):
    begin = cx.int64_1d(1)
    size = cx.int64_1d(2)
    # A size of -1 means "to the end of the dim".
    end = cx.op("Where", [cx.op("Less", [size, cx.tensor(np.array(0, np.int64))]),
                          cx.tensor(np.array(INT64_MAX, np.int64)), cx.op("Add", [begin, size])])
    cx.op("Slice", [cx.inp(0), begin, end], out=cx.out())


@maps("StridedSlice", consts=(1, 2, 3))
def _strided_slice(cx):
    if cx.attr("ellipsis_mask") or cx.attr("new_axis_mask"):
        raise cx.fail("StridedSlice with ellipsis_mask or new_axis_mask has no ONNX mapping")
    begin, end, strides = (cx.const(i).astype(np.int64).copy() for i in (1, 2, 3))
    bits = {m: int(cx.attr(m)) for m in ("begin_mask", "end_mask", "shrink_axis_mask")}
    shrink = []
    for i, s in enumerate(strides):
        if bits["shrink_axis_mask"] >> i & 1:  # a single index: take [b, b+1) and drop the dim
            end[i], strides[i] = (INT64_MAX if begin[i] == -1 else begin[i] + 1), 1
            shrink.append(i)
            continue
        if bits["begin_mask"] >> i & 1:
            begin[i] = 0 if s > 0 else INT64_MAX
        if bits["end_mask"] >> i & 1:
            end[i] = INT64_MAX if s > 0 else INT64_MIN
    ins = [cx.inp(0), cx.tensor(begin), cx.tensor(end), cx.tensor(np.arange(len(begin), dtype=np.int64)),
           cx.tensor(strides)]
    if not shrink:
        cx.op("Slice", ins, out=cx.out())
        return
    cx.op("Squeeze", [cx.op("Slice", ins), cx.tensor(np.array(shrink, dtype=np.int64))], out=cx.out())
