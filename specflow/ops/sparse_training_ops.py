"""Row-sparse updates of resource variables, with TensorFlow's names, inputs and attrs
(``resource_variable_ops.cc``, ``training_ops.cc``): ResourceScatterAdd / Sub / Update, and the
sparse optimizer updates ResourceSparseApplyAdagradV2, ResourceSparseApplyMomentum and
ResourceSparseApplyKerasMomentum, which touch only the rows ``indices`` names.

They are what a sparse gradient (``IndexedSlices``, from an embedding lookup) is applied with:
on a cluster the op sits with its variable on the ps, so only the touched rows travel there.
The resource-variable rule of :mod:`specflow.ops.state_ops` holds: under the variables' locks the
stored arrays change in place only when nothing else holds them (``writable_value``).
Repeated indices follow TensorFlow's kernels: scatters add every update (ResourceScatterUpdate:
one of them wins), the sparse applies update a row once per occurrence, in order.
"""

from __future__ import annotations

import numpy as np

from specflow.graph import dtypes
from specflow.graph.shapes import Shape
from specflow.ops.inference import InferenceContext, no_outputs
from specflow.ops.registry import kernel, register_op
from specflow.ops.state_ops import _check_indices, _initialized, writable_value

# --- ResourceScatterAdd / Sub / Update ----------------------------------------------------------


def check_scatter_rows(ctx, op: str, var, indices, updates) -> None:
    """A row scatter's operands (ResourceScatter*): the variable has rows, the indices are in
    range, and ``updates`` is a scalar or of shape indices.shape + variable.shape[1:]."""
    value = var.value
    if value.ndim == 0:
        raise ctx.fail(f"variable '{var.name}' is a scalar; {op} needs at least one dimension")
    _check_indices(ctx, indices, value.shape[0])
    want = tuple(indices.shape) + tuple(value.shape[1:])
    if updates.ndim and tuple(updates.shape) != want:
        raise ctx.fail(f"updates of shape {list(updates.shape)} must be indices.shape + variable.shape[1:] "
                       f"= {list(want)} (or a scalar)")  # fmt: skip


def _scatter_shape(ic: InferenceContext) -> list[Shape]:
    spec = ic.handle_data(0)
    if spec is not None:
        if spec.dtype != ic.attr("dtype"):
            raise ic.fail(f"variable '{ic.node.inputs[0]}' holds {spec.dtype} but dtype is {ic.attr('dtype')}")
        indices, updates = ic.shape(1), ic.shape(2)
        if spec.shape.rank is not None and indices.rank is not None and updates.rank not in (None, 0):
            want = indices.concatenate(Shape(spec.shape.dims[1:]))
            if not updates.is_compatible_with(want):
                raise ic.fail(f"updates of shape {updates} must be indices.shape + variable.shape[1:] = {want} "
                              "(or a scalar)")  # fmt: skip
    return no_outputs(ic)


def _register_scatter(op: str, what: str, update) -> None:
    register_op(
        op,
        inputs=["resource: resource", "indices: Tindices", "updates: dtype"],
        attrs=["dtype: type", "Tindices: {int32, int64}"],
        stateful=True,
        shape=_scatter_shape,
        doc=f"variable[indices[i...], ...] {what} updates[i..., ...] (updates: indices.shape + "
        "variable.shape[1:], or a scalar for every row).",
    )

    @kernel(op)
    def _scatter(ctx, resource, indices, updates):
        var = _initialized(ctx, resource, "updated by {op}")
        if var.dtype != ctx.attrs["dtype"]:
            raise ctx.fail(f"variable '{var.name}' holds {var.dtype} but {op} has dtype {ctx.attrs['dtype']}")
        with var.lock:
            check_scatter_rows(ctx, op, var, indices, updates)
            value = writable_value(var)
            update(ctx.xp, value, indices.reshape(-1), updates.reshape((indices.size,) + value.shape[1:])
                   if updates.ndim else updates)  # fmt: skip
            var.value = value


def _add(xp, value, rows, updates):
    # repeated rows add up (cupy: atomic adds, so their order, not their sum, may differ)
    xp.add.at(value, rows, xp.broadcast_to(updates, (len(rows),) + value.shape[1:]))


def _sub(xp, value, rows, updates):
    _add(xp, value, rows, -updates)


def _assign(xp, value, rows, updates):
    value[rows] = updates


_register_scatter("ResourceScatterAdd", "+=", _add)
_register_scatter("ResourceScatterSub", "-=", _sub)
_register_scatter("ResourceScatterUpdate", "=", _assign)


# --- sparse optimizer updates -------------------------------------------------------------------


def _sparse_apply_shape(ic: InferenceContext, tensors: list[str]) -> list[Shape]:
    t = ic.attr("T")
    var = Shape.unknown()
    for i in range(2):
        spec = ic.handle_data(i)
        if spec is None:
            continue
        if spec.dtype != t:
            raise ic.fail(f"variable '{ic.node.inputs[i]}' holds {spec.dtype} but T is {t}")
        try:
            var = var.merge_with(spec.shape)
        except ValueError:
            raise ic.fail(f"variable '{ic.node.inputs[i]}' has shape {spec.shape}, but the other has {var}") from None
    for j, name in enumerate(tensors, start=2):
        shape = ic.shape(j)
        if name == "indices":
            if shape.rank not in (None, 1):
                raise ic.fail(f"indices must be a vector, got shape {shape}")
        elif name == "grad":
            if var.rank is not None and shape.rank is not None:
                if shape.rank != var.rank or not Shape(shape.dims[1:]).is_compatible_with(Shape(var.dims[1:])):
                    raise ic.fail(f"grad of shape {shape} must be [len(indices)] + variable.shape[1:] "
                                  f"(variable {var})")  # fmt: skip
        elif shape.rank not in (None, 0):
            raise ic.fail(f"'{name}' must be a scalar, got shape {shape}")
    return []


