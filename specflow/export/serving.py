"""The serving form of a trained spec: what every export format (SavedModel, ONNX) starts from.

``serving_model(spec, logdir)`` takes the spec's graph and a checkpoint of its training run and
returns a :class:`ServingModel`:

- the graph is pruned to what the chosen signatures' outputs need (labels, losses, metrics,
  initializers and optimizer state fall away);
- the training flag becomes a constant false, and a ``Select``/``SelectV2`` on it becomes an
  ``Identity`` of its inference branch, so dropout's random draw and batch norm's batch
  statistics are pruned too; a ``cond:`` on it keeps only its ``else`` branch;
- variables stay ``VarHandleOp`` + ``ReadVariableOp`` (TensorFlow's resource variables); their
  values are read from the checkpoint, each checked against the variable's dtype and shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from specflow.errors import ExportError
from specflow.graph.graph_def import GraphDef, NodeDef, parse_input
from specflow.graph.topo import needed
from specflow.io.checkpoint import CheckpointManager
from specflow.ops.registry import TensorSpec
from specflow.train.partitioned_restore import fill_missing

SELECT_OPS = ("Select", "SelectV2")


@dataclass
class SignatureIO:
    """One signature: alias -> (tensor name ``"node:k"``, dtype and static shape)."""

    inputs: dict[str, tuple[str, TensorSpec]]
    outputs: dict[str, tuple[str, TensorSpec]]


@dataclass
class ServingModel:
    graph_def: GraphDef  # pruned to the signatures' closure, training flag folded to false
    signatures: dict[str, SignatureIO]
    variables: dict[str, np.ndarray]  # variable name (VarHandleOp shared_name) -> checkpoint value
    checkpoint: str  # the checkpoint prefix the values came from
    # variable name -> trainable (batch-norm statistics are not): written as TF1's variable
    # collections, so a re-import (ours or TensorFlow's) trains what the spec trained
    trainable: dict[str, bool] = field(default_factory=dict)
    # the TF2 object graph (export/object_graph.py); None: the signatures' (objects_from_signatures)
    objects: Any = None


def serving_model(spec, logdir, step: int | None = None, signatures: list[str] | None = None) -> ServingModel:
    """The serving form of ``spec`` with variable values from the checkpoint of ``step`` (default:
    the latest) in ``logdir``, keeping the signatures named (default: all of the spec's).
    ``logdir`` None: a spec without variables, served as it is."""
    sigs = select_signatures(spec, signatures)
    if logdir is None:  # a model without variables (an imported function) needs no training run
        if spec.variables:
            raise ExportError(f"{spec.path} has {len(spec.variables)} variable(s): give --logdir, the training run "
                              "whose checkpoint holds their values")
        path = None
    else:
        path = checkpoint_path(spec, logdir, step)
    graph = fold_training_flag(spec.graph_def, spec.lowered.training_flag, spec.tensor_spec)
    outputs = [t for sig in sigs.values() for t, _ in sig.outputs.values()]
    inputs = [t for sig in sigs.values() for t, _ in sig.inputs.values()]
    graph = closure(decide_training_conds(graph, spec.lowered.training_flag, outputs + inputs), outputs + inputs)
    if path is None:
        return ServingModel(graph, sigs, {}, None, {})
    tensors = CheckpointManager(Path(logdir)).restore(path)
    values = variable_values(spec, graph, tensors, path)
    trainable = {v.name: v.trainable for v in spec.variables if v.name in values}
    return ServingModel(graph, sigs, values, path, trainable)


def select_signatures(spec, names: list[str] | None) -> dict[str, SignatureIO]:
    if not spec.signatures:
        raise ExportError(f"{spec.path} declares no signatures: nothing to export (add a signatures: section)")
    for name in names or []:
        if name not in spec.signatures:
            known = ", ".join(sorted(spec.signatures))
            raise ExportError(f"{spec.path} has no signature '{name}' (signatures: {known})")
    chosen = list(dict.fromkeys(names)) if names else list(spec.signatures)
    out = {}
    for name in chosen:
        sig = spec.signatures[name]
        if not sig["outputs"]:
            raise ExportError(f"signature '{name}' has no outputs")
        out[name] = SignatureIO(dict(sig["inputs"]), dict(sig["outputs"]))
    return out


def checkpoint_path(spec, logdir, step: int | None) -> str:
    """The prefix of the checkpoint of ``step`` in ``logdir`` (default: the latest)."""
    if not Path(logdir).is_dir():
        raise ExportError(f"{logdir}: no such directory (train the model with --logdir {logdir} first)")
    manager = CheckpointManager(Path(logdir))
    if step is None:
        path = manager.latest()
        if path is None:
            raise ExportError(f"{logdir} has no checkpoint (train the model with --logdir {logdir} first)")
        return path
    path = manager.path_for_step(step)
    if path is None:
        kept = ", ".join(Path(p).name for p in manager.all()) or "none"
        raise ExportError(f"{logdir} has no checkpoint for step {step} (kept: {kept})")
    return path


def fold_training_flag(graph: GraphDef, flag: str | None, spec_of) -> GraphDef:
    """A copy of ``graph`` with the bool ``flag`` node a constant false and every Select on it
    (a scalar condition) an Identity of its false branch, when that branch has the Select's shape."""
    if flag is None:
        return graph
    out = graph.copy()
    for i, node in enumerate(out.nodes):
        if node.name == flag:
            out.nodes[i] = NodeDef(flag, "Const", [], node.device,
                                   {"dtype": spec_of(flag).dtype, "value": np.array(False)})
        elif node.op in SELECT_OPS and parse_input(node.inputs[0]).node == flag:
            other = node.inputs[2]
            if spec_of(other).shape == spec_of(node.name).shape:
                ctrl = [i for i in node.inputs if i.startswith("^")]
                out.nodes[i] = NodeDef(node.name, "Identity", [other, *ctrl], node.device,
                                       {"T": node.attrs["T"]}, node.location)
    return out


def decide_training_conds(graph: GraphDef, flag: str | None, keep: list[str]) -> GraphDef:
    """``cond:`` nodes on the (folded) training flag keep only their inference branch: the
    runtime optimizer's dead-branch pass (a Switch on a constant -> Identity, its Merge ->
    Identity of the live input), so ONNX, which has no Switch/Merge, exports them too."""
    if flag is None or not any(n.op == "Switch" and parse_input(n.inputs[1]).node == flag for n in graph.nodes):
        return graph
    from specflow.runtime.optimize import OptimizeResult, _Graph
    from specflow.runtime.optimize_flags import dead_branches

    g = _Graph(graph)
    dead_branches(g, {parse_input(t).node for t in keep}, OptimizeResult(graph))
    return g.to_graph_def(graph)


def closure(graph: GraphDef, tensors: list[str]) -> GraphDef:
    """The nodes ``tensors`` depend on (data and control inputs), in the graph's order."""
    keep = needed(graph, tensors)
    return GraphDef([n.copy() for n in graph.nodes if n.name in keep], dict(graph.versions), dict(graph.library))


def variable_values(spec, graph: GraphDef, tensors: dict[str, np.ndarray], path: str) -> dict[str, np.ndarray]:
    """Checkpoint value of every variable ``graph`` holds, checked against the spec's declaration."""
    declared = {v.name: v for v in spec.variables}
    tensors = fill_missing(tensors, declared)  # a partitioned variable's parts cut from the whole
    out = {}
    for node in graph.nodes:
        if node.op != "VarHandleOp":
            continue
        name = node.attrs.get("shared_name") or node.name
        if name not in tensors:
            raise ExportError(f"checkpoint {path} has no value for variable '{name}' (was the spec changed?)",
                              node=node.name)
        value = np.asarray(tensors[name])
        v = declared.get(name)
        dtype, shape = (v.dtype, v.shape) if v else (node.attrs["dtype"], node.attrs["shape"])
        if value.dtype != dtype.numpy or list(value.shape) != list(shape.as_list()):
            raise ExportError(
                f"checkpoint {path} holds '{name}' as {value.dtype}{list(value.shape)}, but the spec declares "
                f"{dtype.name}{shape.as_list()} (was the spec changed?)", node=node.name)
        out[name] = value
    return out
