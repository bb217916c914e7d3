"""Cases for math_ops: elementwise arithmetic, comparisons, logic, Select, Cast, AddN, matmul."""

import numpy as np

from tests.ops.harness import Case, bools, f32, f64, i32, i64, pos32


def _c64(*shape):
    return (f32(*shape) + 1j * f32(*shape)).astype(np.complex64)


def _nonzero_i32(*shape):
    x = i32(*shape, low=1, high=9)
    return (x * np.where(bools(*shape), 1, -1)).astype(np.int32)


def _trunc_div(x, y):
    # C semantics spelled out with numpy's floor division on magnitudes.
    return ((np.abs(x) // np.abs(y)) * np.sign(x) * np.sign(y)).astype(x.dtype)


# Signed operands covering every sign combination, for the integer division rules.
_NUM = np.array([7, -7, 7, -7, 6, -6, 0, 1], dtype=np.int32)
_DEN = np.array([2, 2, -2, -2, 3, -4, 5, -3], dtype=np.int32)

_BINARY = [
    Case("Add", [f32(2, 3), f32(3)], ref=np.add, id="Add-broadcast"),
    Case(
        "Add",
        [np.array([b"ab", b"c"], dtype=object), np.array([b"x", b"yz"], dtype=object)],
        ref=np.add,
        id="Add-string",
    ),
    Case("AddV2", [f32(4, 1), f32(1, 5)], ref=np.add, id="AddV2-outer"),
    Case("AddV2", [i32(2, 3), i32()], ref=np.add, id="AddV2-int-scalar"),
    Case("Sub", [f64(3, 4), f64(4)], ref=np.subtract),
    Case("Mul", [i64(2, 3), i64(2, 1)], ref=np.multiply),
    Case("Mul", [_c64(3), _c64(3)], ref=np.multiply, id="Mul-complex", rtol=1e-5),
    Case("Div", [f32(3, 4), pos32(4)], ref=np.divide, rtol=1e-5),
    Case("Div", [_NUM, _DEN], ref=_trunc_div, id="Div-int-truncates"),
    Case(
        "Div",
        [np.array([-7, 7], np.int64), np.array(2, np.int64)],
        ref=lambda x, y: np.array([-3, 3]),
        id="Div-int64-literal",
    ),
    Case("RealDiv", [f32(2, 3), pos32(2, 1)], ref=np.divide, rtol=1e-5),
    Case("FloorDiv", [_NUM, _DEN], ref=np.floor_divide, id="FloorDiv-int-floors"),
    Case("FloorDiv", [f32(5), pos32(5)], ref=lambda x, y: np.floor(x / y), id="FloorDiv-float"),
    Case("FloorMod", [_NUM, _DEN], ref=np.remainder, id="FloorMod-int"),
    Case(
        "FloorMod",
        [f64(6), np.array([1.5, -1.5, 2.0, -2.0, 0.7, -0.7])],
        ref=np.remainder,
        id="FloorMod-float",
    ),
    Case("FloorMod", [np.array([1.0, -1.0, 0.0, -0.0, 3.0], np.float32), np.array([-0.5, 0.5, -2.0, 2.0, -np.inf], np.float32)],
         check=lambda outs, ins: np.testing.assert_array_equal(np.signbit(outs[0]), [False, True, False, True, True]),
         id="FloorMod-float-exact-multiple-keeps-dividend-zero"),  # TF: fmod, + y only when nonzero
    Case("Pow", [pos32(3, 2), f32(2)], ref=np.power, rtol=1e-5),
    Case("Pow", [i32(4), np.array([0, 1, 2, 3], np.int32)], ref=np.power, id="Pow-int"),
    Case("Maximum", [f32(2, 3), f32(3)], ref=np.maximum),
    Case("Minimum", [i32(2, 3), i32(2, 1)], ref=np.minimum),
    Case("SquaredDifference", [f32(3, 2), f32(2)], ref=lambda x, y: (x - y) ** 2, rtol=1e-5),
    Case(
        "SquaredDifference",
        [_c64(3), _c64(3)],
        ref=lambda x, y: (x - y) * np.conj(x - y),
        rtol=1e-5,
        id="SquaredDifference-complex",
    ),
]

_HALVES = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4, -2.6], dtype=np.float32)
_SPECIAL = np.array([0.0, 1.0, -1.0, np.nan, np.inf, -np.inf], dtype=np.float32)

