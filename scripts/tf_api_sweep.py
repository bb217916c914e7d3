"""TF parity of the Python API's own rules (the wrappers, not the raw kernels): every public
function of sf's namespaces that TensorFlow also has (the top level, sf.math, sf.nn, sf.linalg,
sf.random's stateless family, sf.image, sf.strings, sf.nest, sf.debugging, sf.dtypes), the
Tensor operators, sf.Variable's methods and the constructors, called both ways with the argument
forms TF users write: Python scalars and lists, numpy arrays of every dtype, mixed Python/tensor
operands, keyword arguments by TF's names, negative axes, keepdims, axis=None, name=, dtype=,
out_type=, empty tensors. Values (exact for ints and bools), dtype and shape must be equal, and
where TF raises specflow must raise a clear error (a SpecflowError, TypeError or ValueError; not
an IndexError/KeyError/AttributeError from deep inside, not a value). A sample runs inside
``sf.function``/``tf.function`` too. TensorFlow is never a specflow dependency:

    TF_ENABLE_ONEDNN_OPTS=0 PYTHONPATH=. /work/scratch/tfvenv/bin/python scripts/tf_api_sweep.py [FILTER] [-v]

Prints one line per problem (kind, case) and a summary; exit 1 on any problem.
"""

from __future__ import annotations

import inspect
import os
import sys
import traceback
import warnings
from collections import Counter

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import tensorflow as tf  # noqa: E402

import specflow as sf  # noqa: E402
from specflow.errors import SpecflowError  # noqa: E402
from specflow.graph import dtypes as sfd  # noqa: E402
from specflow.graph.shapes import Shape  # noqa: E402

warnings.filterwarnings("ignore")
BF16 = sfd.bfloat16.numpy
FLOATS = ("float16", "bfloat16", "float32", "float64")
SINTS = ("int8", "int16", "int32", "int64")
UINTS = ("uint8", "uint16", "uint32", "uint64")
INTS = SINTS + UINTS
COMPLEX = ("complex64", "complex128")
ALL = ("bool",) + INTS + FLOATS + COMPLEX
TOL = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-5, "float64": 1e-9, "complex64": 2e-5, "complex128": 1e-9}
CLEAR = (SpecflowError, TypeError, ValueError, NotImplementedError, tf.errors.OpError)
VERBOSE = "-v" in sys.argv
FILTER = [a for a in sys.argv[1:] if not a.startswith(("-", "+"))]
ONLY = [a[1:] for a in sys.argv[1:] if a.startswith("+")]  # +section: run only these sections

PROBLEMS: list[tuple[str, str, str]] = []
COUNTS: Counter = Counter()


def npdt(dt: str):
    return BF16 if dt == "bfloat16" else np.dtype(dt)


def arr(dt: str, kind: str = "any", shape=(2, 3)) -> np.ndarray:
    """Fixed values of ``dt``: any (signed mix), pos (> 0), unit ((-1, 1)), small ints."""
    base = {"any": [-2.5, 0.0, 1.5, 3.0, -1.0, 0.25], "pos": [0.5, 1.0, 2.0, 3.5, 0.25, 4.0],
            "unit": [-0.75, -0.25, 0.0, 0.5, 0.125, 0.9], "int": [-3, 0, 2, 5, -1, 7]}[kind]
    n = int(np.prod(shape))
    v = np.resize(np.asarray(base), n).reshape(shape)
    if dt == "bool":
        return v > 0.3
    if dt in INTS:
        v = np.round(v * 2)
        if dt in UINTS:
            v = np.abs(v)
        return v.astype(dt)
    if dt in COMPLEX:
        return (v + 1j * np.resize(np.asarray(base[::-1]), n).reshape(shape)).astype(dt)
    return v.astype(npdt(dt))


# --- result comparison ---------------------------------------------------------------------------


def canon(x):
    """A TF or sf result as plain Python/numpy: tensors as (dtype name, array)."""
    if isinstance(x, (tf.Tensor, tf.Variable)) or isinstance(x, sf.Tensor) or isinstance(x, sf.Variable):
        return ("T", x.dtype.name, np.asarray(x.numpy()))
    if isinstance(x, tf.IndexedSlices) or type(x).__name__ == "IndexedSlices":
        return ("IS", canon(x.values), canon(x.indices))
    if isinstance(x, (tf.DType, sfd.DType)):
        return ("D", x.name)
    if isinstance(x, (tf.TensorShape, Shape)):
        return ("S", None if x.rank is None else list(x.as_list()) if hasattr(x, "as_list") else list(x))
    if isinstance(x, dict):
        return {k: canon(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [canon(v) for v in x]
    if isinstance(x, np.ndarray):
        return ("N", x.dtype.name, x)
    if isinstance(x, np.generic):
        return ("N", x.dtype.name, np.asarray(x))
    return x


def diff(a, b, path="") -> str | None:
    """Why two canonical results differ (None: equal)."""
    if isinstance(a, tuple) and a and a[0] in ("T", "N"):
        if not (isinstance(b, tuple) and b and b[0] == a[0]):
            return f"{path}: TF {a[0]} vs sf {type(b).__name__ if not isinstance(b, tuple) else b[0]}"
        (_, ta, va), (_, tb, vb) = a, b
        if ta != tb:
            return f"{path}: dtype TF {ta} vs sf {tb}"
        if va.shape != vb.shape:
            return f"{path}: shape TF {va.shape} vs sf {vb.shape}"
        if va.dtype.kind in "OSU" or ta in ("bool", "string") or ta in INTS:
            eq = np.array_equal(va, vb)
        else:
            fa, fb = va.astype(np.complex128 if ta in COMPLEX else np.float64), vb.astype(
                np.complex128 if ta in COMPLEX else np.float64)
            tol = TOL.get(ta, 1e-6)
            eq = np.allclose(fa, fb, rtol=tol, atol=tol, equal_nan=True) and np.array_equal(
                np.isnan(fa), np.isnan(fb))
        if not eq:
            return f"{path}: values TF {va.ravel()[:6]} vs sf {vb.ravel()[:6]}"
        return None
    if isinstance(a, tuple) and a and a[0] in ("D", "S", "IS"):
        return None if a == b or (a[0] == "IS" and not diff(list(a[1:]), list(b[1:]) if isinstance(b, tuple)
                                                              else b, path)) else f"{path}: TF {a} vs sf {b}"
    if isinstance(a, list):
        if not isinstance(b, list) or len(a) != len(b):
            return f"{path}: TF list of {len(a)} vs sf {type(b).__name__}" + (
                f" of {len(b)}" if isinstance(b, list) else "")
        for i, (x, y) in enumerate(zip(a, b)):
            d = diff(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    if isinstance(a, dict):
        if not isinstance(b, dict) or a.keys() != b.keys():
            return f"{path}: TF dict {sorted(a)} vs sf {b!r:.60}"
        for k in a:
            d = diff(a[k], b[k], f"{path}[{k!r}]")
            if d:
                return d
        return None
    if isinstance(a, float) and isinstance(b, float) and np.isclose(a, b, equal_nan=True):
        return None
    try:
        same = bool(a == b) and type(a) is type(b)
    except Exception:  # noqa: BLE001
        same = False
    return None if same else f"{path}: TF {a!r:.80} ({type(a).__name__}) vs sf {b!r:.80} ({type(b).__name__})"


def run(m, fn, traced: bool):
    if traced:
        return m.function(lambda: fn(m))()
    return fn(m)


def check(name: str, fn, traced: bool = False, tf_fn=None) -> None:
    """Compare ``fn(tf)`` with ``fn(sf)`` (``tf_fn(tf)`` for TF when the spellings differ)."""
    if FILTER and not any(f in name for f in FILTER):
        return
    COUNTS["cases"] += 1
    label = name + (" [traced]" if traced else "")
    try:
        ref = canon(run(tf, tf_fn or fn, traced))
        ref_err = None
    except Exception as e:  # noqa: BLE001
        ref, ref_err = None, e
    try:
        got = canon(run(sf, fn, traced))
        err = None
    except Exception as e:  # noqa: BLE001
        got, err = None, e
    if ref_err is not None and err is not None:
        if not isinstance(err, CLEAR):
            problem("unclear-error", label, f"TF {type(ref_err).__name__}; sf {type(err).__name__}: {err}".replace(
                "\n", " ")[:240], err)
        return
    if ref_err is not None:
        problem("no-error", label, f"TF raised {type(ref_err).__name__}: {str(ref_err).splitlines()[0][:120]}; "
                f"sf gave {str(got)[:100]}")
        return
    if err is not None:
        problem("sf-error", label, f"{type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}",
                err)
        return
    d = diff(ref, got)
    if d:
        problem("mismatch", label, d)


def problem(kind, label, msg, err=None):
    COUNTS[kind] += 1
    PROBLEMS.append((kind, label, msg))
    print(f"{kind:14s} {label}: {msg}", flush=True)
    if VERBOSE and err is not None:
        traceback.print_exception(err, limit=-4)


def both(name: str, fn, tf_fn=None):
    check(name, fn, False, tf_fn)
    check(name, fn, True, tf_fn)


def ns(m, space):
    return m if not space else getattr(m, space)


# --- the namespaces' common names, by TF's signature ----------------------------------------------

SPACES = ("", "math", "nn", "linalg", "random", "image", "strings", "nest", "debugging", "dtypes")


def common_names(space: str) -> list[str]:
    if space == "":
        from specflow.api import EXPORTS

        names = list(EXPORTS)
    else:
        names = [n for n in dir(ns(sf, space)) if not n.startswith("_")]
    return sorted(n for n in names if hasattr(ns(tf, space), n) and callable(getattr(ns(sf, space), n)))


def tf_params(space: str, name: str) -> tuple[list[str], list[str]]:
    """TF's (required, all) parameter names of ``tf.<space>.<name>``."""
    try:
        sig = inspect.signature(getattr(ns(tf, space), name))
    except (TypeError, ValueError):
        return [], []
    ps = [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY)]
    return [p.name for p in ps if p.default is p.empty], [p.name for p in ps]


# Names whose TF signature looks elementwise but which are not (hand-written cases cover them).
NOT_ELEMENTWISE = set("""
add_n accumulate_n argmax argmin bincount confusion_matrix cumprod cumsum cumulative_logsumexp
in_top_k invert_permutation is_non_decreasing is_strictly_increasing l2_normalize log_softmax softmax
top_k approx_max_k approx_min_k polyval segment_max segment_mean segment_min segment_prod segment_sum
unsorted_segment_max unsorted_segment_mean unsorted_segment_min unsorted_segment_prod
unsorted_segment_sqrt_n unsorted_segment_sum zero_fraction reduce_all reduce_any reduce_euclidean_norm
reduce_logsumexp reduce_max reduce_mean reduce_min reduce_prod reduce_std reduce_sum reduce_variance
count_nonzero scalar_mul betainc polygamma zeta igamma igammac lbeta
""".split())


def elementwise_cases() -> None:
    unary, binary = [], []
    for space in ("math", ""):
        for n in common_names(space):
            if n in NOT_ELEMENTWISE or (space == "" and hasattr(sf.math, n) and hasattr(tf.math, n)):
                continue
            req, _ = tf_params(space, n)
            if space == "" and n not in ("abs", "sigmoid", "sign", "sin", "cos", "tan", "tanh", "round",
                                         "acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh",
                                         "exp", "floor", "sqrt", "square", "negative", "logical_not", "atan2",
                                         "realdiv", "truediv", "truncatediv", "truncatemod", "add", "subtract",
                                         "multiply", "divide", "maximum", "minimum", "pow", "equal",
                                         "not_equal", "less", "greater", "less_equal", "greater_equal",
                                         "logical_and", "logical_or"):
                continue
            (unary if len(req) == 1 else binary if len(req) == 2 else []).append((space, n))
    for space, n in unary:
        label = f"{space or 'tf'}.{n}"
        for dt in ALL:
            kind = "pos" if n in ("acosh", "log", "sqrt", "rsqrt", "lgamma", "digamma") else (
                "unit" if n in ("asin", "acos", "atanh", "erfinv", "ndtri", "erfcinv") else "any")
            a = arr(dt, kind)
            check(f"{label}({dt})", lambda m, a=a, n=n, s=space: getattr(ns(m, s), n)(a))
        check(f"{label}(py float)", lambda m, n=n, s=space: getattr(ns(m, s), n)(0.5))
        check(f"{label}(py int)", lambda m, n=n, s=space: getattr(ns(m, s), n)(2))
        check(f"{label}(py list)", lambda m, n=n, s=space: getattr(ns(m, s), n)([[0.5, 1.0], [0.25, 2.0]]))
        check(f"{label}(empty)", lambda m, n=n, s=space: getattr(ns(m, s), n)(np.zeros((0, 3), np.float32)))
        check(f"{label}(name=)", lambda m, n=n, s=space: getattr(ns(m, s), n)(
            m.constant([0.5, 0.75]), name="op"))
        req, _ = tf_params(space, n)
        if req:
            check(f"{label}({req[0]}=)", lambda m, n=n, s=space, k=req[0]: getattr(ns(m, s), n)(
                **{k: m.constant([0.5, 0.75])}))
        check(f"{label}(f32)", lambda m, n=n, s=space: getattr(ns(m, s), n)(m.constant(arr("float32", "pos"))),
              traced=True)
    for space, n in binary:
        label = f"{space or 'tf'}.{n}"
        for dt in ALL:
            a, b = arr(dt), arr(dt, "pos")
            check(f"{label}({dt},{dt})", lambda m, a=a, b=b, n=n, s=space: getattr(ns(m, s), n)(a, b))
        for dt in ("int8", "uint8", "int16", "int64", "float16", "bfloat16", "float64", "complex64"):
            a = arr(dt, "pos")
            check(f"{label}(T{dt}, 2)", lambda m, a=a, n=n, s=space: getattr(ns(m, s), n)(m.constant(a), 2))
            check(f"{label}(2, T{dt})", lambda m, a=a, n=n, s=space: getattr(ns(m, s), n)(2, m.constant(a)))
            if dt not in ("int8", "uint8", "int16", "int64"):
                check(f"{label}(T{dt}, 1.5)", lambda m, a=a, n=n, s=space: getattr(ns(m, s), n)(m.constant(a), 1.5))
                check(f"{label}(1.5, T{dt})", lambda m, a=a, n=n, s=space: getattr(ns(m, s), n)(1.5, m.constant(a)))
        check(f"{label}(3, 2)", lambda m, n=n, s=space: getattr(ns(m, s), n)(3, 2))
        check(f"{label}(3.0, 2)", lambda m, n=n, s=space: getattr(ns(m, s), n)(3.0, 2))
        check(f"{label}(7, -2)", lambda m, n=n, s=space: getattr(ns(m, s), n)(7, -2))
        check(f"{label}([lists])", lambda m, n=n, s=space: getattr(ns(m, s), n)([1.0, 2.0, 4.0], [2.0, 0.5, 3.0]))
        check(f"{label}(np i32, T f32)", lambda m, n=n, s=space: getattr(ns(m, s), n)(
            np.array([1, 2], np.int32), m.constant([1.0, 2.0])))
        check(f"{label}(T i32, T f32)", lambda m, n=n, s=space: getattr(ns(m, s), n)(
            m.constant([1, 2]), m.constant([1.0, 2.0])))
        check(f"{label}(np f64, T f32)", lambda m, n=n, s=space: getattr(ns(m, s), n)(
            np.array([1.0, 2.0]), m.constant([1.0, 2.0])))
        check(f"{label}(bcast)", lambda m, n=n, s=space: getattr(ns(m, s), n)(
            m.constant(arr("float32", "pos")), m.constant([1.0, 2.0, 0.5])))
        check(f"{label}(empty)", lambda m, n=n, s=space: getattr(ns(m, s), n)(
            np.zeros((0, 3), np.float32), np.ones((1, 3), np.float32)))
        req, _ = tf_params(space, n)
        check(f"{label}(kw {req})", lambda m, n=n, s=space, k=req: getattr(ns(m, s), n)(
            **{k[0]: m.constant([2.0, 3.0]), k[1]: m.constant([0.5, 4.0])}, name="op"))
        check(f"{label}(f32,f32)", lambda m, n=n, s=space: getattr(ns(m, s), n)(
            m.constant(arr("float32", "pos")), m.constant(arr("float32"))), traced=True)
        check(f"{label}(T i32, 2)", lambda m, n=n, s=space: getattr(ns(m, s), n)(m.constant([3, -7]), 2), traced=True)


def reduce_cases() -> None:
    names = [n for n in common_names("math") if n.startswith("reduce_")] + ["count_nonzero"]
    x = arr("float32")
    for n in names:
        label = f"math.{n}"
        for dt in ALL:
            a = arr(dt)
            check(f"{label}({dt})", lambda m, a=a, n=n: getattr(m.math, n)(a))
            check(f"{label}({dt}, axis=-1, keepdims)", lambda m, a=a, n=n: getattr(m.math, n)(a, axis=-1, keepdims=True))
        for axis in (None, 0, 1, -1, -2, [0, 1], [-1, 0], (1,), np.int64(1), 2, -3, [0, 0]):
            check(f"{label}(axis={axis!r})", lambda m, n=n, axis=axis: getattr(m.math, n)(x, axis=axis))
            check(f"{label}(axis={axis!r}, keepdims)", lambda m, n=n, axis=axis: getattr(m.math, n)(
                x, axis=axis, keepdims=True))
        check(f"{label}(axis=T)", lambda m, n=n: getattr(m.math, n)(x, axis=m.constant([1])))
        check(f"{label}(axis=T i64)", lambda m, n=n: getattr(m.math, n)(x, axis=m.constant(-1, m.int64)))
        check(f"{label}(list)", lambda m, n=n: getattr(m.math, n)([[1, 2], [3, 4]], 1))
        check(f"{label}(py scalar)", lambda m, n=n: getattr(m.math, n)(3.0))
        check(f"{label}(bools list)", lambda m, n=n: getattr(m.math, n)([True, False]))
        check(f"{label}(empty)", lambda m, n=n: getattr(m.math, n)(np.zeros((0, 3), np.float32), axis=0))
        check(f"{label}(empty all)", lambda m, n=n: getattr(m.math, n)(np.zeros((0, 3), np.float32)))
        check(f"{label}(empty int)", lambda m, n=n: getattr(m.math, n)(np.zeros((2, 0), np.int32), axis=1))
        check(f"{label}(input_tensor=, name=)", lambda m, n=n: getattr(m.math, n)(
            input_tensor=m.constant(x), axis=0, name="r"))
        check(f"{label}(rank3 axis=[0,2])", lambda m, n=n: getattr(m.math, n)(arr("float64", shape=(2, 3, 4)), [0, -1]))
        check(f"{label}(f32)", lambda m, n=n: getattr(m.math, n)(m.constant(x), axis=-1), traced=True)
        check(f"{label}(f32 None)", lambda m, n=n: getattr(m.math, n)(m.constant(x), keepdims=True), traced=True)
        if hasattr(sf, n):
            check(f"tf.{n}(axis=-1)", lambda m, n=n: getattr(m, n)(x, -1))


# --- hand-written cases: expressions in ``m`` (tf or sf) and the fixtures below --------------------

_r = np.random.default_rng(0)
FIX = {
    "np": np, "F": arr("float32"), "D": arr("float64"), "I": arr("int32", "int"), "I64": arr("int64", "int"),
    "I8": arr("int8", "int"), "I16": arr("int16", "int"), "U8": arr("uint8", "int"), "B": arr("bool"),
    "C": arr("complex64"), "Z": arr("complex128"), "H": arr("float16"), "BF": arr("bfloat16"),
    "E": np.zeros((0, 3), np.float32), "V": [1.0, 2.0, 3.0],
    "M": np.array([[4.0, 1.0], [1.0, 3.0]], np.float32),
    "M3": np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]]),
    "R": _r.standard_normal((3, 4)).astype(np.float32), "R3": _r.standard_normal((2, 3, 4)).astype(np.float32),
    "IMG": _r.random((2, 4, 6, 3)).astype(np.float32), "IMG3": _r.random((4, 6, 3)).astype(np.float32),
    "IMG8": (_r.random((2, 4, 6, 3)) * 255).astype(np.uint8),
    "X4": _r.standard_normal((2, 5, 5, 3)).astype(np.float32), "W4": _r.standard_normal((3, 3, 3, 2)).astype(np.float32),
    "X3": _r.standard_normal((2, 7, 3)).astype(np.float32), "W3": _r.standard_normal((3, 3, 2)).astype(np.float32),
    "X5": _r.standard_normal((1, 4, 4, 4, 2)).astype(np.float32),
    "W5": _r.standard_normal((2, 2, 2, 2, 3)).astype(np.float32),
    "LOG": _r.standard_normal((4, 5)).astype(np.float32), "LAB": np.array([0, 3, 4, 1], np.int32),
    "S": np.array([b"Hello", b" World ", b"abc"], object),
}


