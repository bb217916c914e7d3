"""``specflow import`` for TF2 control flow: a While, If or Case that loading lowered to the five
primitives (``io/tf_control_flow.py``) is written back as the spec's ``while:`` or ``cond:`` node(s).

The lowering names every part, so the parts are found by name. While ``W``: ``W/enter_k``,
``W/merge_k``, the condition's nodes under ``W/cond/`` (its result ``W/cond``), ``W/identity_k``,
the body's under ``W/body/`` (its results ``W/body``), ``W/exit_k`` and ``W`` (the results)::

    W: {while: {vars: {lv<k>: <what W/enter_k reads>}, cond: {nodes: ..., outputs: [...]},
                body: {<the body's nodes>...}, next: {lv<k>: <W/body's k-th input>}}}

inside which ``W/merge_k`` and ``W/identity_k`` are the var ``lv<k>``. If ``C``: ``C/switch_pred``
(on the condition), ``C/input_i`` (Switches of the inputs), the branches under ``C/then/`` and
``C/else/`` (results ``C/then``, ``C/else``), ``C/output_k`` (Merges) and ``C``::

    C: {cond: {pred: ..., inputs: {in<i>: ...}, then: {nodes: ..., outputs: [...]}, else: ...}}

A ``Case`` ``C`` (``C/switch_i``, ``C/pivot_i``, ``C/input_i_j``, branches under ``C/branch_i/``,
``C/output_k``) is a chain of ``cond:`` nodes: branch i where ``C/pred_i`` (an ordinary node),
else the next cond, the last branch the innermost else. Pruning drops input Switches no branch
reads, so an If's or Case's inputs are found by index, not counted.

A resource (a variable TF2 passes into a loop or branch) is not a var or input: the body reads
the variable itself, which a spec body may do. Constructs nested in a body or branch are written
the same way, inside it. TF1 while loops and conds are found by their structure
instead (``import_tf1_loops.py``, ``import_tf1_conds.py``); any other use of the primitives is
refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from specflow.errors import ExportError
from specflow.export.import_tf1_conds import all_tf1_conds, tf1_cond_node
from specflow.export.import_tf1_loops import all_tf1_loops, name_tf1_constructs, outermost, tf1_while_node
from specflow.graph.dtypes import resource
from specflow.graph.graph_def import NodeDef, parse_input

_PRIMITIVES = frozenset({"Enter", "Exit", "NextIteration", "Switch", "Merge", "LoopCond", "RefEnter"})
_ENTER = re.compile(r"^(.*)/enter_(\d+)$")
_WHILE_PART = re.compile(r"^(enter|merge|switch|exit|identity|next_iteration)_\d+$")
_IF_PART = re.compile(r"^(input|output)_\d+$")
_IF_NAMES = ("switch_pred", "switch_t", "switch_f", "then", "else", "then_done", "else_done", "branch_executed")
# a lowered Case's own parts; its index, preds and their constants are ordinary nodes outside it
_CASE_PART = re.compile(r"^(switch_\d+|pivot_\d+|input_\d+_\d+|branch_\d+(_done)?|branch_executed|output_\d+)$")
_GATE = re.compile(r"/input_control_node(_\d+)?$")  # what the inliner adds to start a call's body


class Block(dict):
    """A mapping written as a YAML block (a construct's parts), not on one line."""


@dataclass
class Construct:
    """A lowered While (``kind`` "while"), If ("if") or Case ("case") named ``name``."""

    name: str
    kind: str
    nodes: dict[str, NodeDef]  # every node of the scope it was found in, by name
    members: list[NodeDef] = field(default_factory=list)  # its own nodes, the result node included

    def node(self, suffix: str) -> NodeDef:
        return self.nodes[f"{self.name}/{suffix}"]

    @property
    def carried(self) -> list[str]:
        """What enters: a While's initial var values, an If's inputs (its condition not counted)."""
        if self.kind == "while":
            # its own Enters only: a nested loop's (W/body/V/enter_k) are members too
            n = sum(1 for m in self.members if m.name.startswith(f"{self.name}/enter_") and _ENTER.match(m.name))
            return [self.node(f"enter_{k}").data_inputs[0] for k in range(n)]
        return [self._input(k).data_inputs[0] if self._input(k) is not None else None
                for k in range(max(self._inputs(), default=-1) + 1)]

    def _inputs(self) -> dict[int, NodeDef]:
        """An If's or Case's input Switches by input index: pruning to the signatures drops those no
        branch reads (a Case's per branch: ``C/input_i_k`` of a branch that ignores input k)."""
        pattern = re.compile(rf"{re.escape(self.name)}/input_(\d+_)?(\d+)$")
        found: dict[int, NodeDef] = {}
        for m in self.members:
            hit = pattern.match(m.name)
            if hit and m.op == "Switch":
                found.setdefault(int(hit.group(2)), m)
        return found

    def _input(self, k: int) -> NodeDef | None:
        return self._inputs().get(k)

    def is_resource(self, k: int) -> bool:
        node = self.node(f"enter_{k}") if self.kind == "while" else self._input(k)
        return node is not None and node.attrs.get("T") == resource

    def unused(self, k: int) -> bool:
        """Whether input ``k`` of an If or Case was pruned away (no branch reads it)."""
        return self.kind != "while" and self._input(k) is None

    def outer_refs(self, spec_name: str, outer_ref: Callable[[str], str]) -> dict[str, Callable[[int], str]]:
        """References from outside to its results: ``X:k`` (and ``W/exit_k``, ``C/output_k``) name
        output j of the spec node; a While's resource result is the variable itself."""
        def output(j: int) -> str:
            return spec_name if j == 0 else f"{spec_name}:{j}"

        if self.kind in ("if", "case"):
            # every branch result is an output of the spec node, the Merges pruning left or not
            n = len(self.node("then" if self.kind == "if" else "branch_0").data_inputs)
            refs = {self.name: output}
            refs.update({f"{self.name}/output_{k}": lambda _i, k=k: output(k) for k in range(n)})
            return refs
        index = {}
        carried = self.carried
        for k in range(len(carried)):
            if not self.is_resource(k):
                index[k] = len(index)

        def result(k: int) -> str:
            return outer_ref(carried[k]) if self.is_resource(k) else output(index[k])

        refs = {self.name: result}
        refs.update({f"{self.name}/exit_{k}": lambda _i, k=k: result(k) for k in range(len(carried))})
        return refs


def _member(c: Construct, name: str) -> bool:
    """Whether ``name`` is one of the nodes the lowering made for ``c`` (TF may name other nodes
    ``while/...`` too: ``while/loop_counter`` is outside the loop)."""
    w = c.name
    if name == w:
        return True
    if not name.startswith(w + "/"):
        return False
    rest = name[len(w) + 1:]
    if c.kind == "while":
        return rest in ("cond", "body", "loop_cond") or rest.startswith(("cond/", "body/")) or bool(_WHILE_PART.match(rest))
    if c.kind == "case":
        return bool(_CASE_PART.match(rest)) or bool(re.match(r"branch_\d+/", rest))
    return rest in _IF_NAMES or rest.startswith(("then/", "else/")) or bool(_IF_PART.match(rest))


def find_constructs(nodes: list[NodeDef]) -> dict[str, Construct]:
    """The outermost lowered Whiles and Ifs among ``nodes``, by name, with their members, and the
    TF1 while loops (``import_tf1_loops.py``), by their anchor's name."""
    by_name = {n.name: n for n in nodes}
    found: dict[str, Construct] = {}
    for n in nodes:
        m = _ENTER.match(n.name)
        if n.op == "Enter" and m and n.attrs.get("frame_name") == m.group(1) and m.group(1) in by_name:
            found.setdefault(m.group(1), Construct(m.group(1), "while", by_name))
        if n.op == "Switch" and n.name.endswith("/switch_pred"):
            c = n.name[: -len("/switch_pred")]
            if c in by_name and f"{c}/branch_executed" in by_name:
                found.setdefault(c, Construct(c, "if", by_name))
        if n.op == "Switch" and n.name.endswith("/switch_0"):
            c = n.name[: -len("/switch_0")]
            if c in by_name and f"{c}/branch_executed" in by_name and f"{c}/pivot_0" in by_name:
                found.setdefault(c, Construct(c, "case", by_name))
    outer = {w: c for w, c in found.items() if not any(w.startswith(o + "/") for o in found if o != w)}
    for c in outer.values():
        c.members = [n for n in nodes if _member(c, n.name)]
    taken = {m.name for c in outer.values() for m in c.members}
    return {**outer, **outermost(all_tf1_loops(nodes, taken) + all_tf1_conds(nodes, taken))}


def check_control_flow(graph, source) -> None:
    """ExportError unless every control-flow primitive at the top level belongs to a lowered TF2
    While, If or Case, or a TF1 while loop or conditional (a body's own are checked as it is written)."""
    members = {m.name for c in find_constructs(graph.nodes).values() for m in c.members}
    for n in graph.nodes:
        if n.op in _PRIMITIVES and n.name not in members:
            raise _refused(n, source)


def _refused(n: NodeDef, source) -> ExportError:
    return ExportError(f"{source}: node '{n.name}' ({n.op}) is control flow specflow import cannot write as a "
                       "spec: it is part of no while loop or conditional of the shapes TensorFlow builds (TF2 While "
                       "and If, TF1 while_loop and cond)")


def construct_node(writer, c: Construct, outer_ref: Callable[[str], str]) -> Block:
    """The spec ``while:`` or ``cond:`` node for ``c``; ``writer`` is importer._SpecWriter."""
    if c.kind == "tf1-while":
        return tf1_while_node(writer, c, outer_ref, _scope_of, Block)
    if c.kind == "tf1-cond":
        return tf1_cond_node(writer, c, outer_ref, _scope_of, Block)
    if c.kind == "case":
        return _case_node(writer, c, outer_ref)
    return _while_node(writer, c, outer_ref) if c.kind == "while" else _cond_node(writer, c, outer_ref)


def _while_node(writer, c: Construct, outer_ref) -> Block:
    w, carried = c.name, c.carried
    var = {k: f"lv{k}" for k in range(len(carried)) if not c.is_resource(k)}
    inner = {}  # W/merge_k, W/identity_k -> what the condition or body reads for them
    for k, t in enumerate(carried):
        inner[f"{w}/merge_{k}"] = inner[f"{w}/identity_{k}"] = var.get(k) or outer_ref(t)
    parts = Block()
    parts["vars"] = {var[k]: outer_ref(carried[k]) for k in var}
    parallel = c.node("enter_0").attrs.get("parallel_iterations", 10)
    if parallel != 10:
        parts["parallel_iterations"] = parallel
    nodes, ref = _scope(writer, c, "cond", inner, set(var.values()), outer_ref)
    parts["cond"] = Block(nodes=Block(nodes), outputs=[ref(c.node("cond").data_inputs[0])])
    nodes, ref = _scope(writer, c, "body", inner, set(var.values()), outer_ref)
    nexts = c.node("body").data_inputs
    parts["body"] = Block(nodes)  # intermediate nodes; in them a var's name is its current value
    parts["next"] = Block({var[k]: ref(nexts[k]) for k in var})
    return Block({"while": parts})


def _cond_node(writer, c: Construct, outer_ref) -> Block:
    if not c.node("then").data_inputs:
        raise ExportError(f"If '{c.name}' returns nothing, which a spec cond: node cannot express")
    carried = c.carried
    alias = {k: f"in{k}" for k in range(len(carried)) if not c.is_resource(k) and not c.unused(k)}
    inner = {f"{c.name}/input_{k}": alias.get(k) or outer_ref(t) for k, t in enumerate(carried) if t is not None}
    parts = Block()
    parts["pred"] = outer_ref(c.node("switch_pred").data_inputs[0])
    parts["inputs"] = {alias[k]: outer_ref(carried[k]) for k in alias}
    for branch in ("then", "else"):
        nodes, ref = _scope(writer, c, branch, inner, set(alias.values()), outer_ref)
        parts[branch] = Block(nodes=Block(nodes), outputs=[ref(t) for t in c.node(branch).data_inputs])
    return Block({"cond": parts})


def _case_node(writer, c: Construct, outer_ref) -> Block:
    """A lowered Case as a chain of ``cond:`` nodes: branch i where ``C/pred_i`` holds, else the
    next cond; the last branch (index N - 1 or out of range) is the innermost else, as TF runs it."""
    n_branches = sum(1 for m in c.members if re.fullmatch(rf"{re.escape(c.name)}/pivot_\d+", m.name))
    if n_branches == 1:  # TF runs the one branch whatever the index
        raise ExportError(f"Case '{c.name}' has one branch, which a spec cond: node cannot express")
    if not c.node("branch_0").data_inputs:
        raise ExportError(f"Case '{c.name}' returns nothing, which a spec cond: node cannot express")
    carried = c.carried
    alias = {k: f"in{k}" for k in range(len(carried)) if not c.is_resource(k) and not c.unused(k)}
    n_out = len(c.node("branch_0").data_inputs)
    taken = set(writer.visible) | set(alias.values())
    inner_name, k = "case_rest", 1
    while inner_name in taken:
        inner_name, k = f"case_rest_{k}", k + 1

    def branch(i: int) -> Block:
        inner = {f"{c.name}/input_{i}_{j}": alias.get(j) or outer_ref(t) for j, t in enumerate(carried)
                 if t is not None}
        nodes, ref = _scope(writer, c, f"branch_{i}", inner, set(alias.values()), outer_ref)
        return Block(nodes=Block(nodes), outputs=[ref(t) for t in c.node(f"branch_{i}").data_inputs])

    def level(i: int, inputs: dict) -> Block:
        parts = Block()
        parts["pred"] = outer_ref(f"{c.name}/pred_{i}")
        parts["inputs"] = inputs
        parts["then"] = branch(i)
        if i + 1 == n_branches - 1:
            parts["else"] = branch(i + 1)
        else:  # the rest of the chain, reading this level's inputs under the same aliases
            rest = level(i + 1, {a: a for a in alias.values()})
            outputs = [inner_name if j == 0 else f"{inner_name}:{j}" for j in range(n_out)]
            parts["else"] = Block(nodes=Block({inner_name: rest}), outputs=outputs)
        return Block({"cond": parts})

    return level(0, {alias[k]: outer_ref(carried[k]) for k in alias})


def _is_gate(n: NodeDef) -> bool:
    return n.op == "NoOp" and bool(_GATE.search(n.name))


def _scope(writer, c: Construct, part: str, inner: dict[str, str], reserved: set[str], outer_ref):
    """(name -> spec node, ref) for the nodes of ``c``'s ``part`` (a condition, body or branch),
    named without their ``c/part/`` prefix; ``inner`` maps the construct's own nodes to names."""
    prefix = f"{c.name}/{part}/"
    nodes = [n for n in c.members if n.name.startswith(prefix) and not _is_gate(n)]
    return _scope_of(writer, nodes, prefix, inner, reserved, outer_ref)


def _scope_of(writer, nodes: list[NodeDef], prefix: str, inner: dict[str, str], reserved: set[str], outer_ref):
    """(name -> spec node, ref) for ``nodes``, named without ``prefix`` where they have it."""
    from specflow.export.importer import _sanitize

    names: dict[str, str] = {}
    outer_names = writer.visible  # an enclosing scope's names: never shadowed here
    taken = set(reserved) | outer_names
    for n in nodes:
        local = _sanitize(n.name[len(prefix):] if n.name.startswith(prefix) else n.name)
        candidate, k = local, 1
        while candidate in taken:
            candidate, k = f"{local}_{k}", k + 1
        taken.add(candidate)
        names[n.name] = candidate
    nested = find_constructs(nodes)
    name_tf1_constructs(nested, names, prefix)
    in_construct = {m.name: names[x.name] for x in nested.values() for m in x.members}
    nested_members = set(in_construct)
    refs: dict = {}

    def ref(tensor: str) -> str:
        t = parse_input(tensor)
        if t.node in inner:
            return inner[t.node]
        if t.node in refs:
            return refs[t.node](t.index)
        if t.node in names:
            return names[t.node] if t.index == 0 else f"{names[t.node]}:{t.index}"
        return outer_ref(tensor)  # a capture (TF2 passes none, but a spec body may read outer tensors)

    def control(name: str) -> str | None:
        if name in in_construct:  # after a nested construct: after its spec node
            return in_construct[name]
        return names.get(name)  # a gate or a pivot: the spec's lowering starts a body's nodes itself

    for x in nested.values():
        refs.update(x.outer_refs(names[x.name], ref))
    out: dict = {}
    for n in nodes:
        if n.name in nested:
            writer.visible = taken
            try:
                out[names[n.name]] = construct_node(writer, nested[n.name], ref)
            finally:
                writer.visible = outer_names
        elif n.name not in nested_members:
            if n.op in _PRIMITIVES:
                raise _refused(n, "the model")
            if n.op in ("Placeholder", "VarHandleOp"):
                raise ExportError(f"node '{n.name}' ({n.op}) inside a loop or branch cannot be written as a spec")
            out[names[n.name]] = writer.node(n, names[n.name], ref, control)
    return out, ref
