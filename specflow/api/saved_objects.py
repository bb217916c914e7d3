"""A TF2 SavedModel's object graph as attributes of what sf.load returns, as
``tf.saved_model.load`` gives them: ``m.l1.kernel`` is the sf.Variable saved at that path, ``m.l1``
an :class:`SavedObject` (an sf.Module: ``m.l1.trainable_variables``), and a root saved with a
``__call__`` makes ``m(x)`` call its serving signature."""

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
        return f"<saved object '{self.name}': {len(self.variables)} variable(s)>"


def object_attributes(meta_graph, graph, variables: dict) -> tuple[dict, bool]:
    """The root's attributes (name -> sf.Variable or SavedObject, only those holding variables)
    and whether the root has a ``__call__``. ``variables``: graph variable name -> sf.Variable.

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
        if var is None or not all(p.isidentifier() for p in parts):
            continue
        node = tree
        for p in parts[:-1]:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                break
        else:
            node.setdefault(parts[-1], var)

    def build(name: str, value):
        if isinstance(value, dict):
            return SavedObject(name, {k: build(k, v) for k, v in value.items()})
        return value

    callable_root = any(c.local_name == "__call__" for c in meta_graph.object_graph_def.nodes[0].children)
    return {k: build(k, v) for k, v in tree.items()}, callable_root


def _restored_paths(graph) -> dict[str, str]:
    """Object path -> the variable (VarHandleOp shared_name) the restore function assigns it to."""
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
            out[keys[src.index].split("/.ATTRIBUTES/")[0]] = handle.attrs.get("shared_name") or handle.name
    return out
