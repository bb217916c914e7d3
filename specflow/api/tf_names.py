"""The functions a TensorFlow user reaches for first, with TensorFlow's signatures, as thin
wrappers of the registered ops (``sf.matmul``, ``sf.reduce_mean(x, axis=1, keepdims=True)``,
``sf.zeros``, ``sf.concat``, ``sf.math.*``, ``sf.random.normal``); ``sf.nn`` is ``api/nn.py``.

Each one is the op TensorFlow's own wrapper emits (``reduce_mean`` is Mean over the given axes,
``matmul`` MatMul or BatchMatMulV2), so values and gradients are the ops' own; eagerly it runs
now, inside ``sf.function`` it adds the same nodes to the trace. ``axis=None`` means every axis,
as in TensorFlow."""

from __future__ import annotations

import builtins
import sys
import types

import numpy as np

from specflow.api.indexed_slices import IndexedSlices
from specflow.api.op_functions import call, convert_to_tensor
from specflow.api.tensor import Tensor
from specflow.graph import dtypes
from specflow.graph.dtypes import as_dtype


def _t(x, dtype=None):
    """``x`` as a tensor (a variable's value, an array or Python value converted)."""
    return convert_to_tensor(x, dtype)


def _axes(x: Tensor, axis):
    """Reduction axes: ``None`` is every axis (a Range over the rank when it is not known)."""
    if axis is None:
        if x.shape.rank is not None:
            return np.arange(x.shape.rank, dtype=np.int32)
        return call("Range", np.int32(0), call("Rank", x), np.int32(1))
    if isinstance(axis, Tensor):
        return axis
    return np.asarray(axis, np.int32)


def _reduce(op: str):
    def reduce(input_tensor, axis=None, keepdims: bool = False, name: str | None = None):
        x = _t(input_tensor)
        return call(op, x, _axes(x, axis), keep_dims=bool(keepdims), name=name)

    reduce.__name__ = f"reduce_{op.lower()}"
    reduce.__doc__ = f"TensorFlow's ``tf.{reduce.__name__}``: {op} over ``axis`` (None: all axes)."
    return reduce


reduce_sum = _reduce("Sum")
reduce_mean = _reduce("Mean")
reduce_max = _reduce("Max")
reduce_min = _reduce("Min")
reduce_prod = _reduce("Prod")
reduce_any = _reduce("Any")
reduce_all = _reduce("All")


def reduce_logsumexp(input_tensor, axis=None, keepdims: bool = False, name: str | None = None):
    """log(sum(exp(x))) computed stably, as TensorFlow does: the max subtracted first, or 0
    where the max is not finite (an all -inf row gives -inf, a +inf one +inf, not NaN)."""
    x = _t(input_tensor)
    axes = _axes(x, axis)
    raw = call("Max", x, axes, keep_dims=True)
    m = stop_gradient(call("SelectV2", call("IsFinite", raw), raw, call("ZerosLike", raw)))
    out = call("Log", call("Sum", call("Exp", x - m), axes, keep_dims=True)) + m
    return out if keepdims else call("Squeeze", out, squeeze_dims=_dims(x, axis), name=name)


def _dims(x: Tensor, axis) -> list[int]:
    if axis is None:
        return list(builtins.range(x.shape.rank))
    return [int(a) for a in np.atleast_1d(axis)]


def matmul(a, b, transpose_a: bool = False, transpose_b: bool = False, adjoint_a: bool = False,
           adjoint_b: bool = False, a_is_sparse: bool = False, b_is_sparse: bool = False, output_type=None,
           name: str | None = None):
    """MatMul for two matrices, BatchMatMulV2 (broadcast batch dims) otherwise; ``output_type``
    (TF's: int8 operands to int32, else the operands' dtype) casts the int8 operands first."""
    a = _t(a)
    b = _t(b, a.dtype if not isinstance(b, Tensor) else None)
    if output_type is not None and as_dtype(output_type) != a.dtype:
        out = as_dtype(output_type)
        if not (a.dtype == b.dtype == dtypes.int8 and out == dtypes.int32):
            raise TypeError(f"matmul: output_type {out.name} needs int8 operands and int32 output "
                            f"(got {a.dtype.name} and {b.dtype.name})")
        a, b = cast(a, out), cast(b, out)
    if a.shape.rank == 2 and b.shape.rank == 2:
        if adjoint_a or adjoint_b:
            a = call("Conj", a) if adjoint_a and a.dtype.is_complex else a
            b = call("Conj", b) if adjoint_b and b.dtype.is_complex else b
        return call("MatMul", a, b, transpose_a=transpose_a or adjoint_a, transpose_b=transpose_b or adjoint_b,
                    name=name)
    if transpose_a:
        a = _swap_last(a)
    if transpose_b:
        b = _swap_last(b)
    return call("BatchMatMulV2", a, b, adj_x=adjoint_a, adj_y=adjoint_b, name=name)


