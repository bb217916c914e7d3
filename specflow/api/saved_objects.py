"""A TF2 SavedModel's object graph as attributes of what sf.load returns, as
``tf.saved_model.load`` gives them: ``m.l1.kernel`` is the sf.Variable saved at that path, ``m.l1``
an :class:`SavedObject` (an sf.Module: ``m.l1.trainable_variables``), ``m.sub.f`` a saved
function (restored_functions.py), and a root saved with a ``__call__`` makes ``m(x)`` call it."""

from __future__ import annotations

from specflow.api.module import Module


class SavedObject(Module):
    """A saved object of the model (a tf.Module, a Keras layer): its variables and sub-objects as
    attributes, by the names they were saved under."""

    def __init__(self, name: str, attributes: dict):
        super().__init__(name)
        for k, v in attributes.items():
            setattr(self, k, v)

    def __repr__(self) -> str:
        from specflow.api.restored_functions import RestoredFunction

        n = sum(isinstance(v, RestoredFunction) for v in vars(self).values())
        return f"<saved object '{self.name}': {len(self.variables)} variable(s), {n} function(s)>"


def object_attributes(meta_graph, graph, variables: dict, functions: dict | None = None) -> tuple[dict, bool]:
    """The root's attributes (name -> sf.Variable, saved function or SavedObject, only those
    holding variables or functions) and whether the root has a ``__call__``. ``variables``: graph
    variable name -> sf.Variable; ``functions``: dotted path (``sub.f``) -> saved function.

    Which variable an object path names is read from the SavedModel's own restore function:
    it assigns checkpoint key ``l1/kernel/.ATTRIBUTES/VARIABLE_VALUE`` to its variable's handle.
    (Names alone do not tell: TensorFlow names two saved ``kernel``s ``kernel`` and ``kernel_1``
    in an order of its own.)"""
    if meta_graph is None or not meta_graph.object_graph_def.nodes:
        return {}, False
    tree: dict = {}
    for path, var_name in _restored_paths(graph).items():
        var = variables.get(var_name)
        parts = path.split("/")
        if var is not None and all(p.isidentifier() for p in parts):
            _place(tree, parts, var)
    for path, fn in (functions or {}).items():
        _place(tree, path.split("."), fn)

    def build(name: str, value):
        if isinstance(value, dict):
            return SavedObject(name, {k: build(k, v) for k, v in value.items()})
        return value

    callable_root = any(c.local_name == "__call__" for c in meta_graph.object_graph_def.nodes[0].children)
    return {k: build(k, v) for k, v in tree.items()}, callable_root


def _place(tree: dict, parts: list[str], value) -> None:
    """``value`` at path ``parts`` of the nested dicts ``tree`` (the first one placed there stays;
    a path through a non-object is dropped)."""
    node = tree
    for p in parts[:-1]:
        node = node.setdefault(p, {})
        if not isinstance(node, dict):
            return
    node.setdefault(parts[-1], value)


def _restored_paths(graph) -> dict[str, str]:
    """Object path -> the variable (VarHandleOp shared_name) the restore function assigns it to."""
    nodes = graph.node_map()
    out = {}
    for key, handle in restored_handles(graph).items():
        node = nodes[handle]
        out[key.split("/.ATTRIBUTES/")[0]] = node.attrs.get("shared_name") or node.name
    return out


def restored_handles(graph) -> dict[str, str]:
    """Checkpoint key (``l1/kernel/.ATTRIBUTES/VARIABLE_VALUE``) -> the VarHandleOp node the
    SavedModel's restore function assigns that key's value to."""
    from specflow.graph.graph_def import parse_input

    nodes = graph.node_map()
    out = {}
    for n in graph.nodes:
        if n.op != "AssignVariableOp":
            continue
        src = parse_input(n.data_inputs[1])
        while src.node in nodes and nodes[src.node].op == "Identity":
            src = parse_input(nodes[src.node].data_inputs[0])
        restore = nodes.get(src.node)
        handle = nodes.get(parse_input(n.data_inputs[0]).node)
        if restore is None or restore.op != "RestoreV2" or handle is None or handle.op != "VarHandleOp":
            continue
        names = nodes.get(parse_input(restore.data_inputs[1]).node)
        if names is None or names.op != "Const":
            continue
        keys = [k.decode() if isinstance(k, bytes) else str(k) for k in list(names.attrs["value"].ravel())]
        if src.index < len(keys) and "/.ATTRIBUTES/" in keys[src.index]:
            out[keys[src.index]] = handle.name
    return out


_CALL_OPS = ("StatefulPartitionedCall", "PartitionedCall")


