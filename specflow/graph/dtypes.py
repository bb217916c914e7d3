"""Tensor element types, named as in TensorFlow's Python API, with TF's DataType enum values."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

try:  # bfloat16 as a numpy dtype (ml_dtypes: TF's and JAX's own; round-to-nearest-even casts)
    from ml_dtypes import bfloat16 as _np_bfloat16
except ImportError:  # pragma: no cover - ml_dtypes is a dependency
    _np_bfloat16 = None


@dataclass(frozen=True, eq=False)
class DType:
    name: str
    tf_enum: int  # TensorFlow's DataType enum (types.proto)
    np_type: type | None  # numpy scalar type; object for strings, None for resource

    @property
    def numpy(self) -> np.dtype:
        if self.np_type is None:
            raise TypeError(f"{self.name} has no numpy equivalent")
        return np.dtype(self.np_type)

    @property
    def is_floating(self) -> bool:
        return self.name.startswith(("float", "bfloat"))

    @property
    def is_complex(self) -> bool:
        return self.name.startswith("complex")

    @property
    def is_integer(self) -> bool:
        return self.name.startswith(("int", "uint"))

    @property
    def is_bool(self) -> bool:
        return self.name == "bool"

    @property
    def is_numeric(self) -> bool:
        return self.is_floating or self.is_complex or self.is_integer

    @property
    def itemsize(self) -> int:
        """Bytes per element (8 for strings and resources: a pointer's worth)."""
        if self.np_type in (None, object):
            return 8
        return self.numpy.itemsize

    # TF's: a DType equals its name, Python type or numpy dtype (``x.dtype == "float32"``)
    def __eq__(self, other) -> bool:
        if other.__class__ is DType:
            return self is other
        if isinstance(other, (str, type, np.dtype)):
            try:
                return as_dtype(float32 if other is float else other) is self
            except TypeError:
                return False
        return NotImplemented

    def __ne__(self, other) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash(self.name)

    # TF's DType properties
    @property
    def as_numpy_dtype(self):
        return self.np_type

    @property
    def base_dtype(self) -> DType:
        return self

    @property
    def real_dtype(self) -> DType:
        return {"complex64": float32, "complex128": float64}.get(self.name, self)

    @property
    def is_unsigned(self) -> bool:
        return self.name.startswith("uint")

    @property
    def size(self) -> int:
        return self.itemsize

    @property
    def as_datatype_enum(self) -> int:
        return self.tf_enum

    @property
    def min(self):
        return _limits(self)[0]

    @property
    def max(self):
        return _limits(self)[1]

    @property
    def limits(self) -> tuple:
        return _limits(self)

    def is_compatible_with(self, other) -> bool:
        return as_dtype(other) is self

    def __repr__(self) -> str:
        return f"specflow.{self.name}"

    def __str__(self) -> str:
        return self.name

    def __reduce__(self):
        return (as_dtype, (self.name,))


bool_ = DType("bool", 10, np.bool_)
int8 = DType("int8", 6, np.int8)
int16 = DType("int16", 5, np.int16)
int32 = DType("int32", 3, np.int32)
int64 = DType("int64", 9, np.int64)
uint8 = DType("uint8", 4, np.uint8)
uint16 = DType("uint16", 17, np.uint16)
uint32 = DType("uint32", 22, np.uint32)
uint64 = DType("uint64", 23, np.uint64)
float16 = DType("float16", 19, np.float16)
# 8 exponent bits, 7 mantissa bits; arithmetic on it (ml_dtypes' ufuncs) computes in float32 and
# rounds each result to nearest even, as TF's CPU kernels do.
bfloat16 = DType("bfloat16", 14, _np_bfloat16)
float32 = DType("float32", 1, np.float32)
float64 = DType("float64", 2, np.float64)
complex64 = DType("complex64", 8, np.complex64)
complex128 = DType("complex128", 18, np.complex128)
string = DType("string", 7, object)
resource = DType("resource", 20, None)
# A scalar holding a Python object (TF's DT_VARIANT): a TensorList (ops/list_ops.py).
variant = DType("variant", 21, object)

ALL_DTYPES = (
    bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    float16, bfloat16, float32, float64, complex64, complex128, string, resource, variant,
)  # fmt: skip
_BY_NAME = {d.name: d for d in ALL_DTYPES}
# Aliases users and TensorFlow write.
_BY_NAME.update({"float": float32, "double": float64, "half": float16, "str": string, "bytes": string})
_BY_TF_ENUM = {d.tf_enum: d for d in ALL_DTYPES}

FLOATING = frozenset({float16, bfloat16, float32, float64})
COMPLEX = frozenset({complex64, complex128})
SIGNED_INTEGER = frozenset({int8, int16, int32, int64})
INTEGER = SIGNED_INTEGER | {uint8, uint16, uint32, uint64}
REAL = FLOATING | INTEGER  # numeric, orderable
NUMERIC = REAL | COMPLEX
ALL = frozenset(ALL_DTYPES) - {resource}

# Named groups usable in op definitions: "T: {numeric}".
GROUPS = {
    "float": FLOATING,
    "floating": FLOATING,
    "complex": COMPLEX,
    "signed": SIGNED_INTEGER,
    "int": INTEGER,
    "integer": INTEGER,
    "real": REAL,
    "numeric": NUMERIC,
    "all": ALL,
}


def _limits(dt: DType) -> tuple:
    if dt.is_bool:
        return (False, True)
    if dt.is_integer:
        info = np.iinfo(dt.numpy)
        return (int(info.min), int(info.max))
    if dt.is_floating:
        info = np.finfo(dt.numpy)
        return (float(info.min), float(info.max))
    raise TypeError(f"{dt.name} has no limits")


def as_dtype(value) -> DType:
    """Accepts a DType, a name (``"float32"``, ``"float"``), a TF enum int or a numpy dtype;
    Python's ``float`` is float32 (TF's rule; numpy's float64 stays float64)."""
    if isinstance(value, DType):
        return value
    if value is float:
        return float32
    if isinstance(value, str):
        try:
            return _BY_NAME[value]
        except KeyError:
            raise TypeError(f"unknown dtype '{value}'") from None
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return _BY_TF_ENUM[value]
        except KeyError:
            raise TypeError(f"unknown TensorFlow dtype enum {value}") from None
    try:
        npd = np.dtype(value)
    except TypeError:
        raise TypeError(f"cannot interpret {value!r} as a dtype") from None
    if npd.kind in ("O", "U", "S"):
        return string
    for d in ALL_DTYPES:
        if d.np_type not in (None, object) and np.dtype(d.np_type) == npd:
            return d
    raise TypeError(f"unsupported numpy dtype {npd}")


def dtype_of(value) -> DType:
    """The DType of an array: ``as_dtype`` of its numpy dtype, except that a 0-d object array
    holding something other than a string is a variant (a TensorList)."""
    dt = as_dtype(value.dtype)
    if dt is string and value.ndim == 0 and not isinstance(value.item(), (bytes, str)):
        return variant
    return dt


def python_number_dtype(arr: np.ndarray) -> np.dtype:
    """The numpy dtype TensorFlow gives ``arr`` when it was made from Python numbers: float32 for
    floats, int32 for ints (int64 only where a value needs it); any other dtype unchanged."""
    if arr.dtype == np.float64:
        return np.dtype(np.float32)
    if arr.dtype == np.int64 and (arr.size == 0 or (arr.min() >= -(2**31) and arr.max() < 2**31)):
        return np.dtype(np.int32)
    return arr.dtype


def dtype_names() -> list[str]:
    return [d.name for d in ALL_DTYPES]
