"""A TF2 SavedModel's object graph: what makes ``tf.saved_model.load(d)`` return an object whose
attributes are the model's variables, sub-objects and methods (``m(x)``, ``m.f(x)``, ``m.v``).

TensorFlow's loader (saved_model/load.py) reads, besides the flat graph a TF1 loader runs:

- ``MetaGraphDef.object_graph_def`` (a ``SavedObjectGraph``): node 0 is the root; a node is a
  user object (``_generic_user_object``; a list or dict wrapper, revived as a list or dict), a
  variable (dtype, shape, trainable, name), a function (its concrete functions by library name,
  and a ``FunctionSpec``: the Python parameters and input signature a call is bound with), or a
  bare concrete function (a signature: keyword arguments only); ``children`` name the attributes.
  ``concrete_functions`` gives each concrete function's structured inputs (``((args...),
  {kwargs})``, TensorSpecs and Python values), its output structure, and ``bound_inputs``: the
  variable nodes whose handles fill the function's trailing resource args;
- ``graph_def.library``: the FunctionDefs (function_def.py); a signature is a small function
  calling its body function, returning a dict;
- the variables bundle's ``_CHECKPOINTABLE_OBJECT_GRAPH`` (a ``TrackableObjectGraph``, node for
  node the same objects), naming each variable's checkpoint key. TF's restore wants keys of the
  form ``PATH/.ATTRIBUTES/VARIABLE_VALUE`` (PATH: the attributes from the root, each escaped as
  TF does: ``.`` -> ``..``, ``/`` -> ``.S``), so the bundle stores the values under those keys,
  and the TF1 saver graph restores the same keys: one bundle serves both loaders.

:class:`SavedObjects` is what a writer hands in: the object tree (:class:`Obj` with children
:class:`Obj`, :class:`Var`, :class:`Method`) and the signatures. :func:`objects_from_signatures`
makes one for a model known only by its signatures (``specflow export`` of a spec, a re-saved
loaded model): its variables as attributes by their name scopes, each signature also a method.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tensorboard.compat.proto import (
    function_pb2,
    saved_object_graph_pb2,
    struct_pb2,
    trackable_object_graph_pb2,
)

from specflow.errors import ExportError
from specflow.export.function_def import call_function_def, function_def
from specflow.graph.dtypes import dtype_of
from specflow.graph.graph_def import GraphDef
from specflow.graph.shapes import Shape
from specflow.io.tf_graph import dtype_from_enum, shape_from_proto, shape_to_proto
from specflow.io.tf_object_graph import VALUE_ATTRIBUTE
from specflow.ops.registry import TensorSpec

_KINDS = {"user": "_generic_user_object", "list": "trackable_list_wrapper", "dict": "trackable_dict_wrapper"}


@dataclass(frozen=True)
class ArgSpec:
    """A tensor in a structured signature: TF's ``TensorSpec(shape, dtype, name)``."""

    name: str | None
    spec: TensorSpec


@dataclass(eq=False)
class Trace:
    """One concrete function: the ``outputs`` of ``graph`` computed from ``inputs`` (tensor,
    keyword, spec), ``targets`` run too; ``variables``: VarHandleOp node -> variable key.
    ``args``/``kwargs``: the call it answers (ArgSpec leaves for ``inputs``, in order; Python
    values); ``structure``: its result, leaves indices into ``outputs`` (or None)."""

    name: str
    graph: GraphDef
    inputs: list[tuple[str, str, TensorSpec]]
    outputs: list[tuple[str, TensorSpec]]
    variables: dict[str, str]
    args: tuple
    structure: Any
    kwargs: dict = field(default_factory=dict)
    targets: list[str] = field(default_factory=list)


@dataclass(eq=False)
class Method:
    """A polymorphic function attribute: Python parameters, input signature (nested ArgSpecs, or
    None when traced per call) and its traces."""

    params: list[str]
    input_signature: tuple | None
    traces: list[Trace]
    defaults: tuple | None = None  # of the last parameters, as Python's FullArgSpec lists them


