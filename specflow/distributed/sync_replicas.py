"""Synchronous data parallelism: SyncReplicasOptimizer's semantics as graph pieces on the ps.

For every trainable variable ``v`` and worker ``k`` there is a gradient slot
``sync_replicas/<v>/grad_<k>`` and an int64 tag ``sync_replicas/<v>/step_<k>`` (the global step
the slot's gradient was computed at), both colocated with ``v`` (on its ps task).

- push (worker ``k``, target ``push_ops[k]``): its gradients go into its slots, then each
  variable's tag is set to the fed ``sync_replicas/local_step`` (the global step the worker
  started from). The gradient crosses to the ps once; each ps's writes wait only on that ps's
  own (a tag per variable, not per worker: no ordering between ps tasks, one stage fewer).
- apply (the train op, run by the chief once ``replicas_to_aggregate`` pushes of this step
  arrived): on the ps, the average over the slots whose tag equals the global step (stale ones,
  computed at an older step, count for nothing: TF drops them the same way), applied by the
  optimizer, which then increments the global step; workers start the next step from it.

A sparse gradient (an embedding lookup's ``IndexedSlices``) stays sparse, as TF's
SparseConditionalAccumulator keeps it: worker ``k`` pushes its rows and ids into
``sync_replicas/<v>/rows_<k>`` and ``.../ids_<k>`` (variables with an unknown leading dim: their
length changes per step), so only the looked-up rows cross to the ps. The apply concatenates the
fresh workers' rows and ids (a stale worker's are sliced to none), divides the rows by the number
of fresh workers and hands the optimizer an ``IndexedSlices``: it applies it as in async mode
(repeated ids add up). Each part of a partitioned table has its own slots on its own ps.

Slots replace TF's ConditionalAccumulator: a worker's push overwrites only its own slot, so a
straggler's late push can never leak into another step's average (its tag stays old).
The slots and tags are not checkpointed (state of one step, as TF's accumulators).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from specflow.graph.dtypes import int32, int64
from specflow.graph.shapes import Shape
from specflow.ops.grad_util import IndexedSlices
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
        with b.root_scope(), b.no_control_dependencies():
            local_step = b.add_op("Placeholder", [], {"dtype": int64, "shape": []}, name=LOCAL_STEP,
                                  exact_name=True).name  # fmt: skip
            unset = parse_initializer({"constant": -1})
            tags = {v.name: [self._variable(b, f"{SCOPE}/{v.name}/step_{k}", [], int64, unset, v)
                             for k in range(self.num_workers)] for _, v in pairs}  # fmt: skip
            grads = {v.name: [self._slots_of(b, g, v, k) for k in range(self.num_workers)] for g, v in pairs}
            for k in range(self.num_workers):
                with b.name_scope(f"{SCOPE}/push_{k}"):
                    done = list(update_ops)
                    for g, v in pairs:  # each variable's tag after its own slots: all on its ps
                        writes = [b.add_op("AssignVariableOp", [slot.handle, t], {"dtype": slot.dtype}).name
                                  for slot, t in zip(grads[v.name][k], _parts(g))]  # fmt: skip
                        done.append(b.add_op("AssignVariableOp", [tags[v.name][k].handle, local_step], {"dtype": int64},
                                             control_inputs=writes).name)  # fmt: skip
                    self.push_ops.append(b.add_op("NoOp", [], name="done", control_inputs=done).name)
            out = []
            with b.name_scope(f"{SCOPE}/average"):
                gs = b.add_op("ReadVariableOp", [global_step.handle], {"dtype": int64}).name
                for g, v in pairs:
                    first = len(b.graph_def.nodes)
                    tag_reads = [b.add_op("ReadVariableOp", [t.handle], {"dtype": int64}).name for t in tags[v.name]]
                    fresh = [b.add_op("Equal", [r, gs]).name for r in tag_reads]
                    masks = [b.add_op("Cast", [f], {"DstT": v.dtype}).name for f in fresh]
                    count = b.add_op("Maximum", [b.add_op("AddN", masks).name, b.const(1, v.dtype)]).name
                    if isinstance(g, IndexedSlices):
                        out.append((self._sparse_mean(b, g, v, grads[v.name], fresh, tag_reads, count), v))
                    else:
                        parts = [b.add_op("Mul", [_read(b, s, after), m]).name
                                 for (s,), m, after in zip(grads[v.name], masks, tag_reads)]  # fmt: skip
                        total = parts[0] if len(parts) == 1 else b.add_op("AddN", parts).name
                        out.append((b.add_op("RealDiv", [total, count], name=f"{v.name}/mean").name, v))
                    # The average sits with its variable (and slots): the gradients never leave
                    # its ps, wherever the chief runs (TF's accumulators live on the ps too).
                    for node in b.graph_def.nodes[first:]:
                        node.attrs.setdefault("_class", [f"loc:@{v.handle}"])
        return out

    def _slots_of(self, b, g, v: VariableInfo, k: int) -> tuple[VariableInfo, ...]:
        """Worker ``k``'s slots for ``v``'s gradient ``g``: (dense,) or, sparse, (rows, ids)."""
        if not isinstance(g, IndexedSlices):
            return (self._variable(b, f"{SCOPE}/{v.name}/grad_{k}", v.shape.as_list(), v.dtype, _ZEROS, v),)
        rows = Shape([None, *v.shape.dims[1:]])
        ids = b.spec(g.indices).dtype
        return (self._ragged(b, f"{SCOPE}/{v.name}/rows_{k}", rows, v.dtype, v),
                self._ragged(b, f"{SCOPE}/{v.name}/ids_{k}", Shape([None]), ids, v))  # fmt: skip

    def _sparse_mean(self, b, g: IndexedSlices, v: VariableInfo, slots, fresh: list[str], tag_reads: list[str],
                     count: str) -> IndexedSlices:  # fmt: skip
        """The fresh workers' rows and ids concatenated, the rows divided by ``count``."""
        rows, ids = [], []
        rank = v.shape.rank
        for (r, i), f, after in zip(slots, fresh, tag_reads):
            rv, iv = _read(b, r, after), _read(b, i, after)
            # A stale worker keeps none of its rows. Read after its tag, a fresh worker's rows and
            # ids are its push's (the tag is written last); the min is a guard all the same:
            # never a slice past the end.
            have = b.add_op("Minimum", [b.add_op("Size", [iv], {"out_type": int32}).name,
                                        b.add_op("Slice", [b.add_op("Shape", [rv], {"out_type": int32}).name,
                                                           b.const([0], int32), b.const([1], int32)]).name]).name
            keep = b.add_op("Mul", [have, b.add_op("Cast", [f], {"DstT": int32}).name]).name
            ids.append(b.add_op("Slice", [iv, b.const([0], int32), keep]).name)
            size = b.add_op("ConcatV2", [keep, b.const([-1] * (rank - 1), int32), b.const(0, int32)]).name
            rows.append(b.add_op("Slice", [rv, b.const([0] * rank, int32), size]).name)
        axis = b.const(0, int32)
        values = rows[0] if len(rows) == 1 else b.add_op("ConcatV2", [*rows, axis]).name
        indices = ids[0] if len(ids) == 1 else b.add_op("ConcatV2", [*ids, axis]).name
        mean = b.add_op("RealDiv", [values, count], name=f"{v.name}/mean").name
        return IndexedSlices(b, mean, indices, g._rows)

    def _ragged(self, b, name: str, shape: Shape, dtype, colocate: VariableInfo) -> VariableInfo:
        """A slot whose leading dim changes per push (declared unknown; starts empty)."""
        handle = b.add_op("VarHandleOp", [], {"dtype": dtype, "shape": shape, "shared_name": name},
                          name=name, exact_name=True).name  # fmt: skip
        b.graph_def.node(handle).attrs["_class"] = [f"loc:@{colocate.handle}"]
        with b.name_scope(name), b.name_scope("Initializer"):
            empty = b.const(np.zeros([0, *shape.dims[1:]], dtype.numpy), dtype, name="empty")
        assign = b.add_op("AssignVariableOp", [handle, empty], {"dtype": dtype}, name=f"{name}/Assign",
                          exact_name=True).name  # fmt: skip
        read = b.add_op("ReadVariableOp", [handle], {"dtype": dtype}, name=f"{name}/Read/ReadVariableOp",
                        exact_name=True).name  # fmt: skip
        info = VariableInfo(name, handle, read, assign, dtype, shape, False, _ZEROS)
        b.add_to_collection("init_ops", assign)  # initialized by the init op, never checkpointed
        self.slots.append(info)
        return info

    def _variable(self, b, name, shape, dtype, init, colocate: VariableInfo | None) -> VariableInfo:
        info = create_variable(b, name, shape, dtype, init, trainable=False)
        # Out of the checkpointed "variables" collection; still initialized by the init op.
        b.collections["variables"] = [v for v in b.collections["variables"] if v.name != info.name]
        if colocate is not None:
            b.graph_def.node(info.handle).attrs["_class"] = [f"loc:@{colocate.handle}"]
        self.slots.append(info)
        return info


_ZEROS = parse_initializer("zeros")


def _parts(g) -> tuple[str, ...]:
    """What a worker pushes of gradient ``g``, in its slots' order."""
    return (g.values, g.indices) if isinstance(g, IndexedSlices) else (g,)


def _read(b, slot: VariableInfo, after: str) -> str:
    """A worker's slot, read after its tag (``after``): a push writes its slots, then the tag, so
    a tag that says "this step" means the slots read next hold that push whole, even while a
    straggler's push races the apply (with ``replicas_to_aggregate`` below the worker count)."""
    return b.add_op("ReadVariableOp", [slot.handle], {"dtype": slot.dtype}, control_inputs=[after]).name
