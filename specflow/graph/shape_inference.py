"""Static shape and dtype inference, incremental (node by node) or over a whole GraphDef.

Small constant subgraphs are folded while inferring (a ``Reshape``'s shape input built from
``Const``/``Pack``/``Shape`` ops becomes a known value), so shapes stay precise after lowering.
"""

from __future__ import annotations

import numpy as np

from specflow.errors import GraphError, ShapeError, SpecflowError, did_you_mean
from specflow.graph.graph_def import GraphDef, NodeDef, parse_input
from specflow.graph.shapes import Shape
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import (
    TensorSpec,
    bind_attrs,
    find_kernel,
    get_op,
    input_ranges,
    output_dtypes,
)

_FOLD_LIMIT = 4096  # elements: fold only small constant tensors (shapes, axes, scalars)
_NEVER_FOLD = {"Placeholder", "PlaceholderWithDefault", "_Arg", "_Recv", "_Send", "_Retval",
               # Control flow: a Switch makes dead values, and a loop's Merge changes every iteration.
               "Switch", "Merge"}  # fmt: skip


class ShapeInferencer:
    """Keeps the TensorSpec of every output of every node added so far."""

    def __init__(self, fold_constants: bool = True):
        self.specs: dict[str, list[TensorSpec]] = {}
        self.values: dict[str, list[np.ndarray | None]] = {}
        # node -> {output index: TensorSpec of the value a resource output points to}
        self.handle_data: dict[str, dict[int, TensorSpec]] = {}
        self.fold_constants = fold_constants

    def spec(self, tensor: str) -> TensorSpec:
        ref = parse_input(tensor)
        outs = self.specs.get(ref.node)
        if outs is None:
            raise GraphError(f"unknown tensor '{tensor}'" + did_you_mean(ref.node, self.specs))
        if not 0 <= ref.index < len(outs):
            raise GraphError(f"'{ref.node}' has {len(outs)} output(s); '{tensor}' does not exist")
        return outs[ref.index]

    def value(self, tensor: str) -> np.ndarray | None:
        ref = parse_input(tensor)
        vals = self.values.get(ref.node)
        return None if vals is None or ref.index >= len(vals) else vals[ref.index]

    def add(self, node: NodeDef) -> tuple[dict, list[TensorSpec]]:
        """Infer ``node``'s outputs; its inputs must have been added. Returns (bound attrs, specs)."""
        opdef = get_op(node.op)
        in_specs, in_values, in_handles = [], [], []
        for inp in node.data_inputs:
            ref = parse_input(inp)
            if ref.node not in self.specs:
                raise GraphError(
                    f"input '{inp}' names no node" + did_you_mean(ref.node, self.specs),
                    node=node.name,
                    location=node.location,
                )
            outs = self.specs[ref.node]
            if ref.index >= len(outs):
                raise GraphError(
                    f"input '{inp}': node '{ref.node}' has only {len(outs)} output(s)",
                    node=node.name,
                    location=node.location,
                )
            in_specs.append(outs[ref.index])
            in_values.append(self.values[ref.node][ref.index])
            in_handles.append(self.handle_data.get(ref.node, {}).get(ref.index))
        try:
            attrs = bind_attrs(opdef, [s.dtype for s in in_specs], node.attrs, node=node.name)
        except SpecflowError as e:
            e.location = e.location or node.location
            raise
        out_dtypes = output_dtypes(opdef, attrs)
        ic = InferenceContext(
            node=node,
            attrs=attrs,
            input_dtypes=[s.dtype for s in in_specs],
            input_shapes=[s.shape for s in in_specs],
            input_values=in_values,
            input_ranges=input_ranges(opdef, len(in_specs), attrs, node.name),
            input_handle_data=in_handles,
        )
        if opdef.shape_fn is None:
            shapes = [Shape.unknown()] * len(out_dtypes)
        else:
            shapes = list(opdef.shape_fn(ic))
        if len(shapes) != len(out_dtypes):
            raise ShapeError(
                f"internal: shape function of {node.op} gave {len(shapes)} shapes for "
                f"{len(out_dtypes)} outputs",
                node=node.name,
                location=node.location,
            )
        specs = [TensorSpec(d, s) for d, s in zip(out_dtypes, shapes)]
        self.specs[node.name] = specs
        if ic.output_handle_data:
            self.handle_data[node.name] = dict(ic.output_handle_data)
        self.values[node.name] = self._fold(node, opdef, attrs, in_values, specs)
        return attrs, specs

    def _fold(self, node, opdef, attrs, in_values, specs) -> list[np.ndarray | None]:
        none = [None] * len(specs)
        if not self.fold_constants or node.op in _NEVER_FOLD or opdef.is_stateful:
            return none
        if node.op == "Const":
            return [attrs["value"]]
        # Shape-of-a-known-shape is constant even when the input's value is not (ShapeN: per input).
        if node.op == "ShapeN":
            shapes = [self.spec(i).shape for i in node.data_inputs]
            return [np.array(s.dims, sp.dtype.numpy) if s.is_fully_defined else None for s, sp in zip(shapes, specs)]
        if node.op in ("Shape", "Size", "Rank") and node.data_inputs:
            s = self.spec(node.data_inputs[0]).shape
            dt = specs[0].dtype.numpy
            if node.op == "Rank" and s.rank is not None:
                return [np.array(s.rank, dt)]
            if node.op == "Shape" and s.is_fully_defined:
                return [np.array(s.dims, dt)]
            if node.op == "Size" and s.is_fully_defined:
                return [np.array(s.num_elements(), dt)]
            return none
        if not in_values or any(v is None for v in in_values):
            return none
        if sum(np.size(v) for v in in_values) > _FOLD_LIMIT:
            return none
        if any(s.dtype.np_type in (None,) for s in specs):
            return none
        if find_kernel(node.op, "CPU", attrs) is None:
            return none
        from specflow.ops.eval import run_kernel

        try:
            outs = run_kernel(node, list(in_values), attrs)
        except Exception:  # folding is an optimisation; the runtime reports real errors
            return none
        if any(np.size(o) > _FOLD_LIMIT for o in outs):
            return none
        return outs


def infer_graph(graph_def: GraphDef, fold_constants: bool = True) -> ShapeInferencer:
    """Infer every node in topological order (see ``verify`` for the structural checks)."""
    from specflow.graph.topo import topological_order

    inf = ShapeInferencer(fold_constants)
    for node in topological_order(graph_def):
        inf.add(node)
    return inf
