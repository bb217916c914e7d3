"""Frozen TensorFlow GraphDef files (``.pb`` binary, ``.pbtxt`` text) read into our GraphDef, with
the signature a SavedModel would have given them.

A frozen graph (``convert_variables_to_constants_v2``, ``tf.io.write_graph``) has no
``signature_def``; like ``saved_model_cli`` and TF's graph tools, it is served through its
Placeholders (the inputs, named by node) and its sink nodes (the outputs: nodes whose outputs
nothing reads, minus NoOps, Consts and asserts). ``export/loader.py``'s ``load_model`` turns
either kind of file into a Session.
"""

from __future__ import annotations

from pathlib import Path

from google.protobuf import text_format
from tensorboard.compat.proto import graph_pb2

from specflow.errors import GraphError, Location
from specflow.graph.graph_def import GraphDef
from specflow.graph.shapes import Shape
from specflow.io.tf_graph import from_tf_graph_def
from specflow.ops.registry import TensorSpec, get_op, has_op, output_dtypes

GRAPH_SUFFIXES = (".pb", ".pbtxt")
SAVED_MODEL_FILENAME = "saved_model.pb"
# Sinks that are not results: side effects and unused constants.
_NOT_OUTPUTS = frozenset({"NoOp", "Const", "Assert", "Placeholder", "SaveV2", "RestoreV2", "AssignVariableOp",
                          "VarHandleOp", "PlaceholderWithDefault"})


def is_graph_def_file(path) -> bool:
    """Whether ``path`` names a GraphDef file (``.pb``/``.pbtxt``, not a SavedModel's saved_model.pb)."""
    p = Path(path)
    return p.suffix in GRAPH_SUFFIXES and p.name != SAVED_MODEL_FILENAME and not p.is_dir()


def read_graph_def_proto(path) -> graph_pb2.GraphDef:
    """The GraphDef message in ``path``: text format for ``.pbtxt`` (or a ``.pb`` that is not
    binary but parses as text), binary otherwise. GraphError naming the file when it is neither."""
    p = Path(path)
    where = Location(str(p))
    if not p.is_file():
        raise GraphError("no such file", location=where)
    data = p.read_bytes()
    proto = graph_pb2.GraphDef()
    if p.suffix != ".pbtxt":
        try:
            proto.ParseFromString(data)
            return proto
        except Exception as e:  # protobuf's DecodeError; its base class varies by backend
            binary_error = str(e) or type(e).__name__
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise GraphError(f"not a TensorFlow GraphDef (binary protobuf): {binary_error}", location=where) from None
    try:
        text_format.Parse(data.decode("utf-8"), proto)
    except UnicodeDecodeError:
        raise GraphError("not a text GraphDef: the file is not UTF-8 (a binary GraphDef is named .pb)",
                         location=where) from None
    except text_format.ParseError as e:
        raise GraphError(f"not a text GraphDef: {e}", location=where) from None
    return proto


def read_graph_def(path) -> GraphDef:
    """``path``'s GraphDef as ours (function library inlined, If/While lowered)."""
    proto = read_graph_def_proto(path)
    if not proto.node:
        raise GraphError("the GraphDef has no nodes", location=Location(str(path)))
    try:
        return from_tf_graph_def(proto)
    except GraphError as e:
        e.location = e.location or Location(str(path))
        raise


def inside_control_flow(graph: GraphDef) -> set[str]:
    """The nodes inside a while loop or a conditional's branch, which nothing outside can fetch:
    their depth counts an Enter and a Switch output as one level in and an Exit (out of its
    Switch and its frame) and a conditional's Merge as one out; a loop's Merge, fed back by
    NextIteration, stays at its Enter's level."""
    from specflow.graph.topo import LOOP_BACK_EDGES, topological_order

    try:
        order = topological_order(graph, allow_back_edges=LOOP_BACK_EDGES)
    except GraphError:  # a cycle: the run reports it
        return set()
    nodes, depth = graph.node_map(), {}
    for n in order:
        srcs = [i.lstrip("^").split(":")[0] for i in n.inputs]
        loop_merge = n.op == "Merge" and any(x in nodes and nodes[x].op in LOOP_BACK_EDGES for x in srcs)
        got = [depth.get(x, 0) + (nodes[x].op in ("Switch", "RefSwitch")) for x in srcs
               if x in nodes and nodes[x].op not in LOOP_BACK_EDGES]  # fmt: skip
        d = max(got, default=0)
        if n.op in ("Enter", "RefEnter"):
            d += 1
        elif n.op in ("Exit", "RefExit"):
            d -= 2
        elif n.op in ("Merge", "RefMerge") and not loop_merge:
            d -= 1
        depth[n.name] = max(d, 0)
    return {name for name, d in depth.items() if d > 0}


def graph_io(graph: GraphDef) -> tuple[dict[str, tuple[str, TensorSpec]], dict[str, tuple[str, TensorSpec]]]:
    """(inputs, outputs) of a frozen graph as signature entries, alias -> (tensor, spec): every
    output of its sink nodes (alias ``node``, or ``node:k`` for a multi-output node), and the
    Placeholders those need (TF2's freezing leaves unused ones behind)."""
    consumed = {i.lstrip("^").split(":")[0] for n in graph.nodes for i in n.inputs}
    consumed |= inside_control_flow(graph)  # a loop's or a branch's inner values are no output
    outputs = {}
    for n in graph.nodes:
        if n.name in consumed or n.op in _NOT_OUTPUTS or not has_op(n.op):
            continue
        try:
            dts = output_dtypes(get_op(n.op), n.attrs)
        except Exception:  # attrs that do not bind: the run reports the node
            continue
        for k, dt in enumerate(dts):
            outputs[n.name if len(dts) == 1 else f"{n.name}:{k}"] = (f"{n.name}:{k}", TensorSpec(dt, Shape(None)))
    nodes = graph.node_map()
    needed, stack = set(), [t.split(":")[0] for t, _ in outputs.values()]
    while stack:
        name = stack.pop()
        if name not in needed and name in nodes:
            needed.add(name)
            stack.extend(i.lstrip("^").split(":")[0] for i in nodes[name].inputs)
    inputs = {}
    for n in graph.nodes:
        if n.op == "Placeholder" and n.name in needed:
            shape = n.attrs.get("shape")
            inputs[n.name] = (f"{n.name}:0", TensorSpec(n.attrs["dtype"], Shape(None) if shape is None else shape))
    return inputs, outputs
