"""Automatic differentiation by extending the graph (whitepaper 4.1).

``gradients(b, ys, xs)`` walks backwards from ``ys`` over the nodes that lie between ``xs`` and
``ys``, in reverse topological order, calling each op's registered gradient function (defined
beside the op, see ``specflow.ops.registry.gradient``) and adding its ops to the same graph.
A tensor consumed in several places receives the sum (AddN) of the gradients from each
consumer. Only floating-point (and complex) edges carry gradients; an ``x`` may also be a
variable's resource handle, whose gradient sums what flows into each ReadVariableOp (and
ResourceGather) of it. ``StopGradient`` and ops marked ``not_differentiable`` stop the walk;
an op on the path with no gradient at all is an error naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import contextmanager

import numpy as np

from specflow.errors import GraphError
from specflow.graph import dtypes
from specflow.graph.graph_def import NodeDef, canonical_tensor, parse_input, tensor_name
from specflow.ops.grad_util import IndexedSlices
from specflow.ops.registry import NOT_DIFFERENTIABLE, get_op, output_dtypes
from specflow.train.loop_gradients import backprop_loop
from specflow.train.loop_structure import analyze_loops

# TF's gradient_override_map: a node whose ``_gradient_op_type`` attr names an entry here takes
# that gradient function instead of its op's (sf.custom_gradient's IdentityN, api/custom_gradient.py).
# A name not here (a TF graph's "CustomGradient-N" without its Python function) keeps the op's own.
OVERRIDES: dict[str, object] = {}


def _carries_gradient(dtype) -> bool:
    # A TensorList (variant) carries its elements' gradients as a list of them.
    return dtype.is_floating or dtype.is_complex or dtype in (dtypes.resource, dtypes.variant)


@contextmanager
def _gradient_context(b, node: NodeDef):
    """Gradient ops go under ``gradients/<node>_grad``, on the forward node's device, and
    inherit none of the caller's control dependencies."""
    with b.no_control_dependencies(), b.name_scope("gradients"), b.name_scope(f"{node.name}_grad"), \
            b.device(node.device):
        yield


def gradients(
    b,
    ys: Sequence[str],
    xs: Sequence[str],
    grad_ys: Sequence[str | None] | None = None,
    stop_gradients: Sequence[str] = (),
    sparse: bool = False,
    sparse_reads: bool = False,
) -> list:
    """Add to builder ``b`` the ops computing d(sum of ys)/d(x) for each x; return their
    tensor names (None where an x does not affect the ys). ``grad_ys`` seed each y's gradient
    (default: ones). Tensors in ``stop_gradients`` are treated as constants. With ``sparse``,
    a variable handle reached only through gathers gets an :class:`IndexedSlices` (the rows
    its gathers read, and their gradients) instead of a dense tensor; with ``sparse_reads`` too, a
    handle whose ReadVariableOp values are gathered (TF 2's tape: ``tf.gather(variable, ids)``)."""
    nodes = {n.name: n for n in b.graph_def.nodes}
    ys = [canonical_tensor(y) for y in ys]
    xs = [canonical_tensor(x) for x in xs]
    for t in list(ys) + list(xs):
        b.spec(t)  # raises "unknown tensor" with a did-you-mean
    stop_nodes = {parse_input(s).node for s in stop_gradients}
    x_set = set(xs)

    consumers: dict[str, list[NodeDef]] = {}
    for n in b.graph_def.nodes:
        for inp in n.data_inputs:
            consumers.setdefault(canonical_tensor(inp), []).append(n)

    def edge_ok(tensor: str) -> bool:
        return _carries_gradient(b.spec(tensor).dtype)

    # Nodes reachable forward from xs over gradient-carrying edges ...
    forward: set[str] = set()
    stack = [x for x in xs if edge_ok(x)]
    seen_t: set[str] = set()
    while stack:
        t = stack.pop()
        if t in seen_t:
            continue
        seen_t.add(t)
        for n in consumers.get(t, ()):
            if n.name in stop_nodes:
                continue
            forward.add(n.name)
            for k, dt in enumerate(_out_dtypes(n)):
                if _carries_gradient(dt):
                    stack.append(_tensor(n.name, k))
    # ... that the ys depend on: the nodes whose gradients we need.
    between: set[str] = set()
    stack = [parse_input(y).node for y in ys]
    while stack:
        name = stack.pop()
        if name in between or name not in forward:
            continue
        between.add(name)
        for inp in nodes[name].data_inputs:
            stack.append(parse_input(inp).node)

    grads: dict[str, list[str]] = {}  # tensor -> gradient contributions
    for k, y in enumerate(ys):
        seed = grad_ys[k] if grad_ys is not None else None
        if seed is None:
            with b.name_scope("gradients"):
                seed = b.add_op("OnesLike", [y], name=None).name
        grads.setdefault(y, []).append(seed)

    info = analyze_loops(b.graph_def) if any(n.op == "Enter" for n in b.graph_def.nodes) else None
    for x in xs:
        if info is not None and info.loop_of(x) is not None:
            raise GraphError(
                f"gradients with respect to '{x}', a tensor inside while loop '{info.loop_of(x).frame}', "
                "are not supported; differentiate with respect to a value entering the loop",
                node=parse_input(x).node,
            )

    def accept(t: str) -> bool:
        return (parse_input(t).node in between or t in x_set) and edge_ok(t)

    keep = set(x_set) if sparse else set()  # where an IndexedSlices may stay sparse
    if sparse_reads:
        keep |= {canonical_tensor(n.name) for n in b.graph_def.nodes
                 if n.op == "ReadVariableOp" and n.data_inputs and canonical_tensor(n.data_inputs[0]) in x_set}
    accept.keep_sparse = keep

    def walk(gb, level, order: list[NodeDef], frame_grads: dict[str, list[str]]) -> dict[str, list[str]]:
        """The reverse walk over ``order`` (nodes of loop ``level``'s frame and the loops nested
        in it; None: the root frame), building through ``gb``. Each loop directly inside ``level``
        is one unit: its gradient (a backward loop, see loop_gradients) is complete once every
        consumer of its Exits has contributed."""
        units = info.units(order, level) if info is not None else order
        for unit in reversed(units):
            if isinstance(unit, NodeDef):
                _node_gradient(gb, unit, frame_grads, ys, accept)
                continue
            for t, dxs in backprop_loop(gb, unit, info, frame_grads, between, walk).items():
                if accept(t):
                    frame_grads.setdefault(t, []).extend(dxs)
        return frame_grads

    walk(b, None, [n for n in b.graph_def.nodes if n.name in between], grads)

    result: list[str | None] = []
    for x in xs:
        contributions = grads.get(x)
        if not contributions:
            result.append(None)
            continue
        with b.name_scope("gradients"):
            result.append(_aggregate(b, contributions))
    return result


