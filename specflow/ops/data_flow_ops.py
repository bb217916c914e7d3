"""Queue ops (whitepaper 4.6), with TensorFlow's names and attrs: FIFOQueueV2 and
RandomShuffleQueueV2 create a queue (see :mod:`specflow.runtime.queues`) and return its handle;
the other ops act on the queue through the handle.

Kernels run on the CPU only (as TF's do); the placer keeps each op with its queue through the
resource edge. Enqueue, dequeue and close may have to wait, so their kernels are asynchronous
(like ``_Recv``): they return at once and call ``done`` when the queue serves them. A waiting op
gives up when the step is aborted (any failure elsewhere, or a Session.run timeout) or when its
``timeout_ms`` (if >= 0) passes, so no step hangs on a queue.

Statically a queue handle is a scalar whose handle data (:class:`QueueHandleSpec`) lists the
component dtypes and shapes, so dequeue outputs get precise shapes and enqueues are checked.

TF1's TensorArray ops are in ``tensor_array_v3_ops.py``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from specflow.graph import dtypes
from specflow.graph.shapes import Shape, as_shape
from specflow.ops.inference import InferenceContext, no_outputs, scalar_shape
from specflow.ops.random_ops import _generator
from specflow.ops.registry import KernelContext, TensorSpec, kernel, register_op
from specflow.ops.runtime_ops import async_kernel
from specflow.ops.state_ops import _handle, _resources
from specflow.runtime.queues import FIFOQueue, QueueBase, RandomShuffleQueue
from specflow.runtime.resources import ResourceHandle

_CPU = ("CPU",)
_QUEUE_ATTRS = [
    "component_types: list(type) >= 1",
    "shapes: list(shape) = []",
    "capacity: int = -1",
    "container: string = ''",
    "shared_name: string = ''",
]
_TIMEOUT = "timeout_ms: int = -1"


@dataclass(frozen=True)
class QueueHandleSpec(TensorSpec):
    """Handle data of a queue handle: the dtype and shape of each component of an element."""

    components: tuple[TensorSpec, ...] = ()


# --- creating queues ----------------------------------------------------------------------------


def _queue_handle_shape(ic: InferenceContext) -> list[Shape]:
    types, shapes = ic.attr("component_types"), [as_shape(s) for s in ic.attr("shapes")]
    if shapes and len(shapes) != len(types):
        raise ic.fail(f"{len(types)} component types but {len(shapes)} shapes (give one per component, or none)")
    for s in shapes:
        if not s.is_fully_defined:
            raise ic.fail(f"queue component shapes must be fully defined, got {s}")
    comps = tuple(TensorSpec(t, shapes[i] if shapes else Shape.unknown()) for i, t in enumerate(types))
    ic.output_handle_data[0] = QueueHandleSpec(dtypes.resource, Shape.scalar(), comps)
    return [Shape.scalar()]


def _create_queue(ctx: KernelContext, cls: type[QueueBase], **extra) -> ResourceHandle:
    a = ctx.attrs
    types, shapes, capacity = a["component_types"], [as_shape(s) for s in a["shapes"]], a["capacity"]
    container, name = a["container"], a["shared_name"] or ctx.node.name
    queue = _resources(ctx).lookup_or_create(
        container, name, lambda: cls(name, types, shapes, capacity, **{k: f() for k, f in extra.items()})
    )
    if not isinstance(queue, cls):
        raise ctx.fail(f"resource '{name}' is a {type(queue).__name__}, not a {cls.kind}")
    mismatch = queue.matches(types, shapes, capacity)
    if mismatch is not None:
        raise ctx.fail(f"the shared queue '{name}' {mismatch}")
    return ResourceHandle(ctx.device, container, name)


register_op(
    "FIFOQueueV2",
    outputs=["handle: resource"],
    attrs=_QUEUE_ATTRS,
    stateful=True,
    shape=_queue_handle_shape,
    doc=(
        "A queue of tuples of tensors (one per component type) that dequeues in arrival order. "
        "`capacity` < 0 means unbounded; without `shapes` only one element may be dequeued at a time."
    ),
)


@kernel("FIFOQueueV2", devices=_CPU)
def _fifo_queue(ctx):
    return _create_queue(ctx, FIFOQueue)


register_op(
    "RandomShuffleQueueV2",
    outputs=["handle: resource"],
    attrs=[*_QUEUE_ATTRS, "min_after_dequeue: int = 0", "seed: int = 0", "seed2: int = 0"],
    stateful=True,
    shape=_queue_handle_shape,
    doc=(
        "A queue that dequeues a random element (seeded by seed/seed2, or the graph seed). Until it "
        "is closed, a dequeue waits unless `min_after_dequeue` elements would remain."
    ),
)


@kernel("RandomShuffleQueueV2", devices=_CPU)
def _random_shuffle_queue(ctx):
    return _create_queue(
        ctx,
        RandomShuffleQueue,
        min_after_dequeue=lambda: ctx.attrs["min_after_dequeue"],
        rng=lambda: _generator(ctx),
    )


# --- waiting without a thread -----------------------------------------------------------------


def _queue(ctx: KernelContext, handle) -> QueueBase:
    h = _handle(ctx, handle)
    queue = _resources(ctx).lookup(h.container, h.name)
    if not isinstance(queue, QueueBase):
        raise ctx.fail(f"resource '{h.name}' is a {type(queue).__name__}, not a queue")
    return queue


def _wait(ctx: KernelContext, done, queue: QueueBase, start, outputs=lambda value: ()) -> None:
    """Run a queue operation that may wait: ``start(callback)`` submits it and returns its Attempt.
    ``done`` is called exactly once, by whichever comes first: the queue serving the attempt, the
    step's abort, or ``timeout_ms``."""
    rv = (ctx.extras or {}).get("rendezvous")
    timeout_ms = ctx.attrs.get("timeout_ms", -1)
    timer = None

    def on_abort(error: BaseException) -> None:
        queue.cancel(attempt, error)

    def finish(value, error) -> None:
        if timer is not None:
            timer.cancel()
        if rv is not None:
            rv.remove_abort_listener(on_abort)
        if error is not None:
            done(error=error)
        else:
            done(outputs(value))

    attempt = start(finish)
    if attempt is None or attempt.finished:
        return
    if rv is not None:
        rv.add_abort_listener(on_abort)
    if timeout_ms >= 0:
        error = ctx.fail(f"timed out after {timeout_ms} ms waiting on {queue.kind} '{queue.name}'")
        timer = threading.Timer(timeout_ms / 1000.0, queue.cancel, (attempt, error))
        timer.daemon = True
        timer.start()


