""".npy / .npz files read as untrusted input: the header is checked before numpy allocates.

``np.load`` allocates what a header declares before it reads the data, so a 100-byte file
claiming ``shape: (10**12,)`` asks for terabytes. :func:`load_array_file` parses the header
first (numpy's own parser, no pickle, numpy's header-size cap) and refuses a header that is
malformed, an object dtype, a negative or overflowing shape, more bytes than the file holds or
more than the per-tensor limit. Every problem is an :class:`NpyError` with one line to show.
"""

from __future__ import annotations

import math
import os
import zipfile
from typing import IO

import numpy as np
from numpy.lib import format as npy_format

from specflow.graph.limits import human_bytes, max_tensor_bytes


class NpyError(ValueError):
    """Not a readable .npy/.npz file; the message says why (one line)."""


def check_header(f: IO[bytes], available: int) -> tuple[np.dtype, tuple[int, ...]]:
    """Read and vet the header at ``f``'s position; ``available``: bytes from the header's
    start to the end of the file (or the archive member)."""
    start = f.tell()
    try:
        version = npy_format.read_magic(f)
        if version == (1, 0):
            shape, _, dtype = npy_format.read_array_header_1_0(f)
        elif version in ((2, 0), (3, 0)):
            shape, _, dtype = npy_format.read_array_header_2_0(f)
        else:
            raise ValueError(f"unsupported format version {version}")
    except (ValueError, OSError, EOFError, SyntaxError, TypeError, OverflowError) as e:
        raise NpyError(f"malformed header ({_short(e)})") from None
    if dtype.hasobject:
        raise NpyError("it holds Python objects (only numeric, bool and fixed-width string arrays are read)")
    if any(not isinstance(d, int) or d < 0 for d in shape):
        raise NpyError(f"malformed header (shape {shape})")
    nbytes = math.prod(shape) * dtype.itemsize
    data = available - (f.tell() - start)
    if nbytes > data:
        raise NpyError(f"the header declares {dtype}{list(shape)} ({nbytes:,} bytes) but the file holds {data:,}")
    limit = max_tensor_bytes()
    if nbytes > limit:
        raise NpyError(f"the array takes {nbytes:,} bytes, over the per-tensor limit ({human_bytes(limit)})")
    return dtype, shape


def load_array_file(path) -> np.ndarray | dict[str, np.ndarray]:
    """An .npy file's array, or an .npz archive's arrays by name; NpyError for anything else."""
    try:
        with open(path, "rb") as f:
            magic = f.read(6)
            f.seek(0)
            if magic.startswith(b"PK"):
                return _load_npz(f)
            size = os.fstat(f.fileno()).st_size
            check_header(f, size)
            f.seek(0)
            return np.load(f, allow_pickle=False)
    except NpyError:
        raise
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, MemoryError) as e:
        raise NpyError(_short(e)) from None


def _load_npz(f) -> dict[str, np.ndarray]:
    arrays = {}
    with zipfile.ZipFile(f) as z:
        for info in z.infolist():
            if not info.filename.endswith(".npy"):
                continue
            with z.open(info) as member:
                try:
                    check_header(_Counted(member), info.file_size)
                except NpyError as e:
                    raise NpyError(f"member {info.filename!r}: {e}") from None
        f.seek(0)
        with np.load(f, allow_pickle=False) as d:
            for name in d.files:
                arrays[name] = d[name]
    return arrays


class _Counted:
    """A zip member stream with the ``tell`` numpy's header reader needs."""

    def __init__(self, stream):
        self._stream, self._pos = stream, 0

    def read(self, n: int = -1) -> bytes:
        data = self._stream.read(n)
        self._pos += len(data)
        return data

    def tell(self) -> int:
        return self._pos


def _short(e: BaseException) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    return text if len(text) <= 160 else text[:157] + "..."
