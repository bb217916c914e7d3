"""Local devices: logical CPUs (numpy) and CUDA GPUs (cupy), each with its thread pool and
resource manager.

``local_devices("cpu:2,gpu:1")`` gives two CPU devices and one GPU. cupy is imported only when a
GPU is requested or probed; an ImportError simply means "no GPU". Device names are full:
``/job:localhost/replica:0/task:0/device:CPU:0``.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from typing import Any

import numpy as np

from specflow.errors import DeviceError
from specflow.graph.device_spec import DeviceSpec
from specflow.ops import host_copies
from specflow.ops.math_ops import FP_STATE, QUIET_FP
from specflow.ops.runtime_ops import CONTROL_TOKEN
from specflow.runtime.resources import ResourceMgr

DEVICE_TYPES = ("CPU", "GPU")


def default_threads() -> int:
    return max(2, os.cpu_count() or 2)


class Device:
    """One device: its full name, array module (``xp``), resources and a lazily started pool."""

    def __init__(
        self,
        name: str,
        device_type: str,
        index: int,
        xp: Any,
        resource_mgr: ResourceMgr | None = None,
        threads: int | None = None,
    ):
        self.name = name
        self.device_type = device_type
        self.index = index
        self.xp = xp
        self.resource_mgr = resource_mgr if resource_mgr is not None else ResourceMgr(name)
        self.threads = threads or default_threads()
        self.array_type = xp.ndarray  # what kernels on this device must return
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Device({self.name})"

    @property
    def spec(self) -> DeviceSpec:
        return DeviceSpec.parse(self.name)

    @property
    def pool(self) -> ThreadPoolExecutor:
        """The inter-op thread pool running this device's kernels (started on first use)."""
        if self._pool is None:
            with self._pool_lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(
                        max_workers=self.threads,
                        thread_name_prefix=f"{self.device_type}{self.index}",
                        initializer=self.activate,
                    )
        return self._pool

    def activate(self) -> None:
        """Prepare a pool thread to run this device's kernels, for good: this device current
        (cupy's current GPU) and numpy's floating-point errors quiet (``math_ops.QUIET_FP``)."""
        FP_STATE.set(QUIET_FP)
        if self.device_type == "GPU":
            self.xp.cuda.Device(self.index).use()

    def kernel_scope(self) -> _KernelScope:
        """What ``activate`` does, for a block of the calling thread (a step its caller runs)."""
        return _KernelScope(self.scope() if self.device_type == "GPU" else None)

    def scope(self):
        """A context manager that makes this device current for a block (no-op on CPU)."""
        if self.device_type == "GPU":
            return self.xp.cuda.Device(self.index)
        return nullcontext()

    def import_value(self, value: Any) -> Any:
        """``value`` as this device holds it: the only CPU<->GPU copy point (used by ``_Recv``
        and ``_Arg``). Same-type values, resource handles, non-arrays and the control token
        (``ops.runtime_ops.CONTROL_TOKEN``) pass through."""
        if value is CONTROL_TOKEN:
            return value
        if self.device_type == "CPU":
            if isinstance(value, np.ndarray) or not hasattr(value, "get"):
                return value
            return host_copies.to_host(value)  # cupy -> numpy
        if isinstance(value, np.ndarray):
            if value.dtype == object:
                raise DeviceError(f"cannot copy a string tensor to {self.name}: GPUs hold no strings")
            with self.scope():  # a small value (a fed flag, a shape) keeps its host copy
                return host_copies.keep(self.xp.asarray(value), value)
        if isinstance(value, self.xp.ndarray) and value.device.id != self.index:
            with self.scope():
                return self.xp.array(value, copy=True)  # peer copy between GPUs
        return value

    def shutdown(self) -> None:
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


class _KernelScope:
    """Device.kernel_scope's context manager: the quiet floating-point state, and a GPU's
    device context when there is one."""

    __slots__ = ("_gpu", "_token")

    def __init__(self, gpu):
        self._gpu = gpu

    def __enter__(self) -> None:
        if self._gpu is not None:
            self._gpu.__enter__()
        self._token = FP_STATE.set(QUIET_FP)

    def __exit__(self, *exc) -> None:
        FP_STATE.reset(self._token)
        if self._gpu is not None:
            self._gpu.__exit__(*exc)


def device_name(device_type: str, index: int, job: str = "localhost", task: int = 0) -> str:
    return f"/job:{job}/replica:0/task:{task}/device:{device_type}:{index}"


def _cupy():
    """The cupy module, or None when it is not installed (or fails to import)."""
    try:
        import cupy
    except ImportError:
        return None
    return cupy


def _gpu_count(cupy) -> int:
    try:
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # no driver, no device: cupy raises its own CUDA runtime errors
        return 0


def parse_device_counts(spec: str) -> dict[str, int]:
    """``"cpu:2,gpu:1"`` -> ``{"CPU": 2, "GPU": 1}``; DeviceError explains a malformed spec."""
    counts: dict[str, int] = {}
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        kind, _, n = part.partition(":")
        kind = kind.strip().upper()
        if kind not in DEVICE_TYPES:
            raise DeviceError(f"devices '{spec}': unknown device type '{kind.lower()}' (use cpu or gpu)")
        n = n.strip() or "1"
        if not n.isdigit():
            raise DeviceError(f"devices '{spec}': count for {kind.lower()} must be a number, got '{n}'")
        if kind in counts:
            raise DeviceError(f"devices '{spec}': {kind.lower()} given twice")
        counts[kind] = int(n)
    return counts


def local_devices(
    spec: str | None = None, *, threads: int | None = None, job: str = "localhost", task: int = 0
) -> list[Device]:
    """The devices of this process. ``spec`` like ``"cpu:2,gpu:1"``; None or ``""`` means one
    CPU plus every GPU cupy sees. There is always at least one CPU (the host for feeds/fetches),
    unless the spec asks for ``cpu:0`` explicitly."""
    if spec:
        counts = parse_device_counts(spec)
        counts.setdefault("CPU", 1)
        n_gpu = counts.get("GPU", 0)
        cupy = None
        if n_gpu:
            cupy = _cupy()
            if cupy is None:
                raise DeviceError(f"requested gpu:{n_gpu} but cupy is not installed")
            seen = _gpu_count(cupy)
            if seen < n_gpu:
                raise DeviceError(f"requested gpu:{n_gpu} but cupy sees {seen} GPUs")
    else:
        cupy = _cupy()
        n_gpu = _gpu_count(cupy) if cupy is not None else 0
        counts = {"CPU": 1, "GPU": n_gpu}
    if counts["CPU"] + n_gpu == 0:
        raise DeviceError(f"devices '{spec}': no devices requested")
    out = [
        Device(device_name("CPU", i, job, task), "CPU", i, np, threads=threads) for i in range(counts["CPU"])
    ]
    out += [Device(device_name("GPU", i, job, task), "GPU", i, cupy, threads=threads) for i in range(n_gpu)]
    return out
