"""GraphDef and NodeDef: the serializable graph every pass reads and writes.

Inputs follow TensorFlow's convention: ``"n"`` is ``"n:0"``, ``"n:k"`` is output k, ``"^n"`` is a
control input; data inputs come first, control inputs last. Attr values are plain Python:
int, float, bool, str, :class:`DType`, :class:`Shape`, ``numpy.ndarray`` (a tensor),
:class:`FuncRef` or a list of these. ``_class: ["loc:@other"]`` is the colocation attr, as in TF.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from specflow.errors import GraphError, Location
from specflow.graph.dtypes import DType, as_dtype
from specflow.graph.names import check_node_name
from specflow.graph.shapes import Shape, as_shape


@dataclass(frozen=True)
class FuncRef:
    """An attr value naming a function in the graph's library."""

    name: str


@dataclass(frozen=True)
class TensorRef:
    node: str
    index: int = 0
    is_control: bool = False

    def __str__(self) -> str:
        if self.is_control:
            return f"^{self.node}"
        return self.node if self.index == 0 else f"{self.node}:{self.index}"


def parse_input(name: str) -> TensorRef:
    """``"n"`` → (n, 0); ``"n:2"`` → (n, 2); ``"^n"`` → control input on n."""
    if name.startswith("^"):
        return TensorRef(name[1:], -1, True)
    node, sep, idx = name.rpartition(":")
    if sep and idx.isdigit():
        return TensorRef(node, int(idx))
    return TensorRef(name, 0)


def tensor_name(node: str, index: int = 0) -> str:
    """The canonical ``node:index`` spelling used as a key for fetches, feeds and shapes."""
    return f"{node}:{index}"


def canonical_tensor(name: str) -> str:
    """``"n"`` → ``"n:0"``; ``"n:1"`` unchanged."""
    ref = parse_input(name)
    if ref.is_control:
        raise GraphError(f"'{name}' is a control input, not a tensor")
    return tensor_name(ref.node, ref.index)


@dataclass
class NodeDef:
    name: str
    op: str
    inputs: list[str] = field(default_factory=list)
    device: str = ""
    attrs: dict[str, Any] = field(default_factory=dict)
    location: Location | None = field(default=None, compare=False)

    @property
    def data_inputs(self) -> list[str]:
        return [i for i in self.inputs if not i.startswith("^")]

    @property
    def control_inputs(self) -> list[str]:
        return [i[1:] for i in self.inputs if i.startswith("^")]

    @property
    def colocation_groups(self) -> list[str]:
        return [c[len("loc:@"):] for c in self.attrs.get("_class", []) if c.startswith("loc:@")]

    def copy(self) -> NodeDef:
        return NodeDef(self.name, self.op, list(self.inputs), self.device, dict(self.attrs), self.location)

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"name": self.name, "op": self.op}
        if self.inputs:
            d["inputs"] = list(self.inputs)
        if self.device:
            d["device"] = self.device
        if self.attrs:
            d["attrs"] = {k: attr_to_json(v) for k, v in sorted(self.attrs.items())}
        if self.location is not None:
            d["location"] = str(self.location)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> NodeDef:
        loc = None
        if d.get("location"):
            f, _, rest = d["location"].rpartition(":")
            f2, _, line = f.rpartition(":")
            if line.isdigit() and rest.isdigit():
                loc = Location(f2, int(line), int(rest))
            else:
                loc = Location(d["location"])
        return cls(
            name=check_node_name(d["name"]),
            op=d["op"],
            inputs=list(d.get("inputs", [])),
            device=d.get("device", ""),
            attrs={k: attr_from_json(v) for k, v in d.get("attrs", {}).items()},
            location=loc,
        )


@dataclass
class GraphDef:
    nodes: list[NodeDef] = field(default_factory=list)
    versions: dict[str, int] = field(default_factory=lambda: {"producer": 1, "min_consumer": 0})
    library: dict[str, Any] = field(default_factory=dict)

    def __iter__(self) -> Iterator[NodeDef]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def node_map(self) -> dict[str, NodeDef]:
        return {n.name: n for n in self.nodes}

    def node(self, name: str) -> NodeDef:
        for n in self.nodes:
            if n.name == name:
                return n
        raise GraphError(f"no node named '{name}'")

    def copy(self) -> GraphDef:
        return GraphDef([n.copy() for n in self.nodes], dict(self.versions), dict(self.library))

    def to_dict(self) -> dict:
        return {
            "versions": dict(self.versions),
            "nodes": [n.to_dict() for n in self.nodes],
            **({"library": self.library} if self.library else {}),
        }

    @classmethod
    def from_dict(cls, d: dict) -> GraphDef:
        return cls(
            nodes=[NodeDef.from_dict(n) for n in d.get("nodes", [])],
            versions=dict(d.get("versions", {"producer": 1, "min_consumer": 0})),
            library=dict(d.get("library", {})),
        )

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_json(cls, text: str) -> GraphDef:
        return cls.from_dict(json.loads(text))

    def to_yaml(self) -> str:
        import yaml

        return yaml.safe_dump(self.to_dict(), sort_keys=False)


# --- attr values <-> JSON (type-tagged, like TF's AttrValue oneof) ---------------------------


def attr_to_json(v: Any) -> dict:
    if isinstance(v, bool):
        return {"b": v}
    if isinstance(v, (int, np.integer)):
        return {"i": int(v)}
    if isinstance(v, (float, np.floating)):
        return {"f": float(v)}
    if isinstance(v, str):
        return {"s": v}
    if isinstance(v, bytes):
        return {"s": v.decode("utf-8", "replace")}
    if isinstance(v, DType):
        return {"type": v.name}
    if isinstance(v, Shape):
        return {"shape": v.as_list()}
    if isinstance(v, FuncRef):
        return {"func": v.name}
    if isinstance(v, np.ndarray):
        dt = as_dtype(v.dtype)
        values = v.tolist()
        if dt.is_complex:
            values = [[z.real, z.imag] for z in v.ravel().tolist()]
        elif dt.name == "string":
            values = [x.decode() if isinstance(x, bytes) else str(x) for x in v.ravel().tolist()]
        return {"tensor": {"dtype": dt.name, "shape": list(v.shape), "values": values}}
    if isinstance(v, (list, tuple)):
        return {"list": [attr_to_json(x) for x in v]}
    raise TypeError(f"cannot serialize attr value {v!r}")


def attr_from_json(d: dict) -> Any:
    (kind, v), = d.items()
    if kind == "b":
        return bool(v)
    if kind == "i":
        return int(v)
    if kind == "f":
        return float(v)
    if kind == "s":
        return str(v)
    if kind == "type":
        return as_dtype(v)
    if kind == "shape":
        return as_shape(v)
    if kind == "func":
        return FuncRef(v)
    if kind == "tensor":
        dt = as_dtype(v["dtype"])
        vals = v["values"]
        if dt.is_complex:
            arr = np.array([complex(a, b) for a, b in vals], dtype=dt.numpy)
        elif dt.name == "string":
            arr = np.array([s.encode() for s in np.ravel(vals).tolist()], dtype=object)
        else:
            arr = np.array(vals, dtype=dt.numpy)
        return arr.reshape(v["shape"])
    if kind == "list":
        return [attr_from_json(x) for x in v]
    raise ValueError(f"unknown attr kind '{kind}'")
