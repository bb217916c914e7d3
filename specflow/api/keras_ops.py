"""``sf.keras.ops``: Keras 3's backend-agnostic ops (numpy's names and arguments) over sf's, for
custom layers, losses and metrics written against ``keras.ops``. Dtypes follow Keras's rules:
Python numbers are weak (``x * 2.0`` keeps x's float dtype; an int tensor with a Python float
becomes float32), mixed tensors promote (int with float: the float; floats: the wider), and
``mean``/``divide``/``sqrt``-like ops of integers give float32; ``sum`` of bool/int8/int16 is
int32, ``argmax`` int32. Defaults that differ from TF's are Keras's (``gelu`` approximate,
``leaky_relu`` slope 0.2, ``std``/``var`` over all axes)."""

from __future__ import annotations

import builtins

import numpy as np

from specflow.api import tf_array_names as _ta
from specflow.api import tf_control_names as _tc
from specflow.api import tf_names as _tf
from specflow.api.op_functions import call
from specflow.api.op_functions import constant as _constant
from specflow.api.tensor import Tensor
from specflow.api.variables import Variable
from specflow.graph import dtypes
from specflow.graph.dtypes import as_dtype

# --- dtypes ------------------------------------------------------------------------------------------


def _dtype_of(x):
    if isinstance(x, (Tensor, Variable)):
        return x.dtype
    if isinstance(x, (np.ndarray, np.generic)):
        return as_dtype(x.dtype)
    return None  # a Python number or list: weak


def _rank(dt) -> int:
    return 0 if dt == dtypes.bool_ else 1 if dt.is_integer else 2 if dt.is_floating else 3


def result_type(*xs, float_result: bool = False):
    """Keras's promotion of ``xs`` (tensors strong, Python numbers weak)."""
    strong = [d for d in (_dtype_of(x) for x in xs) if d is not None]
    weak = [x for x in xs if _dtype_of(x) is None and x is not None]
    weak_float = builtins.any(isinstance(w, float) or (isinstance(w, (list, tuple)) and
                                                       builtins.any(isinstance(v, float) for v in np.ravel(w)))
                              for w in weak)  # fmt: skip
    weak_complex = builtins.any(isinstance(w, complex) for w in weak)
    if not strong:
        dt = dtypes.complex64 if weak_complex else dtypes.float32 if weak_float else dtypes.int32 if weak else dtypes.float32
    else:
        top = builtins.max(_rank(d) for d in strong)
        same = [d for d in strong if _rank(d) == top]
        if top == 2 and len({d.name for d in same}) > 1 and {d.name for d in same} <= {"float16", "bfloat16"}:
            dt = dtypes.float32
        else:
            dt = as_dtype(np.result_type(*[d.numpy for d in same])) if top in (1, 3) else builtins.max(same, key=lambda d: d.itemsize)
        if top < 2 and weak_float:
            dt = dtypes.float32
        if top < 3 and weak_complex:
            dt = dtypes.complex64
    if float_result and not (dt.is_floating or dt.is_complex):
        dt = dtypes.float32
    return dt


def _as(x, dt):
    if isinstance(x, Variable):
        x = x.read_value()
    if isinstance(x, Tensor):
        return x if x.dtype == dt else _tf.cast(x, dt)
    return _constant(np.asarray(x).astype(dt.numpy))


def _same(*xs, float_result: bool = False):
    dt = result_type(*xs, float_result=float_result)
    return [_as(x, dt) for x in xs]


def convert_to_tensor(x, dtype=None, sparse=None, ragged=None):
    if dtype is not None:
        return _as(x, as_dtype(dtype))
    if isinstance(x, (Tensor, Variable)):
        return _tf._t(x)
    return _as(x, result_type(x) if _dtype_of(x) is None else _dtype_of(x))


def convert_to_numpy(x):
    return np.asarray(x)


def cast(x, dtype):
    return _as(x, as_dtype(dtype))


