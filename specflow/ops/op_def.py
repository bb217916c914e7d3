"""What an op is: its signature (inputs, outputs, attrs) parsed from TensorFlow-style strings.

``register_op`` in :mod:`specflow.ops.registry` turns strings such as ``"x: T"``,
``"values: N * T"``, ``"T: {numeric}"`` or ``"N: int >= 1"`` into these dataclasses.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from specflow.errors import OpError, did_you_mean
from specflow.graph import dtypes
from specflow.graph.dtypes import DType, as_dtype
from specflow.graph.shapes import Shape, as_shape

_NO_DEFAULT = object()


@dataclass(frozen=True)
class TensorSpec:
    """The static type of one tensor: dtype and (partial) shape."""

    dtype: DType
    shape: Shape

    def __str__(self) -> str:
        return f"{self.dtype.name}{self.shape}"


@dataclass
class ArgDef:
    name: str
    dtype: DType | None = None  # fixed type
    type_attr: str | None = None  # "T"
    number_attr: str | None = None  # "N" in "N * T"
    type_list_attr: str | None = None  # "Tcomponents: list(type)"
    alias: str | None = None  # spec keyword alias (e.g. "axis" for "reduction_indices")
    # Spec convenience: a literal value or ``callable(input_specs) -> np.ndarray`` used when the
    # spec does not supply this input (lowering turns it into a Const).
    default: Any = _NO_DEFAULT

    @property
    def is_list(self) -> bool:
        return self.number_attr is not None or self.type_list_attr is not None

    @property
    def has_default(self) -> bool:
        return self.default is not _NO_DEFAULT


@dataclass
class AttrDef:
    name: str
    type: str  # "type", "int", "float", "bool", "string", "shape", "tensor", "func", "list(...)"
    default: Any = _NO_DEFAULT
    allowed: frozenset | None = None  # DTypes for "type", strings for "string"
    minimum: int | None = None

    @property
    def has_default(self) -> bool:
        return self.default is not _NO_DEFAULT

    def describe(self) -> str:
        t = self.type
        if self.allowed is not None:
            names = sorted(a.name if isinstance(a, DType) else repr(a) for a in self.allowed)
            t = "{" + ", ".join(names) + "}"
        if self.minimum is not None:
            t += f" >= {self.minimum}"
        if self.has_default:
            t += f" = {_fmt_value(self.default)}"
        return f"{self.name}: {t}"


@dataclass
class OpDef:
    name: str
    inputs: list[ArgDef]
    outputs: list[ArgDef]
    attrs: dict[str, AttrDef]
    is_stateful: bool = False
    shape_fn: Callable | None = None
    doc: str = ""
    gradient: Callable | None = None  # filled by the training layer (issue: gradients)
    # Spec-only options: keys the spec may give this op that are neither attrs nor inputs
    # (none by default). Kept here so the schema can validate them.
    tf_name: str | None = None  # TensorFlow's op name when it differs (None = same)

    def attr(self, name: str) -> AttrDef:
        try:
            return self.attrs[name]
        except KeyError:
            raise OpError(f"op {self.name} has no attr '{name}'" + did_you_mean(name, self.attrs)) from None

    def signature(self) -> str:
        ins = ", ".join(_fmt_arg(a) for a in self.inputs)
        outs = ", ".join(_fmt_arg(a) for a in self.outputs)
        return f"{self.name}({ins}) -> ({outs})"


def _fmt_arg(a: ArgDef) -> str:
    if a.number_attr:
        t = f"{a.number_attr} * {a.type_attr or a.dtype.name}"
    elif a.type_list_attr:
        t = a.type_list_attr
    else:
        t = a.type_attr or a.dtype.name
    return f"{a.name}: {t}"


def _fmt_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_fmt_value(x) for x in v) + "]"
    return str(v)


# --- parsing signature strings ------------------------------------------------------------

_ARG_RE = re.compile(r"^\s*(\w+)\s*:\s*(?:(\w+)\s*\*\s*)?(\w+)\s*$")


def _parse_arg(text: str, attrs: dict[str, AttrDef]) -> ArgDef:
    m = _ARG_RE.match(text)
    if not m:
        raise ValueError(f"bad arg spec {text!r}")
    name, number, typ = m.groups()
    arg = ArgDef(name=name, number_attr=number)
    if typ in attrs:
        if attrs[typ].type == "list(type)":
            arg.type_list_attr = typ
        else:
            arg.type_attr = typ
    else:
        arg.dtype = as_dtype(typ)
    return arg


def _parse_types(body: str) -> frozenset:
    out: set[DType] = set()
    for t in body.split(","):
        t = t.strip()
        if t in dtypes.GROUPS:
            out |= dtypes.GROUPS[t]
        else:
            out.add(as_dtype(t))
    return frozenset(out)


def _parse_attr(text: str) -> AttrDef:
    # Split off "= default" first so defaults containing ">=" or braces are left intact.
    m = re.match(r"^\s*(\w+)\s*:\s*(.*)$", text)
    if not m:
        raise ValueError(f"bad attr spec {text!r}")
    name, rest = m.groups()
    default: Any = _NO_DEFAULT
    if "=" in rest.replace(">=", "\0"):
        i = rest.replace(">=", "\0\0").index("=")
        rest, dflt = rest[:i].strip(), rest[i + 1 :].strip()
        default = dflt
    minimum = None
    mm = re.match(r"^(.*?)\s*>=\s*(-?\d+)$", rest)
    if mm:
        rest, minimum = mm.group(1).strip(), int(mm.group(2))
    allowed = None
    if rest.startswith("list({") and rest.endswith("})"):  # a list of types from a set
        typ, allowed = "list(type)", _parse_types(rest[len("list({") : -2])
    elif rest.startswith("{"):
        body = rest.strip("{}")
        if "'" in body or '"' in body:
            typ = "string"
            allowed = frozenset(ast.literal_eval("[" + body + "]"))
        else:
            typ = "type"
            allowed = _parse_types(body)
    else:
        typ = rest
    a = AttrDef(name=name, type=typ, allowed=allowed, minimum=minimum)
    if default is not _NO_DEFAULT:
        a.default = _parse_default(typ, default)
    return a


def _parse_default(typ: str, text: str) -> Any:
    if typ == "type":
        return as_dtype(text)
    if typ == "bool":
        return text.lower() == "true"
    if typ == "shape":
        return as_shape(ast.literal_eval(text.replace("?", "None")))
    if typ == "list(type)":
        return [as_dtype(t.strip()) for t in text.strip("[]").split(",") if t.strip()]
    v = ast.literal_eval(text.replace("true", "True").replace("false", "False"))
    if typ == "float":
        return float(v)
    if typ.startswith("list("):
        return list(v)
    return v


