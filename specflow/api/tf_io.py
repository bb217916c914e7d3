"""``sf.io``: TensorFlow 2's tf.Example parsing, raw decoding and TFRecord writing for input
pipelines (``sf.data.TFRecordDataset`` reads the files), over the parse ops
(ops/parse_ops.py) and io/tfrecord.py; ``sf.train.Example`` & co are the protobuf messages
(io/extra_protos.py, TensorFlow's field numbers).

Features are parsed as TensorFlow's wrappers do: keys in sorted order, a ``FixedLenFeature``
without a default required, a ``VarLenFeature`` as an ``sf.SparseTensor``."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from specflow.api.op_functions import call
from specflow.api.tensor import Tensor
from specflow.api.tf_names import _t
from specflow.graph import dtypes
from specflow.graph.dtypes import as_dtype
from specflow.graph.shapes import Shape

_PARSE_TYPES = (dtypes.float32, dtypes.int64, dtypes.string)


class FixedLenFeature(NamedTuple):
    """A feature of a fixed ``shape``: ``default_value`` where an example lacks it (else required)."""

    shape: object
    dtype: object
    default_value: object = None


class VarLenFeature(NamedTuple):
    """A feature of any length: parsed as an sf.SparseTensor."""

    dtype: object


def _split(features: dict, what: str):
    if not isinstance(features, dict) or not features:
        raise ValueError(f"{what}: features must be a non-empty dict of FixedLenFeature/VarLenFeature")
    sparse, dense = [], []
    for key in sorted(features):
        f = features[key]
        if not isinstance(key, str):
            raise ValueError(f"{what}: feature keys must be strings, got {key!r}")
        if isinstance(f, VarLenFeature):
            dt = as_dtype(f.dtype)
            if dt not in _PARSE_TYPES:
                raise ValueError(f"{what}: feature '{key}': dtype must be float32, int64 or string, got {dt.name}")
            sparse.append((key, dt))
        elif isinstance(f, FixedLenFeature):
            dt = as_dtype(f.dtype)
            if dt not in _PARSE_TYPES:
                raise ValueError(f"{what}: feature '{key}': dtype must be float32, int64 or string, got {dt.name}")
            shape = [int(d) for d in (f.shape if isinstance(f.shape, (list, tuple)) else list(Shape(f.shape).dims))]
            if f.default_value is None:
                default = np.zeros([0], dt.numpy)  # empty: the feature is required
            else:
                arr = np.asarray(f.default_value, dtype=object if dt == dtypes.string else dt.numpy)
                if dt == dtypes.string:
                    arr = np.vectorize(lambda v: v.encode() if isinstance(v, str) else v, otypes=[object])(arr)
                default = np.broadcast_to(arr, shape).astype(arr.dtype) if arr.size == 1 else arr.reshape(shape)
            dense.append((key, dt, shape, default))
        else:
            raise ValueError(f"{what}: feature '{key}' must be a FixedLenFeature or VarLenFeature, got "
                             f"{type(f).__name__} (FixedLenSequenceFeature, SparseFeature and RaggedFeature "
                             "are not supported)")
    return sparse, dense


def _serialized(x) -> Tensor:
    if isinstance(x, Tensor):
        return x
    arr = np.asarray(x, dtype=object)
    return _t(np.vectorize(lambda v: v.encode() if isinstance(v, str) else v, otypes=[object])(arr)
              if arr.size else arr)


def parse_single_example(serialized, features, example_names=None, name: str | None = None) -> dict:
    """One serialized ``tf.train.Example`` (a string scalar) parsed into a dict: a tensor per
    FixedLenFeature (its shape), an sf.SparseTensor (indices [N, 1]) per VarLenFeature."""
    sparse, dense = _split(features, "parse_single_example")
    outs = call("ParseSingleExample", _serialized(serialized), [_t(d[3]) for d in dense],
                num_sparse=len(sparse), sparse_keys=[k for k, _ in sparse], dense_keys=[d[0] for d in dense],
                sparse_types=[t for _, t in sparse], Tdense=[d[1] for d in dense],
                dense_shapes=[Shape(d[2]) for d in dense], name=name)  # fmt: skip
    return _results(outs, sparse, dense)


def parse_example(serialized, features, example_names=None, name: str | None = None) -> dict:
    """A batch (a string vector) of serialized Examples: dense features [batch, *shape],
    VarLenFeatures as sf.SparseTensors with indices [N, 2] (example, position)."""
    sparse, dense = _split(features, "parse_example")
    names = _t(np.zeros([0], object)) if example_names is None else _serialized(example_names)
    outs = call("ParseExampleV2", _serialized(serialized), names,
                _t(np.asarray([k.encode() for k, _ in sparse], dtype=object).reshape(-1)),
                _t(np.asarray([d[0].encode() for d in dense], dtype=object).reshape(-1)),
                _t(np.zeros([0], object)), [_t(d[3]) for d in dense],
                Tdense=[d[1] for d in dense], num_sparse=len(sparse), sparse_types=[t for _, t in sparse],
                ragged_value_types=[], ragged_split_types=[], dense_shapes=[Shape(d[2]) for d in dense],
                name=name)  # fmt: skip
    return _results(outs, sparse, dense)


def _results(outs, sparse, dense) -> dict:
    """The parse op's outputs (grouped by output argument: sparse indices, values, shapes,
    dense values) as the feature dict."""
    from specflow.api.sparse import SparseTensor

    indices, values, shapes, dense_values = outs[:4]
    result = {key: SparseTensor(indices[i], values[i], shapes[i]) for i, (key, _) in enumerate(sparse)}
    result.update({d[0]: dense_values[j] for j, d in enumerate(dense)})
    return result


def decode_raw(input_bytes, out_type, little_endian: bool = True, fixed_length=None, name: str | None = None):
    """Each string's bytes as a vector of ``out_type`` (all strings of one length)."""
    if fixed_length is not None:
        raise ValueError("decode_raw: fixed_length (DecodePaddedRaw) is not supported")
    return call("DecodeRaw", _serialized(input_bytes), out_type=as_dtype(out_type),
                little_endian=bool(little_endian), name=name)  # fmt: skip


