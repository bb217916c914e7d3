"""sf.data: TensorFlow's ``tf.data.Dataset`` as an eager input pipeline for Python training loops.

``for xb, yb in sf.data.Dataset.from_tensor_slices((x, y)).shuffle(1000, seed=1).batch(32):``
runs in plain Python and numpy, outside any ``sf.function`` (iterating one inside a trace is an
error), and yields ``sf.Tensor``s in the element's structure (tuples stay tuples, dicts dicts).
Each transformation returns a new Dataset; every iteration starts from the beginning.

What follows TensorFlow: dtypes (Python floats float32, ints int32, numpy arrays their own,
strings bytes), element structure (tuples, namedtuples and dicts nest; a list is one tensor; a
function's list result is a tuple), a function's arguments (a tuple element unpacked, a dict one
argument), ``element_spec`` (a map function's output traced once with the input specs, as TF
traces it; one that only runs eagerly gives the dtypes and ranks of its first result), and
``cardinality()`` (TF's rules: -1 infinite, -2 unknown). What does not: the order ``shuffle`` and
``sample_from_datasets`` draw (seeded and repeatable, with TF's buffer algorithm, but not TF's
random sequence); a function's Python side effects happen once per element, not once per trace.
The sources are in ``api/data_sources.py``; structures, conversion and the stateful iterators
in ``api/data_ops.py``.
"""

from __future__ import annotations

import itertools
import os
import types

import numpy as np

from specflow.api import data_ops as ops
from specflow.api import data_sources as _sources
from specflow.api.context import STATE
from specflow.api.function import TensorSpec
from specflow.api.op_functions import to_tensor
from specflow.api.tensor import Tensor
from specflow.errors import GraphError
from specflow.graph import dtypes
from specflow.graph.shapes import Shape, as_shape

AUTOTUNE = -1
INFINITE_CARDINALITY = ops.INFINITE
UNKNOWN_CARDINALITY = ops.UNKNOWN
DatasetSpec = ops.DatasetSpec
_END = object()
_INFINITE, _UNKNOWN = ops.INFINITE, ops.UNKNOWN


