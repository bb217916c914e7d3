"""TensorFlow's tf.math names beyond api/tf_names.py's first ones, on the registered ops: the
inverse and hyperbolic trig functions, division variants, cumulative and segment reductions,
special functions (lgamma, igamma, betainc, zeta, Bessel; ``sf.math.special``), softmax and
friends, counting (count_nonzero, bincount, confusion_matrix) and complex parts. Compositions
(unsorted_segment_mean, reduce_variance, lbeta, polyval, logical_xor, ...) follow TensorFlow's so
values and gradients agree. Its names are added to the one ``sf.math`` namespace (tf_names.math);
NAMES are the ones TensorFlow also has at the top level."""

from __future__ import annotations

import types

import numpy as np

from specflow.api import tf_names
from specflow.api.op_functions import call
from specflow.api.tensor import Tensor
from specflow.api.tf_names import _axes, _elementwise, _t, cast, identity, reduce_mean, reduce_sum, transpose
from specflow.graph import dtypes
from specflow.graph.dtypes import as_dtype

# The names this module adds at the top level (api/__init__.py's TF_MATH_NAMES; a test keeps
# the two equal); tf.math has all of them but realdiv, truncatediv and truncatemod.
NAMES = sorted("""
    acos acosh add_n asin asinh atan atan2 atanh cosh realdiv scalar_mul sinh tan truediv truncatediv truncatemod
""".split())

_UNARY = {"tan": "Tan", "sinh": "Sinh", "cosh": "Cosh", "asin": "Asin", "acos": "Acos", "atan": "Atan",
          "asinh": "Asinh", "acosh": "Acosh", "atanh": "Atanh", "lgamma": "Lgamma", "digamma": "Digamma",
          "erfc": "Erfc", "erfinv": "Erfinv", "ndtri": "Ndtri", "rint": "Rint", "is_inf": "IsInf",
          "invert_permutation": "InvertPermutation", "softsign": "Softsign", "bessel_i0": "BesselI0",
          "bessel_i0e": "BesselI0e", "bessel_i1": "BesselI1", "bessel_i1e": "BesselI1e"}
_BINARY = {"realdiv": "RealDiv", "truncatediv": "TruncateDiv", "truncatemod": "TruncateMod", "mod": "FloorMod",
           "xdivy": "Xdivy", "xlogy": "Xlogy", "xlog1py": "Xlog1py"}
for _name, _op in _UNARY.items():
    globals()[_name] = _elementwise(_op, _name)
for _name, _op in _BINARY.items():
    globals()[_name] = _elementwise(_op, _name, 2)


def atan2(y, x, name: str | None = None):
    return call("Atan2", y, x, name=name)


def igamma(a, x, name: str | None = None):
    return call("Igamma", a, x, name=name)


def igammac(a, x, name: str | None = None):
    return call("Igammac", a, x, name=name)


def polygamma(a, x, name: str | None = None):
    return call("Polygamma", a, x, name=name)


def zeta(x, q, name: str | None = None):
    return call("Zeta", x, q, name=name)


def nextafter(x1, x2, name: str | None = None):
    return call("NextAfter", x1, x2, name=name)


def _real_dtype(dt):
    """float32 for complex64, float64 for complex128; other dtypes as they are."""
    return {dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}.get(dt, dt)


def _same_dtype(x, y):
    x = _t(x)
    return x, (_t(y, x.dtype) if not isinstance(y, Tensor) else y)


def truediv(x, y, name: str | None = None):
    """RealDiv, integers first cast to float (int8/16 and uint8/16 to float32, wider to float64)."""
    x, y = _same_dtype(x, y)
    if x.dtype != y.dtype:
        raise TypeError(f"truediv: x and y must have the same dtype, got {x.dtype.name} != {y.dtype.name}")
    if x.dtype.is_integer:
        to = dtypes.float32 if x.dtype.itemsize <= 2 else dtypes.float64
        x, y = cast(x, to), cast(y, to)
    return call("RealDiv", x, y, name=name)


def scalar_mul(scalar, x, name: str | None = None):
    x = _t(x)
    s = scalar if isinstance(scalar, Tensor) else _t(scalar, x.dtype)  # (2.5 into an int x is an error)
    if np.ndim(s) != 0 and (not isinstance(s, Tensor) or s.shape.rank != 0):
        raise ValueError(f"scalar_mul: the scalar must be 0-D, got shape {np.shape(s)}")
    return call("Mul", s, x, name=name)