def _rounds(xp, ctx, indices):
    """The positions of ``indices`` in rounds in which no row repeats: round r holds each row's
    r-th occurrence, so updating round after round is TF's one-index-at-a-time order."""
    host = ctx.host(indices).astype(np.int64)
    if host.size == 0:
        return []
    order = np.argsort(host, kind="stable")
    sorted_rows = host[order]
    start = np.r_[0, np.flatnonzero(np.diff(sorted_rows)) + 1]
    rank = np.arange(host.size) - np.repeat(start, np.diff(np.r_[start, host.size]))
    occurrence = np.empty_like(rank)
    occurrence[order] = rank
    if occurrence.max() == 0:
        return [(indices, None)]
    return [(xp.asarray(host[occurrence == r]), xp.asarray(np.flatnonzero(occurrence == r)))
            for r in range(int(occurrence.max()) + 1)]  # fmt: skip


def _register_sparse_apply(op: str, tensors: list[str], extra_attr: str, doc: str):
    register_op(
        op,
        inputs=["var: resource", "accum: resource"] + [f"{t}: {'Tindices' if t == 'indices' else 'T'}" for t in tensors],
        attrs=["T: {numeric}", "Tindices: {int32, int64}", "use_locking: bool = false", extra_attr],
        stateful=True,
        shape=lambda ic: _sparse_apply_shape(ic, tensors),
        doc=doc,
    )

    def deco(update):
        @kernel(op, T=dtypes.FLOATING)
        def _apply(ctx, var_h, accum_h, *args):
            named = dict(zip(tensors, args))
            grad, indices = named["grad"], named["indices"]
            var = _initialized(ctx, var_h, "updated by {op}", dtype_attr="T")
            accum = _initialized(ctx, accum_h, "updated by {op}", dtype_attr="T")
            for name, v in named.items():
                if name not in ("grad", "indices") and v.ndim:
                    raise ctx.fail(f"'{name}' must be a scalar, got shape {list(v.shape)}")
            if indices.ndim != 1:
                raise ctx.fail(f"indices must be a vector, got shape {list(indices.shape)}")
            locks = sorted({id(v): v for v in (var, accum)}.values(), key=lambda v: v.name)
            for v in locks:
                v.lock.acquire()
            try:
                shape = var.value.shape
                if accum.value.shape != shape:
                    raise ctx.fail(f"slot variable '{accum.name}' has shape {list(accum.value.shape)}, but variable "
                                   f"'{var.name}' has shape {list(shape)}")  # fmt: skip
                if grad.shape != (indices.shape[0],) + shape[1:]:
                    raise ctx.fail(f"grad of shape {list(grad.shape)} must be [len(indices)] + variable.shape[1:] "
                                   f"= {[indices.shape[0], *shape[1:]]}")  # fmt: skip
                _check_indices(ctx, indices, shape[0])
                w, a = writable_value(var), writable_value(accum)
                for rows, where in _rounds(ctx.xp, ctx, indices):
                    g = grad if where is None else grad[where]
                    update(ctx.xp, ctx.attrs, w, a, rows, g, named)
                var.value, accum.value = w, a
            finally:
                for v in reversed(locks):
                    v.lock.release()

        return update

    return deco


@_register_sparse_apply(
    "ResourceSparseApplyAdagradV2",
    ["lr", "epsilon", "grad", "indices"],
    "update_slots: bool = true",
    "For each i: accum[indices[i]] += grad[i]^2 (when update_slots); var[indices[i]] -= lr * grad[i] / "
    "(sqrt(accum[indices[i]]) + epsilon).",
)
def _sparse_adagrad(xp, attrs, var, accum, rows, g, s):
    a = accum[rows]
    if attrs["update_slots"]:
        a += g * g
        accum[rows] = a
    var[rows] -= g * s["lr"] / (xp.sqrt(a) + s["epsilon"])


@_register_sparse_apply(
    "ResourceSparseApplyMomentum",
    ["lr", "grad", "indices", "momentum"],
    "use_nesterov: bool = false",
    "For each i, row r = indices[i]: accum[r] = accum[r] * momentum + grad[i]; var[r] -= lr * accum[r] "
    "(with use_nesterov: var[r] -= lr * grad[i] + lr * momentum * accum[r]).",
)
def _sparse_momentum(xp, attrs, var, accum, rows, g, s):
    a = accum[rows] * s["momentum"] + g
    accum[rows] = a
    var[rows] -= g * s["lr"] + a * s["momentum"] * s["lr"] if attrs["use_nesterov"] else a * s["lr"]


@_register_sparse_apply(
    "ResourceSparseApplyKerasMomentum",
    ["lr", "grad", "indices", "momentum"],
    "use_nesterov: bool = false",
    "For each i, row r = indices[i]: accum[r] = accum[r] * momentum - lr * grad[i]; var[r] += accum[r] "
    "(with use_nesterov: var[r] += accum[r] * momentum - lr * grad[i]).",
)
def _sparse_keras_momentum(xp, attrs, var, accum, rows, g, s):
    a = accum[rows] * s["momentum"] - g * s["lr"]
    accum[rows] = a
    var[rows] += a * s["momentum"] - g * s["lr"] if attrs["use_nesterov"] else a
