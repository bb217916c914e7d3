"""Training data checked against the model's inputs once it is loaded, and errors about it
placed at the spec's line.

The fields of an ``npz``/``npy`` source are known only when the file is read, so their fit is
checked here rather than at validation: each fed field must have the input's rank and known
dimensions (the batch dimension aside), and its dtype is converted by the feed rule
(``io/feed_cast.py``: only when no value changes; int32 labels feed int64), with one widening of
that rule for training data: a float array of another width feeds a float input rounded, as
Keras's ``fit`` casts numpy's float64 to float32 (a value beyond the input dtype's range is
still an error). A float field holding NaN or infinity is refused (every loss would be NaN).
A misfit is one SpecError at ``train.data.feeds.<input>`` naming both, instead
of a kernel's dtype error deep in the training graph.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import numpy as np

from specflow.errors import SpecError, SpecflowError
from specflow.graph import dtypes
from specflow.graph.shapes import Shape
from specflow.io.feed_cast import cast_exactly
from specflow.train.data import missing_file, select


def located(spec, err: SpecflowError) -> SpecflowError:
    """``err`` at the spec line of its dotted ``path`` (``train.data.source.npz``), when it has
    a path but no location yet."""
    if err.location is None and err.path and getattr(spec, "source", None) is not None:
        keys = tuple(int(k) if k.isdigit() else k for k in err.path.split("."))
        err.location = spec.source.location(keys)
    return err


@contextmanager
def errors_located(spec):
    """``located`` for every SpecflowError raised inside (training's own checks of the data)."""
    try:
        yield
    except SpecflowError as e:
        raise located(spec, e) from None


def fit_to_inputs(spec, cfg, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``arrays`` with every field ``cfg.data.feeds`` feeds converted to its input's dtype;
    a located SpecError when a field is missing or does not fit its input."""
    try:
        select(arrays, cfg.data.feeds)
    except SpecflowError as e:
        raise located(spec, e) from None
    out = dict(arrays)
    for name, field in cfg.data.feeds.items():
        want = spec.model.inputs.get(name)
        if want is not None:
            out[field] = _fit(spec, name, field, arrays[field], want)
    return out


def _fit(spec, name: str, field: str, a: np.ndarray, want) -> np.ndarray:
    path = f"train.data.feeds.{name}"
    have = f"input '{name}' is {want.dtype} {Shape(want.shape)}"
    kind = "string" if a.dtype.kind in "SU" else a.dtype
    got = f"source field '{field}' is {kind} [?{''.join(f', {d}' for d in a.shape[1:])}]"
    if want.shape is not None:
        dims = list(want.shape)
        if a.ndim != len(dims) or any(d is not None and d != n for d, n in zip(dims[1:], a.shape[1:])):
            raise located(spec, SpecError(f"{have} but {got} (one row per example)", path=path))
    if a.dtype.kind in "fc" and not np.all(np.isfinite(a)):
        bad = np.argwhere(~np.isfinite(a))[0]
        where = f"example {bad[0]}" + (f", at {list(map(int, bad[1:]))}" if len(bad) > 1 else "")
        n = int(a.size - np.count_nonzero(np.isfinite(a)))
        raise located(spec, SpecError(f"source field '{field}' (fed to input '{name}') holds {n} NaN or infinite "
                                      f"value(s), the first in {where}: every loss would be NaN", path=path))
    try:
        target = dtypes.as_dtype(want.dtype).numpy
    except (TypeError, ValueError, SpecflowError):
        return a
    if a.dtype.kind == "b" and np.dtype(target).kind in "iuf":
        return a.astype(target)  # False, True -> 0, 1: no value changes (binary labels saved as bool)
    if a.dtype.kind == "f" and np.dtype(target).kind == "f" and a.dtype != target:
        with np.errstate(over="ignore"):
            cast = a.astype(target)
        if np.all(np.isfinite(cast) | ~np.isfinite(a)):
            return cast
    try:
        return cast_exactly(a, target, f"{have} but {got}: the data", SpecError)
    except SpecError as e:
        e.path = path
        raise located(spec, e) from None


def check_fixed_batch(spec, cfg, train: dict[str, np.ndarray], test: dict[str, np.ndarray] | None) -> None:
    """An input with a fixed batch dimension (``shape: [32, 64]``) fed by the data must get
    exactly that many rows every time: batches of ``batch_size`` that divide the training
    examples, and no evaluation (it feeds the held-out split whole). Nothing checks a fed batch's
    rows against it at run time, so a misfit would run on, unnoticed or failing at a later step."""
    for name in cfg.data.feeds:
        want = spec.model.inputs.get(name)
        if want is None or not want.shape or want.shape[0] is None:
            continue
        rows, n = int(want.shape[0]), len(next(iter(train.values())))
        problem = None
        if cfg.data.batch_size != rows:
            problem = f"but batch_size is {cfg.data.batch_size}"
        elif n % rows:
            problem = f"but the last batch of each epoch has {n % rows} of the {n} training examples"
        elif cfg.eval is not None and test is not None and len(next(iter(test.values()))) != rows:
            problem = f"but evaluation feeds the {len(next(iter(test.values())))} held-out examples at once"
        if problem:
            raise located(spec, SpecError(f"input '{name}' has a fixed batch dimension of {rows} rows, {problem}; "
                                          "give its first dimension as null", path=f"train.data.feeds.{name}"))


VALIDATE_BYTES = 64 << 20  # `validate` reads a data source this small whole; a larger one: its files exist


def check_data(spec) -> None:
    """What ``specflow validate`` checks of a spec's data before any training: its files exist,
    and a source of up to ``VALIDATE_BYTES`` is read and fitted to the inputs as training would."""
    from specflow.train.evaluate import load_split

    cfg = spec.train
    if cfg is None:
        return
    source = cfg.data.source_dict()
    base = Path(spec.path).parent if spec.path else Path(".")
    kind = next(iter(source))
    named = {"npz": {kind: source.get(kind)}, "csv": {kind: source.get(kind)}}.get(kind) or \
        ({f"npy.{k}": v for k, v in source["npy"].items()} if kind == "npy" else {})
    total = 0
    for key, rel in named.items():
        p = base / str(rel)
        if not p.is_file():
            raise located(spec, SpecError(missing_file(p), path=f"train.data.source.{key}"))
        total += p.stat().st_size
    if kind != "tfrecord" and total <= VALIDATE_BYTES:
        load_split(spec, cfg)
