"""The pieces under ``sf.data`` (``api/data.py``): element structures, converting values to the
numpy arrays a pipeline carries, element specs, and the iterators of the transformations that
hold state (batch, padded_batch, unbatch, shuffle, interleave, window).

An element is a structure as tf.data's ``nest`` sees one: tuples, namedtuples and dicts nest
(a dict flattens in sorted key order and keeps its own order when rebuilt); anything else,
a Python list included, is one component. Components travel as numpy arrays (strings as object
arrays of bytes, as specflow holds them) and become ``sf.Tensor``s where the user sees them.
"""

from __future__ import annotations

import itertools

import numpy as np

from specflow.api.function import TensorSpec
from specflow.api.op_functions import to_tensor
from specflow.api.tensor import GraphTensor, Tensor
from specflow.errors import GraphError, ShapeError
from specflow.graph.dtypes import python_number_dtype
from specflow.graph.shapes import Shape

INFINITE = -1  # tf.data.INFINITE_CARDINALITY
UNKNOWN = -2  # tf.data.UNKNOWN_CARDINALITY


class DatasetSpec:
    """The spec of a component that is itself a dataset (``window``'s elements)."""

    def __init__(self, element_spec):
        self.element_spec = element_spec

    def __eq__(self, other) -> bool:
        return isinstance(other, DatasetSpec) and other.element_spec == self.element_spec

    __hash__ = None

    def __repr__(self) -> str:
        return f"DatasetSpec({describe(self.element_spec)})"


# --- structures ------------------------------------------------------------------------------------


def is_struct(v) -> bool:
    return isinstance(v, (tuple, dict))


def flatten(v) -> list:
    if isinstance(v, dict):
        return [x for k in sorted(v) for x in flatten(v[k])]
    if isinstance(v, tuple):
        return [x for item in v for x in flatten(item)]
    return [v]


def pack(like, leaves):
    """``leaves`` (a list, in flatten's order) in the structure of ``like``."""
    it = iter(leaves)

    def build(s):
        if isinstance(s, dict):
            built = {k: build(s[k]) for k in sorted(s)}
            return type(s)((k, built[k]) for k in s) if type(s) is not dict else {k: built[k] for k in s}
        if isinstance(s, tuple):
            items = [build(x) for x in s]
            return type(s)(*items) if hasattr(s, "_fields") else type(s)(items)
        return next(it)

    return build(like)


def map_leaves(fn, v):
    return pack(v, [fn(x) for x in flatten(v)])


def same_structure(a, b) -> bool:
    if isinstance(a, dict) or isinstance(b, dict):
        return (type(a) is type(b) and set(a) == set(b)
                and all(same_structure(a[k], b[k]) for k in a))
    if isinstance(a, tuple) or isinstance(b, tuple):
        return type(a) is type(b) and len(a) == len(b) and all(same_structure(x, y) for x, y in zip(a, b))
    return True


def flatten_up_to(like, value, what: str) -> list:
    """``value``'s parts where ``like`` (an element spec) has components: a padded shape or a
    padding value per component. A list counts as a structure here only where ``like`` has a
    tuple."""
    if isinstance(like, dict):
        if not isinstance(value, dict) or set(value) != set(like):
            raise ValueError(f"{what} must be a dict with keys {sorted(like)}, as the elements are; got {value!r}")
        return [x for k in sorted(like) for x in flatten_up_to(like[k], value[k], f"{what}[{k!r}]")]
    if isinstance(like, tuple):
        if not isinstance(value, (tuple, list)) or len(value) != len(like):
            raise ValueError(f"{what} must be a sequence of {len(like)}, as the elements are; got {value!r}")
        return [x for i, (s, v) in enumerate(zip(like, value)) for x in flatten_up_to(s, v, f"{what}[{i}]")]
    return [value]


