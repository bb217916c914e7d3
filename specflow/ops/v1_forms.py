"""Older graphs' forms of ops specflow has under their current names: each is TF's OpDef (so a TF
GraphDef that holds it binds) run as its successor's kernel, shape function and gradient, with its
inputs and attrs translated (``call_kernel``, ``infer_as``, ``grad_as``):

    Inv -> Reciprocal, Mod -> TruncateMod (C's remainder, as TF's Mod), AccumulateNV2 -> AddN,
    CheckNumericsV2 -> CheckNumerics (-Inf and +Inf told apart), Concat (axis first) -> ConcatV2,
    Reverse (a bool per dim) -> ReverseV2, BiasAddV1 -> BiasAdd (NHWC), TopK / InTopK (k an attr)
    -> TopKV2 / InTopKV2, MatrixDiag / MatrixDiagPart / MatrixSetDiag (the main diagonal) and their
    V2 (k, LEFT_LEFT alignment) -> the V3 ops.

ToBool and ApproximateEqual have kernels of their own here. Where TF registers no gradient (Mod,
ApproximateEqual, InTopK) neither does specflow.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from specflow.graph import dtypes
from specflow.graph.dtypes import dtype_of
from specflow.graph.graph_def import NodeDef
from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext, unchanged_shape
from specflow.ops.registry import (
    bind_attrs,
    find_kernel,
    get_op,
    gradient,
    input_ranges,
    kernel,
    not_differentiable,
    register_op,
)

# --- delegation ---------------------------------------------------------------------------------


def call_kernel(ctx, target: str, attrs: dict, *inputs):
    """``target``'s kernel on ``inputs`` with ``attrs`` (defaults and type attrs bound)."""
    bound = bind_attrs(get_op(target), [dtype_of(x) for x in inputs], attrs, ctx.node.name)
    k = find_kernel(target, ctx.device_type, bound)
    if k is None:
        raise ctx.fail(f"no {ctx.device_type} kernel for {target}, which {ctx.node.op} runs as")
    if ctx.xp is not np:  # on a GPU: what the form holds on the host (its fixed k, padding) that
        # the target reads on the device goes there (cupy refuses numpy operands)
        inputs = tuple(x if i in k.host_inputs or not isinstance(x, np.ndarray) else ctx.xp.asarray(x)
                       for i, x in enumerate(inputs))  # fmt: skip
    return k.fn(dataclasses.replace(ctx, attrs=bound), *inputs)


def infer_as(ic: InferenceContext, target: str, attrs: dict, args: list[tuple[Shape, object, object]]):
    """``target``'s shape function on inputs given as (shape, dtype, value or None)."""
    opdef = get_op(target)
    dts = [a[1] for a in args]
    bound = bind_attrs(opdef, dts, attrs, ic.node.name)
    sub = InferenceContext(ic.node, bound, dts, [a[0] for a in args], [a[2] for a in args],
                           input_ranges(opdef, len(args), bound, ic.node.name))  # fmt: skip
    return opdef.shape_fn(sub)


def _arg(ic: InferenceContext, i: int):
    return ic.shape(i), ic.dtype(i), ic.value(i)


def grad_as(b, node: NodeDef, dys, target: str, attrs: dict, inputs: list[str]):
    """``target``'s gradient for ``node`` read as ``target(inputs)`` (the same outputs)."""
    bound = bind_attrs(get_op(target), [b.spec(i).dtype for i in inputs], attrs, node.name)
    stand_in = NodeDef(node.name, target, list(inputs), node.device, bound, node.location)
    return get_op(target).gradient(b, stand_in, dys)


def _same_signature(op: str, target: str, doc: str, attrs: dict | None = None) -> None:
    """Register ``op`` with ``target``'s inputs, outputs and attrs (``attrs``: name -> spec to
    replace or add), run as ``target``."""
    t = get_op(target)
    specs = {name: a.describe() for name, a in t.attrs.items()}
    specs.update(attrs or {})
    from specflow.ops.op_def import _fmt_arg

    register_op(op, inputs=[_fmt_arg(a) for a in t.inputs], outputs=[_fmt_arg(a) for a in t.outputs],
                attrs=list(specs.values()), stateful=t.is_stateful, doc=doc,
                shape=lambda ic: infer_as(ic, target, _target_attrs(ic.attrs, t),
                                          [_arg(ic, i) for i in range(ic.num_inputs)]))  # fmt: skip

    @kernel(op)
    def _run(ctx, *inputs):
        return call_kernel(ctx, target, _target_attrs(ctx.attrs, t), *inputs)

    if t.gradient is not None:
        gradient(op)(lambda b, node, dys: grad_as(b, node, dys, target, _target_attrs(node.attrs, t),
                                                  node.data_inputs))  # fmt: skip


