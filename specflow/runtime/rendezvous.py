"""The rendezvous: where a ``_Send`` leaves a tensor and the matching ``_Recv`` picks it up.

One Rendezvous serves one step. Keys name the sending device and its incarnation, the receiving
device, the tensor and the frame/iteration (TensorFlow's ``CreateKey``), so a key is unique per
transfer per loop iteration. Either side may come first: a value waits for its receiver, a
receiver's callback waits for its value. ``abort`` fails every pending and future receive at
once, so one failing device ends the whole step instead of leaving the others blocked.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from specflow.errors import RuntimeFailure


class _Dead:
    """The value of a dead tensor (an untaken branch of a Switch): it carries no data."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "DEAD"

    def __reduce__(self):
        return (_Dead, ())


DEAD = _Dead()

RecvCallback = Callable[[Any, bool, BaseException | None], None]


def rendezvous_key(
    send_device: str,
    incarnation: int,
    recv_device: str,
    tensor_name: str,
    frame_id: str = "0",
    iter_id: int = 0,
) -> str:
    """``"{send_device};{incarnation:x};{recv_device};{tensor_name};{frame_id}:{iter_id}"``.

    ``frame_id`` names a loop frame instance by its path from the root frame (``"0"``), e.g.
    ``"0/0/while"`` (frame ``while`` entered in root iteration 0), the same on every device
    (``frames.py``); ``iter_id`` is the iteration within it."""
    return f"{send_device};{incarnation:x};{recv_device};{tensor_name};{frame_id}:{iter_id}"


class Rendezvous:
    """A thread-safe table of sent values and waiting receivers, keyed by rendezvous key.

    Each key holds a FIFO of either values or receivers (never both), as in TF's local
    rendezvous. Callbacks run outside the lock, on the thread that completed the match.
    """

    # One per step, and ``error`` is read before kernels: slots make both cheaper.
    __slots__ = (
        "_lock", "_values", "_waiters", "error", "_abort_listeners", "watching", "_busy", "watched", "__weakref__"
    )  # fmt: skip

    def __init__(self, partitions: int = 0) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, deque] = {}  # key -> deque[(value, is_dead)]
        self._waiters: dict[str, deque] = {}  # key -> deque[callback]
        self.error: BaseException | None = None  # set once by abort(); read without the lock
        self._abort_listeners: list[Callable[[BaseException], None]] = []
        # Deadlock watch, on when the step's partition count is given: how many of them are
        # busy (see set_quiet), and their step handles (to name what is stuck).
        self.watching = partitions > 0
        self._busy = partitions
        self.watched: list = []

    def send(self, key: str, value: Any, is_dead: bool = False) -> None:
        """Deliver ``value`` to the first waiting receiver of ``key``, or keep it for the next one."""
        with self._lock:
            if self.error is not None:
                raise self.error
            waiters = self._waiters.get(key)
            if waiters:
                callback = waiters.popleft()
                if not waiters:
                    del self._waiters[key]
            else:
                self._values.setdefault(key, deque()).append((value, is_dead))
                return
        callback(value, is_dead, None)

    def recv_async(self, key: str, callback: RecvCallback) -> None:
        """Call ``callback(value, is_dead, error)`` once the value for ``key`` is here (maybe now)."""
        with self._lock:
            error = self.error
            item = None
            if error is None:
                values = self._values.get(key)
                if values:
                    item = values.popleft()
                    if not values:
                        del self._values[key]
                else:
                    self._waiters.setdefault(key, deque()).append(callback)
                    return
        if error is not None:
            callback(None, False, error)
        else:
            callback(item[0], item[1], None)

    def recv(self, key: str, timeout: float | None = None) -> tuple[Any, bool]:
        """Block until ``key`` arrives; returns ``(value, is_dead)``. Raises the abort error, or
        RuntimeFailure after ``timeout`` seconds."""
        done = threading.Event()
        box: list = []

        def callback(value, is_dead, error):
            box.append((value, is_dead, error))
            done.set()

        self.recv_async(key, callback)
        if not done.wait(timeout):
            self._forget(key, callback)
            if box:  # delivered between the timeout and _forget
                return self._unbox(box[0])
            raise RuntimeFailure(f"timed out after {timeout}s waiting for '{key}'")
        return self._unbox(box[0])

    @staticmethod
    def _unbox(item) -> tuple[Any, bool]:
        value, is_dead, error = item
        if error is not None:
            raise error
        return value, is_dead

    def _forget(self, key: str, callback: RecvCallback) -> None:
        with self._lock:
            waiters = self._waiters.get(key)
            if waiters and callback in waiters:
                waiters.remove(callback)
                if not waiters:
                    del self._waiters[key]

    def abort(self, error: BaseException) -> None:
        """Fail every pending receive with ``error`` now, and every later send and receive.
        Only the first abort counts: its error is the step's root cause. This is how anything
        stops a running step (runtime/abort.py): every executor checks ``error`` before each
        kernel. Safe from any thread."""
        with self._lock:
            if self.error is not None:
                return
            self.error = error
            waiters = [cb for q in self._waiters.values() for cb in q]
            self._waiters.clear()
            self._values.clear()
            listeners, self._abort_listeners = self._abort_listeners, []
        for callback in waiters:
            callback(None, False, error)
        for listener in listeners:
            listener(error)

    def set_quiet(self, quiet: bool) -> bool:
        """A partition of the step went quiet (everything it has under way is a receive waiting
        here, or it ended) or busy again (a value reached one of its receives, inside the
        sender's ``send``, so the sender is still busy then). Returns True when this left the
        step deadlocked: no partition busy while receives still wait, so no value can come."""
        if not self.watching:
            return False
        with self._lock:
            self._busy += -1 if quiet else 1
            return quiet and self._busy == 0 and bool(self._waiters) and self.error is None

    def add_abort_listener(self, fn: Callable[[BaseException], None]) -> None:
        """Call ``fn(error)`` when the step aborts (now, if it already has): how kernels waiting
        outside the rendezvous (a dequeue on an empty queue) learn to give up."""
        with self._lock:
            error = self.error
            if error is None:
                self._abort_listeners.append(fn)
                return
        fn(error)

    def remove_abort_listener(self, fn: Callable[[BaseException], None]) -> None:
        with self._lock:
            if fn in self._abort_listeners:
                self._abort_listeners.remove(fn)

    @property
    def aborted(self) -> bool:
        return self.error is not None

    def pending_keys(self) -> list[str]:
        """Keys with a waiting receiver (debugging: what a stuck step is waiting for)."""
        with self._lock:
            return sorted(self._waiters)
