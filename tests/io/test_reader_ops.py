"""Reader ops (specflow/ops/reader_ops.py) through a Session, reading files named by a filename
queue (FIFOQueueV2 of strings fed by QueueEnqueueManyV2), as TF's queue-based input pipelines do.
Keys and end-of-input behaviour are what TF 2.21's tf.compat.v1 readers gave on the same files."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from specflow.errors import OutOfRangeError, RuntimeFailure
from specflow.graph.builder import GraphBuilder
from specflow.io.tfrecord import write_records
from specflow.runtime.session import Session


class Pipeline:
    """A filename queue and one reader, with Read/ReadUpTo/counters/reset wired up."""

    def __init__(self, reader: str, **attrs):
        b = GraphBuilder()
        q = b.add_op("FIFOQueueV2", attrs={"component_types": ["string"], "shapes": [[]]}, name="files").name
        names = b.add_op("Placeholder", attrs={"dtype": "string", "shape": [None]}, name="names").name
        b.add_op("QueueEnqueueManyV2", [q, names], name="enqueue")
        b.add_op("QueueCloseV2", [q], name="close")
        r = b.add_op(reader, attrs=attrs, name="reader").name
        n = b.add_op("Placeholder", attrs={"dtype": "int64", "shape": []}, name="n").name
        b.add_op("ReaderReadV2", [r, q], name="read")
        b.add_op("ReaderReadUpToV2", [r, q, n], name="read_up_to")
        b.add_op("ReaderNumRecordsProducedV2", [r], name="produced")
        b.add_op("ReaderNumWorkUnitsCompletedV2", [r], name="completed")
        b.add_op("ReaderResetV2", [r], name="reset")
        self.session = Session(b.graph_def)

    def files(self, *paths, close=True):
        names = np.empty(len(paths), dtype=object)
        names[:] = [str(p).encode() for p in paths]
        self.session.run([], feeds={"names": names}, targets=["enqueue"])
        if close:
            self.session.run([], targets=["close"])

    def read(self):
        k, v = self.session.run(["read", "read:1"])
        return k.item(), v.item()

    def read_up_to(self, n):
        k, v = self.session.run(["read_up_to", "read_up_to:1"], feeds={"n": np.int64(n)})
        return list(k), list(v)

    def read_all(self):
        out = []
        with pytest.raises(OutOfRangeError):
            while True:
                out.append(self.read())
        return out

    def counts(self):
        return [int(x) for x in self.session.run(["produced", "completed"])]


@pytest.fixture
def tfrecords(tmp_path):
    paths = []
    for i in range(3):
        p = tmp_path / f"f{i}.tfrecord"
        write_records(p, [f"rec{i}{j}".encode() * (j + 1) for j in range(3 if i != 1 else 2)])
        paths.append(p)
    return paths


def test_tfrecord_reader_reads_every_file_in_queue_order_then_out_of_range(tfrecords):
    p = Pipeline("TFRecordReaderV2")
    p.files(*tfrecords)
    got = p.read_all()
    assert [v for _, v in got] == [b"rec00", b"rec01rec01", b"rec02rec02rec02", b"rec10", b"rec11rec11",
                                   b"rec20", b"rec21rec21", b"rec22rec22rec22"]  # fmt: skip
    # keys are file:byte_offset (12-byte header + data + 4-byte footer per record), as TF's
    assert [k for k, _ in got[:3]] == [f"{tfrecords[0]}:{o}".encode() for o in (0, 21, 47)]
    assert p.counts() == [8, 3]
    with pytest.raises(OutOfRangeError):  # stays at the end
        p.read()


def test_read_up_to_stays_within_one_file_and_returns_the_rest_at_its_end(tfrecords):
    p = Pipeline("TFRecordReaderV2")
    p.files(*tfrecords)
    sizes = []
    with pytest.raises(OutOfRangeError):
        while True:
            keys, values = p.read_up_to(2)
            assert len(keys) == len(values) and len({k.rsplit(b":", 1)[0] for k in keys}) == 1
            sizes.append(len(keys))
    assert sizes == [2, 1, 2, 2, 1]
    assert p.counts() == [8, 3]


def test_read_waits_for_a_file_to_be_enqueued(tfrecords):
    p = Pipeline("TFRecordReaderV2")
    result = {}
    t = threading.Thread(target=lambda: result.setdefault("v", p.read()))
    t.start()
    t.join(0.2)
    assert t.is_alive()  # waiting on the empty (open) filename queue
    p.files(tfrecords[1], close=False)
    t.join(10)
    assert result["v"][1] == b"rec10"


def test_reset_starts_over_and_zeroes_the_counters(tfrecords):
    p = Pipeline("TFRecordReaderV2")
    p.files(tfrecords[0], tfrecords[0], close=False)
    assert p.read()[1] == b"rec00"
    p.session.run([], targets=["reset"])
    assert p.counts() == [0, 0]
    assert p.read()[1] == b"rec00"  # the second copy of the file: the first was given up


@pytest.mark.parametrize("compression", ["ZLIB", "GZIP"])
def test_compressed_tfrecords(tmp_path, compression):
    path = tmp_path / "c.tfrecord"
    write_records(path, [b"one", b"two"], compression)
    p = Pipeline("TFRecordReaderV2", compression_type=compression)
    p.files(path)
    assert [v for _, v in p.read_all()] == [b"one", b"two"]


def test_corrupt_record_fails_the_read_naming_the_file_and_record(tmp_path, tfrecords):
    data = bytearray(tfrecords[0].read_bytes())
    data[21 + 12 + 3] ^= 0xFF  # a byte of record 1's data
    tfrecords[0].write_bytes(bytes(data))
    p = Pipeline("TFRecordReaderV2")
    p.files(tfrecords[0])
    assert p.read()[1] == b"rec00"
    with pytest.raises(RuntimeFailure, match=r"f0\.tfrecord: record 1 \(offset 21\) is corrupt: the data's checksum"):
        p.read()


def test_missing_file_is_a_one_line_error(tmp_path):
    p = Pipeline("TFRecordReaderV2")
    p.files(tmp_path / "nope.tfrecord")
    with pytest.raises(RuntimeFailure, match="cannot open .*nope.tfrecord") as e:
        p.read()
    assert "\n" not in str(e.value)


def test_fixed_length_reader_skips_header_and_footer(tmp_path):
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(b"HH" + bytes(range(12)) + b"F")
    b.write_bytes(b"HH" + bytes(range(100, 108)) + b"xyzF")  # 3 trailing bytes: not a whole record
    p = Pipeline("FixedLengthRecordReaderV2", header_bytes=2, record_bytes=4, footer_bytes=1)
    p.files(a, b)
    got = p.read_all()
    assert [v for _, v in got] == [bytes(range(0, 4)), bytes(range(4, 8)), bytes(range(8, 12)),
                                   bytes(range(100, 104)), bytes(range(104, 108))]  # fmt: skip
    assert [k for k, _ in got[:2]] == [f"{a}:0".encode(), f"{a}:1".encode()]


def test_fixed_length_reader_hop_bytes(tmp_path):
    a = tmp_path / "a.bin"
    a.write_bytes(b"HH" + bytes(range(12)) + b"F")
    p = Pipeline("FixedLengthRecordReaderV2", header_bytes=2, record_bytes=4, footer_bytes=1, hop_bytes=3)
    p.files(a)
    assert [v for _, v in p.read_all()] == [bytes([0, 1, 2, 3]), bytes([3, 4, 5, 6]), bytes([6, 7, 8, 9])]


def test_text_line_reader_skip_header_lines(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_bytes(b"hdr\nl1\r\nl2\n\nl4")
    b.write_bytes(b"hdr\nm1\n")
    p = Pipeline("TextLineReaderV2", skip_header_lines=1)
    p.files(a, b)
    keys, values = p.read_up_to(10)
    assert values == [b"l1", b"l2", b"", b"l4"]  # one file's lines; \r\n and empty lines as TF
    assert keys == [f"{a}:{n}".encode() for n in (2, 3, 4, 5)]  # 1-based, the header counted
    assert p.read() == (f"{b}:2".encode(), b"m1")
    assert p.counts() == [5, 1]  # b's end is found by the next read
    assert p.read_all() == []
    assert p.counts() == [5, 2]


def test_whole_file_reader(tmp_path):
    a = tmp_path / "a.txt"
    a.write_bytes(b"all\nof it")
    p = Pipeline("WholeFileReaderV2")
    p.files(a)
    assert p.read_all() == [(str(a).encode(), b"all\nof it")]


def test_filename_queue_must_hold_strings():
    b = GraphBuilder()
    q = b.add_op("FIFOQueueV2", attrs={"component_types": ["int32"]}, name="q").name
    r = b.add_op("TextLineReaderV2", name="reader").name
    b.add_op("ReaderReadV2", [r, q], name="read")
    with pytest.raises(RuntimeFailure, match="filename queue .q. must hold string scalars"):
        Session(b.graph_def).run("read")


def test_bad_attrs_fail_at_graph_construction():
    b = GraphBuilder()
    with pytest.raises(Exception, match="compression_type must be one of"):
        b.add_op("TFRecordReaderV2", attrs={"compression_type": "LZ4"})
    with pytest.raises(Exception, match="record_bytes must be >= 1"):
        b.add_op("FixedLengthRecordReaderV2", attrs={"record_bytes": 0})


def test_read_parse_pipeline_end_to_end(tmp_path):
    """Files -> ReaderReadUpToV2 -> ParseExampleV2: the queue-based input pipeline of TF 1."""
    from tests.ops.cases_parse import example

    path = tmp_path / "ex.tfrecord"
    write_records(path, [example(x=[float(i), float(i) + 0.5], y=[i]) for i in range(5)])
    b = GraphBuilder()
    q = b.add_op("FIFOQueueV2", attrs={"component_types": ["string"], "shapes": [[]]}, name="files").name
    names = b.const(np.array([str(path).encode()], dtype=object), name="names")
    b.add_op("QueueEnqueueManyV2", [q, names], name="enqueue")
    b.add_op("QueueCloseV2", [q], name="close")
    r = b.add_op("TFRecordReaderV2", name="reader").name
    b.add_op("ReaderReadUpToV2", [r, q, b.const(10, dtype="int64")], name="read")
    values = "read:1"
    empty = np.empty(0, dtype=object)
    b.add_op("ParseExampleV2", [values, b.const(empty), b.const(empty), b.const(np.array([b"x", b"y"], dtype=object)),
                                b.const(empty), b.const(np.zeros(0, np.float32)), b.const(np.zeros(0, np.int64))],
             attrs={"num_sparse": 0, "sparse_types": [], "dense_shapes": [[2], []], "ragged_value_types": [],
                    "ragged_split_types": []}, name="parse")  # fmt: skip
    s = Session(b.graph_def)
    s.run([], targets=["enqueue"])
    s.run([], targets=["close"])
    x, y = s.run(["parse", "parse:1"])
    np.testing.assert_array_equal(x, np.array([[i, i + 0.5] for i in range(5)], np.float32))
    np.testing.assert_array_equal(y, np.arange(5))


def test_a_tf_written_input_graph_runs_as_in_tf():
    """TF 2.21's own tf.compat.v1 pipeline as a GraphDef (tests/io/data/tf_reader_graph.pbtxt:
    FIFOQueueV2 -> TFRecordReaderV2 (GZIP) -> ReaderReadUpToV2 -> ParseExampleV2 with a dense
    default and a VarLen feature) on TF-written records: what TF's Session returned for them."""
    from pathlib import Path

    from specflow.io.graph_loader import read_graph_def

    data = Path(__file__).parent / "data"
    s = Session(read_graph_def(data / "tf_reader_graph.pbtxt"))
    s.run([], feeds={"names": np.array([str(data / "tf_written.tfrecord.gz").encode()], dtype=object)},
          targets=["enqueue"])  # fmt: skip
    s.run([], targets=["close"])
    x, y, indices, values, shape = s.run(["x", "y", "tags_indices", "tags_values", "tags_shape"])
    want = np.load(data / "tf_written_expected.npz")
    np.testing.assert_array_equal(x, want["x"])
    np.testing.assert_array_equal(y, want["y"])
    np.testing.assert_array_equal(indices, want["tags_indices"])
    assert list(values) == list(want["tags_values"])
    np.testing.assert_array_equal(shape, want["tags_shape"])
    with pytest.raises(OutOfRangeError):
        s.run("x")


