"""Optimizers as graph ops applied to resource variables, and the ``global_step`` variable.

``make_optimizer("adam", {"learning_rate": 0.001})`` gives an :class:`Optimizer`; its
``apply_gradients(builder, grads_and_vars, learning_rate_tensor, global_step)`` adds one
``ResourceApply*`` op per variable (see :mod:`specflow.ops.training_ops`) and returns the train
op: a NoOp that runs after every update and after ``global_step`` is incremented by one.

Slots are ordinary non-trainable variables named as TensorFlow 1 names them
(``hidden/kernel/Adam``, ``hidden/kernel/Adam_1``), so they join the "variables" and
"init_ops" collections and are checkpointed with the model; Adam's ``beta1_power`` and
``beta2_power`` are variables too. Every optimizer takes ``weight_decay``, applied decoupled as
in Keras 3 / AdamW: ``var -= lr * weight_decay * var`` before the optimizer's own update.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

import numpy as np

from specflow.errors import GraphError, SpecError, did_you_mean
from specflow.graph.dtypes import DType, int64
from specflow.graph.graph_def import parse_input
from specflow.ops.grad_util import IndexedSlices
from specflow.schema.initializers import Initializer, parse_initializer
from specflow.schema.layers.constraints import emit_constraint
from specflow.schema.layers.variables import VariableInfo, create_variable
from specflow.train.schedules import is_number, parse_schedule

_ZEROS = parse_initializer("zeros")


@contextmanager
def _at_root(builder, clear_control: bool = False) -> Iterator[None]:
    """Build at the graph's root scope (optionally without the caller's control dependencies):
    slot and global variables have fixed names and initialize unconditionally, as
    TensorFlow's slot creator builds them under ``init_scope``."""
    with builder.root_scope():
        if not clear_control:
            yield
            return
        with builder.no_control_dependencies():
            yield


def _free_name(builder, base: str) -> str:
    """``base``, or ``base_1``, ``base_2``... whichever is not a node yet (at the root scope)."""
    name, i = base, 0
    while builder.has_node(name):
        i += 1
        name = f"{base}_{i}"
    return name


def create_global_step(builder) -> VariableInfo:
    """The int64 scalar ``global_step`` variable (zeros, not trainable); created once per graph."""
    existing = builder.collections.get("global_step")
    if existing:
        return existing[0]
    with _at_root(builder, clear_control=True):
        info = create_variable(builder, "global_step", [], int64, _ZEROS, trainable=False)
    builder.add_to_collection("global_step", info)
    return info


# --- parameter checks -----------------------------------------------------------------------------


def _check_param(key: str, value: Any, path: str) -> None:
    """One rule per parameter name, shared by every optimizer that takes it."""
    if key == "learning_rate":
        if isinstance(value, dict):
            parse_schedule(value, path)
            return
        ok, want = is_number(value) and value >= 0, "a number >= 0 or a schedule mapping"
    elif key in ("nesterov", "centered", "amsgrad"):
        ok, want = isinstance(value, bool), "true or false"
    elif key in ("beta_1", "beta_2"):
        ok, want = is_number(value) and 0 <= value < 1, "a number in [0, 1)"
    elif key == "rho":
        ok, want = is_number(value) and 0 <= value <= 1, "a number in [0, 1]"
    else:  # momentum, epsilon, weight_decay, initial_accumulator_value
        ok, want = is_number(value) and value >= 0, "a number >= 0"
    if not ok:
        raise SpecError(f"must be {want}, got {value!r}", path=path)


class _Scalars:
    """Hyper-parameter constants and casts in a variable's dtype, made once per dtype."""

    def __init__(self, builder):
        self.b = builder
        self._cache: dict[tuple, str] = {}

    def const(self, value: float, dtype: DType, name: str) -> str:
        key = ("const", name, float(value), dtype)
        if key not in self._cache:
            self._cache[key] = self.b.const(float(value), dtype, name=name)
        return self._cache[key]

    def cast(self, tensor: str, dtype: DType) -> str:
        if self.b.spec(tensor).dtype == dtype:
            return tensor
        key = ("cast", tensor, dtype)
        if key not in self._cache:
            self._cache[key] = self.b.add_op(
                "Cast", [tensor], {"DstT": dtype}, name=self.b.unique_name("Cast"), exact_name=True
            ).name
        return self._cache[key]


