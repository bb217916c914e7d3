"""Receives as late as possible (whitepaper §5.2): control edges that hold each ``_Recv`` back.

A ``_Recv`` has no inputs in its partition, so the executor starts it with the step's roots and
the tensor it receives then sits in memory on its device until its consumer can run: the
other inputs of the consumer may still be far from computed. This pass delays each receive
until the consumer is nearly ready, as TensorFlow's scheduler does with its ASAP/ALAP times:

1. the step's graph is all partitions together, each ``_Send`` joined to its ``_Recv``; every
   node's estimated cost comes from the cost model (``cost_model.py``, shapes of the placed
   graph), so each node has an earliest finish time ``F`` (longest path from the roots) and a
   latest start ``LS`` (from the makespan backwards);
2. per ``_Recv`` R (in topological order): its consumer ``c`` on its device with the earliest
   latest start is the one that needs it first. Of ``c``'s ancestors on R's device, the one that
   finishes last by the estimate, ``P``, must finish before ``c`` starts anyway: ``^P`` becomes a
   control input of R, so R starts when ``c`` is otherwise nearly ready. Nothing is added when
   every candidate depends on R (an edge from one would close a cycle, possibly through other
   devices) or R already waits for it;
3. the finish times are recomputed after each added edge.

Because ``P`` precedes ``c`` in any schedule, the edge never delays ``c`` past ``P``'s end plus
the receive itself (immediate in-process, where the value is usually waiting already). Graphs
with control flow (``Switch``/``Merge``, loops) are left alone: a control input from a node on
an untaken branch would make the receive dead. The pass runs where a step has receives, and is
turned off by ``SessionConfig(alap_recv=False)`` (results are identical either way).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from specflow.graph.device_spec import DeviceSpec
from specflow.graph.graph_def import GraphDef, parse_input
from specflow.runtime.cost_model import CostModel
from specflow.runtime.executor_types import DEAD_TENSOR_OPS
from specflow.runtime.prune import infer_runtime_graph

# Nodes a receive is never made to wait for: other transfers and the step's outputs.
_NEVER_WAIT_FOR = frozenset({"_Recv", "_Send", "_Retval"})


@dataclass
class AlapResult:
    """The control edges added, as (waited-for node, _Recv) pairs, in the order added."""

    edges: list[tuple[str, str]] = field(default_factory=list)


def schedule_receives_late(partitions: dict[str, GraphDef], placed: GraphDef) -> AlapResult:
    """Add the module docstring's control edges to the ``_Recv`` nodes of ``partitions`` (in
    place); ``placed`` (the placed graph they came from) gives shapes and so costs."""
    result = AlapResult()
    device_of: dict[str, str] = {}
    nodes = {}
    for dev, g in partitions.items():
        for n in g.nodes:
            if n.op in DEAD_TENSOR_OPS or n.name in nodes:
                return result  # control flow (or a name on two devices): left alone
            nodes[n.name] = n
            device_of[n.name] = dev
    recvs = [n for n in nodes.values() if n.op == "_Recv"]
    if not recvs:
        return result
    graph = _StepGraph(nodes, _costs(placed, nodes))
    for r in graph.topo_nodes(recvs):
        dev = device_of[r]
        users = [u for u in graph.succ[r] if device_of[u] == dev]
        if not users:
            continue
        first = min(users, key=lambda u: (graph.latest_start[u], graph.index[u]))
        after, before = graph.descendants(r), graph.ancestors(r)
        best = None
        for p in graph.ancestors(first):
            if device_of[p] != dev or p in after or p in before or nodes[p].op in _NEVER_WAIT_FOR:
                continue
            if best is None or (graph.finish[p], graph.index[p]) > (graph.finish[best], graph.index[best]):
                best = p
        if best is not None:
            nodes[r].inputs.append("^" + best)
            graph.add_edge(best, r)
            result.edges.append((best, r))
    return result


def _costs(placed: GraphDef, nodes: dict) -> dict[str, float]:
    """Estimated seconds per node (0 for the transfer nodes the placed graph does not hold)."""
    model = CostModel(infer_runtime_graph(placed))
    by_name = placed.node_map()
    out = {}
    for name in nodes:
        node = by_name.get(name)
        if node is None:
            out[name] = 0.0
            continue
        try:
            out[name] = model.compute_time(node, DeviceSpec.parse(node.device).device_type or "CPU")
        except Exception:  # noqa: BLE001 - a cost the model cannot estimate counts as none
            out[name] = 0.0
    return out


class _StepGraph:
    """All partitions as one graph (``_Send`` -> ``_Recv`` joined) with ASAP/ALAP times."""

    def __init__(self, nodes: dict, cost: dict[str, float]):
        self.cost = cost
        self.pred: dict[str, list[str]] = {n: [] for n in nodes}
        self.succ: dict[str, list[str]] = {n: [] for n in nodes}
        sends = {}
        for n in nodes.values():
            if n.op == "_Send":
                sends[_transfer_key(n)] = n.name
        for n in nodes.values():
            for inp in n.inputs:
                self._edge(parse_input(inp.lstrip("^")).node, n.name)
            if n.op == "_Recv" and _transfer_key(n) in sends:
                self._edge(sends[_transfer_key(n)], n.name)
        self.order = self._topo()
        self.index = {n: i for i, n in enumerate(self.order)}
        self._times()

    def _edge(self, a: str, b: str) -> None:
        if a in self.succ:
            self.succ[a].append(b)
            self.pred[b].append(a)

    def add_edge(self, a: str, b: str) -> None:
        self._edge(a, b)
        self.order = self._topo()
        self.index = {n: i for i, n in enumerate(self.order)}
        self._times()

    def _topo(self) -> list[str]:
        indeg = {n: len(p) for n, p in self.pred.items()}
        todo = deque(n for n, d in indeg.items() if d == 0)
        order = []
        while todo:
            n = todo.popleft()
            order.append(n)
            for s in self.succ[n]:
                indeg[s] -= 1
                if indeg[s] == 0:
                    todo.append(s)
        return order

    def _times(self) -> None:
        start, finish = {}, {}
        for n in self.order:
            start[n] = max((finish[p] for p in self.pred[n]), default=0.0)
            finish[n] = start[n] + self.cost[n]
        span = max(finish.values(), default=0.0)
        latest: dict[str, float] = {}
        for n in reversed(self.order):
            latest[n] = min((latest[s] for s in self.succ[n]), default=span) - self.cost[n]
        self.start, self.finish, self.latest_start = start, finish, latest

    def topo_nodes(self, nodes) -> list[str]:
        return sorted((n.name for n in nodes), key=self.index.__getitem__)

    def _reach(self, root: str, edges: dict[str, list[str]]) -> set[str]:
        seen = {root}
        todo = [root]
        while todo:
            for m in edges[todo.pop()]:
                if m not in seen:
                    seen.add(m)
                    todo.append(m)
        return seen

    def descendants(self, n: str) -> set[str]:
        return self._reach(n, self.succ)

    def ancestors(self, n: str) -> set[str]:
        return self._reach(n, self.pred) - {n}


def _transfer_key(node) -> tuple:
    a = node.attrs
    return a.get("tensor_name"), a.get("send_device"), a.get("recv_device")