def add_n(inputs, name: str | None = None):
    inputs = [_t(v) for v in inputs] if inputs is not None else []
    if not inputs:
        raise ValueError("add_n: inputs must be an iterable of at least one tensor")
    if len(inputs) == 1:
        return identity(inputs[0], name=name) if name else inputs[0]
    return call("AddN", inputs, name=name)


def accumulate_n(inputs, shape=None, tensor_dtype=None, name: str | None = None):
    inputs = [_t(v) for v in inputs]
    if tensor_dtype is not None and as_dtype(tensor_dtype) != inputs[0].dtype:
        raise TypeError(f"accumulate_n: tensor_dtype {as_dtype(tensor_dtype).name} is not the inputs' "
                        f"{inputs[0].dtype.name}")
    return add_n(inputs, name=name)


def multiply_no_nan(x, y, name: str | None = None):
    x, y = _same_dtype(x, y)
    return call("MulNoNan", x, y, name=name)


def reciprocal_no_nan(x, name: str | None = None):
    x = _t(x)
    return call("DivNoNan", np.asarray(1, x.dtype.numpy), x, name=name)


def logical_xor(x, y, name: str = "LogicalXor"):
    """(x or y) and not (x and y), TensorFlow's composition."""
    return call("LogicalAnd", call("LogicalOr", x, y), call("LogicalNot", call("LogicalAnd", x, y)), name=name)


def erfcinv(x, name: str | None = None):
    x = _t(x)
    return -call("Ndtri", 0.5 * x) * np.asarray(np.sqrt(0.5), x.dtype.numpy)


def betainc(a, b, x, name: str | None = None):
    return call("Betainc", a, b, x, name=name)


def log_sigmoid(x, name: str | None = None):
    """-softplus(-x)."""
    return call("Neg", call("Softplus", -_t(x)), name=name)


def lbeta(x, name: str | None = None):
    """log|Beta(x)| over the last axis: sum(lgamma(x)) - lgamma(sum(x))."""
    x = _t(x)
    return reduce_sum(call("Lgamma", x), [-1]) - call("Lgamma", reduce_sum(x, [-1]))


def polyval(coeffs, x, name: str | None = None):
    """Horner's rule: coeffs[0] * x^(n-1) + ... + coeffs[-1]."""
    if not isinstance(coeffs, list):
        raise ValueError(f"polyval: coeffs must be a list, got {type(coeffs).__name__}")
    x = _t(x)
    if not coeffs:
        return call("ZerosLike", x, name=name)
    p = _t(coeffs[0], x.dtype) if not isinstance(coeffs[0], Tensor) else coeffs[0]
    for c in coeffs[1:]:
        p = c + p * x
    return p


def cumprod(x, axis: int = 0, exclusive: bool = False, reverse: bool = False, name: str | None = None):
    return call("Cumprod", _t(x), np.int32(axis), exclusive=exclusive, reverse=reverse, name=name)


def cumulative_logsumexp(x, axis: int = 0, exclusive: bool = False, reverse: bool = False,
                         name: str | None = None):
    return call("CumulativeLogsumexp", _t(x), np.int32(axis), exclusive=exclusive, reverse=reverse, name=name)


# --- segments -------------------------------------------------------------------------------------

def _unsorted(op: str, pyname: str):
    def fn(data, segment_ids, num_segments, name: str | None = None):
        return call(op, _t(data), segment_ids, num_segments, name=name)

    fn.__name__ = pyname
    fn.__doc__ = f"TensorFlow's ``tf.math.{pyname}``: the {op} op."
    return fn


def _segment(op: str, pyname: str):
    def fn(data, segment_ids, name: str | None = None):
        return call(op, _t(data), segment_ids, name=name)

    fn.__name__ = pyname
    fn.__doc__ = f"TensorFlow's ``tf.math.{pyname}``: the {op} op (sorted segment_ids)."
    return fn


