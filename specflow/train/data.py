"""Data sources for training: the builtin ``digits`` set, ``.npz``/``.npy`` files and CSV files,
loaded into named arrays (one row per example), and a deterministic train/test split.

``load_source`` takes the ``train.data.source`` mapping of a spec::

    {builtin: digits}                       # x: float32 [1797, 64] in [0, 1], y: int64 [1797]
    {npz: data.npz}                         # one field per array, by name
    {npy: {x: x.npy, y: y.npy}}             # one field per file
    {csv: data.csv, label_column: label, header: true}   # x: the other columns (float32), y: int64
                                                         # (label_dtype: float32 for a real target)
    {tfrecord: [a.tfrecord, b/*.tfrecord], features: {x: {dtype: float32, shape: [64]}, y: {dtype: int64}}}

Paths are relative to ``base_dir`` (the spec file's directory). Problems are SpecErrors naming the
spec path (``train.data.source.csv``) and the file, and for CSV cells the row and the column.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Collection
from pathlib import Path

import numpy as np

from specflow.errors import SpecError, did_you_mean
from specflow.io.npy import NpyError, load_array_file
from specflow.train.sharding import FILE_INDEX
from specflow.train.tfrecord_source import load_tfrecord

SOURCE_PATH = "train.data.source"
_DATA_DIR = Path(__file__).resolve().parent.parent / "data"
_KINDS = ("builtin", "npz", "npy", "csv", "tfrecord")
_OPTIONS = {"csv": ("label_column", "header", "label_dtype"), "tfrecord": ("features", "compression_type")}
# Mixed into the split's seed so the split and epoch 0's shuffle (seeded [seed, 0]) draw from
# different streams.
_SPLIT_STREAM = 0x53504C4954  # "SPLIT"


def load_source(source: dict, base_dir: str | Path = ".", used: Collection[str] | None = None) -> dict[str, np.ndarray]:
    """The arrays of a data source, by field name; every field (of ``used``, when given: the
    others, say a list of class names, may be of any shape) has the same number of rows."""
    if not isinstance(source, dict):
        raise SpecError(f"a data source is a mapping with one of {', '.join(_KINDS)}, got {source!r}", path=SOURCE_PATH)
    kinds = [k for k in source if k in _KINDS]
    if len(kinds) != 1:
        raise SpecError(
            f"a data source names exactly one of {', '.join(_KINDS)}, got {', '.join(map(str, source)) or 'none'}",
            path=SOURCE_PATH,
        )
    kind = kinds[0]
    allowed = {kind, *_OPTIONS.get(kind, ())}
    for key in source:
        if key not in allowed:
            raise SpecError(f"unknown option '{key}' for a {kind} source" + did_you_mean(key, allowed), path=SOURCE_PATH)
    base = Path(base_dir)
    if kind == "builtin":
        arrays = _builtin(source["builtin"])
    elif kind == "npz":
        arrays = _npz(_existing(base, source["npz"], f"{SOURCE_PATH}.npz"))
    elif kind == "npy":
        arrays = _npy(base, source["npy"])
    elif kind == "tfrecord":
        arrays = load_tfrecord(source, base, SOURCE_PATH)
    else:
        arrays = _csv(
            _existing(base, source["csv"], f"{SOURCE_PATH}.csv"),
            source.get("label_column", "label"),
            source.get("header", True),
            source.get("label_dtype", "int64"),
        )
    checked = arrays if used is None else {k: a for k, a in arrays.items() if k in used or k == FILE_INDEX}
    if checked or not arrays:  # none of `used` present: the feeds' check names what is missing
        check_lengths(checked, SOURCE_PATH)
    return arrays


def check_lengths(arrays: dict[str, np.ndarray], where: str) -> int:
    """The common number of rows; a SpecError if a field is a scalar or the lengths differ."""
    if not arrays:
        raise SpecError("the data source has no fields", path=where)
    for name, a in arrays.items():
        if a.ndim == 0:
            raise SpecError(f"field '{name}' is a scalar; every field needs one row per example", path=where)
    lengths = {name: a.shape[0] for name, a in arrays.items()}
    if len(set(lengths.values())) > 1:
        listed = ", ".join(f"'{n}' has {k}" for n, k in lengths.items())
        raise SpecError(f"fields must have the same number of rows (examples): {listed}", path=where)
    return next(iter(lengths.values()))


def select(arrays: dict[str, np.ndarray], feeds: dict[str, str], where: str = "train.data.feeds") -> dict[str, np.ndarray]:
    """``{model_input: arrays[field]}`` for ``feeds`` = ``{model_input: field}``."""
    out = {}
    fields = [f for f in arrays if f != FILE_INDEX]
    for inp, field in feeds.items():
        if field not in fields:
            raise SpecError(
                f"the data source has no field '{field}'" + did_you_mean(field, fields) + "; fields: " + ", ".join(fields),
                path=f"{where}.{inp}",
            )
        out[inp] = arrays[field]
    return out


def split(
    arrays: dict[str, np.ndarray], test_fraction: float, seed: int = 0, stratify: str | None = None
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(train, test): ``ceil(n * test_fraction)`` examples drawn under ``seed`` are held out;
    with ``stratify`` (a field of class labels) each class is held out in that proportion, as
    scikit-learn's ``train_test_split(stratify=y)``. Both parts keep the source's order
    (shuffling is the input pipeline's job)."""
    n = check_lengths(arrays, SOURCE_PATH)
    if not 0 <= test_fraction < 1:
        raise SpecError(f"the test fraction must be in [0, 1), got {test_fraction}", path="train.data.split.test")
    n_test = math.ceil(n * test_fraction)
    if n - n_test < 1:
        raise SpecError(f"a test fraction of {test_fraction} leaves no training examples out of {n}",
                        path="train.data.split.test")  # fmt: skip
    rng = np.random.default_rng([seed, _SPLIT_STREAM])
    if stratify is None:
        order = rng.permutation(n)
        test_idx, train_idx = np.sort(order[:n_test]), np.sort(order[n_test:])
    else:
        test_idx, train_idx = _stratified(arrays, stratify, test_fraction, rng)
    return {k: a[train_idx] for k, a in arrays.items()}, {k: a[test_idx] for k, a in arrays.items()}