def is_tensor(x) -> bool:
    return isinstance(x, (Tensor, Variable))


def shape(x) -> tuple:
    """The static shape as a tuple (Keras's: None for an unknown dim)."""
    x = convert_to_tensor(x)
    return tuple(x.shape.as_list()) if x.shape.rank is not None else ()


def ndim(x) -> int:
    return convert_to_tensor(x).shape.rank


def size(x):
    return _tf.size(convert_to_tensor(x))


def dtype(x) -> str:
    return convert_to_tensor(x).dtype.name


# --- elementwise ---------------------------------------------------------------------------------------


def _unary(fn, float_result: bool = False):
    def op(x):
        (x,) = _same(x, float_result=float_result)
        return fn(x)
    return op


def _binary(fn, float_result: bool = False):
    def op(x1, x2):
        a, b = _same(x1, x2, float_result=float_result)
        return fn(a, b)
    return op


add, subtract, multiply = _binary(_tf.add), _binary(_tf.subtract), _binary(_tf.multiply)
maximum, minimum = _binary(_tf.maximum), _binary(_tf.minimum)
divide = true_divide = _binary(lambda a, b: call("RealDiv", a, b) if not a.dtype.is_integer else _tf.divide(a, b),
                               float_result=True)  # fmt: skip
floor_divide, mod = _binary(_tf.floordiv), _binary(_tf.floormod)
power = _binary(_tf.pow)
equal, not_equal = _binary(_tf.equal), _binary(_tf.not_equal)
greater, greater_equal = _binary(_tf.greater), _binary(_tf.greater_equal)
less, less_equal = _binary(_tf.less), _binary(_tf.less_equal)
arctan2 = _binary(lambda a, b: call("Atan2", a, b), float_result=True)
logical_and = _binary(lambda a, b: _tf.logical_and(_tf.cast(a, "bool"), _tf.cast(b, "bool")))
logical_or = _binary(lambda a, b: _tf.logical_or(_tf.cast(a, "bool"), _tf.cast(b, "bool")))
logical_xor = _binary(lambda a, b: call("NotEqual", _tf.cast(a, "bool"), _tf.cast(b, "bool")))


def logical_not(x):
    return _tf.logical_not(_tf.cast(convert_to_tensor(x), "bool"))


negative, square, sign = _unary(_tf.negative), _unary(_tf.square), _unary(_tf.sign)
absolute = abs = _unary(_tf.abs)
exp, log, log1p, expm1 = (_unary(f, True) for f in (_tf.exp, _tf.log, _tf.log1p, _tf.expm1))
sqrt, rsqrt = _unary(_tf.sqrt, True), _unary(_tf.rsqrt, True)
sin, cos, tan = (_unary(f, True) for f in (_tf.sin, _tf.cos, lambda t: call("Tan", t)))
arcsin, arccos, arctan = (_unary(lambda t, op=op: call(op, t), True) for op in ("Asin", "Acos", "Atan"))
sinh, cosh, tanh = (_unary(lambda t, op=op: call(op, t), True) for op in ("Sinh", "Cosh", "Tanh"))
erf = _unary(_tf.erf, True)
erfinv = _unary(lambda t: call("Erfinv", t), True)
reciprocal = _unary(_tf.reciprocal, True)
isnan, isfinite = _unary(_tf.is_nan, True), _unary(_tf.is_finite, True)
isinf = _unary(lambda t: call("IsInf", t), True)


def floor(x):
    (x,) = _same(x, float_result=True)
    return _tf.floor(x)


def ceil(x):
    (x,) = _same(x, float_result=True)
    return _tf.ceil(x)


def round(x, decimals: int = 0):  # noqa: A001
    x = convert_to_tensor(x)
    if decimals == 0:
        return _tf.round(x) if not x.dtype.is_integer else x
    factor = np.asarray(10.0 ** decimals, x.dtype.numpy)
    return _tf.round(x * factor) / factor


