"""Which loops of a partition run compiled, and the partition with each of them as one node.

A while loop the optimize stage could not unroll (a fed or data-dependent trip count) runs on
frames (``frames.py``): every node of every iteration is tagged, counted and scheduled, ~5 µs
a node run. A loop of the simple shape TF's ``while_loop`` builds instead becomes one
``_CompiledLoop`` node here, whose kernel (``compiled_loop.py``) runs the loop's nodes in a
generated function, one pass per iteration, sequentially. A loop qualifies when:

- it holds no other frame, or only ones compiled already (innermost first: an inner loop
  becomes a ``_CompiledLoop`` node of the outer loop's body, run once per outer iteration);
- every loop variable is ``Enter -> Merge <- NextIteration``, ``Switch(Merge, LoopCond)``, its
  false side feeding only ``Exit``s and its true side the body; one ``LoopCond`` decides;
- the other nodes neither route dead tensors (no ``Switch``/``Merge`` of a cond inside, no
  ``_Send``/``_Recv``: a loop split across devices stays on frames) nor wait asynchronously
  (checked when the kernels are found: ``compiled_loop.NotCompiled`` sends the loop back);
- nothing reads a non-constant Enter but its Merge (a value that exists only in iteration 0),
  a Merge's ``value_index``, or the LoopCond but the Switches; structure nodes have no control
  inputs of their own (an Enter's control inputs become the loop node's).

Semantics kept: the nodes not downstream of a Switch's true side (the predicate's, and those
reading only loop invariants) run every iteration, the last one included; the others run only
while the predicate holds (in TF they are dead in the last iteration). ``parallel_iterations``
becomes 1: a sequential schedule is one the frames could have run. A dead input makes the
whole loop node dead (a loop on an untaken cond branch), as its Exits would be on frames.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specflow.errors import GraphError
from specflow.graph.graph_def import GraphDef, NodeDef, TensorRef, parse_input
from specflow.graph.topo import LOOP_BACK_EDGES, topological_order
from specflow.runtime.frame_info import ROOT, ControlFlowInfo

LOOP_OP = "_CompiledLoop"
_STRUCTURE = frozenset({"Enter", "Merge", "Switch", "Exit", "NextIteration", "LoopCond"})
# Body ops the compiled loop cannot run: they route dead tensors or move values between devices
# (frames tag those with the iteration); ControlTrigger runs on dead inputs.
_NOT_COMPILED = frozenset(
    {"_Send", "_Recv", "ControlTrigger", "RefEnter", "RefExit", "RefMerge", "RefSwitch"}
)


@dataclass
class LoopShape:
    """One compilable loop. Tensors are ``(node, output)``; ``enters`` are the loop node's inputs
    in order, ``exits`` its outputs."""

    frame: str
    name: str  # the _CompiledLoop node's name
    nodes: list[NodeDef]  # every node of the frame, in topological order
    enters: list[str]
    const: list[bool]  # per Enter: a loop invariant (is_constant)
    merges: list[str]  # per loop variable
    switches: list[str | None]  # None: a variable only the predicate reads
    nexts: list[str]
    var_enter: list[int]  # per loop variable: the index of its Enter
    exits: list[str]
    exit_var: list[int]  # per Exit: its loop variable
    loop_cond: str
    cond_nodes: list[str] = field(default_factory=list)  # run every iteration
    body_nodes: list[str] = field(default_factory=list)  # run while the predicate holds


def plan_loops(graph_def: GraphDef, refused: frozenset[str] = frozenset()) -> tuple[GraphDef, list[LoopShape]]:
    """``graph_def`` with its compilable loops collapsed (see the module docstring), and those
    loops, innermost first (none of the frames in ``refused``). A loop holding another is looked
    at once the inner one is a node: a nested loop compiles whole, its inner loop one node of
    the outer loop's body (run once per outer iteration)."""
    shapes: list[LoopShape] = []
    seen: set[str] = set(refused)
    while True:
        try:
            cf = ControlFlowInfo(graph_def)
        except GraphError:  # a malformed loop: frames report it as they always did
            break
        order = topological_order(graph_def, allow_back_edges=LOOP_BACK_EDGES)
        members: dict[str, list[NodeDef]] = {f: [] for f in cf.frames}
        for n in order:
            f = cf.frame_of[n.name]
            if f != ROOT:
                members[f].append(n)
        outer = {info.parent for info in cf.frames.values()}
        names = {n.name for n in graph_def.nodes}
        found = []
        for frame in cf.frames:
            if frame in outer or frame in seen:
                continue  # it still holds a loop (or was looked at already)
            seen.add(frame)
            shape = _shape(frame, members[frame], names)
            if shape is not None:
                found.append(shape)
                names.add(shape.name)
        if not found:
            break
        graph_def = collapse(graph_def, found)
        shapes += found
    return graph_def, shapes


