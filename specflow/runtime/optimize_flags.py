"""The optimize stage's rewrites for inference and kernels (runtime/optimize.py runs them):

- ``unfed_flags``: a bool scalar ``PlaceholderWithDefault`` left in a step graph was not fed, so
  it is its default; ``selected_input`` forwards a Select/SelectV2 on such a constant, and
  ``dead_branches`` decides a ``Switch`` on one at plan time (the cond's other branch dropped).
- ``share_im2col``: a Conv2D and the Conv2DBackpropFilter of the same input share one im2col.
"""

from __future__ import annotations

import numpy as np

from specflow.graph.graph_def import GraphDef, NodeDef, parse_input, tensor_name
from specflow.graph.shapes import as_shape
from specflow.graph.topo import LOOP_BACK_EDGES, topological_order
from specflow.ops.conv_ops import FROM_ATTR, SHARE_ATTR
from specflow.runtime.optimize import OptimizeResult, _const_node, _control_source, _Graph, _unique


def selected_input(g: _Graph, node: NodeDef, specs) -> str | None:
    """The operand a Select/SelectV2 on a constant scalar condition returns whole: when it alone
    has the result's (static) shape, the other operand is never read."""
    cond, t, e = node.data_inputs
    c = g.nodes[parse_input(cond).node]
    value = np.asarray(c.attrs["value"]) if c.op == "Const" else None
    if value is None or value.ndim != 0 or value.dtype != np.bool_:
        return None
    chosen = t if bool(value) else e
    out, spec = specs.outputs(node.name)[0], specs.spec(chosen)
    ok = out.shape.is_fully_defined and spec.shape == out.shape and spec.dtype == out.dtype
    return chosen if ok else None


def unfed_flags(g: _Graph, result: OptimizeResult) -> None:
    """Each bool scalar PlaceholderWithDefault becomes an Identity of its default: feeds are
    ``_Arg``s by now, so one still here was not fed (optimize.py's step 0)."""
    for node in list(g.live()):
        if node.op != "PlaceholderWithDefault" or str(node.attrs.get("dtype")) != "bool":
            continue
        if as_shape(node.attrs.get("shape")).rank != 0:
            continue
        ident = NodeDef(node.name, "Identity", list(node.inputs), node.device, {"T": node.attrs["dtype"]}, node.location)
        g.replace(node.name, ident)
        result.unfed.append(node.name)


# Deadness that must not be decided at plan time: loop frames and step boundaries.
_NO_DEAD = frozenset({
    "Enter", "RefEnter", "Exit", "RefExit", "NextIteration", "RefNextIteration", "LoopCond", "ControlTrigger",
    "_Retval", "_Send", "_Recv", "_Arg",
})  # fmt: skip