segment_sum = _segment("SegmentSum", "segment_sum")
segment_mean = _segment("SegmentMean", "segment_mean")
segment_max = _segment("SegmentMax", "segment_max")
segment_min = _segment("SegmentMin", "segment_min")
segment_prod = _segment("SegmentProd", "segment_prod")
unsorted_segment_sum = _unsorted("UnsortedSegmentSum", "unsorted_segment_sum")
unsorted_segment_max = _unsorted("UnsortedSegmentMax", "unsorted_segment_max")
unsorted_segment_min = _unsorted("UnsortedSegmentMin", "unsorted_segment_min")
unsorted_segment_prod = _unsorted("UnsortedSegmentProd", "unsorted_segment_prod")


def _segment_counts(data: Tensor, segment_ids, num_segments):
    """Each segment's size (at least 1), shaped to broadcast against the summed data."""
    ids = _t(segment_ids)
    ns = _t(num_segments)
    n = call("UnsortedSegmentSum", call("OnesLike", cast(ids, data.dtype)), ids, ns)
    ones = call("Fill", call("Reshape", call("Sub", call("Rank", data), call("Rank", ids)), np.array([1], np.int32)),
                np.asarray(1, ns.dtype.numpy))
    n = call("Reshape", n, call("ConcatV2", [call("Reshape", ns, np.array([1], np.int32)), ones], np.int32(0)))
    return call("Maximum", n, np.asarray(1, data.dtype.numpy))


def _float_data(data) -> Tensor:
    """Integer data as floats, as TF's segment means divide it (8/16-bit float32, wider float64)."""
    data = _t(data)
    if data.dtype.is_integer:
        return cast(data, dtypes.float32 if data.dtype.itemsize <= 2 else dtypes.float64)
    return data


def unsorted_segment_mean(data, segment_ids, num_segments, name: str | None = None):
    """The segment sums over the segment sizes (empty segments 0), as TensorFlow (integers
    divided as floats)."""
    data = _float_data(data)
    summed = call("UnsortedSegmentSum", data, segment_ids, num_segments)
    return call("RealDiv", summed, _segment_counts(data, segment_ids, num_segments), name=name)


def unsorted_segment_sqrt_n(data, segment_ids, num_segments, name: str | None = None):
    """The segment sums over the square roots of the segment sizes."""
    data = _t(data)
    summed = call("UnsortedSegmentSum", data, segment_ids, num_segments)
    return call("RealDiv", summed, call("Sqrt", _segment_counts(data, segment_ids, num_segments)), name=name)


# --- reductions and counting ----------------------------------------------------------------------

def reduce_variance(input_tensor, axis=None, keepdims: bool = False, name: str | None = None):
    x = _t(input_tensor)
    if x.dtype.is_integer:
        raise TypeError(f"reduce_variance: input must be real or complex, got {x.dtype.name}")
    diff = x - reduce_mean(x, axis, keepdims=True)
    if diff.dtype.is_complex:
        sq = call("Real", call("Mul", call("Conj", diff), diff), Tout=_real_dtype(diff.dtype))
    else:
        sq = call("Square", diff)
    return reduce_mean(sq, axis, keepdims=keepdims, name=name)


def reduce_std(input_tensor, axis=None, keepdims: bool = False, name: str | None = None):
    return call("Sqrt", reduce_variance(input_tensor, axis, keepdims), name=name)


def reduce_euclidean_norm(input_tensor, axis=None, keepdims: bool = False, name: str | None = None):
    x = _t(input_tensor)
    return call("EuclideanNorm", x, _axes(x, axis), keep_dims=bool(keepdims), name=name)


def count_nonzero(input, axis=None, keepdims=None, dtype=dtypes.int64, name: str | None = None):  # noqa: A002
    x = _t(input)
    pred = x if x.dtype == dtypes.bool_ else call("NotEqual", x, np.zeros((), x.dtype.numpy))
    return cast(reduce_sum(cast(pred, dtypes.int64), axis, keepdims=bool(keepdims)), dtype, name=name)


def zero_fraction(value, name: str | None = None):
    """The fraction of zeros, as float32."""
    x = _t(value)
    size = call("Size", x, out_type=dtypes.int64)
    nonzero = count_nonzero(x, dtype=dtypes.int64)
    return call("RealDiv", cast(size - nonzero, dtypes.float32), cast(size, dtypes.float32), name=name)


