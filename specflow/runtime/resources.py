"""Per-device resource managers: variables and queues keyed by (container, name).

They live as long as the Session (not the executor), so state persists across ``run`` calls and
across executor rebuilds, as in TensorFlow's ResourceMgr.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from specflow.errors import RuntimeFailure


class Variable:
    """A mutable tensor. ``value`` is None until the first assignment.

    A bfloat16 variable is updated as TF's CPU kernels update one: kernels compute on float32
    (``registry._in_float32`` widens their bfloat16 inputs; ``state_ops.writable_value`` hands
    them a float32 copy) and what they store is rounded back to bfloat16 here, once."""

    def __init__(self, name: str, dtype, shape):
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self._value: Any = None
        self.lock = threading.Lock()
        self.narrow_to = _bfloat16() if getattr(dtype, "name", None) == "bfloat16" else None

    @property
    def value(self) -> Any:
        return self._value

    @value.setter
    def value(self, array: Any) -> None:
        if self.narrow_to is not None and array is not None and array.dtype != self.narrow_to:
            array = array.astype(self.narrow_to)
        self._value = array

    @property
    def initialized(self) -> bool:
        return self._value is not None


def _bfloat16():
    from specflow.graph import dtypes

    return dtypes.bfloat16.numpy


class ResourceMgr:
    def __init__(self, device: str = ""):
        self.device = device
        self._resources: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()
        # Replaced by every delete or clear: a resource a handle remembers (see resolve) is still
        # the registered one while the epoch it was found in is current. A fresh object per
        # epoch is unique to this manager too, so one identity test checks both.
        self.epoch = object()

    def lookup_or_create(self, container: str, name: str, factory: Callable[[], Any]) -> Any:
        with self._lock:
            key = (container, name)
            if key not in self._resources:
                self._resources[key] = factory()
            return self._resources[key]

    def lookup(self, container: str, name: str) -> Any:
        with self._lock:
            try:
                return self._resources[(container, name)]
            except KeyError:
                raise RuntimeFailure(f"resource '{container}/{name}' does not exist on {self.device}") from None

    def get(self, container: str, name: str) -> Any | None:
        with self._lock:
            return self._resources.get((container, name))

    def resolve(self, handle: ResourceHandle) -> Any | None:
        """``get`` for a handle, O(1) after the first call: the handle remembers what it found
        here until a delete or clear on this manager (the hot path of every variable op)."""
        found = handle._found
        if found is not None and found[0] is self.epoch:
            return found[1]
        with self._lock:
            resource = self._resources.get((handle.container, handle.name))
            if resource is not None:
                handle._found = (self.epoch, resource)
        return resource

    def delete(self, container: str, name: str) -> None:
        with self._lock:
            self._resources.pop((container, name), None)
            self.epoch = object()

    def clear(self, container: str | None = None) -> None:
        with self._lock:
            self.epoch = object()
            if container is None:
                self._resources.clear()
            else:
                for k in [k for k in self._resources if k[0] == container]:
                    del self._resources[k]

    def items(self) -> list[tuple[tuple[str, str], Any]]:
        with self._lock:
            return list(self._resources.items())


class ResourceHandle:
    """The value of a ``resource`` tensor: names a resource on one device's ResourceMgr."""

    __slots__ = ("device", "container", "name", "dtype", "shape", "_found")

    def __init__(self, device: str, container: str, name: str, dtype=None, shape=None):
        self.device = device
        self.container = container
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self._found: tuple | None = None  # (a manager's epoch, resource): ResourceMgr.resolve

    def __reduce__(self):  # copies and pickles name the resource; what it resolved to stays here
        return (ResourceHandle, (self.device, self.container, self.name, self.dtype, self.shape))

    def __repr__(self) -> str:
        return f"ResourceHandle({self.device}, {self.container!r}, {self.name!r})"

    @property
    def nbytes(self) -> int:
        return 8
