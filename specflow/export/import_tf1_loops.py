"""``specflow import`` for TF1-style while loops: a loop built from the five primitives (as a
frozen TF1 graph holds it, and as ``specflow export`` writes a spec's ``while:`` node and RNN
layers) is written back as a ``while:`` node, found by its structure rather than its names.

A loop is a frame: the ``Enter`` nodes sharing a ``frame_name``. Per loop var ``k``::

    Enter_k -> Merge_k <- NextIteration_k <- (the body's next value)
               Merge_k -> Switch_k(., LoopCond) -> :0 Exit_k (the loop's result k)
                                               -> :1 Identity_k (the body reads it)

A constant ``Enter`` (``is_constant``) passes an outer tensor into the frame: the spec's cond and
body read the outer tensor itself. The condition is what ``LoopCond`` needs back to the Merges;
the body everything else in the frame (a nested frame included: it is written inside the body
the same way). The spec node stands where the loop's first Exit stood; its outputs are the
vars in Enter order, so a reference to ``Exit_k`` becomes output ``k``. A var whose result
nobody reads has no Exit (pruned), which changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from specflow.errors import ExportError, GraphError
from specflow.graph.control_flow import find_while_loops
from specflow.graph.dtypes import resource
from specflow.graph.graph_def import GraphDef, NodeDef, parse_input


@dataclass
class Tf1Loop:
    """A TF1 while loop (frame ``frame``) among a scope's nodes; ``name`` is its anchor, the first
    Exit, where the spec node is written."""

    name: str
    frame: str
    enters: list[NodeDef]  # the vars' Enters, in graph order
    merges: list[NodeDef]
    switches: list[NodeDef]
    exits: list[NodeDef | None]  # None: the var's final value is not read (pruned)
    nexts: list[NodeDef]  # the NextIteration nodes
    loop_cond: NodeDef
    constants: list[NodeDef]  # constant Enters: outer tensors read inside
    cond_nodes: list[NodeDef]
    body_nodes: list[NodeDef]
    members: list[NodeDef] = field(default_factory=list)
    kind: str = "tf1-while"

    def outer_refs(self, spec_name: str, outer_ref: Callable[[str], str]) -> dict[str, Callable[[int], str]]:
        """``Exit_k`` (any output index) is the spec node's output ``k``."""
        return {x.name: (lambda _i, k=k: spec_name if k == 0 else f"{spec_name}:{k}")
                for k, x in enumerate(self.exits) if x is not None}


def all_tf1_loops(nodes: list[NodeDef], taken: set[str]) -> list[Tf1Loop]:
    """Every TF1 loop among ``nodes`` (none of whose nodes is in ``taken``: the TF2 constructs
    already found), nested ones too. The vars are found as the gradient code finds them
    (``graph.control_flow.find_while_loops``); frames that are not loops of that shape are left
    out, and their primitives refused later with the node named."""
    scope = [n for n in nodes if n.name not in taken]
    try:
        found = find_while_loops(GraphDef(scope))
    except (GraphError, KeyError, IndexError, StopIteration):
        return []
    by_name = {n.name: n for n in scope}
    users: dict[str, list[NodeDef]] = {}
    for n in scope:
        for i in n.inputs:
            users.setdefault(parse_input(i.lstrip("^")).node, []).append(n)
    return [loop for w in found.values() if (loop := _loop(w, by_name, users)) is not None]


def outermost(constructs: list) -> dict:
    """Of TF1 loops and conditionals, those inside no other one's region, by anchor name (a
    nested one is found again when its enclosing body or branch is written)."""
    regions = {c.name: {m.name for m in c.members} for c in constructs}
    key = lambda c: c.enters[0].name if c.kind == "tf1-while" else c.key_node  # noqa: E731
    return {c.name: c for c in constructs if not any(key(c) in r for name, r in regions.items() if name != c.name)}


def short_frame(frame: str) -> str:
    """The loop's scope: TF1 names a frame ``<scope>/while_context``; specflow's is the scope."""
    return frame.removesuffix("/while_context")


def name_tf1_constructs(found: dict, names: dict[str, str], prefix: str) -> None:
    """Name each TF1 loop's or conditional's spec node after its frame or name scope (less
    ``prefix``) where no other node has that name (its anchor, an Exit or a Merge, is otherwise
    named as a node would be)."""
    from specflow.export.importer import _sanitize

    taken = set(names.values())
    for c in found.values():
        if c.kind in ("tf1-while", "tf1-cond"):
            scope = short_frame(c.frame) if c.kind == "tf1-while" else c.scope
            scope = scope[len(prefix):] if scope.startswith(prefix) else scope
            if scope and (name := _sanitize(scope)) not in taken:
                taken.add(name)
                names[c.name] = name