def clip(x, x_min, x_max):
    x = convert_to_tensor(x)
    if x.dtype == dtypes.bool_:
        x = _tf.cast(x, "int32")
    return _tf.clip_by_value(x, np.asarray(x_min, x.dtype.numpy), np.asarray(x_max, x.dtype.numpy))


def where(condition, x1=None, x2=None):
    condition = _tf.cast(convert_to_tensor(condition), "bool")
    if x1 is None and x2 is None:
        found = _tf.cast(call("Where", condition), "int32")
        return tuple(_tf.unstack(found, axis=1)) if condition.shape.rank else (found,)
    a, b = _same(x1, x2)
    return call("SelectV2", condition, a, b)


def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    x = convert_to_tensor(x)
    if not x.dtype.is_floating:
        return x
    info = np.finfo(x.dtype.numpy)
    x = call("SelectV2", _tf.is_nan(x), np.asarray(nan, x.dtype.numpy), x)
    x = call("SelectV2", x == np.inf, np.asarray(info.max if posinf is None else posinf, x.dtype.numpy), x)
    return call("SelectV2", x == -np.inf, np.asarray(info.min if neginf is None else neginf, x.dtype.numpy), x)


# --- reductions ------------------------------------------------------------------------------------------


def _axis(axis):
    return None if axis is None else list(axis) if isinstance(axis, (list, tuple)) else axis


def sum(x, axis=None, keepdims: bool = False):  # noqa: A001
    x = convert_to_tensor(x)
    if x.dtype.name in ("bool", "int8", "int16"):
        x = _tf.cast(x, "int32")
    elif x.dtype.name in ("uint8", "uint16"):
        x = _tf.cast(x, "uint32")
    return _tf.reduce_sum(x, axis=_axis(axis), keepdims=keepdims)


def mean(x, axis=None, keepdims: bool = False):
    (x,) = _same(x, float_result=True)
    return _tf.reduce_mean(x, axis=_axis(axis), keepdims=keepdims)


def max(x, axis=None, keepdims: bool = False, initial=None):  # noqa: A001
    out = _tf.reduce_max(convert_to_tensor(x), axis=_axis(axis), keepdims=keepdims)
    return out if initial is None else maximum(out, initial)


def min(x, axis=None, keepdims: bool = False, initial=None):  # noqa: A001
    out = _tf.reduce_min(convert_to_tensor(x), axis=_axis(axis), keepdims=keepdims)
    return out if initial is None else minimum(out, initial)


def prod(x, axis=None, keepdims: bool = False, dtype=None):
    x = convert_to_tensor(x) if dtype is None else cast(x, dtype)
    if x.dtype.name in ("bool", "int8", "int16"):
        x = _tf.cast(x, "int32")
    return _tf.reduce_prod(x, axis=_axis(axis), keepdims=keepdims)


def all(x, axis=None, keepdims: bool = False):  # noqa: A001
    return _tf.reduce_all(_tf.cast(convert_to_tensor(x), "bool"), axis=_axis(axis), keepdims=keepdims)


def any(x, axis=None, keepdims: bool = False):  # noqa: A001
    return _tf.reduce_any(_tf.cast(convert_to_tensor(x), "bool"), axis=_axis(axis), keepdims=keepdims)


def var(x, axis=None, keepdims: bool = False):
    (x,) = _same(x, float_result=True)
    m = _tf.reduce_mean(x, axis=_axis(axis), keepdims=True)
    return _tf.reduce_mean(_tf.square(x - m), axis=_axis(axis), keepdims=keepdims)


def std(x, axis=None, keepdims: bool = False):
    return _tf.sqrt(var(x, axis, keepdims))


def argmax(x, axis=None, keepdims: bool = False):
    return _arg(_tf.argmax, x, axis, keepdims)


