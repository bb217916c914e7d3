"""Trace: the graph a Python function builds while ``sf.function`` traces it.

Op functions called during a trace add nodes through a GraphBuilder (so every node is bound,
shape-inferred and checked exactly as a spec's). Eager tensors the function closes over become
Consts; variables become one VarHandleOp each (by the variable's uid, outside any cond or loop)
read by ReadVariableOp where used, so the function reads them by reference; an sf.lookup table
likewise becomes one HashTableV2/MutableHashTableV2 node naming its resource (``table_handle``).
Stateful ops are chained in program order with control edges (automatic control dependencies,
as the spec's functions have): a read after an assign sees the assign.
"""

from __future__ import annotations

import weakref
from contextlib import contextmanager

import numpy as np

from specflow.api.context import STATE
from specflow.api.tensor import EagerTensor, GraphTensor
from specflow.errors import GraphError
from specflow.graph import dtypes
from specflow.graph.builder import GraphBuilder
from specflow.graph.graph_def import canonical_tensor
from specflow.ops.registry import OpDef

# Stateful ops that are not ordered among the program's effects: a handle names a variable.
_UNORDERED = frozenset({"VarHandleOp", "Placeholder", "Const"})


class Trace:
    def __init__(self, name: str, allow_variables: bool = True):
        self.name = name
        self.builder = GraphBuilder()
        self.inputs: list[GraphTensor] = []
        self.allow_variables = allow_variables
        self.created: list = []  # variables created while tracing (weak references)
        self.variables: dict[str, tuple[weakref.ref, str]] = {}  # uid -> (variable, handle node)
        self.tables: dict[str, str] = {}  # sf.lookup table uid -> its handle node
        self.table_objects: list = []  # the tables themselves: the concrete function keeps them alive, as TF's
        self._captured: dict[int, tuple[EagerTensor, GraphTensor]] = {}
        self.last_effect: str | None = None  # the last stateful node, in program order
        self.depth = 0  # conds and loops being built, nested
        self._pending: list = []  # see _hoist

    @contextmanager
    def active(self):
        old, STATE.trace = STATE.trace, self
        try:
            yield self
        finally:
            STATE.trace = old

    # --- building --------------------------------------------------------------------------------

    def placeholder(self, name: str, dtype, shape) -> GraphTensor:
        node = self.builder.add_op("Placeholder", [], {"dtype": dtype, "shape": shape}, name=self._free(name),
                                   exact_name=True)
        t = self._tensor(node.name)
        self.inputs.append(t)
        return t

    def add_op(self, opdef: OpDef, inputs: list[GraphTensor], attrs: dict, name: str | None) -> list[GraphTensor]:
        b = self.builder
        ordered = opdef.is_stateful and opdef.name not in _UNORDERED
        ctrl = [self.last_effect] if ordered and self.last_effect is not None else []
        node_name = b.unique_name(name or opdef.name)
        with b.device(STATE.device) if STATE.device else _nothing():
            node = b.add_op(opdef.name, [t.name for t in inputs], dict(attrs), name=node_name, exact_name=True,
                            control_inputs=ctrl)
        if ordered:
            self.last_effect = node.name
        from specflow.ops.registry import output_dtypes

        n = len(output_dtypes(opdef, node.attrs))
        return [self._tensor(node.name if k == 0 else f"{node.name}:{k}") for k in range(n)]

    def _tensor(self, name: str) -> GraphTensor:
        spec = self.builder.spec(name)
        return GraphTensor(self, canonical_tensor(name), spec.dtype, spec.shape)

    def _free(self, base: str) -> str:
        return self.builder.unique_name(base)

    def capture(self, t: EagerTensor) -> GraphTensor:
        """An eager tensor the function closes over, as a Const (once per tensor)."""
        hit = self._captured.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        if t.dtype == dtypes.resource:
            raise GraphError("a resource handle cannot be captured by value; pass the sf.Variable (or sf.lookup "
                             "table) itself")
        value = np.asarray(t)
        b = self.builder
        with b.root_scope(), b.no_control_dependencies():
            node = b.add_op("Const", [], {"value": value, "dtype": t.dtype}, name=b.unique_name("captured"),
                            exact_name=True)
        g = self._tensor(node.name)
        # Reused only when made outside any cond or loop: one made in a branch is dead in the other
        # branch, one made in a loop body lives in its frame.
        if not self.depth:
            self._captured[id(t)] = (t, g)
        return g

    def capture_outer(self, t: GraphTensor) -> GraphTensor:
        raise GraphError(f"tensor '{t.name}' belongs to another function's trace; pass it as an argument "
                         "or return it from that function")

    def variable_handle(self, var) -> GraphTensor:
        hit = self.variables.get(var._uid)
        if hit is None:
            b = self.builder
            with b.root_scope(), b.no_control_dependencies():
                node = b.add_op("VarHandleOp", [], {"container": "sf", "shared_name": var._uid, "dtype": var.dtype,
                                                    "shape": var.shape}, name=b.unique_name(var._uid),
                                exact_name=True, device=var.device)
            self._hoist(node)
            hit = self.variables[var._uid] = (weakref.ref(var), node.name)
        return self._tensor(hit[1])

    def table_handle(self, table) -> GraphTensor:
        """An sf.lookup table's handle: its creating op with the table's container and shared_name
        (the kernel hands out the table the eager object filled: ops/lookup_ops.share_table)."""
        name = self.tables.get(table._uid)
        if name is None:
            b = self.builder
            with b.root_scope(), b.no_control_dependencies():
                node = b.add_op(table._op, [], table._op_attrs(), name=b.unique_name(table._uid), exact_name=True)
            self._hoist(node)
            name = self.tables[table._uid] = node.name
            self.table_objects.append(table)
        return self._tensor(name)

    def _hoist(self, node) -> None:
        """A handle made inside a cond branch or loop body must not count as part of it (a variable
        belongs to no construct): it leaves the node list until the outermost construct is built,
        then goes to the top of the graph. (The constructs find their nodes by list position, so
        nothing may move while one is being built.)"""
        if self.depth:
            self.builder.graph_def.nodes.remove(node)
            self._pending.append(node)

    @contextmanager
    def construct(self):
        """Around the building of a cond or while loop."""
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
            if not self.depth and self._pending:
                self.builder.graph_def.nodes[0:0] = self._pending
                self._pending = []

    def variable_created(self, var, name: str | None) -> None:
        if not self.allow_variables:
            raise GraphError(f"sf.function '{self.name}' created variable '{name or 'Variable'}' on a later trace; "
                             "a function may create variables only on its first trace (create them outside, "
                             "or once, e.g. in a Module's __init__)")
        self.created.append(weakref.ref(var))

    def constant_value(self, t: GraphTensor) -> np.ndarray | None:
        return self.builder.value(t.name)


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return None
