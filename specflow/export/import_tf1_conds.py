"""``specflow import`` for TF1-style conditionals: a ``tf.cond`` built from Switch and Merge (as a
frozen TF1 graph holds it, and as ``specflow export`` writes a spec's ``cond:`` node) is written
back as a ``cond:`` node, found by its structure::

    Switch(pred, pred) -> Identity(:1), Identity(:0)    the branch pivots
    Switch(x, pred or Identity(pred)) per input          :1 feeds `then`, :0 feeds `else`
    Merge(else_k, then_k) per output                     the taken branch's value

Which branch a node belongs to is found as TensorFlow's control-flow contexts are: in
topological order a node is in the innermost branch any of its inputs is in (a Switch's output
``:1`` starts its conditional's then-branch, ``:0`` its else-branch), and a Merge of one
conditional's two branches leaves it. A conditional is its Switches' predicate and name scope
(see ``all_tf1_conds``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from specflow.errors import ExportError
from specflow.graph.dtypes import resource
from specflow.graph.graph_def import NodeDef, canonical_tensor, parse_input
from specflow.graph.topo import LOOP_BACK_EDGES


@dataclass
class Tf1Cond:
    """A TF1 conditional on ``pred`` in name scope ``scope``; ``name`` is its anchor, the first
    Merge, where the spec node is written."""

    name: str
    pred: str
    scope: str
    inputs: list[NodeDef]  # the input Switches, in graph order
    merges: list[NodeDef]
    then_of: list[str]  # per Merge: its then-branch input
    else_of: list[str]
    then_nodes: list[NodeDef]
    else_nodes: list[NodeDef]
    members: list[NodeDef] = field(default_factory=list)
    kind: str = "tf1-cond"

    @property
    def key_node(self) -> str:
        """A node of its own that lies inside any construct it is nested in (an input Switch)."""
        return (self.inputs or self.merges)[0].name

    def outer_refs(self, spec_name: str, outer_ref: Callable[[str], str]) -> dict[str, Callable[[int], str]]:
        return {m.name: (lambda _i, k=k: spec_name if k == 0 else f"{spec_name}:{k}") for k, m in enumerate(self.merges)}


def all_tf1_conds(nodes: list[NodeDef], taken: set[str]) -> list[Tf1Cond]:
    """Every TF1 conditional among ``nodes`` (not in ``taken``), nested ones too. A conditional is
    its Switches' (predicate, name scope): TF1 switches its inputs on ``<scope>/pred_id``, an
    Identity of the predicate, and the predicate on itself as ``<scope>/Switch`` (the pivots'
    source); specflow's export switches on the predicate as ``<scope>/Switch_k``. An export may
    have pruned the predicate's own Switch: nothing needs it."""
    scope = [n for n in nodes if n.name not in taken]
    by_name = {n.name: n for n in scope}
    cond_of: dict[str, tuple[str, str]] = {}  # a conditional's Switch -> (predicate, scope)
    for n in scope:
        if n.op == "Switch" and len(n.data_inputs) == 2:
            key = _key(n, by_name)
            if key is not None:
                cond_of[n.name] = key
    if not cond_of:
        return []
    _lowered_if_scopes(cond_of)
    order = _order(scope, by_name)
    if order is None:
        return []
    ctx: dict[str, tuple] = {}  # node -> its branches, outermost first: ((key, "then"), ...)

    def tensor_ctx(t: str) -> tuple:
        p = parse_input(t)
        base = ctx.get(p.node, ())
        if p.node in cond_of:
            return (*base, (cond_of[p.node], "then" if p.index == 1 else "else"))
        return base

    merges: dict[tuple, list[tuple[NodeDef, str, str]]] = {}  # key -> (Merge, then input, else input)
    for n in order:
        srcs = [i for i in n.inputs if not (n.op == "Merge" and _back_edge(i, by_name))]
        got = [ctx.get(i[1:], ()) if i.startswith("^") else tensor_ctx(i) for i in srcs]
        if n.op == "Merge" and len(n.data_inputs) == 2 and len(got) >= 2:
            a, b = got[0], got[1]
            k = len(_common(a, b))
            if len(a) > k and len(b) > k and a[k][0] == b[k][0] and {a[k][1], b[k][1]} == {"then", "else"}:
                ctx[n.name] = a[:k]
                t, e = (n.data_inputs[0], n.data_inputs[1]) if a[k][1] == "then" else (n.data_inputs[1], n.data_inputs[0])
                merges.setdefault(a[k][0], []).append((n, t, e))
                continue
        ctx[n.name] = max(got, key=len, default=())
    pos = {n.name: i for i, n in enumerate(order)}
    found = []
    for key, ms in merges.items():
        switches = sorted((by_name[x] for x, k in cond_of.items() if k == key), key=lambda n: pos[n.name])
        here = ctx.get(switches[0].name, ())
        pred_switches = {n.name for n in switches if _is_pred_switch(n)}
        pivots = {n.name for n in scope if n.op == "Identity" and n.data_inputs
                  and parse_input(n.data_inputs[0]).node in pred_switches}  # fmt: skip
        in_branch = {b: [n for n in order if ctx.get(n.name, ())[: len(here) + 1] == (*here, (key, b))
                         and n.name not in pivots and cond_of.get(n.name) != key] for b in ("then", "else")}  # fmt: skip
        ms = sorted(ms, key=lambda m: pos[m[0].name])
        own = {*(n.name for n in switches), *pivots, *(m[0].name for m in ms)}
        own |= {n.name for b in in_branch.values() for n in b}
        found.append(Tf1Cond(ms[0][0].name, key[0], key[1], [n for n in switches if n.name not in pred_switches],
                             [m[0] for m in ms], [m[1] for m in ms], [m[2] for m in ms], in_branch["then"],
                             in_branch["else"], [n for n in order if n.name in own]))  # fmt: skip
    return found


