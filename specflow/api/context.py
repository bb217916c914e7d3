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


class PhysicalDevice:
    """TensorFlow's ``tf.config.PhysicalDevice``: ``name`` ("/physical_device:GPU:0") and
    ``device_type`` ("CPU" or "GPU")."""

    __slots__ = ("name", "device_type")

    def __init__(self, name: str, device_type: str):
        self.name, self.device_type = name, device_type

    def __eq__(self, other) -> bool:
        return isinstance(other, type(self)) and (self.name, self.device_type) == (other.name, other.device_type)

    def __hash__(self) -> int:
        return hash((type(self), self.name))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name='{self.name}', device_type='{self.device_type}')"


class LogicalDevice(PhysicalDevice):
    """TensorFlow's ``tf.config.LogicalDevice``: ``name`` is the full device name eager ops use."""


def _gpus_here() -> int:
    from specflow.runtime.devices import _cupy, _gpu_count

    xp = _cupy()
    return 0 if xp is None else _gpu_count(xp)


class Config:
    """``sf.config``: global switches of the Python face."""

    def __init__(self) -> None:
        self.functions_run_eagerly = False
        self._visible: set[str] | None = None  # physical device names set_visible_devices kept

    def run_functions_eagerly(self, run_eagerly: bool) -> None:
        """Run ``sf.function``s as plain Python (op by op, eagerly): for debugging."""
        self.functions_run_eagerly = bool(run_eagerly)

    # --- devices (TensorFlow's tf.config device functions) ---------------------------------------

    def list_physical_devices(self, device_type: str | None = None) -> list[PhysicalDevice]:
        """The CPU, and one GPU per CUDA device cupy sees; ``device_type`` ("CPU"/"GPU") filters."""
        found = [PhysicalDevice("/physical_device:CPU:0", "CPU")]
        found += [PhysicalDevice(f"/physical_device:GPU:{i}", "GPU") for i in range(_gpus_here())]
        return [d for d in found if device_type is None or d.device_type == str(device_type).upper()]

    def get_visible_devices(self, device_type: str | None = None) -> list[PhysicalDevice]:
        return [d for d in self.list_physical_devices(device_type) if self._visible is None or d.name in self._visible]

    def set_visible_devices(self, devices, device_type: str | None = None) -> None:
        """Hide GPUs from eager execution (``sf.device("/gpu:1")`` then fails, as TF's would); the
        CPU stays visible. As in TensorFlow it must come before a GPU is used eagerly. (Traced
        functions' placement is not restricted by it.)"""
        devices = [devices] if isinstance(devices, PhysicalDevice) else list(devices)
        kept = {d.name for d in devices}
        for d in self.list_physical_devices():
            if device_type is not None and d.device_type != str(device_type).upper():
                kept.add(d.name)  # another type: unchanged
        kept.add("/physical_device:CPU:0")
        if any(dev.device_type == "GPU" and f"/physical_device:GPU:{dev.index}" not in kept for dev in _DEVICES.values()):
            raise RuntimeError("Visible devices cannot be modified after being initialized (a GPU was used eagerly)")
        self._visible = kept

    def list_logical_devices(self, device_type: str | None = None) -> list[LogicalDevice]:
        """One logical device per visible physical one, named as eager ops name devices."""
        return [LogicalDevice(f"/job:localhost/replica:0/task:0/device:{d.device_type}:{d.name.rsplit(':', 1)[1]}",
                              d.device_type) for d in self.get_visible_devices(device_type)]


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
            if config._visible is not None and f"/physical_device:GPU:{index}" not in config._visible:
                raise DeviceError(f"device '{scope}': GPU:{index} was hidden by sf.config.set_visible_devices")
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