def dead_branches(g: _Graph, keep: set[str], result: OptimizeResult) -> None:
    """A Switch whose predicate is a Const always takes one branch: the other output is dead on
    every step, and so is everything only it reaches (the executor's rule: a node with a dead
    input or control input is dead; a Merge only when all its data inputs are). Those nodes are
    dropped, Merges lose their dead inputs (one left: an Identity of it), and the Switch becomes
    an Identity of its data; a Merge left with one input has its value_index read from a Const.
    All or nothing: when deadness would reach a loop frame, a fetch, a target, or a Merge left
    with several inputs whose value_index is read, the graph is left as it is."""
    decided = {}
    for n in g.live():
        if n.op != "Switch":
            continue
        c = g.nodes[parse_input(n.inputs[1]).node]
        value = np.asarray(c.attrs["value"]) if c.op == "Const" else None
        if value is not None and value.ndim == 0 and value.dtype == np.bool_:
            decided[n.name] = 0 if bool(value) else 1  # the dead port: output_false is 0
    if not decided:
        return
    dead_nodes: set[str] = set()

    def is_dead(inp: str) -> bool:
        ref = parse_input(inp)
        return ref.node in dead_nodes or (not ref.is_control and decided.get(ref.node) == ref.index)

    merges: dict[str, list[str]] = {}  # partly dead Merge -> its live data inputs
    for n in topological_order(GraphDef(g.live()), allow_back_edges=LOOP_BACK_EDGES):  # folding appended Consts
        if n.op in ("Merge", "RefMerge"):
            live = [i for i in n.data_inputs if not is_dead(i)]
            if any(is_dead(i) for i in n.control_inputs):
                return  # a Merge waiting on a dead control edge: leave it to the executor
            if not live:
                dead_nodes.add(n.name)
            elif len(live) < len(n.data_inputs):
                merges[n.name] = live
        elif any(is_dead(i) for i in n.inputs):
            dead_nodes.add(n.name)
    consumers = g.consumers()
    for name in dead_nodes:
        if g.nodes[name].op in _NO_DEAD or name in keep:
            return
    decided = {k: v for k, v in decided.items() if k not in dead_nodes}  # a cond inside a dead branch
    indexed = {}  # partly dead Merge -> readers of its value_index
    for name, live in merges.items():
        readers = [(c, i) for c, i in consumers.get(name, ())
                   if not c.inputs[i].startswith("^") and parse_input(c.inputs[i]).index == 1]  # fmt: skip
        if readers and len(live) > 1:
            return  # the remaining inputs' indices would change
        if readers:
            indexed[name] = (g.nodes[name].data_inputs.index(live[0]), readers)
    for name in dead_nodes:
        del g.nodes[name]
        result.removed.append(name)
    g.order = g.live()
    for name, live in merges.items():
        m = g.nodes[name]
        if len(live) == 1:
            g.replace(name, NodeDef(name, "Identity", [live[0], *("^" + c for c in m.control_inputs)], m.device,
                                    {"T": m.attrs["T"]}, m.location))  # fmt: skip
        else:
            m.inputs = [*live, *("^" + c for c in m.control_inputs)]
            m.attrs = {**m.attrs, "N": len(live)}
    for n in g.live():  # what reads the live port reads the Identity's only output
        n.inputs = [i if i.startswith("^") or parse_input(i).node not in decided else parse_input(i).node
                    for i in n.inputs]  # fmt: skip
    for name in decided:
        sw = g.nodes[name]
        ident = NodeDef(name, "Identity", [sw.inputs[0], *("^" + c for c in sw.control_inputs)], sw.device,
                        {"T": sw.attrs["T"]}, sw.location)  # fmt: skip
        g.replace(name, ident)
        result.decided.append(name)
    # The value_index of a Merge left with one input: that input's old index, a Const that is
    # dead exactly when the input is (so a cond's gradient still picks the same branch).
    for name, (index, readers) in indexed.items():
        const = _const_node(_unique(g, f"ConstantFolding/{name}-value_index"), np.array(index, np.int32),
                            g.nodes[name], [_control_source(g, g.nodes[name].data_inputs[0])])  # fmt: skip
        g.order.append(const)
        g.nodes[const.name] = const
        for c, i in readers:
            c.inputs[i] = const.name


# --- Conv2D's im2col reused by its filter gradient ----------------------------------------------

_WINDOW_ATTRS = ("strides", "padding", "explicit_paddings", "data_format", "dilations")


def share_im2col(g: _Graph, result: OptimizeResult) -> None:
    """Pair each Conv2DBackpropFilter with a Conv2D (or _FusedConv2D) of the same input tensor,
    window and device:
    the forward kernel keeps its im2col for the step and the gradient reads it
    (ops/conv_ops.py SHARE_ATTR, FROM_ATTR). Only attrs change; the kernels check at run time
    that the input is the very array the forward read, and rebuild it otherwise."""
    def key(n: NodeDef):
        ref = parse_input(n.data_inputs[0])
        return (tensor_name(ref.node, ref.index), n.device, *(str(n.attrs.get(a)) for a in _WINDOW_ATTRS))

    forward = {key(n): n for n in g.live() if n.op in ("Conv2D", "_FusedConv2D")}
    for n in g.live():
        conv = forward.get(key(n)) if n.op == "Conv2DBackpropFilter" else None
        if conv is not None:
            conv.attrs = {**conv.attrs, SHARE_ATTR: True}
            n.attrs = {**n.attrs, FROM_ATTR: conv.name}
            result.shared_im2col.append(n.name)