# --- the optimizers ---------------------------------------------------------------------------------


class Optimizer(ABC):
    """Base class. A subclass names itself (``tf_name``: slot suffix and name scope), lists its
    parameters with defaults, its slots' initializers, and the apply op for one variable."""

    key: ClassVar[str] = ""  # the spec's name for it (``optimizer: {adam: ...}``)
    tf_name: ClassVar[str] = "Optimizer"
    defaults: ClassVar[dict[str, Any]] = {}
    optional: ClassVar[dict[str, Any]] = {}  # accepted, and in params only when given (Adam's amsgrad)

    def __init__(self, path: str | None = None, **params: Any):
        path = path or f"optimizer.{self.key}"
        known = {"learning_rate": 0.001, "weight_decay": 0.0, **self.defaults}
        for key, value in params.items():
            if key not in known and key not in self.optional:
                raise SpecError(
                    f"optimizer '{self.key}' has no parameter '{key}'"
                    + did_you_mean(key, known)
                    + f"; allowed: {', '.join([*known, *self.optional])}",
                    path=f"{path}.{key}",
                )
            _check_param(key, value, f"{path}.{key}")
        self.params = {**known, **params}
        # A number or a schedule mapping: turn it into a tensor with schedules.learning_rate.
        self.learning_rate = self.params["learning_rate"]
        self.weight_decay = float(self.params["weight_decay"])

    # What subclasses define.

    def slot_initializers(self) -> list[Initializer]:
        """One initializer per slot, in TensorFlow's slot order (names get ``_1``, ``_2``...)."""
        return []

    def _create_globals(self, builder, first: VariableInfo) -> dict[str, VariableInfo]:
        """Variables shared by all updates (Adam's beta powers), created at the root."""
        return {}

    @abstractmethod
    def _apply_op(self, s: _Scalars, grad: str, var: VariableInfo, slots, lr: str, globals_) -> tuple:
        """``(op, inputs, attrs)`` of the ResourceApply op updating ``var``."""

    # ``(s, grad, var, slots, lr, globals_) -> (op, inputs, attrs)`` of the ResourceSparseApply op
    # for a sparse gradient with unique rows, in optimizers that have one. Without one (Adam,
    # RMSProp: TF 1's update every row) the gradient is made dense beside the variable, so on a
    # cluster still only the rows travel.
    _apply_sparse_op = None

    def _sparse_update(self, b, s: _Scalars, grad: IndexedSlices, var: VariableInfo, slots, lr: str, globals_):
        if self._apply_sparse_op is None:
            return self._apply_op(s, grad.dense(b, colocate_with=var.handle), var, slots, lr, globals_)
        return self._apply_sparse_op(s, _deduplicate(b, grad), var, slots, lr, globals_)

    def _finish(self, builder, s: _Scalars, updates: list[str], globals_) -> list[str]:
        """Ops to run once after every update (Adam advances its beta powers)."""
        return []

    # The shared driver.

    def apply_gradients(
        self,
        builder,
        grads_and_vars: Sequence[tuple[str | None, VariableInfo]],
        learning_rate_tensor: str,
        global_step: VariableInfo | None,
        step_limit: int | None = None,
    ) -> str:
        """Add the update ops and return the train op's name (a NoOp). A None gradient skips its
        variable; ``global_step`` (when given) is incremented by one after all updates. With
        ``step_limit`` (async replicas) the step is counted first, by ``_IncrementBelow`` beside
        the global step, and every variable's update waits on it: an update arriving once the
        global step is at the limit fails there and changes nothing."""
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if not pairs:
            raise SpecError("no gradients to apply: the loss does not depend on any trainable variable")
        for g, v in pairs:
            gv = g.values if isinstance(g, IndexedSlices) else g
            if builder.spec(gv).dtype != v.dtype:
                raise GraphError(
                    f"gradient '{gv}' is {builder.spec(gv).dtype.name} but variable '{v.name}' is {v.dtype.name}",
                    node=v.name,
                )
        with _at_root(builder, clear_control=True):
            slots = {v.name: self._create_slots(builder, v) for _, v in pairs}
            globals_ = self._create_globals(builder, pairs[0][1])
        s = _Scalars(builder)
        with _at_root(builder):
            scope = _free_name(builder, self.tf_name)
            with builder.name_scope(scope):
                admit = [] if step_limit is None else [_admission(builder, global_step, step_limit, pairs)]
                updates = []
                for g, v in pairs:
                    with builder.name_scope(f"update_{v.name}"):
                        lr = s.cast(learning_rate_tensor, v.dtype)
                        decay = self._weight_decay(builder, s, v, lr)
                        for name in decay:  # the decay writes the variable too: it waits as well
                            builder.graph_def.node(name).inputs += [f"^{a}" for a in admit]
                        decay += admit
                        if isinstance(g, IndexedSlices):
                            op, inputs, attrs = self._sparse_update(builder, s, g, v, slots[v.name], lr, globals_)
                        else:
                            op, inputs, attrs = self._apply_op(s, g, v, slots[v.name], lr, globals_)
                        if op == "_composed":  # an update of plain ops (AMSGrad), the last writing var
                            builder.graph_def.node(inputs[-1]).inputs += [f"^{a}" for a in decay]
                            node = builder.add_op("NoOp", name="update", control_inputs=inputs)
                        else:
                            node = builder.add_op(op, inputs, attrs, name=op, control_inputs=decay)
                        if v.constraint is not None:  # Keras's: the updated value through the constraint
                            node = _constrain(builder, v, node.name)
                        updates.append(node.name)
                # Counted updates: what runs once a step waits on the count, not on every update
                # (the updates read the snapshots it replaces): no call back to the count's ps
                # after the other ps tasks' updates.
                done = updates + self._finish(builder, s, admit or updates, globals_)
                if admit:
                    done += admit
                elif global_step is not None:
                    one = builder.const(1, global_step.dtype, name="one")
                    done.append(
                        builder.add_op(
                            "AssignAddVariableOp",
                            [global_step.handle, one],
                            {"dtype": global_step.dtype},
                            name="update_global_step",
                            control_inputs=done,
                        ).name
                    )
            return builder.add_op("NoOp", name=scope, control_inputs=done, exact_name=True).name

    def _create_slots(self, builder, var: VariableInfo) -> list[VariableInfo]:
        out = []
        for init in self.slot_initializers():
            name = _free_name(builder, f"{var.name}/{self.tf_name}")
            slot = create_variable(builder, name, list(var.shape), var.dtype, init, trainable=False)
            if var.save_slice is not None:  # a part's slot is the same part of the whole slot
                full, shape, offset, rows = var.save_slice
                slot.save_slice = (full + name[len(var.name):], shape, offset, rows)
            out.append(slot)
        return out

    def _weight_decay(self, builder, s: _Scalars, var: VariableInfo, lr: str) -> list[str]:
        """``var -= lr * weight_decay * var``, computed from ``var.read``: the snapshot the
        forward and backward passes used, which is the value before this step's update."""
        if not self.weight_decay:
            return []
        rate = builder.add_op("Mul", [lr, s.const(self.weight_decay, var.dtype, "weight_decay")], name="decay/rate").name
        delta = builder.add_op("Mul", [var.read, rate], name="decay/mul").name
        return [
            builder.add_op("AssignSubVariableOp", [var.handle, delta], {"dtype": var.dtype}, name="decay/AssignSub").name
        ]


