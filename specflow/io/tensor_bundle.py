"""TensorFlow's tensor bundle: the checkpoint format ``tf.train.load_checkpoint`` reads.

A bundle at ``PREFIX`` is two files:

- ``PREFIX.data-00000-of-00001``: each tensor's little-endian bytes, concatenated unaligned in
  key order. A string tensor is its lengths as varint64s, a 4-byte masked crc32c of the lengths,
  then the bytes of every element.
- ``PREFIX.index``: a LevelDB table (see ``sstable``) mapping ``""`` to a ``BundleHeaderProto``
  and each tensor name to a ``BundleEntryProto`` (dtype, shape, shard, offset, size, and the
  masked crc32c of the tensor's bytes as TensorFlow computes it).

``write_bundle`` writes both under temporary names in the target directory, fsyncs them and
renames data then index, so a bundle whose ``.index`` exists is complete. Reading checks every
table crc, entry size and tensor crc, and raises :class:`CheckpointError` naming the file.
"""

from __future__ import annotations

import os
import secrets
import struct
from collections.abc import Mapping

import numpy as np

from specflow.errors import CheckpointError, Location, SpecflowError
from specflow.graph import dtypes
from specflow.graph.names import check_checkpoint_key
from specflow.io.extra_protos import BundleEntryProto, BundleHeaderProto
from specflow.io.sstable import (
    FormatError,
    crc32c,
    decode_varint,
    encode_table,
    encode_varint,
    mask_crc,
    read_table,
    unmask_crc,
)
from specflow.io.tensor_slices import SLICE_KEY_MARK, SliceSpec, overlap

HEADER_KEY = b""  # sorts first: TensorFlow readers expect the header as the first entry
FORMAT_VERSION = 1  # TensorFlow's kTensorBundleVersion
TEMP_MARKER = ".tempstate"  # TensorFlow's suffix for files of an unfinished bundle


def data_filename(prefix: str, shard: int = 0, num_shards: int = 1) -> str:
    return f"{prefix}.data-{shard:05d}-of-{num_shards:05d}"


def index_filename(prefix: str) -> str:
    return f"{prefix}.index"


def _fail(path: str, message: str) -> CheckpointError:
    return CheckpointError(message, location=Location(path))


# -- encoding one tensor ------------------------------------------------------------------------


def _as_tensor(name: str, value) -> tuple[dtypes.DType, np.ndarray]:
    array = np.asarray(value)
    try:
        dtype = dtypes.as_dtype(array.dtype.newbyteorder("="))  # any byte order in, little out
    except TypeError as e:
        raise CheckpointError(f"tensor '{name}': {e}") from None
    if dtype is not dtypes.string:
        array = np.asarray(array, dtype=dtype.numpy.newbyteorder("<"), order="C")  # keeps 0-d
    return dtype, array


def _string_bytes(name: str, array: np.ndarray) -> list[bytes]:
    items = []
    for item in array.reshape(-1).tolist():
        if isinstance(item, str):
            item = item.encode("utf-8")
        if not isinstance(item, bytes):
            raise CheckpointError(
                f"tensor '{name}': string tensors hold str or bytes, not {type(item).__name__}"
            )
        items.append(item)
    return items


def _encode_strings(items: list[bytes]) -> tuple[bytes, int]:
    """TensorFlow's on-disk string tensor and its (unmasked) crc32c.

    The crc covers each length as a little-endian uint32 (uint64 past 4 GiB; not the varint
    bytes), then the stored length checksum, then the string bytes.
    """
    crc = 0
    for item in items:
        crc = crc32c(struct.pack("<I" if len(item) <= 0xFFFFFFFF else "<Q", len(item)), crc)
    length_crc = struct.pack("<I", mask_crc(crc))
    crc = crc32c(length_crc, crc)
    body = b"".join(items)
    crc = crc32c(body, crc)
    return b"".join(encode_varint(len(i)) for i in items) + length_crc + body, crc