def argmin(x, axis=None, keepdims: bool = False):
    return _arg(_tf.argmin, x, axis, keepdims)


def _arg(fn, x, axis, keepdims):
    x = convert_to_tensor(x)
    if axis is None:
        out = fn(_tf.reshape(x, [-1]), axis=0, output_type=dtypes.int32)
        return _tf.reshape(out, [1] * x.shape.rank) if keepdims else out
    out = fn(x, axis=axis, output_type=dtypes.int32)
    return _tf.expand_dims(out, axis) if keepdims else out


def logsumexp(x, axis=None, keepdims: bool = False):
    (x,) = _same(x, float_result=True)
    return _tf.reduce_logsumexp(x, axis=_axis(axis), keepdims=keepdims)


def cumsum(x, axis=None, dtype=None):
    x = convert_to_tensor(x) if dtype is None else cast(x, dtype)
    if x.dtype == dtypes.bool_:
        x = _tf.cast(x, "int32")
    if axis is None:
        x, axis = _tf.reshape(x, [-1]), 0
    return _tf.cumsum(x, axis=axis)


def cumprod(x, axis=None, dtype=None):
    x = convert_to_tensor(x) if dtype is None else cast(x, dtype)
    if axis is None:
        x, axis = _tf.reshape(x, [-1]), 0
    return call("Cumprod", x, np.int32(axis))


def count_nonzero(x, axis=None):
    return _tf.reduce_sum(_tf.cast(convert_to_tensor(x) != 0, "int32"), axis=_axis(axis))


def norm(x, ord=None, axis=None, keepdims: bool = False):  # noqa: A002
    (x,) = _same(x, float_result=True)
    if ord is None and axis is None:
        return _tf.sqrt(_tf.reduce_sum(_tf.square(_tf.abs(x)), keepdims=keepdims))
    from specflow.api.linalg import norm as tf_norm

    return tf_norm(x, ord="euclidean" if ord is None else ord, axis=axis, keepdims=keepdims)


# --- shapes and building ---------------------------------------------------------------------------------


def reshape(x, newshape):
    return _tf.reshape(convert_to_tensor(x), newshape)


def transpose(x, axes=None):
    return _tf.transpose(convert_to_tensor(x), perm=axes)


def expand_dims(x, axis):
    x = convert_to_tensor(x)
    for a in sorted(axis if isinstance(axis, (list, tuple)) else [axis]):
        x = _tf.expand_dims(x, a)
    return x


def squeeze(x, axis=None):
    return _tf.squeeze(convert_to_tensor(x), axis=axis if axis is None or isinstance(axis, (list, tuple)) else [axis])


def concatenate(xs, axis: int = 0):
    return _tf.concat(_same(*xs), axis=axis)


def stack(x, axis: int = 0):
    return _tf.stack(_same(*x), axis=axis)


def split(x, indices_or_sections, axis: int = 0):
    """numpy's split: a number of equal sections, or the indices to split before."""
    x = convert_to_tensor(x)
    if isinstance(indices_or_sections, int):
        return _tf.split(x, indices_or_sections, axis=axis)
    n = x.shape.as_list()[axis]
    bounds = [0, *indices_or_sections, n]
    return _tf.split(x, [b - a for a, b in zip(bounds[:-1], bounds[1:])], axis=axis)


def tile(x, repeats):
    x = convert_to_tensor(x)
    repeats = list(np.atleast_1d(repeats))
    if len(repeats) < x.shape.rank:
        repeats = [1] * (x.shape.rank - len(repeats)) + repeats
    elif len(repeats) > x.shape.rank:
        x = _tf.reshape(x, [1] * (len(repeats) - x.shape.rank) + x.shape.as_list())
    return _tf.tile(x, repeats)


def repeat(x, repeats, axis=None):
    return _ta.repeat(convert_to_tensor(x), repeats, axis=axis)


def broadcast_to(x, shape):
    return _tf.broadcast_to(convert_to_tensor(x), shape)