def E(expr: str, traced: bool = False, tf_expr: str | None = None) -> None:
    """One case: ``expr`` evaluated with ``m`` bound to tf and to sf (``tf_expr`` for TF)."""
    code = compile(expr, expr, "eval")
    tcode = compile(tf_expr, tf_expr, "eval") if tf_expr else None
    fn = lambda m: eval(code, {**FIX, "m": m})  # noqa: E731
    tfn = (lambda m: eval(tcode, {**FIX, "m": m})) if tcode else None  # noqa: E731
    check(expr, fn, False, tfn)
    if traced:
        check(expr, fn, True, tfn)


def many(*exprs: str, traced: bool = False) -> None:
    for e in exprs:
        E(e, traced)


def constructor_cases() -> None:
    many("m.constant(1)", "m.constant(1.5)", "m.constant(True)", "m.constant(2**31)", "m.constant(-2**31)",
         "m.constant(2**31 - 1)", "m.constant([1, 2**40])", "m.constant(1j)", "m.constant([1, 2.5])",
         "m.constant([[1, 2], [3, 4]], m.float16)", "m.constant(np.float64(1.5))", "m.constant(np.int64(3))",
         "m.constant(np.array([1, 2], np.uint16))", "m.constant(3, dtype=m.float64)", "m.constant(1.5, m.int32)",
         "m.constant(-1, m.uint8)", "m.constant(300, m.int8)", "m.constant([1.5, 2.5], m.int32)",
         "m.constant(np.array([1.5, -2.5]), m.int32)", "m.constant(np.array([300]), m.int8)",
         "m.constant(1, shape=[2, 3])", "m.constant([1, 2, 3, 4, 5, 6], shape=[2, 3])", "m.constant([1, 2], shape=[3])",
         "m.constant('abc')", "m.constant(['a', 'bc'])", "m.constant([])", "m.constant([[]])",
         "m.constant(F, name='c')", "m.constant(B)", "m.constant(BF)", "m.constant(1.5, m.bfloat16)",
         "m.constant(np.float32(2.0))", "m.constant([np.float32(1), 2])", "m.constant(0.1, m.float64)",
         "m.constant([True, 1])", "m.constant(None)", "m.constant([1, [2]])", "m.constant(1.5, m.bool)",
         "m.constant(2, m.bool)", "m.constant(1+2j, m.float32)", "m.constant(m.constant(1.0), m.float64)",
         "m.constant(m.constant([1, 2]), m.float32)",
         "m.convert_to_tensor(1)", "m.convert_to_tensor(1.5)", "m.convert_to_tensor(np.float64(1.5))",
         "m.convert_to_tensor([1, 2], m.int64)", "m.convert_to_tensor([1, 2], dtype=m.float32)",
         "m.convert_to_tensor(1.5, m.int32)", "m.convert_to_tensor(m.constant(1), m.float32)",
         "m.convert_to_tensor(F, m.float64)", "m.convert_to_tensor(I, m.int64)", "m.convert_to_tensor([1, 2.5])",
         "m.convert_to_tensor(1, dtype_hint=m.float32)", "m.convert_to_tensor(1.5, dtype_hint=m.int32)",
         "m.convert_to_tensor([1, 2], name='x')", "m.convert_to_tensor(m.Variable(2.0))",
         "m.convert_to_tensor(m.TensorShape([2, 3]))", "m.constant(m.TensorShape([2, 3]))",
         "m.zeros(3)", "m.zeros([2, 3])", "m.zeros((2, 3), m.int32)", "m.zeros([2, 3], dtype=m.bool)",
         "m.zeros([])", "m.zeros([0, 2])", "m.zeros(m.constant([2, 2]))", "m.zeros(np.array([2, 1], np.int64))",
         "m.zeros([2, 3], m.string)", "m.zeros([2], m.complex64)", "m.zeros([2], 'float16')", "m.zeros([2], np.int64)",
         "m.ones(3)", "m.ones([2, 3], m.int8)", "m.ones([2], m.bool)", "m.ones([2], m.string)", "m.ones([2], 'float64')",
         "m.zeros_like(F)", "m.zeros_like(I, dtype=m.float32)", "m.zeros_like([1, 2])", "m.zeros_like([1.5, 2.5])",
         "m.ones_like(B)", "m.ones_like(S)", "m.zeros_like(S)", "m.ones_like([[1.5]], m.int32)", "m.ones_like(C)",
         "m.fill([2, 3], 9)", "m.fill([2, 3], 9.5)", "m.fill([2], True)", "m.fill([2], 'a')", "m.fill([], 1)",
         "m.fill((2, 2), np.float16(1))", "m.fill([2], m.constant(3, m.int64))", "m.fill(dims=[2], value=1)",
         "m.range(5)", "m.range(5.0)", "m.range(1, 5)", "m.range(1, 5, 2)", "m.range(5, 1, -1)", "m.range(0, 1, 0.25)",
         "m.range(1, 5.5)", "m.range(5, dtype=m.float32)", "m.range(5, dtype=m.int64)", "m.range(2, 5, dtype=m.float64)",
         "m.range(m.constant(5))", "m.range(m.constant(5, m.int64))", "m.range(m.constant(1), 5)", "m.range(0)",
         "m.range(5, 1)", "m.range(np.int64(4))", "m.range(np.float64(2.0))", "m.range(1, m.constant(4.0))",
         "m.range(start=1, limit=4, delta=1)", "m.range(3, dtype=m.float16)", "m.range(3, dtype=m.uint8)",
         "m.range(0, 1, 0)", "m.range(4, name='r')",
         "m.linspace(0.0, 1.0, 5)", "m.linspace(0, 1, 5)", "m.linspace(0.0, 1.0, 1)", "m.linspace(0.0, 1.0, 0)",
         "m.linspace(np.float64(0), 1, 3)", "m.linspace([0.0, 1.0], [1.0, 3.0], 3)",
         "m.linspace([0.0, 1.0], [1.0, 3.0], 3, axis=-1)", "m.linspace(m.constant(0.0, m.float64), 2.0, 3)",
         "m.linspace(0.0, 1.0, m.constant(4))", "m.linspace(1, 10, 4)",
         "m.eye(2)", "m.eye(2, 3)", "m.eye(3, dtype=m.int32)", "m.eye(2, batch_shape=[3])", "m.eye(0)",
         "m.eye(2, dtype=m.bool)", "m.linalg.eye(2, num_columns=1)",
         "m.one_hot([0, 2, -1, 5], 3)", "m.one_hot([0, 2], 3, dtype=m.int32)", "m.one_hot([0, 2], 3, on_value=5, off_value=-1)",
         "m.one_hot([0, 2], 3, on_value=5.0, off_value=-1.0)", "m.one_hot([[0, 2]], 3, axis=0)",
         "m.one_hot([0, 2], 3, axis=1)", "m.one_hot(np.array([1, 0], np.int64), 2)", "m.one_hot([0, 1], 2, on_value=True, off_value=False)",
         "m.one_hot([0, 1], 2, on_value=m.constant(2.0), off_value=0.0)", "m.one_hot([0, 1], m.constant(3))",
         "m.one_hot([0, 1], 2, dtype=m.float64, on_value=2)", "m.one_hot([0, 1], 2, on_value=1, dtype=m.float32)",
         "m.one_hot(np.array([0, 1], np.uint8), 2)", "m.one_hot([], 3)", "m.one_hot(1, 3)")
    many("m.constant([1, 2.5]) * 2", "m.range(1, 5, 2) * 3", "m.fill([2, 2], 0.5) + 1", "m.zeros([2], m.int32) + 1",
         "m.linspace(0.0, 1.0, 3)", "m.one_hot([0, 2], 3)", "m.eye(2, 3, dtype=m.float64)", traced=True)