def describe(spec) -> str:
    if isinstance(spec, TensorSpec):
        return f"{spec.dtype.name}{spec.shape}"
    if isinstance(spec, dict):
        return "{" + ", ".join(f"{k!r}: {describe(v)}" for k, v in spec.items()) + "}"
    if isinstance(spec, tuple):
        return "(" + ", ".join(describe(v) for v in spec) + ("," if len(spec) == 1 else "") + ")"
    return repr(spec)


# --- values ----------------------------------------------------------------------------------------


def holds_numpy(v) -> bool:
    if isinstance(v, (list, tuple)):
        return any(holds_numpy(x) for x in v)
    return isinstance(v, (np.ndarray, np.generic, Tensor))


def as_array(v, what: str) -> np.ndarray:
    """One component as a numpy array with the dtype TensorFlow gives it: Python floats float32,
    ints int32 (int64 where a value needs it), numpy arrays their own, strings bytes."""
    if isinstance(v, GraphTensor):
        raise GraphError(f"{what}: tensor '{v.name}' is symbolic (inside sf.function); sf.data runs eagerly, "
                         "outside functions")
    if isinstance(v, Tensor):
        arr = np.asarray(v.numpy())
    elif isinstance(v, np.ndarray):
        arr = v
    elif isinstance(v, np.generic):
        arr = np.asarray(v)
    elif isinstance(v, (bool, int, float, complex, str, bytes, list)):
        try:
            arr = np.asarray(v)
        except ValueError:
            raise ValueError(f"{what}: cannot make a tensor of a non-rectangular (ragged) list") from None
        if arr.dtype.kind not in "OUS" and not holds_numpy(v):
            arr = arr.astype(python_number_dtype(arr), copy=False)
    elif getattr(type(v), "_sf_composite", False):
        raise TypeError(f"{what}: an sf.data element cannot hold a {type(v).__name__} (a VarLenFeature's "
                        "parse); make it dense in the map (sf.sparse.to_dense) or use a FixedLenFeature")
    else:
        raise TypeError(f"{what}: cannot make a tensor of {type(v).__name__} {short(v)}")
    if arr.dtype.kind in "US":
        return np.array([x.encode() if isinstance(x, str) else x for x in arr.ravel().tolist()],
                        dtype=object).reshape(arr.shape)
    if arr.dtype.kind == "O":
        items = arr.ravel().tolist()
        if not all(isinstance(x, (bytes, str)) for x in items):
            bad = next(x for x in items if not isinstance(x, (bytes, str)))
            raise TypeError(f"{what}: cannot make a tensor of {type(bad).__name__} {short(bad)}")
        return np.array([x.encode() if isinstance(x, str) else x for x in items], dtype=object).reshape(arr.shape)
    try:
        dtype_of(arr)
    except TypeError as e:
        raise TypeError(f"{what}: {e}") from None
    return arr


def short(v) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def dtype_of(arr: np.ndarray):
    from specflow.api.context import dtype_of as _dtype_of

    return _dtype_of(arr)


def normalize(value, what: str, from_function: bool = False):
    """``value`` as an element: its structure, each component a numpy array. A function's result
    that is a list is a tuple (as tf.data makes it); ``None`` is no element."""
    from specflow.api.data import Dataset

    if from_function and isinstance(value, list):
        value = tuple(value)
    if value is None or (is_struct(value) and not flatten(value)):
        raise TypeError(f"{what} returned {value!r}; it must return a tensor or a structure of tensors")

    def leaf(x):
        if isinstance(x, Dataset):
            return x
        if x is None:
            raise TypeError(f"{what}: None is not a tensor")
        return as_array(x, what)

    return map_leaves(leaf, value)


def to_tensors(elem):
    from specflow.api.data import Dataset

    return map_leaves(lambda a: a if isinstance(a, Dataset) else to_tensor(a), elem)


