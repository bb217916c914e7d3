"""Synchronous data parallelism: SyncReplicasOptimizer's semantics as graph pieces on the ps.

For every trainable variable ``v`` and worker ``k`` there is a gradient slot
``sync_replicas/<v>/grad_<k>`` colocated with ``v`` (on its ps task), and per worker one int64
tag ``sync_replicas/step_<k>``: the global step the slot's gradient was computed at.

- push (worker ``k``, target ``push_ops[k]``): its gradients go into its slots, then its tag is
  set to the fed ``sync_replicas/local_step`` (the global step the worker started from). The
  gradient crosses to the ps once; nothing else is sent.
- apply (the train op, run by the chief once ``replicas_to_aggregate`` pushes of this step
  arrived): on the ps, the average over the slots whose tag equals the global step (stale ones,
  computed at an older step, count for nothing: TF drops them the same way), applied by the
  optimizer, which then increments the global step; workers start the next step from it.

Slots replace TF's ConditionalAccumulator: a worker's push overwrites only its own slot, so a
straggler's late push can never leak into another step's average (its tag stays old).
The slots and tags are not checkpointed (state of one step, as TF's accumulators).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specflow.graph.dtypes import int64
from specflow.schema.initializers import parse_initializer
from specflow.schema.layers.variables import VariableInfo, create_variable

SCOPE = "sync_replicas"
LOCAL_STEP = f"{SCOPE}/local_step"


@dataclass
class SyncReplicas:
    """Adds the push and apply pieces to a training graph (``build_training_graph(replicas=)``)."""

    num_workers: int
    push_ops: list[str] = field(default_factory=list)  # per worker: the target of its push
    local_step: str = LOCAL_STEP
    slots: list[VariableInfo] = field(default_factory=list)  # every slot and tag (not checkpointed)

    def aggregate(self, b, grads_and_vars, global_step: VariableInfo, update_ops: list[str]):
        """The (average, variable) pairs the optimizer applies; records the push ops. A worker's
        ``update_ops`` (batch-norm moving averages) run in its push, as each TF worker runs them."""
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        zeros = parse_initializer("zeros")
        with b.root_scope(), b.no_control_dependencies():
            local_step = b.add_op("Placeholder", [], {"dtype": int64, "shape": []}, name=LOCAL_STEP,
                                  exact_name=True).name  # fmt: skip
            tags = [self._variable(b, f"{SCOPE}/step_{k}", [], int64, parse_initializer({"constant": -1}), None)
                    for k in range(self.num_workers)]  # fmt: skip
            grads = {v.name: [self._variable(b, f"{SCOPE}/{v.name}/grad_{k}", v.shape.as_list(), v.dtype, zeros, v)
                              for k in range(self.num_workers)] for _, v in pairs}  # fmt: skip
            for k in range(self.num_workers):
                with b.name_scope(f"{SCOPE}/push_{k}"):
                    writes = [b.add_op("AssignVariableOp", [grads[v.name][k].handle, g], {"dtype": v.dtype}).name
                              for g, v in pairs]  # fmt: skip
                    tag = b.add_op("AssignVariableOp", [tags[k].handle, local_step], {"dtype": int64},
                                   control_inputs=writes + list(update_ops)).name  # fmt: skip
                    self.push_ops.append(b.add_op("NoOp", [], name="done", control_inputs=[tag]).name)
            out = []
            with b.name_scope(f"{SCOPE}/average"):
                gs = b.add_op("ReadVariableOp", [global_step.handle], {"dtype": int64}).name
                fresh = [b.add_op("Equal", [b.add_op("ReadVariableOp", [t.handle], {"dtype": int64}).name, gs]).name
                         for t in tags]  # fmt: skip
                for _, v in pairs:
                    masks = [b.add_op("Cast", [f], {"DstT": v.dtype}).name for f in fresh]
                    count = b.add_op("Maximum", [b.add_op("AddN", masks).name, b.const(1, v.dtype)]).name
                    parts = [b.add_op("Mul", [b.add_op("ReadVariableOp", [s.handle], {"dtype": v.dtype}).name, m]).name
                             for s, m in zip(grads[v.name], masks)]  # fmt: skip
                    total = parts[0] if len(parts) == 1 else b.add_op("AddN", parts).name
                    out.append((b.add_op("RealDiv", [total, count], name=f"{v.name}/mean").name, v))
        return out

    def _variable(self, b, name, shape, dtype, init, colocate: VariableInfo | None) -> VariableInfo:
        info = create_variable(b, name, shape, dtype, init, trainable=False)
        # Out of the checkpointed "variables" collection; still initialized by the init op.
        b.collections["variables"] = [v for v in b.collections["variables"] if v.name != info.name]
        if colocate is not None:
            b.graph_def.node(info.handle).attrs["_class"] = [f"loc:@{colocate.handle}"]
        self.slots.append(info)
        return info
