"""Loop unrolling for the optimize stage: a while loop whose trip count is known once constants
are folded becomes straight-line code (one copy of the body per iteration), so the executor runs
it without frames and the straight-line and codegen paths apply.

The trip count is found by running the loop's own nodes on the host while their inputs are
known (a counter from a Const, ``Less`` against a Const, ...), as Grappler's loop optimizer
reasons about counted loops. Only simple loops are unrolled; all others are left as they are:

- the body holds no stateful op (no variable update, no random draw: the order and count of
  their runs stay the executor's), no ``Switch``/``Merge`` of its own (no cond inside) and no
  other frame (no nested loop);
- no ``Merge``'s value_index is read; nothing but the loop's own nodes sits in the frame;
- trip count x body nodes <= ``OptimizeOptions.unroll_limit`` (2,000).

A loop with a gradient (``train/loop_gradients.py``) is unrolled together with its backward
loops, or not at all: the forward loop's stack pushes are its only stateful nodes, each stack
(a ``StackV2`` outside every loop) has one push in the forward loop and one pop in one backward
loop, and each backward loop, whose trip count comes from the forward loop's counter Exit,
runs as many iterations. Then the pop of backward iteration ``j`` is the value pushed by forward
iteration ``trips - 1 - j``: a direct edge, and the stacks go. The limit counts the copies of
all the loops together.

Deadness: the copies read the tensors that entered the loop, so a loop on a cond branch stays
dead with it; a copy with no inputs at all, and each Exit's replacement, waits on the entering
values (a control edge), so a value the loop computes from constants alone is dead with them.
"""

from __future__ import annotations

from specflow.graph.graph_def import GraphDef, NodeDef, parse_input
from specflow.graph.topo import LOOP_BACK_EDGES, topological_order
from specflow.ops.eval import run_kernel
from specflow.ops.registry import get_op
from specflow.runtime.optimize import FOLD_LIMIT, OptimizeResult, _control_source, _Graph

_FRAME_OPS = frozenset({"Enter", "Merge", "Switch", "LoopCond", "NextIteration", "Exit"})


def unroll_loops(g: _Graph, limit: int, result: OptimizeResult) -> None:
    frames: dict[str, list[NodeDef]] = {}
    for n in g.live():
        if n.op == "Enter":
            frames.setdefault(n.attrs["frame_name"], []).append(n)
    if not frames:
        return
    consumers = g.consumers()
    bodies = {f: _body(g, enters, consumers) for f, enters in frames.items()}
    top = _top_level(g, frames, bodies)  # a loop after those whose Exits it reads
    stacks = _stack_pairs(g, frames, bodies, consumers)
    done: set[str] = set()
    known: dict = {}  # the Exit values of loops planned so far (a backward loop's trip count reads them)
    for frame in top:
        if frame in done:
            continue
        enters = frames[frame]
        own = [s for s in stacks if s.push_frame == frame]
        backward = list(dict.fromkeys(s.pop_frame for s in own))
        if any(f not in top or f in done for f in backward):
            continue
        plan = _plan(g, enters, bodies[frame], consumers, limit, {s.push.name for s in own}, known)
        if plan is None:
            continue
        trips, finals = plan[0], {**known, **plan[3]}
        plans = [(frame, plan)]
        for f in backward:
            allowed = {s.pop.name for s in stacks if s.pop_frame == f and s.push_frame == frame}
            if len(allowed) != sum(1 for s in stacks if s.pop_frame == f):
                break  # it pops stacks another loop pushes
            p = _plan(g, frames[f], bodies[f], consumers, limit, allowed, finals)
            if p is None or p[0] != trips:
                break
            plans.append((f, p))
        else:
            if trips * sum(len(p[2]) for _, p in plans) > limit or any(s.overflows(g, trips) for s in own):
                continue
            pushed = {s.push.name: [] for s in own}
            pops = {s.pop.name: pushed[s.push.name] for s in own}
            for f, (n, loop_vars, copied, _) in plans:
                _unroll(g, frames[f], bodies[f], n, loop_vars, copied, pushed, pops)
                result.unrolled.append(f"{f} x{n}")
                done.add(f)
            known.update(finals)
            for s in own:  # their Enters went with the frames
                del g.nodes[s.stack.name]
            g.order = g.live()
            consumers = g.consumers()