# --- enqueue ------------------------------------------------------------------------------------


def _enqueue_shape(many: bool):
    def fn(ic: InferenceContext) -> list[Shape]:
        spec = ic.handle_data(0)
        comps = spec.components if isinstance(spec, QueueHandleSpec) else None
        if comps is None:
            return []
        got = list(zip(ic.input_dtypes[1:], ic.input_shapes[1:]))
        if len(got) != len(comps):
            raise ic.fail(f"the queue takes {len(comps)} component(s), got {len(got)}")
        for i, ((dt, shape), want) in enumerate(zip(got, comps)):
            if dt != want.dtype:
                raise ic.fail(f"component {i} of the queue is {want.dtype}, got {dt}")
            if many:
                if shape.rank == 0:
                    raise ic.fail(f"component {i} needs a batch dimension to enqueue many; got a scalar")
                shape = Shape(shape.dims[1:]) if shape.rank is not None else shape
            if not shape.is_compatible_with(want.shape):
                raise ic.fail(f"component {i} of the queue has shape {want.shape}, got {shape}")
        return []

    return fn


def _register_enqueue(op: str, many: bool, doc: str) -> None:
    register_op(
        op,
        inputs=["handle: resource", "components: Tcomponents"],
        attrs=["Tcomponents: list(type) >= 1", _TIMEOUT],
        stateful=True,
        shape=_enqueue_shape(many),
        doc=doc,
    )

    @async_kernel(op, devices=_CPU)
    def _enqueue(ctx, done, handle, *components):
        queue = _queue(ctx, handle)
        queue.check_components(components, many)
        submit = queue.enqueue_many if many else queue.enqueue
        _wait(ctx, done, queue, lambda cb: submit(components, cb))


_register_enqueue(
    "QueueEnqueueV2", False, "Adds one element (a tuple of tensors); waits while the queue is full."
)
_register_enqueue(
    "QueueEnqueueManyV2",
    True,
    "Adds the slices of `components` along dimension 0 as separate elements, in order, waiting for room.",
)


# --- dequeue ------------------------------------------------------------------------------------