def to_numpy(elem):
    from specflow.api.data import Dataset

    def leaf(a):
        if isinstance(a, Dataset):
            raise TypeError("as_numpy_iterator() does not support datasets whose elements are datasets "
                            "(window's); flat_map them first")
        return a[()] if a.ndim == 0 else a

    return map_leaves(leaf, elem)


def spec_of(elem, relax: bool = False):
    """The element spec of one element (``relax``: every dim unknown, the rank kept)."""
    from specflow.api.data import Dataset

    def leaf(a):
        if isinstance(a, Dataset):
            return DatasetSpec(a.element_spec)
        if isinstance(a, Tensor):  # a traced result
            return TensorSpec(a.shape, a.dtype)
        return TensorSpec([None] * a.ndim if relax else a.shape, dtype_of(a))

    return map_leaves(leaf, elem)


def merge_specs(a, b, what: str):
    """The most specific spec both ``a`` and ``b`` fit (dims that differ unknown); TypeError
    when their structures or dtypes differ."""
    if not same_structure(a, b):
        raise TypeError(f"{what}: incompatible dataset elements: {describe(a)} vs. {describe(b)}")
    out = []
    for x, y in zip(flatten(a), flatten(b)):
        if isinstance(x, DatasetSpec) or isinstance(y, DatasetSpec):
            if x != y:
                raise TypeError(f"{what}: incompatible dataset elements: {describe(a)} vs. {describe(b)}")
            out.append(x)
            continue
        if x.dtype != y.dtype:
            raise TypeError(f"{what}: incompatible dataset elements: {describe(a)} vs. {describe(b)}")
        if x.shape.rank is None or y.shape.rank is None or x.shape.rank != y.shape.rank:
            shape = Shape(None)
        else:
            shape = Shape([d if d == e else None for d, e in zip(x.shape.dims, y.shape.dims)])
        out.append(TensorSpec(shape, x.dtype))
    return pack(a, out)


def batched_spec(spec, batch_dim):
    def leaf(s):
        if isinstance(s, DatasetSpec):
            raise TypeError("batch: elements that are datasets cannot be batched")
        return TensorSpec(Shape([batch_dim]).concatenate(s.shape), s.dtype)

    return map_leaves(leaf, spec)


# --- arguments -----------------------------------------------------------------------------------


class Seeds:
    """A numpy Generator per iteration: from ``seed`` (a fresh one drawn now when None) and, when
    ``each_iteration``, the iteration's number, so each pass draws a new, repeatable order."""

    def __init__(self, seed, each_iteration: bool):
        self.seed = np.random.SeedSequence().entropy if seed is None else as_int(seed, "seed") % 2**64
        self.each_iteration = each_iteration
        self.count = itertools.count()

    def __call__(self):
        return np.random.default_rng([self.seed, next(self.count) if self.each_iteration else 0])


def as_int(v, what: str) -> int:
    a = np.asarray(v.numpy() if isinstance(v, Tensor) else v)
    if a.ndim or a.dtype.kind not in "iu":
        raise TypeError(f"{what} must be an integer, got {v!r}")
    return int(a)


def positive(v, what: str) -> int:
    n = as_int(v, what)
    if n < 1:
        raise ValueError(f"{what} must be greater than zero, got {n}")
    return n


# --- iterators -------------------------------------------------------------------------------------


def stack(elems: list, what: str):
    """Elements stacked along a new dim 0: one component at a time, each of one shape."""
    flat = [flatten(e) for e in elems]
    out = []
    for k in range(len(flat[0])):
        col = [f[k] for f in flat]
        first = col[0].shape
        for j, a in enumerate(col):
            if a.shape != first:
                raise ShapeError(f"{what}: cannot batch elements of different shapes: component {k} of element {j} "
                                 f"of the batch has shape {list(a.shape)}, element 0 has {list(first)}; "
                                 "padded_batch pads them to a common shape")
        out.append(np.stack(col))
    return pack(elems[0], out)


