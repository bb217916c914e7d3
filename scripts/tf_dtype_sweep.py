"""TF parity by dtype and edge shape: every op of ../shared/tf_common_ops.txt that specflow
registers, run on every dtype among float16, bfloat16, float32, float64, int8..int64,
uint8..uint64, bool, complex64, complex128, over edge shapes (size 0, scalars, rank 4-5,
broadcasting, negative axes, keep_dims) and edge values (NaN, +-inf, -0.0, int min/max,
integer division by zero, float16's largest and subnormal values), through specflow's eager path
(``sf.ops``), its graph path (Placeholders + Session, the static shape checked too) and
``tf.raw_ops`` on TF's CPU. Where TF refuses a dtype, specflow must refuse it with its own error
(not a Python exception, not values); where TF accepts, values, dtype and shape must match
(exact for integers and bools, an ulp for float16/bfloat16, rtol 1e-5 float32, 1e-12 float64).
Float and complex cases also compare ``tf.GradientTape`` with ``sf.GradientTape`` (and graph
gradients) of a weighted sum of the outputs. TensorFlow is never a specflow dependency:

    PYTHONPATH=. /work/scratch/tfvenv/bin/python scripts/tf_dtype_sweep.py [OP ...] [-v]

Prints one line per (kind, op, dtype): its first case and how many, then a summary; exit 1 on
any. Kinds: MISMATCH (values, dtype, shape or the graph's static shape), REFUSED (TF computes,
specflow errs), NO-ERROR (TF errs at run time, specflow computes), EXTRA-OPDEF / EXTRA-KERNEL
(TF's OpDef or CPU kernels lack the dtype, specflow computes it), CRASH (not specflow's own
error), GRAD-* (gradients, on finite inputs). Values are seeded per (op, dtype): the same
whichever ops run.

It found (fixed): complex SquaredDifference with a nonzero imaginary part; bfloat16
UnsortedSegmentMax/Min filling empty segments with -inf/inf (float32's limits rounded);
bfloat16 FloorDiv/TruncateDiv not rounding the quotient, and float FloorDiv flooring denormal
quotients (-1 where TF's flush-to-zero gives -0); float16 MatrixInverse refused, float16
Cholesky computed (TF has no kernel); complex Mean over nothing NaN (TF: 0); no complex Prod or
Cumprod gradients; bfloat16 refused by ResizeBilinear/NearestNeighbor, FusedBatchNormV2/V3,
BatchMatMulV3; Elu/Selu computed with expm1 (TF: exp(x) - 1 with Eigen's exp, 1e-3 relative
apart near 0 in float32); Tanh (float32 and half types) and its gradient near saturation, Softplus
(TF's per-type cut-offs: bfloat16 returns x above 2.85) and SoftplusGrad, bfloat16 Sigmoid, the
bfloat16 gradient kernels (SigmoidGrad, TanhGrad, SoftsignGrad, SqrtGrad, RsqrtGrad,
ReciprocalGrad, SeluGrad) and Cumsum/Cumprod, RsqrtGrad's product order: all now TF's bits.

Known, and left: half-type reductions and windows (Sum/Mean/Softmax/LogSoftmax/LRN/AvgPool/
convolutions/softmax cross entropy in float16 or bfloat16; TF accumulates in the half type in
packet order, specflow in float32, 1-3 ulps apart); TF's Round of int32/int64 returns 0 (a TF
bug); TF's float64 Erf is NaN for |x| >= ~1e200 (a TF bug); bfloat16 Range (TF's kernel reads a
fractional delta as 0); FusedBatchNorm's reserve outputs in inference (uninitialized in TF);
DepthwiseConv2dNative with unequal strides (TF refuses only with TF_ENABLE_ONEDNN_OPTS=0);
MatrixInverse of matrices with infinities (TF's pivot test); products, matmuls and complex
arithmetic that overflow (summation order, C99 complex rules); SoftmaxCrossEntropyWithLogits'
labels gradient (tf_grad_parity.py); ResizeBilinear's float64 gradient (TF interpolates in
float32); denormals, which TF flushes to zero, are kept out of the values. Extra dtypes
specflow computes where TF refuses (EXTRA-*) are listed, not failures of its values.
"""

from __future__ import annotations

import inspect
import os
import sys
from collections import Counter

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from specflow.graph import dtypes as sfd  # noqa: E402

BF16 = sfd.bfloat16.numpy
FLOATS = ("float16", "bfloat16", "float32", "float64")
SINTS = ("int8", "int16", "int32", "int64")
UINTS = ("uint8", "uint16", "uint32", "uint64")
INTS = SINTS + UINTS
COMPLEX = ("complex64", "complex128")
ALL = FLOATS + INTS + ("bool",) + COMPLEX
NUM = FLOATS + INTS + COMPLEX
REAL = FLOATS + INTS

# tf.raw_ops' Python names that differ from the OpDef's (scripts/tf_op_parity.py's list).
RENAMED = {
    ("Squeeze", "squeeze_dims"): "axis", ("Split", "split_dim"): "axis", ("SplitV", "split_dim"): "axis",
    ("ExpandDims", "dim"): "axis", ("Select", "t"): "x", ("Select", "e"): "y", ("Where", "input"): "condition",
    **{(op, "reduction_indices"): "axis" for op in ("Sum", "Mean", "Max", "Min", "Prod", "All", "Any")},
}


def npdt(dt: str):
    return BF16 if dt == "bfloat16" else np.dtype(dt)


