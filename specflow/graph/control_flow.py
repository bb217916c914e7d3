"""Conditionals and while loops built from the five control-flow primitives (whitepaper 4.4):
TensorFlow's ``tf.cond`` and ``tf.while_loop`` in their v1 graph form.

``cond(b, pred, then_fn, else_fn, inputs)``::

    Switch(pred, pred) -> switch_t / switch_f       the branch pivots
    Switch(x, pred) for every input and captured    :1 feeds `then`, :0 feeds `else`
    then/..., else/...                              each branch, built by its function
    Merge([else_k, then_k])                         one per output: the taken branch's value

``while_loop(b, cond_fn, body_fn, loop_vars)``, per loop var ``v`` (frame ``frame_name``)::

    v/Enter -> v/Merge(Enter, NextIteration) -> cond/... -> LoopCond -> v/Switch
    v/Switch:1 -> v/Identity -> body/... -> v/NextIteration (the back edge into v/Merge)
    v/Switch:0 -> Exit (named v)                    the loop's output

Tensors a branch or loop reads from outside are *captured*, as TF's control-flow contexts do:
a branch gets them through a Switch (so they are dead when the branch is not taken), a loop
through one constant Enter per tensor (``is_constant``: visible to every iteration, no copy per
iteration). Nodes a construct's functions create with no input from inside the construct (a
Const) get a control input from the branch's or loop's pivot, so they run in its frame and die
with its branch. Everything lies under the construct's name scope, and the GraphDef alone
says which nodes form a loop (:func:`find_while_loops`): the gradient code needs no side table.

``max_iterations`` adds an iteration counter as a last loop var and an ``Assert`` in the
condition's path: a loop still wanting to run after that many iterations fails the step with
"loop 'name' exceeded maximum_iterations=N" at the loop's spec location (TF stops silently;
a silent stop hides bugs). A loop var whose shape changes across iterations gets the relaxed
shape (unknown dims where iterations disagree) through a ``PlaceholderWithDefault`` before its
Enter, as TF's shape invariants do; ``shape_invariants`` sets them explicitly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from specflow.errors import GraphError, ShapeError
from specflow.graph import dtypes
from specflow.graph.builder import GraphBuilder
from specflow.graph.graph_def import GraphDef, NodeDef, canonical_tensor, parse_input
from specflow.graph.shapes import Shape, as_shape
from specflow.graph.topo import forward_view

BranchFn = Callable[..., "str | Sequence[str]"]


@dataclass
class CondResult:
    """What ``cond`` built: the outputs and the names of its nodes."""

    name: str
    outputs: list[str]  # Merge outputs, one per branch output
    pred: str
    pivots: tuple[str, str]  # (then, else): Identities of Switch(pred, pred):1 and :0
    switches: dict[str, str]  # outer tensor (inputs and captures) -> its Switch node
    merges: list[str]
    then_outputs: list[str]
    else_outputs: list[str]


@dataclass
class WhileResult:
    """What ``while_loop`` built. Per-var lists cover every loop var, the iteration counter
    (``counter``, last) included; ``outputs`` are the caller's vars' Exits only."""

    name: str
    frame_name: str
    outputs: list[str]
    loop_vars: list[str]  # the values entering the loop
    enters: list[str]
    merges: list[str]
    switches: list[str]
    identities: list[str]  # Switch:1 as the body sees it
    next_iterations: list[str]
    exits: list[str]
    loop_cond: str
    captures: dict[str, str] = field(default_factory=dict)  # outer tensor -> constant Enter
    counter: int | None = None  # index of the iteration counter among the vars
    max_iterations: int | None = None
    parallel_iterations: int = 10
    assert_node: str | None = None


# --- cond ----------------------------------------------------------------------------------------


def cond(
    b: GraphBuilder,
    pred: str,
    then_fn: BranchFn,
    else_fn: BranchFn,
    inputs: Sequence[str] = (),
    name: str = "cond",
    control_inputs: Sequence[str] = (),
) -> CondResult:
    """``then_fn(b, *inputs)`` if ``pred`` else ``else_fn(b, *inputs)``; each function returns a
    tensor or a list of tensors (the same number and dtypes for both). ``control_inputs`` gate
    the whole conditional."""
    full = b.unique_name(name)
    what = f"cond '{full}'"
    _check_bool_scalar(b, pred, what, "predicate", full)
    nodes = b.graph_def.nodes
    with b.root_scope(), b.name_scope(full), b.no_control_dependencies():
        start = len(nodes)
        ps = _add(b, "Switch", [pred, pred], name="switch_pred", control_inputs=control_inputs)
        pivots = (_add(b, "Identity", [f"{ps}:1"], name="switch_t"), _add(b, "Identity", [ps], name="switch_f"))
        switches: dict[str, str] = {canonical_tensor(pred): ps}

        def switch(t: str) -> str:
            key = canonical_tensor(t)
            if key not in switches:
                switches[key] = _add(b, "Switch", [t, pred], control_inputs=control_inputs)
            return switches[key]

        branches = []
        for label, port, fn, pivot in (("then", 1, then_fn, pivots[0]), ("else", 0, else_fn, pivots[1])):
            args = [b.out(switch(t), port) for t in inputs]
            first = len(nodes)
            with b.name_scope(label):
                outs = _as_list(fn(b, *args))
            built, lifted = _hoist_variables(b, [n.name for n in nodes[first:]], {n.name for n in nodes[start:]},
                                             what, full)
            _move_to(b, lifted, start)
            start += len(lifted)
            inside = {n.name for n in nodes[start:]}
            capture = lambda t, port=port: b.out(switch(t), port)  # noqa: E731
            _rewrite(b, built, inside, capture, pivot)
            outs = [t if parse_input(t).node in inside else capture(t) for t in outs]
            branches.append(outs)
        then_outs, else_outs = branches
        _check_same_outputs(b, what, full, then_outs, else_outs)
        _move_to(b, [s for s in switches.values() if s != ps], start + 3)  # after the pivots
        _reinfer(b, start)  # captured values are dead in one branch: nothing in it is a constant
        merges = [
            _add(b, "Merge", [e, t], name="Merge") for e, t in zip(else_outs, then_outs, strict=True)
        ]
    return CondResult(
        name=full,
        outputs=list(merges),
        pred=pred,
        pivots=pivots,
        switches={t: s for t, s in switches.items() if s != ps},
        merges=list(merges),
        then_outputs=then_outs,
        else_outputs=else_outs,
    )


def _check_same_outputs(b: GraphBuilder, what: str, node: str, then_outs: list[str], else_outs: list[str]) -> None:
    def describe(ts):
        return "(" + ", ".join(b.spec(t).dtype.name for t in ts) + ")"

    if len(then_outs) != len(else_outs) or any(b.spec(t).dtype != b.spec(e).dtype for t, e in zip(then_outs, else_outs)):
        raise ShapeError(
            f"{what}: the branches must give the same outputs: 'then' gives {len(then_outs)} "
            f"{describe(then_outs)}, 'else' gives {len(else_outs)} {describe(else_outs)}",
            node=node,
        )
    if not then_outs:
        raise GraphError(f"{what}: the branches give no outputs", node=node)


# --- while_loop ----------------------------------------------------------------------------------


def while_loop(
    b: GraphBuilder,
    cond_fn: BranchFn,
    body_fn: BranchFn,
    loop_vars: Sequence[str],
    name: str = "while",
    *,
    var_names: Sequence[str] | None = None,
    max_iterations: int | None = None,
    parallel_iterations: int = 10,
    shape_invariants: Sequence[Shape | Sequence | None] | None = None,
    control_inputs: Sequence[str] = (),
) -> WhileResult:
    """Run ``body_fn(b, *vars) -> new vars`` while ``cond_fn(b, *vars) -> bool scalar``.

    ``var_names`` name each var's nodes (``<name>/<var>/Enter``..., its Exit ``<name>/<var>``;
    default ``v0``, ``v1``...).
    ``shape_invariants`` (one per var, None: inferred) are shapes a var keeps across iterations;
    without one, a var whose shape changes gets the relaxed shape automatically.
    ``control_inputs`` must run before the loop starts.
    """
    full = b.unique_name(name)
    what = f"loop '{full}'"
    loop_vars = list(loop_vars)
    n_user = len(loop_vars)
    if n_user == 0:
        raise GraphError(f"{what} needs at least one loop variable", node=full)
    names = list(var_names) if var_names is not None else [f"v{i}" for i in range(n_user)]
    if len(names) != n_user:
        raise GraphError(f"{what}: {len(names)} var_names for {n_user} loop variables", node=full)
    invariants = list(shape_invariants) if shape_invariants is not None else [None] * n_user
    if max_iterations is not None and (not isinstance(max_iterations, int) or max_iterations < 1):
        raise GraphError(f"{what}: max_iterations must be an integer >= 1, got {max_iterations!r}", node=full)
    if parallel_iterations < 1:
        raise GraphError(f"{what}: parallel_iterations must be >= 1, got {parallel_iterations}", node=full)
    nodes = b.graph_def.nodes
    with b.root_scope(), b.name_scope(full), b.no_control_dependencies():
        start = len(nodes)
        counter = None
        if max_iterations is not None:
            counter = n_user
            loop_vars.append(b.const(np.int32(0), name="iteration/start"))
            names.append("iteration")
            invariants.append(None)
        enter_attrs = {"frame_name": full, "is_constant": False, "parallel_iterations": parallel_iterations}
        enters, merges = [], []
        for v, vn, inv in zip(loop_vars, names, invariants, strict=True):
            if inv is not None:
                v = _add(b, "PlaceholderWithDefault", [v], {"dtype": b.spec(v).dtype, "shape": as_shape(inv)},
                         name=f"{vn}/shape_invariant")
            enters.append(_add(b, "Enter", [v], enter_attrs, name=f"{vn}/Enter", control_inputs=control_inputs))
            merges.append(_add(b, "Merge", [enters[-1], enters[-1]], name=f"{vn}/Merge"))

        # The condition, then the max-iterations check in its path.
        c_first = len(nodes)
        with b.name_scope("cond"):
            c = _single(cond_fn(b, *merges[:n_user]), what)
        _check_bool_scalar(b, c, what, "condition", full)
        assert_node = None
        if counter is not None:
            with b.name_scope("max_iterations"):
                below = _add(b, "Less", [merges[counter], b.const(np.int32(max_iterations), name="limit")])
                ok = _add(b, "LogicalOr", [_add(b, "LogicalNot", [c]), below])
                msg = np.array(f"{what} exceeded maximum_iterations={max_iterations}", dtype=object)
                assert_node = _add(b, "Assert", [ok, b.const(msg, dtypes.string, name="message")])
                c = _add(b, "Identity", [c], name="checked", control_inputs=[assert_node])
        cond_nodes = [n.name for n in nodes[c_first:]]
        loop_cond = _add(b, "LoopCond", [c], name="LoopCond")
        switches = [_add(b, "Switch", [m, loop_cond], name=f"{vn}/Switch") for m, vn in zip(merges, names)]
        # An Exit is named like its var (``loop/acc``), so the spec can say ``fact/acc``.
        exits = [_add(b, "Exit", [s], name=vn) for s, vn in zip(switches, names)]
        identities = [_add(b, "Identity", [f"{s}:1"], name=f"{vn}/Identity") for s, vn in zip(switches, names)]

        b_first = len(nodes)
        with b.name_scope("body"):
            outs = _as_list(body_fn(b, *identities[:n_user]))
        if len(outs) != n_user:
            raise GraphError(f"{what}: the body returns {len(outs)} value(s) for {n_user} loop variable(s)", node=full)
        if counter is not None:
            with b.name_scope("iteration"):
                outs.append(_add(b, "AddV2", [identities[counter], b.const(np.int32(1), name="one")], name="next"))
        body_nodes = [n.name for n in nodes[b_first:]]

        # Captures: one constant Enter per outer tensor; outer control inputs gate the loop.
        captures: dict[str, str] = {}
        outer_control: list[str] = []

        def capture(t: str) -> str:
            key = canonical_tensor(t)
            if key not in captures:
                leaf = parse_input(t).node.rsplit("/", 1)[-1]
                captures[key] = _add(b, "Enter", [t], {**enter_attrs, "is_constant": True}, name=f"capture/{leaf}")
            return captures[key]

        construct = {n.name for n in nodes[start:]}
        cond_nodes, lifted_c = _hoist_variables(b, cond_nodes, construct, what, full)
        body_nodes, lifted_b = _hoist_variables(b, body_nodes, construct, what, full)
        _move_to(b, lifted_c + lifted_b, start)
        start += len(lifted_c) + len(lifted_b)
        inside = {n.name for n in nodes[start:]}
        _rewrite(b, cond_nodes, inside, capture, merges[0], outer_control)
        _rewrite(b, body_nodes, inside, capture, identities[0], outer_control)
        outs = [t if parse_input(t).node in inside else capture(t) for t in outs]
        if parse_input(c).node not in inside:  # a condition that is an outer tensor
            _set_input(b.graph_def.node(loop_cond), 0, capture(c))
        for e in enters:
            _add_control(b.graph_def.node(e), outer_control)
        _move_to(b, list(captures.values()), start)

        for k, (out, m) in enumerate(zip(outs, merges)):
            got, want = b.spec(out).dtype, b.spec(m).dtype
            if got != want:
                raise ShapeError(
                    f"{what}: loop var '{names[k]}' enters the loop as {want.name} but the body makes it {got.name}",
                    node=full,
                )
        nexts = [_add(b, "NextIteration", [o], name=f"{vn}/NextIteration") for o, vn in zip(outs, names)]
        _relax_shapes(b, start, loop_vars, enters, merges, nexts, names)
        for m, nx in zip(merges, nexts):
            b.add_back_edge(m, 1, nx)
    return WhileResult(
        name=full,
        frame_name=full,
        outputs=exits[:n_user],
        loop_vars=loop_vars,
        enters=enters,
        merges=merges,
        switches=switches,
        identities=identities,
        next_iterations=nexts,
        exits=exits,
        loop_cond=loop_cond,
        captures=captures,
        counter=counter,
        max_iterations=max_iterations,
        parallel_iterations=parallel_iterations,
        assert_node=assert_node,
    )


def _relax_shapes(b, start, loop_vars, enters, merges, nexts, names) -> None:
    """Give each var whose shape changes across iterations the relaxed shape (TF's shape
    invariant): a PlaceholderWithDefault before its Enter, then infer the loop again, until
    every back edge fits its Merge (each round only loses dims, so this ends)."""
    nodes = b.graph_def.nodes
    while True:
        changed = False
        for k, (m, nx) in enumerate(zip(merges, nexts)):
            have, new = b.spec(m).shape, b.spec(nx).shape
            if _fits(new, have):
                continue
            relaxed = _common_shape(have, new)
            enter = b.graph_def.node(enters[k])
            src = b.graph_def.node(parse_input(enter.data_inputs[0]).node)
            if src.op == "PlaceholderWithDefault" and src.name.startswith(enter.name.rsplit("/", 1)[0] + "/"):
                src.attrs["shape"] = relaxed
            else:
                pwd = _add(b, "PlaceholderWithDefault", [loop_vars[k]], {"dtype": b.spec(m).dtype, "shape": relaxed},
                           name=f"{names[k]}/shape_invariant")
                _move_to(b, [pwd], next(i for i, n in enumerate(nodes) if n.name == enter.name))
                _set_input(enter, 0, pwd)
            changed = True
        if not changed:
            return
        _reinfer(b, start)


def _fits(s: Shape, of: Shape) -> bool:
    """``s`` is at least as specific as ``of`` (every dim ``of`` knows, ``s`` has, equal)."""
    if of.rank is None:
        return True
    return s.rank == of.rank and all(b is None or a == b for a, b in zip(s.dims, of.dims))


def _common_shape(a: Shape, c: Shape) -> Shape:
    if a.rank is None or c.rank is None or a.rank != c.rank:
        return Shape.unknown()
    return Shape(x if x == y else None for x, y in zip(a.dims, c.dims))


# --- recovering the structure from a GraphDef ------------------------------------------------------


def find_while_loops(graph_def: GraphDef) -> dict[str, WhileResult]:
    """Every while loop in ``graph_def`` by frame name, recovered from the primitives alone (the
    Enter's frame_name, Enter -> Merge -> Switch -> Exit / Identity, NextIteration -> Merge).
    ``loop_vars`` are the tensors entering each var's Enter; ``counter`` is not recovered."""
    nodes = graph_def.node_map()
    users: dict[str, list[NodeDef]] = {}
    for n in graph_def.nodes:
        for inp in n.data_inputs:
            users.setdefault(canonical_tensor(inp), []).append(n)

    def user(tensor: str, op: str) -> NodeDef | None:
        return next((u for u in users.get(canonical_tensor(tensor), []) if u.op == op), None)

    loops: dict[str, WhileResult] = {}
    for n in graph_def.nodes:
        if n.op != "Enter":
            continue
        frame = n.attrs["frame_name"]
        loop = loops.setdefault(frame, WhileResult(frame, frame, [], [], [], [], [], [], [], [], ""))
        if n.attrs.get("is_constant"):
            loop.captures[canonical_tensor(n.data_inputs[0])] = n.name
            continue
        merge = user(n.name, "Merge")
        switch = None
        for u in users.get(canonical_tensor(merge.name), []) if merge is not None else []:
            pred = nodes.get(parse_input(u.data_inputs[1]).node) if u.op == "Switch" else None
            if pred is not None and pred.op == "LoopCond":  # not a conditional's Switch on the var
                switch = u
        if switch is None:
            raise GraphError(f"Enter '{n.name}' of frame '{frame}' does not lead to a Merge and a Switch", node=n.name)
        exit_ = user(switch.name, "Exit")
        ident = user(f"{switch.name}:1", "Identity")
        back = next(nodes[parse_input(i).node] for i in merge.data_inputs if nodes[parse_input(i).node].op == "NextIteration")
        loop.loop_vars.append(n.data_inputs[0])
        loop.enters.append(n.name)
        loop.merges.append(merge.name)
        loop.switches.append(switch.name)
        loop.exits.append(exit_.name if exit_ is not None else "")
        loop.outputs.append(exit_.name if exit_ is not None else "")
        loop.identities.append(ident.name if ident is not None else "")
        loop.next_iterations.append(back.name)
        loop.loop_cond = parse_input(switch.data_inputs[1]).node
        loop.parallel_iterations = n.attrs.get("parallel_iterations", 10)
    return loops


# --- helpers ---------------------------------------------------------------------------------------


def _add(b: GraphBuilder, op: str, inputs: Sequence[str], attrs: dict | None = None, *, name: str | None = None,
         control_inputs: Sequence[str] = ()) -> str:
    """Add ``op`` under a unique name (``name`` or the op's, in the current scope)."""
    node = b.add_op(op, inputs, attrs, name=b.unique_name(name or op), exact_name=True, control_inputs=control_inputs)
    return node.name


def _as_list(x) -> list[str]:
    return [x] if isinstance(x, str) else list(x)


def _single(x, what: str) -> str:
    xs = _as_list(x)
    if len(xs) != 1:
        raise GraphError(f"{what}: the condition must be one tensor, got {len(xs)}")
    return xs[0]


def _check_bool_scalar(b: GraphBuilder, t: str, what: str, role: str, node: str) -> None:
    spec = b.spec(t)
    if spec.dtype != dtypes.bool_ or (spec.shape.rank is not None and spec.shape.rank != 0):
        raise ShapeError(f"{what}: the {role} must be a bool scalar, got {spec.dtype.name} {spec.shape}", node=node)


def _hoist_variables(b: GraphBuilder, names: list[str], construct: set[str], what: str,
                     node: str) -> tuple[list[str], list[str]]:
    """Variables live outside control flow: one created in a branch or body would be created
    (and initialized) only when, and as often as, that code runs. So a variable that a branch or
    body creates (a layer or a function with its own weights, called inside) is lifted out, as
    TensorFlow's ``init_scope`` lifts it: its handle, initializer, initial assignment and its read
    go before the construct, and the code inside reads the value through a capture; one copy per
    place in the spec, shared by every iteration. ``construct``: every node of the cond or loop
    so far. Returns (the names left inside, those lifted)."""
    graph = b.graph_def.node_map()
    handles = [n for n in names if graph[n].op == "VarHandleOp"]
    if not handles:
        return names, []
    built = set(names)
    init_ops = set(b.collections.get("init_ops", []))
    lifted: set[str] = set()

    def closure(first: str) -> set[str] | None:
        """``first`` and what it needs from ``built``; None if any of it reads the construct."""
        seen, stack = set(), [first]
        while stack:
            n = stack.pop()
            if n in seen or n in lifted:
                continue
            seen.add(n)
            for inp in graph[n].inputs:
                src = parse_input(inp).node
                if src in built:
                    stack.append(src)
                elif src in construct:
                    return None
        return seen

    for h in handles:
        users = [n for n in names if graph[n].op in ("AssignVariableOp", "ReadVariableOp")
                 and graph[n].inputs and parse_input(graph[n].inputs[0]).node == h]
        assigns = [n for n in users if n in init_ops]
        pieces = [closure(h)] + [closure(n) for n in assigns]
        if any(p is None for p in pieces):
            raise GraphError(f"{what}: variable '{h}' is initialized from values computed inside it; create it "
                             "outside and read it inside", node=node)
        for p in pieces:
            lifted |= p
        for r in users:  # the variable's own read goes out too, unless something inside gates it
            if r not in init_ops and r == f"{h}/Read/ReadVariableOp":
                lifted |= closure(r) or set()
    return [n for n in names if n not in lifted], [n for n in names if n in lifted]


def _rewrite(b: GraphBuilder, names: list[str], inside: set[str], capture: Callable[[str], str], pivot: str,
             outer_control: list[str] | None = None) -> None:
    """Make the nodes ``names`` (built by a branch or loop function) belong to the construct:
    inputs from outside ``inside`` go through ``capture``; a node with no input from inside gets
    a control input on ``pivot``. With ``outer_control`` (a loop: another frame), control inputs
    from outside move there, to gate the loop's start instead."""
    graph = b.graph_def.node_map()
    for name in names:
        node = graph[name]
        data = node.data_inputs
        new = [inp if parse_input(inp).node in inside else capture(inp) for inp in data]
        ctrl = node.control_inputs
        if outer_control is not None:
            outer_control.extend(c for c in ctrl if c not in inside and c not in outer_control)
            ctrl = [c for c in ctrl if c in inside]
        if not data and not any(c in inside for c in ctrl):
            ctrl = ctrl + [parse_input(pivot).node]
        node.inputs = new + [f"^{c}" for c in dict.fromkeys(ctrl)]


def _set_input(node: NodeDef, index: int, tensor: str) -> None:
    data = node.data_inputs
    data[index] = tensor
    node.inputs = data + [f"^{c}" for c in node.control_inputs]


def _add_control(node: NodeDef, names: Sequence[str]) -> None:
    for c in names:
        if f"^{c}" not in node.inputs:
            node.inputs.append(f"^{c}")


def _move_to(b: GraphBuilder, names: Sequence[str], index: int) -> None:
    """Move nodes ``names`` (created late: captures, shape invariants) to position ``index`` of
    the graph's node list, before the nodes that read them, so the list stays in dependency order."""
    if not names:
        return
    moved = set(names)
    nodes = b.graph_def.nodes
    picked = [n for n in nodes if n.name in moved]
    rest = [n for n in nodes if n.name not in moved]
    index -= sum(1 for n in nodes[:index] if n.name in moved)
    nodes[:] = rest[:index] + picked + rest[index:]


def _reinfer(b: GraphBuilder, start: int) -> None:
    """Infer the nodes from ``start`` on again (their inputs changed: captures, relaxed shapes)."""
    graph = b.graph_def.node_map()
    for node in b.graph_def.nodes[start:]:
        b.inferencer.add(forward_view(node, graph))


def loop_frames(graph: GraphDef) -> dict[str, tuple[str, ...]]:
    """Each node's while-loop frames, outermost first (``()``: outside every loop), by TF's
    rules: an Enter opens its ``frame_name`` inside its input's frames, an Exit leaves one,
    any other node is in its inputs' frames (a node with no inputs in its consumers'; the
    NextIteration -> Merge back edge is not followed)."""
    nodes = graph.node_map()
    inputs = {n.name: [parse_input(i).node for i in n.inputs if parse_input(i).node in nodes] for n in graph.nodes}
    for n in graph.nodes:
        if n.op in ("Merge", "RefMerge"):
            inputs[n.name] = [i for i in inputs[n.name] if nodes[i].op not in ("NextIteration", "RefNextIteration")]
    pending = {k: len(v) for k, v in inputs.items()}
    users: dict[str, list[str]] = {}
    for k, v in inputs.items():
        for i in v:
            users.setdefault(i, []).append(k)
    ready = [k for k, c in pending.items() if c == 0]
    frame: dict[str, tuple[str, ...] | None] = {}
    while ready:
        k = ready.pop()
        n = nodes[k]
        known = [frame[i] for i in inputs[k] if frame.get(i) is not None]
        here = max(known, key=len) if known else None
        if n.op in ("Enter", "RefEnter"):
            here = (here or ()) + (str(n.attrs.get("frame_name", "")),)
        elif n.op in ("Exit", "RefExit") and here:
            here = here[:-1]
        frame[k] = here
        for u in users.get(k, ()):
            pending[u] -= 1
            if pending[u] == 0:
                ready.append(u)
    return {k: v or () for k, v in frame.items()}