def cast_cases() -> None:
    vals = np.array([-300.7, -129.5, -1.5, -0.5, 0.0, 0.5, 1.5, 2.5, 127.9, 255.5, 300.2, 70000.0, 3e9, np.inf,
                     -np.inf, np.nan])
    FIX["CV"] = vals
    for src in ("float64", "float32", "float16", "bfloat16"):
        FIX[f"CV_{src}"] = vals.astype(npdt(src))
        for dst in ALL:
            E(f"m.cast(m.constant(CV_{src}), m.{dst})")
    for src in INTS + ("bool",) + COMPLEX:
        FIX[f"CI_{src}"] = (np.array([-2, 0, 1, 5, 127, 200]) % (2 if src == "bool" else 1000)).astype(
            npdt(src)) if src != "bool" else np.array([True, False, True])
        for dst in ALL:
            E(f"m.cast(m.constant(CI_{src}), m.{dst})")
    FIX["CZ"] = np.array([1.5 - 2.5j, -0.5 + 1j, 3e9 + 0j], np.complex128)
    many("m.cast(CZ, m.float32)", "m.cast(CZ, m.int32)", "m.cast(CZ, m.complex64)", "m.cast(CZ, m.bool)",
         "m.cast(1.7, m.int32)", "m.cast(-1.7, m.int32)", "m.cast([1.7, 2.2], m.int64)", "m.cast(3, m.float32)",
         "m.cast(True, m.float32)", "m.cast(2**40, m.int32)", "m.cast(1.5, 'int32')", "m.cast(F, np.int32)",
         "m.cast(F, dtype=m.float64, name='c')", "m.cast(x=F, dtype=m.float16)", "m.cast(S, m.int32)",
         "m.cast(F, m.string)", "m.cast(m.constant(I), m.int32)", "m.cast(E, m.int8)", "m.cast(1 + 2j, m.float32)",
         "m.saturate_cast(CV, m.int8)", "m.saturate_cast(CV, m.uint8)", "m.saturate_cast(CV_float32, m.int32)",
         "m.saturate_cast(CV, m.int64)", "m.saturate_cast([300, -5], m.uint8)", "m.saturate_cast(CV, m.float16)",
         "m.saturate_cast(np.array([70000], np.int32), m.int16)", "m.saturate_cast(np.array([200], np.uint8), m.int8)",
         "m.saturate_cast(CZ, m.float32)", "m.saturate_cast(CZ, m.int8)", "m.saturate_cast(np.array([-1, 5], np.int8), m.uint8)",
         "m.saturate_cast(np.array([2**40, -1], np.int64), m.uint32)", "m.saturate_cast(CV, m.bfloat16)",
         "m.dtypes.saturate_cast(CV, m.int8)" if hasattr(tf.dtypes, "saturate_cast") else "m.saturate_cast(CV, m.int16)",
         "m.bitcast(np.array([1.0], np.float32), m.int32)", "m.bitcast(np.array([1, 2], np.int32), m.uint8)",
         "m.bitcast(np.array([[1, 2, 3, 4]], np.uint8), m.int32)", "m.bitcast(np.array([1.0]), m.int8)",
         "m.complex(1.0, 2.0)", "m.complex(F, F)", "m.complex(D, D)", "m.complex(F, 0.5)", "m.complex(I, I)")
    many("m.cast(m.constant(CV_float32), m.int32)", "m.cast(m.constant(CV), m.uint8)", "m.saturate_cast(CV, m.int8)",
         traced=True)


def operator_cases() -> None:
    bin_ops = ["+", "-", "*", "/", "//", "%", "**", "<", "<=", ">", ">=", "==", "!=", "&", "|", "^"]
    for op in bin_ops:
        for dt in ALL:
            FIX[f"OA_{dt}"], FIX[f"OB_{dt}"] = arr(dt), arr(dt, "pos")
            E(f"m.constant(OA_{dt}) {op} m.constant(OB_{dt})")
        for left in ("2", "2.5", "True", "[1, 2, 3]", "np.float64(2.5)", "np.int64(2)", "np.array([1.0, 2, 3])",
                     "np.array([1, 2, 3], np.int8)", "np.array([1, 2, 3], np.int64)", "1j"):
            for dt in ("int32", "float32", "int8", "uint8", "int64", "float16", "float64", "bool", "complex64"):
                FIX[f"OT_{dt}"] = arr(dt, "pos", (3,))
                E(f"{left} {op} m.constant(OT_{dt})")
                E(f"m.constant(OT_{dt}) {op} {left}")
        E(f"m.constant([3, -7, 8]) {op} m.constant([2, 2, -3])", traced=True)
        E(f"m.constant([3.0, -7.0]) {op} 2", traced=True)
        E(f"2 {op} m.constant([3.0, -7.0])", traced=True)
        E(f"m.constant([3, -7]) {op} 2.5")
        E(f"m.constant([True, False]) {op} True")
        E(f"m.constant(E) {op} 1.0")
    for uop in ("-", "~", "abs", "+"):
        for dt in ALL:
            FIX[f"OU_{dt}"] = arr(dt)
            E(f"{uop}(m.constant(OU_{dt}))" if uop != "abs" else f"abs(m.constant(OU_{dt}))")
        E(f"{uop}(m.constant([3, -7]))" if uop != "abs" else "abs(m.constant([-3.5, 2]))", traced=True)
    many("m.constant(M) @ m.constant(M)", "m.constant(M) @ M", "M @ m.constant(M)", "m.constant(R3) @ m.constant(R3[0].T)",
         "m.constant([[1, 2]]) @ m.constant([[3], [4]])", "m.constant([1.0, 2.0]) @ m.constant(M)",
         "m.constant(C[:, :2]) @ m.constant(C[:, :2].T)", "m.constant(I) @ m.constant(I.T)",
         "m.constant(I8) @ m.constant(I8.T)", "m.constant(H) @ m.constant(H.T)", "m.constant(BF) @ m.constant(BF.T)",
         "[[1.0, 2.0]] @ m.constant(M)", "m.constant(M) @ [[1.0], [2.0]]", traced=False)
    many("m.constant(R3)[0]", "m.constant(R3)[-1]", "m.constant(R3)[:, 1]", "m.constant(R3)[..., -1]",
         "m.constant(R3)[None, 0, ::2]", "m.constant(R3)[0, 1, 2]", "m.constant(R3)[:, ::-1]", "m.constant(R3)[1:0]",
         "m.constant(R3)[-5:5]", "m.constant(R3)[0, ..., None]", "m.constant(R3)[m.constant(1)]",
         "m.constant(R3)[m.constant(1, m.int64), 1:]", "m.constant(R3)[2]", "m.constant(R3)[0, 3]",
         "m.constant(R3)[1.0]", "m.constant(R3)[[0, 1]]", "m.constant(R3)[np.int64(1)]", "m.constant(R3)[:, -4]",
         "m.constant(R3)[..., ...]", "m.constant(R3)[::0]", "m.constant(R3)[True]", "m.constant(3.0)[0]",
         "m.constant(R3)[:, m.constant(0):m.constant(2)]", "m.constant(R3)[0][1][2]", "m.constant(S)[1]",
         "m.constant(R3)[:, 1:3:2, ::-2]", "m.constant(R3)[-1, -1, -1]", "m.constant(R3)[0, :, None, 1]",
         traced=True)
    many("len(m.constant(R3))", "[float(v) for v in m.constant([1.0, 2.0])]", "float(m.constant(2.5))",
         "int(m.constant(7))", "bool(m.constant(True))", "m.constant(R3).shape", "m.constant(R3).ndim",
         "m.constant(R3).dtype", "m.constant(R3).shape.as_list()", "m.constant(F).numpy()", "np.asarray(m.constant(I))",
         "m.constant(1.0) == None", "m.constant([1, 2]) == 'a'", "m.constant([1, 2]) == [1, 3]",
         "m.constant([1, 2]) != [1, 2, 3]", "m.constant(1) in [m.constant(1)]", "bool(m.constant([1.0]))",
         "int(m.constant(2.7))", "m.constant([1, 2]).shape[0]", "list(m.constant([[1, 2], [3, 4]]).shape)",
         "m.constant(F).get_shape()", "m.constant(I).numpy().dtype", "m.constant(2) ** -1", "m.constant(2.0) ** -1",
         "m.constant([0, 3]) // 0", "m.constant([0, 3]) % 0", "m.constant([0.0, 3]) / 0", "m.constant([-7, 7]) // 2",
         "m.constant([-7, 7]) % -2", "m.constant([-7.5, 7.5]) % 2", "m.constant(2, m.uint8) - 3",
         "m.constant(200, m.uint8) + 100", "m.constant(100, m.int8) * 2", "m.constant([1, 2], m.int8) / 2",
         "m.constant([1, 2], m.int64) / 2", "m.constant([1, 2], m.uint16) / 2", "m.constant([1, 2]) / m.constant([2, 4])",
         "m.constant([1.0, 2]) / m.constant([2, 4])", "m.constant([1, 2]) / 2.5", "2.5 / m.constant([1, 2])",
         "m.constant(2) ** 3.0", "m.constant([True]) + 1", "m.constant(5) @ m.constant(3)", "-m.constant([True])",
         "m.constant(np.array([1, 2], np.uint32)) - 3", "m.constant([1.0, 2.0]) < m.constant([1, 3])",
         "m.constant(F).T" if hasattr(tf.Tensor, "T") else "m.constant(F).shape",
         "m.constant([b'a']) + m.constant([b'b'])", "m.constant([b'a']) + 'b'", "'b' + m.constant([b'a'])",
         "m.constant([b'a']) == 'a'", "m.constant(S) == b'abc'", "m.constant([1.0, 2.0]) == 1",
         "m.constant([1, 2]) == 1.0", "m.constant([1, 2]) == 1.5", "m.constant([1.0, 2.0]) == np.array([1.0, 2.0])")


def variable_cases() -> None:
    def v(expr):
        return f"(lambda x: [{expr}, x.read_value()][::-1])(m.Variable(F))"

    many("m.Variable(1.0)", "m.Variable(1)", "m.Variable([1, 2])", "m.Variable(F, dtype=m.float64)",
         "m.Variable(2.5, dtype=m.int32)", "m.Variable(np.float64(1))", "m.Variable(True)",
         "m.Variable(lambda: m.zeros([2]))", "m.Variable(m.constant([1, 2], m.int64))", "m.Variable(1.0, name='v').name",
         "m.Variable(1.0).trainable", "m.Variable(1.0, trainable=False).trainable", "m.Variable(F).shape",
         "m.Variable(F).dtype", "m.Variable(F) + 1", "1 - m.Variable(F)", "m.Variable(F) * m.Variable(F)",
         "m.Variable(F)[0, 1:]", "m.Variable(M) @ m.Variable(M)", "-m.Variable(F)", "abs(m.Variable(F))",
         "m.Variable(F) / 2", "m.Variable([1, 2]) / 2", "m.Variable([1, 2]) // 2", "m.Variable(F) ** 2",
         "m.Variable(F) < 1", "m.Variable(F) == F", "m.Variable(B) & True", "m.Variable(F).numpy()",
         "m.reduce_sum(m.Variable(F))", "m.Variable(F).value()", "m.Variable(1.0).assign(2.0)",
         "m.Variable(F).get_shape()", "m.Variable(E)", "m.Variable('abc')", "m.Variable([1.5, 2], dtype=m.int32)",
         "m.Variable(F, shape=m.TensorShape(None)).shape", "m.Variable(F, shape=[None, 3]).shape",
         "float(m.Variable(2.5))", "int(m.Variable(3))", "m.Variable(1.0).assign(2)", "m.Variable(1).assign(2.5)",
         "m.Variable([1.0, 2.0]).assign([1.0, 2.0, 3.0])", "m.Variable(1.0).assign('a')",
         "m.Variable(1.0).assign(m.constant(2.0, m.float64))", "m.Variable(1.0).assign_add(m.constant(1, m.int32))",
         "m.Variable(F).assign(D)", "m.Variable(I).assign(F)", "m.cast(m.Variable(F), m.int32)",
         "m.Variable(F).device == ''" if False else "m.Variable(F).ndim" if hasattr(tf.Variable, "ndim") else "1",
         v("x.assign(F * 2)"), v("x.assign_add(F)"), v("x.assign_sub(1.0)"), v("x.assign_add(1)"),
         v("x[0].assign([7.0, 8.0, 9.0])"), v("x[:, 1].assign([5.0, 6.0])"), v("x[0, 1].assign(4.0)"),
         v("x.scatter_nd_update([[0, 1]], [9.0])"), v("x.scatter_nd_add([[1, 2]], [9.0])"),
         v("x.scatter_nd_sub([[1, 2], [0, 0]], [9.0, 1.0])"),
         v("x.scatter_update(m.IndexedSlices(m.constant([[1.0, 2, 3]]), m.constant([1])))"),
         v("x.scatter_add(m.IndexedSlices(m.constant([[1.0, 2, 3]]), m.constant([0])))"),
         v("x.scatter_max(m.IndexedSlices(m.constant([[1.0, 2, 3]]), m.constant([0])))"),
         v("x.scatter_min(m.IndexedSlices(m.constant([[1.0, 2, 3]]), m.constant([0])))"),
         v("x.scatter_mul(m.IndexedSlices(m.constant([[1.0, 2, 3]]), m.constant([0])))"),
         v("x.scatter_div(m.IndexedSlices(m.constant([[1.0, 2, 3]]), m.constant([0])))"),
         v("x.scatter_sub(m.IndexedSlices(m.constant([[1.0, 2, 3]]), m.constant([1])))"),
         v("x.batch_scatter_update(m.IndexedSlices(m.constant([9.0, 8.0]), m.constant([[1], [2]])))"),
         v("x.sparse_read([1, 0])"), v("x.gather_nd([[1, 2]])"), v("x.assign(F, read_value=False)"),
         v("x.assign_add(F, read_value=False)"), v("x.assign([[1.0]])"), v("x.assign(m.zeros([3, 2]))"),
         v("x.assign(I)"), v("x.assign_add(D)"), v("x[5].assign([1.0, 2, 3])"), v("x.scatter_nd_update([[5, 0]], [1.0])"))


