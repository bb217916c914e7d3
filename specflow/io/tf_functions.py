"""Inlining TensorFlow function libraries, so TF2 graphs (tf.function, Keras SavedModels) run as
one flat graph.

A TF2 GraphDef keeps almost everything in ``library.function``: the top-level graph holds
variables, placeholders and ``StatefulPartitionedCall`` nodes whose ``f`` attr names a
FunctionDef, and function bodies call further functions. specflow's graphs have no functions, so
every call is inlined, recursively, much as TF's own inliner does
(common_runtime/inline_function_utils.cc):

- body node ``n`` of call ``C`` becomes ``C/n`` (a nested call: ``C/D/n``), on C's device unless
  it names its own;
- a function argument is replaced by the tensor the call passes for it;
- body inputs use FunctionDef naming, ``node:output_arg:index`` (``split:output:1``); they become
  ``C/node:k``, k the flat output index counted through the op's output args (lists included);
- ``C`` itself becomes an ``IdentityN`` of the function's ``ret`` tensors with control inputs on
  its ``control_ret`` nodes (a ``NoOp`` when it returns nothing), so ``C:k`` and ``^C`` keep
  their meaning: the k-th result, and "the call has finished, side effects included";
- C's control inputs reach the body through a ``C/input_control_node`` NoOp that every body node
  without an input from inside the body waits on;
- attrs a polymorphic function leaves as ``placeholder`` take the values the call binds.

A direct call (a node whose op is a library function's name) is inlined the same way. Inlined
nodes carry two internal attrs, ``_tf_function`` and ``_tf_call``, so an unsupported op can be
reported with the names TF gave it. Ops specflow lacks are kept as they are: a graph's unused
paths (a SavedModel's save function) may hold them, and :func:`check_supported` rejects only
those a run needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from tensorboard.compat.proto import attr_value_pb2, function_pb2, graph_pb2, node_def_pb2

import specflow.ops  # noqa: F401  (registers every op: has_op must see them all)
from specflow.errors import GraphError, OpError
from specflow.graph.graph_def import GraphDef, NodeDef, canonical_tensor, parse_input
from specflow.graph.names import check_library_names, unique_name
from specflow.io.tf_control_flow import LOWERED_OPS, lower
from specflow.ops.registry import get_op, has_op

CALL_OPS = frozenset({"PartitionedCall", "StatefulPartitionedCall"})
# TF ops a loaded graph never holds: calls are inlined, If/While lowered (tf_control_flow.py).
# They have no OpDef here; op coverage counts them as supported.
LOAD_TIME_OPS = CALL_OPS | LOWERED_OPS
FUNCTION_ATTR = "_tf_function"  # the library function an inlined node comes from
CALL_ATTR = "_tf_call"  # the name the call it was inlined for got (its prefix)


@dataclass
class InlinedNode:
    """One node of the flattened graph; ``function``/``call`` are set for inlined body nodes."""

    proto: node_def_pb2.NodeDef
    function: str | None = None
    call: str | None = None


def inline_functions(graph: graph_pb2.GraphDef) -> list[InlinedNode]:
    """The graph's nodes with every function call inlined (see the module docstring). A top-level
    node whose name an inlined or lowered node takes too (TF's freezing names a constant captured
    by an If ``cond/input_2``, and the If's lowering makes its input Switches ``cond/input_i``) is
    renamed, its readers with it: otherwise one of the two would silently stand for the other."""
    check_library_names(graph.library)  # before any of its names is used
    lib = {f.signature.name: f for f in graph.library.function}
    for _ in range(4):
        out = _inline_all(graph, lib)
        plain = {n.name for n in graph.node if n.op not in LOWERED_OPS and _callee(n, lib, None) is None}
        seen: set[str] = set()
        clash = {x.proto.name for x in out if x.proto.name in seen or seen.add(x.proto.name)} & plain
        if not clash:
            return out
        taken = seen | {n.name for n in graph.node}
        rename = {}
        for name in sorted(clash):
            rename[name] = unique_name(f"{name}_", taken)
        graph = _renamed(graph, rename)
    return out


def _renamed(graph: graph_pb2.GraphDef, rename: dict[str, str]) -> graph_pb2.GraphDef:
    """A copy of ``graph`` with top-level nodes renamed, and the top-level inputs naming them."""
    new = graph_pb2.GraphDef()
    new.CopyFrom(graph)
    for node in new.node:
        node.name = rename.get(node.name, node.name)
        for k, ref in enumerate(node.input):
            ctl, base = ref.startswith("^"), ref.lstrip("^")
            src, colon, port = base.partition(":")
            if src in rename:
                node.input[k] = ("^" if ctl else "") + rename[src] + colon + port
    return new


def _inline_all(graph: graph_pb2.GraphDef, lib) -> list[InlinedNode]:
    out: list[InlinedNode] = []
    for node in graph.node:
        lowered = node.op in LOWERED_OPS
        if not lowered and _callee(node, lib, None) is None:
            out.append(InlinedNode(node))
            continue
        data = [i for i in node.input if not i.startswith("^")]
        controls = [i[1:] for i in node.input if i.startswith("^")]
        if lowered:  # If/While: to Switch/Merge/Enter/Exit/NextIteration (tf_control_flow.py)
            lower(_Inliner(lib, out), node, node.name, data, controls, node.device, None, ())
        else:
            _Inliner(lib, out).call(node, node.name, data, controls, node.device, None, ())
    return out


def _callee(node: node_def_pb2.NodeDef, lib: Mapping[str, function_pb2.FunctionDef], where: str | None):
    """(FunctionDef, attrs the call binds) when ``node`` calls a library function, else None."""
    if node.op in CALL_OPS:
        func = node.attr["f"].func
        if func.name not in lib:
            raise GraphError(f"{node.op} '{node.name}'{_in(where)} calls function '{func.name}', "
                             "which the graph's library does not define")
        return lib[func.name], func.attr
    if node.op in lib:
        return lib[node.op], node.attr
    return None


def _in(function: str | None) -> str:
    return f" in function '{function}'" if function else ""


@dataclass
class _Inliner:
    lib: Mapping[str, function_pb2.FunctionDef]
    out: list[InlinedNode]
    _emitted: set[str] = field(default_factory=set)

    def emit(self, proto: node_def_pb2.NodeDef, function: str | None, call: str | None) -> None:
        if proto.name in self._emitted:
            raise GraphError(f"inlining '{call}' makes a second node named '{proto.name}'")
        self._emitted.add(proto.name)
        self.out.append(InlinedNode(proto, function, call))

    def call(self, node, path: str, data: list[str], controls: list[str], device: str,
             caller: str | None, stack: tuple[str, ...]) -> None:
        """Inline ``node`` (a call) as ``path``: ``data``/``controls`` are its inputs, already in
        flat-graph names; ``caller`` is the function the call sits in (None: the top level)."""
        fdef, bound = _callee(node, self.lib, caller)
        sig = fdef.signature
        fname = sig.name
        if fname in stack:
            chain = " -> ".join((*stack, fname))
            raise GraphError(f"function '{fname}' calls itself ({chain}); recursive functions cannot be inlined")
        for arg in sig.input_arg:
            if arg.number_attr or arg.type_list_attr:
                raise GraphError(f"function '{fname}' takes list argument '{arg.name}', which inlining does not support")
        if len(data) != len(sig.input_arg):
            raise GraphError(f"'{path}'{_in(caller)} passes {len(data)} inputs to function '{fname}', "
                             f"which takes {len(sig.input_arg)}")
        body = {n.name: _bind_placeholders(n, bound, fname) for n in fdef.node_def}
        scope = _Scope(fname, path, dict(zip((a.name for a in sig.input_arg), data)), body, self.lib)
        gate = None
        if controls:  # the body must not start before the call's control inputs
            gate = unique_name(f"{path}/input_control_node", {f"{path}/{n}" for n in body})
            self.emit(node_def_pb2.NodeDef(name=gate, op="NoOp", input=[f"^{c}" for c in controls],
                                           device=device), caller, None)
        for name, n in body.items():
            inputs = [scope.reference(i, name) for i in n.input]
            if gate and not any(_from_body(i, body) for i in n.input):
                inputs.append(f"^{gate}")
            new = node_def_pb2.NodeDef()
            new.CopyFrom(n)
            new.name, new.device = f"{path}/{name}", n.device or device
            del new.input[:]
            _rename_colocation(new, path, body)
            if new.op in LOWERED_OPS:
                d = [i for i in inputs if not i.startswith("^")]
                c = [i[1:] for i in inputs if i.startswith("^")]
                lower(self, new, new.name, d, c, new.device, fname, (*stack, fname))
            elif _callee(new, self.lib, fname) is not None:
                d = [i for i in inputs if not i.startswith("^")]
                c = [i[1:] for i in inputs if i.startswith("^")]
                self.call(new, new.name, d, c, new.device, fname, (*stack, fname))
            else:
                new.input.extend(inputs)
                self.emit(new, fname, path)
        self.emit(_result_node(fdef, bound, scope, path, device), caller, None)


def _result_node(fdef: function_pb2.FunctionDef, bound, scope: _Scope, path: str, device: str):
    """The node standing for the call: IdentityN of the rets (NoOp if none), after the control rets."""
    sig = fdef.signature
    rets = []
    for arg in sig.output_arg:
        if arg.name not in fdef.ret:
            raise GraphError(f"function '{sig.name}' does not say what output '{arg.name}' returns")
        rets.append(scope.reference(fdef.ret[arg.name], f"ret {arg.name}"))
    for control in sorted(fdef.control_ret.values()):
        if control not in scope.body:
            raise GraphError(f"function '{sig.name}' names control output '{control}', which is not one of its nodes")
    controls = [f"^{path}/{c}" for c in sorted(fdef.control_ret.values())]
    node = node_def_pb2.NodeDef(name=path, op="IdentityN" if rets else "NoOp", input=rets + controls, device=device)
    if rets:
        node.attr["T"].list.type.extend(_output_type(sig, a, bound) for a in sig.output_arg)
    return node


def _output_type(sig, arg, bound) -> int:
    if arg.number_attr or arg.type_list_attr:
        raise GraphError(f"function '{sig.name}' returns list output '{arg.name}', which inlining does not support")
    if arg.type_attr:
        if arg.type_attr not in bound:
            raise GraphError(f"function '{sig.name}': the call does not bind type attr '{arg.type_attr}' "
                             f"of output '{arg.name}'")
        return bound[arg.type_attr].type
    return arg.type


@dataclass
class _Scope:
    """Name resolution inside one inlined function body."""

    function: str
    path: str  # the call's name: body node n becomes path/n
    args: dict[str, str]  # argument name -> the flat-graph tensor passed for it
    body: dict[str, node_def_pb2.NodeDef]
    lib: Mapping[str, function_pb2.FunctionDef]

    def reference(self, ref: str, reader: str) -> str:
        """A FunctionDef input (``arg``, ``node:out:i``, ``^node``) as a flat-graph input."""
        if ref.startswith("^"):
            name = ref[1:]
            if name in self.body:
                return f"^{self.path}/{name}"
            if name in self.args:  # a control edge from an argument: from the tensor's producer
                return "^" + parse_input(self.args[name]).node
            raise self._unknown(ref, reader)
        parts = ref.split(":")
        if len(parts) == 1 and parts[0] in self.args:
            return self.args[parts[0]]
        if len(parts) not in (2, 3) or parts[0] not in self.body:
            raise self._unknown(ref, reader)
        name, out = parts[0], parts[1]
        if len(parts) == 3 and not parts[2].isdigit():
            raise self._unknown(ref, reader)
        index = int(parts[2]) if len(parts) == 3 else 0
        return f"{self.path}/{name}:{self._flat_index(self.body[name], out, index, ref)}"

    def _unknown(self, ref: str, reader: str) -> GraphError:
        return GraphError(f"function '{self.function}': '{reader}' reads '{ref}', which is neither an argument "
                          "nor an output of a node of the function")

    def _flat_index(self, node: node_def_pb2.NodeDef, out: str, index: int, ref: str) -> int:
        ranges = _output_ranges(node, self.lib)
        if ranges is None:  # an op specflow lacks: check_supported reports it if it is needed
            return index
        if out not in ranges:
            names = ", ".join(ranges) or "none"
            raise GraphError(f"function '{self.function}' reads '{ref}', but {node.op} has no output '{out}' "
                             f"(outputs: {names})")
        start, size = ranges[out]
        if index >= size:
            raise GraphError(f"function '{self.function}' reads '{ref}', but output '{out}' of {node.op} "
                             f"holds {size} tensor(s)")
        return start + index


def _output_ranges(node: node_def_pb2.NodeDef, lib) -> dict[str, tuple[int, int]] | None:
    """Output arg name -> (first flat index, count) for ``node``'s op; None for an unknown op."""
    if node.op in CALL_OPS:
        return {"output": (0, len(node.attr["Tout"].list.type))}
    sizes: list[tuple[str, int]]
    if node.op in lib:
        sizes = [(a.name, 1) for a in lib[node.op].signature.output_arg]
    elif has_op(node.op):
        opdef = get_op(node.op)
        sizes = []
        for arg in opdef.outputs:
            if arg.number_attr:
                n = node.attr[arg.number_attr].i if arg.number_attr in node.attr else opdef.attrs[arg.number_attr].default
            elif arg.type_list_attr:
                n = len(node.attr[arg.type_list_attr].list.type)
            else:
                n = 1
            sizes.append((arg.name, int(n)))
    else:
        return None
    ranges, start = {}, 0
    for name, n in sizes:
        ranges[name] = (start, n)
        start += n
    return ranges


def _bind_placeholders(node: node_def_pb2.NodeDef, bound, function: str) -> node_def_pb2.NodeDef:
    """``node`` with its ``placeholder`` attrs (``T: $T``) replaced by the call's values."""
    if not any(_has_placeholder(v) for v in node.attr.values()):
        return node
    new = node_def_pb2.NodeDef()
    new.CopyFrom(node)
    for key, value in new.attr.items():
        _substitute(value, bound, f"function '{function}': attr '{key}' of node '{node.name}'")
    return new


def _has_placeholder(value: attr_value_pb2.AttrValue) -> bool:
    kind = value.WhichOneof("value")
    return kind == "placeholder" or (kind == "func" and any(_has_placeholder(v) for v in value.func.attr.values()))


def _substitute(value: attr_value_pb2.AttrValue, bound, where: str) -> None:
    kind = value.WhichOneof("value")
    if kind == "placeholder":
        if value.placeholder not in bound:
            raise GraphError(f"{where} refers to attr '{value.placeholder}', which the call does not bind")
        value.CopyFrom(bound[value.placeholder])
    elif kind == "func":
        for inner in value.func.attr.values():
            _substitute(inner, bound, where)


def _from_body(ref: str, body) -> bool:
    return ref.lstrip("^").split(":")[0] in body


def _rename_colocation(node: node_def_pb2.NodeDef, path: str, body) -> None:
    """``_class: loc:@n`` names a body node: point it at the inlined one (drop other groups)."""
    if "_class" not in node.attr:
        return
    groups = [s.decode() for s in node.attr["_class"].list.s]
    kept = [f"loc:@{path}/{g[5:]}" for g in groups if g.startswith("loc:@") and g[5:] in body]
    del node.attr["_class"]
    if kept:
        node.attr["_class"].list.s.extend(g.encode() for g in kept)


# --- what a run needs ----------------------------------------------------------------------


# Ops that create, overwrite or delete files at a path given as data. A loaded model's signature
# or restore op holding one could write or delete anywhere the user can (a SaveV2 over a file, a
# MergeV2Checkpoints of '../../x' deletes x's bundle): refused, as nothing read from a file may
# touch files the user did not name. TF's own Saver only runs them when asked to save.
FILE_WRITING_OPS = frozenset({"SaveV2", "MergeV2Checkpoints"})


def check_supported(graph_def: GraphDef, roots: Iterable[str], feeds: Iterable[str] = ()) -> None:
    """OpError naming every op specflow lacks among the nodes ``roots`` (tensor or node names,
    ``^n`` allowed) need, not looking past fed tensors, and any of them that writes files
    (``FILE_WRITING_OPS``). Nodes off those paths do not matter."""
    nodes = graph_def.node_map()
    fed = {canonical_tensor(f) for f in feeds}
    stack = [parse_input(r).node for r in roots]
    seen: set[str] = set()
    missing: dict[str, NodeDef] = {}  # op -> the first node using it
    writes: list[NodeDef] = []
    while stack:
        name = stack.pop()
        if name in seen or name not in nodes:
            continue
        seen.add(name)
        node = nodes[name]
        if not has_op(node.op):
            missing.setdefault(node.op, node)
        elif node.op in FILE_WRITING_OPS:
            writes.append(node)
        for inp in node.inputs:
            if inp.startswith("^") or canonical_tensor(inp) not in fed:
                stack.append(parse_input(inp).node)
    if missing:
        uses = "; ".join(f"op '{op}' ({_describe(n)})" for op, n in sorted(missing.items()))
        raise OpError(f"the model uses {uses}, which specflow does not support")
    if writes:
        n = min(writes, key=lambda n: n.name)
        raise OpError(f"the model's {_describe(n)} ({n.op}) would write or delete files at paths the model "
                      "itself names; specflow does not run file writes from a loaded model")


def check_spec_writes_no_files(graph_def: GraphDef) -> None:
    """OpError at the spec line of a node that writes or deletes files (``FILE_WRITING_OPS``):
    a spec is read from a file too, so its graph may not write or delete at paths it names
    (``train`` and ``export`` write checkpoints and SavedModels themselves, not through the spec)."""
    for node in graph_def.nodes:
        if node.op in FILE_WRITING_OPS:
            raise OpError(f"{node.op} would write or delete files at paths the spec itself names; specflow does "
                          "not run file writes from a spec (train and export write checkpoints themselves)",
                          node=node.name, location=node.location)


def _describe(node: NodeDef) -> str:
    function, call = node.attrs.get(FUNCTION_ATTR), node.attrs.get(CALL_ATTR)
    if not function:
        return f"node '{node.name}'"
    local = node.name[len(call) + 1:] if call and node.name.startswith(call + "/") else node.name
    return f"node '{local}' in function '{function}', inlined as '{node.name}'"
