"""GraphBuilder: appends nodes to a GraphDef with name scopes, type binding and shape inference.

Lowering (spec → GraphDef), gradients and tests build graphs through it, so every node that
enters a graph has its type attrs filled in and its output shapes known.

Loops are built as in TensorFlow: the Merge is added with its forward input twice
(``Merge([enter, enter])``, inferred from the loop's first iteration), and once the body's
NextIteration exists, :meth:`GraphBuilder.add_back_edge` points the Merge's second input at it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from specflow.errors import GraphError, Location
from specflow.graph.device_spec import DeviceSpec
from specflow.graph.dtypes import DType, as_dtype, python_number_dtype
from specflow.graph.graph_def import GraphDef, NodeDef, parse_input
from specflow.graph.shape_inference import ShapeInferencer
from specflow.ops.registry import TensorSpec


class GraphBuilder:
    def __init__(self, graph_def: GraphDef | None = None):
        self.graph_def = GraphDef()
        self.inferencer = ShapeInferencer()
        self._names: set[str] = set()
        self._scope: list[str] = []
        self._device: str = ""
        self._location: Location | None = None
        self._control: list[str] = []
        # TensorFlow-style collections: "variables", "trainable_variables", "init_ops", ...
        self.collections: dict[str, list] = {}
        # (scope prefix, shared prefix): a variable created under the first reuses the one of the
        # same relative name under the second (a call with `share:`; see create_variable).
        self.variable_sharing: list[tuple[str, str]] = []
        if graph_def is not None:
            from specflow.graph.topo import LOOP_BACK_EDGES, topological_order

            nodes = graph_def.node_map()
            for node in topological_order(graph_def, allow_back_edges=LOOP_BACK_EDGES):
                self._append(node.copy(), nodes)

    # --- scopes -----------------------------------------------------------------------------

    @contextmanager
    def name_scope(self, name: str) -> Iterator[str]:
        self._scope.append(name)
        try:
            yield "/".join(self._scope)
        finally:
            self._scope.pop()

    @contextmanager
    def device(self, device: str) -> Iterator[None]:
        old, self._device = self._device, device
        try:
            yield
        finally:
            self._device = old

    @contextmanager
    def location(self, location: Location | None) -> Iterator[None]:
        old, self._location = self._location, location
        try:
            yield
        finally:
            self._location = old

    @contextmanager
    def control_dependencies(self, names: Sequence[str]) -> Iterator[None]:
        old = self._control
        self._control = old + [parse_input(n).node for n in names]
        try:
            yield
        finally:
            self._control = old

    @contextmanager
    def root_scope(self) -> Iterator[None]:
        """Build at the root name scope (slots and the global step have fixed names)."""
        old, self._scope = self._scope, []
        try:
            yield
        finally:
            self._scope = old

    @contextmanager
    def no_control_dependencies(self) -> Iterator[None]:
        """Build without the enclosing control dependencies (TF's ``control_dependencies(None)``):
        gradients, initializers and slots must not wait on whatever the caller was grouping."""
        old, self._control = self._control, []
        try:
            yield
        finally:
            self._control = old

    def scoped(self, name: str) -> str:
        return "/".join(self._scope + [name]) if self._scope else name

    def unique_name(self, base: str) -> str:
        """``scope/base``, or ``scope/base_1``, ``_2``... if taken (TensorFlow's rule)."""
        full = self.scoped(base)
        if full not in self._names:
            return full
        i = 1
        while f"{full}_{i}" in self._names:
            i += 1
        return f"{full}_{i}"

    def add_to_collection(self, key: str, value: Any) -> None:
        self.collections.setdefault(key, []).append(value)

    def has_node(self, name: str) -> bool:
        return name in self._names

    # --- adding nodes -------------------------------------------------------------------------

    def add_op(
        self,
        op: str,
        inputs: Sequence[str] = (),
        attrs: dict[str, Any] | None = None,
        *,
        name: str | None = None,
        device: str | None = None,
        control_inputs: Sequence[str] = (),
        colocate_with: Sequence[str] = (),
        location: Location | None = None,
        exact_name: bool = False,
    ) -> NodeDef:
        """Append a node and infer its outputs. ``name`` is scoped and must be unique unless
        ``exact_name`` is False and it is None (then ``op`` is uniquified)."""
        full = self.unique_name(op) if name is None else (name if exact_name else self.scoped(name))
        loc = location or self._location
        if full in self._names:
            raise GraphError(f"duplicate node name '{full}'", node=full, location=loc)
        dev = self._device if device is None else device
        if dev:
            DeviceSpec.parse(dev)  # raises DeviceError on a malformed string
        ctrl = [c for c in dict.fromkeys(list(self._control) + [parse_input(c).node for c in control_inputs])]
        node = NodeDef(
            name=full,
            op=op,
            inputs=list(inputs) + [f"^{c}" for c in ctrl],
            device=dev,
            attrs=dict(attrs or {}),
            location=loc,
        )
        if colocate_with:
            node.attrs["_class"] = [f"loc:@{parse_input(c).node}" for c in colocate_with]
        return self._append(node)

    def _append(self, node: NodeDef, graph: dict[str, NodeDef] | None = None) -> NodeDef:
        """Infer and append ``node``. ``graph`` (replaying a whole GraphDef) lets a loop's Merge
        be inferred from its forward input before the NextIteration of its back edge exists."""
        for c in node.control_inputs:
            if c not in self._names:
                raise GraphError(f"control dependency on missing node '{c}'", node=node.name, location=node.location)
        view = node
        if graph is not None:
            from specflow.graph.topo import forward_view

            view = forward_view(node, graph)
        attrs, _ = self.inferencer.add(view)
        node.attrs = attrs
        self.graph_def.nodes.append(node)
        self._names.add(node.name)
        return node

    def add_back_edge(self, merge: NodeDef | str, index: int, tensor: str) -> NodeDef:
        """Close a loop: make data input ``index`` of ``merge`` read ``tensor``, the output of a
        NextIteration. The Merge's shapes were inferred from its forward input; ``tensor`` must
        have its dtype and a shape at least as specific (ShapeError naming the Merge otherwise)."""
        from specflow.graph.topo import LOOP_BACK_EDGES, MERGE_OPS
        from specflow.graph.verify import check_back_edge

        name = merge.name if isinstance(merge, NodeDef) else parse_input(merge).node
        nodes = self.graph_def.node_map()
        node = nodes.get(name)
        if node is None or node.op not in MERGE_OPS:
            raise GraphError(f"add_back_edge: '{name}' is not a Merge node", node=name)
        src = nodes.get(parse_input(tensor).node)
        if src is None or src.op not in LOOP_BACK_EDGES:
            raise GraphError(
                f"add_back_edge: '{tensor}' is not the output of a NextIteration node", node=name, location=node.location
            )
        data = node.data_inputs
        if not 0 <= index < len(data):
            raise GraphError(
                f"add_back_edge: Merge '{name}' has {len(data)} input(s), no input {index}", node=name, location=node.location
            )
        check_back_edge(self.inferencer, node, tensor)
        data[index] = tensor
        node.inputs = data + [f"^{c}" for c in node.control_inputs]
        return node

    def const(self, value: Any, dtype: DType | str | None = None, name: str = "Const") -> str:
        arr = np.asarray(value, dtype=as_dtype(dtype).numpy if dtype is not None else None)
        if dtype is None and not isinstance(value, np.ndarray):
            arr = arr.astype(python_number_dtype(arr), copy=False)
        node = self.add_op("Const", [], {"value": arr, "dtype": as_dtype(arr.dtype)}, name=self._free(name), exact_name=True)
        return node.name

    def _free(self, base: str) -> str:
        return self.unique_name(base)

    # --- queries --------------------------------------------------------------------------------

    def spec(self, tensor: str) -> TensorSpec:
        return self.inferencer.spec(tensor)

    def value(self, tensor: str) -> np.ndarray | None:
        return self.inferencer.value(tensor)

    @staticmethod
    def out(node: NodeDef | str, index: int = 0) -> str:
        name = node.name if isinstance(node, NodeDef) else node
        return name if index == 0 else f"{name}:{index}"
