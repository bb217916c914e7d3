"""Parsing ops for input pipelines, with TensorFlow's names and attrs: ``ParseExampleV2`` and
``ParseSingleExample`` turn serialized ``tf.train.Example`` protos into tensors, ``DecodeRaw``
reinterprets the bytes of strings as numbers.

An Example maps feature names to a list of floats, int64s or byte strings (protobuf does the
decoding: ``io/extra_protos.py``'s ``Example``). Per requested key:

- dense: a fixed ``dense_shape`` (its first dimension may be unknown, -1: the examples' values are
  padded with the default to the longest); the feature must hold exactly that many values, or be
  absent, when the default (``dense_defaults``; an empty default means required) is used;
- sparse (TF's VarLenFeature): every value of the feature, as a SparseTensor's
  (indices, values, dense_shape) with the batch index first and the position last;
- ragged (rank-1 batches): the values concatenated and the row splits.

A value list of the wrong kind (float_list where int64 was asked...) or length is a one-line error
naming the example (and its name, when ``names`` gives one) and the feature.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from google.protobuf.message import DecodeError

from specflow.graph import dtypes
from specflow.graph.dtypes import DType, as_dtype
from specflow.graph.shapes import Shape, as_shape
from specflow.io.extra_protos import Example
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import KernelContext, kernel, not_differentiable, register_op

_CPU = ("CPU",)
_KINDS = {dtypes.float32: "float_list", dtypes.int64: "int64_list", dtypes.string: "bytes_list"}
_FEATURE_TYPES = "{float,int64,string}"


class ParseError(ValueError):
    """A serialized example that does not match what was asked for (the kernel adds the node)."""


@dataclass
class FeatureSpec:
    """What to parse: per kind, the keys with their dtypes (and dense shapes and defaults)."""

    sparse: list[tuple[str, DType]] = field(default_factory=list)
    dense: list[tuple[str, DType, Shape, np.ndarray]] = field(default_factory=list)
    ragged: list[tuple[str, DType, DType]] = field(default_factory=list)  # key, value type, split type


def _decode(record, index: int, name: str | None):
    try:
        return Example.FromString(bytes(record)).features.feature
    except (DecodeError, TypeError) as e:
        raise ParseError(f"{_which(index, name)} is not a serialized tf.train.Example ({e})") from None


def _which(index: int, name: str | None) -> str:
    return f"example {index}" + (f" ('{name}')" if name else "")


def _values(features, key: str, dtype: DType, index: int, name: str | None) -> np.ndarray | None:
    """The feature's values as an array of ``dtype``; None when absent (or holding no list)."""
    if key not in features:
        return None
    feature = features[key]
    kind = feature.WhichOneof("kind")
    if kind is None:
        return None
    want = _KINDS[dtype]
    if kind != want:
        raise ParseError(f"{_which(index, name)}: feature '{key}' holds a {kind}, but {dtype.name} "
                         f"asks for a {want}")  # fmt: skip
    values = getattr(feature, kind).value
    if dtype is dtypes.string:
        out = np.empty(len(values), dtype=object)
        out[:] = list(values)
        return out
    return np.asarray(values, dtype=dtype.numpy)


def parse_examples(serialized: np.ndarray, spec: FeatureSpec, names: Sequence[str] = ()) -> tuple[list, list, list]:
    """(sparse, dense, ragged): per sparse key (indices, values, dense_shape); per dense key its
    array of shape ``serialized.shape + dense_shape``; per ragged key (values, row_splits)."""
    batch = serialized.shape
    flat = serialized.reshape(-1)
    names = list(names)
    parsed = [_decode(r, i, names[i] if i < len(names) else None) for i, r in enumerate(flat)]

    def values(key: str, dtype: DType) -> list[np.ndarray | None]:
        return [_values(f, key, dtype, i, names[i] if i < len(names) else None) for i, f in enumerate(parsed)]

    dense = [_dense(values(key, dt), key, dt, shape, default, batch, names)
             for key, dt, shape, default in spec.dense]  # fmt: skip
    sparse = []
    for key, dt in spec.sparse:
        per = [v if v is not None else np.empty(0, dt.numpy) for v in values(key, dt)]
        counts = np.array([len(v) for v in per], dtype=np.int64)
        width = int(counts.max()) if len(counts) else 0
        example = np.repeat(np.arange(len(per), dtype=np.int64), counts)
        position = np.concatenate([np.arange(c, dtype=np.int64) for c in counts]) if len(per) else np.empty(0, np.int64)
        batch_index = np.stack(np.unravel_index(example, batch), axis=1) if batch else np.empty((len(example), 0), np.int64)
        indices = np.concatenate([batch_index.astype(np.int64), position[:, None]], axis=1)
        vals = np.concatenate(per) if per else np.empty(0, dt.numpy)
        sparse.append((indices, vals.astype(dt.numpy) if dt is not dtypes.string else vals,
                       np.array([*batch, width], dtype=np.int64)))  # fmt: skip
    ragged = []
    for key, dt, split_dt in spec.ragged:
        if len(batch) != 1:
            raise ParseError(f"ragged feature '{key}' needs a vector of serialized examples, got shape {list(batch)}")
        per = [v if v is not None else np.empty(0, dt.numpy) for v in values(key, dt)]
        splits = np.concatenate([[0], np.cumsum([len(v) for v in per])]).astype(split_dt.numpy)
        ragged.append((np.concatenate(per) if per else np.empty(0, dt.numpy), splits))
    return sparse, dense, ragged