def array_cases() -> None:
    many("m.reshape(F, [-1])", "m.reshape(F, [3, -1])", "m.reshape(F, (6,))", "m.reshape(F, [-1, 4])",
         "m.reshape(F, [])", "m.reshape([5.0], [])", "m.reshape(F, m.constant([3, 2]))", "m.reshape(F, [m.constant(3), -1])",
         "m.reshape(F, np.array([6, 1], np.int64))", "m.reshape(E, [-1, 0])", "m.reshape(E, [3, -1])",
         "m.reshape(F, [2, None])", "m.reshape(tensor=F, shape=[6], name='r')", "m.reshape(F, [-1, -1])",
         "m.transpose(R3)", "m.transpose(R3, [0, 2, 1])", "m.transpose(R3, perm=[-1, 0, 1])", "m.transpose([[1, 2]])",
         "m.transpose(C, conjugate=True)", "m.transpose(F, [0])", "m.transpose(m.constant(3.0))", "m.transpose(C)",
         "m.linalg.matrix_transpose(R3)", "m.linalg.matrix_transpose(C, conjugate=True)", "m.linalg.adjoint(C)",
         "m.concat([F, F], 0)", "m.concat([F, F], -1)", "m.concat([F, D], 0)", "m.concat([F], 0)", "m.concat([[1, 2], [3]], 0)",
         "m.concat([F, [[1.0, 2, 3]]], 0)", "m.concat([F, F], axis=m.constant(1))", "m.concat([F, F], 2)",
         "m.concat([F, E], 0)", "m.concat([I, [[1, 2, 3]]], 0)", "m.concat([[1, 2], np.array([3], np.int64)], 0)",
         "m.concat([m.constant(1.0), m.constant(2.0)], 0)", "m.concat(values=[F, F], axis=1, name='c')",
         "m.stack([F, F])", "m.stack([F, F], axis=-1)", "m.stack([1, 2, 3])", "m.stack([1.0, m.constant(2.0)])",
         "m.stack([[1, 2], [3, 4]], 1)", "m.stack([F, D])", "m.stack([F, F], axis=3)", "m.stack([])",
         "m.stack([m.constant([1, 2]), [3, 4]])", "m.stack([np.int64(1), 2])", "m.parallel_stack([F, F])",
         "m.unstack(F)", "m.unstack(F, axis=-1)", "m.unstack(F, num=2)", "m.unstack(F, num=3)", "m.unstack(E)",
         "m.unstack([[1, 2], [3, 4]])", "m.unstack(m.constant(1.0))",
         "m.split(R, 2, axis=1)", "m.split(R, [1, 3], 1)", "m.split(R, [1, -1], 1)", "m.split(R, 3)",
         "m.split(R, 3, axis=-1)", "m.split(R, m.constant([2, 2]), 1)", "m.split(R, [1, 1, 2], axis=-1)",
         "m.split(R, np.array([1, 3]), 1)", "m.split(R, 4, axis=1, num=4)", "m.split(R, [1, 2], 1)",
         "m.split(value=R, num_or_size_splits=1, axis=0)", "m.split(R, [0, 4], 1)", "m.split(R, 0, 1)",
         "m.expand_dims(F, 0)", "m.expand_dims(F, -1)", "m.expand_dims(F, axis=2)", "m.expand_dims(F, 3)",
         "m.expand_dims(F, -4)", "m.expand_dims(3.0, 0)", "m.expand_dims(F, m.constant(1))", "m.expand_dims(F, [1])",
         "m.squeeze([[1.0], [2.0]])", "m.squeeze(np.zeros((1, 2, 1)), axis=-1)", "m.squeeze(np.zeros((1, 2, 1)), [0, 2])",
         "m.squeeze(np.zeros((1, 2, 1)), axis=1)", "m.squeeze(np.zeros((1, 1)))", "m.squeeze(np.zeros((1, 2, 1)), 0)",
         "m.squeeze(np.zeros((1, 2, 1)), axis=(0,))", "m.squeeze(input=np.zeros((1, 2)), axis=0)",
         "m.tile(F, [2, 1])", "m.tile(F, m.constant([1, 2]))", "m.tile([1, 2], [3])", "m.tile(F, [2])",
         "m.tile(F, [0, 2])", "m.tile(F, np.array([1, 2], np.int64))",
         "m.pad(F, [[1, 0], [0, 2]])", "m.pad(F, [[1, 1], [2, 2]], 'REFLECT')", "m.pad(F, [[1, 1], [2, 2]], 'symmetric')",
         "m.pad(F, [[1, 1], [1, 1]], constant_values=7)", "m.pad(I, [[1, 1], [1, 1]], constant_values=7)",
         "m.pad(F, [[1, 1], [1, 1]], constant_values=0.5)", "m.pad(I, [[1, 1], [1, 1]], constant_values=0.5)",
         "m.pad(F, m.constant([[1, 1], [1, 1]]))", "m.pad(F, [[1, 1]])", "m.pad(F, [[3, 3], [0, 0]], 'REFLECT')",
         "m.pad(F, [[1, 1], [0, 0]], 'bogus')", "m.pad(F, [[1, 1], [0, 0]], constant_values=m.constant(2.0))",
         "m.pad(B, [[1, 0], [0, 0]])", "m.pad(S, [[1, 0]])", "m.pad(F, np.array([[1, 1], [0, 0]], np.int64))",
         "m.reverse(F, [0])", "m.reverse(F, [-1])", "m.reverse(F, [0, 1])", "m.reverse(F, axis=[1])", "m.reverse(F, 1)",
         "m.reverse(F, [2])", "m.reverse(F, [])", "m.reverse(F, np.array([0], np.int64))",
         "m.broadcast_to([1, 2, 3], [2, 3])", "m.broadcast_to(F, [2, 2, 3])", "m.broadcast_to(F, [3, 3])",
         "m.broadcast_to(1.5, [2])", "m.broadcast_to(F, m.constant([2, 2, 3], m.int64))",
         "m.broadcast_dynamic_shape([2, 1], [3])", "m.broadcast_dynamic_shape(m.constant([2, 1]), m.constant([1, 3]))",
         "m.broadcast_dynamic_shape([2, 2], [3])", "m.broadcast_static_shape(m.TensorShape([2, 1]), m.TensorShape([3]))",
         "m.broadcast_static_shape(m.TensorShape([2, None]), m.TensorShape([1, 3]))",
         "m.shape(F)", "m.shape(F, out_type=m.int64)", "m.shape(3.0)", "m.shape([[1, 2]])", "m.shape(E)",
         "m.shape(F, m.float32)", "m.shape_n([F, E])", "m.shape_n([F], out_type=m.int64)", "m.size(F)",
         "m.size(F, out_type=m.int64)", "m.size(E)", "m.size(3.0)", "m.rank(F)", "m.rank(3)", "m.rank([[1]])",
         "m.identity(F)", "m.identity([1, 2])", "m.identity(S)", "m.identity_n([F, I])", "m.stop_gradient([1.0])",
         "m.where([True, False, True])", "m.where([[True, False], [False, True]])", "m.where(F > 0)",
         "m.where([1, 0, 2])", "m.where([1.5, 0.0])", "m.where(E > 0)", "m.where([True, False], [1, 2], [3, 4])",
         "m.where([True, False], 1.0, 0.0)", "m.where(F > 0, F, 0.0)", "m.where(F > 0, F, 0)", "m.where(F > 0, 1, F)",
         "m.where(F > 0, I, F)", "m.where([[True], [False]], F, -F)", "m.where(F > 0, F, [0.0, 1, 2])",
         "m.where([1, 0], [1, 2], [3, 4])", "m.where(F > 0, x=F)", "m.where(condition=F > 0, x=F, y=D)",
         "m.where(True, F, 0.0)", "m.where(F > 0, 'a', 'b')",
         "m.gather(F, [1, 0])", "m.gather(F, [2, 0], axis=1)", "m.gather(F, [2, 0], axis=-1)", "m.gather(F, [[0, 1]])",
         "m.gather(F, 1)", "m.gather(F, [5])", "m.gather(F, [-1])", "m.gather(F, np.array([1], np.int64))",
         "m.gather([[1, 2], [3, 4]], [[1], [0]], batch_dims=1)", "m.gather(R3, [[1], [0]], batch_dims=1, axis=2)",
         "m.gather(F, [1.0])", "m.gather(F, [0], validate_indices=True)", "m.gather(params=F, indices=[1], axis=0, name='g')",
         "m.gather(F, m.constant([1], m.int64), axis=m.constant(0))", "m.gather(S, [2, 0])", "m.gather(F, [], axis=1)",
         "m.gather_nd(F, [[0, 1], [1, 2]])", "m.gather_nd(F, [[1]])", "m.gather_nd(F, [1, 2])", "m.gather_nd(F, [[3, 0]])",
         "m.gather_nd(R3, [[1], [0]], batch_dims=1)", "m.gather_nd(F, np.array([[0, 1]], np.int64))",
         "m.boolean_mask(F, [True, False])", "m.boolean_mask(F, F > 0)", "m.boolean_mask(F, [True, False, True], axis=1)",
         "m.boolean_mask(R3, [[True, False, True], [False, False, True]])", "m.boolean_mask(F, [True])",
         "m.boolean_mask([1, 2, 3], np.array([1, 0, 1], bool))", "m.boolean_mask(F, [1, 0])",
         "m.boolean_mask(F, [True, False, True], axis=-1)",
         "m.slice(F, [0, 1], [2, 2])", "m.slice(F, [1, 0], [-1, -1])", "m.slice(F, [0, 0], [3, 1])",
         "m.slice(F, m.constant([0, 1]), [1, 1])", "m.slice(F, [0, 1], [1, 5])",
         "m.strided_slice(F, [0, 0], [2, 3], [1, 2])", "m.strided_slice(F, [1], [2], shrink_axis_mask=1)",
         "m.strided_slice(F, [0, -1], [0, 0], [1, -1], begin_mask=1, end_mask=3)",
         "m.strided_slice(R3, [0], [1], ellipsis_mask=0, new_axis_mask=1)",
         "m.roll([1, 2, 3, 4], 1, 0)", "m.roll(F, [1, -1], [0, 1])", "m.roll(F, 1, -1)", "m.roll(F, 7, 1)",
         "m.roll(F, shift=1, axis=[0, 0])", "m.roll(F, m.constant(1), m.constant(0))", "m.roll(F, 1, 2)",
         "m.repeat([1, 2, 3], 2)", "m.repeat(F, [1, 2], axis=0)", "m.repeat(F, 2, axis=-1)", "m.repeat(F, 3)",
         "m.repeat(F, [1, 0, 2], axis=1)", "m.repeat(F, [1, 2, 3], axis=0)", "m.repeat(3, 2)",
         "m.repeat(F, m.constant([2, 1]), 0)",
         "m.reverse_sequence(R3, [1, 3], seq_axis=1, batch_axis=0)", "m.reverse_sequence(R3, [1, 3], 1)",
         "m.reverse_sequence(R3, np.array([1, 3], np.int64), seq_axis=2, batch_axis=0)",
         "m.reverse_sequence(R3, [1, 5], seq_axis=1, batch_axis=0)",
         "m.meshgrid([1, 2, 3], [4, 5])", "m.meshgrid([1, 2, 3], [4, 5], indexing='ij')", "m.meshgrid([1.0, 2.0])",
         "m.meshgrid([1, 2], [4.0, 5])",
         "m.sort([3, 1, 2])", "m.sort(F)", "m.sort(F, axis=0, direction='DESCENDING')", "m.sort(F, direction='bad')",
         "m.sort([3.0, np.nan, 1.0])", "m.sort(U8)", "m.sort(B)", "m.sort(I8, direction='DESCENDING')",
         "m.argsort([3, 1, 2])", "m.argsort(F, axis=0)", "m.argsort(F, direction='DESCENDING', stable=True)",
         "m.argsort([1, 1, 0, 1], stable=True)", "m.argsort([1, 1, 0, 1], direction='DESCENDING', stable=True)",
         "m.argsort(I64)", "m.argsort(E)", "m.sort(E, axis=0)",
         "m.unique([1, 3, 1, 2, 3])", "m.unique([1.5, 1.5, 0.5])", "m.unique(np.array([3, 1], np.int64), out_idx=m.int64)",
         "m.unique(['b', 'a', 'b'])", "m.unique_with_counts([1, 3, 1, 2, 3])", "m.unique(F)", "m.unique([])",
         "m.unique_with_counts([1, 1], out_idx=m.int64)",
         "m.unravel_index(5, [2, 3])", "m.unravel_index([0, 5, 3], [2, 3])", "m.unravel_index(np.int64(5), [2, 3])",
         "m.unravel_index(6, [2, 3])", "m.unravel_index([1.0], [2, 3])",
         "m.searchsorted([1, 3, 5], [0, 3, 6])", "m.searchsorted([1, 3, 5], [0, 3, 6], side='right')",
         "m.searchsorted([[1.0, 3, 5]], [[2.0]])", "m.searchsorted([1, 3, 5], [3], out_type=m.int64)",
         "m.searchsorted([1, 3, 5], 3)", "m.searchsorted([1.0, 3, 5], [3])",
         "m.scatter_nd([[1], [3]], [9, 10], [5])", "m.scatter_nd([[1], [1]], [9.0, 10.0], [3])",
         "m.scatter_nd([[0, 1]], [7.0], m.constant([2, 2]))", "m.scatter_nd([[5]], [1.0], [3])",
         "m.scatter_nd(np.array([[1]], np.int64), [1], [3])",
         "m.tensor_scatter_nd_update(F, [[0, 1]], [9.0])", "m.tensor_scatter_nd_add(F, [[0, 1], [0, 1]], [9.0, 1.0])",
         "m.tensor_scatter_nd_sub(F, [[1]], [[1.0, 2, 3]])", "m.tensor_scatter_nd_max(F, [[0, 0]], [9.0])",
         "m.tensor_scatter_nd_min(F, [[0, 0]], [-9.0])", "m.tensor_scatter_nd_update(I, [[0, 0]], [9])",
         "m.tensor_scatter_nd_update(F, [[5, 0]], [9.0])", "m.tensor_scatter_nd_update(F, [[0, 0]], [9])",
         "m.tensor_scatter_nd_add(I, [[0, 0]], [2.5])",
         "m.dynamic_partition([1, 2, 3, 4], [0, 1, 0, 1], 2)", "m.dynamic_partition(F, [1, 0], 3)",
         "m.dynamic_partition([1, 2], [0, 2], 2)",
         "m.dynamic_stitch([[0, 2], [1]], [[1.0, 3.0], [2.0]])", "m.dynamic_stitch([[0, 1], [1]], [[1, 2], [9]])",
         "m.batch_to_space(np.arange(8.0).reshape(4, 1, 2, 1), [2, 2], [[0, 0], [0, 0]])",
         "m.space_to_batch(np.arange(16.0).reshape(1, 4, 4, 1), [2, 2], [[0, 0], [0, 0]])",
         "m.space_to_batch_nd(np.arange(16.0).reshape(1, 4, 4, 1), [2, 2], [[0, 0], [0, 0]])",
         "m.nn.space_to_batch(np.arange(16.0).reshape(1, 4, 4, 1), [2, 2], [[0, 0], [0, 0]])",
         "m.histogram_fixed_width([0.0, 0.5, 1.0, 5.0, -1.0], [0.0, 1.0], nbins=4)",
         "m.histogram_fixed_width([1, 2, 3], [0, 4], nbins=2)",
         "m.histogram_fixed_width([0.0, 0.5], [0.0, 1.0], nbins=2, dtype=m.int64)",
         "m.clip_by_value(F, -1, 1)", "m.clip_by_value(F, -1.0, 1.0)", "m.clip_by_value(I, 0, 3)",
         "m.clip_by_value(I, 0.5, 3)", "m.clip_by_value(F, [-1.0, 0, 0], 1.0)", "m.clip_by_value([1, 5], 2, 4)",
         "m.clip_by_value(F, 1, -1)", "m.clip_by_value(F, m.constant(-1.0), 2.0)", "m.clip_by_value(U8, 1, 3)",
         "m.clip_by_value(H, -1, 1)", "m.clip_by_value(F, np.float64(-1), 1)",
         "m.clip_by_norm(F, 1.0)", "m.clip_by_norm(F, 1.0, axes=[1])", "m.clip_by_norm(F, 100.0)",
         "m.clip_by_norm(F, 1.0, axes=-1)", "m.clip_by_norm(I, 1)", "m.clip_by_norm(D, 1)",
         "m.clip_by_global_norm([F, D], 1.0)", "m.clip_by_global_norm([F, F], 1.0)", "m.clip_by_global_norm([F, None], 1)",
         "m.clip_by_global_norm([F], 1.0, use_norm=m.constant(10.0))", "m.clip_by_global_norm([F], 1.0, name='c')",
         "m.clip_by_global_norm([F], 100.0)", "m.clip_by_global_norm((F, F), 1.0)",
         "m.sequence_mask([1, 3, 2])", "m.sequence_mask([1, 3], 5)", "m.sequence_mask([1, 3], dtype=m.float32)",
         "m.sequence_mask([[1], [2]], 3)", "m.sequence_mask(np.array([1, 2], np.int64), 3)", "m.sequence_mask([])",
         "m.sequence_mask([1, 2], m.constant(4))", "m.sequence_mask(2, 3)", "m.sequence_mask([1.0, 2.0])",
         "m.einsum('ij,jk->ik', M, M)", "m.einsum('ij->ji', F)", "m.einsum('ii', M)", "m.einsum('i,i', V, V)",
         "m.einsum('bij,bjk->bik', R3, np.transpose(R3, (0, 2, 1)))", "m.einsum('...j,j', F, V)",
         "m.einsum('ij,jk', F, R)", "m.einsum('ij,jk->ik', I, I.T)", "m.einsum('ij,jk->ik', F, D.T)",
         "m.tensordot(F, R, 1)", "m.tensordot(F, R, [[1], [0]])", "m.tensordot(F, F, axes=2)", "m.tensordot(F, F, 0)",
         "m.tensordot(V, V, 1)", "m.tensordot(F, F, [1, 1])", "m.tensordot(F, I, 1)",
         "m.matmul(M, M)", "m.matmul(F, R)", "m.matmul(F, F, transpose_b=True)", "m.matmul(F, F, adjoint_a=True)",
         "m.matmul(R3, R3, transpose_b=True)", "m.matmul(R3, R)", "m.matmul(C[:, :2], C[:, :2], adjoint_b=True)",
         "m.matmul(F, R, output_type=m.float32)", "m.matmul(I8, I8, transpose_b=True, output_type=m.int32)",
         "m.matmul([[1, 2]], [[3], [4]])", "m.matmul(I, I.T)", "m.matmul(F, I.T)", "m.matmul(V, M3)",
         "m.matmul(R3, R3)", "m.matmul(U8, U8.T)", "m.matmul(B, B.T)", "m.matmul(H, H.T)", "m.matmul(D, R.astype('float64'))",
         "m.matmul(a=M, b=M, name='mm')", "m.linalg.matmul(M, M)", "m.matmul(R3, R3, adjoint_b=True, transpose_a=True)",
         "m.linalg.matvec(M, [1.0, 2.0])", "m.linalg.matvec(R3, V + [1.0])", "m.linalg.matvec(M, [1.0, 2.0], transpose_a=True)",
         "m.add_n([F, F, F])", "m.add_n([F])", "m.add_n([1, 2])", "m.add_n([F, D])", "m.add_n([])", "m.add_n([F, 1.0])",
         "m.math.accumulate_n([F, F])", "m.scalar_mul(2, F)", "m.scalar_mul(2.5, I)", "m.scalar_mul(F, 2)",
         "m.scalar_mul(m.constant(2.0), F)", "m.math.scalar_mul(2, C)",
         "m.argmax(F)", "m.argmax(F, 1)", "m.argmax(F, axis=-1)", "m.argmax(F, output_type=m.int32)", "m.argmax([1, 3, 2])",
         "m.argmax(B)", "m.argmax(E, 1)", "m.argmax(F, 2)", "m.argmax(F, m.constant(1, m.int64))", "m.argmin(F, -1)",
         "m.argmin(U8)", "m.argmin(input=F, axis=0, output_type=m.int64)", "m.argmax(H)", "m.argmax(C)",
         "m.math.argmax([np.nan, 1.0, np.nan])", "m.math.argmin([1.0, np.nan])",
         "m.cumsum(F)", "m.cumsum(F, 1)", "m.cumsum(F, axis=-1, exclusive=True)", "m.cumsum(F, reverse=True)",
         "m.cumsum(I, exclusive=True, reverse=True)", "m.cumsum([1, 2, 3])", "m.cumsum(F, 2)", "m.cumsum(B)",
         "m.cumsum(U8)", "m.cumsum(3.0)", "m.cumsum(E, 1)", "m.math.cumprod(F, 1)", "m.math.cumprod(F, exclusive=True)",
         "m.math.cumprod(I, axis=-1, reverse=True)", "m.math.cumulative_logsumexp(F, 1)",
         "m.math.cumulative_logsumexp(F, exclusive=True, reverse=True)", "m.math.cumulative_logsumexp(I)",
         "m.math.top_k([1, 3, 2], 2)", "m.math.top_k(F)", "m.math.top_k(F, k=3, sorted=True)", "m.math.top_k(F, 4)",
         "m.math.top_k(I, 2)", "m.math.top_k(F, 2, index_type=m.int64)", "m.nn.top_k(F, 1)", "m.math.top_k([1, 1, 1], 2)",
         "m.math.top_k(F, 0)", "m.math.top_k(B, 1)", "m.math.top_k(F, m.constant(2))",
         "m.math.in_top_k([0, 2], LOG[:2], 2)", "m.math.in_top_k(targets=[0, 2], predictions=LOG[:2], k=1)",
         "m.nn.in_top_k(LOG[:2], [0, 2], 2)", "m.math.in_top_k(np.array([0, 2], np.int64), LOG[:2], 2)",
         "m.math.invert_permutation([2, 0, 1])", "m.math.invert_permutation([0, 0])",
         "m.math.is_non_decreasing([1, 2, 2])", "m.math.is_strictly_increasing([1, 2, 2])",
         "m.math.is_non_decreasing([])", "m.math.is_strictly_increasing([[1, 2], [3, 4]])",
         "m.math.bincount([1, 1, 3])", "m.math.bincount([1, 1, 3], minlength=6)", "m.math.bincount([1, 1, 3], maxlength=2)",
         "m.math.bincount([1, 1, 3], weights=[0.5, 1.0, 2.0])", "m.math.bincount([1, 1, 3], dtype=m.float64)",
         "m.math.bincount([[1, 2], [2, 2]], axis=-1)", "m.math.bincount([1, 2], binary_output=True)",
         "m.math.bincount([])", "m.math.bincount(np.array([1, 2], np.int64))", "m.math.bincount([-1, 2])",
         "m.math.confusion_matrix([0, 1, 2], [0, 2, 2])", "m.math.confusion_matrix([0, 1], [1, 1], num_classes=3)",
         "m.math.confusion_matrix([0, 1], [1, 1], weights=[2.0, 0.5], dtype=m.float32)",
         "m.math.confusion_matrix([0, 1], [1, 1], dtype=m.int64)", "m.math.confusion_matrix([0, 3], [1, 1], num_classes=3)",
         "m.math.count_nonzero(F)", "m.math.count_nonzero(F, axis=1, keepdims=True, dtype=m.int32)",
         "m.math.count_nonzero(S)", "m.math.count_nonzero([True, False])", "m.math.count_nonzero(E, 0)",
         "m.math.zero_fraction(F)", "m.math.zero_fraction(I)", "m.math.zero_fraction(E)", "m.nn.zero_fraction(B)",
         "m.math.polyval([1.0, 2.0, 3.0], F)", "m.math.polyval([], F)", "m.math.polyval([1, 2], I)",
         "m.math.l2_normalize(F)", "m.math.l2_normalize(F, 1)", "m.math.l2_normalize(F, axis=[0, 1])",
         "m.math.l2_normalize(I)", "m.math.l2_normalize(C, 1)", "m.math.l2_normalize(np.zeros(3, np.float32))",
         "m.math.softmax(LOG)", "m.math.softmax(LOG, 0)", "m.math.softmax(LOG, axis=-2)", "m.math.softmax(V)",
         "m.math.softmax(R3, axis=1)", "m.math.softmax(I)", "m.math.log_softmax(LOG, 0)", "m.math.log_softmax(R3, 1)",
         "m.math.softmax(H)", "m.math.softmax(E)", "m.math.softmax(LOG, 2)", "m.math.log_softmax(D)",
         "m.math.log_sigmoid(F)", "m.math.log_sigmoid(I)", "m.math.log_sigmoid([-100.0, 100.0])",
         "m.math.reduce_std(I)", "m.math.reduce_variance(C)", "m.math.reduce_euclidean_norm(I)",
         "m.math.reduce_euclidean_norm(C, 1)", "m.math.reduce_logsumexp([-np.inf, -np.inf])",
         "m.math.reduce_logsumexp([np.inf, 1.0])", "m.math.reduce_logsumexp(I)", "m.reduce_mean(I)", "m.reduce_mean(B)",
         "m.reduce_sum(B)", "m.reduce_mean([1, 2])", "m.reduce_prod(B)", "m.reduce_max(S)",
         "m.math.segment_sum(F, [0, 0])", "m.math.segment_sum(F, [0, 2])", "m.math.segment_mean(F, [0, 1])",
         "m.math.segment_max(F, [0, 0])", "m.math.segment_min(I, [0, 1])", "m.math.segment_prod(F, [1, 1])",
         "m.math.segment_sum(F, [1, 0])", "m.math.segment_sum(F, np.array([0, 0], np.int64))", "m.math.segment_max(F, [0, 2])",
         "m.math.unsorted_segment_sum(F, [1, 0], 3)", "m.math.unsorted_segment_mean(F, [1, 1], 2)",
         "m.math.unsorted_segment_max(F, [1, 1], 3)", "m.math.unsorted_segment_min(I, [0, 0], 2)",
         "m.math.unsorted_segment_prod(F, [2, 0], 3)", "m.math.unsorted_segment_sqrt_n(F, [1, 1], 2)",
         "m.math.unsorted_segment_sum(F, [1, -1], 2)", "m.math.unsorted_segment_sum(F, [1, 5], 2)",
         "m.math.unsorted_segment_sum(F, [[0, 1, 0], [1, 1, 1]], 2)", "m.math.unsorted_segment_sum(F, [0, 1], m.constant(2, m.int64))",
         "m.math.unsorted_segment_max(I, [1, 1], 3)", "m.math.unsorted_segment_mean(I, [1, 1], 2)",
         "m.math.betainc(0.5, 2.0, 0.3)", "m.math.betainc([0.5, 1.0], [2.0, 3.0], [0.3, 0.9])",
         "m.math.igamma(2.0, [0.5, 3.0])", "m.math.igammac([2.0, 1.0], 0.5)", "m.math.polygamma(1.0, [0.5, 3.0])",
         "m.math.polygamma([0.0, 2.0], 1.5)", "m.math.zeta(2.0, [1.0, 2.0])", "m.math.lbeta([[1.0, 2.0], [0.5, 3.0]])",
         "m.math.lbeta([])", "m.math.lbeta(V)", "m.math.igamma(2, 3)",
         "m.math.angle(C)", "m.math.angle(F)", "m.math.angle(-2.0)", "m.math.real(F)", "m.math.imag(F)",
         "m.math.real(C)", "m.math.imag(Z)", "m.math.conj(C)", "m.math.conj(F)", "m.math.conj(I)", "m.math.real(I)",
         "m.math.imag(I)", "m.math.angle(I)", "m.math.real(1 + 2j)", "m.math.imag([1 + 2j])", "m.math.angle(Z)",
         "m.math.is_inf(F)", "m.math.is_inf(I)", "m.math.is_nan(I)", "m.math.is_finite(I)",
         "m.math.multiply_no_nan([np.inf, np.nan, 1.0], [0.0, 0.0, 2.0])", "m.math.multiply_no_nan(I, I)",
         "m.math.reciprocal_no_nan([0.0, 2.0])", "m.math.reciprocal_no_nan(I)", "m.math.reciprocal_no_nan(C)",
         "m.math.divide_no_nan([1.0, 2.0], [0.0, 4.0])", "m.math.divide_no_nan(I, I)", "m.math.divide_no_nan(I, 0)",
         "m.math.xlogy(0.0, 0.0)", "m.math.xlogy(I, I)", "m.math.xdivy(I, I)", "m.math.xlog1py(0.0, -1.0)",
         "m.math.rint([0.5, 1.5, 2.5, -0.5])", "m.math.round([0.5, 1.5, 2.5, -0.5])", "m.round(I)", "m.math.round(U8)",
         "m.math.sign(C)", "m.math.sign(U8)", "m.math.sign([-0.0, np.nan])", "m.abs(np.array([-128], np.int8))",
         "m.math.softplus(features=F)", "m.nn.softsign(features=F)", "m.nn.sigmoid(x=F)", "m.nn.tanh(x=F)",
         "m.math.floordiv(I, 0)", "m.math.floormod(I, 0)", "m.truncatediv(I, 0)", "m.truncatemod(I, 0)",
         "m.math.floordiv([-7.5, 7.5], 2.0)", "m.math.floormod([-7.5, 7.5], -2.0)", "m.truncatediv([-7, 7], 2)",
         "m.truncatemod([-7, 7], -2)", "m.math.mod([-7, 7], 3)", "m.math.pow(2, -1)", "m.math.pow(I, 2)",
         "m.math.pow(0.0, -1.0)", "m.math.pow(C, 2)", "m.pow(2, 3)", "m.pow(2.0, 0.5)", "m.pow(U8, 2)", "m.pow(I8, -1)",
         "m.math.squared_difference(I, 2)", "m.math.squared_difference(C, C)", "m.divide(3, 2)", "m.divide(I8, I8)",
         "m.divide(3, m.constant(2.0))", "m.divide(m.constant(3), 2)", "m.divide(I64, 2)", "m.divide(U8, 2)",
         "m.divide(m.constant([1, 2]), [2, 4])", "m.truediv(3, 2)", "m.truediv(I16, 2)", "m.truediv(B, B)",
         "m.realdiv(F, 2)", "m.realdiv(C, C)", "m.math.divide(x=3, y=2, name='d')", "m.divide([3, 4], [2, 8])",
         "m.divide(np.int32(3), 2)", "m.divide(3, np.int64(2))", "m.divide(np.array([3], np.int16), 2)")
    many("m.reshape(F, [-1])", "m.transpose(R3, [0, 2, 1])", "m.concat([F, F], -1)", "m.stack([F, F], axis=-1)",
         "m.unstack(F, axis=-1)", "m.split(R, [1, -1], 1)", "m.expand_dims(F, -1)", "m.squeeze(np.zeros((1, 2, 1)), -1)",
         "m.tile(F, [2, 1])", "m.pad(F, [[1, 1], [2, 2]], 'REFLECT')", "m.reverse(F, [-1])", "m.shape(F, out_type=m.int64)",
         "m.where(F > 0)", "m.where(F > 0, F, 0.0)", "m.gather(F, [2, 0], axis=-1)", "m.boolean_mask(F, F > 0)",
         "m.roll(F, [1, -1], [0, 1])", "m.repeat(F, [1, 2], axis=0)", "m.sort(F, axis=0, direction='DESCENDING')",
         "m.argsort(F, direction='DESCENDING', stable=True)", "m.unique([1, 3, 1, 2, 3])", "m.searchsorted([1, 3, 5], [0, 3, 6])",
         "m.clip_by_norm(F, 1.0, axes=[1])", "m.clip_by_global_norm([F, F], 1.0)", "m.sequence_mask([1, 3, 2])",
         "m.einsum('bij,bjk->bik', R3, np.transpose(R3, (0, 2, 1)))", "m.tensordot(F, R, 1)", "m.matmul(R3, R)",
         "m.argmax(F, axis=-1)", "m.cumsum(F, axis=-1, exclusive=True)", "m.math.top_k(F, k=3)", "m.math.bincount([1, 1, 3])",
         "m.math.confusion_matrix([0, 1, 2], [0, 2, 2])", "m.math.count_nonzero(F, axis=1)", "m.math.l2_normalize(F, 1)",
         "m.math.softmax(LOG, 0)", "m.math.segment_sum(F, [0, 0])", "m.math.unsorted_segment_max(F, [1, 1], 3)",
         "m.math.reduce_std(F, 1)", "m.divide(3, 2)", "m.range(1, 5.5)", "m.histogram_fixed_width([0.0, 0.5], [0.0, 1.0], 2)",
         "m.dynamic_partition([1, 2, 3, 4], [0, 1, 0, 1], 2)", "m.unravel_index([0, 5, 3], [2, 3])", traced=True)