def take(x, indices, axis=None):
    x = convert_to_tensor(x)
    indices = convert_to_tensor(indices)
    if axis is None:
        x, axis = _tf.reshape(x, [-1]), 0
    n = x.shape.as_list()[axis]
    if n is not None and indices.dtype.is_integer:  # numpy's negative indices
        indices = call("SelectV2", indices < 0, indices + np.asarray(n, indices.dtype.numpy), indices)
    return _tf.gather(x, indices, axis=axis)


def take_along_axis(x, indices, axis=None):
    x = convert_to_tensor(x)
    indices = convert_to_tensor(indices)
    if axis is None:
        return take(x, _tf.reshape(indices, [-1]))
    axis = axis % x.shape.rank
    moved_x = _tf.transpose(x, [axis] + [i for i in range(x.shape.rank) if i != axis])
    moved_i = _tf.transpose(indices, [axis] + [i for i in range(indices.shape.rank) if i != axis])
    rest = list(range(1, x.shape.rank))
    gathered = _tf.gather(_tf.transpose(moved_x, rest + [0]), _tf.transpose(moved_i, rest + [0]), batch_dims=len(rest))
    back = _tf.transpose(gathered, [x.shape.rank - 1] + list(range(x.shape.rank - 1)))
    inverse = np.argsort([axis] + [i for i in range(x.shape.rank) if i != axis])
    return _tf.transpose(back, list(inverse))


def flip(x, axis=None):
    x = convert_to_tensor(x)
    axes = list(range(x.shape.rank)) if axis is None else list(axis) if isinstance(axis, (list, tuple)) else [axis]
    return _tf.reverse(x, axes)


def roll(x, shift, axis=None):
    x = convert_to_tensor(x)
    if axis is None:
        return _tf.reshape(_ta.roll(_tf.reshape(x, [-1]), shift, 0), _tf.shape(x))
    return _ta.roll(x, shift, axis)


def moveaxis(x, source, destination):
    x = convert_to_tensor(x)
    perm = [i for i in range(x.shape.rank) if i != source % x.shape.rank]
    perm.insert(destination % x.shape.rank, source % x.shape.rank)
    return _tf.transpose(x, perm)


def swapaxes(x, axis1, axis2):
    x = convert_to_tensor(x)
    perm = list(range(x.shape.rank))
    perm[axis1], perm[axis2] = perm[axis2], perm[axis1]
    return _tf.transpose(x, perm)


def pad(x, pad_width, mode: str = "constant", constant_values=None):
    return _tf.pad(convert_to_tensor(x), pad_width, mode=mode.upper(), constant_values=constant_values or 0)


def _dt(dtype, default="float32"):
    return as_dtype(dtype or default)


def zeros(shape, dtype=None):
    return _tf.zeros(shape, _dt(dtype))


def ones(shape, dtype=None):
    return _tf.ones(shape, _dt(dtype))


def full(shape, fill_value, dtype=None):
    return _tf.fill(shape, np.asarray(fill_value, _dt(dtype).numpy))


def zeros_like(x, dtype=None):
    return _tf.zeros_like(convert_to_tensor(x), dtype=dtype)


def ones_like(x, dtype=None):
    return _tf.ones_like(convert_to_tensor(x), dtype=dtype)


def full_like(x, fill_value, dtype=None):
    x = convert_to_tensor(x)
    return _tf.fill(_tf.shape(x), np.asarray(fill_value, _dt(dtype, x.dtype.name).numpy))


def arange(start, stop=None, step=1, dtype=None):
    if stop is None:
        start, stop = 0, start
    dt = as_dtype(dtype) if dtype is not None else result_type(start, stop, step)
    return _tf.range(np.asarray(start, dt.numpy), np.asarray(stop, dt.numpy), np.asarray(step, dt.numpy))


