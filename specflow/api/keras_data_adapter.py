"""The data ``fit``/``evaluate``/``predict`` iterate, as Keras 3's data adapters: arrays (or
sf.Tensors) ``x``, ``y``, ``sample_weight`` cut into batches of ``batch_size`` (32 by default,
the last one partial, reshuffled each epoch when ``shuffle``; float arrays as float32), each
handed to the step as Keras does: ``(x,)``, ``(x, y)`` or ``(x, y, sample_weight)``; or a
re-iterable of batches (an ``sf.data.Dataset``, a list of tuples), each element handed on as it
is (leaves as arrays), iterated afresh each epoch. With ``steps_per_epoch``, epochs continue one
iterator, as Keras's EpochIterator. ``unpack`` is Keras's ``unpack_x_y_sample_weight``."""

from __future__ import annotations

import math

import numpy as np

from specflow.api.tensor import Tensor


def as_array(a):
    """Keras's array adapter: a tensor/list as numpy, float arrays as float32."""
    if isinstance(a, Tensor):
        a = a.numpy()
    a = np.asarray(a)
    return a.astype(np.float32) if a.dtype.kind == "f" and a.dtype != np.float32 else a


def is_batches(x) -> bool:
    """An iterable of batches (a Dataset, a list of (x, y) tuples) rather than one array."""
    if isinstance(x, (np.ndarray, Tensor)) or x is None:
        return False
    if isinstance(x, list):
        return bool(x) and isinstance(x[0], tuple)
    return hasattr(x, "__iter__")


def leaf(v):
    return v if isinstance(v, Tensor) or v is None else as_array(v)


def leaves(s):
    """A batch's structure with its leaves as arrays (tensors kept)."""
    if isinstance(s, (list, tuple)):
        return type(s)(leaves(v) for v in s)
    if isinstance(s, dict):
        return {k: leaves(v) for k, v in s.items()}
    return leaf(s)


def unpack(data):
    """(x, y, sample_weight) of a batch: ``x``, ``(x,)``, ``(x, y)`` or ``(x, y, sample_weight)``."""
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) in (1, 2, 3):
        return (*data, *(None,) * (3 - len(data)))
    raise ValueError(f"Data is expected to be in format `x`, `(x,)`, `(x, y)`, or `(x, y, sample_weight)`, found: "
                     f"a tuple of {len(data)}")


def pack(x, y=None, sample_weight=None) -> tuple:
    """The batch tuple Keras hands a step: (x,), (x, y) or (x, y, sample_weight)."""
    if sample_weight is not None:
        return x, y, sample_weight
    return (x,) if y is None else (x, y)


def _length(batches) -> int | None:
    """How many batches an iterable holds, when it says (a Dataset after filter or repeat() does
    not: its len() raises, as TF's does)."""
    try:
        return len(batches) if hasattr(batches, "__len__") else None
    except TypeError:
        return None


class Data:
    """One input of fit/evaluate/predict; ``epoch()`` yields the batches handed to the step.
    ``need_y``: the default steps need targets (a clear error early when they are missing)."""

    def __init__(self, x, y, batch_size, what: str, shuffle: bool = False, steps=None, need_y: bool = True,
                 sample_weight=None):
        self.what, self.shuffle, self.steps, self.need_y = what, shuffle, steps, need_y
        self.batches = is_batches(x)
        if self.batches:
            for given, name in ((y, "y"), (sample_weight, "sample_weight")):
                if given is not None:
                    raise ValueError(f"{what}: `{name}` is not supported when x is an iterable of (x, y) batches")
            if batch_size is not None:
                raise ValueError(f"{what}: `batch_size` must not be given when x is an iterable of batches")
            self.x, self.y, self.sw = x, None, None
            self.num_batches = _length(x)
        else:
            if x is None:
                raise ValueError(f"{what}: x is missing")
            self.x = as_array(x)
            if need_y and y is None:
                raise ValueError(f"{what}: y is missing: give the targets (y=...), or x as an iterable of (x, y) batches")
            self.y = None if y is None else as_array(y)
            self.sw = None if sample_weight is None else as_array(sample_weight)
            if self.x.ndim == 0:
                raise ValueError(f"{what}: x must have a batch dimension, got a scalar")
            for other, name in ((self.y, "y"), (self.sw, "sample_weight")):
                if other is not None and len(other) != len(self.x):
                    raise ValueError(f"{what}: data cardinality is ambiguous: x has {len(self.x)} samples, {name} has "
                                     f"{len(other)}; make sure all arrays contain the same number of samples")
            self.batch_size = 32 if batch_size is None else int(batch_size)
            self.num_batches = math.ceil(len(self.x) / self.batch_size)
        self._it, self._seen = None, 0

    def _fresh(self):
        if self.batches:
            for b in self.x:
                if self.need_y and unpack(b)[1] is None:
                    raise ValueError(f"{self.what}: each batch must be an (x, y) tuple, got {type(b).__name__}")
                yield leaves(tuple(b) if isinstance(b, list) else b)
            return
        n, bs = len(self.x), self.batch_size
        order = np.random.permutation(n) if self.shuffle else None
        for start in range(0, n, bs):
            sl = slice(start, start + bs) if order is None else order[start:start + bs]
            yield pack(self.x[sl], None if self.y is None else self.y[sl], None if self.sw is None else self.sw[sl])

    def epoch(self):
        if self.steps is None:
            yield from self._fresh()
            return
        if self._it is None:
            self._it, self._seen = self._fresh(), 0
        for _ in range(int(self.steps)):
            if self.num_batches and self._seen >= self.num_batches:
                break
            try:
                batch = next(self._it)
            except StopIteration:
                self.num_batches = self.num_batches or self._seen
                self._it = None
                return
            self._seen += 1
            yield batch
        if self.num_batches and self._seen >= self.num_batches:
            self._it = None


def split_validation(x, y, sample_weight, validation_split: float):
    """Keras's: the last fraction of the arrays (before shuffling) -> ((x, y, sw), (vx, vy, vsw))."""
    if is_batches(x):
        raise ValueError("`validation_split` is only supported for Tensors or NumPy arrays, not an iterable of batches")
    arrays = [None if a is None else as_array(a) for a in (x, y, sample_weight)]
    n = len(arrays[0])
    split_at = int(math.floor(n * (1.0 - validation_split)))
    if split_at in (0, n):
        raise ValueError(f"Training data contains {n} samples, which is not sufficient to split it into a validation "
                         f"and training set as specified by `validation_split={validation_split}`.")
    for a, name in zip(arrays[1:], ("y", "sample_weight")):
        if a is not None and len(a) != n:
            raise ValueError(f"fit: data cardinality is ambiguous: x has {n} samples, {name} has {len(a)}; make sure "
                             "all arrays contain the same number of samples")
    train = tuple(None if a is None else a[:split_at] for a in arrays)
    val = tuple(None if a is None else a[split_at:] for a in arrays)
    return train, val
