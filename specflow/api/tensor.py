"""sf.Tensor: an eager value (an array with its dtype and device) or, while a function is traced,
a symbolic tensor of the graph being built. Both take Python operators, mapped onto registered
ops (``a + b`` is AddV2, ``a @ b`` MatMul, ``a[1:, 0]`` StridedSlice).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from specflow.errors import GraphError
from specflow.graph.dtypes import DType
from specflow.graph.shapes import Shape


def _ops():
    from specflow.api import op_functions

    return op_functions


def numpy_value(a: np.ndarray):
    """What ``numpy()`` gives, as TensorFlow's: the array; a scalar as a numpy scalar, or ``bytes``
    for a string (a variant's or resource's 0-d object array stays an array)."""
    if a.ndim == 0 and (a.dtype.kind != "O" or isinstance(a[()], bytes)):
        return a[()]
    return a


class Tensor:
    """What every op function returns and accepts (as do numpy arrays and Python numbers)."""

    __slots__ = ()
    __array_priority__ = 100  # numpy defers `ndarray + Tensor` to Tensor.__radd__
    dtype: DType

    # --- operators (elementwise ones broadcast, as the ops do) ---------------------------------

    # (strings concatenate, as TF's ``+`` on string tensors)
    def __add__(self, o):
        return _ops().binary("StringJoin" if self.dtype.name == "string" else "AddV2", self, o)

    def __radd__(self, o):
        return _ops().binary("StringJoin" if self.dtype.name == "string" else "AddV2", o, self)

    def __sub__(self, o):
        return _ops().binary("Sub", self, o)

    def __rsub__(self, o):
        return _ops().binary("Sub", o, self)

    # (a bool tensor's ``*`` is TF's logical and)
    def __mul__(self, o):
        return _ops().binary("LogicalAnd" if self.dtype.is_bool else "Mul", self, o)

    def __rmul__(self, o):
        return _ops().binary("LogicalAnd" if self.dtype.is_bool else "Mul", o, self)

    def __truediv__(self, o):
        return _ops().truediv(self, o)

    def __rtruediv__(self, o):
        return _ops().truediv(o, self)

    def __floordiv__(self, o):
        return _ops().binary("FloorDiv", self, o)

    def __rfloordiv__(self, o):
        return _ops().binary("FloorDiv", o, self)

    def __mod__(self, o):
        return _ops().binary("FloorMod", self, o)

    def __rmod__(self, o):
        return _ops().binary("FloorMod", o, self)

    def __pow__(self, o):
        return _ops().binary("Pow", self, o)

    def __rpow__(self, o):
        return _ops().binary("Pow", o, self)

    def __matmul__(self, o):
        return _ops().matmul_any(self, o)

    def __rmatmul__(self, o):
        return _ops().matmul_any(o, self)

    def __neg__(self):
        return _ops().call("Neg", self)

    def __abs__(self):
        from specflow.api.tf_names import abs as tf_abs

        return tf_abs(self)

    def __lt__(self, o):
        return _ops().binary("Less", self, o)

    def __le__(self, o):
        return _ops().binary("LessEqual", self, o)

    def __gt__(self, o):
        return _ops().binary("Greater", self, o)

    def __ge__(self, o):
        return _ops().binary("GreaterEqual", self, o)

    # ``& | ^ ~`` are logical on bools and bitwise on integers, as TF's operators.
    def __and__(self, o):
        return _ops().bitwise("And", self, o)

    def __rand__(self, o):
        return _ops().bitwise("And", o, self)

    def __or__(self, o):
        return _ops().bitwise("Or", self, o)

    def __ror__(self, o):
        return _ops().bitwise("Or", o, self)

    def __xor__(self, o):
        return _ops().bitwise("Xor", self, o)

    def __rxor__(self, o):
        return _ops().bitwise("Xor", o, self)

    def __invert__(self):
        return _ops().call("Invert" if self.dtype.is_integer else "LogicalNot", self)

    # ``==`` and ``!=`` compare elementwise, as in TensorFlow 2 (Equal/NotEqual, broadcasting;
    # None or a value of another kind is simply unequal). Hashing stays by identity, so tensors
    # remain dict keys in tapes and caches: a dict compares keys by identity first and only calls
    # ``==`` for equal hashes, which distinct live tensors never have.
    def __eq__(self, o):
        return _ops().compare("Equal", self, o)

    def __ne__(self, o):
        return _ops().compare("NotEqual", self, o)

    __hash__ = object.__hash__

    def __getitem__(self, key):
        return _ops().getitem(self, key)

    def get_shape(self) -> Shape:
        return self.shape

    @property
    def ndim(self) -> int | None:
        return self.shape.rank

    @property
    def shape(self) -> Shape:  # pragma: no cover - overridden
        raise NotImplementedError


class EagerTensor(Tensor):
    """A computed value: ``value`` is a numpy (CPU) or cupy (GPU) array, never changed."""

    __slots__ = ("value", "dtype", "device", "__weakref__")

    def __init__(self, value: Any, dtype: DType, device: str):
        self.value = value
        self.dtype = dtype
        self.device = device

    @property
    def shape(self) -> Shape:
        return Shape(self.value.shape)

    def numpy(self):
        """The value: an array; a scalar as a numpy scalar (``bytes`` for a string), as
        TensorFlow's ``numpy()`` gives. ``np.asarray(t)`` is always an array."""
        return numpy_value(self._array())

    def _array(self) -> np.ndarray:
        v = self.value
        return v if type(v) is np.ndarray else (v.get() if hasattr(v, "get") else np.asarray(v))

    def __array__(self, dtype=None, copy=None):
        a = self._array()
        return a if dtype is None else a.astype(dtype, copy=False)

    def __len__(self) -> int:
        if self.value.ndim == 0:
            raise TypeError("len() of a scalar tensor")
        return self.value.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __bool__(self) -> bool:
        return bool(self.numpy())

    def __float__(self) -> float:
        return float(self.numpy())

    def __int__(self) -> int:
        return int(self.numpy())

    def __index__(self) -> int:
        return int(self.numpy())

    def __repr__(self) -> str:
        return f"<sf.Tensor: shape={self.shape}, dtype={self.dtype.name}, numpy={self.numpy()!r}>"


