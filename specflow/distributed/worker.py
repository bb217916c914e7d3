"""A worker task (TensorFlow's WorkerService): one Ray actor, its own OS process.

It holds the task's devices (each with its resource manager, so variables persist across
steps), the graphs the master registered (one Executor per device partition, built once, as the
local Session caches them) and each running step's rendezvous. The master calls:

- ``register_graph(handle, piece)``: partition this task's piece of a signature by device and
  build an executor per partition (cached until deregistered);
- ``run_graph(handle, step_id, args, ...)``: run every partition with one rendezvous; returns the
  fetches this task produced, or the error (the step's rendezvous state is freed at its end);
- ``run_graph_flow(call, *inboxes)``: the same in the dataflow protocol (upstream tasks' held
  sends come in as arguments, this task's come back as extra return values);
- ``step_state(step_id)``: what the master's deadlock watch polls;
- ``deregister_graph(handles)``, ``cleanup_graph(step_id)`` (after an aborted step).

Other tasks call ``deliver`` (a batch of cross-task tensors for a step) and ``abort_step``.
The class is plain Python; ``engine.py`` wraps it with ``ray.remote``.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections import deque
from typing import Any

import numpy as np

from specflow.graph.device_spec import DeviceSpec
from specflow.graph.graph_def import GraphDef
from specflow.runtime.devices import local_devices
from specflow.runtime.executor import CallFrame, Executor
from specflow.runtime.executor_types import UNSET

from .inbox_args import inbox_as_args, inbox_values
from .remote_rendezvous import FLUSH_DELAY_S, RemoteRendezvous, pack_error, resolve_stored, unpack_error
from .replica_loop import ReplicaLoops
from .task_partition import partition_piece, route_of
from .wire import unwire, wire

_DONE_MEMORY = 4096  # finished step ids remembered, so a late message for one is dropped


class TaskWorker:
    def __init__(self, task: str, devices: str | None = None, threads: int | None = None) -> None:
        spec = DeviceSpec.parse(task)
        self.task = task
        self.devices = local_devices(devices or "cpu:1", job=spec.job, task=spec.task, threads=threads)
        self.by_name = {d.name: d for d in self.devices}
        self.kernel_state: dict[str, dict] = {}
        self.graphs: dict[str, list[Executor]] = {}
        # Per handle, its partitions and graph seed; per (handle, feed count), the partitions
        # with inbox-fed receives as arguments, or None where that does not apply (inbox_args.py).
        self.pieces: dict[str, tuple[list, int | None]] = {}
        self.by_args: dict[tuple[str, int], tuple[list[Executor], dict[str, int]] | None] = {}
        self.route: dict[str, str | None] = {}  # receiving device -> its task if not this one
        self.peers: dict[str, Any] = {}
        self.steps: dict[int, RemoteRendezvous] = {}
        self.done: set[int] = set()
        self._done_order: deque[int] = deque()
        self.lock = threading.Lock()
        self._flushes: queue.SimpleQueue = queue.SimpleQueue()
        self.replica_loops = ReplicaLoops(self)
        threading.Thread(target=self._flusher, name="flusher", daemon=True).start()

    def _flush_later(self, rv: RemoteRendezvous) -> None:
        self._flushes.put((time.monotonic() + FLUSH_DELAY_S, rv))

    def _flusher(self) -> None:
        """Send what sat in an outbox for FLUSH_DELAY_S (entries come in deadline order)."""
        while True:
            due, rv = self._flushes.get()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            try:
                rv.flush()
            except Exception:  # a peer gone: the step fails through its own receives
                pass

    # --- set-up ------------------------------------------------------------------------------

    def info(self) -> dict:
        node = ""
        try:
            import ray

            node = ray.get_runtime_context().get_node_id()
        except Exception:  # outside Ray (tests of the class itself)
            pass
        import specflow

        return {"task": self.task, "pid": os.getpid(), "node_id": node,
                "devices": [d.name for d in self.devices], "specflow": specflow.__file__,
                "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS")}  # fmt: skip

    def connect(self, peers: dict[str, Any]) -> None:
        """The other tasks' actor handles (task -> handle)."""
        self.peers = dict(peers)

    def register_graph(self, handle: str, piece: GraphDef, graph_seed: int | None = None,
                       incarnations: dict[str, int] | None = None) -> int:  # fmt: skip
        """This task's piece of a signature (one GraphDef, its nodes on this task's devices):
        partitioned by device here, as the local Session does, one Executor per partition."""
        executors, parts = [], []
        for dev, g in partition_piece(piece, incarnations).partitions.items():
            device = self.by_name.get(dev)
            if device is None:
                raise RuntimeError(f"{self.task} has no device {dev} (it has {', '.join(self.by_name)})")
            executors.append(Executor(g, device, graph_seed=graph_seed, kernel_state=self.kernel_state))
            parts.append((device, g))
            for n in g.nodes:
                if n.op == "_Send":  # a stage's call (T#s) is routed as another task, even this one's
                    t = route_of(n.attrs["recv_device"])
                    self.route[n.attrs["recv_device"]] = None if t == self.task else t
        with self.lock:
            self.graphs[handle] = executors
            self.pieces[handle] = (parts, graph_seed)
            self.by_args = {k: v for k, v in self.by_args.items() if k[0] != handle}
        return len(executors)

    def deregister_graph(self, handles: list[str]) -> None:
        with self.lock:
            for h in handles:
                self.graphs.pop(h, None)
                self.pieces.pop(h, None)
            self.by_args = {k: v for k, v in self.by_args.items() if k[0] in self.graphs}

    def reset(self) -> None:
        """Clear every resource (variables, queues) of this task's devices (TF's Session.Reset)."""
        self.replica_loops.clear()
        for d in self.devices:
            d.resource_mgr.clear()
        self.kernel_state.clear()

    def close(self) -> None:
        with self.lock:
            self.graphs.clear()
            self.pieces.clear()
            self.by_args.clear()
            steps, self.steps = list(self.steps.values()), {}
        for rv in steps:
            rv.abort_from_peer(RuntimeError("the session was closed"))
        for d in self.devices:
            d.shutdown()
            d.resource_mgr.clear()

    # --- steps -------------------------------------------------------------------------------

    def _rendezvous(self, step_id: int, hold: bool = False) -> RemoteRendezvous | None:
        with self.lock:
            rv = self.steps.get(step_id)
            if rv is None and step_id not in self.done:
                rv = self.steps[step_id] = RemoteRendezvous(step_id, self.task, self.route, self.peers,
                                                            later=None if hold else self._flush_later,
                                                            hold=hold)  # fmt: skip
            return rv

    def _finish(self, step_id: int) -> None:
        with self.lock:
            self.steps.pop(step_id, None)
            self.done.add(step_id)
            self._done_order.append(step_id)
            if len(self._done_order) > _DONE_MEMORY:
                self.done.discard(self._done_order.popleft())

    def run_graph(self, handle: str, step_id: int, args: dict[int, Any], n_args: int, n_retvals: int,
                  tasks: list[str]) -> tuple[dict[int, Any], tuple | None, dict[str, int], bool]:  # fmt: skip
        """Run this task's partitions of a step, pushing cross-task tensors to their tasks as it
        goes. Returns (fetches set here by _Retval index, the packed error or None, cross-task
        batches sent, whether the error came from another task)."""
        rv = self._rendezvous(step_id)
        if rv is None:  # cleaned up already: the master gave up on this step
            return {}, pack_error(RuntimeError(f"step {step_id} was cleaned up before it ran on {self.task}")), {}, True
        rv.tasks = tasks
        return self._run(handle, step_id, rv, args, n_args, n_retvals)

    def run_graph_flow(self, call: tuple, *inboxes: list | None, blob: bool = True):
        """RunGraph of a step whose tasks send to each other without a cycle (the master's
        dataflow protocol): ``inboxes`` are the upstream tasks' outboxes for this task (Ray
        resolves them before the call runs, so every receive's value is here before the first
        kernel); what this task sends to another task is held and returned, one value per
        downstream task, for the master to pass on by reference. Returns run_graph's tuple,
        followed by those outboxes (None for each when the step failed here). ``call`` is
        (handle, step_id, args, n_args, n_retvals, downstream): one argument, as Ray serializes
        each argument on its own. ``blob``: small outboxes as blobs (false where the caller sends
        them on inside one of its own: the master's in-process call, ``_run_here``)."""
        downstream = call[5]
        result, out = self._flow(call, inboxes, blob)
        if not downstream:
            return result
        return (result, *_outboxes(out, downstream))

    def run_graph_flow_then(self, call: tuple, then: tuple, *inboxes: list | None):
        """``run_graph_flow(call, *inboxes)`` (a step's last call on this task, sending to no
        task), then ``then`` (the next step's first call here, a pure read of this task's
        variables with no inbox) in the same call: the master's prefetched reads for async
        replicas, one call a step on a ps instead of two. Returns call's result, then's result
        and then's outboxes (None each when either failed)."""
        return self._flow_then(call, then, inboxes, True)

    def _flow_then(self, call: tuple, then: tuple, inboxes, blob: bool) -> tuple:
        result, _ = self._flow(call, inboxes)
        if result[1] is not None:
            return (result, result, *[None] * len(then[5]))
        after, out = self._flow(then, (), blob)
        return (result, after, *_outboxes(out, then[5]))

    def run_graph_flow_then_packed(self, packed: tuple):
        """``run_graph_flow_then(call, then, *inboxes)`` with (call, then, inboxes) as one
        argument, the inboxes values (a replica's own loop sends them, ``replica_loop.py``); both
        ways as one blob when small (wire.py)."""
        call, then, inboxes = unwire(packed)
        return wire(self._flow_then(call, then, inboxes, False))

    def _flow(self, call: tuple, inboxes, blob: bool = True) -> tuple[tuple, dict | None]:
        handle, step_id, args, n_args, n_retvals, downstream = call
        rv = self._rendezvous(step_id, hold=True)
        if rv is None:
            result = {}, pack_error(RuntimeError(f"step {step_id} was cleaned up before it ran on {self.task}")), {}, True
        elif any(box is None for box in inboxes):  # an upstream task failed: its error is the one reported
            self._finish(step_id)
            result = {}, pack_error(RuntimeError(f"an upstream task of step {step_id} failed")), {}, True
        else:
            items = [it for box in inboxes for it in resolve_stored(box)]
            fast = self._inbox_args(handle, n_args) if items else None
            extra = None if fast is None else inbox_values(fast[1], items)
            if extra is not None:  # every received value an argument: the straight line applies
                result = self._run(handle, step_id, rv, args, n_args, n_retvals, fast[0], extra)
            else:
                rv.deliver(items)
                result = self._run(handle, step_id, rv, args, n_args, n_retvals)
        out = rv.take_outbox(blob) if rv is not None and result[1] is None else None
        sent = {} if out is None else {d: 1 for d in downstream if out.get(d)}
        return (result[0], result[1], sent, result[3]), out

    def _inbox_args(self, handle: str, n_args: int) -> tuple[list[Executor], dict[str, int]] | None:
        """The handle's partitions with inbox-fed receives read as arguments (built on first use)."""
        key = (handle, n_args)
        if key not in self.by_args:
            parts, seed = self.pieces[handle]
            made = inbox_as_args([g for _, g in parts], n_args)
            if made is not None:
                made = ([Executor(g, d, graph_seed=seed, kernel_state=self.kernel_state)
                         for (d, _), g in zip(parts, made[0])], made[1])  # fmt: skip
            with self.lock:
                self.by_args[key] = made
        return self.by_args[key]

    def _run(self, handle: str, step_id: int, rv: RemoteRendezvous, args: dict[int, Any], n_args: int,
             n_retvals: int, executors: list[Executor] | None = None,
             received: list | None = None) -> tuple[dict[int, Any], tuple | None, dict[str, int], bool]:  # fmt: skip
        executors = self.graphs[handle] if executors is None else executors
        rv.set_partitions(len(executors))
        frame = CallFrame([args.get(i) for i in range(n_args)] + (received or []), n_retvals)
        last = len(executors) - 1
        handles = [
            ex.run_async(rendezvous=rv, frame=frame, step_id=step_id, caller_runs=i == last)
            for i, ex in enumerate(executors)
        ]
        for h in handles:
            if not h.done:
                h.wait()
        rv.flush()
        errors = [h.error for h in handles if h.error is not None]
        self._finish(step_id)
        if errors:
            return {}, pack_error(rv.error or errors[0]), dict(rv.sent_to), rv.from_peer
        out = {}
        for i, v in enumerate(frame.retvals):
            if v is not UNSET:
                out[i] = v if isinstance(v, np.ndarray) or not hasattr(v, "get") else v.get()
        return out, None, dict(rv.sent_to), False

    def deliver(self, step_id: int, items: list) -> None:
        rv = self._rendezvous(step_id)
        if rv is not None:
            rv.deliver(items)

    def abort_step(self, step_id: int, packed: tuple, origin: str) -> None:
        rv = self._rendezvous(step_id)
        if rv is not None:
            rv.abort_from_peer(unpack_error(packed))

    def cleanup_graph(self, step_id: int, packed: tuple | None = None) -> None:
        """Abort the step here if it still runs (with the master's error ``packed``), then forget
        its state (a late delivery for it is then dropped). One message, so no abort can arrive
        after the state it was for is gone."""
        rv = self._rendezvous(step_id)
        if rv is not None:
            rv.abort_from_peer(unpack_error(packed) if packed else RuntimeError(f"step {step_id} was cleaned up"))
        self._finish(step_id)

    def ping(self) -> int:
        """Health check: answered on its own thread even while steps run."""
        return os.getpid()

    def abort_steps_with(self, task: str, packed: tuple) -> int:
        """Abort every running step that involves ``task`` (found dead): their receives from it
        would otherwise wait forever. Returns how many."""
        with self.lock:
            doomed = [rv for rv in self.steps.values() if task in (rv.tasks or ())]
        for rv in doomed:
            rv.abort_from_peer(unpack_error(packed))
        return len(doomed)

    def step_state(self, step_id: int) -> tuple | None:
        """The master's deadlock watch asks: RemoteRendezvous.state, or None when the step is
        not running here (not begun, or ended)."""
        with self.lock:
            rv = self.steps.get(step_id)
        return None if rv is None else rv.state()

    def running_steps(self) -> list[int]:
        with self.lock:
            return sorted(self.steps)

    def rng_states(self, prefix: str) -> dict[str, np.ndarray]:
        """Each random op's generator state on this task, keyed ``prefix + node`` (checkpointed
        per worker by the trainer)."""
        from specflow.train.state import generator_states

        return generator_states(self.kernel_state, prefix)

    def set_rng_states(self, tensors: dict[str, np.ndarray], prefix: str) -> None:
        from specflow.train.state import set_generator_states

        set_generator_states(self.kernel_state, tensors, prefix)

    # --- an async replica's own loop (replica_loop.py) -------------------------------------------

    def replica_steps(self, recipe_box: list, key: str, j: int, count: int):
        """Run ``count`` steps of this worker's replica on its batches ``j ..``: (per step
        (loss, global step), the packed error that ended the chunk early or None, seconds)."""
        return self.replica_loops.steps(recipe_box, key, j, count)

    def stop_replica(self, run: str) -> None:
        """The run's loop stops after its current step (a stop request reached the driver)."""
        self.replica_loops.stop(run)

    def close_replica(self, run: str) -> None:
        self.replica_loops.close(run)

    def resources(self) -> dict[str, list[str]]:
        """Per device, the resources its manager holds (what lives on this task)."""
        return {d.name: sorted(f"{c}/{n}" for (c, n), _ in d.resource_mgr.items()) for d in self.devices}


def _outboxes(out: dict | None, downstream: list[str]) -> list:
    """A call's held sends, one list per downstream task in order (None each after a failure)."""
    return [None if out is None else out.get(d, []) for d in downstream]