@dataclass(frozen=True)
class Var:
    key: str  # the variable's name: its bundle key and VarHandleOp shared_name


@dataclass(eq=False)
class Obj:
    kind: str = "user"  # user, list, dict
    children: dict[str, Any] = field(default_factory=dict)  # name -> Obj | Var | Method


@dataclass(eq=False)
class Signature:
    body: Trace
    inputs: dict[str, int]  # keyword -> index into body.inputs
    outputs: dict[str, int]  # alias -> index into body.outputs


@dataclass
class SavedObjects:
    root: Obj
    signatures: dict[str, Signature] = field(default_factory=dict)


@dataclass
class WrittenObjects:
    object_graph: saved_object_graph_pb2.SavedObjectGraph
    functions: list[function_pb2.FunctionDef]
    checkpoint_graph: bytes  # a serialized TrackableObjectGraph, for OBJECT_GRAPH_KEY
    keys: dict[str, str]  # variable name -> its checkpoint (bundle) key


# --- building a plan ---------------------------------------------------------------------------------


def add_variable_lists(root: Obj, keys: list[str], trainable: dict[str, bool]) -> None:
    """``variables`` and ``trainable_variables`` on the root, as lists (what a loaded Keras model
    offers), unless the root has attributes of those names."""
    for name, chosen in (("variables", keys), ("trainable_variables", [k for k in keys if trainable.get(k, True)])):
        if name not in root.children:
            root.children[name] = Obj("list", {str(i): Var(k) for i, k in enumerate(chosen)})


def place_variable(root: Obj, key: str) -> None:
    """Variable ``key`` as an attribute path by its name scopes (``hidden/kernel``: root.hidden.kernel);
    at the root under its whole name where a path is taken by something else."""
    parts = key.split("/")
    node = root
    for p in parts[:-1]:
        nxt = node.children.setdefault(p, Obj())
        if not isinstance(nxt, Obj) or nxt.kind != "user":
            node = None
            break
        node = nxt
    if node is not None and parts[-1] not in node.children:
        node.children[parts[-1]] = Var(key)
    elif key not in root.children:
        root.children[key] = Var(key)
    else:
        raise ExportError(f"variable '{key}' has no free attribute name in the object graph")


def objects_from_signatures(model) -> SavedObjects:
    """A ServingModel known by its signatures as objects: every variable at its name-scope path,
    each signature a method of the root too (``m.serving_default(images=x)``) when the name is free."""
    root = Obj()
    keys = list(model.variables)
    for key in keys:
        place_variable(root, key)
    handles = {n.name: n.attrs.get("shared_name") or n.name for n in model.graph_def.nodes if n.op == "VarHandleOp"}
    sigs = {}
    for name, io in model.signatures.items():
        aliases = list(io.inputs)
        outs = sorted(io.outputs)
        body = Trace(name, model.graph_def, [(io.inputs[a][0], a, io.inputs[a][1]) for a in aliases],
                     [io.outputs[a] for a in outs], handles,
                     tuple(ArgSpec(a, io.inputs[a][1]) for a in aliases), {a: i for i, a in enumerate(outs)})
        sigs[name] = Signature(body, {a: i for i, a in enumerate(aliases)}, {a: i for i, a in enumerate(outs)})
        if name not in root.children and all(a.isidentifier() for a in aliases) and name.isidentifier():
            root.children[name] = Method(aliases, body.args, [body])
    add_variable_lists(root, keys, model.trainable)
    return SavedObjects(root, sigs)


# --- writing ---------------------------------------------------------------------------------------