class Dataset:
    """A sequence of elements, built by ``Dataset.from_tensor_slices`` & co and transformed by its
    methods. ``make_iter()`` starts one pass over the elements (structures of numpy arrays)."""

    def __init__(self, make_iter, spec, cardinality: int, kind: str = "Dataset"):
        self._make_iter = make_iter
        self._spec = spec  # a structure of TensorSpecs, or a callable computing it when first asked
        self._card = int(cardinality)
        self._kind = kind

    # --- sources ------------------------------------------------------------------------------------

    from_tensor_slices = staticmethod(_sources.from_tensor_slices)
    from_tensors = staticmethod(_sources.from_tensors)
    range = staticmethod(_sources.range_)  # noqa: A003 (TF's names)
    zip = staticmethod(_sources.zip_)  # noqa: A003
    from_generator = staticmethod(_sources.from_generator)
    choose_from_datasets = staticmethod(_sources.choose_from_datasets)
    sample_from_datasets = staticmethod(_sources.sample_from_datasets)

    # --- transformations -----------------------------------------------------------------------------

    def map(self, map_func, num_parallel_calls=None, deterministic=None, name=None) -> Dataset:
        """``map_func`` on each element (a tuple element unpacked into arguments)."""
        what = "the function passed to Dataset.map()"

        def gen():
            for e in self._make_iter():
                yield ops.normalize(_call(map_func, e), what, from_function=True)

        return Dataset(gen, lambda: _traced_spec(map_func, self, what), self._card, "MapDataset")

    def filter(self, predicate, name=None) -> Dataset:
        """The elements for which ``predicate`` returns True (a bool scalar)."""

        def gen():
            for e in self._make_iter():
                keep = ops.as_array(_call(predicate, e), "the predicate passed to Dataset.filter()")
                if keep.dtype != np.bool_ or keep.ndim:
                    raise ValueError("Dataset.filter: the predicate must return a bool scalar, got "
                                     f"{ops.dtype_of(keep).name}{Shape(keep.shape)}")
                if keep:
                    yield e

        return Dataset(gen, lambda: self.element_spec, _UNKNOWN, "FilterDataset")

    def take_while(self, predicate, name=None) -> Dataset:
        """The elements up to the first for which ``predicate`` is False."""

        def gen():
            for e in self._make_iter():
                if not bool(ops.as_array(_call(predicate, e), "the predicate passed to Dataset.take_while()")):
                    return
                yield e

        return Dataset(gen, lambda: self.element_spec, _UNKNOWN, "TakeWhileDataset")

    def batch(self, batch_size, drop_remainder: bool = False, num_parallel_calls=None, deterministic=None,
              name=None) -> Dataset:
        """``batch_size`` elements stacked along a new dim 0 (the last batch smaller unless
        ``drop_remainder``); elements of different shapes need ``padded_batch``."""
        b, drop = ops.positive(batch_size, "batch: batch_size"), bool(drop_remainder)
        return Dataset(lambda: ops.batches(self._make_iter(), b, drop, lambda buf: ops.stack(buf, "batch")),
                       lambda: ops.batched_spec(self.element_spec, b if drop else None),
                       _batch_card(self._card, b, drop), "BatchDataset")

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None, drop_remainder: bool = False,
                     name=None) -> Dataset:
        """``batch`` with each component padded to ``padded_shapes`` (default: its spec's shape;
        an unknown dim, None or -1, takes the batch's largest) with ``padding_values`` (default 0,
        b"" for strings; each a scalar of the component's dtype)."""
        b, drop = ops.positive(batch_size, "padded_batch: batch_size"), bool(drop_remainder)
        spec = self.element_spec
        leaves = ops.flatten(spec)
        if any(not isinstance(s, TensorSpec) for s in leaves):
            raise TypeError("padded_batch: elements that are datasets cannot be batched")
        if padded_shapes is None:
            shapes = [None] * len(leaves)
            out_shapes = [s.shape for s in leaves]
        else:
            shapes, out_shapes = [], []
            for k, (s, p) in enumerate(zip(leaves, ops.flatten_up_to(spec, padded_shapes, "padded_shapes"))):
                p = as_shape(np.asarray(p.numpy()).tolist() if isinstance(p, Tensor) else p)
                if s.shape.rank is not None and (p.rank != s.shape.rank or any(
                        d is not None and e is not None and d < e for d, e in zip(p.dims, s.shape.dims))):
                    raise ValueError(f"padded_batch: the padded shape {p} is not compatible with the shape {s.shape} "
                                     f"of component {k}")
                shapes.append(list(p.dims) if p.rank is not None else None)
                out_shapes.append(p)
        if padding_values is None:
            values = [b"" if s.dtype == dtypes.string else np.zeros((), s.dtype.numpy) for s in leaves]
        else:
            values = []
            for k, (s, v) in enumerate(zip(leaves, ops.flatten_up_to(spec, padding_values, "padding_values"))):
                a = ops.as_array(v, "padded_batch: padding_values")
                if a.ndim:
                    raise ValueError(f"padded_batch: padding value {v!r} of component {k} is not a scalar")
                if ops.dtype_of(a) != s.dtype:
                    raise TypeError(f"padded_batch: padding value {v!r} of component {k} is {ops.dtype_of(a).name}, "
                                    f"the component is {s.dtype.name}")
                values.append(a[()])
        out = ops.pack(spec, [TensorSpec(Shape([b if drop else None]).concatenate(p), s.dtype)
                              for p, s in zip(out_shapes, leaves)])
        return Dataset(lambda: ops.batches(self._make_iter(), b, drop, lambda buf: ops.pad_stack(buf, shapes, values)),
                       out, _batch_card(self._card, b, drop), "PaddedBatchDataset")

    def unbatch(self, name=None) -> Dataset:
        """Each element split along dim 0 into as many elements."""
        leaves = ops.flatten(self.element_spec)
        if any(not isinstance(s, TensorSpec) or s.shape.rank == 0 for s in leaves):
            raise ValueError("unbatch: every component must have rank >= 1 (an input with scalar components, or "
                             "datasets, cannot be unbatched)")
        firsts = {s.shape[0] for s in leaves if s.shape.rank is not None}
        n = firsts.pop() if len(firsts) == 1 and all(s.shape.rank is not None for s in leaves) else None
        card = self._card if self._card < 0 else (self._card * n if n is not None else _UNKNOWN)
        spec = ops.map_leaves(lambda s: TensorSpec(Shape(s.shape.dims[1:]) if s.shape.rank is not None
                                                   else Shape(None), s.dtype), self.element_spec)
        return Dataset(lambda: ops.unbatch(self._make_iter()), spec, card, "UnbatchDataset")

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None, name=None) -> Dataset:
        """TensorFlow's buffer shuffle. With ``seed`` the order is repeatable; each new iteration
        draws a new one unless ``reshuffle_each_iteration=False`` (the order is not TF's)."""
        n = ops.positive(buffer_size, "shuffle: buffer_size")
        draw = ops.Seeds(seed, reshuffle_each_iteration is None or bool(reshuffle_each_iteration))
        return Dataset(lambda: ops.shuffle(self._make_iter(), n, draw()), lambda: self.element_spec, self._card,
                       "ShuffleDataset")

    def repeat(self, count=None, name=None) -> Dataset:
        """The elements ``count`` times (None or -1: forever; a pass with no elements ends it)."""
        count = -1 if count is None else ops.as_int(count, "repeat: count")

        def gen():
            epoch = 0
            while count < 0 or epoch < count:
                empty = True
                for e in self._make_iter():
                    empty = False
                    yield e
                if empty:
                    return
                epoch += 1

        c = self._card
        card = (0 if c == 0 else _INFINITE) if count < 0 else 0 if count == 0 else c if c < 0 else c * count
        return Dataset(gen, lambda: self.element_spec, card, "RepeatDataset")

    def take(self, count, name=None) -> Dataset:
        """The first ``count`` elements (-1: all)."""
        count = ops.as_int(count, "take: count")
        c = self._card
        card = (c if count < 0 else count if c == _INFINITE else _UNKNOWN if c == _UNKNOWN else min(c, count))
        return Dataset(lambda: itertools.islice(self._make_iter(), None if count < 0 else count),
                       lambda: self.element_spec, card, "TakeDataset")

    def skip(self, count, name=None) -> Dataset:
        """All but the first ``count`` elements (-1: none)."""
        count = ops.as_int(count, "skip: count")

        def gen():
            it = self._make_iter()
            if count < 0:
                for _ in it:
                    pass
                return
            yield from itertools.islice(it, count, None)

        c = self._card
        card = c if c < 0 else 0 if count < 0 else max(0, c - count)
        return Dataset(gen, lambda: self.element_spec, card, "SkipDataset")

    def enumerate(self, start=0, name=None) -> Dataset:  # noqa: A003
        """``(index, element)`` pairs, the index an int64 scalar counting from ``start``."""
        start = ops.as_int(start, "enumerate: start")
        return Dataset(lambda: ((np.asarray(i, np.int64), e) for i, e in zip(itertools.count(start), self._make_iter())),
                       lambda: (TensorSpec([], dtypes.int64), self.element_spec), self._card, "EnumerateDataset")

    def concatenate(self, dataset, name=None) -> Dataset:
        """This dataset's elements, then ``dataset``'s (of the same structure and dtypes)."""
        if not isinstance(dataset, Dataset):
            raise TypeError(f"concatenate takes a Dataset, got {type(dataset).__name__}")
        spec = ops.merge_specs(self.element_spec, dataset.element_spec, "concatenate")
        a, b = self._card, dataset._card
        card = _UNKNOWN if _UNKNOWN in (a, b) else _INFINITE if _INFINITE in (a, b) else a + b
        return Dataset(lambda: itertools.chain(self._make_iter(), dataset._make_iter()), spec, card,
                       "ConcatenateDataset")

    def shard(self, num_shards, index, name=None) -> Dataset:
        """Element ``i`` where ``i % num_shards == index`` (the rule of specflow's training shards,
        train/sharding.py)."""
        n, k = ops.positive(num_shards, "shard: num_shards"), ops.as_int(index, "shard: index")
        if not 0 <= k < n:
            raise ValueError(f"shard: index {k} does not exist for {n} shards (indices are 0..{n - 1})")
        c = self._card
        card = c if c < 0 else c // n + (1 if k < c % n else 0)
        return Dataset(lambda: itertools.islice(self._make_iter(), k, None, n), lambda: self.element_spec, card,
                       "ShardDataset")

    def prefetch(self, buffer_size, name=None) -> Dataset:
        """The same elements (no background thread: elements are made when asked for)."""
        return Dataset(self._make_iter, lambda: self.element_spec, self._card, "PrefetchDataset")

    def cache(self, filename: str = "", name=None) -> Dataset:
        """The same elements, kept in memory after the first complete pass and replayed after."""
        if filename:
            raise ValueError(f"cache({filename!r}): sf.data caches in memory only; call cache() without a filename")
        store: list = []

        def gen():
            if store:
                yield from store[0]
                return
            seen = []
            for e in self._make_iter():
                seen.append(e)
                yield e
            if not store:
                store.append(seen)

        return Dataset(gen, lambda: self.element_spec, self._card, "CacheDataset")

    def flat_map(self, map_func, name=None) -> Dataset:
        """The elements of the dataset ``map_func`` returns for each element, one after another."""

        def gen():
            for e in self._make_iter():
                yield from _dataset_of(map_func, e, "flat_map")._make_iter()

        return Dataset(gen, lambda: _dataset_fn_spec(map_func, self, "flat_map"), _UNKNOWN, "FlatMapDataset")

    def interleave(self, map_func, cycle_length=None, block_length=None, num_parallel_calls=None,
                   deterministic=None, name=None) -> Dataset:
        """``block_length`` elements at a time from each of ``cycle_length`` of the datasets
        ``map_func`` returns, in turn (TF's order; cycle_length defaults to the CPU count as TF's)."""
        if cycle_length is None or (not isinstance(cycle_length, Tensor) and cycle_length == AUTOTUNE):
            cl = os.cpu_count() or 1
        else:
            cl = ops.positive(cycle_length, "interleave: cycle_length")
        bl = 1 if block_length is None else ops.positive(block_length, "interleave: block_length")
        return Dataset(lambda: ops.interleave(self._make_iter(), lambda e: _dataset_of(map_func, e, "interleave")
                                              ._make_iter(), cl, bl),
                       lambda: _dataset_fn_spec(map_func, self, "interleave"), _UNKNOWN, "InterleaveDataset")

    def window(self, size, shift=None, stride=1, drop_remainder: bool = False, name=None) -> Dataset:
        """Elements of datasets: window ``w`` holds elements ``w*shift + j*stride``, j < size
        (a structure of datasets, one per component, as TF's)."""
        size = ops.positive(size, "window: size")
        shift = size if shift is None else ops.positive(shift, "window: shift")
        stride, drop = ops.positive(stride, "window: stride"), bool(drop_remainder)

        def gen():
            specs = ops.flatten(self.element_spec)
            for w in ops.windows(self._make_iter(), size, shift, stride, drop):
                cols = [ops.flatten(e) for e in w]
                yield ops.pack(w[0], [_of_list([c[k] for c in cols], s) for k, s in enumerate(specs)])

        c = self._card
        if c < 0:
            card = c
        elif drop:
            rest = c - ((size - 1) * stride + 1)
            card = 0 if rest < 0 else rest // shift + 1
        else:
            card = c // shift + (0 if c % shift == 0 else 1)
        return Dataset(gen, lambda: ops.map_leaves(DatasetSpec, self.element_spec), card, "WindowDataset")

    def apply(self, transformation_func) -> Dataset:
        """``transformation_func(self)``, which must return a Dataset."""
        out = transformation_func(self)
        if not isinstance(out, Dataset):
            raise TypeError(f"Dataset.apply: the function must return a Dataset, got {type(out).__name__}")
        return out

    # --- consuming -------------------------------------------------------------------------------------

    def reduce(self, initial_state, reduce_func):
        """``reduce_func(state, element)`` over every element from ``initial_state``; the state
        keeps its structure and dtypes (its shapes may change)."""
        state = ops.normalize(initial_state, "Dataset.reduce: initial_state")
        spec0 = ops.spec_of(state)
        for e in self._make_iter():
            new = ops.normalize(reduce_func(ops.to_tensors(state), ops.to_tensors(e)),
                                "the function passed to Dataset.reduce()", from_function=True)
            spec = ops.spec_of(new)
            if not ops.same_structure(spec, spec0) or any(
                    a.dtype != b.dtype for a, b in zip(ops.flatten(spec), ops.flatten(spec0))):
                raise TypeError(f"Dataset.reduce: the new state {ops.describe(spec)} does not have the structure "
                                f"and dtypes of the initial state {ops.describe(spec0)}")
            state = new
        return ops.to_tensors(state)

    def get_single_element(self, name=None):
        """The one element of a dataset that has exactly one."""
        it = self._make_iter()
        first = next(it, _END)
        if first is _END:
            raise GraphError("get_single_element: the dataset is empty; it must have exactly one element")
        if next(it, _END) is not _END:
            raise GraphError("get_single_element: the dataset has more than one element; it must have exactly one "
                             "(take(1) keeps the first)")
        return ops.to_tensors(first)

    def as_numpy_iterator(self):
        """The elements as numpy values (a scalar as a numpy scalar, a string as bytes)."""
        return (ops.to_numpy(e) for e in self._make_iter())

    def __iter__(self):
        if STATE.trace is not None:
            raise GraphError("iterating an sf.data.Dataset inside sf.function: sf.data runs eagerly; iterate it "
                             "outside the function and pass each element in")
        return (ops.to_tensors(e) for e in self._make_iter())

    # --- inspection ------------------------------------------------------------------------------------

    @property
    def element_spec(self):
        """The structure of an element, each component an sf.TensorSpec (a DatasetSpec for window's)."""
        if callable(self._spec):
            self._spec = self._spec()
        return self._spec

    def cardinality(self):
        """The number of elements as an int64 tensor: -1 infinite, -2 unknown (after filter, ...)."""
        return to_tensor(np.asarray(self._card, np.int64))

    def __len__(self) -> int:
        if self._card == _INFINITE:
            raise TypeError("The dataset is infinite.")
        if self._card == _UNKNOWN:
            raise TypeError("The dataset length is unknown.")
        return self._card

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        try:
            spec = ops.describe(self.element_spec)
        except Exception:  # noqa: BLE001 (a repr must not fail)
            spec = "?"
        return f"<{self._kind} element_spec={spec}>"