def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=dtypes.int32, name: str | None = None,
             axis=None, binary_output: bool = False):
    """DenseBincount sized max + 1 (clipped by minlength/maxlength); axis=-1 counts each row."""
    arr = _t(arr)
    if weights is not None and binary_output:
        raise ValueError("bincount: binary_output and weights are mutually exclusive")
    if not arr.dtype.is_integer:
        arr = cast(arr, dtypes.int32)
    axis = 0 if axis is None else axis
    if axis not in (0, -1):
        raise ValueError(f"bincount: axis must be 0 or -1, got {axis}")
    nonempty = cast(call("Greater", call("Size", arr), np.int32(0)), arr.dtype)
    size = nonempty * (call("Max", arr, _axes(arr, None)) + np.asarray(1, arr.dtype.numpy))
    if minlength is not None:
        size = call("Maximum", np.asarray(minlength, arr.dtype.numpy), size)
    if maxlength is not None:
        size = call("Minimum", np.asarray(maxlength, arr.dtype.numpy), size)
    if axis == 0:
        arr = call("Reshape", arr, np.array([-1], np.int32))
        if weights is not None:
            weights = call("Reshape", _t(weights), np.array([-1], np.int32))
    w = np.zeros([0], as_dtype(dtype).numpy) if weights is None else _t(weights)
    return call("DenseBincount", arr, size, w, binary_output=binary_output, name=name)


def confusion_matrix(labels, predictions, num_classes=None, weights=None, dtype=dtypes.int32,
                     name: str | None = None):
    """counts[label, prediction] (weighted), by ScatterNd as TensorFlow builds it."""
    labels, predictions = cast(_t(labels), dtypes.int64), cast(_t(predictions), dtypes.int64)
    if num_classes is None:
        num_classes = call("Maximum", call("Max", predictions, np.int32(0)), call("Max", labels, np.int32(0))) + 1
    else:
        num_classes = cast(_t(num_classes), dtypes.int64)
    dt = as_dtype(dtype)
    values = call("OnesLike", cast(predictions, dt)) if weights is None else cast(_t(weights), dt)
    indices = call("Pack", [labels, predictions], axis=1)
    return call("ScatterNd", indices, values, call("Pack", [num_classes, num_classes], axis=0), name=name)


def in_top_k(targets, predictions, k, name: str | None = None):
    targets = _t(targets)
    return call("InTopKV2", predictions, targets, k if isinstance(k, Tensor) else np.asarray(k, targets.dtype.numpy),
                name=name)


def _monotonic(x, op: str):
    x = call("Reshape", _t(x), np.array([-1], np.int32))
    return call("All", call(op, x[1:], x[:-1]), np.int32(0))


def is_non_decreasing(x, name: str | None = None):
    return _monotonic(x, "GreaterEqual")


def is_strictly_increasing(x, name: str | None = None):
    return _monotonic(x, "Greater")


def _approx_k(is_max: bool, pyname: str):
    def fn(operand, k, reduction_dimension=-1, recall_target=0.95, reduction_input_size_override=-1,
           aggregate_to_topk=True, name: str | None = None):
        return call("ApproxTopK", _t(operand), k=int(k), reduction_dimension=reduction_dimension,
                    recall_target=float(recall_target), is_max_k=is_max,
                    reduction_input_size_override=reduction_input_size_override,
                    aggregate_to_topk=aggregate_to_topk, name=name)

    fn.__name__ = pyname
    fn.__doc__ = f"TensorFlow's ``tf.math.{pyname}``: ApproxTopK (exact on CPU)."
    return fn


approx_max_k = _approx_k(True, "approx_max_k")
approx_min_k = _approx_k(False, "approx_min_k")


# --- complex parts --------------------------------------------------------------------------------

def _numeric(x, fn: str) -> Tensor:
    x = _t(x)
    if not x.dtype.is_numeric:
        raise TypeError(f"{fn}: input must be numeric, got {x.dtype.name}")
    return x


def conj(x, name: str | None = None):
    x = _numeric(x, "conj")
    return call("Conj", x, name=name) if x.dtype.is_complex else x


def real(input, name: str | None = None):  # noqa: A002
    x = _numeric(input, "real")
    return call("Real", x, Tout=_real_dtype(x.dtype), name=name) if x.dtype.is_complex else x


def imag(input, name: str | None = None):  # noqa: A002
    x = _numeric(input, "imag")
    return call("Imag", x, Tout=_real_dtype(x.dtype), name=name) if x.dtype.is_complex else call("ZerosLike", x)


