"""Resource-variable ops, as in TensorFlow 2: a VarHandleOp names a variable, other ops read and
update it through the handle.

A variable lives in its device's ResourceMgr keyed by (container, name), so it persists across
steps and executor rebuilds. A read hands out the stored array itself, without a copy, so a value
already handed out must never change behind its holder's back: an update (AssignAdd, AssignSub,
the optimizers' ResourceApply*) changes the stored array in place only when nothing but the
variable holds it (:func:`writable_value`: its reference count is at the baseline, TF's "forward
the buffer when its refcount is one"), and otherwise stores a new array. Assign always stores a
copy of its input. Kernels that update variables must keep this rule.

Statically, a resource tensor is a scalar; its shape function also records the variable's dtype
and shape as "handle data" (TF's term), so ReadVariableOp and ResourceGather get precise shapes.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from specflow.errors import GraphError, StepLimitReached
from specflow.graph import dtypes
from specflow.graph.dtypes import as_dtype
from specflow.graph.graph_def import parse_input
from specflow.graph.shapes import Shape, as_shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext, no_outputs, scalar_shape
from specflow.ops.registry import KernelContext, TensorSpec, gradient, kernel, not_differentiable, register_op
from specflow.ops.slice_ops import ShapeOf, concat_vectors, gather_grad
from specflow.runtime.resources import ResourceHandle, ResourceMgr, Variable

# --- shared kernel helpers ----------------------------------------------------------------------


def _resources(ctx: KernelContext) -> ResourceMgr:
    if ctx.resources is None:
        raise ctx.fail(
            f"internal error: {ctx.node.op} needs its device's resource manager, but the kernel "
            "context has none (state ops only run inside a session)"
        )
    return ctx.resources


def _handle(ctx: KernelContext, resource) -> ResourceHandle:
    # An executor may carry the handle as a 0-d object array; unwrap it.
    if isinstance(resource, np.ndarray) and resource.dtype == object and resource.ndim == 0:
        resource = resource.item()
    if not isinstance(resource, ResourceHandle):
        raise ctx.fail(f"internal error: input 'resource' is not a resource handle (got {type(resource).__name__})")
    return resource


def _as_variable(ctx: KernelContext, handle: ResourceHandle, found) -> Variable | None:
    if found is not None and not isinstance(found, Variable):
        raise ctx.fail(f"resource '{handle.name}' is a {type(found).__name__}, not a variable")
    return found


def _check_dtype(ctx: KernelContext, var: Variable, dtype, what: str) -> None:
    if var.dtype != dtype:
        raise ctx.fail(f"variable '{var.name}' holds {var.dtype} but {ctx.node.op} {what} {dtype}")


def _initialized(ctx: KernelContext, resource, verb: str, dtype_attr: str | None = "dtype") -> Variable:
    """The initialized variable behind ``resource``, with the op's ``dtype_attr`` attr checked (if any);
    ``verb`` (``{op}`` stands for the op) says what happened too early in the error. Every
    variable op calls this each step, so the common case costs a few attribute reads: the
    handle remembers its variable (``ResourceMgr.resolve``) and DTypes are singletons."""
    handle = resource if type(resource) is ResourceHandle else _handle(ctx, resource)
    mgr = ctx.resources if ctx.resources is not None else _resources(ctx)
    found = handle._found  # ResourceMgr.resolve's fast path, inlined (every variable op, every step)
    var = found[1] if found is not None and found[0] is mgr.epoch else mgr.resolve(handle)
    if type(var) is not Variable:
        var = _as_variable(ctx, handle, var)
    if var is None or var.value is None:
        raise ctx.fail(
            f"variable '{handle.name}' was {verb.format(op=ctx.node.op)} before it was initialized "
            "(run the 'init' target first, or restore a checkpoint)"
        )
    if dtype_attr is not None and var.dtype is not ctx.attrs[dtype_attr]:
        _check_dtype(ctx, var, ctx.attrs[dtype_attr], "uses dtype")
    return var


def writable_value(var: Variable):
    """The array to update ``var`` through, under its lock: the stored one when no one else
    holds it (no reader kept it, no view of it exists, it owns its memory), else a copy, which
    the caller stores back."""
    value = var.value
    if var.narrow_to is not None:  # bfloat16: updated in float32, rounded once when stored back
        return value.astype(np.float32)
    # Two references are the variable's own and this local; getrefcount adds its argument.
    if sys.getrefcount(value) == 3 and value.base is None and getattr(value.flags, "writeable", True):
        return value
    return value.copy()


def _check_value(ctx: KernelContext, var: Variable, value) -> None:
    if value.dtype.type is var.dtype.np_type:  # the common case, without as_dtype's search
        return
    got = as_dtype(value.dtype)
    if var.narrow_to is not None and got == dtypes.float32:  # a bfloat16 value the kernel got widened
        return
    if got != var.dtype:
        raise ctx.fail(f"cannot assign a {got} value to variable '{var.name}' of dtype {var.dtype}")


# --- VarHandleOp ------------------------------------------------------------------------------


def _var_handle_shape(ic: InferenceContext) -> list[Shape]:
    ic.output_handle_data[0] = TensorSpec(ic.attr("dtype"), as_shape(ic.attr("shape")))
    return [Shape.scalar()]


register_op(
    "VarHandleOp",
    outputs=["resource: resource"],
    attrs=["container: string = ''", "shared_name: string = ''", "dtype: type", "shape: shape"],
    stateful=True,
    shape=_var_handle_shape,
    doc="A handle to the variable `shared_name` (default: the node's name) in `container`.",
)


@kernel("VarHandleOp")
def _var_handle(ctx):
    # The handle is the same every step: it is built once per node, executor (its attrs) and
    # device (its resource manager), and handed out again while the variable it was checked
    # against is still the registered one. After a DestroyResourceOp the next step looks the
    # variable up again (re-creating it, and checking a re-created one), as every step used to.
    # The state is the node name's, shared by every executor holding a node of that name (a ps
    # task's update and read partitions, several sessions' pieces): one entry per executor's
    # attrs, or they would evict each other every step.
    mgr = ctx.resources
    state = ctx.state
    cached = state.get("handle")  # the last executor's (one executor: every step)
    if cached is None or cached[0] is not ctx.attrs:
        handles = state.get("handles")  # the entry keeps its attrs alive: the id is not reused
        cached = handles.get(id(ctx.attrs)) if handles is not None else None
        if cached is not None:
            state["handle"] = cached
    if cached is not None and cached[0] is ctx.attrs and cached[1] is mgr:
        found = cached[2]._found  # ResourceMgr.resolve's fast path, inlined
        if (found[1] if found is not None and found[0] is mgr.epoch else mgr.resolve(cached[2])) is cached[3]:
            return cached[2]
    dtype, shape = ctx.attrs["dtype"], as_shape(ctx.attrs["shape"])
    container = ctx.attrs["container"]
    name = ctx.attrs["shared_name"] or ctx.node.name
    handle = ResourceHandle(ctx.device, container, name, dtype, shape)
    mgr = _resources(ctx)
    var = _as_variable(ctx, handle, mgr.lookup_or_create(container, name, lambda: Variable(name, dtype, shape)))
    if var.dtype != dtype or not var.shape.is_compatible_with(shape):
        raise ctx.fail(
            f"variable '{name}' already exists as {var.dtype}{var.shape}; "
            f"this handle declares {dtype}{shape}"
        )
    if mgr.resolve(handle) is var:  # still registered (no DestroyResourceOp in between)
        handles = state.setdefault("handles", {})
        if len(handles) >= 64:  # executors come and go with sessions: keep the recent ones
            handles.clear()
        handles[id(ctx.attrs)] = state["handle"] = (ctx.attrs, mgr, handle, var)
    return handle


not_differentiable("VarHandleOp")


# --- static checks shared by the ops that take a handle ----------------------------------------


def _handle_spec(ic: InferenceContext) -> TensorSpec | None:
    """The variable's (dtype, shape) when known, with the op's ``dtype`` attr checked."""
    spec = ic.handle_data(0)
    if spec is not None and spec.dtype != ic.attr("dtype"):
        raise ic.fail(f"the variable holds {spec.dtype} but this op uses dtype {ic.attr('dtype')}")
    return spec


def _read_shape(ic: InferenceContext) -> list[Shape]:
    spec = _handle_spec(ic)
    return [spec.shape if spec is not None else Shape.unknown()]


def _assign_shape(ic: InferenceContext) -> list[Shape]:
    spec = _handle_spec(ic)
    if spec is not None and not spec.shape.is_compatible_with(ic.shape(1)):
        raise ic.fail(f"cannot assign a value of shape {ic.shape(1)} to a variable of shape {spec.shape}")
    return []


# --- ReadVariableOp / AssignVariableOp --------------------------------------------------------


register_op(
    "ReadVariableOp",
    inputs=["resource: resource"],
    outputs=["value: dtype"],
    attrs=["dtype: type"],
    stateful=True,
    shape=_read_shape,
    doc="The current value of a variable (a snapshot: later updates do not change it).",
)


@kernel("ReadVariableOp")
def _read_variable(ctx, resource):
    # _initialized's common case inline (every read, every step): the variable this handle
    # resolved to, still the registered one, initialized and of the op's dtype.
    found = resource._found if type(resource) is ResourceHandle else None
    var = found[1] if found is not None and found[0] is getattr(ctx.resources, "epoch", None) else None
    if type(var) is not Variable or var.value is None or var.dtype is not ctx.attrs["dtype"]:
        var = _initialized(ctx, resource, "read")
    with var.lock:
        return var.value  # handed out, it is never updated in place (writable_value): no copy needed


@gradient("ReadVariableOp")
def _read_variable_grad(b, node, dys):
    # The gradient "with respect to the variable" flows to its handle unchanged.
    return [dys[0]]


def _variable_shape_shape(ic: InferenceContext) -> list[Shape]:
    spec = ic.handle_data(0)  # (VariableShape has no dtype attr to check against)
    return [Shape([spec.shape.rank]) if spec is not None and spec.shape.rank is not None else Shape([None])]


register_op(
    "VariableShape",
    inputs=["input: resource"],
    outputs=["output: out_type"],
    attrs=["out_type: {int32, int64} = int32"],
    stateful=True,
    shape=_variable_shape_shape,
    doc="The shape of a variable's current value (TF's gradient of a variable read inside a loop uses it).",
)


@kernel("VariableShape")
def _variable_shape(ctx, resource):
    var = _initialized(ctx, resource, "read", dtype_attr=None)
    with var.lock:
        return np.asarray(var.value.shape, dtype=ctx.attrs["out_type"].numpy)


not_differentiable("VariableShape")


register_op(
    "AssignVariableOp",
    inputs=["resource: resource", "value: dtype"],
    attrs=["dtype: type"],
    stateful=True,
    shape=_assign_shape,
    doc="Sets a variable to `value` (whose shape must fit the variable's declared shape).",
)


@kernel("AssignVariableOp")
def _assign_variable(ctx, resource, value):
    handle = _handle(ctx, resource)
    dtype = ctx.attrs["dtype"]
    # Assigning after DestroyResourceOp re-creates the variable, as TF's kernel does.
    found = _resources(ctx).lookup_or_create(
        handle.container,
        handle.name,
        lambda: Variable(handle.name, handle.dtype or dtype, as_shape(handle.shape)),
    )
    var = _as_variable(ctx, handle, found)
    _check_dtype(ctx, var, dtype, "assigns")
    _check_value(ctx, var, value)
    if not var.shape.is_compatible_with(Shape(value.shape)):
        raise ctx.fail(
            f"cannot assign a value of shape {list(value.shape)} to variable '{var.name}' of shape {var.shape}"
        )
    new = ctx.xp.array(value, copy=True)  # the caller keeps its array; the variable owns this one
    with var.lock:
        var.value = new


not_differentiable("AssignVariableOp")


# --- AssignAddVariableOp / AssignSubVariableOp ------------------------------------------------


def _register_update(op: str, ufunc: str, doc: str) -> None:
    register_op(
        op,
        inputs=["resource: resource", "value: dtype"],
        attrs=["dtype: type"],
        stateful=True,
        shape=_assign_shape,
        doc=doc,
    )

    @kernel(op, dtype=dtypes.NUMERIC)  # adding needs numbers; the op allows any type, as TF's
    def _update(ctx, resource, value):
        var = _initialized(ctx, resource, "updated")
        _check_value(ctx, var, value)
        with var.lock:
            if var.value.shape != value.shape:
                raise ctx.fail(
                    f"cannot update variable '{var.name}' of shape {list(var.value.shape)} with a value "
                    f"of shape {list(value.shape)}; the shapes must be equal"
                )
            target = writable_value(var)
            getattr(ctx.xp, ufunc)(target, value, out=target)
            var.value = target


_register_update("AssignAddVariableOp", "add", "Adds `value` to a variable.")
_register_update("AssignSubVariableOp", "subtract", "Subtracts `value` from a variable.")
not_differentiable("AssignAddVariableOp", "AssignSubVariableOp")


# --- _IncrementBelow: async training's admission of an update -----------------------------------

register_op(
    "_IncrementBelow",
    inputs=["resource: resource", "limit: dtype"],
    attrs=["dtype: {int32, int64}"],
    stateful=True,
    shape=no_outputs,
    doc="Adds one to an integer variable (the global step) if its value is below `limit`, else fails "
    "with StepLimitReached and changes nothing: test and increment are one step under the variable's lock, "
    "so of concurrent updates exactly `limit` minus the start get in. specflow's own (async training's "
    "updates wait on it: one arriving after the run's last step is dropped whole).",
)


@kernel("_IncrementBelow", dtype=(dtypes.int32, dtypes.int64))
def _increment_below(ctx, resource, limit):
    var = _initialized(ctx, resource, "counted")
    with var.lock:
        value = var.value
        if int(value) >= int(limit):
            raise StepLimitReached(f"variable '{var.name}' is at {int(value)}, the last step {int(limit)}: "
                                   "this update arrived after the run's last step and is dropped")  # fmt: skip
        var.value = value + 1  # a new array: a value handed out (a read) never changes


not_differentiable("_IncrementBelow")


# --- VarIsInitializedOp / DestroyResourceOp ---------------------------------------------------


register_op(
    "VarIsInitializedOp",
    inputs=["resource: resource"],
    outputs=["is_initialized: bool"],
    stateful=True,
    shape=scalar_shape,
    doc="Whether the variable exists and has been assigned a value.",
)


@kernel("VarIsInitializedOp")
def _var_is_initialized(ctx, resource):
    handle = _handle(ctx, resource)
    var = _as_variable(ctx, handle, _resources(ctx).get(handle.container, handle.name))
    return ctx.xp.asarray(var is not None and var.initialized)


register_op(
    "DestroyResourceOp",
    inputs=["resource: resource"],
    attrs=["ignore_lookup_error: bool = true"],
    stateful=True,
    shape=no_outputs,
    doc="Deletes the resource behind the handle (an error if it is missing, unless ignored).",
)


@kernel("DestroyResourceOp")
def _destroy_resource(ctx, resource):
    handle = _handle(ctx, resource)
    resources = _resources(ctx)
    if resources.get(handle.container, handle.name) is None and not ctx.attrs["ignore_lookup_error"]:
        raise ctx.fail(f"resource '{handle.name}' does not exist on {ctx.device}, so it cannot be destroyed")
    resources.delete(handle.container, handle.name)


not_differentiable("VarIsInitializedOp", "DestroyResourceOp")


# --- ResourceGather ---------------------------------------------------------------------------


def _gather_shape(ic: InferenceContext) -> list[Shape]:
    spec = _handle_spec(ic)
    params = spec.shape if spec is not None else Shape.unknown()
    indices = ic.shape(1)
    if params.rank is None or indices.rank is None:
        return [Shape.unknown()]
    b = _batch_dims(ic.attr("batch_dims"), params.rank, indices.rank, ic.fail)
    try:
        batch = Shape(params.dims[:b]).merge_with(Shape(indices.dims[:b]))
    except ValueError:
        raise ic.fail(f"the batch dimensions of the variable {params} and of indices {indices} differ") from None
    return [batch.concatenate(Shape(indices.dims[b:])).concatenate(Shape(params.dims[b + 1 :]))]


def _batch_dims(batch_dims: int, params_rank: int, indices_rank: int, fail) -> int:
    """``batch_dims`` made non-negative and checked against both ranks (TF's rules)."""
    b = batch_dims + indices_rank if batch_dims < 0 else batch_dims
    if not 0 <= b <= indices_rank:
        raise fail(f"batch_dims={batch_dims} is out of range for indices of rank {indices_rank}")
    if b >= params_rank:
        raise fail(f"batch_dims={batch_dims} must be less than the variable's rank {params_rank}")
    return b


register_op(
    "ResourceGather",
    inputs=["resource: resource", "indices: Tindices"],
    outputs=["output: dtype"],
    attrs=["batch_dims: int = 0", "validate_indices: bool = true", "dtype: type", "Tindices: {int32, int64}"],
    stateful=True,
    shape=_gather_shape,
    doc=(
        "Rows of a variable selected by `indices` (embedding lookup): output shape is "
        "indices.shape + variable.shape[1:] (with `batch_dims` leading dimensions shared). "
        "Indices are always validated; `validate_indices` is kept for TensorFlow compatibility."
    ),
)


@kernel("ResourceGather")
def _resource_gather(ctx, resource, indices):
    var = _initialized(ctx, resource, "read")
    xp = ctx.xp
    with var.lock:  # the rows are copied out under the lock, so no update can tear them
        params = var.value
        b = _batch_dims(ctx.attrs["batch_dims"], params.ndim, indices.ndim, ctx.fail)
        _check_indices(ctx, indices, params.shape[b])
        if b == 0:
            return xp.take(params, indices, axis=0)
        batch = tuple(params.shape[:b])
        if tuple(indices.shape[:b]) != batch:
            raise ctx.fail(
                f"the batch dimensions of variable '{var.name}' {list(params.shape)} and of indices "
                f"{list(indices.shape)} differ (batch_dims={b})"
            )
        # Flatten the batch dims into one, gather row-wise with advanced indexing, restore.
        nb = math.prod(batch)
        flat_params = params.reshape((nb,) + tuple(params.shape[b:]))
        flat_indices = indices.reshape((nb,) + tuple(indices.shape[b:]))
        rows = xp.arange(nb).reshape((nb,) + (1,) * (flat_indices.ndim - 1))
        out = flat_params[rows, flat_indices]
        return out.reshape(batch + tuple(indices.shape[b:]) + tuple(params.shape[b + 1 :]))


@gradient("ResourceGather")
def _resource_gather_grad(b, node, dys):
    # Sparse for a plain gather (gradients() makes it dense unless the caller takes it sparse);
    # dense, of the variable's shape, with batch dims.
    handle, indices = node.data_inputs
    ref = parse_input(handle)
    spec = b.inferencer.handle_data.get(ref.node, {}).get(ref.index)
    static = spec.shape if spec is not None else Shape.unknown()
    batch_dims, ri = node.attrs["batch_dims"], b.spec(indices).shape.rank
    if batch_dims < 0 and ri is not None:
        batch_dims += ri
    if static.rank is None or batch_dims < 0:
        raise GraphError("the gradient of ResourceGather needs a variable of known rank (and indices of "
                         "known rank for a negative batch_dims)", node=node.name, location=node.location)  # fmt: skip

    def run_time_shape():  # only for dims the variable does not declare
        return gu.emit(b, "Shape", gu.emit(b, "ReadVariableOp", handle, dtype=node.attrs["dtype"]))

    shape = ShapeOf(b, static, run_time_shape)
    if batch_dims == 0 and static.rank is not None:
        # Sparse (TF's IndexedSlices): the gathered rows' gradients and where they go.
        values = gu.emit(b, "Reshape", dys[0], concat_vectors(b, [gu.const(b, [-1], "int32"), shape.vector(1, static.rank)]))
        ids = gu.emit(b, "Reshape", indices, gu.const(b, [-1], "int32"))
        return [gu.IndexedSlices(b, values, ids, lambda: shape.size(0, 1)), None]
    return [gather_grad(b, node, dys[0], indices, shape, batch_dims, batch_dims), None]


def _check_indices(ctx: KernelContext, indices, n: int) -> None:
    """Out-of-range indices are an error naming the first one (numpy would wrap negatives)."""
    if indices.size == 0 or (int(indices.min()) >= 0 and int(indices.max()) < n):
        return
    host = ctx.host(indices)
    pos = tuple(int(i) for i in np.argwhere((host < 0) | (host >= n))[0])
    where = "indices[" + ", ".join(map(str, pos)) + "]" if pos else "indices"
    raise ctx.fail(f"{where} = {host[pos]} is not in [0, {n})")
