"""One task's rendezvous for one step, with the other tasks behind it.

Same-task edges use the local table exactly as a local step does. A ``_Send`` whose receiving
device is on another task is kept in an outbox per destination task; the outbox is flushed (one
Ray call per destination, whatever accumulated) whenever one of this task's partitions goes
quiet or ends — the same signal the local deadlock watch uses (``set_quiet``). A partition only
goes quiet when all it has left is waiting, so nothing it sent can be needed sooner: a step's
tensors travel batched per task pair, one message per quiet point rather than one per tensor.
Only a ``_Recv`` counts as waiting there, so a partition blocked in another async kernel (a
queue dequeue) is not quiet: the task's flusher (``worker.py``) also sends whatever has sat in
an outbox for ``FLUSH_DELAY_S``.

The receiving task puts a delivered batch into its own rendezvous (``deliver``), where the
waiting ``_Recv`` picks each value up by its key (which carries frame and iteration). Large
arrays travel by ``ray.put`` and are read zero-copy from the object store (``STORE_BYTES``).

Abort: the first error on any task aborts this rendezvous (``Rendezvous.abort``, the one abort
path, as for timeouts) and is forwarded to every other task of the step, which aborts its own
rendezvous with it (``abort_from_peer``, not forwarded again).
"""

from __future__ import annotations

import threading
from typing import Any

from specflow import errors as _errors
from specflow.errors import Location, RuntimeFailure, SpecflowError
from specflow.runtime.rendezvous import Rendezvous

from .wire import unwire, wire

FLUSH_DELAY_S = 0.002
# Arrays this large go through Ray's object store by an explicit ray.put, the receiver getting
# them zero-copy: measured here, 64 MiB nested in a call's arguments took 3-7x as long as put +
# ref (Ray's own inline limit for arguments is 100 KiB).
STORE_BYTES = 100 * 1024


def pack_error(error: BaseException) -> tuple:
    """An error as plain data (exceptions with keyword fields do not survive pickling)."""
    if isinstance(error, SpecflowError):
        loc = error.location
        return (type(error).__module__, type(error).__name__, error.message, error.node,
                None if loc is None else (loc.file, loc.line, loc.col), error.path)  # fmt: skip
    return ("", "", f"{type(error).__name__}: {error}", None, None, None)


def unpack_error(packed: tuple) -> SpecflowError:
    module, name, message, node, loc, path = packed
    cls = RuntimeFailure
    if module:
        import importlib

        found = getattr(importlib.import_module(module), name, None)
        if isinstance(found, type) and issubclass(found, SpecflowError):
            cls = found
    try:
        return cls(message, node=node, location=None if loc is None else Location(*loc), path=path)
    except TypeError:  # a subclass with another signature
        return _errors.RuntimeFailure(message, node=node, location=None if loc is None else Location(*loc))


class _Stored:
    """A value sent through the object store: item ``index`` of the list behind ``ref`` (a bare
    ref inside a list would look like data)."""

    __slots__ = ("ref", "index")

    def __init__(self, ref, index: int) -> None:
        self.ref, self.index = ref, index

    def __reduce__(self):
        return (_Stored, (self.ref, self.index))


def _by_store(items: list, blob: bool = True) -> list:
    """Send items with their large arrays replaced by object-store references: one ``ray.put``
    of them all (each put has a cost of its own, about 1 ms for a few MB here: a 1024x1024 and a
    784x1024 float32 took 4-5 ms as two puts, 2.4-3.3 ms as one); items of small arrays only go
    as one blob (wire.py) unless ``blob`` is false (they travel inside a larger one)."""
    large = [i for i, (_, v, _) in enumerate(items) if getattr(v, "nbytes", 0) >= STORE_BYTES]
    if not large:
        return wire(items) if blob and items else items  # an empty outbox stays falsy: nothing sent
    import ray

    ref = ray.put([items[i][1] for i in large])
    out = list(items)
    for j, i in enumerate(large):
        k, _, d = items[i]
        out[i] = (k, _Stored(ref, j), d)
    return out


def resolve_stored(items: list) -> list:
    """Items as sent, with values sent through the object store read back (one ``ray.get`` for
    the batch; zero-copy on this node), or from their blob."""
    items = unwire(items)
    refs = list(dict.fromkeys(v.ref for _, v, _ in items if type(v) is _Stored))
    if not refs:
        return items
    import ray

    got = dict(zip(refs, ray.get(refs)))
    return [(k, got[v.ref][v.index] if type(v) is _Stored else v, d) for k, v, d in items]