def write_objects(objects: SavedObjects, variables: dict, trainable: dict[str, bool]) -> WrittenObjects:
    """The SavedObjectGraph, the FunctionDefs and the checkpoint's object graph for ``objects``;
    ``variables``: key -> value (its dtype and shape), ``trainable``: key -> flag."""
    _place_missing(objects, variables)
    if objects.signatures and "signatures" in objects.root.children:
        raise ExportError("the root object has an attribute 'signatures', the name TF2 gives the signature map")
    nodes, children, paths = _number(objects)
    keys = {item.key: f"{paths[i]}/.ATTRIBUTES/{VALUE_ATTRIBUTE}" for i, item in enumerate(nodes)
            if isinstance(item, Var)}
    graph = saved_object_graph_pb2.SavedObjectGraph()
    var_ids = {item.key: i for i, item in enumerate(nodes) if isinstance(item, Var)}
    functions: list[function_pb2.FunctionDef] = []
    built: dict[int, tuple[str, list[str]]] = {}  # id(trace) -> (function name, captured variable keys)
    counter = [0]

    def fname(base: str) -> str:
        counter[0] += 1
        return f"__inference_{re.sub(r'[^A-Za-z0-9_]', '_', base)}_{counter[0]}"

    def build(trace: Trace) -> tuple[str, list[str]]:
        if id(trace) not in built:
            fn = function_def(fname(trace.name), trace.graph, trace.inputs, trace.outputs, trace.targets)
            functions.append(fn.fdef)
            missing = [h for h in fn.captures if h not in trace.variables]
            if missing:
                raise ExportError(f"function '{trace.name}' reads variable handle '{missing[0]}', which is no "
                                  "tracked variable")
            built[id(trace)] = (fn.fdef.signature.name, [trace.variables[h] for h in fn.captures])
        return built[id(trace)]

    for i, item in enumerate(nodes):
        obj = graph.nodes.add()
        for name, child in children[i]:
            obj.children.add(node_id=child, local_name=name)
        if isinstance(item, Obj):
            obj.user_object.identifier = _KINDS[item.kind]
            obj.user_object.version.producer = obj.user_object.version.min_consumer = 1
        elif isinstance(item, Var):
            value = np.asarray(variables[item.key])
            obj.variable.dtype = dtype_of(value).tf_enum
            obj.variable.shape.CopyFrom(shape_to_proto(Shape(value.shape)))
            obj.variable.trainable = bool(trainable.get(item.key, True))
            obj.variable.name = item.key
        elif isinstance(item, Method):
            for trace in item.traces:
                name, captured = build(trace)
                obj.function.concrete_functions.append(name)
                cf = graph.concrete_functions[name]
                cf.bound_inputs.extend(var_ids[k] for k in captured)
                cf.canonicalized_input_signature.CopyFrom(encode((tuple(trace.args), dict(trace.kwargs))))
                cf.output_signature.CopyFrom(encode(_output_specs(trace)))
            _function_spec(obj.function.function_spec, item)
        elif item == "signatures":
            obj.user_object.identifier = "signature_map"
            obj.user_object.version.producer = obj.user_object.version.min_consumer = 1
        else:  # ("signature", name)
            sig = objects.signatures[item[1]]
            body_name, captured = build(sig.body)
            body = next(f for f in functions if f.signature.name == body_name)
            keywords = sorted(sig.inputs)  # TF flattens a dict by sorted key
            order = [keywords.index(kw) for kw in sorted(sig.inputs, key=sig.inputs.get)]
            aliases = sorted(sig.outputs)
            wrapper = call_function_def(fname(f"signature_wrapper_{item[1]}"), body, keywords, order,
                                        [sig.outputs[a] for a in aliases])
            functions.append(wrapper)
            name = wrapper.signature.name
            bare = obj.bare_concrete_function
            bare.concrete_function_name = name
            bare.argument_keywords.extend(keywords)
            bare.allowed_positional_arguments = 1 if len(keywords) == 1 else 0  # a map has no order
            cf = graph.concrete_functions[name]
            cf.bound_inputs.extend(var_ids[k] for k in captured)
            ins = {kw: ArgSpec(kw, sig.body.inputs[sig.inputs[kw]][2]) for kw in keywords}
            cf.canonicalized_input_signature.CopyFrom(encode(((), ins)))
            cf.output_signature.CopyFrom(encode({a: ArgSpec(a, sig.body.outputs[sig.outputs[a]][1]) for a in aliases}))
    return WrittenObjects(graph, functions, _checkpoint_graph(nodes, children, keys).SerializeToString(), keys)