class Vals:
    """Seeded values of a dtype: ``kind`` any (normal, integers), unit ((-1, 1)), pos ((0, 4)),
    ge1 ([1, 5)), small (integers in [-3, 3], for Pow/Prod); ``edge`` mixes in NaN, infinities,
    signed zeros, int min/max, float16's extremes."""

    def __init__(self, seed: int, edge: bool):
        self.r = np.random.default_rng(seed)
        self.edge = edge

    def __call__(self, dt: str, shape, kind: str = "any") -> np.ndarray:
        r, shape = self.r, tuple(shape)
        if dt == "bool":
            return r.random(shape) < 0.5
        if dt in INTS:
            info = np.iinfo(dt)
            lo = 0 if dt in UINTS else (-3 if kind == "small" else -20)
            hi = 4 if kind == "small" else 20
            if kind == "pos":
                lo = 1
            x = r.integers(lo, hi, shape).astype(dt)
            if self.edge and x.size and kind == "any":
                m = r.random(shape) < 0.3
                x = np.where(m, r.choice(np.array([info.min, info.max, 0, info.max - 1, info.min + 1], dtype=dt),
                                         shape), x)
            return x
        base = {"any": lambda: r.standard_normal(shape) * 3, "unit": lambda: r.random(shape) * 2 - 1,
                "pos": lambda: r.random(shape) * 4 + 0.05, "ge1": lambda: r.random(shape) * 4 + 1,
                "small": lambda: r.integers(-3, 4, shape).astype(float) + np.where(r.random(shape) < .5, .5, 0)}[kind]
        x = base()
        if dt in COMPLEX:
            x = x + 1j * base()
        if self.edge and x.size:
            edges = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -1.5]
            if dt == "float16":
                edges += [65504.0, -65504.0, 6e-8, 3e-5, 1e-4, 300.0, 70000.0]
            elif dt == "bfloat16":
                edges += [3e38, -3e38, 1e30, 300.0]
            elif dt in ("float32", "complex64"):
                edges += [3e38, 1e20]
            else:  # no subnormals: TF's CPU flushes them to zero (a known difference, tf_fuzz_parity.py)
                edges += [1e308, 1e200]
            if dt in COMPLEX:  # C99 vs naive complex infinities: a known difference (tf_fuzz_parity.py)
                edges = [e for e in edges if np.isfinite(e)]
            m = r.random(shape) < 0.35
            e = r.choice(np.array(edges), shape)
            x = np.where(m, e + (0j if dt in COMPLEX else 0), x)
        with np.errstate(over="ignore", invalid="ignore"):
            return np.asarray(x).astype(npdt(dt))


class C:
    """One case: inputs by OpDef arg name (a list arg: a list of arrays), attrs by OpDef name,
    ``consts``: the args fed as Const nodes in the graph path (axes, shapes)."""

    def __init__(self, op, inputs: dict, attrs: dict | None = None, consts=(), tag="", grad=True):
        self.op, self.inputs, self.attrs, self.consts, self.tag, self.grad = op, inputs, attrs or {}, set(consts), tag, grad


def i32(*v):
    return np.array(v if len(v) != 1 or not isinstance(v[0], list) else v[0], dtype=np.int32)


# ---------------------------------------------------------------------------------------- cases

UNARY = {  # op: value kind
    "Abs": "any", "Acos": "unit", "Acosh": "ge1", "Asin": "unit", "Asinh": "any", "Atan": "any", "Atanh": "unit",
    "Ceil": "any", "Conj": "any", "Cos": "any", "Cosh": "any", "Erf": "any", "Erfc": "any", "Exp": "any",
    "Expm1": "any", "Floor": "any", "Identity": "any", "IsFinite": "any", "IsInf": "any", "IsNan": "any",
    "Log": "pos", "Log1p": "pos", "LogicalNot": "any", "Neg": "any", "OnesLike": "any", "Reciprocal": "any",
    "Relu": "any", "Relu6": "any", "Rint": "small", "Round": "small", "Rsqrt": "pos", "Selu": "any", "Sigmoid": "any",
    "Sign": "any", "Sin": "any", "Sinh": "any", "Softplus": "any", "Softsign": "any", "Sqrt": "pos",
    "Square": "any", "Tan": "any", "Tanh": "any", "ZerosLike": "any", "Elu": "any", "StopGradient": "any",
    "LeakyRelu": "any", "L2Loss": "any", "Softmax": "any", "LogSoftmax": "any", "CheckNumerics": "any",
}
BINARY = {
    "Add": "any", "AddV2": "any", "Sub": "any", "Mul": "any", "Div": "any", "RealDiv": "any", "FloorDiv": "any",
    "FloorMod": "any", "TruncateDiv": "any", "TruncateMod": "any", "Maximum": "any", "Minimum": "any",
    "Pow": "small", "Atan2": "any", "SquaredDifference": "any", "DivNoNan": "any", "MulNoNan": "any",
    "Xdivy": "any", "Xlogy": "pos", "Equal": "any", "NotEqual": "any", "Greater": "any", "GreaterEqual": "any",
    "Less": "any", "LessEqual": "any", "LogicalAnd": "any", "LogicalOr": "any",
}
REDUCE = ("Sum", "Prod", "Mean", "Max", "Min", "All", "Any")
SHAPES1 = [(), (0,), (2, 0, 3), (5,), (2, 3, 1, 2), (1, 2, 1, 2, 3)]
SHAPES2 = [((), ()), ((2, 3), (2, 3)), ((2, 1, 3), (4, 1)), ((), (2, 3)), ((0, 3), (1, 3)), ((2, 0, 3), (3,)),
           ((1, 2, 1, 2, 3), (2, 1, 1, 3)), ((6,), ())]


def unary_cases(op, dt, v):
    kind = UNARY[op]
    shapes = SHAPES1
    if op in ("Softmax", "LogSoftmax"):
        shapes = [(0,), (2, 0), (3, 0), (5,), (2, 3, 4), (2, 1, 2, 3)]
    out = []
    for s in shapes:
        attrs = {}
        if op == "LeakyRelu":
            attrs = {"alpha": 0.3}
        if op == "CheckNumerics":
            attrs = {"message": "boom"}
        out.append(C(op, {_first(op): v(dt, s, kind)}, attrs, tag=f"{s}"))
    return out


def _first(op):
    from specflow.ops.registry import get_op
    return get_op(op).inputs[0].name