def _constrain(b, var: VariableInfo, after: str):
    """``var = constraint(var)``, read after the update ``after``; the assignment node."""
    with b.name_scope("constraint"):
        value = b.add_op("ReadVariableOp", [var.handle], {"dtype": var.dtype}, name="read", control_inputs=[after])
        out = emit_constraint(b, var.constraint, value.name, len(var.shape), var.dtype)
        return b.add_op("AssignVariableOp", [var.handle, out], {"dtype": var.dtype}, name="assign")


def _admission(b, global_step: VariableInfo, limit: int, pairs) -> str:
    """The global step's count of this update, refused at ``limit`` (state_ops._IncrementBelow),
    made beside the variable (the limit too, so the check costs no message). It waits for every
    gradient: counted as the update arrives, never in the step's reads (which an async replica
    prefetches a step ahead)."""
    at = [global_step.name]
    value = np.asarray(limit, dtype=global_step.dtype.numpy)
    bound = b.add_op("Const", [], {"value": value, "dtype": global_step.dtype}, name="step_limit", colocate_with=at)
    grads = [g.values if isinstance(g, IndexedSlices) else g for g, _ in pairs]
    return b.add_op("_IncrementBelow", [global_step.handle, bound.name], {"dtype": global_step.dtype},
                    name="count_step", control_inputs=grads).name  # fmt: skip


