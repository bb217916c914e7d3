"""Where a Session's resources live: one device per variable or queue, for all of its steps.

Each step signature is placed on its own pruned graph, so without this a variable could be
created by the ``init`` step on one device and read by a training step placed on another, whose
resource manager never saw it ("read before it was initialized"). TensorFlow places the whole
graph once per session; here the whole graph is placed once (again after ``extend``, the homes
found earlier kept) only to find each resource-creating node's device, and every step's graph
pins those nodes there. The rest of a step is still placed by its own cost simulation; a
resource's users follow it through their colocation group. One device: nothing to do.
"""

from __future__ import annotations

from specflow.errors import SpecflowError
from specflow.graph.dtypes import resource
from specflow.graph.graph_def import GraphDef, parse_input
from specflow.graph.topo import LOOP_BACK_EDGES, topological_order
from specflow.ops.registry import get_op
from specflow.runtime.place import PlacementOptions, place


def creates_resource(op: str) -> bool:
    """A stateful op with a resource output: VarHandleOp, a queue, a reader."""
    try:
        opdef = get_op(op)
    except SpecflowError:
        return False
    return opdef.is_stateful and any(a.dtype is resource for a in opdef.outputs)


class ResourceHomes:
    def __init__(self, devices: list[str], soft_placement: bool = False):
        self.devices = list(devices)
        self.soft_placement = soft_placement
        self.homes: dict[str, str] = {}  # node -> full device name
        self._covered = 0  # how many of the graph's nodes the homes were found for

    def update(self, graph_def: GraphDef) -> None:
        """Find the homes of the graph's resources not yet placed (the graph only grows)."""
        if len(self.devices) < 2 or len(graph_def.nodes) == self._covered:
            return
        self._covered = len(graph_def.nodes)
        new = [n.name for n in graph_def.nodes if n.name not in self.homes and creates_resource(n.op)]
        if not new:
            return
        options = PlacementOptions(self.devices, soft_placement=self.soft_placement)
        try:
            placed = place(self.pin(graph_def), options)
        except SpecflowError:
            # Some node no step may run cannot be placed (an op specflow lacks, in a loaded
            # SavedModel's restore functions): place the graph without it and what depends on it.
            try:
                placed = place(self.pin(_runnable(graph_def)), options)
            except SpecflowError:
                return  # the steps place these resources themselves
        self.homes.update((name, placed.assignment[name]) for name in new if name in placed.assignment)

    def pin(self, graph_def: GraphDef) -> GraphDef:
        """A copy of ``graph_def`` with every resource it holds requested on its home."""
        if not any(n.name in self.homes for n in graph_def.nodes):
            return graph_def
        out = graph_def.copy()
        for n in out.nodes:
            home = self.homes.get(n.name)
            if home is not None:
                n.device = home
        return out


def _runnable(graph_def: GraphDef) -> GraphDef:
    """``graph_def`` without the nodes of ops specflow lacks and every node that depends on them."""
    dropped: set[str] = set()
    for n in topological_order(graph_def, allow_back_edges=LOOP_BACK_EDGES):
        if not _known(n.op) or any(parse_input(i).node in dropped for i in n.inputs):
            dropped.add(n.name)
    return GraphDef([n.copy() for n in graph_def.nodes if n.name not in dropped], dict(graph_def.versions),
                    dict(graph_def.library))


def _known(op: str) -> bool:
    try:
        get_op(op)
    except SpecflowError:
        return False
    return True