# --- helpers ---------------------------------------------------------------------------------------------


def _call(fn, elem):
    args = ops.to_tensors(elem)
    return fn(*args) if type(args) is tuple else fn(args)


def _traced_spec(fn, ds: Dataset, what: str):
    """A map function's element_spec: its output traced on placeholders of the input spec (as TF
    traces it); a function that cannot be traced (it reads values) is run on the first element and
    its dtypes and ranks kept, every dim unknown."""
    from specflow.api.trace import Trace

    in_spec = ds.element_spec
    leaves = ops.flatten(in_spec)
    if all(isinstance(s, TensorSpec) for s in leaves):
        trace = Trace("dataset_map", allow_variables=False)
        try:
            with trace.active():
                args = ops.pack(in_spec, [trace.placeholder(f"component_{i}", s.dtype, s.shape)
                                          for i, s in enumerate(leaves)])
                out = fn(*args) if type(args) is tuple else fn(args)
                if isinstance(out, list):
                    out = tuple(out)
                return ops.spec_of(ops.map_leaves(lambda x: _traced_leaf(x, what), out))
        except Exception:  # noqa: BLE001 - it runs eagerly only: see below
            pass
    first = next(iter(ds._make_iter()), _END)
    if first is _END:
        raise GraphError(f"{what}: cannot tell its element_spec: the function cannot be traced and the dataset is empty")
    return ops.spec_of(ops.normalize(_call(fn, first), what, from_function=True), relax=True)