def _dense(per: list, key: str, dt: DType, shape: Shape, default: np.ndarray, batch: tuple, names) -> np.ndarray:
    inner = list(shape.dims[1:]) if shape.rank and shape.dims[0] is None else list(shape.dims)
    var_len = len(inner) != shape.rank
    size = math.prod(inner)
    rows = []
    for i, v in enumerate(per):
        which = _which(i, names[i] if i < len(names) else None)
        if v is None:
            if default.size == 0:
                raise ParseError(f"{which}: required feature '{key}' is missing (it has no default value)")
            v = default.reshape(-1) if not var_len else np.empty(0, dt.numpy)
        if var_len:
            if size == 0 or v.size % size:
                raise ParseError(f"{which}: feature '{key}' has {v.size} values, not a multiple of "
                                 f"{size} (dense shape {shape})")  # fmt: skip
            rows.append(v.reshape([-1, *inner]))
        elif v.size != size:
            raise ParseError(f"{which}: feature '{key}' has {v.size} values, but dense shape {shape} needs {size}")
        else:
            rows.append(v.reshape(inner))
    if var_len:  # pad every example to the longest with the (scalar) default
        longest = max((len(r) for r in rows), default=0)
        fill = default.reshape(-1)[0] if default.size else (b"" if dt is dtypes.string else 0)
        out = np.full((len(rows), longest, *inner), fill, dtype=dt.numpy)
        for i, r in enumerate(rows):
            out[i, : len(r)] = r
        return out.reshape([*batch, longest, *inner])
    out = np.empty((len(rows), *inner), dtype=dt.numpy)
    for i, r in enumerate(rows):
        out[i, ...] = r  # (``out[i] = r`` would store a scalar string's 0-d array itself as the element)
    return out.reshape([*batch, *inner])


def _defaults(dense_types, dense_shapes, defaults, fail) -> list[np.ndarray]:
    out = []
    for j, (dt, shape, d) in enumerate(zip(dense_types, dense_shapes, defaults)):
        d = np.asarray(d, dtype=dt.numpy)
        var_len = shape.rank and shape.dims[0] is None
        if d.size and var_len and d.size != 1:
            raise fail(f"dense_defaults[{j}] must be a scalar for dense shape {shape} (its padding), got {list(d.shape)}")
        if d.size and not var_len and d.size != math.prod(shape.dims):
            raise fail(f"dense_defaults[{j}] has {d.size} values, but dense shape {shape} needs {math.prod(shape.dims)}")
        out.append(d)
    return out


def _dense_shapes(attr) -> list[Shape]:
    return [as_shape(s) for s in attr]


def _check_dense_shapes(shapes: list[Shape], n: int, fail) -> None:
    if len(shapes) != n:
        raise fail(f"{n} dense types (Tdense) but {len(shapes)} dense_shapes")
    for j, s in enumerate(shapes):
        if s.rank is None or any(d is None for d in s.dims[1:]):
            raise fail(f"dense_shapes[{j}] must be known except for its first dimension, got {s}")


# --- ParseExampleV2 -------------------------------------------------------------------------------

