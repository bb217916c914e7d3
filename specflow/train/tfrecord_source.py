"""The ``tfrecord`` data source: tf.train.Example records of TFRecord files, parsed into one array
per declared feature, so a TensorFlow user's TFRecord dataset trains without conversion::

    source: {tfrecord: [train-*.tfrecord], compression_type: GZIP,
             features: {x: {dtype: float32, shape: [64]}, y: {dtype: int64, key: label}}}

Files are read in the order listed (each glob's matches sorted) with the reader ops' own code
(``io/tfrecord.py``, ``ops/parse_ops.py``): checksums verified, features parsed as
``ParseExampleV2`` parses dense features. Every record also gets its file's index (the
``FILE_INDEX`` field), so a cluster's workers can each take their own files (``sharding.py``).
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

import numpy as np

from specflow.errors import SpecError
from specflow.graph.dtypes import as_dtype
from specflow.graph.shapes import Shape
from specflow.io.tfrecord import RecordFileError, read_records
from specflow.ops.parse_ops import FeatureSpec, ParseError, parse_examples
from specflow.train.sharding import FILE_INDEX

_GLOB_CHARS = frozenset("*?[")


def tfrecord_files(base: Path, patterns, where: str) -> list[Path]:
    """The files of ``patterns`` (paths or globs relative to ``base``), in order."""
    if isinstance(patterns, str):
        patterns = [patterns]
    if not isinstance(patterns, list) or not patterns:
        raise SpecError(f"expected a file path, a glob or a list of them, got {patterns!r}", path=where)
    files: list[Path] = []
    for i, pattern in enumerate(patterns):
        at = f"{where}[{i}]" if len(patterns) > 1 else where
        if not isinstance(pattern, str) or not pattern:
            raise SpecError(f"expected a file path or a glob, got {pattern!r}", path=at)
        full = os.path.join(base, pattern)
        if _GLOB_CHARS & set(pattern):
            matches = sorted(p for p in glob.glob(full) if os.path.isfile(p))
            if not matches:
                raise SpecError(f"no files match {full}", path=at)
            files.extend(Path(m) for m in matches)
        elif not os.path.isfile(full):
            raise SpecError(f"data file not found: {full}", path=at)
        else:
            files.append(Path(full))
    return files


def _feature_spec(features, where: str) -> tuple[list[str], FeatureSpec]:
    if not isinstance(features, dict) or not features:
        raise SpecError(f"features maps field names to {{dtype, shape}}, got {features!r}", path=where)
    names, spec = [], FeatureSpec()
    for name, f in features.items():
        at = f"{where}.{name}"
        if not isinstance(f, dict) or f.get("dtype") not in ("float32", "int64"):
            raise SpecError(f"feature '{name}' needs a dtype of float32 or int64, got {f!r}", path=at)
        dt, shape = as_dtype(f["dtype"]), Shape(list(f.get("shape") or []))
        default = f.get("default")
        default = np.zeros(0, dt.numpy) if default is None else np.full(shape.dims, default, dtype=dt.numpy)
        names.append(name)
        spec.dense.append((f.get("key") or name, dt, shape, default))
    return names, spec


def load_tfrecord(source: dict, base: Path, where: str) -> dict[str, np.ndarray]:
    """The fields of a ``tfrecord`` source, plus ``FILE_INDEX`` (each record's file, 0-based)."""
    files = tfrecord_files(base, source["tfrecord"], f"{where}.tfrecord")
    names, spec = _feature_spec(source.get("features"), f"{where}.features")
    compression = source.get("compression_type", "")
    parts: list[list[np.ndarray]] = []
    counts = []
    for path in files:
        try:
            records = read_records(path, compression)
        except RecordFileError as e:
            raise SpecError(str(e), path=f"{where}.tfrecord") from None
        batch = np.empty(len(records), dtype=object)
        batch[:] = records
        try:
            _, dense, _ = parse_examples(batch, spec)
        except ParseError as e:
            raise SpecError(f"{path}: {e}", path=f"{where}.features") from None
        parts.append(dense)
        counts.append(len(records))
    if not sum(counts):
        raise SpecError(f"the TFRecord files hold no records: {', '.join(map(str, files))}", path=f"{where}.tfrecord")
    arrays = {name: np.concatenate([p[j] for p in parts]) for j, name in enumerate(names)}
    arrays[FILE_INDEX] = np.repeat(np.arange(len(files), dtype=np.int32), counts)
    return arrays
