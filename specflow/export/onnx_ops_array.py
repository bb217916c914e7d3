"""ONNX mappings of the gather/scatter, segment, reordering, selection and linear-algebra ops.

ONNX indexes with int64, so index inputs are cast; TF's dropped (negative) segment ids have no
ONNX counterpart, so they are redirected to an extra row that is sliced off. Ops ONNX cannot
express (Cholesky, MatrixInverse outside the com.microsoft domain, MatrixDiagV3, the
Philox-exact StatelessRandomUniformV2) have no mapping, nor has Multinomial (onnxruntime
runs no Multinomial at the exporter's opset 26) and fail export by name.
"""

from __future__ import annotations

import numpy as np

from specflow.export.onnx_ops import INT64_MIN, maps


def _i64(cx, x: str) -> str:
    return cx.op("Cast", [x], to=cx.onnx_type("int64"))


def _ints(cx, values) -> str:
    return cx.tensor(np.array(values, dtype=np.int64))


def _zeros(cx, shape: str, dtype, value=0) -> str:
    return cx.op("ConstantOfShape", [shape], value=cx.tensor_proto(np.array([value], dtype=dtype.numpy)))


# --- gather / scatter -------------------------------------------------------------------------


@maps("Gather")
def _gather(cx):
    cx.op("Gather", [cx.inp(0), cx.inp(1)], out=cx.out(), axis=0)


@maps("GatherNd")
def _gather_nd(cx):
    cx.op("GatherND", [cx.inp(0), _i64(cx, cx.inp(1))], out=cx.out())


@maps("ScatterNd")
def _scatter_nd(cx):
    base = _zeros(cx, cx.int64_1d(2), cx.dtype(1))
    cx.op("ScatterND", [base, _i64(cx, cx.inp(0)), cx.inp(1)], out=cx.out(), reduction="add")


@maps("TensorScatterUpdate", "TensorScatterAdd")
def _tensor_scatter(cx):
    attrs = {"reduction": "add"} if cx.node.op == "TensorScatterAdd" else {}
    cx.op("ScatterND", [cx.inp(0), _i64(cx, cx.inp(1)), cx.inp(2)], out=cx.out(), **attrs)


# --- segment reductions -----------------------------------------------------------------------

_SEGMENT = {"UnsortedSegmentMax": ("max", "min"), "UnsortedSegmentMin": ("min", "max"),
            "UnsortedSegmentProd": ("mul", None)}  # fmt: skip


def _segment_scatter(cx, ids: str, n: str, reduction: str, fill) -> None:
    """Scatter data's slices into n + 1 rows by ``ids`` (negative ids to the extra last row),
    then drop that row."""
    ids_rank = cx.rank(1)
    shape = cx.op("Shape", [cx.inp(0)])
    inner = cx.op("Slice", [shape, _ints(cx, [ids_rank]), _ints(cx, [np.iinfo(np.int64).max])])
    rows = cx.op("Add", [n, _ints(cx, [1])])
    base = _zeros(cx, cx.op("Concat", [rows, inner], axis=0), cx.dtype(0), fill)
    safe = cx.op("Where", [cx.op("Less", [ids, _ints(cx, 0)]), n, ids])
    index = cx.op("Unsqueeze", [safe, _ints(cx, [-1])])
    full = cx.op("ScatterND", [base, index, cx.inp(0)], reduction=reduction)
    cx.op("Slice", [full, _ints(cx, [0]), n, _ints(cx, [0])], out=cx.out())


@maps(*_SEGMENT)
def _unsorted_segment(cx):
    reduction, extreme = _SEGMENT[cx.node.op]
    dt = cx.dtype(0).numpy
    if extreme is None:
        fill = 1
    else:  # an empty segment holds TF's lowest (Max) or largest (Min) value
        info = np.finfo(dt) if np.dtype(dt).kind == "f" else np.iinfo(dt)
        fill = info.min if extreme == "min" else info.max
    _segment_scatter(cx, _i64(cx, cx.inp(1)), cx.int64_1d(2), reduction, fill)


@maps("SegmentSum")
def _segment_sum(cx):
    ids = _i64(cx, cx.inp(1))
    last = cx.op("Slice", [ids, _ints(cx, [-1]), _ints(cx, [np.iinfo(np.int64).max])])
    n = cx.op("ReduceMax", [cx.op("Concat", [_ints(cx, [-1]), last], axis=0)], keepdims=1)
    _segment_scatter(cx, ids, cx.op("Add", [n, _ints(cx, [1])]), "add", 0)


def _flat_rows(cx, x: str, lead_rank: int) -> str:
    """``x`` with its first ``lead_rank`` dims folded into one: [-1] + shape[lead_rank:]."""
    inner = cx.op("Slice", [cx.op("Shape", [x]), _ints(cx, [lead_rank]), _ints(cx, [np.iinfo(np.int64).max])])
    return cx.op("Reshape", [x, cx.op("Concat", [_ints(cx, [-1]), inner], axis=0)])


