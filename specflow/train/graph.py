"""The training graph: the spec's model, fed by an input queue, extended with its gradients and
an optimizer (whitepaper 4.1 and 4.6).

``build_training_graph`` copies the lowered model into a new builder in which each fed model
input (a Placeholder such as ``images``) becomes an Identity of the input queue's dequeue, under
the same name, so every model node, metric and summary keeps its name, and evaluation can still
feed test arrays to ``images`` directly (feeding cuts the graph there, so the queue is not
touched). Then it adds the global step, the learning rate, the gradients of the loss with
respect to every trainable variable, optional clipping, the optimizer's update ops (after the
spec's ``update_ops``, e.g. batch-norm moving averages) and one ``init`` target for all
variables, slots included.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from specflow.errors import GraphError
from specflow.graph.builder import GraphBuilder
from specflow.graph.graph_def import GraphDef
from specflow.ops.grad_util import IndexedSlices
from specflow.schema.layers.variables import VariableInfo
from specflow.train import clipping, optimizers, schedules
from specflow.train.gradients import gradients
from specflow.train.input_pipeline import InputPipeline

TRAIN_INIT = "train_init"


@dataclass
class TrainingGraph:
    graph_def: GraphDef
    builder: GraphBuilder
    loss: str
    train_op: str
    init_op: str
    global_step: VariableInfo
    learning_rate: str
    variables: list[VariableInfo]  # every variable: model, optimizer slots, global step
    trainable: list[VariableInfo]
    pipeline: InputPipeline | None
    training_flag: str | None
    global_norm: str | None = None
    gradients: dict[str, str] = field(default_factory=dict)  # variable name -> gradient (a sparse one's rows)


def build_training_graph(spec, cfg, train_arrays: dict[str, np.ndarray] | None, replicas=None,
                         sparse_gradients: bool = True, step_limit: int | None = None) -> TrainingGraph:  # fmt: skip
    """The training graph of the loaded ``spec`` under its TrainConfig ``cfg``. With
    ``train_arrays`` (field -> array) the model inputs named in ``cfg.data.feeds`` are fed by an
    input queue; without, they stay Placeholders (fed by the caller). ``sparse_gradients=False``
    makes every gradient dense (to measure what sparse updates save). ``step_limit``: an
    update once the global step is there is refused whole (async replicas' last steps)."""
    b = GraphBuilder()
    lowered = spec.lowered
    pipeline = None
    replaced: dict[str, str] = {}
    if train_arrays is not None:
        data = cfg.data
        arrays = {inp: train_arrays[field_name] for inp, field_name in data.feeds.items()}
        pipeline = InputPipeline(
            b,
            arrays,
            batch_size=data.batch_size,
            shuffle=data.shuffle,
            seed=data.seed,
            epochs=data.epochs,
            capacity=data.capacity,
        )
        replaced = dict(pipeline.outputs)
    graph = lowered.graph_def.node_map()  # lets a loop's Merge be inferred before its back edge
    for node in lowered.graph_def.nodes:
        if node.name in replaced:
            b.add_op("Identity", [replaced[node.name]], name=node.name, exact_name=True, location=node.location)
        else:
            b._append(node.copy(), graph)
    b.collections = {k: list(v) for k, v in lowered.collections.items()}

    loss = spec.resolve(cfg.loss)
    trainable = [v for v in lowered.variables if v.trainable]
    if not trainable:
        raise GraphError("the model has no trainable variables: there is nothing to train", node=cfg.loss,
                         path="train.loss")
    global_step = optimizers.create_global_step(b)
    opt_name, opt_params = optimizer_choice(cfg)
    lr = schedules.learning_rate(b, opt_params.get("learning_rate"), global_step.read)
    # Sparse where a variable is only gathered from (embeddings): the update sends only the rows.
    grads = gradients(b, [loss], [v.handle for v in trainable], sparse=sparse_gradients)
    missing = [v.name for v, g in zip(trainable, grads) if g is None]
    if len(missing) == len(trainable):
        raise GraphError(f"the loss '{cfg.loss}' does not depend on any trainable variable (no gradient reaches "
                         "one)", node=cfg.loss, path="train.loss")
    global_norm = None
    if cfg.clip_global_norm is not None:
        present = [g for g in grads if g is not None]
        clipped, global_norm = clipping.clip_by_global_norm(b, present, cfg.clip_global_norm)
        it = iter(clipped)
        grads = [next(it) if g is not None else None for g in grads]
    if getattr(cfg, "clip_norm", None) is not None:
        grads = clipping.clip_each_by_norm(b, grads, cfg.clip_norm)
    if getattr(cfg, "clip_value", None) is not None:
        grads = clipping.clip_each_by_value(b, grads, cfg.clip_value)
    optimizer = optimizers.make_optimizer(opt_name, opt_params)
    update_ops = list(b.collections.get("update_ops", []))
    pairs = list(zip(grads, trainable))
    if replicas is not None:
        pairs, update_ops = replicas.aggregate(b, pairs, global_step, update_ops), []
    with b.control_dependencies(update_ops):
        train_op = optimizer.apply_gradients(b, pairs, lr, global_step, step_limit)
    variables = list(b.collections.get("variables", []))
    if global_step not in variables:
        variables.append(global_step)
    init = b.add_op("NoOp", [], name=TRAIN_INIT, exact_name=True,
                    control_inputs=list(dict.fromkeys(b.collections.get("init_ops", []))))
    return TrainingGraph(
        graph_def=b.graph_def,
        builder=b,
        loss=loss,
        train_op=train_op,
        init_op=init.name,
        global_step=global_step,
        learning_rate=lr,
        variables=variables,
        trainable=trainable,
        pipeline=pipeline,
        training_flag=lowered.training_flag,
        global_norm=global_norm,
        gradients={v.name: g.values if isinstance(g, IndexedSlices) else g for v, g in zip(trainable, grads)
                   if g is not None},  # fmt: skip
    )


def optimizer_choice(cfg) -> tuple[str, dict]:
    """(optimizer name, its parameters as plain values) from the validated TrainConfig."""
    return cfg.optimizer.name, dict(cfg.optimizer.params)
