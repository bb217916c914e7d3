"""Pruning (whitepaper 4.2, partial execution): keep only what the fetches and targets need.

A fed tensor ``n:k`` is cut out of the graph: an ``_Arg`` node takes its place and every consumer
of ``n:k`` reads the ``_Arg`` instead, so ``n`` runs only if something else still needs it. Each
fetch gets a ``_Retval``. The executor fills ``_Arg`` i with feed i and collects ``_Retval`` i as
fetch i.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from specflow.errors import GraphError, did_you_mean
from specflow.graph.dtypes import as_dtype
from specflow.graph.graph_def import GraphDef, NodeDef, TensorRef, parse_input, tensor_name
from specflow.graph.names import unique_name
from specflow.graph.shape_inference import ShapeInferencer
from specflow.graph.shapes import Shape, as_shape
from specflow.graph.topo import LOOP_BACK_EDGES, forward_view, topological_order
from specflow.ops.registry import TensorSpec

# Runtime-only ops (registered by specflow/ops/runtime_ops.py); their signatures are fixed, so
# passes infer them here without depending on that registration.
_RUNTIME_SOURCES = {"_Arg": "T", "_Recv": "tensor_type"}  # op -> attr holding the output dtype
_RUNTIME_SINKS = {"_Retval", "_Send"}


@dataclass
class PruneOptions:
    fetches: list[str] = field(default_factory=list)  # tensors: "n" or "n:k"
    feeds: list[str] = field(default_factory=list)  # tensors: "n" or "n:k"
    targets: list[str] = field(default_factory=list)  # node names, run for their side effects


@dataclass
class PruneResult:
    graph_def: GraphDef
    feed_args: list[str]  # the _Arg node of feed i
    fetch_retvals: list[str]  # the _Retval node of fetch i


@dataclass
class RuntimeSpecs:
    """Inferred output types of every node, and each node's attrs with defaults bound."""

    inferencer: ShapeInferencer
    attrs: dict[str, dict]

    def spec(self, tensor: str) -> TensorSpec:
        return self.inferencer.spec(tensor)

    def outputs(self, node: str) -> list[TensorSpec]:
        return self.inferencer.specs[node]


def infer_runtime_graph(graph_def: GraphDef) -> RuntimeSpecs:
    """Shape inference that also understands ``_Arg``/``_Retval``/``_Send``/``_Recv``.

    Their outputs have the dtype of their type attr and the shape of their ``_output_shapes``
    attr when a pass recorded one, else an unknown shape (the value is fed or received at run time).
    """
    inf = ShapeInferencer()
    attrs: dict[str, dict] = {}
    nodes = graph_def.node_map()
    for node in topological_order(graph_def, allow_back_edges=LOOP_BACK_EDGES):
        if node.op in _RUNTIME_SOURCES:
            dtype = as_dtype(node.attrs[_RUNTIME_SOURCES[node.op]])
            shapes = node.attrs.get("_output_shapes")
            inf.specs[node.name] = [TensorSpec(dtype, as_shape(shapes[0]) if shapes else Shape.unknown())]
            inf.values[node.name] = [None]
            attrs[node.name] = dict(node.attrs)
        elif node.op in _RUNTIME_SINKS:
            inf.specs[node.name], inf.values[node.name] = [], []
            attrs[node.name] = dict(node.attrs)
        else:
            attrs[node.name], _ = inf.add(forward_view(node, nodes))  # a loop's Merge: its forward input
    return RuntimeSpecs(inf, attrs)


def _ancestors(nodes: dict[str, NodeDef], roots: list[str]) -> set[str]:
    seen: set[str] = set()
    todo = deque(roots)
    while todo:
        name = todo.popleft()
        if name in seen or name not in nodes:  # a dangling input is reported by topological_order
            continue
        seen.add(name)
        todo.extend(parse_input(i).node for i in nodes[name].inputs)
    return seen


def _check_tensor(text: str, what: str, nodes: dict[str, NodeDef]) -> tuple[str, int]:
    ref = parse_input(text)
    if ref.is_control:
        raise GraphError(f"cannot {what} '{text}': a control input is not a tensor (write '{ref.node}:0')")
    if ref.node not in nodes:
        raise GraphError(
            f"cannot {what} '{text}': no node named '{ref.node}'" + did_you_mean(ref.node, nodes),
            node=ref.node,
        )
    return ref.node, ref.index


