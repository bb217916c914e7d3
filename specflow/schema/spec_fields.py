"""The spec language's building blocks: names, references, dtypes, devices and dimensions as
validated field types, and ``StrictModel`` (strict, unknown keys reported with a did-you-mean),
which every model in ``models.py`` and the train config derive from."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    PlainValidator,
    TypeAdapter,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

from specflow.errors import DeviceError, did_you_mean
from specflow.graph import dtypes
from specflow.graph.device_spec import DeviceSpec
from specflow.schema.validation_errors import custom_error, line_errors, raise_errors, show

SPEC_VERSION = 1
INT64_MAX = (1 << 63) - 1
NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# A tensor reference: a (possibly scoped) name and an optional output index.
REF_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*(/[A-Za-z_][A-Za-z0-9_.-]*)*(:\d+)?$")
ATTR_REF_RE = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)$")
TYPE_VAR_RE = re.compile(r"^[A-Z][A-Za-z0-9_]*$")

# Keys every node kind understands besides its kind key.
COMMON_NODE_FIELDS = ("inputs", "device", "colocate_with", "after", "doc", "transfer")
NODE_KINDS = ("op", "layer", "call", "while", "cond")


def _fail(kind: str, message: str) -> PydanticCustomError:
    return PydanticCustomError(kind, message)


# --- scalar field types -------------------------------------------------------------------------


def _check_name(v: str) -> str:
    if not NAME_RE.fullmatch(v):
        raise _fail("bad_name", f"bad name {v!r}: use letters, digits, '_', '.', '-' (not starting with a digit; '/' is for scopes)")
    return v


def _check_ident(v: str) -> str:
    if not IDENT_RE.fullmatch(v):
        raise _fail("bad_name", f"bad name {v!r}: use letters, digits and '_' (not starting with a digit)")
    return v


def _check_ref(v: str) -> str:
    if not REF_RE.fullmatch(v):
        raise _fail("bad_reference", f"bad tensor reference {v!r} (expected 'name' or 'name:k')")
    return v


def _check_dtype(v: str) -> str:
    try:
        dt = dtypes.as_dtype(v)
    except TypeError:
        raise _fail("bad_dtype", f"unknown dtype '{v}'" + did_you_mean(v, _dtype_names())) from None
    if dt is dtypes.resource:
        raise _fail("bad_dtype", "dtype 'resource' cannot be declared in a spec")
    return dt.name


def _dtype_names() -> list[str]:
    return [n for n in dtypes.dtype_names() if n != "resource"]


def _check_device(v: str) -> str:
    try:
        DeviceSpec.parse(v)
    except DeviceError as e:
        raise _fail("bad_device", e.message) from None
    return v


def _dim(allow_unknown: bool, allow_symbol: bool):
    """A validator for one dimension: int >= 0, null (unknown) and a symbol ``D`` as allowed."""

    def check(v: Any):
        if v is None and allow_unknown:
            return v
        if isinstance(v, int) and not isinstance(v, bool):
            if v < 0:
                hint = " (use null for an unknown size)" if allow_unknown else ""
                raise _fail("bad_dim", f"negative dimension {v}{hint}")
            if v > INT64_MAX:
                raise _fail("bad_dim", f"dimension {v} is out of range (the largest is 2^63-1)")
            return v
        if allow_symbol and isinstance(v, str) and IDENT_RE.fullmatch(v):
            return v
        kinds = ["an integer >= 0"] + (["null"] if allow_unknown else []) + (["a symbol like D"] if allow_symbol else [])
        raise _fail("bad_dim", f"a dimension must be {' or '.join(kinds)}, got {show(v)}")

    return PlainValidator(check, json_schema_input_type=int | None | str if allow_symbol else int | None)


Name = Annotated[str, AfterValidator(_check_name)]
Ident = Annotated[str, AfterValidator(_check_ident)]
Reference = Annotated[str, AfterValidator(_check_ref)]
DTypeName = Annotated[str, AfterValidator(_check_dtype)]
Device = Annotated[str, AfterValidator(_check_device)]
# How float32 outputs cross devices and tasks: bfloat16 = their top 16 bits (whitepaper 5.5).
Transfer = Literal["float32", "bfloat16"]
Dim = Annotated[Any, _dim(allow_unknown=True, allow_symbol=False)]
KnownDim = Annotated[Any, _dim(allow_unknown=False, allow_symbol=False)]
PatternDim = Annotated[Any, _dim(allow_unknown=True, allow_symbol=True)]


def _name_list(v: Any) -> list[str]:
    """A name or a list of names (``colocate_with: w`` or ``after: [a, b]``)."""
    return TypeAdapter(list[Reference]).validate_python([v] if isinstance(v, str) else v, strict=True)


NameList = Annotated[list[Reference], PlainValidator(_name_list, json_schema_input_type=str | list[str])]


# --- the base model: strict, with did-you-mean for unknown keys ---------------------------------


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)

    @classmethod
    def known_keys(cls) -> list[str]:
        return [f.alias or name for name, f in cls.model_fields.items()]

    @classmethod
    def cross_checks(cls, data: dict) -> list[dict]:
        """Checks on the raw mapping that do not depend on its fields being valid (reported
        together with field errors); a list of InitErrorDetails."""
        return []

    @model_validator(mode="wrap")
    @classmethod
    def _unknown_keys(cls, data: Any, handler):
        if not isinstance(data, dict):
            return handler(data)
        known = cls.known_keys()
        errors = [
            custom_error("unknown_field", "unknown field" + did_you_mean(str(k), known), (k,), v)
            for k, v in data.items()
            if k not in known
        ]
        errors += cls.cross_checks(data)
        if not errors:
            return handler(data)
        try:
            handler({k: v for k, v in data.items() if k in known})
        except ValidationError as e:
            errors = line_errors(e) + errors
        raise_errors(cls.__name__, errors)
