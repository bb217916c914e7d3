"""Host copies of small GPU arrays whose values the host already holds.

A GPU Const's value and a GPU Shape's output start on the host. Kernels read such tensors on the
host (a Reshape's shape, a Sum's axes, a backprop's input sizes: ``KernelContext.host``), and a
CPU partition receives them: a device-to-host copy would wait for all the work queued on the GPU
before it. Keeping the host array beside the device one skips that copy (TF keeps such int32
tensors in host memory for the same reason). Keyed by the device array's id and checked by
identity; bounded, and cleared when full (a cleared entry only costs the copy again).
"""

from __future__ import annotations

from typing import Any

import numpy as np

MAX_ELEMENTS = 64  # only small arrays (shapes, axes, scalars) are kept
MAX_ENTRIES = 4096

_KEPT: dict[int, tuple[Any, np.ndarray]] = {}


def keep(device_array: Any, host_array: np.ndarray) -> Any:
    """Remember ``host_array`` as ``device_array``'s value (when small); returns ``device_array``."""
    if device_array.size <= MAX_ELEMENTS:
        if len(_KEPT) >= MAX_ENTRIES:
            _KEPT.clear()
        host = np.array(host_array, dtype=device_array.dtype)
        host.flags.writeable = False  # handed to readers and fetches: never changed under them
        _KEPT[id(device_array)] = (device_array, host)
    return device_array


def to_host(x: Any) -> np.ndarray:
    """A device array as numpy: its kept host copy, else a copy from the device."""
    kept = _KEPT.get(id(x))
    if kept is not None and kept[0] is x:
        return kept[1]
    return x.get()