@maps("DynamicPartition")
def _dynamic_partition(cx):
    rows = _flat_rows(cx, cx.inp(0), cx.rank(1))
    parts = cx.op("Reshape", [cx.inp(1), _ints(cx, [-1])])
    for i in range(int(cx.attr("num_partitions"))):
        mask = cx.op("Equal", [parts, cx.tensor(np.array(i, np.int32))])
        cx.op("Compress", [rows, mask], out=cx.out(i), axis=0)


@maps("DynamicStitch")
def _dynamic_stitch(cx):
    n = cx.n_inputs // 2
    index = cx.op("Concat", [cx.op("Reshape", [_i64(cx, cx.inp(m)), _ints(cx, [-1])]) for m in range(n)], axis=0)
    data = cx.op("Concat", [_flat_rows(cx, cx.inp(n + m), cx.rank(m)) for m in range(n)], axis=0)
    rows = cx.op("Add", [cx.op("ReduceMax", [cx.op("Concat", [_ints(cx, [-1]), index], axis=0)], keepdims=1),
                         _ints(cx, [1])])  # fmt: skip
    inner = cx.op("Slice", [cx.op("Shape", [data]), _ints(cx, [1]), _ints(cx, [np.iinfo(np.int64).max])])
    base = _zeros(cx, cx.op("Concat", [rows, inner], axis=0), cx.dtype(n))
    cx.op("ScatterND", [base, cx.op("Unsqueeze", [index, _ints(cx, [-1])]), data], out=cx.out())


@maps("Bincount")
def _bincount(cx):
    arr = _i64(cx, cx.op("Reshape", [cx.inp(0), _ints(cx, [-1])]))
    size = cx.op("Reshape", [_i64(cx, cx.inp(1)), _ints(cx, [1])])
    w = cx.spec(2)
    if w is None or w.shape.num_elements() is None:
        raise cx.fail("Bincount exports to ONNX only with weights of static size (empty or arr's)")
    dt = cx.dtype(2)
    if w.shape.num_elements() == 0:
        values = cx.op("ConstantOfShape", [cx.op("Shape", [arr])], value=cx.tensor_proto(np.array([1], dt.numpy)))
    else:
        values = cx.op("Reshape", [cx.inp(2), _ints(cx, [-1])])
    safe = cx.op("Where", [cx.op("Less", [arr, size]), arr, size])  # values >= size go to a dropped bin
    base = _zeros(cx, cx.op("Add", [size, _ints(cx, [1])]), dt)
    full = cx.op("ScatterND", [base, cx.op("Unsqueeze", [safe, _ints(cx, [-1])]), values], reduction="add")
    cx.op("Slice", [full, _ints(cx, [0]), size, _ints(cx, [0])], out=cx.out())


# --- reordering and selection -----------------------------------------------------------------


@maps("ReverseV2", consts=(1,))
def _reverse(cx):
    axes = [int(a) for a in np.ravel(cx.const(1))]
    if not axes:
        cx.op("Identity", [cx.inp(0)], out=cx.out())
        return
    n = len(axes)
    cx.op("Slice", [cx.inp(0), _ints(cx, [-1] * n), _ints(cx, [INT64_MIN] * n), _ints(cx, axes), _ints(cx, [-1] * n)],
          out=cx.out())  # fmt: skip


@maps("Roll", consts=(1, 2))
def _roll(cx):
    shifts, axes = np.ravel(cx.const(1)), np.ravel(cx.const(2))
    rank = cx.rank(0)
    total: dict[int, int] = {}
    for s, a in zip(shifts, axes):
        total[int(a) % rank] = total.get(int(a) % rank, 0) + int(s)
    x = cx.inp(0)
    shape = cx.op("Shape", [x])
    for a, s in total.items():
        size = cx.op("Gather", [shape, _ints(cx, [a])], axis=0)
        cut = cx.op("Sub", [size, cx.op("Mod", [_ints(cx, [s]), size])])  # the new first element's index
        head = cx.op("Slice", [x, cut, size, _ints(cx, [a])])
        tail = cx.op("Slice", [x, _ints(cx, [0]), cut, _ints(cx, [a])])
        x = cx.op("Concat", [head, tail], axis=a)
    cx.op("Identity", [x], out=cx.out())


@maps("ReverseSequence")
def _reverse_sequence(cx):
    batch, seq = int(cx.attr("batch_dim")), int(cx.attr("seq_dim"))
    if {batch, seq} != {0, 1}:
        raise cx.fail("ReverseSequence exports to ONNX only with batch_dim and seq_dim 0 and 1")
    cx.op("ReverseSequence", [cx.inp(0), _i64(cx, cx.inp(1))], out=cx.out(), batch_axis=batch, time_axis=seq)


@maps("TopKV2")
def _top_k(cx):
    # ONNX's TopK also puts the lower index first among equal values.
    k = cx.op("Reshape", [_i64(cx, cx.inp(1)), _ints(cx, [1])])
    values, indices = cx.op("TopK", [cx.inp(0), k], out=2, axis=-1, largest=1, sorted=1)
    cx.op("Identity", [values], out=cx.out(0))
    cx.cast_to(indices, cx.attr("index_type"), cx.out(1))