def _stratified(arrays, field: str, test_fraction: float, rng) -> tuple[np.ndarray, np.ndarray]:
    """Hold out ``test_fraction`` of every class of ``arrays[field]`` (rounded so the total is
    ``ceil(n * test_fraction)``, largest remainders first)."""
    if field not in arrays:
        raise SpecError(f"cannot stratify by '{field}': the data source has no such field" + did_you_mean(field, arrays),
                        path="train.data.split.stratify")  # fmt: skip
    labels = np.asarray(arrays[field])
    if labels.ndim != 1:
        raise SpecError(f"cannot stratify by '{field}': it must hold one class label per example, got shape "
                        f"{list(labels.shape)}", path="train.data.split.stratify")  # fmt: skip
    classes, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    if counts.min() < 2:  # scikit-learn's rule; a real-valued target makes every value a class
        raise SpecError(f"cannot stratify by '{field}': of its {len(classes)} classes, {int((counts < 2).sum())} "
                        f"have only 1 member (a class needs 2 to be split; stratify needs class labels, not a "
                        f"real-valued target)", path="train.data.split.stratify")  # fmt: skip
    members = [np.flatnonzero(inverse == c) for c in range(len(classes))]
    want = np.array([len(m) * test_fraction for m in members])
    take = np.floor(want).astype(int)
    extra = math.ceil(len(labels) * test_fraction) - take.sum()
    take[np.argsort(-(want - take), kind="stable")[:extra]] += 1
    test = np.concatenate([rng.permutation(m)[:k] for m, k in zip(members, take)])
    test = np.sort(test)
    return test, np.setdiff1d(np.arange(len(labels)), test)


# --- the sources --------------------------------------------------------------------------------


def _builtin(name: str) -> dict[str, np.ndarray]:
    if name != "digits":
        raise SpecError(f"unknown builtin dataset '{name}'" + did_you_mean(name, ["digits"]) + "; available: digits",
                        path=f"{SOURCE_PATH}.builtin")  # fmt: skip
    with np.load(_DATA_DIR / "digits.npz") as d:
        # 8x8 images with 17 grey levels (0..16), scaled to [0, 1].
        return {"x": d["images"].astype(np.float32) / np.float32(16), "y": d["labels"].astype(np.int64)}


def _existing(base: Path, path, where: str) -> Path:
    if not isinstance(path, str) or not path:
        raise SpecError(f"expected a file path, got {path!r}", path=where)
    p = base / path
    if not p.is_file():
        raise SpecError(missing_file(p), path=where)
    return p


def missing_file(p: Path) -> str:
    """Why ``p`` is no data file: absent, a directory, or a device or pipe (``/dev/zero``)."""
    if not p.exists():
        return f"data file not found: {p}"
    return f"{p} is a directory, not a data file" if p.is_dir() else f"{p} is not a regular file"