def prune(graph_def: GraphDef, opts: PruneOptions) -> PruneResult:
    """The subgraph that computes ``opts.fetches`` and runs ``opts.targets``, cut at ``opts.feeds``.

    Keeps exactly the transitive closure (data and control inputs) of the fetched nodes and the
    targets, not crossing fed tensors; a loop's back edges are inputs like any other, so
    fetching a loop's Exit keeps the whole loop. Feed i becomes ``_Arg`` (index i; the fed tensor's static
    shape in ``_output_shapes`` when its rank is known) named ``_arg_<node>_<k>_<i>``; fetch i
    becomes ``_Retval`` (index i) named ``_retval_<node>_<k>_<i>``.
    A fetch that is also fed returns the fed value. Nodes come out in a deterministic topological
    order. Raises GraphError for unknown tensors or targets, missing outputs and duplicate feeds.
    """
    nodes = graph_def.node_map()
    feeds = [_check_tensor(f, "feed", nodes) for f in opts.feeds]
    fetches = [_check_tensor(f, "fetch", nodes) for f in opts.fetches]
    targets = []
    for t in opts.targets:
        name = parse_input(t).node
        if name not in nodes:
            raise GraphError(f"unknown target '{t}'" + did_you_mean(name, nodes), node=name)
        targets.append(name)

    # Types of fed and fetched tensors, inferred only over what they depend on (an unrelated
    # broken node elsewhere in the graph must not break this step).
    needed = _ancestors(nodes, [n for n, _ in feeds + fetches])
    specs = infer_runtime_graph(GraphDef([n for n in graph_def.nodes if n.name in needed]))

    def spec_of(node: str, index: int, what: str) -> TensorSpec:
        outs = specs.outputs(node)
        if not 0 <= index < len(outs):
            raise GraphError(
                f"cannot {what} '{node}:{index}': '{node}' ({nodes[node].op}) has {len(outs)} output(s)",
                node=node,
                location=nodes[node].location,
            )
        return outs[index]

    taken = set(nodes)
    fed: dict[str, str] = {}  # "n:k" -> _Arg name
    args: list[NodeDef] = []
    for i, (node, index) in enumerate(feeds):
        t = tensor_name(node, index)
        if t in fed:
            raise GraphError(f"tensor '{t}' is fed twice", node=node)
        spec = spec_of(node, index, "feed")
        attrs = {"T": spec.dtype, "index": i}
        if spec.shape.rank is not None:  # TF's convention for a statically known output shape
            attrs["_output_shapes"] = [spec.shape]
        arg = NodeDef(
            unique_name(f"_arg_{node}_{index}_{i}", taken), "_Arg", attrs=attrs, location=nodes[node].location
        )
        fed[t] = arg.name
        args.append(arg)

    def rewire(inp: str) -> str:
        ref = parse_input(inp)
        return inp if ref.is_control else fed.get(tensor_name(ref.node, ref.index), inp)

    retvals: list[NodeDef] = []
    for i, (node, index) in enumerate(fetches):
        dtype = spec_of(node, index, "fetch").dtype
        retvals.append(
            NodeDef(
                unique_name(f"_retval_{node}_{index}_{i}", taken),
                "_Retval",
                inputs=[rewire(str(TensorRef(node, index)))],
                attrs={"T": dtype, "index": i},
                location=nodes[node].location,
            )
        )

    # The closure, walking rewired inputs so fed producers are reached only through other edges.
    arg_names = {a.name for a in args}
    keep: set[str] = set()
    todo = deque([parse_input(r.inputs[0]).node for r in retvals] + targets)
    while todo:
        name = todo.popleft()
        if name in keep or name in arg_names or name not in nodes:
            continue
        keep.add(name)
        todo.extend(parse_input(rewire(i)).node for i in nodes[name].inputs)

    kept = []
    for n in graph_def.nodes:
        if n.name in keep:
            c = n.copy()
            c.inputs = [rewire(i) for i in n.inputs]
            kept.append(c)
    out = GraphDef(args + kept + retvals, dict(graph_def.versions), dict(graph_def.library))
    out.nodes = topological_order(out, allow_back_edges=LOOP_BACK_EDGES)
    return PruneResult(out, [a.name for a in args], [r.name for r in retvals])
