"""verify(graph_def): the structural checks every pass's output must pass, then shape inference.

Checks: unique node names, known ops, data inputs before control inputs, every input naming an
existing node (and output, via inference), devices that parse, colocation targets that exist, no
cycles except loops closed by a NextIteration -> Merge back edge, input counts and type attrs
(bound per node), and shapes. A loop's Merge is inferred from its forward input; each back edge
must then carry the same dtype and a shape at least as specific (TF's shape invariant).
Independent problems are collected and raised together (MultipleErrors); a node whose inputs
failed is not checked again.
"""

from __future__ import annotations

from specflow.errors import (
    DeviceError,
    GraphError,
    MultipleErrors,
    ShapeError,
    SpecflowError,
    did_you_mean,
)
from specflow.graph import dtypes
from specflow.graph.device_spec import DeviceSpec
from specflow.graph.graph_def import GraphDef, NodeDef, parse_input
from specflow.graph.limits import check_tensor_size
from specflow.graph.shape_inference import ShapeInferencer
from specflow.graph.shapes import Shape
from specflow.graph.topo import LOOP_BACK_EDGES, back_edge_inputs, forward_view, topological_order
from specflow.ops.registry import all_ops, get_op


def verify(graph_def: GraphDef, fold_constants: bool = True) -> ShapeInferencer:
    """Check ``graph_def``; return the ShapeInferencer holding every tensor's TensorSpec.

    Raises a GraphError / OpError / DeviceError / ShapeError naming the node (and its spec
    location), or MultipleErrors when several independent problems are found.
    """
    all_ops()  # every op family registered
    errors = _structure_errors(graph_def)
    _raise(errors)
    order = topological_order(graph_def, allow_back_edges=LOOP_BACK_EDGES)
    nodes = graph_def.node_map()
    inf = ShapeInferencer(fold_constants)
    skipped: set[str] = set()  # failed, or downstream of a failure
    for node in order:
        try:
            view = forward_view(node, nodes)
            if any(parse_input(i).node in skipped for i in view.data_inputs):
                skipped.add(node.name)
                continue
            _, specs = inf.add(view)
            for k, spec in enumerate(specs):  # limits before allocation (graph/limits.py)
                if spec.shape.is_fully_defined and spec.dtype is not dtypes.resource:
                    check_tensor_size(spec.shape.dims, spec.dtype.itemsize, f"output {k} of {node.op}, "
                                      f"{spec.dtype.name}{list(spec.shape.dims)},")
        except SpecflowError as e:
            errors.append(_at(e, node))
            skipped.add(node.name)
    for node in order:  # every back edge against the Merge it closes
        for i in back_edge_inputs(node, nodes) if node.name not in skipped else ():
            src = node.data_inputs[i]
            if parse_input(src).node in skipped:
                continue
            try:
                check_back_edge(inf, node, src)
            except SpecflowError as e:
                errors.append(_at(e, node))
    position = {n.name: i for i, n in enumerate(graph_def.nodes)}
    errors.sort(key=lambda e: position.get(e.node, -1))  # report in graph order
    _raise(errors)
    return inf


def check_back_edge(inf: ShapeInferencer, merge: NodeDef, src: str) -> None:
    """Raise ShapeError unless loop back edge ``src`` fits ``merge``'s inferred output: the same
    dtype, and a shape at least as specific (every dimension the Merge's shape knows, ``src``
    has, equal), so what was inferred from the loop's first iteration holds for every iteration."""
    want, got = inf.spec(f"{merge.name}:0"), inf.spec(src)
    if got.dtype != want.dtype:
        raise ShapeError(
            f"loop back edge '{src}' is {got.dtype.name}, but the Merge's value is {want.dtype.name}",
            node=merge.name,
            location=merge.location,
        )
    if not _at_least_as_specific(got.shape, want.shape):
        raise ShapeError(
            f"loop back edge '{src}' has shape {got.shape}, but the Merge's value has shape "
            f"{want.shape} when the loop starts (each iteration must keep the loop's shape)",
            node=merge.name,
            location=merge.location,
        )


def _at_least_as_specific(s: Shape, of: Shape) -> bool:
    if of.rank is None:
        return True
    if s.rank != of.rank:
        return False
    return all(b is None or a == b for a, b in zip(s.dims, of.dims))


def _structure_errors(graph_def: GraphDef) -> list[SpecflowError]:
    errors: list[SpecflowError] = []
    names: dict[str, NodeDef] = {}
    for node in graph_def.nodes:
        if node.name in names:
            errors.append(GraphError(f"duplicate node name '{node.name}'", node=node.name, location=node.location))
        names[node.name] = node
    for node in graph_def.nodes:
        try:
            get_op(node.op)
        except SpecflowError as e:
            errors.append(_at(e, node))
        seen_control = False
        for inp in node.inputs:
            ref = parse_input(inp)
            if ref.is_control:
                seen_control = True
            elif seen_control:
                errors.append(GraphError(f"data input '{inp}' comes after control inputs", node=node.name, location=node.location))
            if ref.node not in names:
                what = "control dependency" if ref.is_control else "input"
                errors.append(GraphError(f"{what} '{inp}' names no node" + did_you_mean(ref.node, names), node=node.name, location=node.location))
        if node.device:
            try:
                DeviceSpec.parse(node.device)
            except DeviceError as e:
                errors.append(_at(e, node))
        for target in node.colocation_groups:
            if target not in names:
                errors.append(GraphError(f"colocate_with names no node '{target}'" + did_you_mean(target, names), node=node.name, location=node.location))
    return errors


def _at(e: SpecflowError, node: NodeDef) -> SpecflowError:
    e.node = e.node or node.name
    e.location = e.location or node.location
    return e


def _raise(errors: list[SpecflowError]) -> None:
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise MultipleErrors(errors)
