"""Tensor bundles: round trips, the index field by field, TensorFlow's own files, corruption."""

from __future__ import annotations

import os
import shutil
import struct

import numpy as np
import pytest

from specflow.errors import CheckpointError
from specflow.graph import dtypes
from specflow.io import sstable
from specflow.io.extra_protos import BundleEntryProto, BundleHeaderProto
from specflow.io.tensor_bundle import (
    data_filename,
    index_filename,
    read_bundle,
    read_bundle_index,
    write_bundle,
)

DATA = os.path.join(os.path.dirname(__file__), "data")
NUMERIC = [d for d in dtypes.ALL_DTYPES if d.is_numeric or d.is_bool]
RNG = np.random.default_rng(7)


def _random(dtype: np.dtype, shape) -> np.ndarray:
    if dtype.kind == "b":
        return RNG.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return RNG.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    values = RNG.standard_normal(shape) * 100
    if dtype.kind == "c":
        values = values + 1j * RNG.standard_normal(shape)
    return values.astype(dtype)


def _assert_same(got: dict, want: dict) -> None:
    assert sorted(got) == sorted(want)
    for name, value in want.items():
        value = np.asarray(value)
        assert got[name].shape == value.shape, name
        if value.dtype.kind in "OSU":
            flat = [v.encode() if isinstance(v, str) else bytes(v) for v in value.reshape(-1).tolist()]
            assert got[name].dtype == object and list(got[name].reshape(-1)) == flat, name
        else:
            assert got[name].dtype == value.dtype, name
            np.testing.assert_array_equal(got[name], value, err_msg=name)


@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_round_trip_every_dtype(tmp_path, dtype):
    np_type = dtype.numpy
    tensors = {
        "matrix": _random(np_type, (3, 5)),
        "scalar": _random(np_type, ()),
        "empty": np.zeros((0, 4), np_type),
        "vector": _random(np_type, (7,)),
    }
    write_bundle(str(tmp_path / "ckpt"), tensors)
    _assert_same(read_bundle(str(tmp_path / "ckpt")), tensors)


def test_round_trip_strings_and_special_values(tmp_path):
    tensors = {
        "s": np.array([b"", b"abc", "héllo", b"\x00\xff" * 100], dtype=object).reshape(2, 2),
        "unicode": np.array(["a", "bb"]),
        "s_empty": np.array([], dtype=object),
        "s_scalar": np.array(b"x", dtype=object),
        "nan": np.array([np.nan, np.inf, -0.0], np.float32),
        "non_contiguous": np.arange(20, dtype=np.int64).reshape(4, 5)[:, ::2],
        "big_endian": np.arange(4, dtype=">i4"),
    }
    write_bundle(str(tmp_path / "ckpt"), tensors)
    got = read_bundle(str(tmp_path / "ckpt"))
    tensors["big_endian"] = tensors["big_endian"].astype("<i4")
    _assert_same(got, tensors)
    assert got["s"][1, 0] == "héllo".encode()


def test_many_keys_span_several_index_blocks(tmp_path):
    tensors = {f"layer_{i:03d}/kernel": np.full((2, 2), i, np.float32) for i in range(600)}
    write_bundle(str(tmp_path / "ckpt"), tensors)
    with open(index_filename(str(tmp_path / "ckpt")), "rb") as f:
        index = f.read()
    assert len(index) > 4 * 4096  # several data blocks
    _assert_same(read_bundle(str(tmp_path / "ckpt")), tensors)


def test_index_parsed_field_by_field(tmp_path):
    prefix = str(tmp_path / "ckpt")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array(5, np.int64)
    write_bundle(prefix, {"b": b, "a": a, "s": np.array([b"xy", b""], dtype=object)})
    items = sstable.read_table(index_filename(prefix))
    assert [k for k, _ in items] == [b"", b"a", b"b", b"s"]  # header first, then sorted names

    header = BundleHeaderProto.FromString(items[0][1])
    assert header.num_shards == 1
    assert header.endianness == BundleHeaderProto.LITTLE
    assert header.version.producer == 1 and header.version.min_consumer == 0

    entries = {k.decode(): BundleEntryProto.FromString(v) for k, v in items[1:]}
    assert entries == read_bundle_index(prefix)
    ea, eb, es = entries["a"], entries["b"], entries["s"]
    assert ea.dtype == 1 and [d.size for d in ea.shape.dim] == [2, 3]  # DT_FLOAT
    assert eb.dtype == 9 and eb.HasField("shape") and not eb.shape.dim  # DT_INT64, scalar
    assert es.dtype == 7  # DT_STRING
    assert all(e.shard_id == 0 for e in entries.values())
    assert (ea.offset, ea.size) == (0, 24)
    assert (eb.offset, eb.size) == (24, 8)
    # Strings: varint lengths (2, 0), masked crc of the lengths, then the bytes.
    assert (es.offset, es.size) == (32, 2 + 4 + 2)
    with open(data_filename(prefix), "rb") as f:
        data = f.read()
    assert data[:24] == a.tobytes() and data[24:32] == b.tobytes()
    assert data[32:34] == b"\x02\x00" and data[38:] == b"xy"
    lengths_crc = sstable.crc32c(struct.pack("<II", 2, 0))
    assert struct.unpack_from("<I", data, 34)[0] == sstable.mask_crc(lengths_crc)
    assert ea.crc32c == sstable.mask_crc(sstable.crc32c(a.tobytes()))
    assert es.crc32c == sstable.mask_crc(sstable.crc32c(data[34:], lengths_crc))