def _decode_strings(buf: bytes, count: int) -> tuple[list[bytes], int]:
    """Inverse of ``_encode_strings``: the strings and the crc computed over what was read."""
    lengths, pos, crc = [], 0, 0
    for _ in range(count):
        length, pos = decode_varint(buf, pos)
        lengths.append(length)
        crc = crc32c(struct.pack("<I" if length <= 0xFFFFFFFF else "<Q", length), crc)
    if pos + 4 > len(buf):
        raise FormatError("string lengths run past the entry")
    (stored,) = struct.unpack_from("<I", buf, pos)
    if unmask_crc(stored) != crc:
        raise FormatError("string length checksum mismatch")
    crc = crc32c(buf[pos : pos + 4], crc)
    pos += 4
    if pos + sum(lengths) != len(buf):
        raise FormatError(f"string bytes take {sum(lengths)} bytes, the entry has {len(buf) - pos}")
    items = []
    for length in lengths:
        items.append(buf[pos : pos + length])
        pos += length
    return items, crc32c(buf[len(buf) - sum(lengths) :], crc)


# -- writing ------------------------------------------------------------------------------------


def fsync_dir(directory: str) -> None:
    """Make renames inside ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def usual_mode(path: str) -> None:
    """Give a file or directory made by ``tempfile`` (mode 0600/0700) the mode ``open``/``mkdir``
    would have given it (0666/0777 less the umask), so an export renamed into place is as
    readable as any other file the user writes."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, (0o777 if os.path.isdir(path) else 0o666) & ~umask)


def write_synced(path: str, chunks) -> None:
    """Write the byte chunks to ``path`` and fsync it."""
    with open(path, "wb") as f:
        for chunk in chunks:
            f.write(chunk)
        f.flush()
        os.fsync(f.fileno())


def _data_entry(name: str, value) -> tuple[object, bytes]:
    """An entry (offset and shard still to set) and the bytes it points at."""
    dtype, array = _as_tensor(name, value)
    if dtype is dtypes.string:
        data, crc = _encode_strings(_string_bytes(name, array))
    else:
        data = array.reshape(-1).view(np.uint8)
        crc = crc32c(data)
    entry = BundleEntryProto(dtype=dtype.tf_enum, shard_id=0, size=len(data))
    entry.crc32c = mask_crc(crc)
    entry.shape.SetInParent()  # present even for a scalar, as TensorFlow writes it
    for dim in array.shape:
        entry.shape.dim.add(size=dim)
    return entry, data


def write_bundle(prefix: str, tensors: Mapping[str, object], slices: Mapping[str, SliceSpec] | None = None) -> None:
    """Write ``tensors`` (name -> array; numeric, bool or string) as a bundle at ``prefix``.

    ``slices``: for a tensor that is a slice of a larger one (a part of a partitioned variable),
    which slice of which tensor; its key in ``tensors`` is then only a label, and the bundle holds
    the larger tensor's name with its slices listed (``tensor_slices``), as TensorFlow saves it.

    Atomic per file: a crash leaves either the old files or the new ones at the final names
    (plus ``*.tempstate*`` leftovers). The index is renamed last, so it marks completeness.
    """
    directory = os.path.dirname(os.path.abspath(prefix))
    os.makedirs(directory, exist_ok=True)
    header = BundleHeaderProto(num_shards=1, endianness=BundleHeaderProto.LITTLE)
    header.version.producer = FORMAT_VERSION
    data_entries: dict[bytes, tuple[object, bytes]] = {}
    sliced: dict[bytes, object] = {}  # full name -> its entry listing the slices
    for label, value in tensors.items():
        spec = (slices or {}).get(label)
        name = label if spec is None else spec.full_name
        if not name:
            raise CheckpointError("a tensor name must not be empty (the empty key holds the bundle header)")
        entry, data = _data_entry(name, value)
        if spec is not None and not spec.is_full:
            if tuple(d.size for d in entry.shape.dim) != spec.shape:
                raise CheckpointError(f"tensor '{name}': a value of shape {list(np.shape(value))} for slice "
                                      f"{spec.text()!r}")  # fmt: skip
            full = sliced.get(name.encode("utf-8"))
            if full is None:
                full = sliced[name.encode("utf-8")] = BundleEntryProto(dtype=entry.dtype)
                full.shape.SetInParent()
                for d in spec.full_shape:
                    full.shape.dim.add(size=d)
            elif full.dtype != entry.dtype or tuple(d.size for d in full.shape.dim) != spec.full_shape:
                raise CheckpointError(f"tensor '{name}': its slices disagree on its dtype or shape")
            full.slices.add().CopyFrom(spec.proto())
            key = spec.key()
        else:
            key = name.encode("utf-8")
        if key in data_entries:
            raise CheckpointError(f"tensor '{name}' is written twice"
                                  + (f" (slice {spec.text()!r})" if key[:1] == SLICE_KEY_MARK else ""))  # fmt: skip
        data_entries[key] = (entry, data)
    clash = set(sliced) & set(data_entries)
    if clash:
        raise CheckpointError(f"tensor '{min(clash).decode()}' is written both whole and in slices")
    entries, chunks, offset = [(HEADER_KEY, header.SerializeToString())], [], 0
    for key in sorted([*data_entries, *sliced]):
        if key in sliced:
            entries.append((key, sliced[key].SerializeToString()))
            continue
        entry, data = data_entries[key]
        entry.offset = offset
        entries.append((key, entry.SerializeToString()))
        chunks.append(data)
        offset += len(data)

    suffix = TEMP_MARKER + secrets.token_hex(8)
    data_tmp, index_tmp = data_filename(prefix) + suffix, index_filename(prefix) + suffix
    try:
        write_synced(data_tmp, chunks)
        write_synced(index_tmp, [encode_table(entries)])
        os.replace(data_tmp, data_filename(prefix))
        os.replace(index_tmp, index_filename(prefix))
    finally:  # after a failure (not a kill), leave nothing behind
        for path in (data_tmp, index_tmp):
            if os.path.exists(path):
                os.remove(path)
    fsync_dir(directory)


