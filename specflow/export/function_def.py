"""A subgraph of a GraphDef as a TensorFlow ``FunctionDef``: what a TF2 SavedModel's object graph
calls, and what ``tf.saved_model.load`` turns back into concrete functions.

``function_def(name, graph, inputs, outputs, targets)`` takes the nodes the outputs and targets
depend on, cut at the input tensors:

- each input tensor becomes an input arg (named after its keyword, in TF's arg-name spelling
  ``[a-z][a-z0-9_]*``, unique among args and nodes, which share one namespace in a FunctionDef);
- each ``VarHandleOp`` the body reads becomes a trailing ``DT_RESOURCE`` arg (TF's captured
  variable: the object graph binds it to a variable object); its handle data carries the
  variable's dtype and shape, so TF's shape inference sees through ``ReadVariableOp``;
- body inputs use FunctionDef naming, ``node:output_arg:index`` (the op's output args from the
  registry, lists counted through their length attrs); an arg is read by its name;
- each output is an ``Identity`` (``ret``), and every stateful node is a control output (one in a
  cond branch by the cond's Merge), so TF's
  function runtime runs the effects even when no output depends on them.

``call_function_def`` builds the small function TF writes for a signature: its inputs by
keyword, a ``StatefulPartitionedCall`` of the body function, the outputs picked by alias.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tensorboard.compat.proto import attr_value_pb2, function_pb2, types_pb2

from specflow.errors import ExportError
from specflow.graph import dtypes
from specflow.graph.dtypes import DType
from specflow.graph.graph_def import GraphDef, NodeDef, canonical_tensor, parse_input
from specflow.graph.shapes import Shape
from specflow.io.tf_graph import attr_to_proto, node_to_proto, shape_to_proto
from specflow.ops.registry import TensorSpec, get_op, has_op

_ARG_NAME = re.compile(r"[a-z][a-z0-9_]*")
# Not part of a function body: its inputs come in as args.
_ARG_OPS = frozenset({"Placeholder", "VarHandleOp"})


class FrameError(ExportError):
    """A body TF2's function runtime would refuse to run."""


@dataclass
class BuiltFunction:
    fdef: function_pb2.FunctionDef
    captures: list[str]  # the VarHandleOp nodes read, in the order of the trailing resource args


def arg_name(name: str, taken: set[str]) -> str:
    """``name`` in TF's arg-name spelling, not in ``taken`` (which it joins)."""
    base = re.sub(r"[^a-z0-9_]", "_", name.lower()) or "arg"
    if not _ARG_NAME.fullmatch(base):
        base = "arg_" + base
    return _unique(base, taken, first=0)


def _unique(base: str, taken: set[str], first: int = 1) -> str:
    """``base``, or ``base_K`` for the first K from ``first`` not in ``taken`` (which it joins)."""
    out, k = base, first
    while out in taken:
        out = f"{base}_{k}"
        k += 1
    taken.add(out)
    return out


def output_ref(node: NodeDef, index: int) -> str:
    """Flat output ``index`` of ``node`` as FunctionDef names it: ``node:output_arg:i``."""
    if not has_op(node.op):
        raise ExportError(f"op {node.op} is not known here; its outputs cannot be named in a function",
                          node=node.name, location=node.location)
    opdef = get_op(node.op)
    start = 0
    for arg in opdef.outputs:
        if arg.type_list_attr:
            n = len(_attr(node, opdef, arg.type_list_attr))
        elif arg.number_attr:
            n = int(_attr(node, opdef, arg.number_attr))
        else:
            n = 1
        if index < start + n:
            return f"{node.name}:{arg.name}:{index - start}"
        start += n
    raise ExportError(f"{node.op} has {start} output(s); output {index} is read", node=node.name,
                      location=node.location)


def _attr(node: NodeDef, opdef, key: str):
    if key in node.attrs:
        return node.attrs[key]
    return opdef.attrs[key].default


def _body(graph: GraphDef, cut: set[str], roots: list[str]) -> list[NodeDef]:
    """The nodes ``roots`` (tensors or node names) depend on, in graph order; an input reading a
    tensor in ``cut`` is not followed (the tensor comes in as an arg)."""
    nodes = graph.node_map()
    keep: set[str] = set()
    todo = [parse_input(r).node for r in roots if r.startswith("^") or canonical_tensor(r) not in cut]
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        if name not in nodes:
            raise ExportError(f"the graph has no node '{name}'")
        keep.add(name)
        for i in nodes[name].inputs:
            if i.startswith("^") or canonical_tensor(i) not in cut:
                todo.append(parse_input(i).node)
    return [n for n in graph.nodes if n.name in keep]


