"""Limits checked before anything is allocated: the largest tensor a graph may declare.

A spec is input, like any file: ``shape: [100000, 100000]`` asks for 37 GiB. A variable, or any
node whose output shape and dtype are known statically, larger than the per-tensor limit is
refused at validation with its size (``graph/verify.py``, ``schema/layers/variables.py``). The
limit is 8 GiB unless the environment variable ``SPECFLOW_MAX_TENSOR_BYTES`` says otherwise.
"""

from __future__ import annotations

import math
import os

from specflow.errors import GraphError

DEFAULT_MAX_TENSOR_BYTES = 8 << 30
MAX_TENSOR_BYTES_ENV = "SPECFLOW_MAX_TENSOR_BYTES"
INT64_MAX = (1 << 63) - 1
INT32_MAX = (1 << 31) - 1


def max_tensor_bytes() -> int:
    """The per-tensor byte limit (read each time, so a test or a caller may change it)."""
    text = os.environ.get(MAX_TENSOR_BYTES_ENV)
    if not text:
        return DEFAULT_MAX_TENSOR_BYTES
    try:
        value = int(text)
    except ValueError:
        raise GraphError(f"{MAX_TENSOR_BYTES_ENV}={text!r} is not a byte count") from None
    if value < 1:
        raise GraphError(f"{MAX_TENSOR_BYTES_ENV}={text!r} must be at least 1")
    return value


def human_bytes(n: int) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def check_tensor_size(dims, itemsize: int, what: str) -> None:
    """GraphError if a tensor of ``dims`` (ints; Python ints never overflow here) with elements
    of ``itemsize`` bytes is over the limit. ``what`` names it: "variable 'w' of float32[...]"."""
    limit = max_tensor_bytes()
    n = math.prod(int(d) for d in dims) * int(itemsize)
    if n > limit:
        raise GraphError(f"{what} would take {n:,} bytes ({human_bytes(n)}), over the per-tensor limit of "
                         f"{limit:,} bytes ({human_bytes(limit)}; set {MAX_TENSOR_BYTES_ENV} to change it)")