def object_methods(meta_graph) -> dict[str, tuple[str, list[str], list[str], str]]:
    """The root's methods that one of the SavedModel's signatures serves (TF2's loaded
    ``m.f(x)``): method name -> (the signature's name, the method's argument names in order, the
    signature's input keys in that order, what it returns: "tensor", "sequence" or "dict", from
    its concrete function's output signature).

    A TF2 signature is a wrapper function (the object graph's ``signatures`` object names it)
    whose body calls one concrete function of the saved object. A method (a child of kind
    ``function``) is served when each of its concrete functions is wrapped by the same signature;
    one traced more ways than its signatures cover (a Python argument baked into each trace) is
    left out, as is one no signature serves: only TensorFlow's function dispatch picks among them."""
    if meta_graph is None or not meta_graph.object_graph_def.nodes:
        return {}
    library = {f.signature.name: f for f in meta_graph.graph_def.library.function}
    served: dict[str, tuple[str, list[str]]] = {}  # concrete function -> (signature, its input keys in arg order)
    for name, wrapper_name in _signature_wrappers(meta_graph).items():
        wrapper = library.get(wrapper_name)
        inner = [] if wrapper is None else [n for n in wrapper.node_def if n.op in _CALL_OPS]
        if len(inner) == 1:
            keys = _input_order(meta_graph.signature_def[name], wrapper, inner[0])
            served.setdefault(inner[0].attr["f"].func.name, (name, keys))
    graph = meta_graph.object_graph_def
    out = {}
    for child in graph.nodes[0].children:
        node = graph.nodes[child.node_id]
        if node.WhichOneof("kind") != "function" or not node.function.concrete_functions:
            continue
        concretes = list(node.function.concrete_functions)
        if all(c in served for c in concretes) and len({served[c][0] for c in concretes}) == 1:
            name, keys = served[concretes[0]]
            returned = _returns(graph.concrete_functions[concretes[0]].output_signature)
            out[child.local_name] = (name, _arg_names(node.function.function_spec), keys, returned)
    return out


def _signature_wrappers(meta_graph) -> dict[str, str]:
    """Signature name -> its wrapper function, as the object graph's ``signatures`` object lists
    them (each a bare concrete function)."""
    graph = meta_graph.object_graph_def
    out = {}
    for child in graph.nodes[0].children:
        if child.local_name == "signatures":
            for sig in graph.nodes[child.node_id].children:
                node = graph.nodes[sig.node_id]
                if node.WhichOneof("kind") == "bare_concrete_function" and sig.local_name in meta_graph.signature_def:
                    out[sig.local_name] = node.bare_concrete_function.concrete_function_name
    return out


def _input_order(sig, wrapper, inner) -> list[str]:
    """The signature's input keys in the order of the concrete function's arguments: the inner
    call's inputs are the wrapper's arguments in the function's order (captures last), and the
    wrapper's arguments are named for the signature's inputs. (Keys need not be the method's
    argument names: Keras's ``serve(args_0)`` takes ``keras_tensor``.)"""
    args = {a.name for a in wrapper.signature.input_arg}
    keys = []
    for ref in inner.input:
        arg = ref.split(":")[0]
        if arg in args and arg in sig.inputs:
            keys.append(arg)
    return keys


def _returns(structure) -> str:
    """What a saved function returns, from its output StructuredValue: one tensor, a tuple or
    list of them, or anything else (a dict: the signature's outputs by name)."""
    kind = structure.WhichOneof("kind")
    if kind in ("tensor_spec_value", "bounded_tensor_spec_value"):
        return "tensor"
    return "sequence" if kind in ("tuple_value", "list_value") else "dict"


def _arg_names(spec) -> list[str]:
    """A saved function's positional argument names (``self`` left out), from its FullArgSpec."""
    for field in spec.fullargspec.named_tuple_value.values:
        if field.key == "args":
            names = [v.string_value for v in field.value.list_value.values]
            return names[1:] if spec.is_method and names else names
    return []


class SavedMethod:
    """A root method of a TF2 SavedModel, run through the signature that serves it: arguments by
    position or by the method's own names, and its result as the function returned it (one
    tensor, a tuple, or a dict), as ``tf.saved_model.load(...).f(x)`` gives it."""

    def __init__(self, name: str, signature, args: list[str], keys: list[str], returns: str):
        self.name = name
        self.signature = signature
        self.keys = keys  # the signature's inputs in argument order
        self.args = args if len(args) == len(keys) else keys  # the method's own names for them
        self.returns = returns

    def __call__(self, *args, **kwargs):
        from specflow.errors import ExportError

        if len(args) > len(self.keys):
            raise ExportError(f"method '{self.name}' takes {len(self.keys)} argument(s) ({', '.join(self.args)}), "
                              f"got {len(args)}")  # fmt: skip
        feeds = dict(zip(self.keys, args))
        key_of = dict(zip(self.args, self.keys))
        for k, v in kwargs.items():
            key = key_of.get(k, k)  # the method's argument name, or the signature's key
            if key in feeds:
                raise ExportError(f"method '{self.name}': argument '{k}' given twice")
            feeds[key] = v
        out = self.signature(**feeds)
        if self.returns == "tensor" and len(out) == 1:
            return next(iter(out.values()))
        if self.returns == "sequence":  # the signature names the items output_0, output_1, ...
            return tuple(out[f"output_{i}"] for i in range(len(out)))
        return out

    def __repr__(self) -> str:
        return f"<saved method '{self.name}({', '.join(self.args)})' via signature '{self.signature.name}'>"