def merge_bundles(sources: list[str], prefix: str) -> None:
    """Bundles ``sources`` become one bundle at ``prefix`` (TensorFlow's ``MergeBundles``): their
    data files are renamed into its shards, not copied, and one index lists every entry, the
    slices of a tensor saved in pieces by several sources joined into its one entry. The index
    is renamed into place last: until then the merged bundle does not exist for any reader."""
    entries: dict[bytes, object] = {}
    renames, base = [], 0
    for src in sources:
        header, items = _read_raw_index(src)
        for key, entry in items:
            old = entries.get(key)
            if entry.slices and old is not None and old.slices:
                if old.dtype != entry.dtype or old.shape != entry.shape:
                    raise _fail(index_filename(src), f"tensor '{key.decode()}': its slices disagree on its dtype or shape")
                old.slices.extend(entry.slices)
                continue
            if old is not None:
                raise _fail(index_filename(src), f"tensor {_key_text(key)} is in more than one bundle to merge")
            if not entry.slices:
                entry.shard_id += base
            entries[key] = entry
        renames += [(data_filename(src, k, header.num_shards), base + k) for k in range(header.num_shards)]
        base += header.num_shards
    header = BundleHeaderProto(num_shards=base, endianness=BundleHeaderProto.LITTLE)
    header.version.producer = FORMAT_VERSION
    for path, k in renames:
        if os.path.abspath(path) != os.path.abspath(data_filename(prefix, k, base)):
            os.replace(path, data_filename(prefix, k, base))
    tmp = index_filename(prefix) + TEMP_MARKER + secrets.token_hex(8)
    try:
        table = [(HEADER_KEY, header.SerializeToString())] + [(k, entries[k].SerializeToString()) for k in sorted(entries)]
        write_synced(tmp, [encode_table(table)])
        os.replace(tmp, index_filename(prefix))
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    fsync_dir(os.path.dirname(os.path.abspath(prefix)))


def _key_text(key: bytes) -> str:
    return f"'{key.decode('utf-8', 'replace')}'" if key[:1] != SLICE_KEY_MARK else "slice " + repr(key)


# -- reading ------------------------------------------------------------------------------------


