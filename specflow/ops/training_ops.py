"""Optimizer update ops on resource variables, with TensorFlow's names, inputs and attrs
(``tensorflow/core/ops/training_ops.cc``): ResourceApplyGradientDescent, ResourceApplyMomentum,
ResourceApplyKerasMomentum, ResourceApplyAdam, ResourceApplyRMSProp,
ResourceApplyCenteredRMSProp and ResourceApplyAdagradV2.

Every op takes its variables first (``var`` and the optimizer's slots, as resource handles), then
scalar hyper-parameters and the gradient, all of type ``T``. The kernels keep the
resource-variable rule of :mod:`specflow.ops.state_ops`: under the variables' locks, each update
function changes the arrays it is given in place, and those are the stored arrays only when
nothing else holds them (``writable_value``), else copies that are stored afterwards; so a value
handed out by an earlier read never changes, and a training step allocates no new variables.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from specflow.graph import dtypes
from specflow.graph.shapes import Shape
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import KernelContext, kernel, register_op
from specflow.ops.state_ops import _initialized, writable_value
from specflow.runtime.resources import ResourceHandle, Variable

# --- shared shape function and kernel -----------------------------------------------------------


def _apply_shape(ic: InferenceContext, variables: Sequence[str], tensors: Sequence[str], grad: str) -> list[Shape]:
    """Slots hold T values shaped like ``var``; hyper-parameters are scalars; the gradient is
    shaped like ``var``. Unknown handle data (a fed handle) skips the variable checks."""
    t = ic.attr("T")
    var_shape = Shape.unknown()
    for i, arg in enumerate(variables):
        spec = ic.handle_data(i)
        if spec is None:
            continue
        if spec.dtype != t:
            raise ic.fail(f"variable '{ic.node.inputs[i]}' ({arg}) holds {spec.dtype} but T is {t}")
        try:
            var_shape = var_shape.merge_with(spec.shape)
        except ValueError:
            raise ic.fail(
                f"variable '{ic.node.inputs[i]}' ({arg}) has shape {spec.shape}, but '{ic.node.inputs[0]}' "
                f"(var) has shape {var_shape}"
            ) from None
    for j, arg in enumerate(tensors, start=len(variables)):
        shape = ic.shape(j)
        if arg == grad:
            if not shape.is_compatible_with(var_shape):
                raise ic.fail(f"gradient of shape {shape} does not fit variable '{ic.node.inputs[0]}' of shape {var_shape}")
        elif shape.rank not in (None, 0):
            raise ic.fail(f"'{arg}' must be a scalar, got shape {shape}")
    return []


class _Apply(NamedTuple):
    """What an apply kernel needs about its op, resolved once at registration."""

    variables: tuple[str, ...]
    tensors: tuple[str, ...]
    grad: int  # index of the gradient among the tensors
    scalars: tuple[int, ...]  # indices of the hyper-parameters (scalars) among the tensors
    update: Callable
    n_variables: int


def _variable(ctx: KernelContext, resource) -> Variable:
    """The initialized variable behind a handle, checked against ``T``."""
    return _initialized(ctx, resource, _UPDATED, dtype_attr="T")


_UPDATED = "updated by {op}"  # what happened to an uninitialized variable (see _initialized)


def _check_scalars(ctx: KernelContext, op: _Apply, args) -> None:
    for j in op.scalars:
        if args[j].ndim != 0:
            raise ctx.fail(f"'{op.tensors[j]}' must be a scalar, got shape {list(args[j].shape)}")


def _check_grad(ctx: KernelContext, grad, var: Variable) -> None:
    """The gradient has the variable's shape (checked under the variable's lock)."""
    if grad.shape != var.value.shape:
        raise ctx.fail(
            f"gradient of shape {list(grad.shape)} does not match variable '{var.name}' of shape "
            f"{list(var.value.shape)}"
        )


def _found_variable(ctx: KernelContext, handle, epoch) -> Variable:
    """The variable behind ``handle``, found as ReadVariableOp finds it (the handle remembers it
    for the resource manager's ``epoch``) when it is initialized with dtype ``T``; anything else
    (first use, a re-created variable, an error to report) through ``_variable``."""
    found = handle._found if type(handle) is ResourceHandle else None
    var = found[1] if found is not None and found[0] is epoch else None
    if type(var) is not Variable or var.value is None or var.dtype is not ctx.attrs["T"]:
        var = _variable(ctx, handle)
    return var


def _apply_one(op: _Apply) -> Callable:
    """The kernel of an optimizer with no slots (gradient descent): one variable, one lock."""

    scalars, grad, update = op.scalars, op.grad, op.update

    def apply(ctx, resource, *args):
        # Checks that pass cost a comparison each (this runs for every variable every step);
        # anything else (an error to report) goes through the helpers.
        var = _found_variable(ctx, resource, getattr(ctx.resources, "epoch", None))
        for j in scalars:
            if args[j].ndim:
                _check_scalars(ctx, op, args)
        with var.lock:
            if args[grad].shape != var.value.shape:
                _check_grad(ctx, args[grad], var)
            value = writable_value(var)
            update(ctx.xp, ctx.attrs, value, *args)
            var.value = value  # the same array when it was updated in place

    return apply


def _apply_with_slots(op: _Apply) -> Callable:
    """The kernel of an optimizer with slot variables (momentum, Adam, ...)."""

    n, scalars, grad = op.n_variables, op.scalars, op.grad

    def apply(ctx, *inputs):
        # As in _apply_one (every variable, every step), and the last call's lock order reused
        # while the variables are the same (their locks the same objects).
        epoch = getattr(ctx.resources, "epoch", None)
        found = [_found_variable(ctx, h, epoch) for h in inputs[:n]]
        var, args = found[0], inputs[n:]
        for j in scalars:
            if args[j].ndim:
                _check_scalars(ctx, op, args)
        # Lock every variable once, in a fixed order, so two updates sharing variables cannot deadlock.
        cached = ctx.state.get("locks")  # (each input's lock, the distinct locks in name order)
        if cached is None or any(v.lock is not lock for v, lock in zip(found, cached[0])):
            ordered = [v.lock for v in sorted({id(v): v for v in found}.values(), key=_name)]
            cached = ctx.state["locks"] = ([v.lock for v in found], ordered)
        locks = cached[1]
        for lock in locks:
            lock.acquire()
        try:
            shape = var.value.shape
            for arg, v in zip(op.variables[1:], found[1:]):
                if v.value.shape != shape:
                    raise ctx.fail(
                        f"slot variable '{v.name}' ({arg}) has shape {list(v.value.shape)}, but variable "
                        f"'{var.name}' has shape {list(shape)}"
                    )
            if args[grad].shape != shape:
                _check_grad(ctx, args[grad], var)
            arrays = [writable_value(v) for v in found]
            op.update(ctx.xp, ctx.attrs, *arrays, *args)
            for v, value in zip(found, arrays):
                v.value = value
        finally:
            for lock in reversed(locks):
                lock.release()

    return apply


def _name(v: Variable) -> str:
    return v.name


def _register_apply(op: str, variables: Sequence[str], tensors: Sequence[str], grad: str, attrs=(), doc=""):
    """Register ``op`` (variables first, then T tensors) and a float kernel running the decorated
    ``update(xp, attrs, *variable_arrays, *tensors)``, which updates the arrays in place."""
    register_op(
        op,
        inputs=[f"{v}: resource" for v in variables] + [f"{t}: T" for t in tensors],
        attrs=["T: {numeric}", "use_locking: bool = false", *attrs],
        stateful=True,
        shape=lambda ic: _apply_shape(ic, variables, tensors, grad),
        doc=doc,
    )

    def deco(update: Callable) -> Callable:
        spec = _Apply(
            tuple(variables),
            tuple(tensors),
            tensors.index(grad),
            tuple(j for j, t in enumerate(tensors) if t != grad),
            update,
            len(variables),
        )

        make = _apply_one if len(variables) == 1 else _apply_with_slots
        kernel(op, T=dtypes.FLOATING)(make(spec))

        return update

    return deco


# --- the ops ------------------------------------------------------------------------------------


@_register_apply(
    "ResourceApplyGradientDescent",
    ["var"],
    ["alpha", "delta"],
    grad="delta",
    doc="var -= alpha * delta",
)
def _gradient_descent(xp, attrs, var, alpha, delta):
    var -= alpha * delta


@_register_apply(
    "ResourceApplyMomentum",
    ["var", "accum"],
    ["lr", "grad", "momentum"],
    grad="grad",
    attrs=["use_nesterov: bool = false"],
    doc=(
        "accum = accum * momentum + grad; var -= lr * accum "
        "(with use_nesterov: var -= lr * grad + lr * momentum * accum)"
    ),
)
def _momentum(xp, attrs, var, accum, lr, grad, momentum):
    accum *= momentum
    accum += grad
    var -= grad * lr + accum * momentum * lr if attrs["use_nesterov"] else accum * lr


@_register_apply(
    "ResourceApplyKerasMomentum",
    ["var", "accum"],
    ["lr", "grad", "momentum"],
    grad="grad",
    attrs=["use_nesterov: bool = false"],
    doc=(
        "accum = accum * momentum - lr * grad; var += accum "
        "(with use_nesterov: var += accum * momentum - lr * grad)"
    ),
)
def _keras_momentum(xp, attrs, var, accum, lr, grad, momentum):
    accum *= momentum
    accum -= grad * lr
    var += accum * momentum - grad * lr if attrs["use_nesterov"] else accum


@_register_apply(
    "ResourceApplyAdam",
    ["var", "m", "v"],
    ["beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon", "grad"],
    grad="grad",
    attrs=["use_nesterov: bool = false"],
    doc=(
        "lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power); m += (grad - m) * (1 - beta1); "
        "v += (grad^2 - v) * (1 - beta2); var -= lr_t * m / (sqrt(v) + epsilon) "
        "(with use_nesterov, m is replaced by m * beta1 + (1 - beta1) * grad in the last step)"
    ),
)
def _adam(xp, attrs, var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad):
    if xp is not np and var.dtype.kind == "f" and var.dtype.itemsize >= 4:
        # On a GPU the update below would be ~17 kernel launches: one fused kernel instead.
        _adam_kernel(xp)(grad, beta1_power, beta2_power, lr, beta1, beta2, epsilon, bool(attrs["use_nesterov"]),
                         var, m, v)  # fmt: skip
        return
    # The scalar inputs as numpy scalars of T (``[()]``: a 0-d array's arithmetic costs ~1 µs an
    # op, a scalar's a tenth of that; the same float arithmetic either way). On cupy they stay 0-d.
    beta1_power, beta2_power, lr, beta1, beta2, epsilon = (
        a[()] for a in (beta1_power, beta2_power, lr, beta1, beta2, epsilon)
    )
    alpha = lr * xp.sqrt(1 - beta2_power) / (1 - beta1_power)
    if grad.dtype != var.dtype or not var.ndim:  # bfloat16, updated in float32 (writable_value): the
        # promotions as written; a scalar: numpy arithmetic on 0-d arrays gives scalars, not arrays
        m += (grad - m) * (1 - beta1)
        v += (grad * grad - v) * (1 - beta2)
        step = m * beta1 + (1 - beta1) * grad if attrs["use_nesterov"] else m
        var -= step * alpha / (xp.sqrt(v) + epsilon)
        return
    # The same operations in the same order, in place in two temporaries instead of nine (a
    # step updates every variable).
    t = grad - m
    t *= 1 - beta1
    m += t
    xp.multiply(grad, grad, out=t)
    t -= v
    t *= 1 - beta2
    v += t
    step = m * beta1 + (1 - beta1) * grad if attrs["use_nesterov"] else m
    d = xp.sqrt(v)
    d += epsilon
    xp.multiply(step, alpha, out=t)
    t /= d
    var -= t


@functools.cache
def _adam_kernel(cupy):
    """ResourceApplyAdam's update as one cupy elementwise kernel, in _adam's order of operations."""
    return cupy.ElementwiseKernel(
        "T g, T b1p, T b2p, T lr, T b1, T b2, T eps, bool nesterov",
        "T var, T m, T v",
        """
        T alpha = lr * sqrt((T)1 - b2p) / ((T)1 - b1p);
        m += (g - m) * ((T)1 - b1);
        v += (g * g - v) * ((T)1 - b2);
        T step = nesterov ? m * b1 + ((T)1 - b1) * g : m;
        var -= step * alpha / (sqrt(v) + eps);
        """,
        "specflow_apply_adam",
    )


@_register_apply(
    "ResourceApplyRMSProp",
    ["var", "ms", "mom"],
    ["lr", "rho", "momentum", "epsilon", "grad"],
    grad="grad",
    doc=(
        "ms += (grad^2 - ms) * (1 - rho); mom = mom * momentum + lr * grad / sqrt(ms + epsilon); "
        "var -= mom"
    ),
)
def _rmsprop(xp, attrs, var, ms, mom, lr, rho, momentum, epsilon, grad):
    ms += (grad * grad - ms) * (1 - rho)
    mom *= momentum
    mom += lr * grad / xp.sqrt(ms + epsilon)
    var -= mom


@_register_apply(
    "ResourceApplyCenteredRMSProp",
    ["var", "mg", "ms", "mom"],
    ["lr", "rho", "momentum", "epsilon", "grad"],
    grad="grad",
    doc=(
        "RMSProp normalized by the estimated variance: mg += (grad - mg) * (1 - rho); "
        "ms += (grad^2 - ms) * (1 - rho); mom = mom * momentum + lr * grad / sqrt(ms - mg^2 + epsilon); "
        "var -= mom"
    ),
)
def _centered_rmsprop(xp, attrs, var, mg, ms, mom, lr, rho, momentum, epsilon, grad):
    mg += (grad - mg) * (1 - rho)
    ms += (grad * grad - ms) * (1 - rho)
    mom *= momentum
    mom += lr * grad / xp.sqrt(ms - mg * mg + epsilon)
    var -= mom


@_register_apply(
    "ResourceApplyAdagradV2",
    ["var", "accum"],
    ["lr", "epsilon", "grad"],
    grad="grad",
    attrs=["update_slots: bool = true"],
    doc="accum += grad^2 (when update_slots); var -= lr * grad / (sqrt(accum) + epsilon)",
)
def _adagrad_v2(xp, attrs, var, accum, lr, epsilon, grad):
    if attrs["update_slots"]:
        accum += grad * grad
    var -= grad * lr / (xp.sqrt(accum) + epsilon)