def _top_level(g: _Graph, frames: dict[str, list[NodeDef]], bodies: dict[str, set[str]]) -> list[str]:
    """The frames not nested in another (their copies would have to live in the outer frame),
    each after the loops whose Exits it reads (a backward loop its forward loop's counter),
    which must be top-level too. The frames' order need not be the loops'."""
    candidates = {}
    for frame, enters in frames.items():
        others = {f: b for f, b in bodies.items() if f != frame}
        if any(b & bodies[frame] for b in others.values()):
            continue
        needs: set[str] = set()  # loops whose Exits it reads
        for e in enters:
            src = parse_input(e.inputs[0]).node
            holders = {f for f, b in others.items() if src in b}
            if holders and g.nodes[src].op != "Exit":
                break
            needs |= holders
        else:
            candidates[frame] = needs
    top: dict[str, None] = {}  # ordered
    while True:
        more = [f for f, needs in candidates.items() if f not in top and needs <= top.keys()]
        if not more:
            return list(top)
        top.update(dict.fromkeys(more))


class _StackPair:
    """A gradient's stack: ``StackV2`` outside the loops, one push in a forward loop, one pop in
    another loop."""

    def __init__(self, stack: NodeDef, push: NodeDef, push_frame: str, pop: NodeDef, pop_frame: str):
        self.stack, self.push, self.push_frame, self.pop, self.pop_frame = stack, push, push_frame, pop, pop_frame

    def overflows(self, g: _Graph, trips: int) -> bool:
        """Whether ``trips`` pushes exceed a constant ``max_size`` (the loop reports that error)."""
        src = g.nodes[parse_input(self.stack.inputs[0]).node]
        if src.op != "Const":
            return True
        size = int(src.attrs["value"])
        return 0 <= size < trips


def _stack_pairs(g: _Graph, frames, bodies, consumers) -> list[_StackPair]:
    """The stacks used only as one push in one loop and one pop in another, of the same type."""
    frame_of = {e.name: f for f, enters in frames.items() for e in enters}
    pairs = []
    for stack in g.live():
        if stack.op != "StackV2" or stack.control_inputs:
            continue
        users = {"StackPushV2": [], "StackPopV2": []}
        for enter, i in consumers.get(stack.name, ()):
            if enter.op != "Enter" or not enter.attrs.get("is_constant") or i != 0:
                break
            for c, k in consumers.get(enter.name, ()):
                if c.op not in users or k != 0 or c.inputs[k].startswith("^"):
                    users["bad"] = [c]
                    break
                users[c.op].append((c, frame_of[enter.name]))
        else:
            if set(users) != {"StackPushV2", "StackPopV2"} or len(users["StackPushV2"]) != 1 or len(users["StackPopV2"]) != 1:
                continue
            (push, fp), (pop, fq) = users["StackPushV2"][0], users["StackPopV2"][0]
            if fp == fq or push.attrs.get("T") != pop.attrs.get("elem_type") or pop.attrs.get("elem_type") != stack.attrs.get("elem_type"):
                continue
            # Only the loop's own nodes may read the push (its control edges order the counter).
            if any(c.name not in bodies[fp] for c, _ in consumers.get(push.name, ())):
                continue
            if any(c.name not in bodies[fq] for c, _ in consumers.get(pop.name, ())):
                continue
            pairs.append(_StackPair(stack, push, fp, pop, fq))
    return pairs


def _body(g: _Graph, enters: list[NodeDef], consumers) -> set[str]:
    """Names of the nodes in an Enter's frame: reachable from its Enters, up to its Exits."""
    seen: set[str] = set()
    todo = [e.name for e in enters]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if g.nodes[name].op != "Exit":
            todo.extend(c.name for c, _ in consumers.get(name, ()))
    return seen


class _Loop:
    """One loop var's nodes."""

    def __init__(self, enter: NodeDef, merge: NodeDef, switch: NodeDef, nxt: NodeDef, exit_: NodeDef | None):
        self.enter, self.merge, self.switch, self.next, self.exit = enter, merge, switch, nxt, exit_


