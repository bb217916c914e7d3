"""TFRecord files, byte-compatible with TensorFlow's ``tf.io.TFRecordWriter`` and readers.

A file is a sequence of records, each::

    uint64 length (little-endian) | uint32 masked crc32c of those 8 bytes | data | uint32 masked crc32c of data

optionally compressed as a whole (TF's ``compression_type``: ``""``, ``"ZLIB"`` a zlib stream,
``"GZIP"`` a gzip stream). Both checksums are verified on read; a damaged or truncated record is a
:class:`RecordFileError` naming the file and the record's index. Record offsets (what TF's
``TFRecordReader`` puts in its keys) are positions in the uncompressed stream.

The other record formats TF's reader ops read (fixed-length records, text lines, whole files)
stream through :func:`open_stream` too, so every reader takes the same compression options.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from specflow.errors import RuntimeFailure
from specflow.io.sstable import crc32c, mask_crc, unmask_crc

COMPRESSION_TYPES = ("", "ZLIB", "GZIP")
_HEADER = struct.Struct("<QI")  # length, masked crc of the length
_FOOTER = struct.Struct("<I")  # masked crc of the data
_CHUNK = 1 << 16


class RecordFileError(RuntimeFailure):
    """A record file that cannot be read: missing, corrupt, truncated, bad compression."""


def _check_compression(compression: str) -> str:
    if compression not in COMPRESSION_TYPES:
        raise RecordFileError(f"unknown compression type {compression!r}; expected one of '', 'ZLIB', 'GZIP'")
    return compression


class _ZlibStream:
    """A read-only binary stream over a zlib-compressed file (TF's ZLIB: a zlib header, no gzip)."""

    def __init__(self, raw: BinaryIO):
        self._raw = raw
        self._z = zlib.decompressobj()
        self._buf = b""
        self._pos = 0  # a read position, so small reads do not copy the rest of the buffer

    def read(self, n: int = -1) -> bytes:
        while (n < 0 or len(self._buf) - self._pos < n) and not self._z.eof:
            chunk = self._raw.read(_CHUNK)
            if not chunk:
                break
            self._buf = self._buf[self._pos :] + self._z.decompress(chunk)
            self._pos = 0
        end = len(self._buf) if n < 0 else min(len(self._buf), self._pos + n)
        out = self._buf[self._pos : end]
        self._pos = end
        return out

    def close(self) -> None:
        self._raw.close()


def open_stream(path: str | Path, compression: str = "") -> BinaryIO:
    """``path`` opened for reading, decompressing as ``compression`` says."""
    _check_compression(compression)
    try:
        if compression == "GZIP":
            return gzip.open(path, "rb")
        raw = open(path, "rb")
    except OSError as e:
        raise RecordFileError(f"cannot open {path}: {e.strerror or e}") from None
    return _ZlibStream(raw) if compression == "ZLIB" else raw


def _read(stream: BinaryIO, n: int, path, compression: str) -> bytes:
    try:
        return stream.read(n)
    except (OSError, EOFError, zlib.error) as e:  # gzip raises BadGzipFile (an OSError) and EOFError
        raise RecordFileError(f"{path}: not a readable {compression or 'uncompressed'} file ({e})") from None


def iter_records(path: str | Path, compression: str = "") -> Iterator[tuple[int, bytes]]:
    """``(offset, data)`` of every record of a TFRecord file, checksums verified."""
    stream = open_stream(path, compression)
    try:
        offset, index = 0, 0
        while True:
            header = _read(stream, _HEADER.size, path, compression)
            if not header:
                return
            where = f"{path}: record {index} (offset {offset})"
            if len(header) < _HEADER.size:
                raise RecordFileError(f"{where} is truncated: {len(header)} of its {_HEADER.size} header bytes")
            length, length_crc = _HEADER.unpack(header)
            if unmask_crc(length_crc) != crc32c(header[:8]):
                raise RecordFileError(f"{where} is corrupt: the length's checksum does not match")
            data = _read(stream, length, path, compression)
            footer = _read(stream, _FOOTER.size, path, compression)
            if len(data) < length or len(footer) < _FOOTER.size:
                raise RecordFileError(f"{where} is truncated: the file ends inside the record")
            if unmask_crc(_FOOTER.unpack(footer)[0]) != crc32c(data):
                raise RecordFileError(f"{where} is corrupt: the data's checksum does not match")
            yield offset, data
            offset += _HEADER.size + length + _FOOTER.size
            index += 1
    finally:
        stream.close()


def read_records(path: str | Path, compression: str = "") -> list[bytes]:
    """Every record of a TFRecord file, in order."""
    return [data for _, data in iter_records(path, compression)]


def encode_record(data: bytes) -> bytes:
    """One record's bytes, framed and checksummed."""
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", mask_crc(crc32c(length))) + data + _FOOTER.pack(mask_crc(crc32c(data)))


class TFRecordWriter:
    """Writes records to ``path`` (replacing it); use as a context manager or call :meth:`close`."""

    def __init__(self, path: str | Path, compression: str = ""):
        _check_compression(compression)
        self.path = Path(path)
        try:
            if compression == "GZIP":
                self._file: BinaryIO = gzip.open(self.path, "wb")
            else:
                self._file = open(self.path, "wb")
        except OSError as e:
            raise RecordFileError(f"cannot write {path}: {e.strerror or e}") from None
        self._z = zlib.compressobj() if compression == "ZLIB" else None

    def write(self, data: bytes) -> None:
        rec = encode_record(bytes(data))
        self._file.write(self._z.compress(rec) if self._z else rec)

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        if self._z is not None:
            self._file.write(self._z.flush())
            self._z = None
        self._file.close()

    def __enter__(self) -> TFRecordWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def write_records(path: str | Path, records: Iterable[bytes], compression: str = "") -> int:
    """Write ``records`` as a TFRecord file; returns how many were written."""
    n = 0
    with TFRecordWriter(path, compression) as w:
        for r in records:
            w.write(r)
            n += 1
    return n