def linspace(start, stop, num: int = 50, endpoint: bool = True, retstep: bool = False, dtype=None, axis: int = 0):
    values = np.linspace(start, stop, num, endpoint=endpoint, retstep=retstep, axis=axis)
    arr, step = values if retstep else (values, None)
    out = _constant(np.asarray(arr, _dt(dtype).numpy))
    return (out, step) if retstep else out


def eye(N, M=None, k: int = 0, dtype=None):  # noqa: N803
    return _constant(np.eye(N, M, k, dtype=_dt(dtype).numpy))


def identity(n, dtype=None):
    return eye(n, dtype=dtype)


def tril(x, k: int = 0):
    x = convert_to_tensor(x)
    return _band(x, k, lower=True)


def triu(x, k: int = 0):
    x = convert_to_tensor(x)
    return _band(x, k, lower=False)


def _band(x, k, lower):
    rows, cols = x.shape.as_list()[-2:]
    mask = np.tril(np.ones((rows, cols), bool), k) if lower else np.triu(np.ones((rows, cols), bool), k)
    return call("SelectV2", mask, x, _tf.zeros_like(x))


def diag(x, k: int = 0):
    x = convert_to_tensor(x)
    if x.shape.rank == 1:
        return call("MatrixDiagV3", x, np.int32(k), np.int32(-1), np.int32(-1), np.asarray(0, x.dtype.numpy))
    return call("MatrixDiagPartV3", x, np.int32(k), np.asarray(0, x.dtype.numpy))


def meshgrid(*x, indexing: str = "xy"):
    return _ta.meshgrid(*[convert_to_tensor(v) for v in x], indexing=indexing)


# --- products ----------------------------------------------------------------------------------------------


def matmul(x1, x2):
    a, b = _same(x1, x2)
    if a.dtype.name in ("int8", "uint8", "int16"):
        a, b = _tf.cast(a, "int32"), _tf.cast(b, "int32")
    if a.shape.rank == 1 or b.shape.rank == 1:
        return tensordot(a, b, axes=1)
    return _tf.matmul(a, b)


def dot(x1, x2):
    a, b = _same(x1, x2)
    if a.shape.rank == 0 or b.shape.rank == 0:
        return a * b
    return tensordot(a, b, axes=[[a.shape.rank - 1], [builtins.max(b.shape.rank - 2, 0)]])


def tensordot(x1, x2, axes=2):
    a, b = _same(x1, x2)
    from specflow.api.linalg import tensordot as tf_tensordot

    return tf_tensordot(a, b, axes)


def outer(x1, x2):
    a, b = _same(x1, x2)
    return _tf.reshape(a, [-1, 1]) * _tf.reshape(b, [1, -1])


def einsum(subscripts, *operands):
    return _tf.einsum(subscripts, *_same(*operands))


def trace(x, offset: int = 0, axis1: int = 0, axis2: int = 1):
    x = convert_to_tensor(x)
    x = moveaxis(moveaxis(x, axis1, -2), axis2 if axis2 > axis1 else axis2 + 1, -1) if (axis1, axis2) != (x.shape.rank - 2, x.shape.rank - 1) else x
    return _tf.reduce_sum(diag(x, offset) if x.shape.rank == 2 else call("MatrixDiagPartV3", x, np.int32(offset),
                                                                         np.asarray(0, x.dtype.numpy)), axis=-1)  # fmt: skip


# --- sorting -------------------------------------------------------------------------------------------------


def sort(x, axis: int = -1):
    return _ta.sort(convert_to_tensor(x), axis=axis)


def argsort(x, axis: int = -1):
    x = convert_to_tensor(x)
    if x.shape.rank == 0:
        return _constant(np.int32(0))
    return _ta.argsort(x, axis=axis, stable=True)


def top_k(x, k, sorted: bool = True):  # noqa: A002
    out = _tf.top_k(convert_to_tensor(x), k=k, sorted=sorted)
    return out[0], out[1]


