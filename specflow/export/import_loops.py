"""``specflow import`` for TF2 loops: a While that loading lowered to the five primitives
(``io/tf_control_flow.py``) is written back as the spec's ``while:`` node.

The lowering names every part of While ``W``: ``W/enter_k``, ``W/merge_k``, the condition's nodes
under ``W/cond/`` (its result ``W/cond``), ``W/identity_k``, the body's nodes under ``W/body/`` (its
results ``W/body``), ``W/exit_k`` and ``W`` (the results). So the spec node is::

    W: {while: {vars: {lv<k>: <what W/enter_k reads>}, cond: {nodes: ..., outputs: [...]},
                body: {lv<k>: <W/body's k-th input>, <the body's nodes>...}}}

inside which ``W/merge_k`` and ``W/identity_k`` are the var ``lv<k>``. A resource var (a variable
TF2 passes into the loop unchanged) is not a spec var: the body reads the variable itself (a
spec body may read outer tensors). Loops nested in a body are written the same way, inside it.
Any other use of Enter/Switch/Merge (a TF1 loop, a lowered If) is refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from specflow.errors import ExportError
from specflow.graph.dtypes import resource
from specflow.graph.graph_def import NodeDef, parse_input

_PRIMITIVES = frozenset({"Enter", "Exit", "NextIteration", "Switch", "Merge", "LoopCond", "RefEnter"})
_ENTER = re.compile(r"^(.*)/enter_(\d+)$")
_PART = re.compile(r"^(enter|merge|switch|exit|identity|next_iteration)_\d+$")
_GATE = re.compile(r"/input_control_node(_\d+)?$")  # what the inliner adds to start a call's body


class Block(dict):
    """A mapping written as a YAML block (a loop's parts), not on one line."""


@dataclass
class Loop:
    name: str  # W
    enters: list[NodeDef]
    members: list[NodeDef] = field(default_factory=list)  # every node of W, W itself included

    def is_resource(self, k: int) -> bool:
        return self.enters[k].attrs.get("T") == resource

    def outer_refs(self, spec_name: str, outer_ref: Callable[[str], str]) -> dict[str, Callable[[int], str]]:
        """References outside the loop to its results: ``W:k`` and ``W/exit_k`` name output j of the
        while node (j counts the non-resource vars); a resource result is the variable itself."""
        index = {}
        for k in range(len(self.enters)):
            if not self.is_resource(k):
                index[k] = len(index)

        def result(k: int) -> str:
            if self.is_resource(k):
                return outer_ref(self.enters[k].data_inputs[0])
            j = index[k]
            return spec_name if j == 0 else f"{spec_name}:{j}"

        refs = {self.name: result}
        for k in range(len(self.enters)):
            refs[f"{self.name}/exit_{k}"] = lambda _i, k=k: result(k)
        return refs


def find_loops(nodes: list[NodeDef]) -> dict[str, Loop]:
    """The outermost lowered loops among ``nodes``, by name, with their members."""
    names = {n.name for n in nodes}
    loops: dict[str, Loop] = {}
    for n in nodes:
        m = _ENTER.match(n.name)
        if n.op == "Enter" and m and n.attrs.get("frame_name") == m.group(1) and m.group(1) in names:
            loops.setdefault(m.group(1), Loop(m.group(1), [])).enters.append(n)
    outer = {w: loop for w, loop in loops.items() if not any(w.startswith(o + "/") for o in loops if o != w)}
    for loop in outer.values():
        loop.enters.sort(key=lambda e: int(_ENTER.match(e.name).group(2)))
        loop.members = [n for n in nodes if _part_of(loop.name, n.name)]
    return outer


def _part_of(w: str, name: str) -> bool:
    """Whether ``name`` is one of the nodes the lowering made for While ``w`` (TF may name other
    nodes ``w/...`` too: ``while/loop_counter`` is outside the loop)."""
    if name in (w, f"{w}/cond", f"{w}/body", f"{w}/loop_cond"):
        return True
    if name.startswith((f"{w}/cond/", f"{w}/body/")):
        return True
    return bool(_PART.match(name[len(w) + 1:])) if name.startswith(w + "/") else False


def check_loops(graph, source) -> None:
    """ExportError unless every control-flow primitive at the top level belongs to a lowered TF2
    While (a body's own are checked as it is written)."""
    members = {m.name for loop in find_loops(graph.nodes).values() for m in loop.members}
    for n in graph.nodes:
        if n.op in _PRIMITIVES and n.name not in members:
            raise _refused(n, source)


def _refused(n: NodeDef, source) -> ExportError:
    return ExportError(f"{source}: node '{n.name}' ({n.op}) is control flow specflow import cannot write as a "
                       "spec (only TF2 While loops are; a conditional or a TF1 loop is not)")


def loop_node(writer, loop: Loop, outer_ref: Callable[[str], str]) -> Block:
    """The spec ``while:`` node for ``loop``; ``writer`` is importer._SpecWriter."""
    w = loop.name
    by_name = {n.name: n for n in loop.members}
    n_vars = len(loop.enters)
    var = {k: f"lv{k}" for k in range(n_vars) if not loop.is_resource(k)}
    inner_vars = {}  # W/merge_k, W/identity_k -> what a body or condition reads for them
    for k in range(n_vars):
        value = var.get(k) or outer_ref(loop.enters[k].data_inputs[0])
        inner_vars[f"{w}/merge_{k}"] = inner_vars[f"{w}/identity_{k}"] = value
    cond = [n for n in loop.members if n.name.startswith(f"{w}/cond/") and not _is_gate(n)]
    body = [n for n in loop.members if n.name.startswith(f"{w}/body/") and not _is_gate(n)]
    parts = Block()
    parts["vars"] = {var[k]: outer_ref(loop.enters[k].data_inputs[0]) for k in var}
    parallel = loop.enters[0].attrs.get("parallel_iterations", 10)
    if parallel != 10:
        parts["parallel_iterations"] = parallel
    cond_nodes, cond_ref = _scope(writer, cond, f"{w}/cond/", inner_vars, set(var.values()), outer_ref)
    result = by_name[f"{w}/cond"].data_inputs[0]
    parts["cond"] = Block(nodes=Block(cond_nodes), outputs=[cond_ref(result)])
    body_nodes, body_ref = _scope(writer, body, f"{w}/body/", inner_vars, set(var.values()), outer_ref)
    nexts = by_name[f"{w}/body"].data_inputs
    parts["body"] = Block({var[k]: body_ref(nexts[k]) for k in var})
    parts["body"].update(body_nodes)
    return Block({"while": parts})


def _is_gate(n: NodeDef) -> bool:
    return n.op == "NoOp" and bool(_GATE.search(n.name))


def _scope(writer, nodes: list[NodeDef], prefix: str, inner_vars: dict[str, str], reserved: set[str],
           outer_ref: Callable[[str], str]):
    """(name -> spec node, ref) for a condition's or body's ``nodes``, named without ``prefix``."""
    from specflow.export.importer import _sanitize

    names: dict[str, str] = {}
    taken = set(reserved)
    for n in nodes:
        local = _sanitize(n.name[len(prefix):])
        candidate, k = local, 1
        while candidate in taken:
            candidate, k = f"{local}_{k}", k + 1
        taken.add(candidate)
        names[n.name] = candidate
    loops = find_loops(nodes)
    members = {m.name for loop in loops.values() for m in loop.members}
    loop_refs: dict = {}

    def ref(tensor: str) -> str:
        t = parse_input(tensor)
        if t.node in inner_vars:
            return inner_vars[t.node]
        if t.node in loop_refs:
            return loop_refs[t.node](t.index)
        if t.node in names:
            return names[t.node] if t.index == 0 else f"{names[t.node]}:{t.index}"
        return outer_ref(tensor)  # a capture (TF2 passes none, but a spec body may read outer tensors)

    def control(name: str) -> str | None:
        if name in names:
            return names[name]
        return None  # a gate or a var: the spec's lowering starts a body's nodes itself

    for loop in loops.values():
        loop_refs.update(loop.outer_refs(names[loop.name], ref))
    out: dict = {}
    for n in nodes:
        if n.name in loops:
            out[names[n.name]] = loop_node(writer, loops[n.name], ref)
        elif n.name not in members:
            if n.op in _PRIMITIVES:
                raise _refused(n, "the model")
            if n.op in ("Placeholder", "VarHandleOp"):
                raise ExportError(f"node '{n.name}' ({n.op}) inside a loop cannot be written as a spec")
            out[names[n.name]] = writer.node(n, names[n.name], ref, control)
    return out, ref