def _swap_last(x: Tensor):
    r = x.shape.rank
    return call("Transpose", x, np.array(list(builtins.range(r - 2)) + [r - 1, r - 2], np.int32))


def reshape(tensor, shape, name: str | None = None):
    return call("Reshape", _t(tensor), _shape_arg(shape), name=name)


def _shape_arg(shape):
    if isinstance(shape, Tensor):
        return shape
    if isinstance(shape, (list, tuple)) and any(isinstance(s, Tensor) for s in shape):
        return call("Pack", [call("Cast", s, DstT=dtypes.int32) if isinstance(s, Tensor) and s.dtype != dtypes.int32
                             else s for s in shape], axis=0)
    return np.asarray([-1 if s is None else s for s in np.atleast_1d(shape)] if np.ndim(shape) else shape, np.int32)


def transpose(a, perm=None, conjugate: bool = False, name: str | None = None):
    x = _t(a)
    if perm is None:
        perm = list(builtins.range(x.shape.rank))[::-1]
    elif not isinstance(perm, Tensor) and x.shape.rank is not None:
        perm = [int(p) % x.shape.rank if -x.shape.rank <= int(p) < 0 else int(p) for p in perm]  # TF's -1
    if conjugate and x.dtype.is_complex:
        return call("ConjugateTranspose", x, perm if isinstance(perm, Tensor) else np.asarray(perm, np.int32),
                    name=name)
    return call("Transpose", x, perm if isinstance(perm, Tensor) else np.asarray(perm, np.int32), name=name)


def concat(values, axis, name: str | None = None):
    values = list(values)
    if len(values) == 1:
        return identity(values[0], name=name)
    return call("ConcatV2", values, np.int32(axis), name=name)


def stack(values, axis: int = 0, name: str | None = None):
    return call("Pack", list(values), axis=axis, name=name)


def unstack(value, num=None, axis: int = 0, name: str | None = None):
    x = _t(value)
    if x.shape.rank is not None and not -x.shape.rank <= axis < x.shape.rank:
        raise ValueError(f"unstack: axis {axis} is out of range for a tensor of rank {x.shape.rank}")
    n = num if num is not None else x.shape[axis]
    if n is None:
        raise ValueError(f"unstack: dimension {axis} of {x.shape} is unknown; give num=")
    return call("Unpack", x, num=int(n), axis=axis, name=name)


def split(value, num_or_size_splits, axis: int = 0, num=None, name: str | None = None):
    x = _t(value)
    if isinstance(num_or_size_splits, Tensor) and num_or_size_splits.shape.rank == 0:
        num_or_size_splits = int(num_or_size_splits)
    if isinstance(num_or_size_splits, (int, np.integer)):
        return call("Split", np.int32(axis), x, num_split=num_or_size_splits, name=name)
    if isinstance(num_or_size_splits, Tensor):
        n = num if num is not None else num_or_size_splits.shape[0]
        if n is None:
            raise ValueError("split: the number of splits is unknown; give num=")
        return call("SplitV", x, num_or_size_splits, np.int32(axis), num_split=int(n), name=name)
    sizes = np.asarray(num_or_size_splits, np.int64)
    return call("SplitV", x, sizes, np.int32(axis), num_split=len(sizes), name=name)


def expand_dims(input, axis, name: str | None = None):  # noqa: A002 (TensorFlow's name)
    return call("ExpandDims", _t(input), np.int32(axis), name=name)


def squeeze(input, axis=None, name: str | None = None):  # noqa: A002
    dims = [] if axis is None else [int(a) for a in np.atleast_1d(axis)]
    return call("Squeeze", _t(input), squeeze_dims=dims, name=name)


