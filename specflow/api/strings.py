"""``sf.strings``: TensorFlow 2's ``tf.strings`` functions over the string ops
(ops/string_more_ops.py, ops/regex_ops.py), each emitting the op TF's wrapper emits (a Python
pattern makes ``StaticRegexReplace``/``StaticRegexFullMatch``, a tensor one the dynamic ops).
Strings are bytes; ``tf.strings.split`` (a RaggedTensor) is not here."""

from __future__ import annotations

import numpy as np

from specflow.api.op_functions import call
from specflow.api.tensor import Tensor
from specflow.api.tf_names import _t
from specflow.graph.dtypes import as_dtype


def _s(x):
    return x if isinstance(x, Tensor) else _t(np.asarray(x, dtype=object) if not isinstance(x, np.ndarray) else x)


def length(input, unit: str = "BYTE", name: str | None = None):  # noqa: A002
    return call("StringLength", _s(input), unit=unit, name=name)


def lower(input, encoding: str = "", name: str | None = None):  # noqa: A002
    return call("StringLower", _s(input), encoding=encoding, name=name)


def upper(input, encoding: str = "", name: str | None = None):  # noqa: A002
    return call("StringUpper", _s(input), encoding=encoding, name=name)


def strip(input, name: str | None = None):  # noqa: A002
    return call("StringStrip", _s(input), name=name)


def join(inputs, separator: str = "", name: str | None = None):
    return call("StringJoin", [_s(x) for x in inputs], separator=separator, name=name)


def reduce_join(inputs, axis=None, keepdims: bool = False, separator: str = "", name: str | None = None):
    x = _s(inputs)
    # no axis: every dimension, last first (TF's order: the result reads in row-major order)
    axes = np.arange(x.shape.rank - 1, -1, -1, dtype=np.int32) if axis is None else np.asarray(axis, np.int32)
    return call("ReduceJoin", x, axes, keep_dims=keepdims, separator=separator, name=name)


def regex_replace(input, pattern, rewrite, replace_global: bool = True, name: str | None = None):  # noqa: A002
    if isinstance(pattern, (str, bytes)) and isinstance(rewrite, (str, bytes)):
        return call("StaticRegexReplace", _s(input), pattern=_text(pattern), rewrite=_text(rewrite),
                    replace_global=replace_global, name=name)
    return call("RegexReplace", _s(input), _s(pattern), _s(rewrite), replace_global=replace_global, name=name)


def regex_full_match(input, pattern, name: str | None = None):  # noqa: A002
    if isinstance(pattern, (str, bytes)):
        return call("StaticRegexFullMatch", _s(input), pattern=_text(pattern), name=name)
    return call("RegexFullMatch", _s(input), _s(pattern), name=name)


def substr(input, pos, len, unit: str = "BYTE", name: str | None = None):  # noqa: A002
    pos = pos if isinstance(pos, Tensor) else np.asarray(pos, np.int32)
    n = len if isinstance(len, Tensor) else np.asarray(len, pos.dtype if isinstance(pos, np.ndarray) else np.int32)
    return call("Substr", _s(input), pos, n, unit=unit, name=name)


def to_number(input, out_type="float32", name: str | None = None):  # noqa: A002
    return call("StringToNumber", _s(input), out_type=as_dtype(out_type), name=name)


def as_string(input, precision: int = -1, scientific: bool = False, shortest: bool = False, width: int = -1,  # noqa: A002
              fill: str = "", name: str | None = None):
    return call("AsString", _t(input), precision=precision, scientific=scientific, shortest=shortest, width=width,
                fill=fill, name=name)


def to_hash_bucket_fast(input, num_buckets: int, name: str | None = None):  # noqa: A002
    return call("StringToHashBucketFast", _s(input), num_buckets=int(num_buckets), name=name)


def to_hash_bucket_strong(input, num_buckets: int, key, name: str | None = None):  # noqa: A002
    return call("StringToHashBucketStrong", _s(input), num_buckets=int(num_buckets), key=[int(k) for k in key],
                name=name)


def _text(v) -> str:
    return v.decode() if isinstance(v, bytes) else v