def binary_cases(op, dt, v):
    kind = BINARY[op]
    out = []
    for sa, sb in SHAPES2:
        a, b = v(dt, sa, kind), v(dt, sb, kind)
        if op in ("Div", "FloorDiv", "FloorMod", "TruncateDiv", "TruncateMod", "RealDiv") and dt in INTS and b.size:
            b = np.where(b == 0, np.ones_like(b), b)  # division by zero: its own cases below
        out.append(C(op, {"x": a, "y": b}, tag=f"{sa}x{sb}"))
    if op in ("Div", "FloorDiv", "FloorMod", "TruncateDiv", "TruncateMod", "RealDiv", "DivNoNan") and dt in INTS:
        out.append(C(op, {"x": np.array([5, 0, 1], dt), "y": np.array([0, 0, 0], dt)}, tag="int/0"))
    if op in ("Div", "FloorDiv", "FloorMod", "TruncateDiv", "TruncateMod", "RealDiv") and dt in SINTS:
        mn = np.iinfo(dt).min
        out.append(C(op, {"x": np.array([mn, mn, 7, -7, 7, -7], dt), "y": np.array([-1, 1, 2, 2, -2, -2], dt)},
                     tag="min/-1"))
    if op == "Pow" and dt in INTS:
        out.append(C(op, {"x": np.array([2, 3, 0, 1, 5], dt), "y": np.array([7, 5, 0, 9, 30], dt)}, tag="int overflow"))
        if dt in SINTS:
            out.append(C(op, {"x": np.array([2, 1, -1], dt), "y": np.array([-1, -2, -3], dt)}, tag="neg exp"))
    if op in ("Add", "AddV2", "Sub", "Mul", "SquaredDifference") and dt in INTS:
        info = np.iinfo(dt)
        out.append(C(op, {"x": np.array([info.max, info.min, info.max, 0], dt),
                          "y": np.array([info.max, info.max, 1, info.max], dt)}, tag="wrap"))
    if op == "LogicalAnd" or op == "LogicalOr":
        out = [C(op, {"x": v("bool", sa), "y": v("bool", sb)}, tag=f"{sa}x{sb}") for sa, sb in SHAPES2]
    return out


def reduce_cases(op, dt, v):
    out = []
    kind = "small" if op == "Prod" else "any"
    for s, axes, kd in [((), [], False), ((0,), [0], False), ((2, 0, 3), [1], True), ((2, 0, 3), [0, 2], False),
                        ((2, 0, 3), [-1], False), ((3, 4), [-1], True), ((3, 4), [-2, 1], False),
                        ((2, 3, 1, 2), [0, -1], True), ((1, 2, 1, 2, 3), [], False),
                        ((1, 2, 1, 2, 3), [1, 3, 4], True), ((4, 5), [0], False)]:
        for idt in ("int32", "int64"):
            x = v(dt, s, kind)
            out.append(C(op, {"input": x, "reduction_indices": np.array(axes, idt)}, {"keep_dims": kd},
                         consts={"reduction_indices"}, tag=f"{s} ax={axes} kd={kd} {idt}"))
    return out


def argminmax_cases(op, dt, v):
    out = []
    for s, ax in [((5,), 0), ((3, 4), -1), ((3, 4), 0), ((2, 3, 1, 2), -2), ((1, 2, 1, 2, 3), 4), ((2, 0, 3), 2)]:
        for ot in ("int32", "int64"):
            out.append(C(op, {"input": v(dt, s), "dimension": np.int32(ax)}, {"output_type": ot},
                         consts={"dimension"}, tag=f"{s} ax={ax} {ot}"))
    return out


def cum_cases(op, dt, v):
    out = []
    kind = "small" if op == "Cumprod" else "any"
    for s, ax in [((5,), 0), ((3, 4), -1), ((0,), 0), ((2, 0, 3), 1), ((2, 3, 1, 2), -3)]:
        for ex in (False, True):
            for rev in (False, True):
                out.append(C(op, {"x": v(dt, s, kind), "axis": np.int32(ax)}, {"exclusive": ex, "reverse": rev},
                             consts={"axis"}, tag=f"{s} ax={ax} ex={ex} rev={rev}"))
    return out


def cast_cases(op, dt, v):
    out = []
    for dst in ALL:
        x = v(dt, (12,))
        if dt in FLOATS + COMPLEX and dst in INTS + ("bool",):
            # float -> int of NaN/inf/out of range is undefined in C++ (tf_fuzz_parity.py): in range only
            x = Vals(len(out), False)(dt, (12,), "small")
            if dst in UINTS:
                x = np.abs(x.astype(np.complex128 if dt in COMPLEX else np.float64)).astype(npdt(dt))
        out.append(C(op, {"x": x}, {"DstT": dst, "Truncate": False}, tag=f"->{dst}", grad=dst in FLOATS + COMPLEX))
    return out