def _beside(b, tensor: str) -> list[str]:
    """Where ``tensor`` asked to be made (its producer's colocation; none: wherever it is made):
    sync's averaged rows sit with their variable, and what is made of them stays there."""
    return [c.removeprefix("loc:@") for c in b.graph_def.node(parse_input(tensor).node).attrs.get("_class") or ()]


def _deduplicate(b, grad: IndexedSlices) -> IndexedSlices:
    """One row per index, the repeats' values summed (TF's _deduplicate_indexed_slices): made
    where the gradient is, so only unique rows travel."""
    at = _beside(b, grad.values)
    unique = b.add_op("Unique", [grad.indices], {"out_idx": b.spec(grad.indices).dtype}, name="Unique",
                      colocate_with=at).name  # fmt: skip
    count = b.add_op("Size", [unique], {"out_type": b.spec(grad.indices).dtype}, name="num_unique",
                     colocate_with=at).name  # fmt: skip
    summed = b.add_op("UnsortedSegmentSum", [grad.values, f"{unique}:1", count], name="summed_rows",
                      colocate_with=at).name  # fmt: skip
    return IndexedSlices(b, summed, unique, grad._rows)


class SGD(Optimizer):
    """var -= lr * grad (a sparse gradient: ResourceScatterAdd of -lr * rows, as TF)."""

    key = "sgd"
    tf_name = "GradientDescent"
    defaults = {"learning_rate": 0.01}

    def _sparse_update(self, b, s, grad, var, slots, lr, globals_):
        # Repeated rows add up in the scatter: no deduplication needed (as TF's SGD).
        at = _beside(b, grad.values)
        delta = b.add_op("Mul", [grad.values, lr], name="scaled_rows", colocate_with=at).name
        neg = b.add_op("Neg", [delta], name="neg_rows", colocate_with=at).name
        return "ResourceScatterAdd", [var.handle, grad.indices, neg], {"dtype": var.dtype}

    def _apply_op(self, s, grad, var, slots, lr, globals_):
        return "ResourceApplyGradientDescent", [var.handle, lr, grad], {}


class Momentum(Optimizer):
    """Keras' SGD with momentum: velocity = momentum * velocity - lr * grad; var += velocity
    (Nesterov: var += momentum * velocity - lr * grad)."""

    key = "momentum"
    tf_name = "Momentum"
    defaults = {"learning_rate": 0.01, "momentum": 0.9, "nesterov": False}

    def slot_initializers(self):
        return [_ZEROS]

    def _apply_op(self, s, grad, var, slots, lr, globals_):
        momentum = s.const(self.params["momentum"], var.dtype, "momentum")
        return (
            "ResourceApplyKerasMomentum",
            [var.handle, slots[0].handle, lr, grad, momentum],
            {"use_nesterov": self.params["nesterov"]},
        )

    def _apply_sparse_op(self, s, grad, var, slots, lr, globals_):
        # Only the touched rows' velocities decay (Keras' sparse momentum).
        momentum = s.const(self.params["momentum"], var.dtype, "momentum")
        return (
            "ResourceSparseApplyKerasMomentum",
            [var.handle, slots[0].handle, lr, grad.values, grad.indices, momentum],
            {"use_nesterov": self.params["nesterov"]},
        )