register_op(
    "ParseExampleV2",
    inputs=["serialized: string", "names: string", "sparse_keys: string", "dense_keys: string",
            "ragged_keys: string", "dense_defaults: Tdense"],  # fmt: skip
    outputs=["sparse_indices: num_sparse * int64", "sparse_values: sparse_types",
             "sparse_shapes: num_sparse * int64", "dense_values: Tdense",
             "ragged_values: ragged_value_types", "ragged_row_splits: ragged_split_types"],  # fmt: skip
    attrs=[f"Tdense: list({_FEATURE_TYPES}) >= 0", "num_sparse: int >= 0",
           f"sparse_types: list({_FEATURE_TYPES}) >= 0", f"ragged_value_types: list({_FEATURE_TYPES}) >= 0",
           "ragged_split_types: list({int32,int64}) >= 0", "dense_shapes: list(shape) >= 0"],  # fmt: skip
    shape=lambda ic: _parse_example_shape(ic),
    doc=(
        "Parses serialized tf.train.Example protos (any batch shape): sparse (VarLen) features as "
        "(indices, values, shape), dense features of fixed shape with defaults, ragged features as "
        "(values, row_splits). The keys are string vectors; `names` (empty or one per example) label errors."
    ),
)


def _parse_example_shape(ic: InferenceContext) -> list[Shape]:
    n_sparse, types = ic.attr("num_sparse"), ic.attr("sparse_types")
    if len(types) != n_sparse:
        raise ic.fail(f"num_sparse is {n_sparse} but sparse_types lists {len(types)} types")
    n_ragged = len(ic.attr("ragged_value_types"))
    if len(ic.attr("ragged_split_types")) != n_ragged:
        raise ic.fail(f"{n_ragged} ragged_value_types but {len(ic.attr('ragged_split_types'))} ragged_split_types")
    dense_shapes = _dense_shapes(ic.attr("dense_shapes"))
    _check_dense_shapes(dense_shapes, len(ic.attr("Tdense")), ic.fail)
    for i, what in ((2, "sparse_keys"), (3, "dense_keys"), (4, "ragged_keys")):
        s = ic.shape(i)
        if s.rank is not None and s.rank > 1:
            raise ic.fail(f"{what} must be a vector of feature names, got shape {s}")
    batch = ic.shape(0)
    if n_ragged and batch.rank is not None and batch.rank != 1:
        raise ic.fail(f"ragged features need a vector of serialized examples, got shape {batch}")
    rank1 = None if batch.rank is None else batch.rank + 1
    dense = [batch.concatenate(s) if batch.rank is not None else Shape.unknown() for s in dense_shapes]
    splits = Shape([None if batch.rank != 1 or batch.dims[0] is None else batch.dims[0] + 1])
    return ([Shape([None, rank1])] * n_sparse + [Shape([None])] * n_sparse + [Shape([rank1])] * n_sparse
            + dense + [Shape([None])] * n_ragged + [splits] * n_ragged)  # fmt: skip


def _keys(ctx: KernelContext, value, what: str, n: int) -> list[str]:
    keys = [k.decode() if isinstance(k, bytes) else str(k) for k in np.asarray(value, dtype=object).reshape(-1)]
    if len(keys) != n:
        raise ctx.fail(f"{what} has {len(keys)} names, but the op's attrs declare {n}")
    return keys


@kernel("ParseExampleV2", devices=_CPU)
def _parse_example_v2(ctx, serialized, names, sparse_keys, dense_keys, ragged_keys, *dense_defaults):
    a = ctx.attrs
    dense_types = [as_dtype(t) for t in a["Tdense"]]
    shapes = _dense_shapes(a["dense_shapes"])
    _check_dense_shapes(shapes, len(dense_types), ctx.fail)
    serialized = np.asarray(serialized, dtype=object)
    label = [n.decode() if isinstance(n, bytes) else str(n) for n in np.asarray(names, dtype=object).reshape(-1)]
    if label and len(label) != serialized.size:
        raise ctx.fail(f"names has {len(label)} entries but there are {serialized.size} serialized examples")
    spec = FeatureSpec(
        sparse=list(zip(_keys(ctx, sparse_keys, "sparse_keys", a["num_sparse"]), map(as_dtype, a["sparse_types"]))),
        dense=list(zip(_keys(ctx, dense_keys, "dense_keys", len(dense_types)), dense_types, shapes,
                       _defaults(dense_types, shapes, dense_defaults, ctx.fail))),  # fmt: skip
        ragged=list(zip(_keys(ctx, ragged_keys, "ragged_keys", len(a["ragged_value_types"])),
                        map(as_dtype, a["ragged_value_types"]), map(as_dtype, a["ragged_split_types"]))),  # fmt: skip
    )
    try:
        sparse, dense, ragged = parse_examples(serialized, spec, label)
    except ParseError as e:
        raise ctx.fail(str(e)) from None
    return (*[s[0] for s in sparse], *[s[1] for s in sparse], *[s[2] for s in sparse], *dense,
            *[r[0] for r in ragged], *[r[1] for r in ragged])  # fmt: skip


