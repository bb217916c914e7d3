"""Variable initializers: the spec forms, their validation, and the graph ops they emit.

Spec forms (Keras' names and formulas)::

    zeros | ones | {constant: 0.5}
    {random_uniform: {minval: -0.05, maxval: 0.05, seed: 1}}
    {random_normal: {mean: 0.0, stddev: 0.05, seed: 1}}
    {truncated_normal: {mean: 0.0, stddev: 0.05, seed: 1}}
    glorot_uniform | glorot_normal | he_normal | he_uniform   (each also {name: {seed: N}})
    orthogonal | {orthogonal: {gain: 1.0, seed: 1}}   (Keras' recurrent default; rank >= 2)
    {checkpoint: model.ckpt} | {checkpoint: {prefix: model.ckpt, key: dense/kernel}}
        the value stored in a TF checkpoint bundle (``specflow import`` writes one beside the
        spec; the prefix is relative to the spec file, the key defaults to the variable's name)

``emit_initializer`` builds the initial value as ops (RandomUniform + Mul + Add, TruncatedNormal
* stddev, Fill / Const; orthogonal: RandomStandardNormal + Qr + Sign...), so the graph alone says how a variable starts, as in TensorFlow.
"""

from __future__ import annotations

import math
import zlib
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, WithJsonSchema, WrapValidator
from pydantic_core import PydanticCustomError

from specflow.errors import SpecError, did_you_mean
from specflow.graph.dtypes import DType, as_dtype, int32, int64

# Parameters each initializer accepts, with Keras' defaults.
_PARAMS: dict[str, dict[str, Any]] = {
    "zeros": {},
    "ones": {},
    "constant": {"value": 0.0},
    "random_uniform": {"minval": -0.05, "maxval": 0.05, "seed": None},
    "random_normal": {"mean": 0.0, "stddev": 0.05, "seed": None},
    "truncated_normal": {"mean": 0.0, "stddev": 0.05, "seed": None},
    "glorot_uniform": {"seed": None},
    "glorot_normal": {"seed": None},
    "he_normal": {"seed": None},
    "he_uniform": {"seed": None},
    "orthogonal": {"gain": 1.0, "seed": None},
    "checkpoint": {"prefix": None, "key": None},
}
INITIALIZER_NAMES = tuple(_PARAMS)

# TensorFlow's graph seed when only an op seed is given (random_seed.DEFAULT_GRAPH_SEED).
DEFAULT_GRAPH_SEED = 87654321
# Stddev of a unit normal truncated to [-2, 2]; dividing by it keeps the requested variance.
_TRUNC_STDDEV = 0.87962566103423978


