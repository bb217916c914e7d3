"""sf.io (tf.Example parsing, decode_raw, TFRecordWriter), sf.train.Example & co and
sf.data.TFRecordDataset against TensorFlow 2.21: the fixture holds TF's parses of the same
serialized examples and TFRecord files TF wrote (scripts/make_tf_io_fixture.py)."""

from pathlib import Path

import numpy as np
import pytest

import specflow as sf
from specflow.errors import SpecflowError
from tests.api.tf_results import all_results, assert_matches

DATA = Path(__file__).parent / "data" / "tf_io"


def examples(tf) -> list[bytes]:
    """Serialized tf.train.Examples built with ``tf.train``'s (or sf.train's) messages."""
    out = []
    for i in range(4):
        feature = {
            "x": tf.train.Feature(float_list=tf.train.FloatList(value=[i, i + 0.5, -i])),
            "tags": tf.train.Feature(int64_list=tf.train.Int64List(value=list(range(i)))),
            "name": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"n%d" % i])),
            "img": tf.train.Feature(int64_list=tf.train.Int64List(value=[i, 2 * i, 3 * i, 4 * i])),
            "words": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"w"] * (i % 3))),
        }
        if i % 2:
            feature["opt"] = tf.train.Feature(float_list=tf.train.FloatList(value=[7.5]))
        out.append(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    return out


def features(tf) -> dict:
    return {
        "x": tf.io.FixedLenFeature([3], tf.float32),
        "tags": tf.io.VarLenFeature(tf.int64),
        "name": tf.io.FixedLenFeature([], tf.string),
        "img": tf.io.FixedLenFeature([2, 2], tf.int64),
        "words": tf.io.VarLenFeature(tf.string),
        "opt": tf.io.FixedLenFeature([], tf.float32, default_value=-1.0),
        "absent": tf.io.FixedLenFeature([2], tf.string, default_value=["a", "b"]),
    }


def cases(tf) -> dict:
    ex = examples(tf)
    feats = features(tf)
    raw = np.array([np.arange(4, dtype=np.float32).tobytes(), np.arange(4, 8, dtype=np.float32).tobytes()], object)
    return {  # fmt: skip
        **{f"single{i}": (lambda i=i: tf.io.parse_single_example(ex[i], feats)) for i in range(4)},
        "batch": lambda: tf.io.parse_example(ex, feats),
        "batch_subset": lambda: tf.io.parse_example(ex[1:3], {"x": feats["x"], "tags": feats["tags"]}),
        "raw_f32": lambda: tf.io.decode_raw(raw, tf.float32),
        "raw_u8": lambda: tf.io.decode_raw(np.array([b"\x01\x02\xff"], object), tf.uint8),
        "raw_i16_be": lambda: tf.io.decode_raw(np.array([b"\x01\x02\x03\x04"], object), tf.int16, little_endian=False),
    }


def flat_results(tf) -> dict[str, np.ndarray]:
    return all_results(cases(tf))


CASES = cases(sf)


@pytest.fixture(scope="module")
def expected():
    return dict(np.load(DATA / "parsed.npz", allow_pickle=True))  # object arrays of bytes (TF's strings)


def _examples(records) -> list:
    return [sf.train.Example.FromString(bytes(r)) for r in records]


def test_examples_serialize_as_tensorflows(expected):
    # the same messages (a map's entries may serialize in another order)
    assert _examples(examples(sf)) == _examples(expected["serialized"])


@pytest.mark.parametrize("key", sorted(CASES))
def test_parses_as_tensorflow(key, expected):
    assert_matches(key, CASES[key](), expected)


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_tfrecord_files_both_ways(tmp_path, compression, expected):
    theirs = DATA / f"records{'.gz' if compression else ''}.tfrecord"
    got = [r.numpy() for r in sf.data.TFRecordDataset(str(theirs), compression_type=compression)]
    assert got == list(expected["serialized"])
    ours = tmp_path / "ours.tfrecord"
    with sf.io.TFRecordWriter(str(ours), sf.io.TFRecordOptions(compression_type=compression)) as w:
        for r in expected["serialized"]:
            w.write(r)
    assert [r.numpy() for r in sf.data.TFRecordDataset([str(ours)], compression_type=compression)] == got
    if not compression:  # the same bytes TF wrote
        assert ours.read_bytes() == theirs.read_bytes()


def test_a_tfrecord_pipeline_batches_parsed_examples(expected):
    feats = features(sf)
    ds = (sf.data.TFRecordDataset(str(DATA / "records.tfrecord"))
          .map(lambda r: sf.io.parse_single_example(r, {"x": feats["x"], "name": feats["name"]})).batch(3))
    batches = list(ds)
    np.testing.assert_array_equal(batches[0]["x"].numpy(), expected["batch.x"][:3])
    assert list(batches[1]["name"].numpy()) == list(expected["batch.name"][3:])


def test_parse_errors_are_one_line():
    feats = features(sf)
    bad = sf.train.Example(features=sf.train.Features(feature={
        "x": sf.train.Feature(int64_list=sf.train.Int64List(value=[1, 2, 3]))})).SerializeToString()
    with pytest.raises(SpecflowError, match="feature 'x' holds a int64_list, but float32 asks for a float_list"):
        sf.io.parse_single_example(bad, {"x": feats["x"]})
    with pytest.raises(SpecflowError, match="required feature 'name' is missing"):
        sf.io.parse_single_example(bad, {"name": feats["name"]})
    with pytest.raises(ValueError, match="must be a FixedLenFeature or VarLenFeature"):
        sf.io.parse_single_example(bad, {"x": 3})
    with pytest.raises(TypeError, match="cannot hold a SparseTensor"):
        list(sf.data.TFRecordDataset(str(DATA / "records.tfrecord"))
             .map(lambda r: sf.io.parse_single_example(r, {"tags": feats["tags"]})))


def test_tensorflow_reads_our_records(tmp_path):
    tf = pytest.importorskip("tensorflow")
    path = tmp_path / "ours.tfrecord"
    with sf.io.TFRecordWriter(str(path)) as w:
        for r in examples(sf):
            w.write(r)
    back = [tf.io.parse_single_example(r, features(tf)) for r in tf.data.TFRecordDataset(str(path))]
    np.testing.assert_array_equal(back[2]["x"].numpy(), [2.0, 2.5, -2.0])
