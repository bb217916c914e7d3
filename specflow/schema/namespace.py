"""The names a spec body can reference (inputs, variables, nodes) and how they map to tensors.

A Namespace belongs to one body: the model's ``nodes`` or one call's function body.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from specflow.errors import SpecflowError, did_you_mean
from specflow.graph.builder import GraphBuilder
from specflow.graph.graph_def import parse_input
from specflow.ops.registry import get_op
from specflow.schema.layers import VariableInfo

if TYPE_CHECKING:
    from specflow.schema.lower import Lowerer


class Skip(Exception):
    """A node cannot be lowered because a dependency failed (whose error is already recorded)."""


def split_ref(ref: str) -> tuple[str, int]:
    """``"x:1"`` -> ("x", 1); ``"x"`` -> ("x", 0)."""
    t = parse_input(ref)
    return t.node, t.index


class Namespace:
    """The names one body (the model's nodes, or one call's function body) can reference:
    inputs, variables and nodes, mapped to graph tensors. ``prefix`` is the body's name scope;
    ``captured`` (a call's caller namespace) lends its variables to a function body."""

    def __init__(self, builder: GraphBuilder, prefix: str, captured: Namespace | None = None):
        self.b = builder
        self.prefix = prefix
        self.captured = captured
        self.entries: dict[str, tuple[str, Any]] = {}

    def add_tensors(self, name: str, tensors: list[str]) -> None:
        self.entries[name] = ("tensors", list(tensors))

    def add_node(self, name: str, node: str) -> None:
        self.entries[name] = ("node", node)

    def add_variable(self, name: str, info: VariableInfo) -> None:
        self.entries[name] = ("var", info)

    def _lookup(self, name: str):
        entry = self.entries.get(name)
        if entry is None and self.captured is not None:
            entry = self.captured._lookup(name)
            if entry is not None and entry[0] != "var":
                return None
        if entry is None and "/" in name and name.split("/")[0] in self.entries:
            # A name inside a lowered layer or call: `hidden/kernel`, `blk/d`.
            full = self.prefix + name
            for v in self.b.collections.get("variables", []):
                if v.name == full:
                    return ("var", v)
            if self.b.has_node(full):
                return ("node", full)
        return entry

    def knows(self, ref: str) -> bool:
        return self._lookup(split_ref(ref)[0]) is not None

    def names(self) -> list[str]:
        captured = [n for n, e in self.captured.entries.items() if e[0] == "var"] if self.captured else []
        return list(self.entries) + captured

    def _missing(self, what: str, ref: str, path: tuple, lw: Lowerer) -> SpecflowError:
        return lw.error(f"{what} '{ref}' names no node" + did_you_mean(split_ref(ref)[0], self.names()), path)

    def resolve(self, ref: str, path: tuple, lw: Lowerer, resource: bool = False) -> str:
        name, idx = split_ref(ref)
        entry = self._lookup(name)
        if entry is None:
            raise self._missing("input", ref, path, lw)
        kind, val = entry
        if kind == "var":
            if idx:
                raise lw.error(f"variable '{name}' has one output; '{ref}' does not exist", path)
            return val.handle if resource else val.read
        if kind == "tensors":
            if idx >= len(val):
                raise lw.error(f"'{name}' has {len(val)} output(s); '{ref}' does not exist", path)
            return val[idx]
        tensor = val if idx == 0 else f"{val}:{idx}"
        try:
            self.b.spec(tensor)
        except SpecflowError as e:
            raise lw.error(e.message, path) from None
        return tensor

    def control_nodes(self, ref: str, path: tuple, lw: Lowerer) -> list[str]:
        entry = self._lookup(split_ref(ref)[0])
        if entry is None:
            raise lw.error(f"'{ref}' names no node" + did_you_mean(ref, self.names()), path)
        kind, val = entry
        if kind == "var":
            return [val.name]
        if kind == "tensors":
            return list(dict.fromkeys(parse_input(t).node for t in val))
        return [val]

    def colocation_node(self, ref: str, path: tuple, lw: Lowerer) -> str:
        return self.control_nodes(ref, path, lw)[0]


def refs_of_node(spec, body: dict) -> list[str]:
    """Names in ``body`` that node ``spec`` depends on (inputs, inline nodes, keyword inputs,
    after, colocate_with), in order."""
    out: list[str] = []

    def add(ref):
        if isinstance(ref, str):
            head = split_ref(ref)[0].split("/")[0]
            if head in body and head not in out:
                out.append(head)
        elif isinstance(ref, dict):
            for v in ref.values():
                add(v)
        elif isinstance(ref, list):
            for v in ref:
                add(v)
        elif hasattr(ref, "inputs"):
            walk(ref)

    def walk(node):
        add(list(node.inputs.values()) if isinstance(node.inputs, dict) else node.inputs)
        add(list(getattr(node, "after", [])))
        add(list(getattr(node, "colocate_with", [])))
        if getattr(node, "share", None):
            add([node.share])
        if hasattr(node, "op"):
            try:
                opdef = get_op(node.op)
            except SpecflowError:
                return
            keys = {a.name for a in opdef.inputs} | {a.alias for a in opdef.inputs if a.alias}
            add([v for k, v in node.params.items() if k in keys])

    walk(spec)
    return out