class Initializer(BaseModel):
    """A validated initializer: its ``kind`` and parameters (defaults filled in)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str
    params: dict[str, Any] = {}

    @property
    def seed(self) -> int | None:
        return self.params.get("seed")

    def to_spec(self) -> Any:
        """The spec form (round-trips through :func:`parse_initializer`)."""
        given = {k: v for k, v in self.params.items() if v != _PARAMS[self.kind].get(k)}
        if self.kind == "constant":
            return {"constant": self.params["value"]}
        return {self.kind: given} if given else self.kind


def _fail(message: str) -> PydanticCustomError:
    return PydanticCustomError("initializer", message)


def parse_initializer(value: Any) -> Initializer:
    """Accept ``"zeros"``, ``{constant: 0.5}``, ``{glorot_uniform: {seed: 1}}``...; raise
    ``PydanticCustomError`` (inside pydantic validation) with a did-you-mean on a bad name."""
    if isinstance(value, Initializer):
        return value
    if isinstance(value, str):
        kind, raw = value, None
    elif isinstance(value, dict) and len(value) == 1:
        (kind, raw), = value.items()
    else:
        raise _fail(
            f"an initializer is a name or a one-key mapping ({{name: {{params}}}}), got {value!r}"
        )
    if kind not in _PARAMS:
        raise _fail(f"unknown initializer '{kind}'" + did_you_mean(str(kind), _PARAMS))
    params = dict(_PARAMS[kind])
    if kind == "checkpoint":
        return _checkpoint_initializer(raw, params)
    if kind == "constant":
        if isinstance(raw, dict):
            raw = raw.get("value", raw)
        if raw is None or isinstance(raw, (bool, str, dict)):
            raise _fail(f"constant initializer needs a number or a list of numbers, got {raw!r}")
        params["value"] = raw
    elif raw is not None:
        if not isinstance(raw, dict):
            raise _fail(f"parameters of initializer '{kind}' must be a mapping, got {raw!r}")
        for key, v in raw.items():
            if key not in params:
                allowed = ", ".join(params) or "none"
                raise _fail(
                    f"initializer '{kind}' has no parameter '{key}'"
                    + did_you_mean(str(key), params)
                    + f"; allowed: {allowed}"
                )
            if key == "seed":
                if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
                    raise _fail(f"seed of initializer '{kind}' must be an integer, got {v!r}")
            elif isinstance(v, bool) or not isinstance(v, (int, float)):
                raise _fail(f"'{key}' of initializer '{kind}' must be a number, got {v!r}")
            params[key] = v
    if kind in ("random_normal", "truncated_normal") and params["stddev"] < 0:
        raise _fail(f"stddev of initializer '{kind}' must be >= 0, got {params['stddev']}")
    if kind == "random_uniform" and params["maxval"] < params["minval"]:
        raise _fail(f"initializer 'random_uniform' needs minval <= maxval, got {params['minval']} > {params['maxval']}")
    return Initializer(kind=kind, params=params)


def _checkpoint_initializer(raw: Any, params: dict) -> Initializer:
    if isinstance(raw, str):
        raw = {"prefix": raw}
    if not isinstance(raw, dict):
        raise _fail(f"checkpoint initializer needs a prefix (a path) or {{prefix: ..., key: ...}}, got {raw!r}")
    for key, v in raw.items():
        if key not in params:
            raise _fail(f"initializer 'checkpoint' has no parameter '{key}'" + did_you_mean(str(key), params)
                        + "; allowed: prefix, key")
        if not isinstance(v, str) or not v:
            raise _fail(f"'{key}' of initializer 'checkpoint' must be a non-empty string, got {v!r}")
        params[key] = v
    if params["prefix"] is None:
        raise _fail("checkpoint initializer needs a prefix")
    return Initializer(kind="checkpoint", params=params)


def _validate(value: Any, handler) -> Initializer:
    return parse_initializer(value)


# The pydantic field type: ``initializer: InitializerSpec = "zeros"``.
InitializerSpec = Annotated[
    Initializer,
    WrapValidator(_validate),
    WithJsonSchema(
        {
            "description": "an initializer name, or {name: {params}} / {constant: value}",
            "anyOf": [
                {"type": "string", "enum": list(INITIALIZER_NAMES)},
                {"type": "object", "minProperties": 1, "maxProperties": 1,
                 "propertyNames": {"enum": list(INITIALIZER_NAMES)}},
            ],
        }
    ),
]


# --- fans and seeds -------------------------------------------------------------------------


def compute_fans(shape: list[int]) -> tuple[float, float]:
    """Keras' fan_in / fan_out; conv kernels multiply by the receptive field size."""
    if len(shape) == 0:
        return 1.0, 1.0
    if len(shape) == 1:
        return float(shape[0]), float(shape[0])
    if len(shape) == 2:
        return float(shape[0]), float(shape[1])
    receptive = math.prod(shape[:-2])
    return float(shape[-2] * receptive), float(shape[-1] * receptive)


def derive_seed(name: str) -> int:
    """A stable per-variable op seed (from its name, so adding a variable moves no other)."""
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def random_seed_attrs(op_seed: int | None, graph_seed: int | None) -> dict[str, int]:
    """``seed``/``seed2`` attrs as TensorFlow sets them: (0, 0) means nondeterministic."""
    if op_seed is None and graph_seed is None:
        return {"seed": 0, "seed2": 0}
    if op_seed is None:
        op_seed = 0
    return {"seed": DEFAULT_GRAPH_SEED if graph_seed is None else int(graph_seed), "seed2": int(op_seed)}


# --- emitting ops ---------------------------------------------------------------------------