def _read_raw_index(prefix: str) -> tuple[object, list[tuple[bytes, object]]]:
    """The header and every (key, entry) of the index, slices' own entries included."""
    path = index_filename(prefix)
    if not os.path.exists(path):
        raise _fail(path, "checkpoint index not found")
    items = read_table(path)
    if not items or items[0][0] != HEADER_KEY:
        raise _fail(path, "no bundle header (the table has no empty-key entry)")
    header = BundleHeaderProto()
    try:
        header.ParseFromString(items[0][1])
    except Exception:
        raise _fail(path, "bundle header does not parse") from None
    if header.endianness != BundleHeaderProto.LITTLE:
        raise _fail(path, "big-endian bundles are not supported")
    if header.version.min_consumer > FORMAT_VERSION or FORMAT_VERSION in header.version.bad_consumers:
        raise _fail(
            path, f"bundle format version {header.version} is newer than this reader ({FORMAT_VERSION})"
        )
    if header.num_shards < 1:
        raise _fail(path, f"bundle header has num_shards={header.num_shards}")
    out = []
    for key, value in items[1:]:
        entry = BundleEntryProto()
        try:
            entry.ParseFromString(value)
            if key[:1] != SLICE_KEY_MARK:
                check_checkpoint_key(key.decode("utf-8"))
        except SpecflowError as e:
            raise _fail(path, e.message) from None
        except Exception:
            raise _fail(path, f"entry {key!r} does not parse") from None
        out.append((key, entry))
    return header, out


def _read_index(prefix: str) -> tuple[object, dict[str, object], dict[bytes, object]]:
    """The header, the tensors by name, and the entries of slices by their keys."""
    header, items = _read_raw_index(prefix)
    named = {k.decode("utf-8"): e for k, e in items if k[:1] != SLICE_KEY_MARK}
    return header, named, {k: e for k, e in items if k[:1] == SLICE_KEY_MARK}


def read_bundle_index(prefix: str) -> dict[str, object]:
    """Tensor name -> its ``BundleEntryProto`` (dtype, shape, offset, size, crc32c; a tensor
    saved in slices: its full shape and the slices, no data), in key order."""
    return _read_index(prefix)[1]


def _check_entry(path: str, name: str, entry, num_shards: int) -> tuple[dtypes.DType, tuple[int, ...]]:
    try:
        dtype = dtypes.as_dtype(entry.dtype)
        if dtype is dtypes.resource:
            raise TypeError("resource handles are not saved values")
    except TypeError as e:
        raise _fail(path, f"tensor '{name}': {e}") from None
    shape = tuple(d.size for d in entry.shape.dim)
    if entry.shape.unknown_rank or any(d < 0 for d in shape):
        raise _fail(path, f"tensor '{name}' has an invalid shape {shape}")
    if entry.slices:  # no data of its own: each slice's entry is checked as it is read
        return dtype, shape
    if not 0 <= entry.shard_id < num_shards:
        raise _fail(path, f"tensor '{name}' names shard {entry.shard_id} of {num_shards}")
    if dtype is not dtypes.string and entry.size != int(np.prod(shape)) * dtype.itemsize:
        raise _fail(path, f"tensor '{name}' of {dtype.name}{list(shape)} has {entry.size} bytes")
    return dtype, shape


def _read_value(path: str, f, file_size: int, name: str, entry, dtype, shape) -> np.ndarray:
    end = entry.offset + entry.size
    if entry.offset < 0 or end > file_size:
        raise _fail(
            path,
            f"tensor '{name}' needs bytes [{entry.offset}, {end}) but the file has {file_size}: truncated",
        )
    f.seek(entry.offset)
    buf = bytearray(entry.size)
    if f.readinto(buf) != entry.size:
        raise _fail(path, f"short read for tensor '{name}'")
    if dtype is dtypes.string:
        count = int(np.prod(shape))
        if entry.size == 0 and count == 0:  # TensorFlow's reader accepts an empty entry here
            return np.empty(shape, dtype=object)
        try:
            items, crc = _decode_strings(bytes(buf), count)
        except FormatError as e:
            raise _fail(path, f"tensor '{name}': {e}") from None
        array = np.empty(len(items), dtype=object)
        array[:] = items
        value = array.reshape(shape)
    else:
        value = np.frombuffer(buf, dtype=dtype.numpy.newbyteorder("<")).reshape(shape)
        crc = crc32c(value)
        value = value.astype(dtype.numpy, copy=False)  # native byte order (a no-op on x86/ARM)
    if unmask_crc(entry.crc32c) != crc:
        raise _fail(path, f"tensor '{name}': checksum mismatch (data corrupted)")
    return value