def batches(it, batch_size: int, drop_remainder: bool, combine):
    buf = []
    for e in it:
        buf.append(e)
        if len(buf) == batch_size:
            yield combine(buf)
            buf = []
    if buf and not drop_remainder:
        yield combine(buf)


def pad_stack(elems: list, shapes: list, values: list):
    """Elements padded to ``shapes`` (per component: dims, None where the batch's largest is taken)
    with ``values`` and stacked."""
    flat = [flatten(e) for e in elems]
    out = []
    for k in range(len(flat[0])):
        col = [f[k] for f in flat]
        rank = col[0].ndim
        if any(a.ndim != rank for a in col):
            raise ShapeError(f"padded_batch: component {k} has elements of different ranks")
        target = []
        for d in range(rank):
            largest = max(a.shape[d] for a in col)
            want = None if shapes[k] is None else shapes[k][d]
            if want is None:
                want = largest
            elif largest > want:
                raise ShapeError(f"padded_batch: component {k} has an element of shape "
                                 f"{list(next(a.shape for a in col if a.shape[d] > want))}, larger than its "
                                 f"padded shape {[s if s is not None else -1 for s in shapes[k]]}")
            target.append(want)
        res = np.full([len(col)] + target, values[k], dtype=col[0].dtype)
        for j, a in enumerate(col):
            res[(j,) + tuple(slice(0, s) for s in a.shape)] = a
        out.append(res)
    return pack(elems[0], out)


def unbatch(it):
    for e in it:
        leaves = flatten(e)
        n = {a.shape[0] for a in leaves}
        if len(n) != 1:
            raise ShapeError(f"unbatch: the components of an element have different first dimensions {sorted(n)}")
        for i in range(n.pop()):
            yield pack(e, [a[i, ...] for a in leaves])


def shuffle(it, buffer_size: int, rng):
    """TensorFlow's buffer: fill ``buffer_size`` elements, then take one at a random position and
    put the next input element there (the buffer drains once the input ends)."""
    buf = []
    for e in it:
        buf.append(e)
        if len(buf) == buffer_size:
            break
    while buf:
        i = int(rng.integers(len(buf)))
        out = buf[i]
        nxt = next(it, _END)
        if nxt is _END:
            buf[i] = buf[-1]
            buf.pop()
        else:
            buf[i] = nxt
        yield out


_END = object()


def interleave(it, make, cycle_length: int, block_length: int):
    """TensorFlow's interleave order: ``block_length`` elements from each of ``cycle_length``
    open datasets in turn; an exhausted one is replaced by the next input element's dataset."""
    slots = [None] * cycle_length
    open_, index, block, end = 0, 0, 0, False
    while not end or open_ > 0:
        if slots[index] is not None:
            e = next(slots[index], _END)
            if e is not _END:
                block += 1
                if block == block_length:
                    block, index = 0, (index + 1) % cycle_length
                yield e
                continue
            slots[index] = None
            open_ -= 1
            block, index = 0, (index + 1) % cycle_length
        elif not end:
            e = next(it, _END)
            if e is _END:
                end = True
            else:
                slots[index] = make(e)
                open_ += 1
        else:
            block, index = 0, (index + 1) % cycle_length


def windows(it, size: int, shift: int, stride: int, drop_remainder: bool):
    """Lists of elements: window ``w`` holds input elements ``w*shift + j*stride`` for j < size."""
    span = (size - 1) * stride + 1
    buf: list = []
    done = False
    while True:
        while not done and len(buf) < span:
            e = next(it, _END)
            if e is _END:
                done = True
            else:
                buf.append(e)
        if not buf:
            return
        window = buf[::stride][:size]
        if len(window) < size and drop_remainder:
            return
        yield window
        if shift <= len(buf):
            del buf[:shift]
        else:
            skip = shift - len(buf)
            buf = []
            for _ in range(skip):
                if next(it, _END) is _END:
                    done = True
                    break
        if done and not buf:
            return