def zeros(shape, dtype=dtypes.float32, name: str | None = None):
    dt = as_dtype(dtype)
    return fill(shape, np.array(b"", object) if dt == dtypes.string else np.zeros((), dt.numpy), name=name)


def ones(shape, dtype=dtypes.float32, name: str | None = None):
    dt = as_dtype(dtype)
    if dt == dtypes.string:
        raise TypeError("ones: a string tensor has no one (TF's error); use sf.fill(shape, b'...')")
    return fill(shape, np.ones((), dt.numpy), name=name)


def fill(dims, value, name: str | None = None):
    """TensorFlow's ``tf.fill``; a scalar ``dims`` is one dimension (``sf.zeros(3)``), as TF's."""
    if isinstance(dims, Tensor) and dims.shape.rank == 0:
        dims = call("Reshape", dims, np.array([1], np.int32))
    elif not isinstance(dims, Tensor) and not isinstance(dims, (list, tuple)) and np.ndim(dims) == 0:
        dims = [dims]
    return call("Fill", _shape_arg(dims), value, name=name)


def zeros_like(input, dtype=None, name: str | None = None):  # noqa: A002
    x = _t(input)
    return call("ZerosLike", x if dtype is None else cast(x, dtype), name=name)


def ones_like(input, dtype=None, name: str | None = None):  # noqa: A002
    x = _t(input)
    return call("OnesLike", x if dtype is None else cast(x, dtype), name=name)


def range(start, limit=None, delta=1, dtype=None, name: str | None = None):  # noqa: A001
    if limit is None:
        start, limit = 0, start
    if dtype is None:  # TensorFlow's: the widest of the arguments' (a Python int int32, a float float32)
        order = [dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64]
        found = [v.dtype if isinstance(v, Tensor) else as_dtype(v.dtype) if isinstance(v, (np.ndarray, np.generic))
                 else dtypes.float32 if isinstance(v, float) else dtypes.int32 for v in (start, limit, delta)]
        dtype = max((d for d in found if d in order), key=order.index, default=dtypes.int32)
    dt = as_dtype(dtype)
    args = [(cast(v, dt) if v.dtype != dt else v) if isinstance(v, Tensor) else np.asarray(v, dt.numpy)
            for v in (start, limit, delta)]
    return call("Range", *args, name=name)


def cast(x, dtype, name: str | None = None):
    x = _t(x)
    dt = as_dtype(dtype)
    return x if x.dtype == dt and name is None else call("Cast", x, DstT=dt, name=name)


def shape(input, out_type=dtypes.int32, name: str | None = None):  # noqa: A002
    return call("Shape", _t(input), out_type=as_dtype(out_type), name=name)


def size(input, out_type=dtypes.int32, name: str | None = None):  # noqa: A002
    return call("Size", _t(input), out_type=as_dtype(out_type), name=name)


def rank(input, name: str | None = None):  # noqa: A002
    return call("Rank", _t(input), name=name)


def where(condition, x=None, y=None, name: str | None = None):
    """SelectV2 (broadcasting) with ``x`` and ``y``; the coordinates of true elements without."""
    if x is None and y is None:
        return call("Where", _t(condition), name=name)
    if x is None or y is None:
        raise ValueError("where: give both x and y, or neither")
    return call("SelectV2", condition, x, y, name=name)


def einsum(equation: str, *inputs, name: str | None = None):
    return call("Einsum", list(inputs), equation=equation, name=name)


def argmax(input, axis=None, output_type=dtypes.int64, name: str | None = None):  # noqa: A002
    return call("ArgMax", _t(input), np.int32(0 if axis is None else axis), output_type=as_dtype(output_type),
                name=name)


def argmin(input, axis=None, output_type=dtypes.int64, name: str | None = None):  # noqa: A002
    return call("ArgMin", _t(input), np.int32(0 if axis is None else axis), output_type=as_dtype(output_type),
                name=name)