def misc_cases(op, dt, v):
    """The type-generic array ops and the rest, one recipe each."""
    b = lambda s, k="any": v(dt, s, k)  # noqa: E731
    if op == "AddN":
        return [C(op, {"inputs": [b((2, 3)), b((2, 3)), b((2, 3))]}), C(op, {"inputs": [b((0, 2))]}),
                C(op, {"inputs": [b(()), b(())]})]
    if op == "ClipByValue":
        return [C(op, {"t": b((3, 4)), "clip_value_min": b(()), "clip_value_max": b(())}, tag="scalar bounds"),
                C(op, {"t": b((2, 3)), "clip_value_min": np.minimum(b((2, 3)), b((2, 3))),
                       "clip_value_max": np.full((2, 3), 1, npdt(dt))}, tag="full bounds"),
                C(op, {"t": b((0, 3)), "clip_value_min": b(()), "clip_value_max": b(())}, tag="empty")]
    if op in ("Select", "SelectV2"):
        cases = [C(op, {"condition": v("bool", (2, 3)), "t": b((2, 3)), "e": b((2, 3))}),
                 C(op, {"condition": v("bool", (0, 3)), "t": b((0, 3)), "e": b((0, 3))}),
                 C(op, {"condition": v("bool", (2,)), "t": b((2, 3)), "e": b((2, 3))}, tag="vector cond"),
                 C(op, {"condition": v("bool", ()), "t": b((2, 3)), "e": b((2, 3))}, tag="scalar cond")]
        if op == "SelectV2":
            cases.append(C(op, {"condition": v("bool", (3, 1)), "t": b((1, 4)), "e": b(())}, tag="broadcast"))
        return cases
    if op == "ConcatV2":
        return [C(op, {"values": [b((2, 3)), b((2, 0)), b((2, 1))], "axis": np.int32(-1)}, consts={"axis"}),
                C(op, {"values": [b((0, 3)), b((1, 3))], "axis": np.int64(0)}, consts={"axis"})]
    if op == "Pack":
        return [C(op, {"values": [b((2, 3)), b((2, 3))]}, {"axis": -1}), C(op, {"values": [b(()), b(())]}),
                C(op, {"values": [b((0, 2))]}, {"axis": 1})]
    if op == "Unpack":
        return [C(op, {"value": b((2, 3, 0))}, {"num": 3, "axis": -2}), C(op, {"value": b((4,))}, {"num": 4})]
    if op == "Split":
        return [C(op, {"split_dim": np.int32(-1), "value": b((2, 6))}, {"num_split": 3}, consts={"split_dim"}),
                C(op, {"split_dim": np.int32(0), "value": b((0, 2))}, {"num_split": 1}, consts={"split_dim"})]
    if op == "SplitV":
        return [C(op, {"value": b((2, 6)), "size_splits": i32(1, -1, 0), "split_dim": np.int32(-1)}, {"num_split": 3},
                  consts={"size_splits", "split_dim"})]
    if op == "ExpandDims":
        return [C(op, {"input": b(()), "dim": np.int32(-1)}, consts={"dim"}),
                C(op, {"input": b((2, 0)), "dim": np.int64(-3)}, consts={"dim"})]
    if op == "Squeeze":
        return [C(op, {"input": b((1, 2, 1, 1))}, {"squeeze_dims": [-1, 0]}), C(op, {"input": b((1, 0, 1))})]
    if op == "Reshape":
        return [C(op, {"tensor": b((2, 0, 3)), "shape": i32(0, -1)}, consts={"shape"}),
                C(op, {"tensor": b((2, 3, 1, 2)), "shape": np.array([3, -1], np.int64)}, consts={"shape"}),
                C(op, {"tensor": b((1,)), "shape": i32([])}, consts={"shape"})]
    if op == "Transpose":
        return [C(op, {"x": b((1, 2, 1, 2, 3)), "perm": i32(4, 0, 3, 1, 2)}, consts={"perm"}),
                C(op, {"x": b((2, 0, 3)), "perm": np.array([2, 0, 1], np.int64)}, consts={"perm"}),
                C(op, {"x": b(()), "perm": i32([])}, consts={"perm"})]
    if op == "Tile":
        return [C(op, {"input": b((2, 3)), "multiples": i32(2, 0)}, consts={"multiples"}),
                C(op, {"input": b((1, 2, 1, 2)), "multiples": np.array([2, 1, 3, 1], np.int64)}, consts={"multiples"})]
    if op == "ReverseV2":
        return [C(op, {"tensor": b((2, 3, 1, 2)), "axis": i32(-1, 1)}, consts={"axis"}),
                C(op, {"tensor": b((2, 0, 3)), "axis": np.array([0], np.int64)}, consts={"axis"})]
    if op == "Roll":
        return [C(op, {"input": b((3, 4)), "shift": i32(-5, 2), "axis": i32(0, -1)}, consts={"shift", "axis"}),
                C(op, {"input": b((0, 3)), "shift": np.int32(1), "axis": np.int32(1)}, consts={"shift", "axis"})]
    if op == "Slice":
        return [C(op, {"input": b((3, 4, 2)), "begin": i32(1, 0, 1), "size": i32(-1, 2, 0)}, consts={"begin", "size"})]
    if op == "StridedSlice":
        return [C(op, {"input": b((5, 4, 3)), "begin": i32(-1, 0, 0), "end": i32(0, 3, 2), "strides": i32(-2, 2, 1)},
                  {"shrink_axis_mask": 0, "new_axis_mask": 0, "ellipsis_mask": 0, "begin_mask": 0, "end_mask": 4},
                  consts={"begin", "end", "strides"}),
                C(op, {"input": b((5, 4)), "begin": i32(1, 0), "end": i32(2, 0), "strides": i32(1, 1)},
                  {"shrink_axis_mask": 1, "new_axis_mask": 2, "end_mask": 0}, consts={"begin", "end", "strides"})]
    if op in ("Pad", "PadV2", "MirrorPad"):
        pads = i32([[1, 2], [0, 1]])
        if op == "Pad":
            return [C(op, {"input": b((2, 3)), "paddings": pads}, consts={"paddings"}),
                    C(op, {"input": b((0, 2)), "paddings": np.array([[1, 0], [0, 2]], np.int64)}, consts={"paddings"})]
        if op == "PadV2":
            return [C(op, {"input": b((2, 3)), "paddings": pads, "constant_values": b(())}, consts={"paddings"})]
        return [C(op, {"input": b((3, 3)), "paddings": pads}, {"mode": m}, consts={"paddings"}, tag=m)
                for m in ("REFLECT", "SYMMETRIC")]
    if op == "Fill":
        return [C(op, {"dims": i32(2, 0, 3), "value": b(())}, consts={"dims"}),
                C(op, {"dims": np.array([2, 3], np.int64), "value": b(())}, consts={"dims"})]
    if op in ("Shape", "Size", "Rank"):
        return [C(op, {"input": b(s)}, {"out_type": ot} if op != "Rank" else {}, tag=f"{s} {ot}", grad=False)
                for s in ((), (2, 0, 3)) for ot in ("int32", "int64")]
    if op == "BroadcastTo":
        return [C(op, {"input": b((3, 1)), "shape": i32(2, 3, 4)}, consts={"shape"}),
                C(op, {"input": b(()), "shape": np.array([0, 2], np.int64)}, consts={"shape"})]
    if op == "BroadcastArgs":
        if dt not in ("int32", "int64"):
            return [C(op, {"s0": np.array([2, 1], npdt(dt)), "s1": np.array([3], npdt(dt))}, grad=False)]
        return [C(op, {"s0": np.array([2, 1, 3], dt), "s1": np.array([4, 1], dt)}, grad=False),
                C(op, {"s0": np.array([0, 1], dt), "s1": np.array([], dt)}, grad=False)]
    if op in ("Gather", "GatherV2"):
        params = b((4, 3))
        idx = i32([[3, 0], [-1 if False else 1, 2]])
        if op == "Gather":
            return [C(op, {"params": params, "indices": idx}), C(op, {"params": params, "indices": idx.astype(np.int64)})]
        return [C(op, {"params": params, "indices": idx, "axis": np.int32(-1)}, consts={"axis"}),
                C(op, {"params": b((2, 4, 3)), "indices": np.array([[1, 0]], np.int64), "axis": np.int64(1)},
                  {"batch_dims": 1}, consts={"axis"}),
                C(op, {"params": b((0, 3)), "indices": np.zeros((0,), np.int32), "axis": np.int32(0)}, consts={"axis"})]
    if op == "GatherNd":
        return [C(op, {"params": b((3, 4, 2)), "indices": i32([[2, 1], [0, 3]])}),
                C(op, {"params": b((3, 4)), "indices": np.zeros((0, 2), np.int64)})]
    if op == "ScatterNd":
        return [C(op, {"indices": i32([[1], [3], [1]]), "updates": b((3, 2)), "shape": i32(5, 2)}, consts={"shape"})]
    if op in ("TensorScatterAdd", "TensorScatterUpdate"):
        return [C(op, {"tensor": b((4, 2)), "indices": i32([[1], [3]]), "updates": b((2, 2))})]
    if op == "OneHot":
        return [C(op, {"indices": i32([[0, 2], [-1, 5]]), "depth": np.int32(4), "on_value": b(()),
                       "off_value": b(())}, {"axis": ax}, consts={"depth"}, tag=f"axis={ax}") for ax in (-1, 0)]
    if op == "Range":
        if dt in ("int32", "int64"):
            return [C(op, {"start": np.array(7, dt), "limit": np.array(-3, dt), "delta": np.array(-3, dt)}, grad=False)]
        if dt in FLOATS:
            return [C(op, {"start": np.array(0.5, npdt(dt)), "limit": np.array(3.7, npdt(dt)),
                           "delta": np.array(0.4, npdt(dt))}, grad=False)]
        return [C(op, {"start": np.array(1, npdt(dt)), "limit": np.array(5, npdt(dt)),
                       "delta": np.array(2, npdt(dt))}, grad=False)]
    if op == "LinSpace":
        return [C(op, {"start": np.array(-1.5, npdt(dt)), "stop": np.array(2.5, npdt(dt)), "num": np.int32(n)},
                  consts={"num"}, grad=False, tag=f"num={n}") for n in (1, 7)]
    if op == "Where":
        return [C(op, {"input": b((2, 3, 1, 2))}, grad=False), C(op, {"input": b((0, 3))}, grad=False),
                C(op, {"input": b(())}, grad=False)]
    if op == "Unique":
        x = b((9,), "small")
        return [C(op, {"x": x}, {"out_idx": oi}, grad=False, tag=oi) for oi in ("int32", "int64")]
    if op == "TopKV2":
        return [C(op, {"input": b((3, 5)), "k": np.int32(2)}, {"sorted": True}, consts={"k"}),
                C(op, {"input": b((2, 0)), "k": np.int32(0)}, consts={"k"})]
    if op == "InTopKV2":
        return [C(op, {"predictions": b((3, 4)), "targets": i32(0, 3, 1), "k": np.int32(2)}, grad=False)]
    if op == "Bincount":
        return [C(op, {"arr": i32(0, 3, 3, 1, 9), "size": np.int32(5), "weights": b((5,))}, grad=False),
                C(op, {"arr": i32(0, 3), "size": np.int32(4), "weights": np.zeros((0,), npdt(dt))}, grad=False)]
    if op == "SegmentSum":
        return [C(op, {"data": b((4, 2)), "segment_ids": i32(0, 0, 2, 2)}),
                C(op, {"data": b((0, 2)), "segment_ids": np.zeros((0,), np.int64)})]
    if op in ("UnsortedSegmentSum", "UnsortedSegmentMax"):
        return [C(op, {"data": b((4, 2)), "segment_ids": i32(0, 3, 0, -1), "num_segments": np.int32(4)},
                  consts={"num_segments"}),
                C(op, {"data": b((2, 3, 2)), "segment_ids": i32([[1, 0, 1], [1, 1, 0]]),
                       "num_segments": np.int64(3)}, consts={"num_segments"})]
    if op == "DynamicPartition":
        return [C(op, {"data": b((5, 2)), "partitions": i32(1, 0, 2, 1, 1)}, {"num_partitions": 3})]
    if op == "DynamicStitch":
        return [C(op, {"indices": [i32(0, 2), i32([[1], [3]])], "data": [b((2, 3)), b((2, 1, 3))]})]
    if op == "Diag":
        return [C(op, {"diagonal": b((2, 3))}), C(op, {"diagonal": b((0,))})]
    if op == "MatrixBandPart":
        return [C(op, {"input": b((2, 3, 4)), "num_lower": np.int64(1), "num_upper": np.int64(-1)},
                  consts={"num_lower", "num_upper"})]
    if op == "MatrixDiagV3":
        return [C(op, {"diagonal": b((2, 3)), "k": i32(-1, 0), "num_rows": np.int32(-1), "num_cols": np.int32(-1),
                       "padding_value": b(())}, {"align": "LEFT_RIGHT"}, consts={"k", "num_rows", "num_cols"})]
    if op == "ReverseSequence":
        return [C(op, {"input": b((3, 4, 2)), "seq_lengths": np.array([4, 0, 2], np.int64)},
                  {"seq_dim": 1, "batch_dim": 0})]
    if op == "IdentityN":
        return [C(op, {"input": [b((2,)), b(())]})]
    if op == "Cross":
        return [C(op, {"a": b((2, 3)), "b": b((2, 3))})]
    if op == "Einsum":
        return [C(op, {"inputs": [b((2, 3)), b((3, 4))]}, {"equation": "ij,jk->ik"}),
                C(op, {"inputs": [b((2, 3, 3))]}, {"equation": "bii->b"})]
    if op == "MatMul":
        return [C(op, {"a": b((2, 3)), "b": b((4, 3))}, {"transpose_b": True}), C(op, {"a": b((0, 3)), "b": b((3, 2))})]
    if op in ("BatchMatMul", "BatchMatMulV2", "BatchMatMulV3"):
        extra = {"Tout": dt} if op == "BatchMatMulV3" else {}
        shapes = [((2, 2, 3), (2, 3, 4))] if op == "BatchMatMul" else [((2, 1, 2, 3), (3, 3, 4)), ((0, 2, 3), (3, 1))]
        return [C(op, {"x": b(sa), "y": b(sb)}, {"adj_x": False, **extra}, tag=f"{sa}@{sb}") for sa, sb in shapes]
    if op == "Cholesky":
        a = b((2, 3, 3), "unit").astype(np.complex128 if dt in COMPLEX else np.float64)
        a = a @ np.swapaxes(a.conj(), -1, -2) + 3 * np.eye(3)
        return [C(op, {"input": a.astype(npdt(dt))})]
    if op == "MatrixInverse":
        a = b((2, 3, 3), "unit").astype(np.complex128 if dt in COMPLEX else np.float64) + 3 * np.eye(3)
        return [C(op, {"input": a.astype(npdt(dt))}, {"adjoint": adj}, tag=f"adj={adj}") for adj in (False, True)]
    if op in ("SpaceToDepth", "DepthToSpace"):
        x = b((1, 4, 4, 8))
        return [C(op, {"input": x}, {"block_size": 2})]
    if op in ("SpaceToBatchND", "BatchToSpaceND"):
        if op == "SpaceToBatchND":
            return [C(op, {"input": b((1, 4, 3, 2)), "block_shape": i32(2, 2), "paddings": i32([[0, 0], [1, 0]])},
                      consts={"block_shape", "paddings"})]
        return [C(op, {"input": b((4, 2, 2, 1)), "block_shape": i32(2, 2), "crops": i32([[0, 1], [1, 0]])},
                  consts={"block_shape", "crops"})]
    if op == "BiasAdd":
        return [C(op, {"value": b((2, 3, 4)), "bias": b((4,))}),
                C(op, {"value": b((2, 4, 3, 3)), "bias": b((4,))}, {"data_format": "NCHW"}, tag="NCHW"),
                C(op, {"value": b((0, 4)), "bias": b((4,))})]
    if op in ("SoftmaxCrossEntropyWithLogits",):
        lab = np.abs(b((3, 4), "unit"))
        return [C(op, {"features": b((3, 4)), "labels": lab}), C(op, {"features": b((0, 4)), "labels": b((0, 4))})]
    if op == "SparseSoftmaxCrossEntropyWithLogits":
        return [C(op, {"features": b((3, 4)), "labels": i32(0, 3, 1)}),
                C(op, {"features": b((3, 4)), "labels": np.array([0, 3, 1], np.int64)})]
    if op in ("Conv2D", "DepthwiseConv2dNative"):
        fshape = (2, 2, 3, 2)
        return [C(op, {"input": b((1, 5, 5, 3), "unit"), "filter": b(fshape, "unit")},
                  {"strides": [1, 2, 1, 1], "padding": p}, tag=p) for p in ("SAME", "VALID")]
    if op == "Conv2DBackpropInput":
        return [C(op, {"input_sizes": i32(1, 5, 5, 3), "filter": b((2, 2, 3, 2), "unit"),
                       "out_backprop": b((1, 3, 5, 2), "unit")}, {"strides": [1, 2, 1, 1], "padding": "SAME"},
                  consts={"input_sizes"})]
    if op == "Conv3D":
        return [C(op, {"input": b((1, 3, 4, 4, 2), "unit"), "filter": b((2, 2, 2, 2, 3), "unit")},
                  {"strides": [1, 1, 2, 1, 1], "padding": "SAME"})]
    if op in ("AvgPool", "MaxPool"):
        return [C(op, {"value" if op == "AvgPool" else "input": b((1, 5, 5, 2))},
                  {"ksize": [1, 2, 3, 1], "strides": [1, 2, 2, 1], "padding": p}, tag=p) for p in ("SAME", "VALID")]
    if op == "MaxPoolV2":
        return [C(op, {"input": b((1, 5, 5, 2)), "ksize": i32(1, 2, 2, 1), "strides": i32(1, 2, 2, 1)},
                  {"padding": "SAME"}, consts={"ksize", "strides"})]
    if op == "MaxPoolWithArgmax":
        return [C(op, {"input": b((2, 4, 4, 2))}, {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "VALID",
                                                    "Targmax": t}, tag=t) for t in ("int64", "int32")]
    if op == "AvgPool3D":
        return [C(op, {"input": b((1, 3, 4, 4, 2))}, {"ksize": [1, 2, 2, 2, 1], "strides": [1, 1, 2, 2, 1],
                                                     "padding": "SAME"})]
    if op == "LRN":
        return [C(op, {"input": b((1, 2, 2, 6))}, {"depth_radius": 2, "bias": 1.0, "alpha": 0.5, "beta": 0.75})]
    if op in ("FusedBatchNorm", "FusedBatchNormV3"):
        x = b((2, 3, 3, 4), "unit")
        sdt = "float32" if dt in ("float16", "bfloat16") else dt
        pv = Vals(7, False)
        return [C(op, {"x": x, "scale": pv(sdt, (4,)), "offset": pv(sdt, (4,)), "mean": pv(sdt, (4,)),
                       "variance": pv(sdt, (4,), "pos")}, {"is_training": tr, "epsilon": 0.001},
                  tag=f"train={tr}", grad=False) for tr in (True, False)]
    if op in ("ResizeBilinear", "ResizeNearestNeighbor"):
        return [C(op, {"images": b((1, 3, 4, 2)), "size": i32(5, 3)}, {"align_corners": False, "half_pixel_centers": True},
                  consts={"size"})]
    return []