@maps("Where")
def _where(cx):
    cx.op("Transpose", [cx.op("NonZero", [cx.inp(0)])], out=cx.out(), perm=[1, 0])


@maps("Unique")
def _unique(cx):
    dt = cx.dtype(0)
    x = cx.inp(0)
    widen = dt.is_integer and dt.name not in ("int64", "int8")  # onnxruntime's Unique types
    if widen:
        x = _i64(cx, x)
    y, _, inverse, _ = cx.op("Unique", [x], out=4, sorted=0)  # first-appearance order
    if widen:
        cx.op("Cast", [y], out=cx.out(0), to=cx.onnx_type(dt))
    else:
        cx.op("Identity", [y], out=cx.out(0))
    cx.cast_to(inverse, cx.attr("out_idx"), cx.out(1))


@maps("BroadcastArgs")
def _broadcast_args(cx):
    probe = cx.op("Expand", [_zeros(cx, _i64(cx, cx.inp(0)), cx.dtype(0)), _i64(cx, cx.inp(1))])
    cx.cast_to(cx.op("Shape", [probe]), cx.dtype(0), cx.out())


# --- linear algebra ---------------------------------------------------------------------------


def _adjointed(cx, i: int, flag: str) -> str:
    if not cx.attr(flag):
        return cx.inp(i)
    r = cx.rank(i)
    return cx.op("Transpose", [cx.inp(i)], perm=[*range(r - 2), r - 1, r - 2])


@maps("BatchMatMul")
def _batch_matmul(cx):
    cx.op("MatMul", [_adjointed(cx, 0, "adj_x"), _adjointed(cx, 1, "adj_y")], out=cx.out())


@maps("BatchMatMulV3")
def _batch_matmul_v3(cx):
    to = cx.onnx_type(cx.attr("Tout"))
    x, y = (cx.op("Cast", [_adjointed(cx, i, f)], to=to) for i, f in ((0, "adj_x"), (1, "adj_y")))
    cx.op("MatMul", [x, y], out=cx.out())


@maps("Einsum")
def _einsum(cx):
    cx.op("Einsum", [cx.inp(i) for i in range(cx.n_inputs)], out=cx.out(), equation=cx.attr("equation").replace(" ", ""))


@maps("MatrixBandPart", consts=(1, 2))
def _band_part(cx):
    lower, upper = int(cx.const(1)), int(cx.const(2))
    x = cx.inp(0)
    if lower >= 0:  # keep j - i >= -lower: the upper triangle from diagonal -lower
        x = cx.op("Trilu", [x, _ints(cx, -lower)], upper=1)
    if upper >= 0:
        x = cx.op("Trilu", [x, _ints(cx, upper)], upper=0)
    cx.op("Identity", [x], out=cx.out())


@maps("Cross")
def _cross(cx):
    # a x b = a[yzx] * b[zxy] - a[zxy] * b[yzx], the components picked along the last axis.
    def pick(i, order):
        return cx.op("Gather", [cx.inp(i), _ints(cx, order)], axis=-1)

    yzx, zxy = [1, 2, 0], [2, 0, 1]
    left = cx.op("Mul", [pick(0, yzx), pick(1, zxy)])
    cx.op("Sub", [left, cx.op("Mul", [pick(0, zxy), pick(1, yzx)])], out=cx.out())


def _eye(cx, n: str) -> str:
    """The n x n identity (``n`` a [1] int64 tensor) in input 0's dtype."""
    square = cx.op("ConstantOfShape", [cx.op("Concat", [n, n], axis=0)],
                   value=cx.tensor_proto(np.array([0], cx.dtype(0).numpy)))  # fmt: skip
    return cx.op("EyeLike", [square])


@maps("Diag")
def _diag(cx):
    flat = cx.op("Reshape", [cx.inp(0), _ints(cx, [-1])])
    matrix = cx.op("Mul", [_eye(cx, cx.op("Shape", [flat])), cx.op("Unsqueeze", [flat, _ints(cx, [0])])])
    shape = cx.op("Shape", [cx.inp(0)])
    cx.op("Reshape", [matrix, cx.op("Concat", [shape, shape], axis=0)], out=cx.out())


@maps("DiagPart")
def _diag_part(cx):
    half = cx.rank(0) // 2
    out_shape = cx.op("Slice", [cx.op("Shape", [cx.inp(0)]), _ints(cx, [0]), _ints(cx, [half])])
    n = cx.op("ReduceProd", [out_shape], keepdims=1)
    matrix = cx.op("Reshape", [cx.inp(0), cx.op("Concat", [n, n], axis=0)])
    diagonal = cx.op("ReduceSum", [cx.op("Mul", [matrix, _eye(cx, n)]), _ints(cx, [1])], keepdims=0)
    cx.op("Reshape", [diagonal, out_shape], out=cx.out())