_UNARY = [
    Case("Neg", [i32(2, 3)], ref=np.negative),
    Case("Abs", [f32(4)], ref=np.abs),
    Case("Abs", [i64(4)], ref=np.abs, id="Abs-int"),
    Case("Square", [f32(2, 2)], ref=np.square),
    Case("Square", [i32(5)], ref=np.square, id="Square-int"),
    Case("Square", [np.array([3, 200, 255], np.uint8)], ref=np.square, id="Square-uint8"),  # TF's op takes unsigned (wraps)
    Case("Sqrt", [pos32(3)], ref=np.sqrt),
    Case("Rsqrt", [pos32(3)], ref=lambda x: 1 / np.sqrt(x), rtol=1e-5),
    Case("Exp", [f64(3)], ref=np.exp),
    Case("Log", [pos32(3)], ref=np.log, rtol=1e-5),
    Case("Log1p", [pos32(3)], ref=np.log1p, rtol=1e-5),
    Case("Tanh", [f32(3)], ref=np.tanh, rtol=1e-5),
    Case("Sigmoid", [f32(5)], ref=lambda x: 1 / (1 + np.exp(-x)), rtol=1e-5),
    Case(
        "Sigmoid",
        [np.array([-100.0, -30.0, 0.0, 30.0, 100.0])],
        ref=lambda x: 1 / (1 + np.exp(-x)),
        rtol=1e-12,
        atol=0,
        id="Sigmoid-extremes",
    ),
    Case("Sin", [f32(3)], ref=np.sin, rtol=1e-5),
    Case("Cos", [f32(3)], ref=np.cos, rtol=1e-5),
    Case("Sign", [np.array([-2.5, 0.0, 3.0], np.float32)], ref=np.sign),
    Case(
        "Sign",
        [np.array([3 + 4j, 0j, -2j], np.complex64)],
        ref=lambda x: np.array([0.6 + 0.8j, 0, -1j]),
        id="Sign-complex",
    ),
    Case("Floor", [_HALVES], ref=np.floor),
    Case("Ceil", [_HALVES], ref=np.ceil),
    Case(
        "Round", [_HALVES], ref=lambda x: np.array([0, 2, 2, -0, -2, 2, -3], np.float32), id="Round-bankers"
    ),
    Case("Round", [i32(4)], ref=lambda x: x, id="Round-int"),
    Case("Reciprocal", [pos32(3)], ref=np.reciprocal, rtol=1e-5),
    Case(
        "Reciprocal",
        [np.array([1, -1, 2, -3], np.int32)],
        ref=lambda x: np.array([1, -1, 0, 0]),
        id="Reciprocal-int",
    ),
    Case("IsNan", [_SPECIAL], ref=np.isnan),
    Case("IsFinite", [_SPECIAL], ref=np.isfinite),
]

_LOGIC = [
    Case("Equal", [i32(3, 4), i32(4)], ref=np.equal),
    Case(
        "Equal",
        [np.array([b"a", b"b"], dtype=object), np.array([b"a", b"c"], dtype=object)],
        ref=lambda x, y: np.array([True, False]),
        id="Equal-string",
    ),
    Case(
        "Equal",
        [f32(2), f32(3)],
        attrs={"incompatible_shape_error": False},
        ref=lambda x, y: np.array(False),
        id="Equal-incompatible-scalar",
    ),
    Case("NotEqual", [i32(2, 3), i32(2, 1)], ref=np.not_equal),
    Case(
        "NotEqual",
        [f32(2), f32(3)],
        attrs={"incompatible_shape_error": False},
        ref=lambda x, y: np.array(True),
        id="NotEqual-incompatible-scalar",
    ),
    Case("Less", [f32(3, 1), f32(4)], ref=np.less),
    Case("LessEqual", [i32(5), i32(5)], ref=np.less_equal),
    Case("Greater", [f64(2, 2), f64()], ref=np.greater),
    Case("GreaterEqual", [i64(3), i64(3)], ref=np.greater_equal),
    Case("LogicalAnd", [bools(2, 3), bools(3)], ref=np.logical_and),
    Case("LogicalOr", [bools(4), bools(4)], ref=np.logical_or),
    Case("LogicalNot", [bools(2, 2)], ref=np.logical_not),
]


def _row_select(c, t, e):
    return np.where(c[:, None, None], t, e)


_SELECT = [
    Case("Select", [bools(2, 3), f32(2, 3), f32(2, 3)], ref=np.where),
    Case("Select", [bools(4), i32(4, 2, 3), i32(4, 2, 3)], ref=_row_select, id="Select-rows"),
    Case("Select", [np.array(True), f32(2), f32(2)], ref=np.where, id="Select-scalar"),
    Case("SelectV2", [bools(3, 1), f32(1, 4), f32(4)], ref=np.where),
    Case("SelectV2", [bools(), i64(2), i64(2)], ref=np.where, id="SelectV2-scalar-cond"),
    # a scalar condition picks one operand whole, or broadcasts the smaller one it picks
    Case("SelectV2", [np.array(True), f32(2, 3), np.float32(0)], ref=np.where, id="SelectV2-scalar-true-picks-t"),
    Case("SelectV2", [np.array(True), np.float32(0), f32(2, 3)], ref=np.where, id="SelectV2-scalar-true-broadcasts"),
    Case("SelectV2", [np.array(False), f32(1, 3), f32(2, 1)], ref=np.where, id="SelectV2-scalar-false-broadcasts"),
]

_FLOATS_TO_CAST = np.array([2.7, -2.7, 0.5, -0.5, 1e3], dtype=np.float32)