def _shape(frame: str, nodes: list[NodeDef], names: set[str]) -> LoopShape | None:
    """The loop's structure, or None when it is not the simple shape."""
    by_name = {n.name: n for n in nodes}
    users: dict[str, list[tuple[NodeDef, int, bool]]] = {n.name: [] for n in nodes}  # (user, output, control)
    for n in nodes:
        for inp in n.inputs:
            ref = parse_input(inp)
            if ref.node in users:
                users[ref.node].append((n, ref.index, ref.is_control))
    of = lambda op: [n for n in nodes if n.op == op]  # noqa: E731
    conds = of("LoopCond")
    if len(conds) != 1 or any(n.op in _NOT_COMPILED for n in nodes):
        return None
    lc = conds[0]
    if len(lc.inputs) != 1 or any(u.op != "Switch" or c or parse_input(u.inputs[1]).node != lc.name
                                  for u, _, c in users[lc.name]):  # fmt: skip
        return None
    if any(n.control_inputs for n in nodes if n.op in _STRUCTURE and n.op != "Enter"):
        return None
    enters = of("Enter")
    enter_ix = {e.name: i for i, e in enumerate(enters)}
    const = [bool(e.attrs.get("is_constant", False)) for e in enters]
    merges, switches, nexts, var_enter = [], [], [], []
    for m in of("Merge"):
        srcs = [parse_input(i) for i in m.inputs]
        kinds = sorted(by_name[s.node].op if s.node in by_name else "" for s in srcs)
        if len(srcs) != 2 or kinds != ["Enter", "NextIteration"] or any(s.index for s in srcs):
            return None
        enter = next(s.node for s in srcs if by_name[s.node].op == "Enter")
        nxt = next(s.node for s in srcs if by_name[s.node].op == "NextIteration")
        sw = [u for u, k, c in users[m.name] if u.op == "Switch"]
        # (A variable only the predicate reads has no Switch: pruning removed its unused Exit.)
        if (const[enter_ix[enter]] or len(sw) > 1 or any(k > 0 for _, k, _ in users[m.name])
                or [u.name for u, _, _ in users[enter]] != [m.name] or [u.name for u, _, _ in users[nxt]] != [m.name]
                or any(parse_input(w.inputs[0]).node != m.name or parse_input(w.inputs[1]) != TensorRef(lc.name)
                       for w in sw)):  # fmt: skip
            return None
        merges.append(m.name)
        switches.append(sw[0].name if sw else None)
        nexts.append(nxt)
        var_enter.append(enter_ix[enter])
    if (
        not merges
        or len([w for w in switches if w]) != len(of("Switch"))
        or len(nexts) != len(of("NextIteration"))
    ):
        return None
    if any(not c and enter_ix[e.name] not in var_enter for e, c in zip(enters, const)):
        return None  # a non-constant Enter that is no loop variable's
    var_of = {s: j for j, s in enumerate(switches) if s}
    exits, exit_var = [], []
    for x in of("Exit"):
        src = parse_input(x.inputs[0])
        if src.node not in var_of or src.index != 0:
            return None
        exits.append(x.name)
        exit_var.append(var_of[src.node])
    for s in filter(None, switches):
        for u, k, c in users[s]:
            if (
                c
                or (k == 0 and u.op != "Exit")
                or (k == 1 and u.op in _STRUCTURE and u.op != "NextIteration")
            ):
                return None
    # Body: downstream of a Switch's true side; the rest runs every iteration.
    body: set[str] = set()
    cond_nodes, body_nodes = [], []
    for n in nodes:
        if n.op in _STRUCTURE:
            continue
        for inp in n.inputs:
            ref = parse_input(inp)
            src = by_name.get(ref.node)
            if src is None:
                return None  # (frame_info puts every input of a frame node in the frame)
            if src.op == "Enter" and not const[enter_ix[src.name]]:
                return None  # read in iteration 0 only
            if src.op in ("Exit", "NextIteration", "LoopCond") or (src.op == "Switch" and ref.is_control):
                return None
            if src.op == "Switch" and ref.index == 0:
                return None
            if src.name in body or src.op == "Switch":
                body.add(n.name)
        (body_nodes if n.name in body else cond_nodes).append(n.name)
    pred = parse_input(lc.inputs[0]).node
    if pred in body or by_name.get(pred, lc).op in ("Switch", "NextIteration", "Exit", "LoopCond"):
        return None  # (a non-constant Enter was refused above)
    for nx in nexts:  # a next value must be the body's (dead in the last iteration on frames)
        src = parse_input(by_name[nx].inputs[0])
        if src.node not in body and not (by_name[src.node].op == "Switch" and src.index == 1):
            return None
    name = f"{frame}/_loop"
    while name in names:
        name += "_"
    return LoopShape(frame, name, nodes, [e.name for e in enters], const, merges, switches, nexts, var_enter,
                     exits, exit_var, lc.name, cond_nodes, body_nodes)  # fmt: skip


def collapse(graph_def: GraphDef, shapes: list[LoopShape]) -> GraphDef:
    """``graph_def`` with each loop of ``shapes`` replaced by its ``_CompiledLoop`` node: inputs
    the Enters' inputs (and their control inputs), output k the value of Exit k."""
    gone: set[str] = set()
    renamed: dict[str, str] = {}  # Exit -> loop node output
    loops: list[NodeDef] = []
    node_map = graph_def.node_map()
    for s in shapes:
        gone.update(n.name for n in s.nodes)
        for k, x in enumerate(s.exits):
            renamed[x] = f"{s.name}:{k}"
        enters = [node_map[e] for e in s.enters]
        ctrl = list(dict.fromkeys(f"^{c}" for e in enters for c in e.control_inputs))
        loops.append(NodeDef(s.name, LOOP_OP, [e.data_inputs[0] for e in enters] + ctrl,
                             enters[0].device, {"frame_name": s.frame}, enters[0].location))  # fmt: skip
    out = []
    for n in [*graph_def.nodes, *loops]:
        if n.name in gone:
            continue
        if any(parse_input(i).node in renamed for i in n.inputs):
            n = n.copy()
            n.inputs = [_rename(i, renamed) for i in n.inputs]
        out.append(n)
    return GraphDef(out, dict(graph_def.versions), graph_def.library)


def _rename(inp: str, renamed: dict[str, str]) -> str:
    ref = parse_input(inp)
    new = renamed.get(ref.node)
    if new is None:
        return inp
    if ref.is_control:
        return "^" + new.rpartition(":")[0]
    return new  # an Exit has one output