def cases_for(op, dt, v):
    if op in UNARY:
        return unary_cases(op, dt, v)
    if op in BINARY:
        return binary_cases(op, dt, v)
    if op in REDUCE:
        return reduce_cases(op, dt, v)
    if op in ("ArgMax", "ArgMin"):
        return argminmax_cases(op, dt, v)
    if op in ("Cumsum", "Cumprod", "CumulativeLogsumexp"):
        return cum_cases(op, dt, v)
    if op == "Cast":
        return cast_cases(op, dt, v)
    return misc_cases(op, dt, v)


# ----------------------------------------------------------------------------------- running

def run_ours_eager(case):
    from specflow.api.op_functions import call
    out = call(case.op, **case.inputs, **case.attrs)
    outs = out if isinstance(out, (list, tuple)) else [out]
    flat = []
    for o in outs:
        flat.extend(o if isinstance(o, (list, tuple)) else [o])
    return [np.asarray(o.numpy()) for o in flat]


def _build_graph(case, b):
    from specflow.graph import dtypes
    from specflow.ops.registry import get_op
    opdef = get_op(case.op)
    names, feeds = [], {}
    for arg in opdef.inputs:
        if arg.name not in case.inputs:
            continue
        vals = case.inputs[arg.name]
        for j, x in enumerate(vals if arg.is_list else [vals]):
            x = np.asarray(x)
            nm = f"{arg.name}_{j}"
            if arg.name in case.consts:
                names.append(b.const(x, dtypes.as_dtype(x.dtype), name=nm))
            else:
                names.append(b.add_op("Placeholder", [], {"dtype": dtypes.as_dtype(x.dtype), "shape": list(x.shape)},
                                      name=nm).name)
                feeds[names[-1]] = x
    node = b.add_op(case.op, names, dict(case.attrs), name="op")
    return node, names, feeds