class RemoteRendezvous(Rendezvous):
    __slots__ = (
        "step_id", "route", "peers", "tasks", "task", "_outbox", "_out_lock", "sent", "from_peer", "later", "hold",
        "sent_to", "received",
    )  # fmt: skip

    def __init__(self, step_id: int, task: str, route: dict[str, str | None], peers: dict[str, Any],
                 partitions: int = 1, later=None, hold: bool = False) -> None:  # fmt: skip
        # partitions > 0 turns on the quiet signal (the flush points); see set_quiet.
        super().__init__(partitions=max(1, partitions))
        self.step_id = step_id
        self.task = task
        self.route = route  # receiving device -> its task when that is another task, else None
        self.peers = peers  # task -> actor handle
        self.tasks: list[str] = []  # the step's tasks (set by RunGraph; aborts go to these)
        self._outbox: dict[str, list] = {}
        self._out_lock = threading.Lock()
        self.sent = 0  # batches sent (for tests and stats)
        # Batches sent per task and received, for the master's deadlock watch (a batch still in
        # flight means the step may go on: deadlock_watch.py).
        self.sent_to: dict[str, int] = {}
        self.received = 0
        self.from_peer = False  # the abort came from another task (its error is the root cause)
        self.later = later  # later(rv): flush rv in FLUSH_DELAY_S unless a quiet point does first
        # hold: the dataflow protocol (worker.run_graph_flow). Cross-task sends stay in the
        # outbox for the master to pass on, and every value this task will receive was delivered
        # before it started, so the local deadlock watch applies unchanged.
        self.hold = hold

    def set_partitions(self, n: int) -> None:
        with self._lock:
            self._busy = max(1, n)

    def send(self, key: str, value: Any, is_dead: bool = False) -> None:
        dst = self.route.get(key.split(";", 3)[2])
        if dst is None:
            super().send(key, value, is_dead)
            return
        if self.error is not None:
            raise self.error
        with self._out_lock:
            first = not self._outbox
            self._outbox.setdefault(dst, []).append((key, value, is_dead))
        if first and self.later is not None:
            self.later(self)

    def set_quiet(self, quiet: bool) -> bool:
        """A partition went quiet or ended: send what it left in the outbox. Reports no local
        deadlock while pushing: a value may still come from another task (the master's watch,
        ``deadlock_watch.py``, sees the whole step). Holding, nothing more can come."""
        if self.hold:
            return Rendezvous.set_quiet(self, quiet)
        if quiet:
            self.flush()
        Rendezvous.set_quiet(self, quiet)  # count busy partitions for the master's watch
        return False

    def take_outbox(self, blob: bool = True) -> dict[str, list]:
        """The held cross-task sends by destination task (dataflow protocol). Large arrays go
        by this task's own ray.put, as when pushing: returned inside the call's result they
        would be stored as an object the driver owns and frees later, so the next step's copy
        lands on fresh pages (measured 3-5x slower for 64 MiB here)."""
        with self._out_lock:
            out, self._outbox = self._outbox, {}
        return {task: _by_store(items, blob) for task, items in out.items()}

    def flush(self) -> None:
        if self.hold:
            return
        with self._out_lock:
            if not self._outbox:
                return
            batches, self._outbox = self._outbox, {}
        for task, items in batches.items():
            self.peers[task].deliver.remote(self.step_id, _by_store(items))
            self.sent += 1
            self.sent_to[task] = self.sent_to.get(task, 0) + 1

    def deliver(self, items: list) -> None:
        self.received += 1
        for key, value, is_dead in resolve_stored(items):
            try:
                super().send(key, value, is_dead)
            except SpecflowError:  # aborted meanwhile: the values are not needed
                return

    def abort(self, error: BaseException) -> None:
        if self.error is not None:
            return
        super().abort(error)
        if self.error is error:  # this task's own failure (or its timeout): tell the others
            packed = pack_error(error)
            for task in self.tasks:
                if task != self.task:
                    self.peers[task].abort_step.remote(self.step_id, packed, self.task)

    def abort_from_peer(self, error: BaseException) -> None:
        if self.error is None:
            self.from_peer = True
        Rendezvous.abort(self, error)

    def state(self) -> tuple[bool, list[str], int, dict[str, int]]:
        """(quiet: every partition waits on receives or ended and nothing waits in the outbox,
        the keys receives wait for, batches received, batches sent per task)."""
        with self._out_lock:
            empty = not self._outbox
        with self._lock:
            quiet = self._busy == 0 and empty
        return quiet, self.pending_keys(), self.received, dict(self.sent_to)