def _npz(path: Path) -> dict[str, np.ndarray]:
    try:
        arrays = load_array_file(path)  # headers checked before anything is allocated
    except NpyError as e:
        raise SpecError(f"cannot read {path}: not a readable .npz file ({e})", path=f"{SOURCE_PATH}.npz") from None
    if not isinstance(arrays, dict):
        raise SpecError(f"{path} holds one array, not an .npz archive (use an npy source)", path=f"{SOURCE_PATH}.npz")
    if not arrays:
        raise SpecError(f"{path} holds no arrays", path=f"{SOURCE_PATH}.npz")
    return arrays


def _npy(base: Path, files) -> dict[str, np.ndarray]:
    if not isinstance(files, dict) or not files:
        raise SpecError(f"an npy source maps field names to .npy files, got {files!r}", path=f"{SOURCE_PATH}.npy")
    arrays = {}
    for field, rel in files.items():
        where = f"{SOURCE_PATH}.npy.{field}"
        path = _existing(base, rel, where)
        try:
            a = load_array_file(path)
        except NpyError as e:
            raise SpecError(f"cannot read {path}: not a readable .npy file ({e})", path=where) from None
        if not isinstance(a, np.ndarray):
            raise SpecError(f"{path} is an .npz archive, not one array (use an npz source)", path=where)
        arrays[field] = a
    return arrays


def _csv(path: Path, label_column, header: bool, label_dtype: str = "int64") -> dict[str, np.ndarray]:
    where = f"{SOURCE_PATH}.csv"
    rows = []  # (line number, cells) of every non-blank row
    try:
        with open(path, newline="") as f:
            reader = csv.reader(f)
            for cells in reader:
                if any(c.strip() for c in cells):
                    rows.append((reader.line_num, cells))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise SpecError(f"cannot read {path}: {e}", path=where) from None
    if header:
        if not rows:
            raise SpecError(f"{path} is empty", path=where)
        names = [c.strip() for c in rows[0][1]]
        rows = rows[1:]
    else:
        names = [str(i) for i in range(len(rows[0][1]))] if rows else []
    if not rows:
        raise SpecError(f"{path} has no data rows", path=where)
    label = _label_index(path, names, label_column, header)
    values = np.empty((len(rows), len(names)), dtype=np.float64)
    for r, (line, cells) in enumerate(rows):
        if len(cells) != len(names):
            raise SpecError(f"{path}: row {line} has {len(cells)} cells, expected {len(names)}", path=where)
        for c, cell in enumerate(cells):
            try:
                values[r, c] = float(cell)
            except ValueError:
                raise SpecError(
                    f"{path}: row {line}, column {_col(names, c, header)}: {cell.strip()!r} is not a number", path=where
                ) from None
    y = values[:, label]
    x = np.delete(values, label, axis=1).astype(np.float32)
    if label_dtype == "float32":
        return {"x": x, "y": y.astype(np.float32)}
    # inf passes the round test, and a label from 2^53 up may have been rounded by float(): either
    # would become another integer (int64's minimum) when cast, so both are refused too.
    bad = np.flatnonzero((y != np.round(y)) | ~(np.abs(y) < 2.0**53))
    if bad.size:
        r = int(bad[0])
        whole = np.isfinite(y[r]) and y[r] == np.round(y[r])
        what = "is out of range (an integer label is below 2^53 in magnitude)" if whole else "is not an integer"
        raise SpecError(
            f"{path}: row {rows[r][0]}, column {_col(names, label, header)}: label {rows[r][1][label].strip()!r} "
            f"{what} (label_dtype: float32 reads a real-valued target)",
            path=where,
        )
    return {"x": x, "y": y.astype(np.int64)}


def _label_index(path: Path, names: list[str], label_column, header: bool) -> int:
    where = f"{SOURCE_PATH}.label_column"
    if isinstance(label_column, bool) or not isinstance(label_column, (int, str)):
        raise SpecError(f"label_column is a column name or a 0-based index, got {label_column!r}", path=where)
    if isinstance(label_column, int):
        if not 0 <= label_column < len(names):
            raise SpecError(f"label_column {label_column} is out of range: {path} has {len(names)} columns", path=where)
        return label_column
    if not header:
        raise SpecError(f"{path} has no header, so label_column must be a 0-based index, got '{label_column}'",
                        path=where)  # fmt: skip
    if label_column not in names:
        raise SpecError(
            f"{path} has no column '{label_column}'" + did_you_mean(label_column, names) + "; columns: " + ", ".join(names),
            path=where,
        )
    return names.index(label_column)


def _col(names: list[str], c: int, header: bool) -> str:
    return f"'{names[c]}'" if header else str(c)
