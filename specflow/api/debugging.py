"""``sf.debugging`` (and TensorFlow's top-level ``sf.Assert``, ``sf.assert_equal``, ...): checks
on tensors' values, each an ``Assert`` op over the comparison, as TensorFlow builds them. Eagerly
a failed check raises at once (an OpError naming the data); inside sf.function the Assert is a
stateful op of the trace, run in program order, failing the call that breaks it."""

from __future__ import annotations

import numpy as np

from specflow.api.op_functions import call, convert_to_tensor
from specflow.api.tensor import Tensor
from specflow.graph import dtypes


def _t(x, dtype=None):
    return x if isinstance(x, Tensor) else convert_to_tensor(x, dtype)


def Assert(condition, data, summarize=None, name=None):  # noqa: N802 (TensorFlow's name)
    """Fails when ``condition`` is false, showing ``data`` (tensors, strings)."""
    data = [np.array(d) if isinstance(d, str) else d for d in data]
    return call("Assert", _t(condition), data, summarize=3 if summarize is None else int(summarize), name=name)


def _all(x):
    return call("All", x, np.arange(x.shape.rank, dtype=np.int32)) if x.shape.rank else x


def _compare(op: str, symbol: str, pyname: str):
    def check(x, y, message=None, summarize=None, name=None):
        x = _t(x)
        y = _t(y, x.dtype)
        text = f"Condition x {symbol} y did not hold element-wise:"
        data = ([message] if message else []) + [text, "x = ", x, "y = ", y]
        return Assert(_all(call(op, x, y)), data, summarize=summarize, name=name)

    check.__name__ = pyname
    check.__doc__ = f"TensorFlow's ``tf.debugging.{pyname}``: every element of x {symbol} y."
    return check


assert_equal = _compare("Equal", "==", "assert_equal")
_assert_none_equal = _compare("NotEqual", "!=", "assert_none_equal")


def assert_none_equal(x, y, summarize=None, message=None, name=None):
    """TF's ``tf.debugging.assert_none_equal`` (summarize before message, as TF orders them)."""
    return _assert_none_equal(x, y, message=message, summarize=summarize, name=name)

assert_greater = _compare("Greater", ">", "assert_greater")
assert_greater_equal = _compare("GreaterEqual", ">=", "assert_greater_equal")
assert_less = _compare("Less", "<", "assert_less")
assert_less_equal = _compare("LessEqual", "<=", "assert_less_equal")


def assert_near(x, y, rtol=None, atol=None, message=None, summarize=None, name=None):
    """|x - y| <= atol + rtol * |y| everywhere (TensorFlow's default tolerances: 10 float eps)."""
    x = _t(x)
    y = _t(y, x.dtype)
    eps = np.finfo(x.dtype.numpy).eps if x.dtype.is_floating else 0
    rtol = 10 * eps if rtol is None else rtol
    atol = 10 * eps if atol is None else atol
    tol = call("AddV2", np.asarray(atol, x.dtype.numpy), call("Mul", np.asarray(rtol, x.dtype.numpy), call("Abs", y)))
    near = call("LessEqual", call("Abs", call("Sub", x, y)), tol)
    data = ([message] if message else []) + ["x and y not equal to tolerance rtol = ", np.asarray(rtol),
                                             ", atol = ", np.asarray(atol), "x = ", x, "y = ", y]
    return Assert(_all(near), data, summarize=summarize, name=name)


def assert_rank(x, rank, message=None, name=None):
    """``x`` has rank ``rank``: checked now when the rank is known, else when it runs."""
    x = _t(x)
    if x.shape.rank is not None and not isinstance(rank, Tensor):
        if x.shape.rank != int(rank):
            raise ValueError(f"{message + ' ' if message else ''}Tensor must have rank {int(rank)}; received rank "
                             f"{x.shape.rank}, shape {x.shape}")
        return None
    data = ([message] if message else []) + ["Tensor must have rank", rank, "received rank", call("Rank", x)]
    return Assert(call("Equal", call("Rank", x), _t(rank, dtypes.int32)), data, name=name)


def assert_all_finite(x, message, name=None):
    """``x`` itself, checked to hold no NaN or Inf (CheckNumerics)."""
    return call("CheckNumerics", _t(x), message=str(message), name=name)


def check_numerics(tensor, message, name=None):
    """TF's ``tf.debugging.check_numerics``: ``tensor``, checked to hold no NaN or Inf."""
    return assert_all_finite(tensor, message, name=name)

NAMES = ["Assert", "assert_equal", "assert_none_equal", "assert_greater", "assert_greater_equal", "assert_less",
         "assert_less_equal", "assert_near", "assert_rank", "assert_all_finite", "check_numerics"]
