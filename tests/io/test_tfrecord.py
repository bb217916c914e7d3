"""TFRecord files (specflow/io/tfrecord.py): round trips, TF-written files (tests/io/data, written
by TF 2.21's tf.io.TFRecordWriter, uncompressed, GZIP and ZLIB), and damaged files."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from specflow.graph import dtypes
from specflow.graph.shapes import Shape
from specflow.io.extra_protos import Example
from specflow.io.tfrecord import RecordFileError, encode_record, iter_records, read_records, write_records
from specflow.ops.parse_ops import FeatureSpec, ParseError, parse_examples

DATA = Path(__file__).parent / "data"
RECORDS = [b"", b"a", b"hello" * 100, bytes(range(256)) * 40]


@pytest.mark.parametrize("compression", ["", "ZLIB", "GZIP"])
def test_round_trip(tmp_path, compression):
    path = tmp_path / "r.tfrecord"
    assert write_records(path, RECORDS, compression) == len(RECORDS)
    assert read_records(path, compression) == RECORDS
    offsets = [o for o, _ in iter_records(path, compression)]
    assert offsets == list(np.cumsum([0] + [len(r) + 16 for r in RECORDS[:-1]]))


def test_record_framing_is_tfs():
    # b"abc" framed by TF 2.21's TFRecordWriter (length, masked crc32c of it, data, masked crc32c of it)
    assert encode_record(b"abc").hex() == "0300000000000000" "b099490e" "616263" "6e57f121"


@pytest.mark.parametrize("name,compression", [("tf_written.tfrecord", ""), ("tf_written.tfrecord.gz", "GZIP"),
                                              ("tf_written.tfrecord.zz", "ZLIB")])  # fmt: skip
def test_reads_tf_written_files_and_parses_as_tf(name, compression):
    records = read_records(DATA / name, compression)
    assert len(records) == 6
    serialized = np.empty(6, dtype=object)
    serialized[:] = records
    spec = FeatureSpec(sparse=[("tags", dtypes.string)],
                       dense=[("x", dtypes.float32, Shape([3]), np.zeros(0, np.float32)),
                              ("y", dtypes.int64, Shape([]), np.zeros(0, np.int64))])  # fmt: skip
    (tags,), (x, y), _ = parse_examples(serialized, spec)
    want = np.load(DATA / "tf_written_expected.npz")
    np.testing.assert_array_equal(x, want["x"])
    np.testing.assert_array_equal(y, want["y"])
    np.testing.assert_array_equal(tags[0], want["tags_indices"])
    assert list(tags[1]) == list(want["tags_values"])
    np.testing.assert_array_equal(tags[2], want["tags_shape"])


def _damaged(tmp_path, at: int, flip=True) -> Path:
    path = tmp_path / "d.tfrecord"
    write_records(path, [b"first", b"second", b"third"])
    data = bytearray(path.read_bytes())
    if flip:
        data[at] ^= 0x01
    else:
        data = data[:at]
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("at,what", [(21, "record 1 (offset 21) is corrupt: the length's checksum"),
                                     (21 + 12 + 2, "record 1 (offset 21) is corrupt: the data's checksum"),
                                     (21 + 12 + 6 + 1, "record 1 (offset 21) is corrupt: the data's checksum")])  # fmt: skip
def test_corruption_names_file_and_record(tmp_path, at, what):
    path = _damaged(tmp_path, at)
    with pytest.raises(RecordFileError, match=re.escape(f"d.tfrecord: {what}")) as e:
        read_records(path)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("at", [21 + 5, 21 + 12 + 3, 21 + 12 + 6 + 2])
def test_truncated_file(tmp_path, at):
    with pytest.raises(RecordFileError, match=r"record 1 \(offset 21\) is truncated"):
        read_records(_damaged(tmp_path, at, flip=False))


def test_wrong_compression_is_an_error(tmp_path):
    path = tmp_path / "plain.tfrecord"
    write_records(path, [b"x"])
    with pytest.raises(RecordFileError, match="not a readable GZIP file"):
        read_records(path, "GZIP")
    with pytest.raises(RecordFileError, match="unknown compression type 'LZ4'"):
        read_records(path, "LZ4")


def _example(**features) -> bytes:
    e = Example()
    for k, v in features.items():
        e.features.feature[k].float_list.value.extend(v)
    return e.SerializeToString()


def test_parse_errors_name_the_example_and_feature():
    batch = np.empty(2, dtype=object)
    batch[:] = [_example(x=[1.0, 2.0]), _example(x=[1.0])]
    dense = FeatureSpec(dense=[("x", dtypes.float32, Shape([2]), np.zeros(0, np.float32))])
    with pytest.raises(ParseError, match=r"example 1 \('b'\): feature 'x' has 1 values, but dense shape \[2\] needs 2"):
        parse_examples(batch, dense, ["a", "b"])
    with pytest.raises(ParseError, match="example 0: feature 'x' holds a float_list, but int64 asks for a int64_list"):
        parse_examples(batch, FeatureSpec(sparse=[("x", dtypes.int64)]))
    with pytest.raises(ParseError, match="example 0: required feature 'z' is missing"):
        parse_examples(batch, FeatureSpec(dense=[("z", dtypes.float32, Shape([]), np.zeros(0, np.float32))]))
    batch[1] = b"\xff\xff not a proto"
    with pytest.raises(ParseError, match="example 1 is not a serialized tf.train.Example"):
        parse_examples(batch, dense)