def function_def(name: str, graph: GraphDef, inputs: list[tuple[str, str, TensorSpec]],
                 outputs: list[tuple[str, TensorSpec]], targets: list[str] = ()) -> BuiltFunction:
    """The FunctionDef ``name`` computing ``outputs`` (tensor, spec) from ``inputs`` (tensor,
    keyword, spec), running ``targets`` (node names) too. See the module docstring."""
    cut = {canonical_tensor(t) for t, _, _ in inputs}
    body = _body(graph, cut, [t for t, _ in outputs] + [f"^{t}" for t in targets])
    taken = {n.name for n in body}
    fdef = function_pb2.FunctionDef()
    sig = fdef.signature
    sig.name = name
    args: dict[str, str] = {}  # tensor (or handle node) -> arg name
    shapes = []
    for k, (tensor, keyword, spec) in enumerate(inputs):
        a = args[canonical_tensor(tensor)] = arg_name(keyword, taken)
        sig.input_arg.add(name=a, type=spec.dtype.tf_enum)
        shapes.append(shape_to_proto(spec.shape))
        attrs = fdef.arg_attr[k].attr
        attrs["_user_specified_name"].s = keyword.encode()
        attrs["_output_shapes"].list.shape.add().CopyFrom(shape_to_proto(spec.shape))
    captures = []
    for node in body:
        if node.op == "Placeholder":
            raise ExportError(f"function '{name}' reads Placeholder '{node.name}', which is not among its inputs",
                              node=node.name, location=node.location)
        if node.op == "VarHandleOp":
            a = args[f"{node.name}:0"] = arg_name(f"{node.attrs.get('shared_name') or node.name}_resource", taken)
            arg = sig.input_arg.add(name=a, type=types_pb2.DT_RESOURCE)
            arg.handle_data.add(dtype=node.attrs["dtype"].tf_enum, shape=shape_to_proto(node.attrs["shape"]))
            shapes.append(shape_to_proto(Shape([])))
            fdef.arg_attr[len(inputs) + len(captures)].attr["_user_specified_name"].s = b"resource"
            captures.append(node.name)
    handles = set(captures)
    arg_dtypes = {canonical_tensor(t): spec.dtype for t, _, spec in inputs}
    arg_dtypes.update({f"{h}:0": dtypes.resource for h in captures})
    for node in body:
        if node.op == "Enter" and not node.attrs.get("is_constant") and parse_input(node.inputs[0]).node in handles:
            # TF's function runtime rejects such a body ("inputs from different frames") once it
            # forwards the loop-invariant handle; the flat graph a TF1 loader runs is fine
            raise FrameError(f"function '{name}': a while loop carries variable handle '{node.inputs[0]}' as a "
                             "loop variable", node=node.name, location=node.location)
    body = _enter_args(body, arg_dtypes)
    nodes = {n.name: n for n in body}
    stateful = []
    for node in body:
        if node.op in _ARG_OPS:
            continue
        proto = node_to_proto(node)
        proto.attr.pop("_class", None)  # colocation with nodes that may now be args
        del proto.input[:]
        for i in node.inputs:
            ref = parse_input(i)
            if ref.is_control:
                if ref.node not in handles and f"{ref.node}:0" not in args:
                    proto.input.append(i)
            else:
                proto.input.append(_read(nodes, i, args))
        fdef.node_def.append(proto)
        if get_op(node.op).is_stateful:
            stateful.append(node.name)
    for k, (tensor, spec) in enumerate(outputs):
        ident = _unique("Identity", taken)
        out = f"output_{k}"
        fdef.node_def.add(name=ident, op="Identity", input=[_read(nodes, tensor, args)],
                          attr={"T": attr_value_pb2.AttrValue(type=spec.dtype.tf_enum)})
        sig.output_arg.add(name=out, type=spec.dtype.tf_enum)
        fdef.ret[out] = f"{ident}:output:0"
    for s in _control_outputs(body, stateful, {parse_input(t).node for t in args}):
        sig.control_output.append(s)
        fdef.control_ret[s] = s
    sig.is_stateful = bool(stateful)
    fdef.attr["_input_shapes"].list.shape.extend(shapes)
    return BuiltFunction(fdef, captures)