def nn_cases() -> None:
    many("m.nn.relu(F)", "m.nn.relu(I)", "m.nn.relu6([7.0, -1.0])", "m.nn.elu(F)", "m.nn.selu(D)", "m.nn.softplus(F)",
         "m.nn.softsign(F)", "m.nn.leaky_relu(F)", "m.nn.leaky_relu(F, alpha=0.5)", "m.nn.leaky_relu(I)",
         "m.nn.gelu(F)", "m.nn.gelu(F, approximate=True)", "m.nn.silu(F)", "m.nn.silu(F, beta=2.0)", "m.nn.swish(F)",
         "m.nn.crelu(F)", "m.nn.crelu(F, axis=0)", "m.nn.relu(H)", "m.nn.gelu(I)", "m.nn.sigmoid(I)",
         "m.nn.softmax(LOG)", "m.nn.softmax(LOG, axis=0)", "m.nn.log_softmax(LOG, -2)", "m.nn.softmax(LOG, 3)",
         "m.nn.bias_add(X4, [1.0, 2.0, 3.0])", "m.nn.bias_add(F, [1.0, 2.0, 3.0])", "m.nn.bias_add(F, [1.0, 2.0])",
         "m.nn.bias_add(np.zeros((1, 3, 2, 2), np.float32), [1.0, 2.0, 3.0], data_format='NCHW')",
         "m.nn.l2_loss(F)", "m.nn.l2_loss(I)", "m.nn.l2_normalize(F, axis=-1)",
         "m.nn.moments(R3, [0, 1])", "m.nn.moments(R3, axes=[-1], keepdims=True)", "m.nn.moments(I.astype('float64'), [0])",
         "m.nn.weighted_moments(F, [0], np.ones((2, 3), np.float32))",
         "m.nn.sufficient_statistics(F, [0])", "m.nn.normalize_moments(2.0, F[0], F[1] ** 2, None)",
         "m.nn.batch_normalization(F, 0.5, 2.0, 0.1, 1.5, 1e-3)", "m.nn.batch_normalization(F, V, V, None, None, 1e-3)",
         "m.nn.batch_norm_with_global_normalization(X4, [0.0] * 3, [1.0] * 3, [0.1] * 3, [2.0] * 3, 1e-3, True)",
         "m.nn.dropout(F, 0.0)", "m.nn.dropout(F, rate=1.0)", "m.nn.dropout(F, 1.5)",
         "m.nn.embedding_lookup(F, [1, 0, 1])", "m.nn.embedding_lookup(F, [[1], [0]])", "m.nn.embedding_lookup(F, 5)",
         "m.nn.embedding_lookup(F, [1], max_norm=1.0)",
         "m.nn.sigmoid_cross_entropy_with_logits(labels=F > 0, logits=F)",
         "m.nn.sigmoid_cross_entropy_with_logits(labels=(F > 0).astype('float32'), logits=F)",
         "m.nn.sigmoid_cross_entropy_with_logits(labels=[1.0, 0.0], logits=[0.5, -0.5])",
         "m.nn.weighted_cross_entropy_with_logits((F > 0).astype('float32'), F, 2.0)",
         "m.nn.softmax_cross_entropy_with_logits(labels=np.eye(4, 5, dtype=np.float32), logits=LOG)",
         "m.nn.softmax_cross_entropy_with_logits(np.eye(4, 5, dtype=np.float32), LOG)",
         "m.nn.softmax_cross_entropy_with_logits(labels=np.eye(5, 4, dtype=np.float32).T, logits=LOG.T, axis=0)",
         "m.nn.sparse_softmax_cross_entropy_with_logits(labels=LAB, logits=LOG)",
         "m.nn.sparse_softmax_cross_entropy_with_logits(LAB.astype('int64'), LOG)",
         "m.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 9, 1, 2], logits=LOG)",
         "m.nn.sparse_softmax_cross_entropy_with_logits(labels=LAB[:3], logits=LOG)",
         "m.nn.log_poisson_loss(F, np.abs(F))", "m.nn.log_poisson_loss(F, np.abs(F), compute_full_loss=True)",
         "m.nn.compute_average_loss([1.0, 2.0, 3.0])", "m.nn.compute_average_loss([1.0, 2.0], global_batch_size=4)",
         "m.nn.compute_average_loss([1.0, 2.0], sample_weight=[0.5, 1.0])", "m.nn.scale_regularization_loss(2.0)",
         "m.nn.conv2d(X4, W4, 1, 'SAME')", "m.nn.conv2d(X4, W4, [1, 2, 2, 1], 'VALID')", "m.nn.conv2d(X4, W4, 2, 'SAME')",
         "m.nn.conv2d(X4, W4, [2, 1], 'VALID', dilations=[1, 2])", "m.nn.conv2d(X4, W4, 1, [[0, 0], [1, 2], [0, 1], [0, 0]])",
         "m.nn.conv2d(X4, W4, 1, 'same')", "m.nn.conv2d(X4, W4[:, :, :2], 1, 'SAME')", "m.nn.conv2d(X4.astype('float64'), W4, 1, 'SAME')",
         "m.nn.convolution(X4, W4, padding='SAME')", "m.nn.convolution(X3, W3, strides=2, padding='VALID')",
         "m.nn.convolution(X5, W5, padding='SAME', dilations=2)",
         "m.nn.conv1d(X3, W3, 1, 'SAME')", "m.nn.conv1d(X3, W3, stride=2, padding='VALID')", "m.nn.conv1d(X3, W3, 1, 'SAME', dilations=2)",
         "m.nn.conv3d(X5, W5, [1, 1, 1, 1, 1], 'SAME')", "m.nn.conv3d(X5, W5, [1, 2, 2, 2, 1], 'VALID')",
         "m.nn.conv2d_transpose(X4[..., :2], W4, [2, 10, 10, 3], 2, 'SAME')",
         "m.nn.conv2d_transpose(X4[..., :2], W4, [2, 11, 11, 3], [1, 2, 2, 1], 'VALID')",
         "m.nn.conv2d_transpose(X4[..., :2], W4, m.constant([2, 5, 5, 3]), 1, 'SAME')",
         "m.nn.conv1d_transpose(X3[..., :2], W3, [2, 14, 3], 2, 'SAME')",
         "m.nn.conv3d_transpose(X5[..., :3], W5, [1, 8, 8, 8, 2], 2, 'SAME')",
         "m.nn.conv_transpose(X4[..., :2], W4, [2, 10, 10, 3], 2, 'SAME')",
         "m.nn.atrous_conv2d(X4, W4, 2, 'SAME')", "m.nn.atrous_conv2d(X4, W4, 1, 'VALID')",
         "m.nn.depthwise_conv2d(X4, W4[..., :1].repeat(2, -1), [1, 1, 1, 1], 'SAME')",
         "m.nn.depthwise_conv2d(X4, W4, [1, 2, 2, 1], 'VALID')", "m.nn.depthwise_conv2d(X4, W4, [1, 1, 1, 1], 'SAME', dilations=[2, 2])",
         "m.nn.separable_conv2d(X4, W4[..., :1].repeat(2, -1), np.ones((1, 1, 6, 4), np.float32), [1, 1, 1, 1], 'SAME')",
         "m.nn.depthwise_conv2d_backprop_input([2, 5, 5, 3], W4, np.ones((2, 5, 5, 6), np.float32), [1, 1, 1, 1], 'SAME')",
         "m.nn.depthwise_conv2d_backprop_filter(X4, [3, 3, 3, 2], np.ones((2, 5, 5, 6), np.float32), [1, 1, 1, 1], 'SAME')",
         "m.nn.max_pool(X4, 2, 2, 'VALID')", "m.nn.max_pool(X4, [3, 3], [2, 2], 'SAME')", "m.nn.max_pool(X3, 2, 1, 'VALID')",
         "m.nn.max_pool(X5, 2, 2, 'SAME')", "m.nn.avg_pool(X4, 3, 2, 'SAME')", "m.nn.avg_pool(X3, [2], [1], 'SAME')",
         "m.nn.avg_pool(X5, 2, 1, 'VALID')", "m.nn.max_pool2d(X4, 2, 1, 'SAME')", "m.nn.avg_pool2d(X4, 2, 1, 'SAME')",
         "m.nn.max_pool1d(X3, 3, 2, 'SAME')", "m.nn.avg_pool1d(X3, 3, 2, 'VALID')", "m.nn.max_pool3d(X5, 2, 2, 'VALID')",
         "m.nn.avg_pool3d(X5, 3, 1, 'SAME')", "m.nn.max_pool(X4, 2, 2, 'VALID', data_format='NCHW')",
         "m.nn.max_pool_with_argmax(X4, 2, 2, 'VALID')", "m.nn.max_pool_with_argmax(X4, 2, 2, 'SAME', include_batch_in_index=True)",
         "m.nn.max_pool_with_argmax(X4, 2, 2, 'VALID', output_dtype=m.int32)",
         "m.nn.pool(X4, [2, 2], 'MAX', 'SAME')", "m.nn.pool(X4, [2, 2], 'AVG', 'VALID', strides=[2, 2])",
         "m.nn.pool(X4, [2, 2], 'MAX', 'VALID', dilations=[2, 2])",
         "m.nn.local_response_normalization(X4)", "m.nn.lrn(X4, depth_radius=1, bias=2.0, alpha=0.5, beta=0.75)",
         "m.nn.depth_to_space(np.arange(32.0).reshape(1, 2, 2, 8), 2)", "m.nn.space_to_depth(np.arange(32.0).reshape(1, 4, 4, 2), 2)",
         "m.nn.dilation2d(X4, W4[..., 0], [1, 1, 1, 1], 'SAME', 'NHWC', [1, 1, 1, 1])",
         "m.nn.erosion2d(X4, W4[..., 0], [1, 1, 1, 1], 'SAME', 'NHWC', [1, 1, 1, 1])",
         "m.nn.approx_max_k(LOG, 2)", "m.nn.approx_min_k(LOG, 2, reduction_dimension=0)",
         "m.nn.in_top_k(LOG, LAB, 1)", "m.nn.zero_fraction(F)")
    many("m.nn.conv2d(X4, W4, [2, 1], 'VALID', dilations=[1, 2])", "m.nn.max_pool(X4, [3, 3], [2, 2], 'SAME')",
         "m.nn.moments(R3, [0, 1])", "m.nn.softmax_cross_entropy_with_logits(np.eye(4, 5, dtype=np.float32), LOG)",
         "m.nn.sparse_softmax_cross_entropy_with_logits(LAB, LOG)", "m.nn.conv2d_transpose(X4[..., :2], W4, [2, 10, 10, 3], 2, 'SAME')",
         "m.nn.bias_add(X4, [1.0, 2.0, 3.0])", "m.nn.gelu(F, approximate=True)", traced=True)