def _plan(g: _Graph, enters, body: set[str], consumers, limit: int, stack_ops=frozenset(), known_exits=None):
    """(trip count, loop vars, body order, final loop var values) when the loop can be unrolled,
    else None. ``stack_ops``: the stack pushes/pops allowed in the body (paired with another
    loop's); ``known_exits``: values of other loops' Exits known at plan time."""
    nodes = [g.nodes[n] for n in body]
    loop_conds = [n for n in nodes if n.op == "LoopCond"]
    if len(loop_conds) != 1:
        return None
    for n in nodes:
        if n.op in ("RefEnter", "RefExit", "RefMerge", "RefSwitch", "RefNextIteration", "ControlTrigger"):
            return None
        if n.op not in _FRAME_OPS and (get_op(n.op).is_stateful or n.op.startswith("_")) and n.name not in stack_ops:
            return None
    loop_vars = []
    for e in enters:
        if e.attrs.get("is_constant"):
            continue
        users = [c for c, _ in consumers.get(e.name, ())]
        if len(users) != 1 or users[0].op != "Merge" or len(users[0].data_inputs) != 2:
            return None
        merge = users[0]
        m_users = [(c, i) for c, i in consumers.get(merge.name, ())]
        if any(not c.inputs[i].startswith("^") and parse_input(c.inputs[i]).index == 1 for c, i in m_users):
            return None  # value_index read
        switches = [c for c, _ in m_users if c.op == "Switch"]
        if len(switches) != 1:
            return None
        sw = switches[0]
        nxt = g.nodes[parse_input(merge.data_inputs[1]).node]
        if nxt.op != "NextIteration" or parse_input(merge.data_inputs[0]).node != e.name:
            return None
        exits = [c for c, i in consumers.get(sw.name, ()) if c.op == "Exit"]
        loop_vars.append(_Loop(e, merge, sw, nxt, exits[0] if exits else None))
    # Every Switch/Merge in the body is a loop var's; each Switch's port 0 goes only to its Exit.
    own = {v.merge.name for v in loop_vars} | {v.switch.name for v in loop_vars}
    if any(n.op in ("Merge", "Switch") and n.name not in own for n in nodes):
        return None
    for v in loop_vars:
        for c, i in consumers.get(v.switch.name, ()):
            if c.op != "Exit" and (c.inputs[i].startswith("^") or parse_input(c.inputs[i]).index == 0):
                return None
    order = [n for n in topological_order(GraphDef(g.live()), allow_back_edges=LOOP_BACK_EDGES) if n.name in body]
    copied = [n for n in order if n.op not in _FRAME_OPS]
    counted = _trip_count(g, loop_vars, order, loop_conds[0], max(limit // max(len(copied), 1), 0), known_exits or {})
    if counted is None:
        return None
    finals = {v.exit.name: x for v, x in zip(loop_vars, counted[1]) if v.exit is not None and x is not None}
    return counted[0], loop_vars, copied, finals


def _trip_count(g: _Graph, loop_vars, order, loop_cond: NodeDef, max_trips: int, exits: dict):
    """Run the loop's nodes on the host as far as their inputs are known; the iterations until
    LoopCond is false and the loop vars' values then, or None (unknown, or more than
    ``max_trips``). ``exits``: other loops' Exit values known (a forward loop's counter)."""
    values: dict[str, list] = {}

    def known(tensor: str):
        ref = parse_input(tensor)
        out = values.get(ref.node)  # (absent: unknown, every output)
        return None if out is None else out[ref.index]

    def outside(tensor: str):
        node = g.nodes[parse_input(tensor).node]
        if parse_input(tensor).index:
            return None
        return node.attrs["value"] if node.op == "Const" else exits.get(node.name)

    current = [outside(v.enter.inputs[0]) for v in loop_vars]
    for trips in range(max_trips + 2):
        values.clear()
        by_merge = {v.merge.name: x for v, x in zip(loop_vars, current)}
        for n in order:
            if n.op == "Merge":
                values[n.name] = [by_merge[n.name], None]
            elif n.op == "Enter":
                values[n.name] = [outside(n.inputs[0])]
            elif n.op == "Switch":
                x = known(n.data_inputs[0])
                values[n.name] = [x, x]
            elif n.op in ("Exit",):
                continue
            else:
                ins = [known(i) for i in n.data_inputs]
                if any(x is None or getattr(x, "size", 1) > FOLD_LIMIT for x in ins):
                    continue  # unknown: left out of ``values``
                try:
                    values[n.name] = run_kernel(n, ins)
                except Exception:  # unknown: not unrolled; the step reports real errors
                    pass
        pred = known(loop_cond.data_inputs[0])
        if pred is None or getattr(pred, "shape", ()) != ():
            return None
        if not bool(pred):
            return trips, current
        if trips >= max_trips:
            return None
        current = [known(v.next.data_inputs[0]) for v in loop_vars]
    return None


def _unroll(g: _Graph, enters, body: set[str], trips: int, loop_vars, copied: list[NodeDef],
            pushed: dict[str, list[str]], pops: dict[str, list[str]]) -> None:
    """Replace the frame by ``trips`` copies of its body; each Exit by an Identity of the final
    value. A push in ``pushed`` appends what iteration i pushes; a pop in ``pops`` reads the
    list a forward loop filled, from the end (the pushes and pops are not copied)."""
    # What waits on the values entering the loop (their deadness): see the module docstring.
    # A paired stack's handle is not among them: the stack goes.
    handles = {parse_input(n.data_inputs[0]).node for n in copied if n.name in pushed or n.name in pops}
    gate = sorted({_control_source(g, e.inputs[0]) for e in enters if e.name not in handles})
    state = [v.enter.inputs[0] for v in loop_vars]  # each var's value entering this iteration
    merges = {v.merge.name: k for k, v in enumerate(loop_vars)}
    switches = {v.switch.name: k for k, v in enumerate(loop_vars)}
    captures = {e.name: e.inputs[0] for e in enters if e.attrs.get("is_constant")}
    new_nodes: list[NodeDef] = []
    for it in range(trips):
        names = {n.name: f"{n.name}/unrolled_{it}" for n in copied}
        alias = {n: values[trips - 1 - it] for n, values in pops.items() if n in body}

        def mapped(inp: str, names=names, state=state, alias=alias) -> str | None:
            ref = parse_input(inp)
            if ref.is_control and (ref.node in body or ref.node in captures):
                # Inside the frame a control edge places a node in it (a Const on the pivot) or
                # orders pure ops: neither matters in straight-line code without conds, and the
                # gate below keeps the deadness. Kept, they would chain the copies' folded Consts.
                return None
            if ref.node in merges or ref.node in switches:
                k = merges.get(ref.node, switches.get(ref.node))
                src = state[k]
                return "^" + parse_input(src).node if ref.is_control else src
            if ref.node in captures:
                src = captures[ref.node]
                return "^" + parse_input(src).node if ref.is_control else src
            if ref.node in alias:  # a push forwards what it pushes; a pop reads it
                return alias[ref.node]
            if ref.node in names:
                new = names[ref.node]
                return "^" + new if ref.is_control else (new if ref.index == 0 else f"{new}:{ref.index}")
            return inp

        for n in copied:
            if n.name in pushed:
                alias[n.name] = mapped(n.data_inputs[1])
                pushed[n.name].append(alias[n.name])
                continue
            if n.name in pops:
                continue
            inputs = [m for m in (mapped(i) for i in n.inputs) if m is not None]
            if not inputs:
                inputs = ["^" + c for c in gate]
            new_nodes.append(NodeDef(names[n.name], n.op, inputs, n.device, dict(n.attrs), n.location))
        state = [mapped(v.next.data_inputs[0]) for v in loop_vars]
    for name in body:
        del g.nodes[name]
    g.order = g.live()
    for n in new_nodes:
        g.order.append(n)
        g.nodes[n.name] = n
    for k, v in enumerate(loop_vars):
        if v.exit is None:
            continue
        ident = NodeDef(v.exit.name, "Identity", [state[k], *("^" + c for c in gate)], v.exit.device,
                        {"T": v.exit.attrs["T"]}, v.exit.location)  # fmt: skip
        g.order.append(ident)
        g.nodes[ident.name] = ident
    g.order = topological_order(GraphDef(g.live()), allow_back_edges=LOOP_BACK_EDGES)