_CAST = [
    Case(
        "Cast",
        [_FLOATS_TO_CAST],
        attrs={"DstT": "int32"},
        ref=lambda x: np.array([2, -2, 0, 0, 1000]),
        id="Cast-float-to-int-truncates",
    ),
    Case("Cast", [i32(5)], attrs={"DstT": "float64"}, ref=lambda x: x.astype(np.float64)),
    Case("Bitcast", [np.array([1.0, -2.0], np.float32)], attrs={"type": "int32"},
         ref=lambda x: np.array([0x3F800000, -0x40000000], np.int32)),
    Case("Bitcast", [np.array(1.0, np.float32)], attrs={"type": "int32"}, id="Bitcast-scalar",
         ref=lambda x: np.array(0x3F800000, np.int32)),
    Case("Bitcast", [np.array([1.0, 0.5])], attrs={"type": "uint32"}, id="Bitcast-wider-to-narrower",
         ref=lambda x: np.array([[0, 0x3FF00000], [0, 0x3FE00000]], np.uint32)),
    Case("Bitcast", [np.array([[0, 0x3FF00000]], np.uint32)], attrs={"type": "float64"}, id="Bitcast-narrower-to-wider",
         ref=lambda x: np.array([1.0])),
    Case(
        "Cast",
        [np.array([0.0, -1.5, 2.0], np.float32)],
        attrs={"DstT": "bool"},
        ref=lambda x: np.array([False, True, True]),
        id="Cast-to-bool",
    ),
    Case(
        "Cast", [bools(4)], attrs={"DstT": "float32"}, ref=lambda x: x.astype(np.float32), id="Cast-from-bool"
    ),
    Case(
        "Cast",
        [np.array([1.5 + 2j, -3 + 0j], np.complex64)],
        attrs={"DstT": "float32"},
        ref=lambda x: np.array([1.5, -3.0]),
        id="Cast-complex-keeps-real",
    ),
    # 1 + 2**-11 + 2**-12 is not a float16: rounding goes up, truncation down.
    Case(
        "Cast",
        [np.array([1 + 2**-11 + 2**-12, -(1 + 2**-11 + 2**-12)], np.float32)],
        attrs={"DstT": "float16", "Truncate": True},
        ref=lambda x: np.array([1.0, -1.0], np.float16),
        rtol=0,
        atol=0,
        id="Cast-truncate",
    ),
    Case(
        "Cast",
        [np.array([1 + 2**-11 + 2**-12], np.float32)],
        attrs={"DstT": "float16"},
        ref=lambda x: np.array([1 + 2**-10], np.float16),
        rtol=0,
        atol=0,
        id="Cast-round-nearest",
    ),
]

_ADDN = [
    Case("AddN", [f32(2, 3), f32(2, 3), f32(2, 3)], ref=lambda *xs: sum(xs), rtol=1e-5),
    Case("AddN", [i32(4)], ref=lambda x: x, id="AddN-single"),
    Case("AddN", [i64(), i64()], ref=np.add, id="AddN-scalars"),
]


def _c128(*shape):
    return f64(*shape) + 1j * f64(*shape)


_MATMUL = [
    Case("MatMul", [f32(3, 4), f32(4, 5)], ref=np.matmul, rtol=1e-5),
    Case(
        "MatMul",
        [f32(4, 3), f32(4, 5)],
        attrs={"transpose_a": True},
        ref=lambda a, b: a.T @ b,
        rtol=1e-5,
        id="MatMul-transpose_a",
    ),
    Case(
        "MatMul",
        [f64(3, 4), f64(5, 4)],
        attrs={"transpose_b": True},
        ref=lambda a, b: a @ b.T,
        id="MatMul-transpose_b",
    ),
    Case(
        "MatMul",
        [f64(4, 3), f64(5, 4)],
        attrs={"transpose_a": True, "transpose_b": True},
        ref=lambda a, b: a.T @ b.T,
        id="MatMul-transpose-both",
    ),
    Case("MatMul", [i32(2, 3), i32(3, 2)], ref=np.matmul, id="MatMul-int"),
    Case(
        "MatMul",
        [_c128(2, 2), _c128(2, 2)],
        attrs={"transpose_a": True},
        ref=lambda a, b: a.T @ b,
        id="MatMul-complex-no-conj",
    ),
    Case("BatchMatMulV2", [f32(2, 3, 4), f32(2, 4, 5)], ref=np.matmul, rtol=1e-5),
    Case(
        "BatchMatMulV2",
        [f32(2, 1, 3, 4), f32(5, 4, 2)],
        ref=np.matmul,
        rtol=1e-5,
        id="BatchMatMulV2-broadcast",
    ),
    Case(
        "BatchMatMulV2",
        [_c128(2, 4, 3), _c128(2, 5, 4)],
        attrs={"adj_x": True, "adj_y": True},
        ref=lambda x, y: np.conj(np.swapaxes(x, -1, -2)) @ np.conj(np.swapaxes(y, -1, -2)),
        id="BatchMatMulV2-adj",
    ),
    Case("BatchMatMulV2", [f64(3, 4), f64(2, 4, 2)], ref=np.matmul, id="BatchMatMulV2-rank2-x"),
]

CASES = _BINARY + _UNARY + _LOGIC + _SELECT + _CAST + _ADDN + _MATMUL