def _enter_args(body: list[NodeDef], args: dict[str, DType]) -> list[NodeDef]:
    """``body`` with each arg read inside a while loop's frame passed in through constant Enters
    (one per frame level, shared by the frame's readers). TF's executor refuses an edge between
    frames other than Enter/Exit; a flat graph reads a hoisted VarHandleOp in the loop directly,
    but as a function the handle is an arg, which lives in the outer frame."""
    frames = _frame_paths(body, {parse_input(t).node for t in args})
    out: list[NodeDef] = []
    enters: dict[tuple, str] = {}  # (arg tensor, frame path) -> the tensor that carries it there
    names = {n.name for n in body}

    def carried(t: str, frame: tuple) -> str:
        if not frame:
            return t
        key = (t, frame)
        if key not in enters:
            outer = carried(t, frame[:-1])
            name = _unique(f"{parse_input(t).node}/Enter", names)
            out.append(NodeDef(name, "Enter", [outer], "", {"T": args[t], "frame_name": frame[-1][0],
                                                               "is_constant": True,
                                                               "parallel_iterations": frame[-1][1]}))
            enters[key] = f"{name}:0"
        return enters[key]

    for node in body:
        frame = frames[node.name]
        if frame and node.op not in ("Enter", "RefEnter") and any(
                not i.startswith("^") and canonical_tensor(i) in args for i in node.inputs):
            node = node.copy()
            node.inputs = [carried(canonical_tensor(i), frame) if not i.startswith("^") and canonical_tensor(i) in args
                           else i for i in node.inputs]
        out.append(node)
    return out


def _frame_paths(body: list[NodeDef], arg_nodes: set[str]) -> dict[str, tuple[tuple[str, int], ...]]:
    """Node -> the while-loop frames it runs in, outermost first, each (name, parallel
    iterations): an Enter opens its frame, an Exit leaves it, other nodes run in their inputs'."""
    frames: dict[str, tuple[tuple[str, int], ...]] = {}
    for node in body:  # graph order: an Enter before its frame's nodes (back edges come later)
        src = next((parse_input(i).node for i in node.inputs  # an arg is in every frame it is carried to
                    if parse_input(i).node in frames and parse_input(i).node not in arg_nodes), None)
        outer = frames.get(src, ())
        if node.op in ("Enter", "RefEnter"):
            frames[node.name] = (*outer, (node.attrs["frame_name"], int(node.attrs.get("parallel_iterations", 10))))
        elif node.op in ("Exit", "RefExit"):
            frames[node.name] = outer[:-1]
        else:
            frames[node.name] = outer
    return frames


def _cond_paths(body: list[NodeDef], arg_nodes: set[str], frames: dict) -> dict[str, tuple[tuple[str, int], ...]]:
    """Node -> the cond branches it runs in, outermost first, each (predicate tensor, branch):
    a data consumer of a Switch outside any loop frame enters that branch (a loop's own Switch
    and Merge change nothing), a Merge outside loop frames leaves the innermost one; other nodes
    run in their inputs' deepest. Such a node is dead when its branch is not taken."""
    nodes = {n.name: n for n in body}
    conds: dict[str, tuple[tuple[str, int], ...]] = {}
    for node in body:
        best: tuple[tuple[str, int], ...] = ()
        for i in node.inputs:
            ref = parse_input(i)
            if ref.node in arg_nodes or ref.node not in conds:
                continue  # an arg, or a back edge (a NextIteration: in its loop, the same branches)
            c, src = conds[ref.node], nodes[ref.node]
            if src.op in ("Switch", "RefSwitch") and not frames[ref.node] and not ref.is_control:
                c = (*c, (canonical_tensor(src.inputs[1]), ref.index))
            if len(c) > len(best):
                best = c
        if node.op in ("Merge", "RefMerge") and not frames[node.name]:
            best = best[:-1]
        conds[node.name] = best
    return conds


