"""Common subexpression elimination for the optimize stage (the TF whitepaper's section 5.1,
after Click's global value numbering): nodes that compute the same op with the same attrs on
the same inputs, in topological order, get one value number; every later one is replaced by the
first and dropped.

What never merges: stateful ops (variables, queues, and random ops: two draws differ), control
flow (Switch, Merge, Enter, ... : frames and deadness live there), the step's ``_Arg``/``_Retval``
/``_Send``/``_Recv``, and kept nodes (the step's targets, looked up by name). Merging two nodes
with the same data and control inputs keeps deadness and frames: both would be dead together
and run in the same frame and iteration, since those follow from the inputs alone. A Const has
no inputs unless a control edge places it (in a loop, on a branch): Consts merge only with
equal values, dtypes and control inputs.
"""

from __future__ import annotations

import numpy as np

from specflow.graph.graph_def import GraphDef, parse_input, tensor_name
from specflow.graph.topo import LOOP_BACK_EDGES, topological_order
from specflow.ops.registry import get_op
from specflow.runtime.optimize import CONTROL_FLOW_OPS, OptimizeResult, _Graph

# Identity names a value (a cond pivot, a fetch point, a copy to another device): merging saves no work.
_NEVER = frozenset({
    "_Arg", "_Retval", "_Send", "_Recv", "NoOp", "ControlTrigger", "Placeholder", "PlaceholderWithDefault",
    "Identity", "IdentityN", "Snapshot",
})  # fmt: skip
# Inputs that may be swapped without changing the value (two data inputs, elementwise, exact).
COMMUTATIVE = frozenset({
    "Add", "AddV2", "Mul", "Maximum", "Minimum", "LogicalAnd", "LogicalOr", "Equal", "NotEqual",
    "BitwiseAnd", "BitwiseOr", "BitwiseXor", "SquaredDifference",
})  # fmt: skip
MAX_CONST_ELEMENTS = 1 << 16  # larger Consts are compared by identity only


def _canon(value):
    """A hashable stand-in for an attr value (arrays by dtype, shape and bytes)."""
    if isinstance(value, np.ndarray):
        if value.size > MAX_CONST_ELEMENTS or value.dtype.kind not in "biufcSU?":
            return ("array-id", id(value))
        return ("array", value.dtype.str, value.shape, np.ascontiguousarray(value).tobytes())
    if isinstance(value, (list, tuple)):
        return tuple(_canon(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _canon(v)) for k, v in value.items()))
    if isinstance(value, (np.generic, float, int, bool, str, bytes)) or value is None:
        return (type(value).__name__, value.item() if isinstance(value, np.generic) else value)
    return (type(value).__name__, repr(value))


def _mergeable(node) -> bool:
    if node.op in _NEVER or node.op in CONTROL_FLOW_OPS:
        return False
    return not get_op(node.op).is_stateful


def eliminate_common_subexpressions(g: _Graph, keep: set[str], result: OptimizeResult) -> None:
    """Rewire readers of each duplicate to the node it duplicates (see the module docstring);
    the duplicates, left unread, are dropped by the dead-node pass."""
    canonical: dict[str, str] = {}  # duplicate node -> the node that replaces it
    numbers: dict[tuple, str] = {}

    def renamed(inp: str) -> str:
        ref = parse_input(inp)
        node = canonical.get(ref.node, ref.node)
        return "^" + node if ref.is_control else node if ref.index == 0 else f"{node}:{ref.index}"

    # A node others colocate with by name ("loc:@name") must keep its name.
    pinned = {c[len("loc:@"):] for n in g.live() for c in n.attrs.get("_class") or () if str(c).startswith("loc:@")}
    order = topological_order(GraphDef(g.live()), allow_back_edges=LOOP_BACK_EDGES)
    for node in order:
        node = g.nodes[node.name]
        if any(parse_input(i).node in canonical for i in node.inputs):
            node.inputs = [renamed(i) for i in node.inputs]  # readers of a duplicate read its first
        if not _mergeable(node) or node.name in keep or node.name in pinned:
            continue
        data = [tensor_name(parse_input(i).node, parse_input(i).index) for i in node.data_inputs]
        if node.op in COMMUTATIVE and len(data) == 2:
            data.sort()
        controls = tuple(sorted({parse_input(i).node for i in node.control_inputs}))
        attrs = tuple(sorted((k, _canon(v)) for k, v in node.attrs.items() if k != "_output_shapes"))
        key = (node.op, node.device, tuple(data), controls, attrs)
        first = numbers.setdefault(key, node.name)
        if first != node.name:
            canonical[node.name] = first
            result.merged.append(node.name)
    # Back edges (NextIteration -> Merge) come before their source in the order: rewire them too.
    for node in g.live():
        if any(parse_input(i).node in canonical for i in node.inputs):
            node.inputs = [renamed(i) for i in node.inputs]