def one_hot(indices, depth, on_value=None, off_value=None, axis: int = -1, dtype=None, name: str | None = None):
    if dtype is not None:
        dt = as_dtype(dtype)
    else:  # TF's: on_value's dtype, else off_value's, else float32
        given = next((v for v in (on_value, off_value) if v is not None), None)
        dt = dtypes.float32 if given is None else _t(given).dtype
    on = _t(1 if on_value is None else on_value, None if isinstance(on_value, Tensor) else dt)
    off = _t(0 if off_value is None else off_value, None if isinstance(off_value, Tensor) else dt)
    if on.dtype != dt or off.dtype != dt:
        raise TypeError(f"one_hot: on_value ({on.dtype.name}) and off_value ({off.dtype.name}) must be {dt.name}")
    return call("OneHot", _t(indices), np.int32(depth), on, off, axis=axis, name=name)


def gather(params, indices, validate_indices=None, axis=None, batch_dims: int = 0, name: str | None = None):
    return call("GatherV2", params, indices, np.int32(batch_dims if axis is None else axis), batch_dims=batch_dims,
                name=name)


def tile(input, multiples, name: str | None = None):  # noqa: A002
    return call("Tile", _t(input), _shape_arg(multiples), name=name)


def pad(tensor, paddings, mode: str = "CONSTANT", constant_values=0, name: str | None = None):
    x = _t(tensor)
    p = paddings if isinstance(paddings, Tensor) else np.asarray(paddings, np.int32)  # a tensor as it is (TF's)
    mode = mode.upper()
    if mode == "CONSTANT":
        if constant_values == 0:
            return call("Pad", x, p, name=name)
        return call("PadV2", x, p, _t(constant_values, None if isinstance(constant_values, Tensor) else x.dtype),
                    name=name)
    return call("MirrorPad", x, p, mode=mode, name=name)


def reverse(tensor, axis, name: str | None = None):
    return call("ReverseV2", _t(tensor), np.asarray(axis, np.int32), name=name)


def broadcast_to(input, shape, name: str | None = None):  # noqa: A002
    return call("BroadcastTo", _t(input), _shape_arg(shape), name=name)


def clip_by_value(t, clip_value_min, clip_value_max, name: str | None = None):
    if isinstance(t, IndexedSlices):  # TF's: the values clipped, the rows kept
        return t.with_values(clip_by_value(t.values, clip_value_min, clip_value_max, name))
    x = _t(t)
    lo = _t(clip_value_min, None if isinstance(clip_value_min, Tensor) else x.dtype)
    hi = _t(clip_value_max, None if isinstance(clip_value_max, Tensor) else x.dtype)
    if all(b.shape.rank == 0 or b.shape == x.shape for b in (lo, hi)):
        return call("ClipByValue", x, lo, hi, name=name)
    # Bounds that broadcast against t: TF's minimum/maximum (the result keeps t's shape)
    out = call("Maximum", call("Minimum", x, hi), lo, name=name)
    if x.shape.is_fully_defined and out.shape.is_fully_defined and out.shape != x.shape:
        raise ValueError(f"clip_by_value: bounds of shapes {lo.shape} and {hi.shape} would change t's shape "
                         f"{x.shape} to {out.shape}")
    return out


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name: str | None = None):
    """The tensors scaled by clip_norm / max(global norm, clip_norm), and the global norm
    (TensorFlow's formula; None entries stay None; an IndexedSlices counts and keeps its values
    as they are, repeated rows apart)."""
    values = [_t(t.values if isinstance(t, IndexedSlices) else t) for t in t_list if t is not None]
    norm = _t(use_norm) if use_norm is not None else call(
        "Sqrt", call("AddN", [call("Sum", call("Square", t), _axes(t, None)) for t in values]))
    scale = clip_norm / call("Maximum", norm, np.asarray(clip_norm, norm.dtype.numpy))
    return [None if t is None else t.with_values(t.values * scale) if isinstance(t, IndexedSlices) else _t(t) * scale
            for t in t_list], norm  # fmt: skip


def stop_gradient(input, name: str | None = None):  # noqa: A002
    return call("StopGradient", _t(input), name=name)


def identity(input, name: str | None = None):  # noqa: A002
    return call("Identity", _t(input), name=name)