def _place_missing(objects: SavedObjects, variables: dict) -> None:
    """Variables a function captures (or the model holds) that the tree lacks join it at the root."""
    seen: set[str] = set()
    stack, visited = [objects.root], set()
    while stack:
        obj = stack.pop()
        if id(obj) in visited:
            continue
        visited.add(id(obj))
        for child in obj.children.values():
            if isinstance(child, Var):
                seen.add(child.key)
            elif isinstance(child, Obj):
                stack.append(child)
    for key in variables:
        if key not in seen:
            place_variable(objects.root, key)


def _number(objects: SavedObjects) -> tuple[list, list[list[tuple[str, int]]], list[str]]:
    """Every object once (breadth first from the root; a variable by key, an object by identity),
    each one's (attribute, node id) children, and its path (where first reached, escaped)."""
    nodes: list = [objects.root]
    ids: dict = {id(objects.root): 0}
    children: list[list[tuple[str, int]]] = [[]]
    paths = [""]

    def node_id(item, path: str) -> int:
        key = ("var", item.key) if isinstance(item, Var) else id(item)
        if key not in ids:
            ids[key] = len(nodes)
            nodes.append(item)
            children.append([])
            paths.append(path)
        return ids[key]

    i = 0
    while i < len(nodes):
        item = nodes[i]
        if isinstance(item, Obj):
            for name, child in item.children.items():
                escaped = name.replace(".", "..").replace("/", ".S")
                children[i].append((name, node_id(child, f"{paths[i]}/{escaped}" if i else escaped)))
            if i == 0 and objects.signatures:
                sid = node_id("signatures", "signatures")
                children[0].append(("signatures", sid))
                for s in objects.signatures:
                    children[sid].append((s, node_id(("signature", s), f"signatures/{s}")))
        i += 1
    return nodes, children, paths


def _output_specs(trace: Trace):
    def leaf(x):
        if isinstance(x, int) and not isinstance(x, bool):
            return ArgSpec(f"output_{x}", trace.outputs[x][1])
        return x

    return map_structure(trace.structure, leaf)


def map_structure(value, fn):
    """``value`` (nested dicts, lists, tuples) with each leaf replaced by ``fn(leaf)``, the leaves
    visited in TensorFlow's nest order (dict keys sorted), each dict keeping its own key order."""
    if isinstance(value, dict):
        done = {k: map_structure(value[k], fn) for k in sorted(value)}
        return {k: done[k] for k in value}
    if isinstance(value, (list, tuple)):
        return type(value)(map_structure(v, fn) for v in value)
    return fn(value)


def _function_spec(spec: saved_object_graph_pb2.FunctionSpec, method: Method) -> None:
    nt = spec.fullargspec.named_tuple_value
    nt.name = "FullArgSpec"
    parts = [("args", list(method.params)), ("varargs", None), ("varkw", None), ("defaults", method.defaults),
             ("kwonlyargs", []), ("kwonlydefaults", None), ("annotations", {})]
    for key, value in parts:
        nt.values.add(key=key).value.CopyFrom(encode(value))
    spec.input_signature.CopyFrom(encode(method.input_signature))