def _tf_expected() -> dict[str, np.ndarray]:
    """The values tests/io/data/tf_saved holds (written by TensorFlow 2.21's SaveV2)."""
    base = np.arange(6, dtype=np.float64).reshape(2, 3) - 2.5
    want = {"bool": base > 0, "scalar": np.array(7, np.int64), "empty": np.zeros((0, 2), np.float32)}
    for d in NUMERIC:
        if not d.is_bool and d.name != "bfloat16":  # (the bundle predates specflow's bfloat16)
            want[d.name] = (np.abs(base) if d.name.startswith("uint") else base).astype(d.numpy)
    want["strings"] = np.array([[b"", b"abc"], [b"\xff\x00", b"y" * 40]], dtype=object)
    return want


def test_reads_a_bundle_tensorflow_wrote():
    _assert_same(read_bundle(os.path.join(DATA, "tf_saved")), _tf_expected())


def test_writes_what_tensorflow_writes(tmp_path):
    """Same tensors -> the same data file byte for byte, and the same index entries (with
    TensorFlow's 256 KiB block size, the same index file byte for byte)."""
    write_bundle(str(tmp_path / "ours"), _tf_expected())
    theirs = os.path.join(DATA, "tf_saved")
    with open(data_filename(theirs), "rb") as f, open(data_filename(str(tmp_path / "ours")), "rb") as g:
        assert f.read() == g.read()
    ours_items = sstable.read_table(index_filename(str(tmp_path / "ours")))
    with open(index_filename(theirs), "rb") as f:
        theirs_index = f.read()
    assert ours_items == sstable.decode_table(theirs_index, "tf")
    assert sstable.encode_table(ours_items, block_size=256 * 1024) == theirs_index


def test_write_rejects_bad_input(tmp_path):
    with pytest.raises(CheckpointError, match="must not be empty"):
        write_bundle(str(tmp_path / "c"), {"": np.zeros(2)})
    with pytest.raises(CheckpointError, match="'x'"):
        write_bundle(str(tmp_path / "c"), {"x": np.array([{}], dtype=object)})
    assert os.listdir(tmp_path) == []  # nothing half-written left behind


# -- corruption ----------------------------------------------------------------------------------


@pytest.fixture
def saved(tmp_path):
    prefix = str(tmp_path / "ckpt")
    write_bundle(prefix, {"w": np.arange(1000, dtype=np.float32), "s": np.array([b"abc"], dtype=object)})
    return prefix


def _flip(path: str, at: int) -> None:
    with open(path, "r+b") as f:
        f.seek(at)
        byte = f.read(1)
        f.seek(at)
        f.write(bytes([byte[0] ^ 0x01]))


def test_corrupt_tensor_bytes(saved):
    _flip(data_filename(saved), 100 + read_bundle_index(saved)["w"].offset)
    with pytest.raises(CheckpointError, match=r"tensor 'w': checksum mismatch") as err:
        read_bundle(saved)
    assert data_filename(saved) in str(err.value)


def test_corrupt_string_lengths(saved):
    _flip(data_filename(saved), read_bundle_index(saved)["s"].offset)
    with pytest.raises(CheckpointError, match="tensor 's'"):
        read_bundle(saved)


def test_truncated_data(saved):
    os.truncate(data_filename(saved), 2000)
    with pytest.raises(CheckpointError, match=r"needs bytes \[.*\) but the file has 2000: truncated"):
        read_bundle(saved)


def test_corrupt_index(saved):
    _flip(index_filename(saved), 20)
    with pytest.raises(CheckpointError, match="block checksum mismatch") as err:
        read_bundle(saved)
    assert index_filename(saved) in str(err.value)


def test_truncated_index(saved):
    os.truncate(index_filename(saved), os.path.getsize(index_filename(saved)) - 1)
    with pytest.raises(CheckpointError, match="bad magic"):
        read_bundle_index(saved)


def test_missing_files(saved, tmp_path):
    os.remove(data_filename(saved))
    with pytest.raises(CheckpointError, match="cannot open checkpoint data"):
        read_bundle(saved)
    with pytest.raises(CheckpointError, match="index not found"):
        read_bundle(str(tmp_path / "other"))


def _rewrite_index(prefix: str, edit) -> None:
    """Re-encode the index after ``edit(items)`` changes its (key, value) list."""
    items = sstable.read_table(index_filename(prefix))
    edit(items)
    sstable.write_table(index_filename(prefix), items)


def test_entry_size_disagreeing_with_shape(saved):
    def edit(items):
        entry = BundleEntryProto.FromString(items[2][1])
        entry.size -= 4
        items[2] = (items[2][0], entry.SerializeToString())

    _rewrite_index(saved, edit)
    with pytest.raises(CheckpointError, match=r"tensor 'w' of float32\[1000\] has 3996 bytes"):
        read_bundle(saved)


def test_missing_header_and_newer_version(saved, tmp_path):
    other = str(tmp_path / "other")
    shutil.copy(data_filename(saved), data_filename(other))
    shutil.copy(index_filename(saved), index_filename(other))
    _rewrite_index(saved, lambda items: items.pop(0))
    with pytest.raises(CheckpointError, match="no bundle header"):
        read_bundle(saved)

    def newer(items):
        header = BundleHeaderProto.FromString(items[0][1])
        header.version.min_consumer = 2
        items[0] = (b"", header.SerializeToString())

    _rewrite_index(other, newer)
    with pytest.raises(CheckpointError, match="newer than this reader"):
        read_bundle(other)