def _elementwise(op: str, pyname: str, n: int = 1):
    if n == 1 and pyname in ("softplus", "softsign"):  # TF names their argument features
        def fn(features, name: str | None = None):
            return call(op, _t(features), name=name)
    elif n == 1:
        def fn(x, name: str | None = None):
            return call(op, _t(x), name=name)
    else:
        def fn(x, y, name: str | None = None):
            return call(op, x, y, name=name)
    fn.__name__ = pyname
    fn.__doc__ = f"TensorFlow's ``tf.math.{pyname}``: the {op} op."
    return fn


_UNARY = {"exp": "Exp", "log": "Log", "sqrt": "Sqrt", "rsqrt": "Rsqrt", "square": "Square",
          "tanh": "Tanh", "sigmoid": "Sigmoid", "negative": "Neg", "sign": "Sign", "floor": "Floor",
          "ceil": "Ceil", "sin": "Sin", "cos": "Cos", "log1p": "Log1p", "expm1": "Expm1",
          "reciprocal": "Reciprocal", "erf": "Erf", "softplus": "Softplus", "logical_not": "LogicalNot",
          "is_nan": "IsNan", "is_finite": "IsFinite"}
_BINARY = {"add": "AddV2", "subtract": "Sub", "multiply": "Mul", "pow": "Pow",
           "maximum": "Maximum", "minimum": "Minimum", "squared_difference": "SquaredDifference",
           "floordiv": "FloorDiv", "floormod": "FloorMod", "equal": "Equal", "not_equal": "NotEqual",
           "less": "Less", "less_equal": "LessEqual", "greater": "Greater", "greater_equal": "GreaterEqual",
           "logical_and": "LogicalAnd", "logical_or": "LogicalOr"}
for _name, _op in _UNARY.items():
    globals()[_name] = _elementwise(_op, _name)
for _name, _op in _BINARY.items():
    globals()[_name] = _elementwise(_op, _name, 2)


def round(x, name: str | None = None):  # noqa: A001
    """Round half to even; integers are returned as they are (TF's ``tf.math.round``)."""
    x = _t(x)
    return identity(x, name=name) if x.dtype.is_integer else call("Round", x, name=name)


def abs(x, name: str | None = None):  # noqa: A001
    """|x|; of a complex tensor its magnitude, real (ComplexAbs), as tf.abs."""
    x = _t(x)
    if x.dtype.is_complex:
        return call("ComplexAbs", x, Tout=dtypes.float32 if x.dtype == dtypes.complex64 else dtypes.float64, name=name)
    return call("Abs", x, name=name)


def divide(x, y, name: str | None = None):
    """``x / y`` (tf.math.divide): integers divided as floats, as Python's ``/`` on tensors."""
    from specflow.api.op_functions import truediv

    if not isinstance(x, Tensor):  # TF's: a Python x takes y's dtype
        x = _t(x, y.dtype if isinstance(y, Tensor) else None)
    return truediv(x, y, name=name)


def divide_no_nan(x, y, name: str | None = None):
    """x / y, 0 where y is 0; integers divided as floats (8/16-bit as float32, wider as
    float64), as TF's ``tf.math.divide_no_nan``."""
    x = _t(x, y.dtype if isinstance(y, Tensor) else None)
    y = _t(y, x.dtype if not isinstance(y, Tensor) else None)
    if x.dtype.is_integer and x.dtype == y.dtype:
        to = dtypes.float32 if x.dtype.itemsize <= 2 else dtypes.float64
        x, y = cast(x, to), cast(y, to)
    return call("DivNoNan", x, y, name=name)


def cumsum(x, axis: int = 0, exclusive: bool = False, reverse: bool = False, name: str | None = None):
    return call("Cumsum", _t(x), np.int32(axis), exclusive=exclusive, reverse=reverse, name=name)


def top_k(input, k: int = 1, sorted: bool = True, index_type=dtypes.int32, name: str | None = None):  # noqa: A002
    out = call("TopKV2", _t(input), k if isinstance(k, Tensor) else np.int32(k), sorted=sorted, name=name)
    if as_dtype(index_type) == dtypes.int32:
        return out
    return type(out)(out.values, cast(out.indices, index_type))