def _component_shapes(ic: InferenceContext) -> list[Shape]:
    spec = ic.handle_data(0)
    n = len(ic.attr("component_types"))
    if isinstance(spec, QueueHandleSpec) and len(spec.components) == n:
        for i, (want, got) in enumerate(zip(ic.attr("component_types"), spec.components)):
            if want != got.dtype:
                raise ic.fail(f"component {i} of the queue is {got.dtype}, but this op expects {want}")
        return [c.shape for c in spec.components]
    return [Shape.unknown()] * n


def _dequeue_many_shape(up_to: bool):
    def fn(ic: InferenceContext) -> list[Shape]:
        n = ic.value(1)
        if n is not None and int(n) < 0:
            raise ic.fail(f"n must be >= 0, got {int(n)}")
        # DequeueUpTo may return fewer than n at the end of data.
        batch = Shape([None if up_to or n is None else int(n)])
        return [batch.concatenate(s) for s in _component_shapes(ic)]

    return fn


register_op(
    "QueueDequeueV2",
    inputs=["handle: resource"],
    outputs=["components: component_types"],
    attrs=["component_types: list(type) >= 1", _TIMEOUT],
    stateful=True,
    shape=_component_shapes,
    doc="Removes one element; waits while the queue is empty. OutOfRangeError once closed and empty.",
)


@async_kernel("QueueDequeueV2", devices=_CPU)
def _dequeue(ctx, done, handle):
    queue = _queue(ctx, handle)
    _check_types(ctx, queue)
    _wait(ctx, done, queue, queue.dequeue, outputs=tuple)


def _register_dequeue_many(op: str, up_to: bool, doc: str) -> None:
    register_op(
        op,
        inputs=["handle: resource", "n: int32"],
        outputs=["components: component_types"],
        attrs=["component_types: list(type) >= 1", _TIMEOUT],
        stateful=True,
        shape=_dequeue_many_shape(up_to),
        doc=doc,
    )

    @async_kernel(op, devices=_CPU)
    def _dequeue_many(ctx, done, handle, n):
        queue = _queue(ctx, handle)
        _check_types(ctx, queue)
        count = int(ctx.host(n))
        if count < 0:
            raise ctx.fail(f"n must be >= 0, got {count}")
        _wait(ctx, done, queue, lambda cb: queue.dequeue_many(count, cb, allow_smaller=up_to), outputs=tuple)


_register_dequeue_many(
    "QueueDequeueManyV2",
    False,
    "Removes `n` elements, stacked along a new dimension 0; waits for them. Once the queue is closed "
    "with fewer than `n` left: OutOfRangeError.",
)
_register_dequeue_many(
    "QueueDequeueUpToV2",
    True,
    "As QueueDequeueManyV2, but once the queue is closed it returns the (fewer than `n`) elements left; "
    "OutOfRangeError only when none are.",
)


def _check_types(ctx: KernelContext, queue: QueueBase) -> None:
    want = tuple(ctx.attrs["component_types"])
    if want != queue.dtypes:
        names = ", ".join(d.name for d in queue.dtypes)
        raise ctx.fail(f"{queue.kind} '{queue.name}' holds [{names}], but this op expects {[d.name for d in want]}")


# --- close, size, is_closed ---------------------------------------------------------------------


register_op(
    "QueueCloseV2",
    inputs=["handle: resource"],
    attrs=["cancel_pending_enqueues: bool = false"],
    stateful=True,
    shape=no_outputs,
    doc=(
        "Closes the queue: later enqueues fail; dequeues drain what is left, then fail with "
        "OutOfRangeError. Waits for pending enqueues unless `cancel_pending_enqueues`, which fails them."
    ),
)


@async_kernel("QueueCloseV2", devices=_CPU)
def _close(ctx, done, handle):
    queue = _queue(ctx, handle)
    cancel = ctx.attrs["cancel_pending_enqueues"]
    _wait(ctx, done, queue, lambda cb: queue.close(cb, cancel_pending_enqueues=cancel))


register_op(
    "QueueSizeV2",
    inputs=["handle: resource"],
    outputs=["size: int32"],
    stateful=True,
    shape=scalar_shape,
    doc="The number of elements in the queue.",
)


@kernel("QueueSizeV2", devices=_CPU)
def _size(ctx, handle):
    return np.asarray(_queue(ctx, handle).size(), dtype=np.int32)


register_op(
    "QueueIsClosedV2",
    inputs=["handle: resource"],
    outputs=["is_closed: bool"],
    stateful=True,
    shape=scalar_shape,
    doc="Whether the queue is closed.",
)


@kernel("QueueIsClosedV2", devices=_CPU)
def _is_closed(ctx, handle):
    return np.asarray(_queue(ctx, handle).closed)
