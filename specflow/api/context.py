"""What the Python face keeps per thread: the device scope, the function being traced, the
recording gradient tapes; and the eager devices (one array module and resource manager each).

Eager execution and tracing share these, so an op function asks one place whether it runs now
(eager) or adds a node to a graph (inside ``sf.function``).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any

import numpy as np

from specflow.errors import DeviceError
from specflow.graph.device_spec import DeviceSpec
from specflow.graph.dtypes import DType, as_dtype
from specflow.runtime.resources import ResourceMgr


class _State(threading.local):
    def __init__(self) -> None:
        self.device = ""  # the sf.device scope as written ("" = default)
        self.trace: Any = None  # api.function.Trace while a Python function is traced
        self.tapes: list = []  # recording GradientTapes, innermost last


STATE = _State()


class Config:
    """``sf.config``: global switches of the Python face."""

    def __init__(self) -> None:
        self.functions_run_eagerly = False

    def run_functions_eagerly(self, run_eagerly: bool) -> None:
        """Run ``sf.function``s as plain Python (op by op, eagerly): for debugging."""
        self.functions_run_eagerly = bool(run_eagerly)


config = Config()


@contextmanager
def device(name: str):
    """``with sf.device("/cpu:1"):`` eager ops run there, variables live there, and the nodes a
    traced function adds are placed there (a partial spec; the placer fills the rest)."""
    name = name or ""
    if name:
        DeviceSpec.parse(name)  # a malformed name is a DeviceError now, not at the first op
    old, STATE.device = STATE.device, name
    try:
        yield
    finally:
        STATE.device = old


# --- eager devices ------------------------------------------------------------------------------


class EagerDevice:
    """One device as eager ops see it: its full name, array module and resource manager."""

    __slots__ = ("name", "device_type", "index", "xp", "resources")

    def __init__(self, name: str, device_type: str, index: int, xp: Any):
        self.name = name
        self.device_type = device_type
        self.index = index
        self.xp = xp
        self.resources = ResourceMgr(name)

    def to_device(self, value: Any) -> Any:
        """``value`` (numpy or cupy) as this device holds it."""
        if self.device_type == "CPU":
            return value if isinstance(value, np.ndarray) or not hasattr(value, "get") else value.get()
        if isinstance(value, self.xp.ndarray) and value.device.id == self.index:
            return value
        with self.xp.cuda.Device(self.index):
            return self.xp.asarray(value)


_DEVICES: dict[str, EagerDevice] = {}
_BY_SCOPE: dict[str, EagerDevice] = {}


def eager_device(scope: str | None = None) -> EagerDevice:
    """The eager device for a device scope (default: the current ``sf.device``; CPU:0 if none)."""
    scope = STATE.device if scope is None else scope
    dev = _BY_SCOPE.get(scope)
    if dev is not None:
        return dev
    spec = DeviceSpec.parse(scope) if scope else DeviceSpec()
    kind = spec.device_type or "CPU"
    index = spec.device_index or 0
    name = f"/job:localhost/replica:0/task:0/device:{kind}:{index}"
    dev = _DEVICES.get(name)
    if dev is None:
        xp: Any = np
        if kind == "GPU":
            from specflow.runtime.devices import _cupy, _gpu_count

            xp = _cupy()
            if xp is None or _gpu_count(xp) <= index:
                raise DeviceError(f"device '{scope}': no such GPU here (cupy sees "
                                  f"{0 if xp is None else _gpu_count(xp)})")
        elif kind != "CPU":
            raise DeviceError(f"device '{scope}': unknown device type {kind} (CPU or GPU)")
        dev = _DEVICES[name] = EagerDevice(name, kind, index, xp)
    _BY_SCOPE[scope] = dev
    return dev


_NP_TO_DTYPE: dict[Any, DType] = {}


def dtype_of(array: Any) -> DType:
    """The DType of an array (numpy or cupy), memoised: ``as_dtype`` searches."""
    npd = array.dtype
    dt = _NP_TO_DTYPE.get(npd)
    if dt is None:
        dt = _NP_TO_DTYPE[npd] = as_dtype(npd)
    return dt