def sequence_mask(lengths, maxlen=None, dtype=dtypes.bool_, name: str | None = None):
    """mask[i, j] = j < lengths[i] (maxlen: the longest length when not given)."""
    lengths = _t(lengths)
    if maxlen is None:
        maxlen = call("Max", lengths, np.int32(0))
    row = range(0, maxlen, 1, dtype=lengths.dtype)
    mask = call("Less", row, expand_dims(lengths, -1))
    return mask if as_dtype(dtype) == dtypes.bool_ else cast(mask, dtype, name=name)


# --- sf.math and sf.random ---------------------------------------------------------------------

math = types.ModuleType("specflow.math", "TensorFlow's tf.math names (``sf.math.exp``, ...).")
for _name in [*_UNARY, *_BINARY, "abs", "round", "divide", "divide_no_nan", "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
              "reduce_any", "reduce_all", "reduce_logsumexp", "argmax", "argmin", "cumsum", "top_k"]:
    setattr(math, _name, globals()[_name])


def _random_shape(shape):
    return _shape_arg(shape)


_DEFAULT_GRAPH_SEED = 87654321
_GLOBAL_SEED: list = [None, 0]  # sf.random.set_seed's seed, and the op seeds handed out since


def _seeds(seed):
    """A stateful random op's (seed, seed2), by TensorFlow's rule (``random_seed.get_seed``): no
    global seed: the op seed alone (none: nondeterministic); a global seed: it and the op seed, or,
    without one, the next of a counter that ``set_seed`` restarts."""
    g = _GLOBAL_SEED[0]
    if g is None:
        return {} if seed is None else {"seed": _DEFAULT_GRAPH_SEED, "seed2": int(seed)}
    if seed is None:
        seed = _GLOBAL_SEED[1]
        _GLOBAL_SEED[1] += 1
    if g == 0 and int(seed) == 0:  # (0, 0) would mean "unseeded" to the kernel, as in TF
        return {"seed": 0, "seed2": 2**31 - 1}
    return {"seed": g, "seed2": int(seed)}


def set_seed(seed) -> None:
    """TensorFlow's ``tf.random.set_seed``: with a global seed, random ops made without an op seed
    get a deterministic one (a counter restarted here), so the program draws the same numbers
    again; eager random ops restart their streams. ``None`` goes back to nondeterministic draws."""
    from specflow.api import eager

    _GLOBAL_SEED[0] = None if seed is None else int(seed)
    _GLOBAL_SEED[1] = 0
    for key in list(eager._CACHE):  # eager kernels keep their generator per (seed, seed2): drop them
        if len(key) > 2 and isinstance(key[2], tuple) and any(isinstance(p, tuple) and p[:1] == ("seed",)
                                                               for p in key[2]):
            eager._CACHE.pop(key, None)


def random_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name: str | None = None):
    dt = as_dtype(dtype)
    x = call("RandomStandardNormal", _random_shape(shape), dtype=dt, **_seeds(seed))
    return call("AddV2", call("Mul", x, np.asarray(stddev, dt.numpy)), np.asarray(mean, dt.numpy), name=name)


def random_uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None, name: str | None = None):
    dt = as_dtype(dtype)
    if not dt.is_floating:
        if maxval is None:
            raise ValueError(f"random.uniform: maxval is needed for {dt.name}")
        return call("RandomUniformInt", _random_shape(shape), np.asarray(minval, dt.numpy), np.asarray(maxval, dt.numpy),
                    **_seeds(seed), name=name)
    maxval = 1.0 if maxval is None else maxval
    x = call("RandomUniform", _random_shape(shape), dtype=dt, **_seeds(seed))
    return call("AddV2", call("Mul", x, np.asarray(maxval - minval, dt.numpy)), np.asarray(minval, dt.numpy), name=name)


random = types.ModuleType("specflow.random", "TensorFlow's tf.random names: normal, uniform (stateful ops "
                          "seeded per op, as TensorFlow's op-level seed).")
random.normal = random_normal
random.uniform = random_uniform
random.set_seed = set_seed

NAMES = sorted(n for n, v in list(vars(sys.modules[__name__]).items())
               if callable(v) and not n.startswith("_") and getattr(v, "__module__", None) == __name__
               and n not in ("random_normal", "random_uniform", "set_seed"))

# The rest of tf.math and tf.random: each module adds its names to the namespaces above.
from specflow.api import tf_math_names, tf_random_names  # noqa: E402,F401