def _loop(w, by_name: dict, users: dict) -> Tf1Loop | None:
    if not w.enters or not w.loop_cond:
        return None
    get = lambda names: [by_name[x] if x else None for x in names]  # noqa: E731
    enters, merges, switches, exits, nexts = (get(x) for x in (w.enters, w.merges, w.switches, w.exits,
                                                                w.next_iterations))  # fmt: skip
    constants = [by_name[e] for e in w.captures.values()]
    loop_cond = by_name[w.loop_cond]
    identities = {x for x in w.identities if x}
    own = {n.name for n in (*enters, *merges, *switches, *exits, *nexts, *constants, loop_cond) if n is not None}
    # The frame: everything downstream of its Enters (control edges too), up to its Exits.
    exit_names = {x.name for x in exits if x is not None}
    region, stack = set(own), [*enters, *constants, *merges, *switches]
    while stack:
        n = stack.pop()
        if n.name in exit_names:
            continue
        for u in users.get(n.name, []):
            if u.name not in region:
                region.add(u.name)
                stack.append(u)
    stops = {m.name for m in (*merges, *constants)}
    cond_names = _upstream(parse_input(loop_cond.data_inputs[0]).node, by_name, region, stops)
    body_stops = identities | {c.name for c in constants} | {s.name for s in switches}
    body_names = set()
    for nxt in nexts:
        body_names |= _upstream(parse_input(nxt.data_inputs[0]).node, by_name, region, body_stops)
    body_names |= region - own - cond_names - identities  # nodes run for their effect
    order = [n for n in by_name.values() if n.name in region]
    anchor = next((n for n in order if n.name in exit_names), loop_cond)  # no result read: run for effect
    return Tf1Loop(anchor.name, w.frame_name, enters, merges, switches, exits, nexts, loop_cond, constants,
                   cond_nodes=[n for n in order if n.name in cond_names - own],
                   body_nodes=[n for n in order if n.name in body_names - own - identities],
                   members=order)  # fmt: skip


def _upstream(start: str, by_name: dict, region: set[str], stops: set[str]) -> set[str]:
    """The nodes of ``region`` that ``start`` needs (control inputs too), not past ``stops``."""
    seen, stack = set(), [start]
    while stack:
        name = stack.pop()
        if name in seen or name in stops or name not in region:
            continue
        seen.add(name)
        stack.extend(parse_input(i.lstrip("^")).node for i in by_name[name].inputs)
    return seen


def tf1_while_node(writer, c: Tf1Loop, outer_ref, scope, block) -> dict:
    """The spec ``while:`` node for ``c``; ``scope`` is import_control_flow's scope writer and
    ``block`` its YAML block type."""
    for e in c.enters:
        if e.attrs.get("T") == resource:
            raise ExportError(f"loop '{c.frame}': a resource loop var ('{e.name}') cannot be written as a spec")
    depth = writer.tf1_depth  # a nested loop's vars must not shadow the outer's
    var = [f"lv{k}" if depth == 0 else f"lv{depth}_{k}" for k in range(len(c.enters))]
    inner: dict[str, str] = {}
    for k, (merge, switch) in enumerate(zip(c.merges, c.switches)):
        inner[merge.name] = inner[switch.name] = var[k]  # Switch:1 is the var in the body
    ids = {n.name: var[k] for k, s in enumerate(c.switches) for n in c.members
           if n.op == "Identity" and n.data_inputs and parse_input(n.data_inputs[0]).node == s.name}  # fmt: skip
    inner.update(ids)
    inner.update({e.name: outer_ref(e.data_inputs[0]) for e in c.constants})
    prefix = short_frame(c.frame) + "/"
    parts = block()
    parts["vars"] = {var[k]: outer_ref(e.data_inputs[0]) for k, e in enumerate(c.enters)}
    parallel = c.enters[0].attrs.get("parallel_iterations", 10)
    if parallel != 10:
        parts["parallel_iterations"] = parallel
    writer.tf1_depth = depth + 1
    try:
        nodes, ref = scope(writer, c.cond_nodes, prefix, inner, set(var), outer_ref)
        parts["cond"] = block(nodes=block(nodes), outputs=[ref(c.loop_cond.data_inputs[0])])
        nodes, ref = scope(writer, c.body_nodes, prefix, inner, set(var), outer_ref)
        nexts = {var[k]: ref(n.data_inputs[0]) for k, n in enumerate(c.nexts)}
        body = {b.name for b in c.body_nodes}
        for k, n in enumerate(c.nexts):
            # A NextIteration's control inputs (tf.gradients' stack pushes, which nothing reads)
            # must run each iteration: the next value becomes an Identity after them.
            after = [ref(x).split(":")[0] for x in n.control_inputs if x in body]
            if after:
                name, j = f"{var[k]}_next", 1
                while name in nodes or name in var:
                    name, j = f"{var[k]}_next_{j}", j + 1
                nodes[name] = {"op": "Identity", "inputs": [nexts[var[k]]], "after": after}
                nexts[var[k]] = name
        parts["body"] = block(nodes)
        parts["next"] = block(nexts)
    finally:
        writer.tf1_depth = depth
    return block({"while": parts})