def linalg_cases() -> None:
    FIX["SQ"] = np.array([[2.0, 1.0, 0.5], [0.5, 3.0, 1.0], [1.0, 0.2, 4.0]])
    FIX["SQ32"] = FIX["SQ"].astype(np.float32)
    FIX["SQC"] = (FIX["SQ"] + 0.5j * FIX["SQ"].T).astype(np.complex128)
    FIX["RECT"] = _r.standard_normal((4, 3))
    FIX["B3"] = _r.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    many("m.linalg.det(SQ)", "m.linalg.det(SQ32)", "m.linalg.det(B3)", "m.linalg.det(SQC)", "m.linalg.det(RECT)",
         "m.linalg.logdet(M3)", "m.linalg.slogdet(SQ)", "m.linalg.slogdet(-SQ)", "m.linalg.inv(SQ)", "m.linalg.inv(B3)",
         "m.linalg.inv(SQ, adjoint=True)", "m.linalg.inv(SQC)", "m.linalg.cholesky(M3)", "m.linalg.cholesky(M)",
         "m.linalg.cholesky_solve(np.linalg.cholesky(M3), np.ones((3, 2)))", "m.linalg.solve(SQ, np.ones((3, 1)))",
         "m.linalg.solve(SQ, np.ones((3, 2)), adjoint=True)", "m.linalg.solve(SQ, np.ones(3))",
         "m.linalg.triangular_solve(np.tril(SQ), np.ones((3, 1)))", "m.linalg.triangular_solve(np.triu(SQ), np.ones((3, 1)), lower=False)",
         "m.linalg.triangular_solve(np.tril(SQ), np.ones((3, 1)), adjoint=True)",
         "m.linalg.banded_triangular_solve(np.array([[1.0, 2, 3], [4.0, 5, 6]]), np.ones((3, 1)))",
         "m.linalg.lstsq(RECT, np.ones((4, 1)))", "m.linalg.lstsq(RECT, np.ones((4, 1)), l2_regularizer=0.1)",
         "m.linalg.lstsq(RECT, np.ones((4, 1)), fast=False)", "m.linalg.pinv(RECT)", "m.linalg.pinv(RECT, rcond=0.5)",
         "m.linalg.matrix_rank(RECT)", "m.linalg.matrix_rank(np.ones((3, 3)))", "m.linalg.matrix_rank(np.ones((3, 3)), tol=0.1)",
         "m.linalg.qr(RECT)", "m.linalg.qr(RECT, full_matrices=True)", "m.linalg.svd(RECT)", "m.linalg.svd(RECT, compute_uv=False)",
         "m.linalg.svd(RECT, full_matrices=True)", "m.linalg.svd(SQC, compute_uv=False)",
         "m.linalg.eigh(M3)", "m.linalg.eigvalsh(M3)", "m.linalg.eigvalsh(SQC + SQC.conj().T)", "m.linalg.eigvals(SQ)",
         "m.linalg.eig(M3)", "m.linalg.lu(SQ)", "m.linalg.lu_reconstruct(*np.linalg.qr(SQ)[:1], [0, 1, 2])",
         "m.linalg.lu_solve(*m.linalg.lu(SQ), np.ones((3, 1)))", "m.linalg.lu_matrix_inverse(*m.linalg.lu(SQ))",
         "m.linalg.norm(SQ)", "m.linalg.norm(SQ, ord=1)", "m.linalg.norm(SQ, 'fro', axis=[0, 1])", "m.linalg.norm(SQ, 2, axis=[-2, -1])",
         "m.linalg.norm(SQ, np.inf, axis=[0, 1])", "m.linalg.norm(SQ, axis=1)", "m.linalg.norm(SQ, 1, axis=0, keepdims=True)",
         "m.linalg.norm(V, ord=np.inf)", "m.linalg.norm(V, ord=3)", "m.linalg.norm(SQC)", "m.norm(SQ, axis=-1)", "m.norm(I)",
         "m.linalg.norm(SQ, ord='nuc', axis=[0, 1])", "m.linalg.norm(SQ, ord=0.5)", "m.linalg.norm(SQ, ord=-1)",
         "m.linalg.normalize(SQ)", "m.linalg.normalize(SQ, axis=0)", "m.linalg.normalize(SQ, ord=1, axis=-1)",
         "m.linalg.global_norm([SQ, SQ])", "m.linalg.global_norm([SQ32, None])",
         "m.linalg.trace(SQ)", "m.linalg.trace(B3)", "m.linalg.trace(RECT)", "m.linalg.trace(I)",
         "m.linalg.diag([1.0, 2.0])", "m.linalg.diag([1.0, 2.0], k=1)", "m.linalg.diag([1.0, 2.0], num_rows=3, num_cols=4)",
         "m.linalg.diag([1, 2], padding_value=9)", "m.linalg.diag([[1.0, 2.0], [3.0, 4.0]], k=(-1, 0))",
         "m.linalg.diag_part(SQ)", "m.linalg.diag_part(RECT, k=-1)", "m.linalg.diag_part(SQ, k=(-1, 1))",
         "m.linalg.diag_part(SQ, k=1, padding_value=7)", "m.linalg.set_diag(SQ, [9.0, 8.0, 7.0])",
         "m.linalg.set_diag(SQ, [9.0, 8.0], k=1)", "m.linalg.band_part(SQ, 0, -1)", "m.linalg.band_part(SQ, 1, 0)",
         "m.linalg.band_part(B3, -1, 0)", "m.linalg.tensor_diag([1, 2])", "m.linalg.tensor_diag(diagonal=[[1, 2], [3, 4]])",
         "m.linalg.tensor_diag_part(np.diag([1.0, 2.0]))", "m.linalg.cross([1.0, 0, 0], [0.0, 1, 0])",
         "m.linalg.cross([[1, 0, 0]], [[0, 1, 0]])", "m.linalg.adjoint(SQC)", "m.linalg.matrix_transpose(SQC, conjugate=True)",
         "m.linalg.sqrtm(M3)", "m.linalg.matrix_square_root(M3)" if hasattr(tf.linalg, "matrix_square_root") else "m.linalg.sqrtm(M3)",
         "m.linalg.eye(2, 3, [2])", "m.linalg.l2_normalize(SQ, 0)", "m.linalg.matvec(SQ, [1.0, 2.0, 3.0], adjoint_a=True)",
         "m.linalg.tensordot(SQ, SQ, 1)", "m.linalg.einsum('ij,jk', SQ, SQ)",
         "m.linalg.det(I)", "m.linalg.inv(I)", "m.linalg.det(H)", "m.linalg.inv(SQ[:2])", "m.linalg.cholesky(-M3)")
    many("m.linalg.svd(RECT)", "m.linalg.qr(RECT)", "m.linalg.norm(SQ, ord=1)", "m.linalg.slogdet(SQ)", "m.linalg.eigh(M3)",
         "m.linalg.diag([1.0, 2.0], k=1)", "m.linalg.band_part(SQ, 1, 0)", traced=True)