def encode(value) -> struct_pb2.StructuredValue:
    """A Python structure as TF's ``StructuredValue`` (nested_structure_coder's encoding)."""
    out = struct_pb2.StructuredValue()
    if value is None:
        out.none_value.SetInParent()
    elif isinstance(value, bool):
        out.bool_value = value
    elif isinstance(value, int):
        out.int64_value = value
    elif isinstance(value, float):
        out.float64_value = value
    elif isinstance(value, str):
        out.string_value = value
    elif isinstance(value, ArgSpec):
        ts = out.tensor_spec_value
        if value.name is not None:
            ts.name = value.name
        ts.shape.CopyFrom(shape_to_proto(value.spec.shape))
        ts.dtype = value.spec.dtype.tf_enum
    elif isinstance(value, tuple):
        out.tuple_value.SetInParent()
        for v in value:
            out.tuple_value.values.add().CopyFrom(encode(v))
    elif isinstance(value, list):
        out.list_value.SetInParent()
        for v in value:
            out.list_value.values.add().CopyFrom(encode(v))
    elif isinstance(value, dict):
        out.dict_value.SetInParent()
        for k, v in value.items():
            if not isinstance(k, str):
                raise ExportError(f"a saved function's structure has a dict key {k!r}; TF keys them by string")
            out.dict_value.fields[k].CopyFrom(encode(v))
    else:
        raise ExportError(f"a saved function's signature holds a {type(value).__name__} ({value!r}); "
                          "TF2 SavedModels store tensors, None, bool, int, float, str, lists, tuples and dicts")
    return out


def decode(value: struct_pb2.StructuredValue):
    """``encode``'s inverse, as ``tf.saved_model.load`` reads a concrete function's structured
    signature: TensorSpecs as :class:`ArgSpec`, a named tuple as a plain tuple (only its fields
    matter to a call). Other TypeSpecs (ragged, sparse) are an ExportError naming the kind."""
    kind = value.WhichOneof("kind")
    if kind in (None, "none_value"):
        return None
    if kind in ("bool_value", "int64_value", "float64_value", "string_value"):
        return getattr(value, kind)
    if kind in ("tensor_spec_value", "bounded_tensor_spec_value"):
        ts = getattr(value, kind)
        return ArgSpec(ts.name or None, TensorSpec(dtype_from_enum(ts.dtype), shape_from_proto(ts.shape)))
    if kind in ("tuple_value", "list_value"):
        items = [decode(v) for v in getattr(value, kind).values]
        return tuple(items) if kind == "tuple_value" else items
    if kind == "named_tuple_value":
        return tuple(decode(pair.value) for pair in value.named_tuple_value.values)
    if kind == "dict_value":
        return {k: decode(v) for k, v in value.dict_value.fields.items()}
    if kind == "tensor_shape_value":
        return shape_from_proto(value.tensor_shape_value)
    if kind == "tensor_dtype_value":
        return dtype_from_enum(value.tensor_dtype_value)
    detail = value.type_spec_value.type_spec_class_name if kind == "type_spec_value" else kind
    raise ExportError(f"a saved function's signature holds a {detail or kind}, which specflow does not support")


def _checkpoint_graph(nodes: list, children: list, keys: dict) -> trackable_object_graph_pb2.TrackableObjectGraph:
    """The checkpoint's view of the same objects, ids equal: each variable's value under its key."""
    has_values: dict[int, bool] = {}

    def holds(i: int, path: frozenset = frozenset()) -> bool:
        if i not in has_values:
            if i in path:
                return False
            has_values[i] = isinstance(nodes[i], Var) or any(holds(c, path | {i}) for _, c in children[i])
        return has_values[i]

    out = trackable_object_graph_pb2.TrackableObjectGraph()
    for i, item in enumerate(nodes):
        node = out.nodes.add()
        for name, child in children[i]:
            node.children.add(node_id=child, local_name=name)
        if isinstance(item, Var):
            node.attributes.add(name=VALUE_ATTRIBUTE, full_name=item.key, checkpoint_key=keys[item.key])
        node.has_checkpoint_values.value = holds(i)
    return out