def run_ours_graph(case):
    """The op in a graph (Placeholders fed, axes as Consts); the outputs and their static specs."""
    from specflow.graph.builder import GraphBuilder
    from specflow.ops.registry import get_op, output_dtypes
    from specflow.runtime.session import Session
    b = GraphBuilder()
    node, names, feeds = _build_graph(case, b)
    n = len(output_dtypes(get_op(case.op), node.attrs))
    fetches = [node.name if k == 0 else f"{node.name}:{k}" for k in range(n)]
    specs = [b.spec(f) for f in fetches]
    with Session(b.graph_def) as s:
        outs = s.run(fetches, feeds)
    return [np.asarray(o) for o in outs], specs


def tf_call(tf, case):
    fn = getattr(tf.raw_ops, case.op)
    params = set(inspect.signature(fn).parameters)
    kw = {}
    for k, x in case.inputs.items():
        kw[RENAMED.get((case.op, k), k)] = [tf.constant(a) for a in x] if isinstance(x, list) else tf.constant(x)
    for k, x in case.attrs.items():
        k = RENAMED.get((case.op, k), k)
        if k in params:
            kw[k] = x
    with tf.device("/cpu:0"):
        out = fn(**kw)
    return [np.asarray(t.numpy()) for t in tf.nest.flatten(out)]