class TFRecordOptions:
    """``tf.io.TFRecordOptions(compression_type=...)``: "" (none), "GZIP" or "ZLIB"."""

    def __init__(self, compression_type: str | None = None, **unused):
        self.compression_type = compression_type or ""


def _compression(options) -> str:
    if options is None:
        return ""
    if isinstance(options, TFRecordOptions):
        return options.compression_type
    return str(options)


class TFRecordWriter:
    """``tf.io.TFRecordWriter(path, options=None)``: ``write(bytes)`` each record; ``close()``
    or use as a context manager. The file is replaced."""

    def __init__(self, path, options=None):
        from specflow.io.tfrecord import TFRecordWriter as _Writer

        self._writer = _Writer(str(path), _compression(options))

    def write(self, record) -> None:
        if isinstance(record, str):
            record = record.encode()
        if hasattr(record, "SerializeToString"):
            raise TypeError("TFRecordWriter.write takes bytes: call example.SerializeToString()")
        self._writer.write(bytes(record))

    def flush(self) -> None:
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def tfrecord_dataset(filenames, compression_type=None, buffer_size=None, num_parallel_reads=None, name=None):
    """``sf.data.TFRecordDataset``: the records of the files, in order, as string scalars."""
    from specflow.api.data import UNKNOWN_CARDINALITY, Dataset
    from specflow.api.function import TensorSpec
    from specflow.io.tfrecord import iter_records

    if isinstance(filenames, Tensor):
        filenames = filenames.numpy()
    files = [f.decode() if isinstance(f, bytes) else str(f) for f in np.atleast_1d(np.asarray(filenames, object))]
    compression = compression_type or ""

    def gen():
        for path in files:
            for _, record in iter_records(path, compression):
                yield np.asarray(record, dtype=object)

    return Dataset(gen, TensorSpec([], dtypes.string), UNKNOWN_CARDINALITY, "TFRecordDataset")


NAMES = sorted("FixedLenFeature TFRecordOptions TFRecordWriter VarLenFeature decode_raw parse_example "
               "parse_single_example".split())
