"""Building an executor's nodes (a mixin of :class:`specflow.runtime.executor.Executor`): each
node's kernel for its dtypes on the device, its context template and its place in the flat
input slots (``_build_node``, ``_make_item``), then the consumer edges, pending counts and
last uses that every way of running a step reads (``_wire``)."""

from __future__ import annotations

from specflow.errors import GraphError, OpError, SpecflowError
from specflow.graph.device_spec import DeviceSpec
from specflow.graph.dtypes import DType
from specflow.graph.graph_def import NodeDef, parse_input
from specflow.ops.random_ops import RNG_HOME
from specflow.ops.registry import bind_attrs, find_kernel, get_op, kernel_summary, output_dtypes
from specflow.runtime.compiled_loop import LOOP_OP
from specflow.runtime.executor_types import INEXPENSIVE_OPS, RUNS_ON_DEAD_INPUT, UNSET, NodeItem
from specflow.runtime.rendezvous import DEAD


class NodeBuilder:
    """The build half of the executor (it uses the executor's device, arena and counters)."""

    def _build_node(self, node: NodeDef, index: int, dtypes_of: dict[str, list[DType]]) -> NodeItem:
        dev = self.device
        if node.op == LOOP_OP:
            return self._build_loop(node, index, dtypes_of)
        if node.device and not DeviceSpec.parse(node.device).matches(dev.spec):
            raise GraphError(
                f"node placed on {node.device} is in the partition for {dev.name}",
                node=node.name,
                location=node.location,
            )
        try:
            opdef = get_op(node.op)
            in_dtypes = []
            for inp in node.data_inputs:
                ref = parse_input(inp)
                outs = dtypes_of.get(ref.node)
                if outs is None:  # a loop's back edge, built later: a Merge's inputs share one type
                    in_dtypes.append(None)
                    continue
                if ref.index >= len(outs):
                    raise GraphError(f"input '{inp}': node '{ref.node}' has only {len(outs)} output(s)")
                in_dtypes.append(outs[ref.index])
            if None in in_dtypes:
                known = [d for d in in_dtypes if d is not None]
                in_dtypes = [known[0] if d is None else d for d in in_dtypes]
            attrs = bind_attrs(opdef, in_dtypes, node.attrs, node=node.name)
        except SpecflowError as e:
            e.node = e.node or node.name
            e.location = e.location or node.location
            raise
        out_dtypes = output_dtypes(opdef, attrs)
        dtypes_of[node.name] = out_dtypes
        k = find_kernel(node.op, dev.device_type, attrs)
        if k is None:
            types = ", ".join(f"{a}={v}" for a, v in attrs.items() if isinstance(v, DType)) or "no type attrs"
            raise OpError(
                f"no kernel for {node.op} on {dev.name} ({dev.device_type}, {types}); "
                f"registered: {kernel_summary(node.op)}",
                node=node.name,
                location=node.location,
            )
        return self._make_item(node, index, k.fn, attrs, len(in_dtypes), out_dtypes, self._state_of(node))

    def _state_of(self, node: NodeDef) -> dict:
        """The node's kernel state, kept across steps and plans. Another plan may place the node
        on another device: arrays a kernel keeps (Const's value, Shape's, im2col buffers) are
        kept per device outside the CPU, and the random generator stays in the node's own state
        (``ops.random_ops.RNG_HOME``), so a checkpoint holds one stream per node."""
        state = self._kernel_state.setdefault(node.name, {})
        if self.device.device_type == "CPU":
            return state
        return state.setdefault(self.device.name, {RNG_HOME: state})

    def _make_item(self, node: NodeDef, index: int, fn, attrs: dict, n_in: int, out_dtypes: list[DType],
                   state: dict) -> NodeItem:  # fmt: skip
        dev = self.device
        item = NodeItem()
        item.id = index
        item.node = node
        item.name = node.name
        item.op = node.op
        item.fn = fn
        item.is_async = getattr(fn, "is_async", False)
        item.run_dead = node.op in RUNS_ON_DEAD_INPUT
        # An async kernel only registers a callback (TF's _Recv is not expensive either).
        item.static_cheap = node.op in INEXPENSIVE_OPS or item.is_async
        # Not measured yet (cost -1): inexpensive, so the first step runs on one thread and
        # measures each kernel without other threads contending for the GIL.
        item.inexpensive = True
        item.cost = -1
        item.n_in = n_in
        item.in_start = self._slot_count
        self._slot_count += item.n_in
        item.nones = [None] * item.n_in
        item.n_out = len(out_dtypes)
        # Expected output types: a numpy dtype, or None for a resource handle.
        item.checks = tuple(None if d.np_type is None else d.numpy for d in out_dtypes)
        item.check0 = item.checks[0] if item.n_out == 1 else UNSET
        item.dead_outs = (DEAD,) * item.n_out
        item.state = state
        item.ctx_template = {
            "node": node,
            "attrs": attrs,
            "xp": dev.xp,
            "device": dev.name,
            "device_type": dev.device_type,
            "resources": dev.resource_mgr,
            "state": item.state,
            "graph_seed": self.graph_seed,
            "extras": None,
            "arena": self.arena,
        }
        return item

    def _wire(self, ids: dict[str, int], out_base: dict[str, int]) -> None:
        """Consumer edges, pending counts and, per input slot, the output it holds; for the
        straight line, which values each node is the last consumer of."""
        edges: list[list[list[tuple[int, int]]]] = [[[] for _ in range(n.n_out)] for n in self._nodes]
        ctrl: list[list[int]] = [[] for _ in self._nodes]
        pending = [0] * len(self._nodes)
        last_use: dict[int, int] = {}  # flat output -> id of its last consumer in topological order
        for item in self._nodes:
            srcs = []
            for j, inp in enumerate(item.node.data_inputs):
                ref = parse_input(inp)
                src = ids[ref.node]
                edges[src][ref.index].append((item.in_start + j, item.id))
                srcs.append(out_base[ref.node] + ref.index)
                last_use[srcs[-1]] = item.id
            for c in item.node.control_inputs:
                ctrl[ids[c]].append(item.id)
            item.in_srcs = tuple(srcs)
            pending[item.id] = item.n_in + len(item.node.control_inputs)
        frees: list[list[int]] = [[] for _ in self._nodes]
        for flat, user in last_use.items():
            frees[user].append(flat)
        live = peak = 0
        for item in self._nodes:
            base = out_base[item.name]
            # Only outputs someone consumes: an unconsumed output is dropped as soon as it exists.
            item.outputs = tuple((k, base + k, tuple(e)) for k, e in enumerate(edges[item.id]) if e)
            item.out_flat = item.outputs[0][1] if item.n_out == 1 and item.outputs else -1
            item.frees = tuple(frees[item.id])
            item.ctrl_out = tuple(ctrl[item.id])
            # The straight line's live set after this node: its inputs' last uses are gone.
            live += len(item.outputs) - len(item.frees)
            peak = max(peak, live)
        self._pending = pending
        self._roots = [i for i, p in enumerate(pending) if p == 0]
        self._straight_peak = peak