def emit_initializer(
    builder,
    init: Initializer | Any,
    shape,
    dtype: DType | str,
    seed: int | None = None,
    graph_seed: int | None = None,
    fan_shape=None,
) -> str:
    """Emit ops computing ``init``'s value for a variable of ``shape``/``dtype`` under the
    builder's current scope; return the value tensor. ``seed`` is the op seed used when the
    initializer gives none (derived per variable from the graph seed); ``graph_seed`` goes in
    the random ops' ``seed`` attr; fans come from ``fan_shape`` when given (a variable's part)."""
    init = parse_initializer(init) if not isinstance(init, Initializer) else init
    dtype = as_dtype(dtype)
    dims = [int(d) for d in shape]
    p = init.params
    kind = init.kind
    if kind in ("zeros", "ones", "constant"):
        value = {"zeros": 0, "ones": 1}.get(kind, p.get("value"))
        return _fill(builder, value, dims, dtype)
    if kind == "checkpoint":
        return builder.const(checkpoint_value(p["prefix"], p["key"], dims, dtype), dtype, name="Const")
    if not dtype.is_floating:
        raise SpecError(f"initializer '{kind}' needs a floating dtype, got {dtype.name}")
    op_seed = init.seed if init.seed is not None else seed
    seeds = random_seed_attrs(op_seed, graph_seed)
    fan_in, fan_out = compute_fans([int(d) for d in fan_shape] if fan_shape is not None else dims)
    if kind == "random_uniform":
        return _uniform(builder, dims, dtype, p["minval"], p["maxval"], seeds)
    if kind == "random_normal":
        return _normal(builder, "RandomStandardNormal", dims, dtype, p["mean"], p["stddev"], seeds)
    if kind == "truncated_normal":
        return _normal(builder, "TruncatedNormal", dims, dtype, p["mean"], p["stddev"], seeds)
    if kind == "orthogonal":
        return _orthogonal(builder, dims, dtype, float(p["gain"]), seeds)
    # Variance scaling (Keras): glorot averages the fans, he uses fan_in.
    n = (fan_in + fan_out) / 2.0 if kind.startswith("glorot") else fan_in
    scale = 2.0 if kind.startswith("he") else 1.0
    n = max(1.0, n)
    if kind.endswith("uniform"):
        limit = math.sqrt(3.0 * scale / n)
        return _uniform(builder, dims, dtype, -limit, limit, seeds)
    stddev = math.sqrt(scale / n) / _TRUNC_STDDEV
    return _normal(builder, "TruncatedNormal", dims, dtype, 0.0, stddev, seeds)


def checkpoint_value(prefix: str, key: str | None, dims: list[int], dtype: DType) -> np.ndarray:
    """Tensor ``key`` of the bundle at ``prefix``, checked against the variable's dtype and shape.
    The bundle is read once per lowering of a spec (its tensors cached by path and mtime)."""
    from specflow.io.tensor_bundle import read_bundle

    if key is None:
        raise SpecError("a checkpoint initializer outside the variables: section needs a key")
    tensors = _read_cached(prefix, read_bundle)
    if key not in tensors:
        raise SpecError(f"checkpoint {prefix} has no tensor '{key}'" + did_you_mean(key, list(tensors)))
    value = tensors[key]
    if value.dtype != dtype.numpy or list(value.shape) != dims:
        raise SpecError(f"checkpoint {prefix} holds '{key}' as {value.dtype}{list(value.shape)}, "
                        f"the variable is {dtype.name}{dims}")
    return value


_BUNDLES: dict[tuple[str, float], dict] = {}


def _read_cached(prefix: str, read) -> dict:
    import os

    from specflow.io.tensor_bundle import index_filename

    try:
        stamp = os.path.getmtime(index_filename(prefix))
    except OSError:
        raise SpecError(f"checkpoint {prefix}: no such checkpoint ({index_filename(prefix)} is missing)") from None
    if (prefix, stamp) not in _BUNDLES:
        _BUNDLES.clear()  # one bundle at a time: a big checkpoint is not kept twice
        _BUNDLES[(prefix, stamp)] = read(prefix)
    return _BUNDLES[(prefix, stamp)]


