"""Restoring a TF2 SavedModel's variables through its object graph, as ``tf.saved_model.load`` does.

In a SavedModel written by ``tf.saved_model.save`` (Keras models included) the ``saver_def``'s
restore function assigns the checkpoint to copies of the variables (``Variable``,
``Variable_1``, ...), while the signature functions read the variables they captured
(``sequential/dense/kernel``): TensorFlow's own session-based loader (``saved_model_cli run``)
fails on such a model with "Could not find variable". TF2's loader goes through the object
graph instead, and so does :func:`restore_object_graph`:

- the MetaGraphDef's ``object_graph_def`` lists the saved objects; a ``variable`` node holds the
  variable's name, which is the ``shared_name`` of the ``VarHandleOp`` the functions capture;
- the checkpoint's ``_CHECKPOINTABLE_OBJECT_GRAPH`` tensor (a ``TrackableObjectGraph``) lists
  the checkpointed objects with each variable's ``VARIABLE_VALUE`` checkpoint key. It lacks what
  the SavedModel alone holds (``captured_tensor``s, constants, functions), so objects are matched
  by walking both graphs from the root through children of the same name, not by position.

Each value is assigned to its variable by ``AssignVariableOp`` nodes added to the session.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from google.protobuf.message import DecodeError
from tensorboard.compat.proto import trackable_object_graph_pb2

from specflow.errors import CheckpointError, Location
from specflow.graph.graph_def import GraphDef, NodeDef
from specflow.graph.shapes import Shape
from specflow.io.tensor_bundle import index_filename, read_bundle
from specflow.io.tf_graph import dtype_from_enum, shape_from_proto

OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
VALUE_ATTRIBUTE = "VARIABLE_VALUE"
SCOPE = "_object_graph_restore"  # name scope of the assign nodes added to the session


def object_graph_variables(meta_graph, tensors: Mapping[str, np.ndarray], where: str = "") -> dict[str, np.ndarray]:
    """Variable name (the VarHandleOp's ``shared_name``) -> its checkpoint value, for every
    variable of ``meta_graph``'s object graph; ``tensors`` is the variables bundle. Empty when
    the SavedModel has no object graph (a TF1-style export)."""
    saved = meta_graph.object_graph_def.nodes
    if not any(n.WhichOneof("kind") == "variable" for n in saved):
        return {}
    where = where or "the variables bundle"
    if OBJECT_GRAPH_KEY not in tensors:
        raise CheckpointError(f"{where} lacks {OBJECT_GRAPH_KEY}, which maps the SavedModel's objects "
                              "to checkpoint keys")
    trackable = trackable_object_graph_pb2.TrackableObjectGraph()
    try:
        trackable.ParseFromString(bytes(np.asarray(tensors[OBJECT_GRAPH_KEY], dtype=object).item()))
    except (DecodeError, ValueError, TypeError) as e:
        raise CheckpointError(f"{where}: corrupted {OBJECT_GRAPH_KEY} ({e})") from None
    matched = match_objects(saved, trackable.nodes)
    values = {}
    for i, node in enumerate(saved):
        if node.WhichOneof("kind") != "variable":
            continue
        var = node.variable
        if i not in matched:
            raise CheckpointError(f"{where}: variable '{var.name}' is not in the checkpoint's object graph")
        entry = trackable.nodes[matched[i]]
        keys = [a.checkpoint_key for a in entry.attributes if a.name == VALUE_ATTRIBUTE]
        if not keys:
            raise CheckpointError(f"{where}: variable '{var.name}' has no saved value")
        if keys[0] not in tensors:
            raise CheckpointError(f"{where}: variable '{var.name}' names checkpoint key '{keys[0]}', "
                                  "which the bundle lacks")
        value = np.asarray(tensors[keys[0]])
        dtype, shape = dtype_from_enum(var.dtype), shape_from_proto(var.shape)
        if value.dtype != dtype.numpy or not shape.is_compatible_with(Shape(value.shape)):
            raise CheckpointError(f"{where}: variable '{var.name}' is {dtype.name}{shape} but '{keys[0]}' "
                                  f"holds {value.dtype}{list(value.shape)}")
        values[var.name] = value
    return values


def match_objects(saved, checkpointed) -> dict[int, int]:
    """SavedModel object id -> checkpoint object id, found by walking both graphs from the root
    through children of the same name, as TF's checkpoint restore does. The SavedModel may hold
    objects the checkpoint lacks (``captured_tensor``s, constants, functions), so ids differ."""
    matched = {0: 0}
    todo = [0]
    while todo:
        s_id = todo.pop()
        c_id = matched[s_id]
        if c_id >= len(checkpointed) or s_id >= len(saved):
            continue
        by_name = {c.local_name: c.node_id for c in checkpointed[c_id].children}
        for child in saved[s_id].children:
            if child.node_id not in matched and child.local_name in by_name:
                matched[child.node_id] = by_name[child.local_name]
                todo.append(child.node_id)
    return matched


def restore_object_graph(session, meta_graph, prefix: str) -> list[str]:
    """Assign every object-graph variable of ``meta_graph`` its value in the bundle at ``prefix``,
    in ``session`` (a Session on the meta graph's converted GraphDef). Returns the variables set;
    none for a SavedModel without an object graph."""
    if not any(n.WhichOneof("kind") == "variable" for n in meta_graph.object_graph_def.nodes):
        return []
    where = index_filename(prefix)
    values = object_graph_variables(meta_graph, read_bundle(prefix), where)
    handles = {}  # shared_name -> a VarHandleOp node holding that variable
    for node in session.graph_def.nodes:
        if node.op == "VarHandleOp":
            handles.setdefault(node.attrs.get("shared_name") or node.name, node)
    nodes, feeds, targets = [], {}, []
    for i, (name, value) in enumerate(sorted(values.items())):
        if name not in handles:
            raise CheckpointError(f"the SavedModel's variable '{name}' has no VarHandleOp in its graph",
                                  location=Location(where))
        handle = handles[name]
        dtype = handle.attrs["dtype"]
        nodes += [NodeDef(f"{SCOPE}/{i}/value", "Placeholder", [], handle.device, {"dtype": dtype}),
                  NodeDef(f"{SCOPE}/{i}/assign", "AssignVariableOp", [handle.name, f"{SCOPE}/{i}/value"],
                          handle.device, {"dtype": dtype})]
        feeds[f"{SCOPE}/{i}/value:0"] = value
        targets.append(f"{SCOPE}/{i}/assign")
    session.extend(GraphDef(nodes))
    session.run([], feeds, targets=targets)
    return sorted(values)