def _ulps(dt):
    return {"float16": 1e-3, "bfloat16": 8e-3}.get(dt)


def compare(op, got, want, loose=1.0):
    """Problems of ``got`` against TF's ``want`` (lists of arrays)."""
    bad = []
    if len(got) != len(want):
        return [f"{len(got)} outputs vs TF {len(want)}"]
    for i, (g, w) in enumerate(zip(got, want)):
        if g.dtype != w.dtype:
            bad.append(f"out{i} dtype {g.dtype} vs TF {w.dtype}")
            continue
        if g.shape != w.shape:
            bad.append(f"out{i} shape {g.shape} vs TF {w.shape}")
            continue
        name = w.dtype.name
        if name == "bfloat16" or w.dtype.kind in "fc":
            gc = g.astype(np.complex128) if w.dtype.kind == "c" else g.astype(np.float64)
            wc = w.astype(np.complex128) if w.dtype.kind == "c" else w.astype(np.float64)
            parts = [(gc.real, wc.real), (gc.imag, wc.imag)] if w.dtype.kind == "c" else [(gc, wc)]
            rel = _ulps(name) or {"float32": 1e-5, "complex64": 1e-5}.get(name, 1e-12)
            rel *= loose
            for gp, wp in parts:
                nan = np.isnan(gp) != np.isnan(wp)
                inf = np.isinf(wp) & (gp != wp)
                fin = np.isfinite(wp) & np.isfinite(gp)
                inf |= np.isinf(gp) & np.isfinite(wp)
                err = np.abs(gp - wp)
                tol = rel * np.abs(wp) + rel * 1e-3 * max(1.0, float(np.abs(wp[fin]).max()) if fin.any() else 1.0)
                if name in ("float16", "bfloat16"):  # one rounding apart: an ulp of the larger
                    sp = np.abs(wp) * (2.0 ** -10 if name == "float16" else 2.0 ** -7) * loose
                    tol = np.maximum(sp, 6e-8 if name == "float16" else 1e-38)
                over = fin & (err > tol)
                zsign = fin & (wp == 0) & (gp == 0) & (np.signbit(gp) != np.signbit(wp))
                if nan.any() or inf.any() or over.any():
                    k = np.argwhere(nan | inf | over)[0]
                    bad.append(f"out{i} {int((nan | inf | over).sum())}/{w.size} differ e.g. at {tuple(k)}: "
                               f"ours {gp[tuple(k)]!r} TF {wp[tuple(k)]!r}")
                    break
                if zsign.any():
                    bad.append(f"out{i} sign of zero differs at {int(zsign.sum())} places")
                    break
        elif not np.array_equal(g, w):
            k = np.argwhere(g != w)[0] if g.ndim else ()
            bad.append(f"out{i} {int((g != w).sum())}/{w.size} differ e.g. at {tuple(k)}: ours {g[tuple(k)]!r} "
                       f"TF {w[tuple(k)]!r}")
    return bad


def _float_outs(outs):
    return [k for k, o in enumerate(outs) if o.dtype.kind in "fc" and o.dtype.name not in ("float16", "bfloat16")]


def grads_tf(tf, case, wrt, weights):
    fn = getattr(tf.raw_ops, case.op)
    params = set(inspect.signature(fn).parameters)
    consts = {k: tf.constant(x) for k, x in case.inputs.items() if not isinstance(x, list)}
    with tf.GradientTape() as tape:
        for k in wrt:
            tape.watch(consts[k])
        kw = {RENAMED.get((case.op, k), k): consts.get(k) if not isinstance(x, list) else [tf.constant(a) for a in x]
              for k, x in case.inputs.items()}
        kw.update({RENAMED.get((case.op, k), k): x for k, x in case.attrs.items()
                   if RENAMED.get((case.op, k), k) in params})
        with tf.device("/cpu:0"):
            out = tf.nest.flatten(fn(**kw))
        loss = tf.add_n([tf.reduce_sum(out[k] * tf.constant(w)) for k, w in weights.items()])
    gs = tape.gradient(loss, [consts[k] for k in wrt])
    return [None if g is None else np.asarray(tf.convert_to_tensor(g).numpy()) for g in gs]


def grads_ours(case, wrt, weights):
    import specflow as sf
    from specflow.api.op_functions import call
    xs = {k: sf.constant(x) for k, x in case.inputs.items() if k in wrt}
    with sf.GradientTape() as tape:
        for k in wrt:
            tape.watch(xs[k])
        out = call(case.op, **{k: xs.get(k, x) for k, x in case.inputs.items()}, **case.attrs)
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        terms = [call("Sum", call("Mul", outs[k], sf.constant(w)), np.arange(w.ndim, dtype=np.int32))
                 for k, w in weights.items()]
        loss = terms[0] if len(terms) == 1 else call("AddN", terms)
    gs = tape.gradient(loss, [xs[k] for k in wrt])
    return [None if g is None else np.asarray(sf.convert_to_tensor(g).numpy()) for g in gs]


def grads_graph(case, wrt, weights):
    from specflow.graph import dtypes
    from specflow.graph.builder import GraphBuilder
    from specflow.runtime.session import Session
    from specflow.train.gradients import gradients
    b = GraphBuilder()
    node, names, feeds = _build_graph(case, b)
    terms = []
    for k, w in weights.items():
        out = node.name if k == 0 else f"{node.name}:{k}"
        prod = b.add_op("Mul", [out, b.const(w, dtypes.as_dtype(w.dtype), name=f"w{k}")]).name
        terms.append(b.add_op("Sum", [prod, b.const(np.arange(w.ndim, dtype=np.int32), name=f"ax{k}")]).name)
    loss = terms[0] if len(terms) == 1 else b.add_op("AddN", terms).name
    xs = [f"{k}_0" for k in wrt]
    gs = gradients(b, [loss], xs)
    with Session(b.graph_def) as s:
        return [None if g is None else np.asarray(s.run(g, feeds)) for g in gs]