# --- ParseSingleExample ---------------------------------------------------------------------------

register_op(
    "ParseSingleExample",
    inputs=["serialized: string", "dense_defaults: Tdense"],
    outputs=["sparse_indices: num_sparse * int64", "sparse_values: sparse_types",
             "sparse_shapes: num_sparse * int64", "dense_values: Tdense"],  # fmt: skip
    attrs=["num_sparse: int >= 0", "sparse_keys: list(string) >= 0", "dense_keys: list(string) >= 0",
           f"sparse_types: list({_FEATURE_TYPES}) >= 0", f"Tdense: list({_FEATURE_TYPES}) >= 0",
           "dense_shapes: list(shape) >= 0"],  # fmt: skip
    shape=lambda ic: _parse_single_shape(ic),
    doc="ParseExampleV2 for one scalar serialized Example, with the feature names as attrs.",
)


def _parse_single_shape(ic: InferenceContext) -> list[Shape]:
    n = ic.attr("num_sparse")
    if len(ic.attr("sparse_keys")) != n or len(ic.attr("sparse_types")) != n:
        raise ic.fail(f"num_sparse is {n}: sparse_keys and sparse_types must each list {n}")
    dense_shapes = _dense_shapes(ic.attr("dense_shapes"))
    _check_dense_shapes(dense_shapes, len(ic.attr("Tdense")), ic.fail)
    if len(ic.attr("dense_keys")) != len(dense_shapes):
        raise ic.fail(f"{len(dense_shapes)} dense_shapes but {len(ic.attr('dense_keys'))} dense_keys")
    if not ic.shape(0).is_compatible_with(Shape.scalar()):
        raise ic.fail(f"serialized must be a scalar, got {ic.shape(0)}")
    return [Shape([None, 1])] * n + [Shape([None])] * n + [Shape([1])] * n + dense_shapes


@kernel("ParseSingleExample", devices=_CPU)
def _parse_single_example(ctx, serialized, *dense_defaults):
    a = ctx.attrs
    dense_types = [as_dtype(t) for t in a["Tdense"]]
    shapes = _dense_shapes(a["dense_shapes"])
    serialized = np.asarray(serialized, dtype=object)
    if serialized.ndim != 0:
        raise ctx.fail(f"serialized must be a scalar, got shape {list(serialized.shape)}")
    spec = FeatureSpec(
        sparse=list(zip(a["sparse_keys"], map(as_dtype, a["sparse_types"]))),
        dense=list(zip(a["dense_keys"], dense_types, shapes, _defaults(dense_types, shapes, dense_defaults, ctx.fail))),
    )
    try:
        sparse, dense, _ = parse_examples(serialized, spec)
    except ParseError as e:
        raise ctx.fail(str(e)) from None
    return (*[s[0] for s in sparse], *[s[1] for s in sparse], *[s[2] for s in sparse], *dense)


# --- DecodeRaw ------------------------------------------------------------------------------------

register_op(
    "DecodeRaw",
    inputs=["bytes: string"],
    outputs=["output: out_type"],
    attrs=["out_type: {half, float, double, int32, uint16, uint8, int16, int8, int64, complex64, complex128, bool}",
           "little_endian: bool = true"],  # fmt: skip
    shape=lambda ic: [ic.shape(0).concatenate(Shape([None])) if ic.shape(0).rank is not None else Shape.unknown()],
    doc="Each string's bytes as a vector of `out_type` (every string the same length); the output "
    "gains a last dimension.",
)


@kernel("DecodeRaw", devices=_CPU)
def _decode_raw(ctx, data):
    dt = np.dtype(as_dtype(ctx.attrs["out_type"]).numpy)
    dt = dt.newbyteorder("<" if ctx.attrs["little_endian"] else ">") if dt.itemsize > 1 else dt
    flat = np.asarray(data, dtype=object).reshape(-1)
    sizes = {len(b) for b in flat}
    if len(sizes) > 1:
        raise ctx.fail(f"every string must have the same length to decode, got lengths {sorted(sizes)[:5]}")
    size = sizes.pop() if sizes else 0
    if size % dt.itemsize:
        raise ctx.fail(f"a string of {size} bytes is not a whole number of {dt.name} values ({dt.itemsize} bytes each)")
    joined = b"".join(bytes(b) for b in flat)
    out = np.frombuffer(joined, dtype=dt).astype(dt.newbyteorder("="), copy=True)
    return out.reshape([*np.shape(data), size // dt.itemsize])


not_differentiable("ParseExampleV2", "ParseSingleExample", "DecodeRaw")  # as in TF: parsing has no gradient