def random_cases() -> None:
    for shape in ("[3, 4]", "[2]", "[]", "[0, 3]", "m.constant([2, 2])"):
        for seed in ("[1, 2]", "(7, 0)", "m.constant([3, 4], m.int64)", "np.array([5, 6], np.int32)"):
            many(f"m.random.stateless_uniform({shape}, {seed})", f"m.random.stateless_normal({shape}, {seed})",
                 f"m.random.stateless_truncated_normal({shape}, {seed})")
    many("m.random.stateless_uniform([5], [1, 2], dtype=m.float64)", "m.random.stateless_uniform([5], [1, 2], minval=-2.0, maxval=3.0)",
         "m.random.stateless_uniform([5], [1, 2], minval=0, maxval=10, dtype=m.int32)",
         "m.random.stateless_uniform([5], [1, 2], minval=0, maxval=10, dtype=m.int64)",
         "m.random.stateless_uniform([5], [1, 2], dtype=m.int32)",
         "m.random.stateless_uniform([5], [1, 2], minval=None, maxval=None, dtype=m.int32)",
         "m.random.stateless_uniform([5], [1, 2], dtype=m.float16)", "m.random.stateless_uniform([5], [1, 2], dtype=m.bfloat16)",
         "m.random.stateless_uniform([5], [1, 2], dtype=m.uint32, minval=None, maxval=None)",
         "m.random.stateless_uniform([5], [1, 2], alg='philox')", "m.random.stateless_uniform([5], [1, 2], alg='threefry')",
         "m.random.stateless_uniform([5], [1, 2], alg='auto_select')", "m.random.stateless_uniform([5], [1, 2, 3])",
         "m.random.stateless_normal([5], [1, 2], mean=1.0, stddev=2.0, dtype=m.float64)",
         "m.random.stateless_normal([5], [1, 2], mean=[1.0] * 5)", "m.random.stateless_normal([5], [1, 2], dtype=m.float16)",
         "m.random.stateless_truncated_normal([5], [1, 2], mean=1.0, stddev=3.0)",
         "m.random.stateless_categorical(np.log([[0.5, 0.5], [0.1, 0.9]]), 6, [1, 2])",
         "m.random.stateless_categorical(np.log([[0.5, 0.5]]), 4, [1, 2], dtype=m.int32)",
         "m.random.stateless_binomial([4], [1, 2], counts=[10.0, 20, 30, 40], probs=0.5)",
         "m.random.stateless_binomial([2, 3], [1, 2], counts=5, probs=[0.1, 0.5, 0.9], output_dtype=m.float32)",
         "m.random.stateless_gamma([4], [1, 2], alpha=[1.0, 2.0, 0.5, 3.0])", "m.random.stateless_gamma([3, 2], [1, 2], alpha=[1.0, 2.0], beta=2.0)",
         "m.random.stateless_poisson([4], [1, 2], lam=[1.0, 5.0, 0.5, 3.0])", "m.random.stateless_poisson([4], [1, 2], lam=3.0, dtype=m.int64)",
         "m.random.stateless_uniform([5], seed=[1, 2], name='u')")
    many("m.random.stateless_uniform([3, 4], [1, 2])", "m.random.stateless_normal([3], m.constant([5, 6]))",
         "m.random.stateless_categorical(np.log([[0.5, 0.5]]), 4, [1, 2])", traced=True)