def _traced_leaf(x, what: str):
    """A traced result's component: a tensor, or a list of them stacked (as TF converts it)."""
    if isinstance(x, (Tensor, Dataset)):
        return x
    if isinstance(x, list) and ops.holds_numpy(x):
        from specflow.api.op_functions import call

        return call("Pack", [_traced_leaf(v, what) for v in x], axis=0)
    return ops.as_array(x, what)


def _dataset_of(fn, elem, what: str) -> Dataset:
    ds = _call(fn, elem)
    if not isinstance(ds, Dataset):
        raise TypeError(f"{what}: the function must return a Dataset, got {type(ds).__name__}")
    return ds


def _dataset_fn_spec(fn, ds: Dataset, what: str):
    first = next(iter(ds._make_iter()), _END)
    if first is _END:
        raise GraphError(f"{what}: cannot tell its element_spec from an empty dataset")
    return _dataset_of(fn, first, what).element_spec


def _of_list(elements: list, spec) -> Dataset:
    return Dataset(lambda: iter(elements), spec, len(elements), "WindowDataset")


def _batch_card(c: int, b: int, drop: bool) -> int:
    return c if c < 0 else c // b + (0 if drop or c % b == 0 else 1)


def cardinality(dataset: Dataset):
    """``sf.data.experimental.cardinality(ds)``: ``ds.cardinality()``."""
    return dataset.cardinality()


experimental = types.SimpleNamespace(AUTOTUNE=AUTOTUNE, INFINITE_CARDINALITY=INFINITE_CARDINALITY,
                                     UNKNOWN_CARDINALITY=UNKNOWN_CARDINALITY, cardinality=cardinality)


def TFRecordDataset(filenames, compression_type=None, buffer_size=None, num_parallel_reads=None, name=None):  # noqa: N802
    """TensorFlow's ``tf.data.TFRecordDataset``: each file's records in order, string scalars
    (parse them with sf.io.parse_single_example in ``map``)."""
    from specflow.api.tf_io import tfrecord_dataset

    return tfrecord_dataset(filenames, compression_type, buffer_size, num_parallel_reads, name)