def check_grads(tf, case, dt, outs, report):
    from specflow.ops.registry import get_op
    if dt not in ("float32", "float64", "complex64", "complex128") or not case.grad:
        return
    opdef = get_op(case.op)
    wrt = [a.name for a in opdef.inputs if a.name in case.inputs and not a.is_list and a.name not in case.consts
           and np.asarray(case.inputs[a.name]).dtype.kind in "fc"]
    fo = _float_outs(outs)
    if not wrt or not fo:
        return
    r = np.random.default_rng(11)
    weights = {}
    for k in fo:
        w = r.uniform(0.5, 1.5, outs[k].shape)
        if outs[k].dtype.kind == "c":
            w = w + 1j * r.uniform(-1, 1, outs[k].shape)
        weights[k] = w.astype(outs[k].dtype)
    # finite inputs: gradients at NaN/inf are conventions of their own
    case = C(case.op, {k: (np.nan_to_num(x, nan=0.5, posinf=3.0, neginf=-3.0) if not isinstance(x, list)
                           and np.asarray(x).dtype.kind in "fc" else x) for k, x in case.inputs.items()},
             case.attrs, case.consts, case.tag)
    try:
        theirs = grads_tf(tf, case, wrt, weights)
    except Exception as e:
        return report("GRAD-TF-REFUSED", f"{type(e).__name__}: {str(e).splitlines()[0][:100]}")
    for how, fn in (("eager", grads_ours), ("graph", grads_graph)):
        try:
            ours = fn(case, wrt, weights)
        except Exception as e:
            if all(t is None for t in theirs):
                continue
            report(f"GRAD-{how.upper()}-FAILED", f"{type(e).__name__}: {str(e).splitlines()[0][:160]}")
            continue
        gs, ts = [], []
        for k, g, t in zip(wrt, ours, theirs):
            x = np.asarray(case.inputs[k])
            if t is None and g is None:
                continue
            gs.append(np.zeros_like(x) if g is None else g)
            ts.append(np.zeros_like(x) if t is None else t)
        bad = compare(case.op, gs, ts, loose=10.0)
        if bad:
            report(f"GRAD-{how.upper()}", "; ".join(bad))


def main(argv):
    import tensorflow as tf
    tf.get_logger().setLevel("ERROR")
    from specflow.errors import SpecflowError
    from specflow.ops.registry import get_op

    verbose = "-v" in argv
    only = [a for a in argv if not a.startswith("-")]
    common = [ln.strip() for ln in open(os.path.join(os.path.dirname(__file__), "..", "..", "shared",
                                                       "tf_common_ops.txt")) if ln.strip() and not ln.startswith("#")]
    ops = []
    for op in common:
        try:
            get_op(op)
            ops.append(op)
        except Exception:
            pass
    counts = Counter()
    problems, groups, order = [], {}, []
    for n_op, op in enumerate(ops):
        if only and op not in only:
            continue
        for n_dt, dt in enumerate(ALL):
            seed = n_op * len(ALL) + n_dt + 1  # the same values whichever ops run
            for edge in (False, True):
                try:
                    cases = cases_for(op, dt, Vals(seed * 2 + edge, edge))
                except Exception as e:
                    problems.append(f"SCRIPT {op} [{dt}]: {type(e).__name__} {e}")
                    continue
                for case in cases:
                    tag = f"{op} [{dt}{' edge' if edge else ''}] {case.tag}"

                    def report(kind, msg, tag=tag, dt=dt, op=op):
                        # one line per (kind, op, dtype): the first example and how many
                        key = (kind, op, dt)
                        if key not in groups:
                            groups[key] = [0, f"{tag}: {msg}"]
                            order.append(key)
                        groups[key][0] += 1
                        counts[kind] += 1

                    try:
                        want = tf_call(tf, case)
                        tf_err = None
                    except Exception as e:
                        want, tf_err = None, e
                    for how in ("eager", "graph"):
                        try:
                            if how == "eager":
                                got, specs = run_ours_eager(case), None
                            else:
                                got, specs = run_ours_graph(case)
                            err = None
                        except SpecflowError as e:
                            got, err = None, e
                        except Exception as e:  # not specflow's error: a crash
                            got, err = None, e
                            report(f"CRASH-{how.upper()}", f"{type(e).__name__}: {str(e).splitlines()[0][:160]}")
                            continue
                        if tf_err is not None and err is None:
                            kind = ("EXTRA-OPDEF" if "not in the list of allowed values" in str(tf_err) else
                                    "EXTRA-KERNEL" if "NotFound" in type(tf_err).__name__ or "kernel" in str(tf_err)
                                    else "NO-ERROR")
                            report(f"{kind}-{how.upper()}", f"TF: {type(tf_err).__name__}: "
                                   f"{str(tf_err).splitlines()[0][:120]}")
                        elif tf_err is None and err is not None:
                            report(f"REFUSED-{how.upper()}", f"{str(err).splitlines()[0][:200]}")
                        elif tf_err is None:
                            bad = compare(op, got, want)
                            if specs is not None:
                                for sp, g in zip(specs, got):
                                    if sp.dtype.name != g.dtype.name and not (sp.dtype.name == "bfloat16"):
                                        bad.append(f"static dtype {sp.dtype.name} vs {g.dtype}")
                                    if sp.shape.dims is not None and (len(sp.shape.dims) != g.ndim or any(
                                            d is not None and d != n for d, n in zip(sp.shape.dims, g.shape))):
                                        bad.append(f"static shape {sp.shape} vs {g.shape}")
                            if bad:
                                report(f"MISMATCH-{how.upper()}", "; ".join(bad))
                            else:
                                counts["match"] += 1
                        else:
                            counts["both-refuse"] += 1
                            if verbose:
                                print(f"both refuse {tag}: {str(err).splitlines()[0][:100]}")
                    if tf_err is None and want is not None:
                        check_grads(tf, case, dt, want, report)
    for p in problems:
        print(p)
    for key in order:
        n, first = groups[key]
        print(f"{key[0]} x{n} {first}")
    print(dict(counts))
    return 1 if problems or groups else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