def image_cases() -> None:
    many("m.image.flip_left_right(IMG)", "m.image.flip_left_right(IMG3)", "m.image.flip_up_down(IMG8)",
         "m.image.rot90(IMG3)", "m.image.rot90(IMG, k=3)", "m.image.rot90(IMG3, -1)", "m.image.rot90(IMG, 2)",
         "m.image.transpose(IMG3)", "m.image.transpose(IMG)", "m.image.transpose(IMG8, name='t')",
         "m.image.crop_to_bounding_box(IMG, 1, 2, 2, 3)", "m.image.crop_to_bounding_box(IMG3, 0, 0, 5, 3)",
         "m.image.pad_to_bounding_box(IMG, 1, 2, 6, 9)", "m.image.pad_to_bounding_box(IMG8, 0, 0, 4, 6)",
         "m.image.central_crop(IMG, 0.5)", "m.image.central_crop(IMG3, 0.75)", "m.image.central_crop(IMG3, 1.0)",
         "m.image.central_crop(IMG3, 0.0)", "m.image.rgb_to_grayscale(IMG)", "m.image.rgb_to_grayscale(IMG8)",
         "m.image.grayscale_to_rgb(IMG[..., :1])", "m.image.convert_image_dtype(IMG8, m.float32)",
         "m.image.convert_image_dtype(IMG, m.uint8)", "m.image.convert_image_dtype(IMG, m.uint8, saturate=True)",
         "m.image.convert_image_dtype(IMG8, m.int32)", "m.image.convert_image_dtype(IMG8, m.float16)",
         "m.image.convert_image_dtype(IMG, m.float64)", "m.image.convert_image_dtype(IMG8.astype('int16'), m.uint8)",
         "m.image.convert_image_dtype(IMG * 2 - 0.5, m.int16, saturate=True)",
         "m.image.per_image_standardization(IMG)", "m.image.per_image_standardization(IMG8)",
         "m.image.adjust_brightness(IMG, 0.1)", "m.image.adjust_brightness(IMG8, 0.1)", "m.image.adjust_contrast(IMG, 2.0)",
         "m.image.adjust_contrast(IMG8, 0.5)", "m.image.adjust_saturation(IMG, 1.5)", "m.image.adjust_saturation(IMG8, 0.5)",
         "m.image.adjust_hue(IMG, 0.2)", "m.image.adjust_hue(IMG8, -0.3)", "m.image.adjust_hue(IMG, 1.5)",
         "m.image.rgb_to_hsv(IMG)", "m.image.hsv_to_rgb(IMG)", "m.image.rgb_to_hsv(IMG.astype('float64'))",
         "m.image.resize(IMG, [8, 12])", "m.image.resize(IMG3, [2, 3])", "m.image.resize(IMG8, [8, 12])",
         "m.image.resize(IMG, [8, 12], method='nearest')", "m.image.resize(IMG, [3, 5], method='bicubic')",
         "m.image.resize(IMG, [3, 5], method='area')", "m.image.resize(IMG, [7, 9], method=m.image.ResizeMethod.BILINEAR)",
         "m.image.resize(IMG, [8, 8], preserve_aspect_ratio=True)", "m.image.resize(IMG, [7, 9], antialias=True)",
         "m.image.resize(IMG, [2, 3], method='lanczos3')", "m.image.resize(IMG, [2, 3], method='gaussian')",
         "m.image.resize(IMG8, [2, 3], method='nearest')", "m.image.resize(IMG, m.constant([5, 5]))")
    many("m.image.resize(IMG, [8, 12])", "m.image.rot90(IMG, k=3)", "m.image.adjust_hue(IMG, 0.2)",
         "m.image.convert_image_dtype(IMG8, m.float32)", "m.image.transpose(IMG)", traced=True)


def strings_cases() -> None:
    many("m.strings.length(S)", "m.strings.length(['abc', 'é'])", "m.strings.length(['é'], unit='UTF8_CHAR')",
         "m.strings.lower(S)", "m.strings.upper(S)", "m.strings.strip(S)", "m.strings.join([S, S])",
         "m.strings.join([S, 'x'], separator='-')", "m.strings.reduce_join(S)", "m.strings.reduce_join(S, separator=',')",
         "m.strings.reduce_join([['a', 'b'], ['c', 'd']], axis=1)", "m.strings.reduce_join([['a', 'b'], ['c', 'd']], -1, keepdims=True)",
         "m.strings.reduce_join([['a', 'b'], ['c', 'd']], axis=0, separator='+')",
         "m.strings.regex_full_match(S, 'H.*')", "m.strings.regex_replace(S, 'l+', 'L')",
         "m.strings.regex_replace(S, 'l', 'L', replace_global=False)", "m.strings.substr(S, 1, 3)",
         "m.strings.substr(S, -3, 2)", "m.strings.substr(S, [0, 1, 2], 2)", "m.strings.substr(['é'], 0, 1, unit='UTF8_CHAR')",
         "m.strings.substr(S, 10, 2)", "m.strings.to_number(['1.5', '-2'])", "m.strings.to_number(['1', '2'], out_type=m.int32)",
         "m.strings.to_number(['1', '2'], m.int64)", "m.strings.to_number(['x'])", "m.strings.to_number(['1.5'], m.float64)",
         "m.strings.to_hash_bucket_fast(S, 10)", "m.strings.to_hash_bucket_strong(S, 10, [1, 2])",
         "m.strings.as_string([1, 2])", "m.strings.as_string([1.5, 2.25])", "m.strings.as_string([1.5], precision=3)",
         "m.strings.as_string([True])", "m.strings.as_string([3], width=4, fill='0')", "m.strings.as_string([1e10], scientific=True)",
         "m.strings.as_string([1.5 + 2j])", "m.strings.as_string(np.array([1], np.int8))", "m.strings.length(3)",
         "m.strings.lower(3)")
    many("m.strings.length(S)", "m.strings.reduce_join(S, separator=',')", "m.strings.to_number(['1.5', '-2'])",
         "m.strings.as_string([1.5, 2.25])", traced=True)


def nest_cases() -> None:
    many("m.nest.flatten({'b': [1, 2], 'a': (3, {'c': 4})})", "m.nest.flatten(None)", "m.nest.flatten(3)",
         "m.nest.flatten([F, [I]])", "m.nest.flatten({'b': 1, 'a': 2})",
         "m.nest.pack_sequence_as({'b': [0, 0], 'a': 0}, [1, 2, 3])", "m.nest.pack_sequence_as([0, (0, 0)], [1, 2, 3])",
         "m.nest.pack_sequence_as(0, [5])", "m.nest.pack_sequence_as([0, 0], [1])",
         "m.nest.map_structure(lambda x, y: x + y, [1, (2, 3)], [10, (20, 30)])",
         "m.nest.map_structure(lambda x: x * 2, {'a': 1, 'b': [2]})", "m.nest.map_structure(lambda x: x, [1], (1,))",
         "m.nest.map_structure(lambda x, y: x, [1], [1, 2])", "m.nest.map_structure(lambda x: x, [1], check_types=False)",
         "m.nest.is_nested([1])", "m.nest.is_nested(F)", "m.nest.is_nested({})", "m.nest.is_nested('ab')",
         "m.nest.is_nested((1,))", "m.nest.assert_same_structure([1, (2, 3)], [4, (5, 6)])",
         "m.nest.assert_same_structure([1, (2, 3)], [4, [5, 6]])", "m.nest.assert_same_structure([1, (2, 3)], [4, [5, 6]], check_types=False)",
         "m.nest.assert_same_structure([1], [1, 2])", "m.nest.flatten([None, [None]])",
         "m.nest.flatten({'a': None})", "m.nest.map_structure(lambda x: x, (1, None))")


def debugging_cases() -> None:
    many("m.debugging.assert_equal(1, 1)", "m.debugging.assert_equal([1, 2], [1, 3])", "m.debugging.assert_equal(F, F)",
         "m.debugging.assert_equal(F, 1.0)", "m.debugging.assert_greater([2, 3], 1)", "m.debugging.assert_greater([2, 3], 2)",
         "m.debugging.assert_less(F, 10.0)", "m.debugging.assert_less_equal([1, 2], [1, 2])", "m.debugging.assert_greater_equal([1], [2])",
         "m.debugging.assert_none_equal([1, 2], [3, 4])", "m.debugging.assert_none_equal([1, 2], [1, 4])",
         "m.debugging.assert_none_equal([1, 2], [3, 4], 3, 'msg')", "m.debugging.assert_near(F, F + 1e-7)",
         "m.debugging.assert_near(F, F + 1.0)", "m.debugging.assert_near(F, F + 0.05, atol=0.1)",
         "m.debugging.assert_rank(F, 2)", "m.debugging.assert_rank(F, 3)", "m.debugging.assert_rank(F, m.constant(2))",
         "m.debugging.assert_all_finite(F, 'bad')", "m.debugging.assert_all_finite([1.0, np.nan], 'bad')",
         "m.debugging.assert_all_finite(x=F, message='m')", "m.debugging.check_numerics(tensor=F, message='m')",
         "m.debugging.check_numerics([np.inf], 'bad')", "m.debugging.check_numerics(I, 'ints')",
         "m.debugging.Assert(True, ['x'])", "m.debugging.Assert(False, ['x', 1])", "m.debugging.Assert([True, False], ['x'])",
         "m.debugging.assert_equal(1, 1, message='m', summarize=2, name='a')", "m.debugging.assert_equal([1, 2], [1, 2, 3])",
         "m.debugging.assert_equal(F, I)", "m.debugging.assert_equal('a', 'a')", "m.assert_equal(1, 1)", "m.assert_rank(F, 2)")


def dtypes_cases() -> None:
    for n in ("float32", "float16", "half", "double", "bfloat16", "int8", "uint8", "uint16", "uint32", "uint64", "int16",
              "int32", "int64", "bool", "complex64", "complex128", "string"):
        many(f"m.dtypes.{n}", f"m.dtypes.{n}.name", f"m.dtypes.{n}.is_floating", f"m.dtypes.{n}.is_integer",
             f"m.dtypes.{n}.is_complex", f"m.dtypes.{n}.is_bool", f"m.dtypes.{n}.is_unsigned", f"m.dtypes.{n}.size",
             f"m.dtypes.{n}.min" if n not in ("string", "bool", "complex64", "complex128") else f"m.dtypes.{n}.name",
             f"m.dtypes.{n}.max" if n not in ("string", "bool", "complex64", "complex128") else f"m.dtypes.{n}.name",
             f"m.dtypes.{n}.real_dtype", f"m.dtypes.{n}.base_dtype", f"m.dtypes.{n}.is_numpy_compatible",
             f"m.dtypes.{n}.as_numpy_dtype", f"m.as_dtype('{n}')", f"m.dtypes.{n} == '{n}'",
             f"m.dtypes.{n} == np.dtype('{n}') if '{n}' not in ('half', 'double', 'bfloat16', 'string') else True",
             f"m.dtypes.{n}.as_datatype_enum")
    many("m.as_dtype(np.float32)", "m.as_dtype(np.dtype('int64'))", "m.as_dtype(float)", "m.as_dtype(int)",
         "m.as_dtype(bool)", "m.as_dtype('float')", "m.as_dtype('bogus')", "m.as_dtype(1)", "m.as_dtype(type_value=m.int8)",
         "m.dtypes.as_dtype('int32')", "m.as_dtype(np.str_)", "m.as_dtype(object)", "m.float32 == m.float64", "m.int32 != 'int64'",
         "m.dtypes.float32.is_compatible_with(m.float32)", "m.dtypes.float32.limits", "m.dtypes.uint8.limits",
         "m.dtypes.cast(F, m.int8)", "m.dtypes.saturate_cast(F, m.uint8)", "m.dtypes.complex(F, F)", "m.DType(1)",
         "m.dtypes.DType(3).name", "hash(m.float32) == hash(m.dtypes.float32)", "m.float32 in {m.float32: 1}",
         "str(m.float32)", "repr(m.int8)")


SECTIONS = [elementwise_cases, reduce_cases, constructor_cases, cast_cases, operator_cases, variable_cases,
            array_cases, nn_cases, linalg_cases, random_cases, image_cases, strings_cases, nest_cases, debugging_cases,
            dtypes_cases]

if __name__ == "__main__":
    for section in SECTIONS:
        if not ONLY or section.__name__.removesuffix("_cases") in ONLY:
            section()
    print(f"\n{COUNTS['cases']} cases; " + ", ".join(f"{k} {v}" for k, v in COUNTS.items() if k != "cases"))
    sys.exit(1 if PROBLEMS else 0)
