"""Runtime ops (specflow/ops/runtime_ops.py): the 16-bit transfer conversions against numpy bit
arithmetic; _Arg/_Retval/_Send/_Recv need a step's call frame or rendezvous to run."""

import numpy as np

from tests.ops.harness import Case, f32


def _top16(x):
    return (x.view(np.uint32) >> 16).astype(np.uint16)


def _widen(y):
    return (y.astype(np.uint32) << 16).view(np.float32)


# Literal bit patterns: truncation (1 + 2^-7 + 2^-8 keeps 1 + 2^-7: no rounding up), signed
# zero, infinities, the smallest subnormal (its bits are all low: it becomes +0), and NaNs (one
# with a payload only in the low bits stays a NaN).
_BITS = np.array(
    [0x3F80_0000, 0x3F81_8000, 0x8000_0000, 0x7F80_0000, 0xFF80_0000, 0x0000_0001, 0x7FC0_0000, 0x7F80_0001],
    np.uint32,
).view(np.float32)
_BITS_OUT = np.array([0x3F80, 0x3F81, 0x8000, 0x7F80, 0xFF80, 0x0000, 0x7FC0, 0x7FC0], np.uint16)

CASES: list = [
    Case("_TruncateToBfloat16", [f32(3, 5, low=-1e4, high=1e4)], ref=_top16, id="TruncateToBfloat16"),
    Case("_TruncateToBfloat16", [f32(4, 6)[:, ::2]], ref=_top16, id="TruncateToBfloat16-strided"),
    Case("_TruncateToBfloat16", [_BITS], ref=lambda x: _BITS_OUT, id="TruncateToBfloat16-bits"),
    Case("_TruncateToBfloat16", [np.float32(-3.7)], ref=_top16, id="TruncateToBfloat16-scalar"),
    Case("_ExpandFromBfloat16", [np.uint16(0xC06C)], ref=_widen, id="ExpandFromBfloat16-scalar"),
    Case("_ExpandFromBfloat16", [np.arange(0, 65536, 97, dtype=np.uint16).reshape(-1, 1)], ref=_widen,
         id="ExpandFromBfloat16"),
    Case("_ExpandFromBfloat16", [_BITS_OUT], ref=lambda y: _widen(_BITS_OUT), id="ExpandFromBfloat16-bits"),
    # The control token: a float32 scalar 0 in host memory, whatever the attr holds.
    Case("_HostConst", [], attrs={"value": np.float32(0), "dtype": "float32"}, ref=lambda: np.float32(0),
         id="HostConst"),
]

EXEMPT = {
    "_Arg": "reads the step's call frame; tests/runtime/test_executor.py, test_session.py",
    "_Retval": "writes the step's call frame; tests/runtime/test_executor.py, test_session.py",
    "_Send": "needs a rendezvous; tests/runtime/test_executor.py",
    "_Recv": "asynchronous, needs a rendezvous; tests/runtime/test_executor.py",
}
