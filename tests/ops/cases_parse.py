"""Parsing ops (specflow/ops/parse_ops.py) against arrays written out by hand; the reader ops
(specflow/ops/reader_ops.py) need a resource manager and a filename queue, so they run through a
Session in tests/io/test_reader_ops.py."""

from __future__ import annotations

import numpy as np

from specflow.io.extra_protos import Example
from tests.ops.cases_io import strings
from tests.ops.harness import Case


def example(**features) -> bytes:
    """A serialized tf.train.Example: floats -> float_list, ints -> int64_list, bytes -> bytes_list."""
    e = Example()
    for key, values in features.items():
        f = e.features.feature[key]
        if values and isinstance(values[0], bytes):
            f.bytes_list.value.extend(values)
        elif values and isinstance(values[0], float):
            f.float_list.value.extend(values)
        else:
            f.int64_list.value.extend(values)
    return e.SerializeToString()


def serialized(*records: bytes, shape=None) -> np.ndarray:
    out = np.empty(len(records), dtype=object)
    out[:] = list(records)
    return out.reshape(shape if shape is not None else [len(records)])


_BATCH = serialized(
    example(x=[1.0, 2.0, 3.0, 4.0], y=[7], tags=[b"a", b"b"], ids=[5, 6, 7]),
    example(x=[5.0, 6.0, 7.0, 8.0], tags=[b"c"]),  # y missing: its default; no ids
    example(x=[9.0, 10.0, 11.0, 12.0], y=[2], ids=[1]),
)


def _expected_batch(*_):
    return (
        np.array([[0, 0], [0, 1], [0, 2], [2, 0]], np.int64),  # ids' indices
        np.array([[0, 0], [0, 1], [1, 0]], np.int64),  # tags' indices
        np.array([5, 6, 7, 1], np.int64),
        strings("a", "b", "c"),
        np.array([3, 3], np.int64),
        np.array([3, 2], np.int64),
        np.array([[[1, 2], [3, 4]], [[5, 6], [7, 8]], [[9, 10], [11, 12]]], np.float32),
        np.array([7, -1, 2], np.int64),
    )


_KEYS = [strings("ids", "tags"), strings("x", "y"), strings()]
_ATTRS = {"num_sparse": 2, "sparse_types": ["int64", "string"], "dense_shapes": [[2, 2], []],
          "ragged_value_types": [], "ragged_split_types": []}  # fmt: skip

_VAR_LEN = serialized(example(v=[1, 2, 3, 4]), example(v=[5, 6]), example())


def _expected_var_len(*_):
    return (np.array([[[1, 2], [3, 4]], [[5, 6], [0, 0]], [[0, 0], [0, 0]]], np.int64),)


def _expected_ragged(*_):
    return (np.array([1.5, 2.5, 3.5], np.float32), np.array([0, 2, 2, 3], np.int64))


def _expected_single(*_):
    return (np.array([[0], [1]], np.int64), np.array([5, 6], np.int64), np.array([2], np.int64),
            np.array([9.0, 9.0], np.float32), strings("z"))  # fmt: skip


_READERS = "needs a ResourceMgr, files and a filename queue; tests/io/test_reader_ops.py"
EXEMPT = {
    op: _READERS
    for op in (
        "TFRecordReaderV2",
        "FixedLengthRecordReaderV2",
        "TextLineReaderV2",
        "WholeFileReaderV2",
        "ReaderReadV2",
        "ReaderReadUpToV2",
        "ReaderNumRecordsProducedV2",
        "ReaderNumWorkUnitsCompletedV2",
        "ReaderResetV2",
    )
}

_LE = np.array([1, -2, 300], "<i4").tobytes()
_BE = np.array([1.5, -2.0], ">f8").tobytes()

CASES = [
    Case("ParseExampleV2", [_BATCH, strings(), *_KEYS, np.zeros(0, np.float32), np.array(-1, np.int64)],
         _expected_batch, attrs=_ATTRS, const_inputs=(2, 3, 4), exact_shape=False, id="ParseExampleV2-dense-sparse"),
    Case("ParseExampleV2", [_VAR_LEN, strings(), strings(), strings("v"), strings(), np.array(0, np.int64)],
         _expected_var_len, attrs={"num_sparse": 0, "sparse_types": [], "dense_shapes": [[-1, 2]],
                                   "ragged_value_types": [], "ragged_split_types": []},
         const_inputs=(2, 3, 4), exact_shape=False, id="ParseExampleV2-var-len-dense"),
    Case("ParseExampleV2", [serialized(example(r=[1.5, 2.5]), example(), example(r=[3.5])), strings(),
                            strings(), strings(), strings("r")],
         _expected_ragged, attrs={"num_sparse": 0, "sparse_types": [], "dense_shapes": [], "Tdense": [],
                                  "ragged_value_types": ["float32"], "ragged_split_types": ["int64"]},
         const_inputs=(2, 3, 4), exact_shape=False, id="ParseExampleV2-ragged"),
    Case("ParseSingleExample", [np.array(example(ids=[5, 6], w=[b"z"]), dtype=object),
                                np.array([9.0, 9.0], np.float32), strings("q")],
         _expected_single, attrs={"num_sparse": 1, "sparse_keys": ["ids"], "sparse_types": ["int64"],
                                  "dense_keys": ["x", "w"], "dense_shapes": [[2], [1]]}, exact_shape=False),
    Case("DecodeRaw", [np.array([_LE, _LE[::-1]], dtype=object)],
         lambda b: np.array([[1, -2, 300], np.frombuffer(_LE[::-1], "<i4")], np.int32),
         attrs={"out_type": "int32"}, exact_shape=False, id="DecodeRaw-int32"),
    Case("DecodeRaw", [np.array(_BE, dtype=object)], lambda b: np.array([1.5, -2.0]),
         attrs={"out_type": "float64", "little_endian": False}, exact_shape=False, id="DecodeRaw-big-endian"),
    Case("DecodeRaw", [np.array([[b"\x01\x02"], [b"\xff\x00"]], dtype=object)],
         lambda b: np.array([[[1, 2]], [[255, 0]]], np.uint8), attrs={"out_type": "uint8"}, exact_shape=False,
         id="DecodeRaw-uint8"),
]