def test_two_reads_of_one_reader_in_one_step_lose_no_file(tmp_path):
    paths = []
    for i in range(4):
        paths.append(tmp_path / f"{i}.tfrecord")
        write_records(paths[-1], [f"only{i}".encode()])
    b = GraphBuilder()
    q = b.add_op("FIFOQueueV2", attrs={"component_types": ["string"], "shapes": [[]]}, name="files").name
    b.add_op("QueueEnqueueManyV2", [q, b.const(np.array([str(p).encode() for p in paths], dtype=object))], name="enqueue")
    b.add_op("QueueCloseV2", [q], name="close")
    r = b.add_op("TFRecordReaderV2", name="reader").name
    b.add_op("ReaderReadV2", [r, q], name="a")
    b.add_op("ReaderReadV2", [r, q], name="b")
    s = Session(b.graph_def)
    s.run([], targets=["enqueue"])
    s.run([], targets=["close"])
    got = [v.item() for _ in range(2) for v in s.run(["a:1", "b:1"])]
    assert sorted(got) == [b"only0", b"only1", b"only2", b"only3"]
    with pytest.raises(OutOfRangeError):
        s.run("a")


def test_parse_example_v2_eager_groups_its_six_list_outputs():
    import specflow as sf
    from tests.ops.cases_io import strings
    from tests.ops.cases_parse import example, serialized

    out = sf.ops.parse_example_v2(
        serialized(example(x=[1.0, 2.0], ids=[4]), example(x=[3.0, 4.0])), strings(), strings("ids"), strings("x"),
        strings(), [np.zeros(0, np.float32)], num_sparse=1, sparse_types=["int64"], dense_shapes=[[2]],
        ragged_value_types=[], ragged_split_types=[])  # fmt: skip
    (indices,), (values,), (shape,), (x,), ragged_values, ragged_splits = out
    np.testing.assert_array_equal(indices.numpy(), [[0, 0]])
    np.testing.assert_array_equal(values.numpy(), [4])
    np.testing.assert_array_equal(shape.numpy(), [2, 1])
    np.testing.assert_array_equal(x.numpy(), [[1, 2], [3, 4]])
    assert ragged_values == [] and ragged_splits == []


def test_a_queue_of_vectors_is_not_a_filename_queue(tfrecords):
    b = GraphBuilder()
    q = b.add_op("FIFOQueueV2", attrs={"component_types": ["string"]}, name="files").name
    b.add_op("QueueEnqueueV2", [q, b.const(np.array([str(p).encode() for p in tfrecords], dtype=object))],
             name="enqueue")  # fmt: skip
    r = b.add_op("TFRecordReaderV2", name="reader").name
    b.add_op("ReaderReadV2", [r, q], name="read")
    s = Session(b.graph_def)
    s.run([], targets=["enqueue"])
    with pytest.raises(RuntimeFailure, match=r"filename queue 'files' gave a \[3\] tensor, not one filename"):
        s.run("read")