def _target_attrs(attrs: dict, t) -> dict:
    return {k: v for k, v in attrs.items() if k in t.attrs}


_same_signature("Inv", "Reciprocal", "1 / x elementwise (integers truncate): TF's old name of Reciprocal.")
_same_signature("AccumulateNV2", "AddN", "The sum of the inputs (TF's AddN whose inputs may come at different "
                "times; its result is the same).", {"shape": "shape: shape"})  # fmt: skip


# --- Mod: TruncateMod, without a gradient (TF registers none) ----------------------------------

register_op(
    "Mod",
    inputs=["x: T", "y: T"],
    outputs=["z: T"],
    attrs=["T: {int32, int64, float16, bfloat16, float32, float64}"],
    shape=lambda ic: infer_as(ic, "TruncateMod", {}, [_arg(ic, 0), _arg(ic, 1)]),
    doc="The remainder of x / y truncated toward zero (C's %, fmod): its sign follows x.",
)


@kernel("Mod")
def _mod(ctx, x, y):
    return call_kernel(ctx, "TruncateMod", {}, x, y)


# --- CheckNumericsV2 ----------------------------------------------------------------------------

register_op(
    "CheckNumericsV2",
    inputs=["tensor: T"],
    outputs=["output: T"],
    attrs=["T: {float}", "message: string"],
    stateful=True,
    shape=unchanged_shape,
    doc="tensor unchanged; fails with `message` if it holds a NaN, -Inf or +Inf (named apart).",
)


@kernel("CheckNumericsV2")
def _check_numerics_v2(ctx, x):
    xp = ctx.xp
    found = [what for what, bad in (("NaN", xp.isnan(x)), ("-Inf", xp.isneginf(x)), ("+Inf", xp.isposinf(x)))
             if bool(bad.any())]  # fmt: skip
    if found:
        raise ctx.fail(f"{ctx.attrs['message']} : Tensor had {' and '.join(found)} values")
    return x


@gradient("CheckNumericsV2")
def _check_numerics_v2_grad(b, node, dys):
    message = "Not a number (NaN) or infinity (Inf) values detected in gradient. " + node.attrs["message"]
    return [gu.emit(b, "CheckNumericsV2", dys[0], message=message)]


# --- Concat (axis first) ------------------------------------------------------------------------

register_op(
    "Concat",
    inputs=["concat_dim: int32", "values: N * T"],
    outputs=["output: T"],
    attrs=["N: int >= 2", "T: type"],
    shape=lambda ic: infer_as(ic, "ConcatV2", {"N": ic.attrs["N"]},
                              [_arg(ic, i) for i in range(1, ic.num_inputs)] + [_arg(ic, 0)]),
    doc="ConcatV2 with the axis as the first input (TF's first form).",
)


@kernel("Concat", host_inputs=(0,))
def _concat(ctx, axis, *values):
    return call_kernel(ctx, "ConcatV2", {"N": ctx.attrs["N"]}, *values, axis)


@gradient("Concat")
def _concat_grad(b, node, dys):
    axis, *values = node.data_inputs
    return [None, *grad_as(b, node, dys, "ConcatV2", {"N": node.attrs["N"]}, [*values, axis])[:-1]]


# --- Reverse (a bool per dim) -------------------------------------------------------------------

register_op(
    "Reverse",
    inputs=["tensor: T", "dims: bool"],
    outputs=["output: T"],
    attrs=["T: {uint8, int8, uint16, int16, uint32, int32, uint64, int64, bool, bfloat16, float16, float32, "
           "float64, complex64, complex128, string}"],  # fmt: skip
    shape=lambda ic: [_reverse_shape(ic.fail, ic.shape(0), ic.shape(1))],
    doc="tensor with the dims where `dims` is true reversed (ReverseV2 with a mask instead of axes).",
)


def _reverse_shape(fail, x: Shape, dims: Shape) -> Shape:
    if dims.rank not in (None, 1):
        raise fail(f"dims must be a vector of bools, got shape {dims}")
    if x.rank is not None and dims.rank == 1 and dims[0] is not None and dims[0] != x.rank:
        raise fail(f"dims must have one value per dimension of tensor ({x.rank}), got {dims[0]}")
    return x


