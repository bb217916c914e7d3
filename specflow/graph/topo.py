"""Topological order of a GraphDef, with cycles reported by their nodes.

Loops: TF's only legal cycles close through a *back edge*, a data edge from a ``NextIteration``
into a ``Merge``. Passes that accept loops ask for ``allow_back_edges=LOOP_BACK_EDGES``: those
edges are then left out of the order (the Merge comes before the NextIteration feeding it), and
any cycle that does not pass through one is still an error.
"""

from __future__ import annotations

from collections import deque

from specflow.errors import GraphError, did_you_mean
from specflow.graph.graph_def import GraphDef, NodeDef, parse_input

# The ops whose data edges into a Merge are loop back edges.
LOOP_BACK_EDGES = frozenset({"NextIteration", "RefNextIteration"})
MERGE_OPS = frozenset({"Merge", "RefMerge"})


def is_back_edge(src: NodeDef, dst: NodeDef, inp: str, allow: frozenset[str] = LOOP_BACK_EDGES) -> bool:
    """Whether input ``inp`` of ``dst`` (produced by ``src``) is a loop back edge."""
    return src.op in allow and dst.op in MERGE_OPS and not inp.startswith("^")


def back_edge_inputs(node: NodeDef, nodes: dict[str, NodeDef]) -> list[int]:
    """Indices (among ``node.data_inputs``) of the loop back edges into ``node``."""
    out = []
    for i, inp in enumerate(node.data_inputs):
        src = nodes.get(parse_input(inp).node)
        if src is not None and is_back_edge(src, node, inp):
            out.append(i)
    return out


def forward_view(node: NodeDef, nodes: dict[str, NodeDef]) -> NodeDef:
    """``node`` as shape inference sees it before its back edges are known: a loop's Merge with
    each back-edge input replaced by its first forward input (TF builds ``Merge([enter, enter])``
    and patches the back edge in later). Other nodes are returned unchanged."""
    back = back_edge_inputs(node, nodes) if node.op in MERGE_OPS else []
    if not back:
        return node
    data = node.data_inputs
    forward = [inp for i, inp in enumerate(data) if i not in back]
    if not forward:
        raise GraphError(
            "a loop's Merge needs a forward input (from an Enter) besides its NextIteration inputs",
            node=node.name,
            location=node.location,
        )
    view = node.copy()
    view.inputs = [forward[0] if i in back else inp for i, inp in enumerate(data)] + [
        f"^{c}" for c in node.control_inputs
    ]
    return view


def topological_order(graph_def: GraphDef, allow_back_edges: frozenset[str] = frozenset()) -> list[NodeDef]:
    """Nodes ordered so every input comes first (Kahn's algorithm, stable w.r.t. graph order).

    Data edges from ops named in ``allow_back_edges`` into a Merge (``LOOP_BACK_EDGES``: a
    loop's ``NextIteration`` -> ``Merge``) are ignored. Raises GraphError for an input naming no
    node, or a cycle (its nodes listed).
    """
    nodes = graph_def.node_map()
    indeg = {n.name: 0 for n in graph_def.nodes}
    users: dict[str, list[str]] = {n.name: [] for n in graph_def.nodes}
    for n in graph_def.nodes:
        for inp in n.inputs:
            src = parse_input(inp).node
            if src not in nodes:
                what = "control dependency" if inp.startswith("^") else "input"
                raise GraphError(
                    f"{what} '{inp}' names no node" + did_you_mean(src, nodes),
                    node=n.name,
                    location=n.location,
                )
            if is_back_edge(nodes[src], n, inp, allow_back_edges):
                continue
            indeg[n.name] += 1
            users[src].append(n.name)
    ready = deque(n.name for n in graph_def.nodes if indeg[n.name] == 0)
    order: list[NodeDef] = []
    while ready:
        name = ready.popleft()
        order.append(nodes[name])
        for u in users[name]:
            indeg[u] -= 1
            if indeg[u] == 0:
                ready.append(u)
    if len(order) != len(nodes):
        cyc = find_cycle({k for k, v in indeg.items() if v > 0}, nodes, allow_back_edges)
        first = nodes[cyc[0]]
        hint = " (a loop's cycle must pass through a NextIteration -> Merge back edge)" if allow_back_edges else ""
        raise GraphError(
            "cycle in graph: " + " -> ".join(cyc + [cyc[0]]) + hint, node=first.name, location=first.location
        )
    return order


def find_cycle(candidates: set[str], nodes: dict[str, NodeDef], allow_back_edges=frozenset()) -> list[str]:
    """One cycle among ``candidates`` (nodes left over by Kahn's algorithm), in edge order."""
    start = next(n for n in nodes if n in candidates)
    path: list[str] = []
    seen: dict[str, int] = {}
    cur = start
    while cur not in seen:
        seen[cur] = len(path)
        path.append(cur)
        nxt = None
        for inp in nodes[cur].inputs:
            src = parse_input(inp).node
            if src in candidates and not is_back_edge(nodes[src], nodes[cur], inp, allow_back_edges):
                nxt = src
                break
        cur = nxt
    cyc = path[seen[cur]:]
    cyc.reverse()  # print producer -> consumer
    return cyc


def needed(graph_def: GraphDef, tensors, stop=frozenset()) -> set[str]:
    """The names of the nodes ``tensors`` depend on (data and control inputs), not looking past
    the nodes in ``stop`` (fed ones)."""
    nodes = graph_def.node_map()
    keep: set[str] = set()
    todo = deque(parse_input(t).node for t in tensors)
    while todo:
        name = todo.popleft()
        if name in keep:
            continue
        keep.add(name)
        if name not in stop:
            todo.extend(parse_input(i).node for i in nodes[name].inputs)
    return keep
