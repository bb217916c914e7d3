"""Placement (whitepaper 3.2.1): assign every node a device.

1. Colocation: nodes that must share a device are unioned into groups: ``_class: ["loc:@x"]``,
   resource edges (a VarHandleOp and every op using its handle), ``_Arg``/``_Retval`` with
   their first consumer / producer, and control flow: a Switch with the producer of its data
   (as TF's cond and while_loop build it), a loop's NextIteration with the Merge it feeds (so a
   back edge never becomes a _Send/_Recv pair).
2. Feasibility: a group may go to devices that match every member's (possibly partial) request
   and have a kernel for every member's op and dtypes. Soft placement (opt-in) relaxes the
   request's device index, then its type, when nothing matches.
3. Greedy simulation: groups are visited in topological order and each goes to the feasible
   device where it would finish earliest, given device busy times, input ready times and
   transfer times (cost_model.py). Ties go to the lowest device, so CPU:0 wins by default.
   With GPUs present, floating-point groups choose among the GPUs and integer ones (shapes,
   counters) among the CPUs, as TF prefers GPUs and keeps such tensors in host memory.

Every failure is one DeviceError line naming the node, its request, the colocation chain that
constrained it, the devices that exist and the kernels that are registered.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from specflow.errors import DeviceError
from specflow.graph.device_spec import DeviceSpec
from specflow.graph.dtypes import DType, resource
from specflow.graph.graph_def import GraphDef, NodeDef, parse_input
from specflow.graph.topo import LOOP_BACK_EDGES, MERGE_OPS, topological_order
from specflow.ops.registry import find_kernel, get_op, kernel_summary
from specflow.runtime.cost_model import COST_MODELS, CostModel
from specflow.runtime.prune import RuntimeSpecs, infer_runtime_graph

# Ops the runtime provides on every device (they only hand tensors in and out).
ANYWHERE_OPS = frozenset({"_Arg", "_Retval", "_Send", "_Recv"})
_TYPE_ORDER = {"CPU": 0, "GPU": 1}


@dataclass
class PlacementOptions:
    devices: list[str]  # full device names
    soft_placement: bool = False
    cost_model: str = "estimated"  # or "measured": use measured_costs where present
    measured_costs: dict[str, float] | None = None  # node -> seconds, from earlier step stats
    default_device: str | None = None  # preferred (not required) for groups requesting nothing


@dataclass
class PlacementResult:
    graph_def: GraphDef  # a copy with every node.device set to a full device name
    assignment: dict[str, str]  # node -> device
    groups: dict[str, int]  # node -> colocation group id
    estimated_makespan: float  # seconds, by the cost model


def device_sort_key(spec: DeviceSpec) -> tuple:
    """Order devices as a person would list them: by task, then CPU before GPU, then index."""
    t = spec.device_type or ""
    return (
        spec.job or "",
        spec.replica or 0,
        spec.task or 0,
        _TYPE_ORDER.get(t, 2),
        t,
        spec.device_index or 0,
    )


def parse_devices(devices: list[str]) -> list[DeviceSpec]:
    """The given full device names, parsed, deduplicated and sorted by device_sort_key."""
    specs = []
    for d in devices:
        s = DeviceSpec.parse(d)
        if s.device_type is None or s.device_index is None:
            raise DeviceError(
                f"'{d}' is not a device name (expected e.g. /job:localhost/replica:0/task:0/device:CPU:0)"
            )
        if s not in specs:
            specs.append(s)
    if not specs:
        raise DeviceError("cannot place a graph on an empty device list")
    return sorted(specs, key=device_sort_key)


class _Colocation:
    """Union-find over node names that remembers why each pair was joined (for error messages)."""

    def __init__(self, names: list[str]):
        self.parent = {n: n for n in names}
        self.links: dict[str, list[tuple[str, str]]] = {n: [] for n in names}

    def find(self, a: str) -> str:
        while self.parent[a] != a:
            self.parent[a] = self.parent[self.parent[a]]
            a = self.parent[a]
        return a

    def union(self, a: str, b: str, why: str) -> None:
        for n in (a, b):
            self.parent.setdefault(n, n)
            self.links.setdefault(n, [])
        self.links[a].append((b, why))
        self.links[b].append((a, why))
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra

    def chain(self, a: str, b: str) -> str:
        """``a -(why)- x -(why)- b``: the links that put a and b in one group."""
        prev: dict[str, tuple[str, str] | None] = {a: None}
        todo = deque([a])
        while todo and b not in prev:
            cur = todo.popleft()
            for nxt, why in self.links[cur]:
                if nxt not in prev:
                    prev[nxt] = (cur, why)
                    todo.append(nxt)
        parts, cur = [b], b
        while prev.get(cur) is not None:
            cur, why = prev[cur]
            parts[:0] = [cur, f"-({why})-"]
        return " ".join(parts)


@dataclass
class _Group:
    members: list[NodeDef]  # in graph order
    request: DeviceSpec = field(default_factory=DeviceSpec)  # merged requests of the members
    requested: bool = False  # some member asked for a device
    feasible: list[DeviceSpec] = field(default_factory=list)


class _Placer:
    def __init__(self, graph_def: GraphDef, opts: PlacementOptions):
        if opts.cost_model not in COST_MODELS:
            raise DeviceError(
                f"unknown cost model '{opts.cost_model}' (expected one of {', '.join(COST_MODELS)})"
            )
        self.opts = opts
        self.devices = parse_devices(opts.devices)
        self.device_list = ", ".join(d.to_string() for d in self.devices)
        self.default = DeviceSpec.parse(opts.default_device) if opts.default_device else None
        self.graph_def = graph_def
        self.order = topological_order(graph_def, allow_back_edges=LOOP_BACK_EDGES)
        self.specs: RuntimeSpecs = infer_runtime_graph(graph_def)
        self.cost = CostModel(self.specs, opts.cost_model, dict(opts.measured_costs or {}))
        self.requests = {n.name: self._request(n) for n in graph_def.nodes}

    def _request(self, node: NodeDef) -> DeviceSpec:
        try:
            return DeviceSpec.parse(node.device)
        except DeviceError as e:
            raise DeviceError(
                f"cannot place '{node.name}' ({node.op}): {e.message}", node=node.name, location=node.location
            ) from None

    # --- messages --------------------------------------------------------------------------

    def describe(self, node: NodeDef) -> str:
        req = self.requests[node.name]
        return f"'{node.name}' ({node.op}, requested {req})" if node.device else f"'{node.name}' ({node.op})"

    def fail(self, node: NodeDef, reason: str, culprit: NodeDef | None = None) -> DeviceError:
        kernels = f"kernels: {kernel_summary(node.op)}"
        if culprit is not None and culprit is not node:
            kernels += f"; kernels of '{culprit.name}': {kernel_summary(culprit.op)}"
        msg = f"cannot place {self.describe(node)}: {reason}; devices: {self.device_list}; {kernels}"
        return DeviceError(msg, node=node.name, location=node.location)

    def type_attrs(self, node: NodeDef) -> str:
        attrs = self.specs.attrs[node.name]
        parts = [f"{k}={v.name}" for k, v in sorted(attrs.items()) if isinstance(v, DType)]
        return ", ".join(parts) or "no type attrs"

    # --- colocation groups -------------------------------------------------------------------

    def colocate(self) -> dict[str, _Group]:
        nodes = self.graph_def.nodes
        by_name = self.graph_def.node_map()
        uf = _Colocation([n.name for n in nodes])
        first_consumer: dict[str, str] = {}
        for n in nodes:
            for c in n.colocation_groups:
                uf.union(n.name, c, f"loc:@{c}")
            for inp in n.data_inputs:
                src = parse_input(inp).node
                first_consumer.setdefault(src, n.name)
                if self.specs.spec(inp).dtype is resource:
                    uf.union(src, n.name, "resource edge")
                if n.op == "_Retval":
                    uf.union(src, n.name, "fetch")
            if n.op == "Switch":
                uf.union(parse_input(n.data_inputs[0]).node, n.name, "switch data")
            if n.op in MERGE_OPS:
                for inp in n.data_inputs:
                    src = parse_input(inp).node
                    if by_name[src].op in LOOP_BACK_EDGES:
                        uf.union(src, n.name, "loop back edge")
        for n in nodes:
            if n.op == "_Arg" and n.name in first_consumer:
                uf.union(n.name, first_consumer[n.name], "feed")
        self.uf = uf
        groups: dict[str, _Group] = {}
        for n in nodes:
            groups.setdefault(uf.find(n.name), _Group([])).members.append(n)
        for g in groups.values():
            self.merge_requests(g)
            g.feasible = self.feasible(g)
        return groups

    def merge_requests(self, g: _Group) -> None:
        by: dict[str, NodeDef] = {}  # field -> the member that set it
        for m in g.members:
            r = self.requests[m.name]
            for f in ("job", "replica", "task", "device_type", "device_index"):
                v, have = getattr(r, f), getattr(g.request, f)
                if v is None:
                    continue
                g.requested = True
                if have is None:
                    g.request, by[f] = g.request.replace(**{f: v}), m
                elif have != v:
                    if self.opts.soft_placement and f in ("device_type", "device_index"):
                        # As TF: conflicting types/indices are dropped, the rest still holds.
                        clear = (
                            {"device_index": None}
                            if f == "device_index"
                            else {"device_type": None, "device_index": None}
                        )
                        g.request = g.request.replace(**clear)
                        continue
                    other = by[f]
                    raise self.fail(
                        m,
                        f"colocated with {self.describe(other)} through {self.uf.chain(m.name, other.name)}, "
                        "and their requested devices conflict",
                    )

    def has_kernel(self, node: NodeDef, device_type: str) -> bool:
        return (
            node.op in ANYWHERE_OPS
            or find_kernel(node.op, device_type, self.specs.attrs[node.name]) is not None
        )

    def feasible(self, g: _Group) -> list[DeviceSpec]:
        with_kernels = [d for d in self.devices if all(self.has_kernel(m, d.device_type) for m in g.members)]
        relaxations = [g.request]
        if self.opts.soft_placement:
            # Another index of the requested type first, then any type.
            relaxations += [
                g.request.replace(device_index=None),
                g.request.replace(device_type=None, device_index=None),
            ]
        for req in relaxations:
            found = [d for d in with_kernels if req.is_compatible_with(d)]
            if found:
                if not g.requested and self.default is not None:
                    preferred = [d for d in found if self.default.is_compatible_with(d)]
                    found = preferred or found
                return found
        raise self.explain(g)

    def explain(self, g: _Group) -> DeviceError:
        """Why no device fits group ``g``: blame the member (and the chain) that rules them out."""
        requesters = [m for m in g.members if m.device]
        for m in requesters + [m for m in g.members if not m.device]:
            matching = [d for d in self.devices if self.requests[m.name].is_compatible_with(d)]
            if not matching:
                return self.fail(m, "no such device")
            for o in [m] + [o for o in g.members if o is not m]:
                if any(self.has_kernel(o, d.device_type) for d in matching):
                    continue
                types = "/".join(dict.fromkeys(d.device_type for d in matching))
                if o is m:
                    return self.fail(m, f"no {types} kernel for {m.op} with {self.type_attrs(m)}")
                return self.fail(
                    m,
                    f"colocated with '{o.name}' ({o.op}) through {self.uf.chain(m.name, o.name)}, which has "
                    f"no {types} kernel for {self.type_attrs(o)}",
                    culprit=o,
                )
        # Every member fits somewhere alone, but no device fits them all.
        types = sorted({d.device_type for d in self.devices})
        kinds = [
            f"{m.name}: {'/'.join(t for t in types if self.has_kernel(m, t)) or 'none'}" for m in g.members
        ]
        return self.fail(
            g.members[0],
            f"no device satisfies every member of its colocation group (kernels on {'; '.join(kinds)})",
        )

    # --- greedy simulation -------------------------------------------------------------------

    def generators(self, groups: dict[str, _Group]) -> set[str]:
        """Input-less, stateless nodes alone in their group that feed something (TF's placer
        heuristic): they cost nothing to produce where they are used, so they go with their first
        consumer instead of being sent to it every step."""
        consumed = {parse_input(i).node for n in self.graph_def.nodes for i in n.inputs}
        out = set()
        for g in groups.values():
            (n, *rest) = g.members
            if not rest and not n.inputs and n.name in consumed and n.op not in ANYWHERE_OPS:
                if not get_op(n.op).is_stateful:
                    out.add(n.name)
        return out

    def candidates(self, g: _Group) -> list[DeviceSpec]:
        """The devices the simulation chooses among for ``g``. With GPUs among its feasible
        devices, a group computing on floating-point or complex tensors goes to a GPU, and one
        handling only integers, bools, strings and handles (shapes, counters) to the host, as
        TF's placer prefers GPUs and keeps such tensors in host memory. The host launches every
        GPU kernel of the process, so splitting a float computation over CPU and GPU would only
        add copies that wait for the GPU. Integer variables go to the GPU too (a global step,
        updated after every other update, would otherwise take a control edge from each), and
        so do groups with no data inputs (a train op's NoOp, a folded Const): the work they
        wait for is there, and a GPU Const's host copy serves host reads (ops/host_copies.py)."""
        gpus = [d for d in g.feasible if d.device_type == "GPU"]
        if not gpus or len(gpus) == len(g.feasible):
            return g.feasible
        if any(self.computes_floats(m) or m.op == "VarHandleOp" for m in g.members):
            return gpus
        if all(i.startswith("^") for m in g.members for i in m.inputs):
            return gpus  # no data in (a train op's NoOp, a folded Const): beside the work it waits for
        return [d for d in g.feasible if d.device_type != "GPU"]

    def computes_floats(self, node: NodeDef) -> bool:
        if node.op in ANYWHERE_OPS:
            return False
        specs = [self.specs.spec(i) for i in node.data_inputs] + list(self.specs.outputs(node.name))
        return any(s.dtype.is_floating or s.dtype.is_complex for s in specs)

    def simulate(self, groups: dict[str, _Group]) -> tuple[dict[str, DeviceSpec], float]:
        free = {d: 0.0 for d in self.devices}
        finish: dict[str, float] = {}
        placed: dict[str, DeviceSpec] = {}
        chosen: dict[str, DeviceSpec] = {}
        generators = self.generators(groups)

        def ready(node: NodeDef, d: DeviceSpec) -> float:
            t = 0.0
            for inp in node.inputs:
                src = parse_input(inp).node
                if src in placed:
                    src_dev, done = placed[src], finish[src]
                elif src in generators:  # it will be made on d if it can, else sent from its first device
                    feasible = groups[self.uf.find(src)].feasible
                    src_dev, done = (d if d in feasible else feasible[0]), 0.0
                else:  # a colocated member's input not scheduled yet
                    continue
                t = max(t, done + self.cost.transfer_time(self.cost.input_bytes(inp), src_dev, d))
            return t

        def best(g: _Group) -> DeviceSpec:
            def finish_on(d: DeviceSpec) -> float:
                start = max([free[d]] + [ready(m, d) for m in g.members])
                return start + sum(self.cost.compute_time(m, d.device_type) for m in g.members)

            # min() keeps the first of equal times, and feasible lists are in device order.
            return min(self.candidates(g), key=finish_on)

        def schedule(node: NodeDef, d: DeviceSpec) -> None:
            placed[node.name] = d
            finish[node.name] = max(free[d], ready(node, d)) + self.cost.compute_time(node, d.device_type)
            free[d] = finish[node.name]

        for node in self.order:
            if node.name in placed or node.name in generators:
                continue
            root = self.uf.find(node.name)
            if root not in chosen:
                chosen[root] = best(groups[root])
            d = chosen[root]
            for inp in node.inputs:
                src = parse_input(inp).node
                if src in generators and src not in placed:
                    g = groups[self.uf.find(src)]
                    schedule(g.members[0], d if d in g.feasible else best(g))
            schedule(node, d)
        return placed, max(finish.values(), default=0.0)


def place(graph_def: GraphDef, opts: PlacementOptions) -> PlacementResult:
    """Assign every node of ``graph_def`` one of ``opts.devices`` (see the module docstring).

    Returns a copy of the graph with full device names set, the assignment, the colocation
    group of every node (ids numbered in graph order) and the simulated makespan. Raises
    DeviceError, one self-explaining line, when a node cannot be placed.
    """
    placer = _Placer(graph_def, opts)
    groups = placer.colocate()
    placed, makespan = placer.simulate(groups)
    group_ids = {root: i for i, root in enumerate(groups)}
    out = graph_def.copy()
    for n in out.nodes:
        n.device = placed[n.name].to_string()
    return PlacementResult(
        graph_def=out,
        assignment={n.name: n.device for n in out.nodes},
        groups={n.name: group_ids[placer.uf.find(n.name)] for n in out.nodes},
        estimated_makespan=makespan,
    )