def _is_pred_switch(n: NodeDef) -> bool:
    return canonical_tensor(n.data_inputs[0]) == canonical_tensor(n.data_inputs[1])


def _key(n: NodeDef, by_name: dict) -> tuple[str, str] | None:
    """(predicate, scope) of a conditional's Switch ``n``; None for a loop's (on a LoopCond)."""
    q = parse_input(n.data_inputs[1])
    src = by_name.get(q.node)
    if src is not None and src.op == "LoopCond":
        return None
    if (src is not None and src.op == "Identity" and src.data_inputs and not _is_pred_switch(n)
            and src.name.rpartition("/")[2].startswith("pred_id")):  # TF1's <scope>/pred_id
        return canonical_tensor(src.data_inputs[0]), src.name.rpartition("/")[0]
    return canonical_tensor(n.data_inputs[1]), _unsuffixed(n.name).rpartition("/")[0]


def _lowered_if_scopes(cond_of: dict[str, tuple[str, str]]) -> None:
    """A lowered If's input Switches are named ``<if>/<input node>/_N``, and the input node's
    name may hold slashes (``Func/cond/then/_10/input/_56``): each takes the scope of its If's
    ``<if>/switch_pred/_N`` on the same predicate, the longest that prefixes its name."""
    lowered: dict[str, list[str]] = {}
    for name, (pred, scope) in cond_of.items():
        if _unsuffixed(name) == f"{scope}/switch_pred":
            lowered.setdefault(pred, []).append(scope)
    for name, (pred, scope) in cond_of.items():
        fits = [s for s in lowered.get(pred, ()) if name.startswith(s + "/")]
        if fits and scope not in fits:
            cond_of[name] = (pred, max(fits, key=len))


def _unsuffixed(name: str) -> str:
    """``name`` without a ``/_N`` uniquifier: TF's lowering of an If (a TF2 graph frozen with
    lowered control flow) names its Switches ``<if>/switch_pred/_2`` and ``<if>/<input>/_5``,
    all in the If's scope ``<if>``."""
    head, _, last = name.rpartition("/")
    return head if head and last.startswith("_") and last[1:].isdigit() else name


def _back_edge(i: str, by_name: dict) -> bool:
    src = by_name.get(parse_input(i.lstrip("^")).node)
    return src is not None and src.op in LOOP_BACK_EDGES


def _order(scope: list[NodeDef], by_name: dict) -> list[NodeDef] | None:
    """``scope`` in topological order (inputs from outside it count as ready; a loop's back edges
    are left out), or None on a cycle."""
    users: dict[str, list[str]] = {}
    waiting = {}
    for n in scope:
        srcs = {parse_input(i.lstrip("^")).node for i in n.inputs}
        srcs = {x for x in srcs if x in by_name and not (n.op == "Merge" and by_name[x].op in LOOP_BACK_EDGES)}
        waiting[n.name] = len(srcs)
        for x in srcs:
            users.setdefault(x, []).append(n.name)
    ready = [n.name for n in scope if waiting[n.name] == 0]
    order = []
    while ready:
        name = ready.pop()
        order.append(by_name[name])
        for u in users.get(name, []):
            waiting[u] -= 1
            if waiting[u] == 0:
                ready.append(u)
    return order if len(order) == len(scope) else None


def _common(a: tuple, b: tuple) -> tuple:
    k = 0
    while k < min(len(a), len(b)) and a[k] == b[k]:
        k += 1
    return a[:k]


def tf1_cond_node(writer, c: Tf1Cond, outer_ref, scope, block) -> dict:
    """The spec ``cond:`` node for ``c``; ``scope`` is import_control_flow's scope writer and
    ``block`` its YAML block type."""
    alias = {k: f"in{k}" for k, s in enumerate(c.inputs) if s.attrs.get("T") != resource}
    inner = {s.name: alias.get(k) or outer_ref(s.data_inputs[0]) for k, s in enumerate(c.inputs)}
    # The predicate switched on itself is the pivots' source, but a branch may read it as data
    # too (autograph's `a and b` is cond(a, b, a): the else branch returns a): there it is the
    # predicate's value.
    pred_switches = {m.name for m in c.members if m.op == "Switch" and _is_pred_switch(m)}
    for m in c.members:
        if m.name in pred_switches or (m.op == "Identity" and m.data_inputs
                                       and parse_input(m.data_inputs[0]).node in pred_switches):
            inner[m.name] = outer_ref(c.pred)
    parts = block()
    parts["pred"] = outer_ref(c.pred)
    parts["inputs"] = {alias[k]: outer_ref(c.inputs[k].data_inputs[0]) for k in alias}
    prefix = c.scope + "/" if c.scope else ""
    for branch, nodes, outs in (("then", c.then_nodes, c.then_of), ("else", c.else_nodes, c.else_of)):
        written, ref = scope(writer, nodes, prefix, inner, set(alias.values()), outer_ref)
        parts[branch] = block(nodes=block(written), outputs=[ref(t) for t in outs])
    if not c.merges:
        raise ExportError(f"cond '{c.scope}' returns nothing, which a spec cond: node cannot express")
    return block({"cond": parts})