class Adam(Optimizer):
    """Adam (Kingma & Ba) with TensorFlow's bias correction folded into the step size; the
    running powers beta_1^t and beta_2^t are the variables ``beta1_power`` and ``beta2_power``."""

    key = "adam"
    tf_name = "Adam"
    defaults = {"learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7}
    optional = {"amsgrad": False}

    def slot_initializers(self):
        return [_ZEROS] * (3 if self.params.get("amsgrad") else 2)  # m, v (, v_hat)

    def _create_globals(self, builder, first):
        # Powers start at beta (step 1) in the first variable's dtype, as TensorFlow 1's.
        out = {}
        for key, param in (("beta1_power", "beta_1"), ("beta2_power", "beta_2")):
            init = parse_initializer({"constant": self.params[param]})
            name = _free_name(builder, key)
            out[key] = create_variable(builder, name, [], first.dtype, init, trainable=False)
        return out

    def _apply_op(self, s, grad, var, slots, lr, globals_):
        dt = var.dtype
        p = self.params
        inputs = [var.handle, slots[0].handle, slots[1].handle]
        inputs += [s.cast(globals_["beta1_power"].read, dt), s.cast(globals_["beta2_power"].read, dt), lr]
        inputs += [s.const(p["beta_1"], dt, "beta1"), s.const(p["beta_2"], dt, "beta2")]
        inputs += [s.const(p["epsilon"], dt, "epsilon"), grad]
        if p.get("amsgrad"):
            return "_composed", self._amsgrad(s, inputs, var, slots), {}
        return "ResourceApplyAdam", inputs, {"use_nesterov": False}

    def _amsgrad(self, s, inputs, var, slots) -> list[str]:
        """Keras's AMSGrad as plain ops (there is no fused kernel): Adam's m and v, v_hat =
        max(v_hat, v), var -= alpha * m / (sqrt(v_hat) + epsilon). Returns the assignments."""
        b = s.b
        b1p, b2p, lr, beta1, beta2, eps, grad = inputs[3:]
        m, v, v_hat = slots
        dt = var.dtype

        def op(kind, *args, name=None):
            return b.add_op(kind, list(args), name=b.unique_name(name or kind), exact_name=True).name

        one = s.const(1.0, dt, "one")
        m_read, v_read = m.read, v.read
        m_new = op("AddV2", m_read, op("Mul", op("Sub", grad, m_read), op("Sub", one, beta1)), name="m_new")
        g2 = op("Mul", grad, grad)
        v_new = op("AddV2", v_read, op("Mul", op("Sub", g2, v_read), op("Sub", one, beta2)), name="v_new")
        v_hat_new = op("Maximum", v_hat.read, v_new, name="v_hat_new")
        alpha = op("RealDiv", op("Mul", lr, op("Sqrt", op("Sub", one, b2p))), op("Sub", one, b1p), name="alpha")
        delta = op("RealDiv", op("Mul", m_new, alpha), op("AddV2", op("Sqrt", v_hat_new), eps), name="delta")
        assigns = [b.add_op("AssignVariableOp", [h, val], {"dtype": dt}, name=f"assign_{what}").name
                   for what, h, val in (("m", m.handle, m_new), ("v", v.handle, v_new), ("v_hat", v_hat.handle, v_hat_new))]
        return [*assigns, b.add_op("AssignSubVariableOp", [var.handle, delta], {"dtype": dt}, name="AssignSub").name]

    def _finish(self, builder, s, updates, globals_):
        out = []
        for key, param, const in (("beta1_power", "beta_1", "beta1"), ("beta2_power", "beta_2", "beta2")):
            power = globals_[key]
            # Reads the value the updates used (a snapshot), and stores power * beta after them.
            beta = s.const(self.params[param], power.dtype, const)
            new = builder.add_op("Mul", [power.read, beta], name=f"{key}_mul")
            assign = builder.add_op(
                "AssignVariableOp", [power.handle, new.name], {"dtype": power.dtype},
                name=f"{key}_update", control_inputs=updates,
            )  # fmt: skip
            out.append(assign.name)
        return out


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter); Keras' default decay 0.004."""

    key = "adamw"
    tf_name = "AdamW"
    defaults = {**Adam.defaults, "weight_decay": 0.004}


