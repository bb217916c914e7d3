"""A TF2 SavedModel's custom gradients (``tf.custom_gradient``, saved by default since TF 2.6):
the function library's ``registered_gradients`` pair an op type (``CustomGradient-3``, the
``_gradient_op_type`` of an IdentityN in the model's functions) with a saved gradient function
``grad(unused_op, *result_grads)``. As TF's loader registers each for the loaded model, this
registers a ``train/gradients.OVERRIDES`` entry that inlines the gradient function's graph
(api/graph_call.py) with the dys, its outputs going to the IdentityN's inputs as its saved
output structure says (None: no gradient there). The op type is made unique per loaded model:
two SavedModels may both say ``CustomGradient-3`` for different functions."""

from __future__ import annotations

import itertools
import weakref

from tensorboard.compat.proto import graph_pb2

from specflow.graph.graph_def import GraphDef
from specflow.io.tf_graph import GRADIENT_OP_TYPE

_LOADS = itertools.count(1)


def register_saved_gradients(meta_graph, graph: GraphDef, owner) -> None:
    """Register ``meta_graph``'s custom gradients for the nodes of ``graph`` (renaming their op
    types in place), for as long as ``owner`` (the loaded model) lives."""
    from specflow.train.gradients import OVERRIDES

    registered = {r.registered_op_type: r.gradient_func for r in meta_graph.graph_def.library.registered_gradients}
    users = [n for n in graph.nodes if n.attrs.get(GRADIENT_OP_TYPE) is not None]
    if not users:
        return
    load = next(_LOADS)
    keys = {}
    for n in users:
        op_type = n.attrs[GRADIENT_OP_TYPE]
        fn = registered.get(op_type)
        grad = _gradient(meta_graph, fn) if fn is not None else None
        if grad is None:  # TF's own gradient of the op, as before (no saved function to use)
            del n.attrs[GRADIENT_OP_TYPE]
            continue
        key = keys.get(op_type)
        if key is None:
            key = keys[op_type] = f"saved:{load}:{op_type}"
            OVERRIDES[key] = grad
            weakref.finalize(owner, OVERRIDES.pop, key, None)
        n.attrs[GRADIENT_OP_TYPE] = key


def _gradient(meta_graph, name: str):
    """The override for saved gradient function ``name``, or None when it cannot be inlined
    (it captures variables, or the object graph does not describe its outputs)."""
    from specflow.api.graph_call import GraphCall
    from specflow.export.object_graph import ArgSpec, decode
    from specflow.io.tf_graph import from_tf_graph_def

    saved = meta_graph.object_graph_def.concrete_functions.get(name)
    fdef = next((f for f in meta_graph.graph_def.library.function if f.signature.name == name), None)
    if saved is None or fdef is None or saved.bound_inputs:
        return None
    structure = decode(saved.output_signature)
    slots = structure if isinstance(structure, (list, tuple)) else [structure]
    proto = graph_pb2.GraphDef()
    proto.versions.CopyFrom(meta_graph.graph_def.versions)
    proto.library.CopyFrom(meta_graph.graph_def.library)
    inputs = {}
    for i, arg in enumerate(fdef.signature.input_arg):
        ph = proto.node.add(name=f"dy_{i}", op="Placeholder")
        ph.attr["dtype"].type = arg.type
        inputs[f"dy_{i}"] = ph.name
    call = proto.node.add(name="grad", op="PartitionedCall", input=list(inputs.values()))
    call.attr["f"].func.name = name
    call.attr["Tin"].list.type.extend(a.type for a in fdef.signature.input_arg)
    call.attr["Tout"].list.type.extend(a.type for a in fdef.signature.output_arg)
    nodes = [n for n in from_tf_graph_def(proto).nodes]
    outputs = {f"dx_{k}": f"grad:{k}" for k in range(len(fdef.signature.output_arg))}
    if sum(isinstance(s, ArgSpec) for s in slots) != len(outputs):
        return None
    graph_call = GraphCall(f"{name}_saved", nodes, inputs, outputs, {}, {})

    def override(b, node, dys):
        from specflow.ops import grad_util as gu

        feeds = {}
        for i, dy in enumerate(dys[:len(inputs)]):
            feeds[f"dy_{i}"] = dy if dy is not None else gu.emit(b, "ZerosLike", f"{node.name}:{i}")
        outs = graph_call.inline(b, feeds)
        got = iter(outs[f"dx_{k}"] for k in range(len(outputs)))
        dxs = [next(got) if isinstance(s, ArgSpec) else None for s in slots]
        n_in = len(node.data_inputs)
        return (dxs + [None] * n_in)[:n_in]

    return override