# --- control flow and the rest ------------------------------------------------------------------------------


def stop_gradient(variable):
    return _tf.stop_gradient(convert_to_tensor(variable))


def cond(pred, true_fn, false_fn):
    from specflow.api.control_flow import cond as sf_cond

    return sf_cond(pred, true_fn, false_fn)


def while_loop(cond, body, loop_vars, maximum_iterations=None):  # noqa: A002
    """Keras's: ``loop_vars`` a tensor or a tuple/list (unpacked into ``cond`` and ``body``)."""
    from specflow.api.control_flow import while_loop as sf_while

    if not isinstance(loop_vars, (list, tuple)):
        return sf_while(cond, lambda v: (body(v),), (loop_vars,), maximum_iterations=maximum_iterations)[0]
    out = sf_while(cond, lambda *v: tuple(body(*v)), tuple(loop_vars), maximum_iterations=maximum_iterations)
    return type(loop_vars)(out)


def fori_loop(lower, upper, body_fun, init_val):
    from specflow.api.control_flow import while_loop as sf_while

    i0 = convert_to_tensor(lower)
    _, out = sf_while(lambda i, v: i < upper, lambda i, v: (i + np.asarray(1, i.dtype.numpy), body_fun(i, v)), (i0, init_val))
    return out


def scan(f, init, xs=None, length=None, reverse: bool = False, unroll: int = 1):
    """JAX's scan: ``f(carry, x) -> (carry, y)``; returns (the last carry, the ys stacked)."""
    n = length if xs is None else convert_to_tensor(xs).shape.as_list()[0]
    order = range(n - 1, -1, -1) if reverse else range(n)
    carry, ys = init, []
    for i in order:
        carry, y = f(carry, None if xs is None else convert_to_tensor(xs)[i])
        ys.append(y)
    if reverse:
        ys = ys[::-1]
    return carry, (stack(ys) if ys and ys[0] is not None else None)


def map(f, xs):  # noqa: A001
    return _tc.map_fn(f, convert_to_tensor(xs))


def segment_sum(data, segment_ids, num_segments=None, sorted: bool = False):  # noqa: A002
    data, ids = convert_to_tensor(data), convert_to_tensor(segment_ids)
    n = num_segments if num_segments is not None else _tf.reduce_max(ids) + np.asarray(1, ids.dtype.numpy)
    return call("UnsortedSegmentSum", data, ids, n)


def segment_max(data, segment_ids, num_segments=None, sorted: bool = False):  # noqa: A002
    data, ids = convert_to_tensor(data), convert_to_tensor(segment_ids)
    n = num_segments if num_segments is not None else _tf.reduce_max(ids) + np.asarray(1, ids.dtype.numpy)
    return call("UnsortedSegmentMax", data, ids, n)


def scatter(indices, values, shape):
    return _ta.scatter_nd(convert_to_tensor(indices), convert_to_tensor(values), shape)


def scatter_update(inputs, indices, updates):
    return _ta.tensor_scatter_nd_update(convert_to_tensor(inputs), convert_to_tensor(indices), convert_to_tensor(updates))


def slice(inputs, start_indices, shape):  # noqa: A001
    return _ta.slice(convert_to_tensor(inputs), start_indices, shape)


def vectorized_map(function, elements):
    return _tc.vectorized_map(function, elements)


# the neural network functions and losses (keras_ops_nn.py), at the top level too, as Keras's
from specflow.api.keras_ops_nn import (  # noqa: E402, F401
    binary_crossentropy,
    categorical_crossentropy,
    elu,
    gelu,
    hard_sigmoid,
    leaky_relu,
    log_softmax,
    moments,
    multi_hot,
    nn,
    normalize,
    one_hot,
    relu,
    relu6,
    selu,
    sigmoid,
    silu,
    softmax,
    softplus,
    softsign,
    sparse_categorical_crossentropy,
    swish,
)