@kernel("Reverse", host_inputs=(1,))
def _reverse(ctx, x, dims):
    mask = ctx.host(dims)
    _reverse_shape(ctx.fail, Shape(list(x.shape)), Shape(list(mask.shape)))
    axes = np.flatnonzero(mask).astype(np.int32)
    return call_kernel(ctx, "ReverseV2", {}, x, axes) if axes.size else x


@gradient("Reverse")
def _reverse_grad(b, node, dys):
    return [gu.emit(b, "Reverse", dys[0], node.data_inputs[1]), None]


# --- BiasAddV1 ----------------------------------------------------------------------------------

register_op(
    "BiasAddV1",
    inputs=["value: T", "bias: T"],
    outputs=["output: T"],
    attrs=[f"T: {get_op('BiasAdd').attrs['T'].describe().split(': ', 1)[1]}"],
    shape=lambda ic: infer_as(ic, "BiasAdd", {}, [_arg(ic, 0), _arg(ic, 1)]),
    doc="value + bias along the last dimension (BiasAdd in NHWC, TF's first form).",
)


@kernel("BiasAddV1")
def _bias_add_v1(ctx, value, bias):
    return call_kernel(ctx, "BiasAdd", {}, value, bias)


@gradient("BiasAddV1")
def _bias_add_v1_grad(b, node, dys):
    return grad_as(b, node, dys, "BiasAdd", {}, node.data_inputs)


# --- TopK / InTopK (k an attr) ------------------------------------------------------------------

register_op(
    "TopK",
    inputs=["input: T"],
    outputs=["values: T", "indices: int32"],
    attrs=["k: int >= 0", "sorted: bool = true", "T: {real}"],
    shape=lambda ic: infer_as(ic, "TopKV2", {"sorted": ic.attrs["sorted"]},
                              [_arg(ic, 0), (Shape([]), dtypes.int32, np.int32(ic.attrs["k"]))]),
    doc="TopKV2 with k an attr (TF's first form).",
)


@kernel("TopK")
def _top_k_v1(ctx, x):
    return call_kernel(ctx, "TopKV2", {"sorted": ctx.attrs["sorted"]}, x, np.int32(ctx.attrs["k"]))


@gradient("TopK")
def _top_k_v1_grad(b, node, dys):
    k = gu.const(b, np.int32(node.attrs["k"]), "int32")
    return grad_as(b, node, dys, "TopKV2", {"sorted": node.attrs["sorted"]}, [node.data_inputs[0], k])[:1]


register_op(
    "InTopK",
    inputs=["predictions: float32", "targets: T"],
    outputs=["precision: bool"],
    attrs=["k: int", "T: {int32, int64} = int32"],
    shape=lambda ic: infer_as(ic, "InTopKV2", {}, [_arg(ic, 0), _arg(ic, 1),
                                                   (Shape([]), ic.dtype(1), np.asarray(ic.attrs["k"]))]),
    doc="InTopKV2 with k an attr (TF's first form).",
)
not_differentiable("InTopK")


@kernel("InTopK", devices=("CPU",))
def _in_top_k_v1(ctx, predictions, targets):
    return call_kernel(ctx, "InTopKV2", {}, predictions, targets, np.asarray(ctx.attrs["k"], targets.dtype))


# --- MatrixDiag / MatrixDiagPart / MatrixSetDiag and their V2 -----------------------------------

_V1_DIAG = {  # op: (V3 op, its extra inputs after the op's own: k, num_rows, num_cols, padding)
    "MatrixDiag": ("MatrixDiagV3", ("k", "rows", "cols", "pad")),
    "MatrixDiagPart": ("MatrixDiagPartV3", ("k", "pad")),
    "MatrixSetDiag": ("MatrixSetDiagV3", ("k",)),
}
_V1_ARGS = {"MatrixDiag": ["diagonal: T"], "MatrixDiagPart": ["input: T"], "MatrixSetDiag": ["input: T", "diagonal: T"]}
_V1_OUT = {"MatrixDiag": "output: T", "MatrixDiagPart": "diagonal: T", "MatrixSetDiag": "output: T"}


def _fill(extra, dt):
    """The V3 inputs a V1 op leaves out, as (shape, dtype, value): the main diagonal, sizes from the
    input, padding 0."""
    table = {"k": np.int32(0), "rows": np.int32(-1), "cols": np.int32(-1), "pad": np.zeros((), dt.numpy)}
    return [(Shape([]), dtypes.int32 if e != "pad" else dt, table[e]) for e in extra]


