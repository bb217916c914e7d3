"""The rest of tf.Variable's scatter methods, with TensorFlow's names, inputs and attrs
(``resource_variable_ops.cc``, ``state_ops.cc``): ResourceScatterMul / Div / Max / Min
(``v.scatter_mul`` ..., rows picked by ``indices``, as ResourceScatterAdd in
:mod:`specflow.ops.sparse_training_ops`) and ResourceScatterNdUpdate / Add / Sub / Max / Min
(``v.scatter_nd_update`` ..., slices picked by index vectors, as TensorScatter* in
:mod:`specflow.ops.gather_scatter_ops`, whose ``_scatter`` they share).

As TF's kernels: repeated indices apply in order (a product or quotient of every update);
integer division truncates toward zero; Max/Min keep the variable's value against a NaN update
and a NaN already stored (Eigen's ``a < b ? b : a``). Unlike TF's CPU kernel, ScatterMax/Min check
the updates' shape (TF reads past them). The resource-variable rule of state_ops holds (updates in
place only when nothing else holds the array: ``writable_value``).
"""

from __future__ import annotations

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops.gather_scatter_ops import _scatter, _scatter_shape
from specflow.ops.inference import InferenceContext, no_outputs
from specflow.ops.registry import kernel, register_op
from specflow.ops.sparse_training_ops import _scatter_shape as _rows_shape
from specflow.ops.sparse_training_ops import check_scatter_rows
from specflow.ops.state_ops import _initialized, writable_value

# --- ResourceScatterMul / Div / Max / Min -------------------------------------------------------


def _mul(xp, value, rows, updates):
    np.multiply.at(value, rows, np.broadcast_to(updates, (len(rows),) + value.shape[1:]))


def _div(xp, value, rows, updates):
    upd = np.broadcast_to(updates, (len(rows),) + value.shape[1:])
    if value.dtype.kind not in "iu":
        np.divide.at(value, rows, upd)
        return
    if not upd.all():
        raise ZeroDivisionError
    for r, u in zip(rows, upd):  # C's integer division truncates (numpy's floors), in order
        q = np.abs(value[r]) // np.abs(u)
        value[r] = np.where((value[r] < 0) != (u < 0), -q, q)


def _min_max(which):
    def update(xp, value, rows, updates):
        upd = xp.broadcast_to(updates, (len(rows),) + value.shape[1:])
        if value.dtype.kind == "f":  # a NaN update never wins; a NaN already stored stays
            upd = xp.where(xp.isnan(upd), upd.dtype.type(-np.inf if which == "max" else np.inf), upd)
            kept = xp.isnan(value)
        ufunc = xp.maximum if which == "max" else xp.minimum
        with np.errstate(invalid="ignore"):
            ufunc.at(value, rows, upd)
        if value.dtype.kind == "f":
            value[kept] = np.nan

    return update


def _register_rows(op: str, what: str, update, types: str, on_host: bool) -> None:
    register_op(
        op,
        inputs=["resource: resource", "indices: Tindices", "updates: dtype"],
        attrs=[f"dtype: {types}", "Tindices: {int32, int64}"],
        stateful=True,
        shape=_rows_shape,
        doc=f"variable[indices[i...], ...] {what} updates[i..., ...] (updates: indices.shape + "
        "variable.shape[1:], or a scalar for every row); repeated indices apply in order.",
    )

    @kernel(op)
    def _scatter_rows(ctx, resource, indices, updates):
        var = _initialized(ctx, resource, "updated by {op}")
        with var.lock:
            check_scatter_rows(ctx, op, var, indices, updates)
            value = writable_value(var)
            xp = np if on_host else ctx.xp  # cupy has no multiply.at / divide.at: those run on the host
            target = ctx.host(value) if on_host else value
            upd = updates.reshape((indices.size,) + value.shape[1:]) if updates.ndim else updates
            rows = indices.reshape(-1)
            try:
                update(xp, target, ctx.host(rows) if on_host else rows, ctx.host(upd) if on_host else upd)
            except ZeroDivisionError:
                raise ctx.fail("integer division by zero in the updates") from None
            var.value = target if target is value else ctx.xp.asarray(target)


_NUMERIC = "{numeric}"
_REAL = "{real}"
_register_rows("ResourceScatterMul", "*=", _mul, _NUMERIC, on_host=True)
_register_rows("ResourceScatterDiv", "/=", _div, _NUMERIC, on_host=True)
_register_rows("ResourceScatterMax", "= max(variable[...], updates)", _min_max("max"), _REAL, on_host=False)
_register_rows("ResourceScatterMin", "= min(variable[...], updates)", _min_max("min"), _REAL, on_host=False)


# --- ResourceScatterNdUpdate / Add / Sub / Max / Min --------------------------------------------


def _nd_shape(ic: InferenceContext) -> list[Shape]:
    spec = ic.handle_data(0)
    if spec is not None:
        if spec.dtype != ic.attr("T"):
            raise ic.fail(f"variable '{ic.node.inputs[0]}' holds {spec.dtype} but T is {ic.attr('T')}")
        _scatter_shape(ic.fail, ic.shape(1), ic.shape(2), spec.shape)
    elif ic.shape(1).rank == 0:
        raise ic.fail("indices must be at least 1-D, got a scalar")
    return no_outputs(ic)


def _register_nd(op: str, mode, what: str, types: str) -> None:
    register_op(
        op,
        inputs=["ref: resource", "indices: Tindices", "updates: T"],
        attrs=[f"T: {types}", "Tindices: {int32, int64}", "use_locking: bool = true",
               "bad_indices_policy: string = ''"],  # fmt: skip
        stateful=True,
        shape=_nd_shape,
        doc=f"The variable's slices at `indices`' index vectors (its last dimension, K) {what} `updates` "
        "(shape indices.shape[:-1] + variable.shape[K:]).",
    )

    @kernel(op)
    def _scatter_nd(ctx, ref, indices, updates):
        if ctx.attrs["bad_indices_policy"] not in ("", "DEFAULT", "ERROR"):
            raise ctx.fail(f"bad_indices_policy '{ctx.attrs['bad_indices_policy']}' is not supported "
                           "(only the default: an error)")  # fmt: skip
        var = _initialized(ctx, ref, "updated by {op}", dtype_attr="T")
        with var.lock:
            if var.value.ndim == 0 and indices.shape[-1:] != (0,):
                raise ctx.fail(f"variable '{var.name}' is a scalar; {op} needs indices with a last dimension of 0")
            var.value = _scatter(ctx, writable_value(var), indices, updates, add=mode)


_register_nd("ResourceScatterNdUpdate", False, "replaced by", "type")
_register_nd("ResourceScatterNdAdd", True, "plus", "type")
_register_nd("ResourceScatterNdSub", "sub", "minus", "type")
_register_nd("ResourceScatterNdMax", "max", "replaced by their maximum with", "type")
_register_nd("ResourceScatterNdMin", "min", "replaced by their minimum with", "type")