def angle(input, name: str | None = None):  # noqa: A002
    """The Angle op; for real input pi where negative, else 0 (TensorFlow's where)."""
    x = _numeric(input, "angle")
    if x.dtype.is_complex:
        return call("Angle", x, Tout=_real_dtype(x.dtype), name=name)
    return call("SelectV2", call("Less", x, np.zeros((), x.dtype.numpy)), np.pi * call("OnesLike", x),
                call("ZerosLike", x), name=name)


# --- softmax and friends (tf.nn has them too: api/nn.py imports these) ----------------------------

def _on_last_axis(op: str, logits, axis, name):
    x = _t(logits)
    r = x.shape.rank
    if axis is not None and r is not None and not -r <= axis < r:
        raise ValueError(f"{op.lower()}: axis {axis} is out of range for logits of rank {r}")
    if axis is None or axis == -1 or (r is not None and axis == r - 1):
        return call(op, x, name=name)
    axis = axis % r
    perm = list(range(r))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    return transpose(call(op, transpose(x, perm)), perm)


def softmax(logits, axis=None, name: str | None = None):
    return _on_last_axis("Softmax", logits, axis, name)


def log_softmax(logits, axis=None, name: str | None = None):
    return _on_last_axis("LogSoftmax", logits, axis, name)


def l2_normalize(x, axis=None, epsilon: float = 1e-12, name: str | None = None, dim=None):
    """x / sqrt(max(sum(|x|^2), epsilon)) over ``axis`` (complex: its real and imaginary parts'
    squares, as TF's)."""
    x = _t(x)
    axis = dim if axis is None else axis
    if x.dtype.is_complex:
        sq = call("Square", real(x)) + call("Square", imag(x))
        inv = call("Rsqrt", call("Maximum", reduce_sum(sq, axis, keepdims=True), np.asarray(epsilon, sq.dtype.numpy)))
        return call("Mul", x, call("Complex", inv, call("ZerosLike", inv), Tout=x.dtype), name=name)
    square_sum = reduce_sum(call("Square", x), axis, keepdims=True)
    return call("Mul", x, call("Rsqrt", call("Maximum", square_sum, np.asarray(epsilon, x.dtype.numpy))), name=name)


# --- into sf.math (and sf.math.special) -----------------------------------------------------------

_SPECIAL = {"bessel_j0": "BesselJ0", "bessel_j1": "BesselJ1", "bessel_k0": "BesselK0", "bessel_k0e": "BesselK0e",
            "bessel_k1": "BesselK1", "bessel_k1e": "BesselK1e", "bessel_y0": "BesselY0", "bessel_y1": "BesselY1",
            "dawsn": "Dawsn", "expint": "Expint", "fresnel_cos": "FresnelCos", "fresnel_sin": "FresnelSin",
            "spence": "Spence"}
special = types.ModuleType("specflow.math.special", "TensorFlow's tf.math.special names (Bessel functions, "
                           "dawsn, expint, fresnel_cos/sin, spence).")
for _name, _op in _SPECIAL.items():
    setattr(special, _name, _elementwise(_op, _name))
for _name in ("bessel_i0", "bessel_i0e", "bessel_i1", "bessel_i1e"):
    setattr(special, _name, globals()[_name])

MATH_NAMES = sorted(
    {*_UNARY, *_BINARY, *NAMES} - {"realdiv", "truncatediv", "truncatemod"} | set("""
    accumulate_n angle approx_max_k approx_min_k betainc bincount confusion_matrix conj count_nonzero cumprod
    cumulative_logsumexp erfcinv igamma igammac imag in_top_k nextafter polygamma zeta segment_max segment_mean
    segment_min segment_prod segment_sum is_non_decreasing is_strictly_increasing l2_normalize lbeta
    log_sigmoid log_softmax logical_xor multiply_no_nan polyval real reciprocal_no_nan reduce_euclidean_norm
    reduce_std reduce_variance softmax unsorted_segment_max unsorted_segment_mean unsorted_segment_min
    unsorted_segment_prod unsorted_segment_sqrt_n unsorted_segment_sum zero_fraction special""".split()))
for _name in MATH_NAMES:
    setattr(tf_names.math, _name, globals()[_name])