def _register_v1_diag(op: str) -> None:
    target, extra = _V1_DIAG[op]
    register_op(op, inputs=_V1_ARGS[op], outputs=[_V1_OUT[op]], attrs=["T: type"],
                shape=lambda ic: infer_as(ic, target, {}, [_arg(ic, i) for i in range(ic.num_inputs)]
                                          + _fill(extra, ic.dtype(0))),
                doc=f"{target} of the main diagonal (TF's first form).")  # fmt: skip

    @kernel(op)
    def _run(ctx, *inputs):
        vals = [v for _, _, v in _fill(extra, dtype_of(inputs[0]))]
        return call_kernel(ctx, target, {}, *inputs, *vals)

    @gradient(op)
    def _grad(b, node, dys):
        dt = b.spec(node.data_inputs[0]).dtype
        consts = [gu.const(b, v, d.name) for _, d, v in _fill(extra, dt)]
        return grad_as(b, node, dys, target, {}, [*node.data_inputs, *consts])[: len(node.data_inputs)]


for _op in _V1_DIAG:
    _register_v1_diag(_op)


def _register_v2_diag(op: str, target: str, inputs: list[str], output: str, n_diff: int) -> None:
    register_op(op, inputs=inputs, outputs=[output], attrs=["T: type"],
                shape=lambda ic: infer_as(ic, target, {"align": "LEFT_LEFT"},
                                          [_arg(ic, i) for i in range(ic.num_inputs)]),
                doc=f"{target} with align LEFT_LEFT (TF's V2: every diagonal packed from the left).")  # fmt: skip

    @kernel(op, host_inputs=tuple(range(n_diff, len(inputs))))
    def _run(ctx, *ins):
        return call_kernel(ctx, target, {"align": "LEFT_LEFT"}, *ins)

    @gradient(op)
    def _grad(b, node, dys):
        return grad_as(b, node, dys, target, {"align": "LEFT_LEFT"}, node.data_inputs)


_register_v2_diag("MatrixDiagV2", "MatrixDiagV3",
                  ["diagonal: T", "k: int32", "num_rows: int32", "num_cols: int32", "padding_value: T"], "output: T", 1)
_register_v2_diag("MatrixDiagPartV2", "MatrixDiagPartV3", ["input: T", "k: int32", "padding_value: T"],
                  "diagonal: T", 1)
_register_v2_diag("MatrixSetDiagV2", "MatrixSetDiagV3", ["input: T", "diagonal: T", "k: int32"], "output: T", 2)


# --- ToBool, ApproximateEqual --------------------------------------------------------------------

register_op(
    "ToBool",
    inputs=["input: T"],
    outputs=["output: bool"],
    attrs=["T: type"],
    shape=lambda ic: [Shape([])],
    doc="A scalar: for a scalar input whether it is non-zero (a string: non-empty), otherwise "
    "whether the tensor has any element.",
)
not_differentiable("ToBool")


@kernel("ToBool", devices=("CPU",))
def _to_bool(ctx, x):
    if x.ndim:
        return np.asarray(x.size > 0)
    v = x.item()
    return np.asarray(len(v) > 0 if isinstance(v, (bytes, str)) else bool(v))


def _same_shapes(ic: InferenceContext) -> list[Shape]:
    x, y = ic.shape(0), ic.shape(1)
    if not x.is_compatible_with(y):
        raise ic.fail(f"x and y must be of the same shape, got {x} and {y}")
    return [x.merge_with(y)]


register_op(
    "ApproximateEqual",
    inputs=["x: T", "y: T"],
    outputs=["z: bool"],
    attrs=["T: {numeric}", "tolerance: float = 1e-05"],
    shape=_same_shapes,
    doc="|x - y| < tolerance elementwise (x and y of one shape; NaN is never close).",
)
not_differentiable("ApproximateEqual")


@kernel("ApproximateEqual")
def _approximate_equal(ctx, x, y):
    if x.shape != y.shape:
        raise ctx.fail(f"x and y must be of the same shape, got {list(x.shape)} and {list(y.shape)}")
    with np.errstate(invalid="ignore", over="ignore"):
        d = ctx.xp.abs(x - y)
        return d < d.dtype.type(ctx.attrs["tolerance"])  # in T, as TF (an integer tolerance of 0 is never met)
