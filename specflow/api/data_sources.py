"""sf.data's sources (``Dataset.from_tensor_slices``, ``from_tensors``, ``range``, ``zip``,
``from_generator``, ``choose_from_datasets``, ``sample_from_datasets``): the static methods of
``api/data.py``'s Dataset, which it attaches."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from specflow.api import data_ops as ops
from specflow.api.function import TensorSpec
from specflow.api.tensor import Tensor
from specflow.graph import dtypes
from specflow.graph.dtypes import as_dtype
from specflow.graph.shapes import Shape

if TYPE_CHECKING:
    from specflow.api.data import Dataset

_END = object()
_INFINITE, _UNKNOWN = ops.INFINITE, ops.UNKNOWN


def _cls():
    from specflow.api.data import Dataset

    return Dataset


def from_tensor_slices(tensors, name=None) -> Dataset:
    """One element per index of dim 0 of every component (all of one length)."""
    elem = _source(tensors, "from_tensor_slices")
    leaves = ops.flatten(elem)
    if any(a.ndim == 0 for a in leaves):
        raise ValueError("from_tensor_slices: a component is a scalar; slicing takes tensors of rank >= 1 "
                         "(from_tensors makes one element of a scalar)")
    lengths = [a.shape[0] for a in leaves]
    if len(set(lengths)) > 1:
        raise ValueError(f"from_tensor_slices: the components' first dimensions differ ({lengths}); every "
                         "component must have as many slices")
    spec = ops.map_leaves(lambda a: TensorSpec(a.shape[1:], ops.dtype_of(a)), elem)

    def gen():
        for i in range(lengths[0]):
            yield ops.pack(elem, [a[i, ...] for a in leaves])

    return _cls()(gen, spec, lengths[0], "TensorSliceDataset")


def from_tensors(tensors, name=None) -> Dataset:
    """One element: ``tensors`` whole."""
    elem = _source(tensors, "from_tensors")
    return _cls()(lambda: iter([elem]), ops.spec_of(elem), 1, "TensorDataset")


def range_(*args, output_type=dtypes.int64, name=None) -> Dataset:
    """``range(stop)``, ``range(start, stop[, step])`` as Python's, int64 scalars."""
    if not 1 <= len(args) <= 3:
        raise TypeError(f"Dataset.range takes 1 to 3 arguments (start, stop, step), got {len(args)}")
    values = [ops.as_int(a, "Dataset.range: each argument") for a in args]
    if len(values) == 3 and values[2] == 0:
        raise ValueError("Dataset.range: step must not be 0")
    r = range(*values)
    dt = as_dtype(output_type)
    return _cls()(lambda: (np.asarray(i, dt.numpy) for i in r), TensorSpec([], dt), len(r), "RangeDataset")


def zip_(*args, datasets=None, name=None) -> Dataset:
    """Elements of several datasets side by side (a tuple or dict of datasets, or them as
    arguments); it ends with the shortest."""
    if datasets is None:
        datasets = args[0] if len(args) == 1 else args
    elif args:
        raise TypeError("Dataset.zip: give the datasets as arguments or as datasets=, not both")
    flat = ops.flatten(datasets)
    if isinstance(datasets, list) or not flat or not all(isinstance(d, _cls()) for d in flat):
        raise TypeError("Dataset.zip takes datasets: several as arguments, or a (nested) tuple or dict of them "
                        f"(a list is not a structure here; use a tuple); got {ops.short(datasets)}")
    cards = [d._card for d in flat]
    card = _UNKNOWN if _UNKNOWN in cards else min((c for c in cards if c != _INFINITE), default=_INFINITE)

    def gen():
        its = [d._make_iter() for d in flat]
        while True:
            parts = []
            for it in its:
                e = next(it, _END)
                if e is _END:
                    return
                parts.append(e)
            yield ops.pack(datasets, parts)

    return _cls()(gen, lambda: ops.pack(datasets, [d.element_spec for d in flat]), card, "ZipDataset")


def from_generator(generator, output_types=None, output_shapes=None, args=None, output_signature=None,
                   name=None) -> Dataset:
    """The elements ``generator(*args)`` yields, each checked against ``output_signature`` (a
    structure of sf.TensorSpec): a value is converted to its spec's dtype where nothing is
    lost (1 -> int64, 0.5 -> float64; not 1.5 -> int32) and must fit its shape."""
    if not callable(generator):
        raise TypeError("from_generator: `generator` must be a callable returning an iterator (pass the "
                        "generator function, not a generator)")
    if output_signature is None:
        if output_types is None:
            raise TypeError("from_generator needs output_signature= (a structure of sf.TensorSpec)")
        shapes = output_shapes if output_shapes is not None else ops.map_leaves(lambda _: None, output_types)
        parts = ops.flatten_up_to(output_types, shapes, "output_shapes")
        output_signature = ops.pack(output_types, [TensorSpec(s, t) for t, s in
                                                   zip(ops.flatten(output_types), parts)])
    spec = output_signature
    if not all(isinstance(s, TensorSpec) for s in ops.flatten(spec)):
        raise TypeError(f"from_generator: output_signature must be a structure of sf.TensorSpec, got {spec!r}")
    arg_values = [] if args is None else [ops.to_numpy(ops.normalize(a, "from_generator: args"))
                                          for a in (args if isinstance(args, (tuple, list)) else (args,))]

    def gen():
        for i, value in enumerate(generator(*arg_values)):
            yield _conform(value, spec, i)

    return _cls()(gen, spec, _UNKNOWN, "FlatMapDataset")


def choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset: bool = True) -> Dataset:
    """The next element of ``datasets[c]`` for each ``c`` (an int64 scalar) of ``choice_dataset``."""
    datasets = _dataset_list(datasets, "choose_from_datasets")
    cspec = choice_dataset.element_spec if isinstance(choice_dataset, _cls()) else None
    if not (isinstance(cspec, TensorSpec) and cspec.dtype == dtypes.int64 and cspec.shape.rank == 0):
        raise TypeError("choose_from_datasets: choice_dataset must be a dataset of int64 scalars, got "
                        + (ops.describe(cspec) if cspec is not None else type(choice_dataset).__name__))
    spec = _merged(datasets, "choose_from_datasets")

    def gen():
        its = [d._make_iter() for d in datasets]
        done = [False] * len(its)
        for c in choice_dataset._make_iter():
            k = int(c)
            if not 0 <= k < len(its):
                raise ValueError(f"choose_from_datasets: choice {k} is out of range for {len(its)} datasets")
            if done[k]:
                continue
            e = next(its[k], _END)
            if e is _END:
                if stop_on_empty_dataset:
                    return
                done[k] = True
                continue
            yield e

    return _cls()(gen, spec, _UNKNOWN, "DirectedInterleaveDataset")


def sample_from_datasets(datasets, weights=None, seed=None, stop_on_empty_dataset: bool = False,
                         rerandomize_each_iteration=None) -> Dataset:
    """Each element from a dataset drawn at random with ``weights`` (uniform by default); an
    exhausted one drops out (or ends it: ``stop_on_empty_dataset``)."""
    datasets = _dataset_list(datasets, "sample_from_datasets")
    n = len(datasets)
    w = np.full(n, 1.0 / n) if weights is None else np.asarray(
        weights.numpy() if isinstance(weights, Tensor) else weights, np.float64).reshape(-1)
    if w.shape != (n,) or np.any(w < 0) or not w.sum() > 0:
        raise ValueError(f"sample_from_datasets: weights must be {n} non-negative numbers, not all 0; got {weights!r}")
    spec = _merged(datasets, "sample_from_datasets")
    draw = ops.Seeds(seed, bool(rerandomize_each_iteration))

    def gen():
        rng = draw()
        its = [d._make_iter() for d in datasets]
        live = w.copy()
        while live.sum() > 0:
            k = int(rng.choice(n, p=live / live.sum()))
            e = next(its[k], _END)
            if e is _END:
                if stop_on_empty_dataset:
                    return
                live[k] = 0
                continue
            yield e

    return _cls()(gen, spec, _UNKNOWN, "DirectedInterleaveDataset")


def _source(value, what: str):
    """A source's element: components converted and copied (later changes to the caller's arrays do
    not reach the dataset), read-only."""
    if value is None or (ops.is_struct(value) and not ops.flatten(value)):
        raise ValueError(f"{what}: the element must not be empty, got {value!r}")

    def freeze(a):
        a = np.array(a, copy=True)
        a.flags.writeable = False
        return a

    return ops.map_leaves(freeze, ops.normalize(value, what))


def _conform(value, spec, i: int):
    """A generator's element checked against output_signature, converted to its dtypes."""
    try:
        parts = ops.flatten_up_to(spec, value, "element")
    except ValueError:
        raise TypeError(f"from_generator: element {i}, {ops.short(value)}, does not have the structure of "
                        f"output_signature {ops.describe(spec)}") from None
    specs = ops.flatten(spec)
    out = []
    for k, (s, v) in enumerate(zip(specs, parts)):
        where = f"from_generator: element {i}" + (f" (component {k})" if len(specs) > 1 else "")
        try:
            a = ops.as_array(v, where)
        except ValueError as e:
            raise TypeError(str(e)) from None
        a = _cast(a, s.dtype, where, v)
        if not s.shape.is_compatible_with(Shape(a.shape)):
            raise TypeError(f"{where} has shape {list(a.shape)} where output_signature has {s.shape}")
        out.append(a)
    return ops.pack(spec, out)


def _cast(a: np.ndarray, dt, where: str, v):
    have = ops.dtype_of(a)
    if have == dt:
        return a
    bad = TypeError(f"{where} is {have.name} {ops.short(v)} where output_signature has {dt.name}")
    if dt == dtypes.string or have == dtypes.string:
        raise bad
    b = a.astype(dt.numpy)
    widening = (dt.is_floating and a.dtype.kind in "biuf") or (dt.is_complex and a.dtype.kind in "biufc")
    if not widening and not np.array_equal(b.astype(a.dtype), a):
        raise bad
    return b


def _dataset_list(datasets, what: str) -> list:
    datasets = list(datasets) if isinstance(datasets, (list, tuple)) else None
    if not datasets or not all(isinstance(d, _cls()) for d in datasets):
        raise TypeError(f"{what} takes a non-empty list of datasets")
    return datasets


def _merged(datasets: list, what: str):
    def spec():
        out = datasets[0].element_spec
        for d in datasets[1:]:
            out = ops.merge_specs(out, d.element_spec, what)
        return out

    return spec