class GraphTensor(Tensor):
    """A tensor of the graph a ``sf.function`` is tracing: ``name`` is ``"node:k"``."""

    __slots__ = ("trace", "name", "dtype", "_shape", "__weakref__")

    def __init__(self, trace: Any, name: str, dtype: DType, shape: Shape):
        self.trace = trace
        self.name = name
        self.dtype = dtype
        self._shape = shape

    @property
    def shape(self) -> Shape:
        return self._shape

    def numpy(self):
        raise GraphError(f"tensor '{self.name}' is symbolic (inside sf.function): it has no value while "
                         "the function is traced; return it instead, or use sf.config.run_functions_eagerly")

    def __array__(self, dtype=None, copy=None):
        self.numpy()

    def __bool__(self) -> bool:
        raise GraphError(f"using tensor '{self.name}' as a Python bool inside sf.function: its value is "
                         "known only when the function runs; write the branch with sf.cond")

    def __iter__(self):
        n = self._shape[0] if self._shape.rank else None
        if n is None:
            raise GraphError(f"cannot iterate over tensor '{self.name}' of shape {self._shape} inside "
                             "sf.function (its length is known only when it runs); write the loop with "
                             "sf.while_loop, sf.map_fn or sf.scan")
        for i in range(n):
            yield self[i]

    def __len__(self) -> int:
        n = self._shape[0] if self._shape.rank else None
        if n is None:
            raise GraphError(f"len() of tensor '{self.name}' of shape {self._shape}: not known statically")
        return n

    def __repr__(self) -> str:
        return f"<sf.Tensor '{self.name}' shape={self._shape} dtype={self.dtype.name}>"