def _fill(builder, value, dims: list[int], dtype: DType) -> str:
    from specflow.ops.array_ops import const_value

    try:  # as a Const's value: whole numbers in range for an integer dtype (no truncation)
        arr = const_value(value, dtype)
    except ValueError as e:
        raise SpecError(f"constant initializer: {e}") from None
    if arr.ndim == 0 and dims:
        # A scalar fills the shape at run time: the graph stays small for big variables.
        shape = _shape_const(builder, dims)
        val = builder.const(arr, dtype, name="value")
        return builder.add_op("Fill", [shape, val], name=builder.unique_name("Fill"), exact_name=True).name
    try:
        arr = np.broadcast_to(arr, dims).copy()
    except ValueError:
        raise SpecError(f"constant initializer of shape {list(arr.shape)} does not fit variable shape {dims}") from None
    return builder.const(arr, dtype, name="Const")


def _shape_const(builder, dims: list[int]) -> str:
    """The shape as an int32 constant, or int64 where a dimension needs it (TF's choice too)."""
    if any(d > np.iinfo(np.int32).max for d in dims):
        return builder.const(np.array(dims, np.int64), int64, name="shape")
    return builder.const(np.array(dims, np.int32), int32, name="shape")


def _scale_shift(builder, x: str, dtype: DType, scale: float, shift: float) -> str:
    """x * scale + shift as Mul and Add nodes (TensorFlow's random_uniform / random_normal)."""
    if scale != 1.0:
        s = builder.const(np.asarray(scale, dtype.numpy), dtype, name="scale")
        x = builder.add_op("Mul", [x, s], name=builder.unique_name("mul"), exact_name=True).name
    if shift != 0.0:
        b = builder.const(np.asarray(shift, dtype.numpy), dtype, name="shift")
        x = builder.add_op("AddV2", [x, b], name=builder.unique_name("add"), exact_name=True).name
    return x


def _uniform(builder, dims, dtype, minval, maxval, seeds) -> str:
    shape = _shape_const(builder, dims)
    r = builder.add_op(
        "RandomUniform", [shape], {"dtype": dtype, **seeds},
        name=builder.unique_name("RandomUniform"), exact_name=True,
    ).name  # fmt: skip
    return _scale_shift(builder, r, dtype, float(maxval) - float(minval), float(minval))


def _normal(builder, op, dims, dtype, mean, stddev, seeds) -> str:
    shape = _shape_const(builder, dims)
    r = builder.add_op(op, [shape], {"dtype": dtype, **seeds}, name=builder.unique_name(op), exact_name=True).name
    return _scale_shift(builder, r, dtype, float(stddev), float(mean))


def _orthogonal(builder, dims: list[int], dtype: DType, gain: float, seeds) -> str:
    """Keras' Orthogonal: the q of a standard normal [max(r, c), min(r, c)] draw's QR, its columns
    multiplied by sign(diag(r)) (so q is uniformly distributed; Keras uses sign, a zero diagonal
    would zero a column, with probability 0), transposed when r < c, reshaped, times gain."""
    if len(dims) < 2:
        raise SpecError(f"initializer 'orthogonal' needs a variable of rank >= 2, got shape {dims}")
    rows, cols = math.prod(dims[:-1]), dims[-1]

    def op(name, inputs, attrs=None):
        return builder.add_op(name, inputs, attrs or {}, name=builder.unique_name(name), exact_name=True).name

    shape = _shape_const(builder, [max(rows, cols), min(rows, cols)])
    a = op("RandomStandardNormal", [shape], {"dtype": dtype, **seeds})
    q = op("Qr", [a], {"full_matrices": False})
    signs = op("Sign", [op("DiagPart", [f"{q}:1"])])
    x = op("Mul", [q, signs])  # broadcasts over rows: column j times sign(r[j, j])
    if rows < cols:
        x = op("Transpose", [x, builder.const(np.array([1, 0], np.int32), int32, name="perm")])
    x = op("Reshape", [x, _shape_const(builder, dims)])
    return _scale_shift(builder, x, dtype, gain, 0.0)
