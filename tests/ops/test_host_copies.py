"""Host copies of small GPU arrays (ops/host_copies.py): a kept copy is read instead of a
device-to-host copy, only for the very array it was kept for, and never changes under a reader."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.ops import host_copies


class _DeviceArray:
    """What to_host needs of a device array: size, dtype and a copying ``get`` (counted)."""

    def __init__(self, value):
        self.value = np.asarray(value)
        self.size, self.dtype, self.copies = self.value.size, self.value.dtype, 0

    def get(self):
        self.copies += 1
        return self.value.copy()


def test_a_kept_copy_is_read_without_copying_and_only_for_its_own_array():
    a = host_copies.keep(_DeviceArray([4, 3]), np.array([4, 3]))
    got = host_copies.to_host(a)
    assert a.copies == 0 and got.tolist() == [4, 3] and not got.flags.writeable
    other = _DeviceArray([4, 3])
    assert host_copies.to_host(other).tolist() == [4, 3] and other.copies == 1


def test_large_arrays_are_not_kept():
    big = host_copies.keep(_DeviceArray(np.zeros(host_copies.MAX_ELEMENTS + 1)), np.zeros(host_copies.MAX_ELEMENTS + 1))
    host_copies.to_host(big)
    assert big.copies == 1


@pytest.mark.gpu
def test_a_gpu_const_and_shape_are_read_on_the_host_without_a_device_copy():
    import cupy

    from specflow.graph.graph_def import NodeDef
    from specflow.ops.eval import run_kernel
    from specflow.ops.registry import KernelContext, bind_attrs, get_op

    value = np.array([2, 8], np.int32)
    attrs = bind_attrs(get_op("Const"), [], {"value": value, "dtype": "int32"}, node="c")
    node = NodeDef("c", "Const", [], attrs=attrs)
    ctx = KernelContext(node=node, attrs=attrs, xp=cupy, device="/device:GPU:0", device_type="GPU")
    (out,) = run_kernel(node, [], attrs, device_type="GPU", ctx=ctx)
    assert type(out) is cupy.ndarray and ctx.host(out) is host_copies.to_host(out)
    assert ctx.host(out).tolist() == [2, 8]