class RMSProp(Optimizer):
    """ms = rho * ms + (1 - rho) * grad^2 (centered: divided by the variance, ms - mg^2);
    mom = momentum * mom + lr * grad / sqrt(ms + epsilon); var -= mom. Slots start at zero, as
    in Keras."""

    key = "rmsprop"
    tf_name = "RMSProp"
    defaults = {"learning_rate": 0.001, "rho": 0.9, "momentum": 0.0, "epsilon": 1e-7, "centered": False}

    def slot_initializers(self):
        return [_ZEROS] * (3 if self.params["centered"] else 2)  # ms, (mg), mom: TF 1's order

    def _apply_op(self, s, grad, var, slots, lr, globals_):
        dt, p = var.dtype, self.params
        hyper = [lr, s.const(p["rho"], dt, "rho"), s.const(p["momentum"], dt, "momentum")]
        hyper += [s.const(p["epsilon"], dt, "epsilon"), grad]
        if p["centered"]:
            ms, mg, mom = slots
            return "ResourceApplyCenteredRMSProp", [var.handle, mg.handle, ms.handle, mom.handle, *hyper], {}
        ms, mom = slots
        return "ResourceApplyRMSProp", [var.handle, ms.handle, mom.handle, *hyper], {}


class Adagrad(Optimizer):
    """accum += grad^2; var -= lr * grad / (sqrt(accum) + epsilon)."""

    key = "adagrad"
    tf_name = "Adagrad"
    defaults = {"learning_rate": 0.001, "initial_accumulator_value": 0.1, "epsilon": 1e-7}

    def slot_initializers(self):
        return [parse_initializer({"constant": self.params["initial_accumulator_value"]})]

    def _apply_op(self, s, grad, var, slots, lr, globals_):
        eps = s.const(self.params["epsilon"], var.dtype, "epsilon")
        return "ResourceApplyAdagradV2", [var.handle, slots[0].handle, lr, eps, grad], {"update_slots": True}

    def _apply_sparse_op(self, s, grad, var, slots, lr, globals_):
        # The same as the dense update (a zero gradient leaves a row and its accumulator as they are).
        eps = s.const(self.params["epsilon"], var.dtype, "epsilon")
        return ("ResourceSparseApplyAdagradV2", [var.handle, slots[0].handle, lr, eps, grad.values, grad.indices],
                {"update_slots": True})  # fmt: skip


OPTIMIZERS: dict[str, type[Optimizer]] = {cls.key: cls for cls in (SGD, Momentum, Adam, AdamW, RMSProp, Adagrad)}


def make_optimizer(name: str, params: dict | None = None, path: str = "train.optimizer") -> Optimizer:
    """The optimizer ``name`` (a key of the spec's ``optimizer:`` mapping) with ``params``."""
    if name not in OPTIMIZERS:
        raise SpecError(
            f"unknown optimizer '{name}'" + did_you_mean(str(name), OPTIMIZERS) + f"; one of: {', '.join(OPTIMIZERS)}",
            path=path,
        )
    return OPTIMIZERS[name](path=f"{path}.{name}", **(params or {}))