class _Reader:
    """Reads entries of one bundle, opening each data file once."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.index = index_filename(prefix)
        self.header, self.entries, self.slice_entries = _read_index(prefix)
        self.files: dict[int, tuple[str, object, int]] = {}

    def close(self) -> None:
        for _, f, _ in self.files.values():
            f.close()

    def _plain(self, name: str, entry, dtype, shape) -> np.ndarray:
        if entry.shard_id not in self.files:
            path = data_filename(self.prefix, entry.shard_id, self.header.num_shards)
            try:
                f = open(path, "rb")
            except OSError as e:
                raise _fail(path, f"cannot open checkpoint data: {e.strerror}") from None
            self.files[entry.shard_id] = (path, f, os.fstat(f.fileno()).st_size)
        path, f, size = self.files[entry.shard_id]
        return _read_value(path, f, size, name, entry, dtype, shape)

    def read(self, name: str, want: SliceSpec | None = None) -> np.ndarray:
        """Tensor ``name``, or its slice ``want`` (whichever way it was saved: whole or in slices)."""
        entry = self.entries[name]
        dtype, shape = _check_entry(self.index, name, entry, self.header.num_shards)
        if want is not None and want.full_shape != shape:
            raise _fail(self.index, f"tensor '{name}' is saved with shape {list(shape)}, but the slice asked "
                                    f"for is of shape {list(want.full_shape)}")  # fmt: skip
        if not entry.slices:
            value = self._plain(name, entry, dtype, shape)
            return value if want is None else value[tuple(slice(s, e) for s, e in want.bounds)]
        want = want or SliceSpec(name, shape, ((0, -1),) * len(shape))
        out = np.empty(want.shape, dtype=object if dtype is dtypes.string else dtype.numpy)
        copied = 0
        for proto in entry.slices:
            stored = SliceSpec.from_proto(name, shape, proto)
            if len(stored.extents) != len(shape):
                raise _fail(self.index, f"tensor '{name}' lists a slice of rank {len(stored.extents)}; it has rank {len(shape)}")
            part = self.slice_entries.get(stored.key())
            if part is None:
                raise _fail(self.index, f"tensor '{name}': slice {stored.text()!r} has no entry")
            if tuple(d.size for d in part.shape.dim) != stored.shape or part.dtype != entry.dtype:
                raise _fail(self.index, f"tensor '{name}': slice {stored.text()!r} is stored with another shape or dtype")
            copied += self._copy(out, want, stored, name, part, dtype)
        if copied != out.size:
            raise _fail(self.index, f"tensor '{name}': its saved slices do not cover {want.text()!r}")
        return out

    def _copy(self, out, want: SliceSpec, stored: SliceSpec, name: str, part, dtype) -> int:
        """Copy what of saved slice ``stored`` lies in ``want`` into ``out``; returns how many
        elements that was (none: its data is not read)."""
        where = overlap(want, stored)
        if where is None:
            return 0
        src, dst = where
        out[dst] = self._plain(name, part, dtype, stored.shape)[src]
        return int(np.prod([s.stop - s.start for s in src]))


def read_bundle_each(prefix: str, requests) -> list[np.ndarray | None]:
    """Per (name, slice spec or None) of ``requests``, that tensor or slice (None: the bundle has
    no such tensor), the index read once: RestoreV2 of a model's 2,000 variables read it once
    per tensor (100 s for NASNetMobile's SavedModel)."""
    reader = _Reader(prefix)
    try:
        return [reader.read(name, spec) if name in reader.entries else None for name, spec in requests]
    finally:
        reader.close()


def read_bundle(prefix: str, names=None, slices: Mapping[str, SliceSpec] | None = None) -> dict[str, np.ndarray]:
    """Every tensor of the bundle at ``prefix`` (or only ``names``, those present: a ps task's
    restore reads just its own), by name; a tensor saved in slices comes back whole, or as the
    slice ``slices[name]`` asks for. Strings come back as object arrays of bytes."""
    reader = _Reader(prefix)
    try:
        wanted = reader.entries if names is None else [n for n in names if n in reader.entries]
        return {name: reader.read(name, (slices or {}).get(name)) for name in wanted}
    finally:
        reader.close()