def _control_outputs(body: list[NodeDef], stateful: list[str], arg_nodes: set[str]) -> list[str]:
    """What the function's callers wait for: its stateful nodes outside loops, and for a loop
    holding any (an assignment, an Assert of ``max_iterations``) the loop's Exits. TF's runtime
    refuses a control output inside a loop's frame ("inputs from different frames"). One inside
    a cond branch is dead when the other branch runs, and TF's inlined call then gives its
    caller dead (empty) results: the Merge closing the outermost cond stands for it (always
    live, and after the branch's effects, which its output waits on)."""
    frames = _frame_paths(body, arg_nodes)
    conds = _cond_paths(body, arg_nodes, frames)
    loops = {frames[s][0] for s in stateful if frames.get(s)}
    exits = [n.name for n in body if n.op in ("Exit", "RefExit") and not frames[n.name]
             and (frames.get(parse_input(n.inputs[0]).node) or ((None, 0),))[0] in loops]  # fmt: skip
    closing: dict[str, str] = {}  # a cond's predicate -> its Merge outside every branch
    for n in body:
        if n.op in ("Merge", "RefMerge") and not frames[n.name] and not conds[n.name]:
            for i in n.inputs:
                c = conds.get(parse_input(i).node)
                if c:
                    closing.setdefault(c[0][0], n.name)
    out: list[str] = []
    for s in [s for s in stateful if not frames.get(s)] + exits:
        if conds.get(s):
            pred = conds[s][0][0]
            if pred not in closing:
                raise FrameError(f"node '{s}' runs inside a cond on '{pred}' whose Merge is not part of the function")
            s = closing[pred]
        if s not in out:
            out.append(s)
    return out


def _read(nodes: dict[str, NodeDef], tensor: str, args: dict[str, str]) -> str:
    t = canonical_tensor(tensor)
    if t in args:
        return args[t]
    ref = parse_input(t)
    return output_ref(nodes[ref.node], ref.index)


def call_function_def(name: str, callee: function_pb2.FunctionDef, keywords: list[str], order: list[int],
                      picks: list[int]) -> function_pb2.FunctionDef:
    """A function taking ``keywords`` (then the callee's resource args, passed through) that calls
    ``callee`` with its inputs in its own order (``order[j]``: the keyword feeding the callee's
    input j) and returns the callee's outputs ``picks``, in that order."""
    cin = list(callee.signature.input_arg)
    n = len(order)
    fdef = function_pb2.FunctionDef()
    sig = fdef.signature
    sig.name = name
    taken = {"StatefulPartitionedCall"}
    names = []
    for k, kw in enumerate(keywords):
        names.append(arg_name(kw, taken))
        sig.input_arg.add(name=names[-1], type=cin[order.index(k)].type)
        fdef.arg_attr[k].attr["_user_specified_name"].s = kw.encode()
    for arg in cin[n:]:
        a = sig.input_arg.add()
        a.CopyFrom(arg)
        a.name = arg_name(arg.name, taken)
        names.append(a.name)
    call_inputs = [names[order[j]] for j in range(n)] + names[len(keywords):]
    call = fdef.node_def.add(name="StatefulPartitionedCall", op="StatefulPartitionedCall", input=call_inputs)
    call.attr["f"].func.name = callee.signature.name
    call.attr["Tin"].CopyFrom(attr_to_proto([]))
    call.attr["Tin"].list.type.extend(a.type for a in cin)
    call.attr["Tout"].CopyFrom(attr_to_proto([]))
    call.attr["Tout"].list.type.extend(a.type for a in callee.signature.output_arg)
    call.attr["config_proto"].s = b""
    call.attr["executor_type"].s = b""
    for k, p in enumerate(picks):
        ident = _unique("Identity", taken)
        dtype = callee.signature.output_arg[p].type
        fdef.node_def.add(name=ident, op="Identity", input=[f"StatefulPartitionedCall:output:{p}"],
                          attr={"T": attr_value_pb2.AttrValue(type=dtype)})
        sig.output_arg.add(name=f"output_{k}", type=dtype)
        fdef.ret[f"output_{k}"] = f"{ident}:output:0"
    sig.control_output.append("StatefulPartitionedCall")
    fdef.control_ret["StatefulPartitionedCall"] = "StatefulPartitionedCall"
    sig.is_stateful = True
    shapes = list(callee.attr["_input_shapes"].list.shape)
    if len(shapes) == len(cin):
        fdef.attr["_input_shapes"].list.shape.extend([shapes[order.index(k)] for k in range(len(keywords))]
                                                     + shapes[n:])
    return fdef