def _sparse_sum(b, parts: list[IndexedSlices]) -> IndexedSlices:
    """IndexedSlices added up: their values and indices joined (repeated rows add up later),
    as TF aggregates them."""
    if len(parts) == 1:
        return parts[0]
    axis = b.const(np.int32(0), name="concat_axis")
    wide = any(b.spec(p.indices).dtype == dtypes.int64 for p in parts)
    ids = [b.add_op("Cast", [p.indices], {"DstT": dtypes.int64}).name if wide and b.spec(p.indices).dtype != dtypes.int64
           else p.indices for p in parts]  # fmt: skip
    values = b.add_op("ConcatV2", [*(p.values for p in parts), axis]).name
    indices = b.add_op("ConcatV2", [*ids, axis]).name
    return IndexedSlices(b, values, indices, parts[0]._rows)


def _node_gradient(b, node: NodeDef, grads: dict[str, list[str]], ys, accept) -> None:
    """Call ``node``'s gradient function with the gradients of its outputs (summed; zeros for an
    output that got none) and record what it gives each input that ``accept``s one."""
    out_dts = _out_dtypes(node)
    if not any(_tensor(node.name, k) in grads for k in range(len(out_dts))):
        return
    fn = OVERRIDES.get(node.attrs.get("_gradient_op_type")) or get_op(node.op).gradient
    if fn is None:
        raise GraphError(
            f"no gradient is registered for op {node.op}, but the gradient of "
            f"{', '.join(ys)} flows through node '{node.name}'; wrap its input in "
            "StopGradient if no gradient should flow there",
            node=node.name,
            location=node.location,
        )
    if fn is NOT_DIFFERENTIABLE:
        return
    dys: list[str | None] = []
    with _gradient_context(b, node):
        for k, dt in enumerate(out_dts):
            t = _tensor(node.name, k)
            if t in grads:
                dys.append(_aggregate(b, grads[t]))
            elif _carries_gradient(dt) and dt not in (dtypes.resource, dtypes.variant):
                dys.append(b.add_op("ZerosLike", [t]).name)
            else:
                dys.append(None)
        for k, dy in enumerate(dys):
            if dy is not None:
                grads[_tensor(node.name, k)] = [dy]
        dxs = fn(b, node, dys)
        data_inputs = node.data_inputs
        # A sparse gradient stays sparse only where the caller takes it so (an x, with sparse=True).
        dxs = [dx.dense(b) if isinstance(dx, IndexedSlices) and canonical_tensor(inp) not in getattr(accept, "keep_sparse", ())
               else dx for inp, dx in zip(data_inputs, dxs)]  # fmt: skip
    if len(dxs) != len(data_inputs):
        raise GraphError(
            f"internal error: the gradient of {node.op} returned {len(dxs)} value(s) for "
            f"{len(data_inputs)} input(s)",
            node=node.name,
        )
    for inp, dx in zip(data_inputs, dxs):
        t = canonical_tensor(inp)
        if dx is not None and accept(t):
            grads.setdefault(t, []).append(dx)


def _aggregate(b, contributions: list):
    sparse = [c for c in contributions if isinstance(c, IndexedSlices)]
    if sparse and len(sparse) == len(contributions):
        return _sparse_sum(b, sparse)
    if len(contributions) == 1:
        return contributions[0]
    dense = [c.dense(b) if isinstance(c, IndexedSlices) else c for c in contributions]
    return b.add_op("AddN", dense).name


def _out_dtypes(node: NodeDef) -> list:
    return output_dtypes(get_op(node.op), node.attrs)


def _tensor(name: str, k: int) -> str:
    return tensor_name(name, k)
