"""``sf.sparse`` and ``sf.SparseTensor``: TensorFlow 2's sparse tensors in the Python API.

A SparseTensor is three tensors (int64 ``indices`` [N, rank], ``values`` [N], int64
``dense_shape`` [rank]); it passes in and out of ``sf.function`` as those three (a composite,
as sf.TensorArray and sf.IndexedSlices are). The functions are the ops TensorFlow's wrappers
emit where specflow has them (SparseToDense, SparseTensorDenseMatMul, SparseReduceSum,
SparseReshape, SparseFillEmptyRows, SparseSegment*), else compositions that give the same
values and order (reorder: a stable sort of the row-major positions; add of two sparse
tensors: their entries merged in row-major order, duplicates summed), so gradients flow to
``values``."""

from __future__ import annotations

import numpy as np

from specflow.api.op_functions import call
from specflow.api.tensor import EagerTensor, Tensor
from specflow.api.tf_names import _t, cast, gather, shape, stack
from specflow.api.tf_names import concat as _concat
from specflow.api.tf_names import reshape as _reshape
from specflow.graph import dtypes


class SparseTensor:
    """TensorFlow's ``tf.sparse.SparseTensor(indices, values, dense_shape)``."""

    _sf_composite = True  # api/function.flatten: indices, values, dense_shape

    def __init__(self, indices, values, dense_shape):
        self.indices = _int64(indices)
        self.values = values if isinstance(values, Tensor) else _t(values)
        self.dense_shape = _int64(dense_shape)
        if self.indices.shape.rank not in (None, 2):
            raise ValueError(f"SparseTensor: indices must be a matrix [N, rank], got shape {self.indices.shape}")
        if self.values.shape.rank not in (None, 1):
            raise ValueError(f"SparseTensor: values must be a vector, got shape {self.values.shape}")

    # composite protocol (api/function.py)
    def _sf_components(self) -> list:
        return [self.indices, self.values, self.dense_shape]

    def _sf_meta(self):
        return None

    @classmethod
    def _sf_rebuild(cls, meta, components: list) -> SparseTensor:
        out = cls.__new__(cls)
        out.indices, out.values, out.dense_shape = components
        return out

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def shape(self):
        """The static dense shape: known eagerly; in a trace, the rank and what the graph knows."""
        from specflow.api.tf_control_names import get_static_value
        from specflow.graph.shapes import Shape

        v = get_static_value(self.dense_shape)
        if v is not None:
            return Shape([int(d) for d in v])
        rank = self.dense_shape.shape[0] if self.dense_shape.shape.rank == 1 else None
        return Shape(None if rank is None else [None] * rank)

    def get_shape(self):
        return self.shape

    def with_values(self, new_values) -> SparseTensor:
        return SparseTensor(self.indices, new_values, self.dense_shape)

    def __repr__(self) -> str:
        if all(isinstance(t, EagerTensor) for t in self._sf_components()):
            return (f"SparseTensor(indices={self.indices.numpy().tolist()}, values={self.values.numpy()!r}, "
                    f"dense_shape={self.dense_shape.numpy().tolist()})")
        return f"SparseTensor(indices={self.indices!r}, values={self.values!r}, dense_shape={self.dense_shape!r})"

    def __mul__(self, other):
        """Times a dense tensor broadcast to it: the values times the dense entries at the indices."""
        return SparseTensor(self.indices, self.values * _dense_at(self, _t(other, self.dtype)), self.dense_shape)

    def __truediv__(self, other):
        return SparseTensor(self.indices, self.values / _dense_at(self, _t(other, self.dtype)), self.dense_shape)


def _int64(x) -> Tensor:
    if isinstance(x, Tensor):
        return x if x.dtype == dtypes.int64 else cast(x, dtypes.int64)
    return _t(np.asarray(x, np.int64))


def _check(sp, what: str) -> SparseTensor:
    if not isinstance(sp, SparseTensor):
        raise TypeError(f"{what}: expected a SparseTensor, got {type(sp).__name__}")
    return sp


def _dense_at(sp: SparseTensor, dense: Tensor) -> Tensor:
    """The entries of ``dense`` (broadcast to the sparse tensor's shape) at its indices."""
    full = call("BroadcastTo", dense, sp.dense_shape)
    return call("GatherNd", full, sp.indices)


def _linear(indices: Tensor, dense_shape: Tensor) -> Tensor:
    """Row-major positions of ``indices`` in ``dense_shape`` (int64)."""
    strides = call("Cumprod", dense_shape, np.int32(0), exclusive=True, reverse=True)
    return call("Sum", indices * strides, np.int32(1), keep_dims=False)


# --- making and unmaking -------------------------------------------------------------------------

def from_dense(tensor, name: str | None = None) -> SparseTensor:
    """The non-zero (non-empty, for strings) entries of ``tensor``, in row-major order."""
    x = _t(tensor)
    indices = call("Where", call("NotEqual", x, call("ZerosLike", x)))
    return SparseTensor(indices, call("GatherNd", x, indices, name=name), shape(x, out_type=dtypes.int64))


def to_dense(sp_input, default_value=None, validate_indices: bool = True, name: str | None = None):
    """The dense tensor: values at the indices, ``default_value`` (zero) elsewhere; with
    ``validate_indices`` the indices must be in row-major order without repeats (TF's check)."""
    sp = _check(sp_input, "to_dense")
    default = _t(np.zeros((), sp.dtype.numpy) if default_value is None else default_value, sp.dtype)
    return call("SparseToDense", sp.indices, sp.dense_shape, sp.values, default,
                validate_indices=bool(validate_indices), name=name)


def reorder(sp_input, name: str | None = None) -> SparseTensor:
    """The entries sorted into row-major order (a stable sort, as TF's)."""
    sp = _check(sp_input, "reorder")
    order = _argsort(_linear(sp.indices, sp.dense_shape))
    if name:
        order = call("Identity", order, name=name)
    return SparseTensor(gather(sp.indices, order), gather(sp.values, order), sp.dense_shape)


def _argsort(keys: Tensor) -> Tensor:
    from specflow.api.tf_array_names import argsort

    return argsort(keys, stable=True)


def reshape(sp_input, shape, name: str | None = None) -> SparseTensor:  # noqa: A002
    """The same entries in ``shape`` (one dimension may be -1)."""
    sp = _check(sp_input, "reshape")
    indices, new_shape = call("SparseReshape", sp.indices, sp.dense_shape, _int64(shape), name=name)
    return SparseTensor(indices, sp.values, new_shape)


def expand_dims(sp_input, axis=None, name: str | None = None) -> SparseTensor:
    sp = _check(sp_input, "expand_dims")
    rank = sp.shape.rank
    if rank is None:
        raise ValueError("expand_dims: the sparse tensor's rank must be known")
    axis = -1 if axis is None else int(axis)
    axis = axis + rank + 1 if axis < 0 else axis
    n = shape(sp.indices, out_type=dtypes.int64)[0]
    zeros = call("Fill", call("Pack", [n, np.int64(1)], axis=0), np.int64(0))
    indices = _concat([sp.indices[:, :axis], zeros, sp.indices[:, axis:]], 1)
    dense = _concat([sp.dense_shape[:axis], np.asarray([1], np.int64), sp.dense_shape[axis:]], 0, name=name)
    return SparseTensor(indices, sp.values, dense)


def transpose(sp_input, perm=None, name: str | None = None) -> SparseTensor:
    """Dimensions permuted (reversed by default), entries re-sorted into row-major order."""
    sp = _check(sp_input, "transpose")
    rank = sp.shape.rank
    if perm is None:
        if rank is None:
            raise ValueError("transpose: the sparse tensor's rank must be known")
        perm = list(range(rank - 1, -1, -1))
    perm = np.asarray(perm, np.int32)
    indices = call("Transpose", gather(call("Transpose", sp.indices, np.asarray([1, 0], np.int32)), perm),
                   np.asarray([1, 0], np.int32))  # fmt: skip
    return reorder(SparseTensor(indices, sp.values, gather(sp.dense_shape, perm)), name=name)


def retain(sp_input, to_retain) -> SparseTensor:
    """The entries where ``to_retain`` (a bool per value) is true, in their order."""
    sp = _check(sp_input, "retain")
    keep = _reshape(call("Where", _t(to_retain, dtypes.bool_)), [-1])
    return SparseTensor(gather(sp.indices, keep), gather(sp.values, keep), sp.dense_shape)


def slice(sp_input, start, size, name: str | None = None) -> SparseTensor:  # noqa: A001 (TF's name)
    """The entries inside the box [start, start + size) (clipped to the shape), re-based."""
    sp = _check(sp_input, "slice")
    start, size = _int64(start), _int64(size)
    end = call("Minimum", start + size, sp.dense_shape)
    inside = call("All", call("LogicalAnd", call("GreaterEqual", sp.indices, start), call("Less", sp.indices, end)),
                  np.int32(1))  # fmt: skip
    keep = _reshape(call("Where", inside), [-1])
    new_shape = call("Maximum", end - start, np.int64(0), name=name)
    return SparseTensor(gather(sp.indices, keep) - start, gather(sp.values, keep), new_shape)


def fill_empty_rows(sp_input, default_value, name: str | None = None):
    """Each empty row of dimension 0 given one entry ``default_value`` at column 0: the filled
    SparseTensor and a bool per row, true where it was empty."""
    sp = _check(sp_input, "fill_empty_rows")
    indices, values, empty, _ = call("SparseFillEmptyRows", sp.indices, sp.values, sp.dense_shape,
                                     _t(default_value, sp.dtype), name=name)  # fmt: skip
    return SparseTensor(indices, values, sp.dense_shape), empty


def map_values(op, *args, **kwargs):
    """``op`` applied to the values of the SparseTensor arguments (all with the same indices)."""
    sparse = [a for a in list(args) + list(kwargs.values()) if isinstance(a, SparseTensor)]
    if not sparse:
        raise ValueError("map_values: no SparseTensor among the arguments")
    first = sparse[0]
    unwrap = lambda a: a.values if isinstance(a, SparseTensor) else a  # noqa: E731
    out = op(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in kwargs.items()})
    return SparseTensor(first.indices, out, first.dense_shape)


# --- arithmetic ----------------------------------------------------------------------------------

def add(a, b, threshold=0):
    """``a + b``: with a dense operand, a dense tensor (the values scattered onto it); with two
    sparse ones (same shape), their entries merged in row-major order with equal indices summed,
    a sum whose magnitude is below ``threshold`` dropped (TF's SparseAdd)."""
    if isinstance(a, SparseTensor) and not isinstance(b, SparseTensor):
        return call("TensorScatterAdd", _t(b, a.dtype), a.indices, a.values)
    if isinstance(b, SparseTensor) and not isinstance(a, SparseTensor):
        return call("TensorScatterAdd", _t(a, b.dtype), b.indices, b.values)
    a, b = _check(a, "add"), _check(b, "add")
    indices = _concat([a.indices, b.indices], 0)
    values = _concat([a.values, b.values], 0)
    linear = _linear(indices, a.dense_shape)
    order = _argsort(linear)
    linear, indices, values = gather(linear, order), gather(indices, order), gather(values, order)
    ids, seg = call("Unique", linear, out_idx=dtypes.int32)
    n = shape(ids)[0]
    summed = call("UnsortedSegmentSum", values, seg, n)
    first = call("UnsortedSegmentMin", call("Range", np.int32(0), shape(linear)[0], np.int32(1)), seg, n)
    out_indices = gather(indices, first)
    if threshold is not None and not (np.isscalar(threshold) and threshold == 0):
        # TF's rule: only a sum of two entries is dropped when small; a lone entry stays
        count = call("UnsortedSegmentSum", call("OnesLike", seg), seg, n)
        big = call("GreaterEqual", call("Abs", summed), _t(threshold, summed.dtype))
        keep = _reshape(call("Where", call("LogicalOr", call("Less", count, np.int32(2)), big)), [-1])
        out_indices, summed = gather(out_indices, keep), gather(summed, keep)
    return SparseTensor(out_indices, summed, a.dense_shape)


def concat(axis, sp_inputs, expand_nonconcat_dims: bool = False, name: str | None = None) -> SparseTensor:
    """The sparse tensors joined along ``axis`` (the other dims equal, or the largest with
    ``expand_nonconcat_dims``), in row-major order."""
    sps = [_check(s, "concat") for s in sp_inputs]
    if not sps:
        raise ValueError("concat: no inputs")
    rank = sps[0].shape.rank
    if rank is None:
        raise ValueError("concat: the sparse tensors' rank must be known")
    axis = int(axis) + rank if int(axis) < 0 else int(axis)
    onehot = np.zeros(rank, np.int64)
    onehot[axis] = 1
    offset = _t(np.int64(0))
    parts = []
    for s in sps:
        parts.append(s.indices + offset * onehot)
        offset = offset + s.dense_shape[axis]
    if expand_nonconcat_dims:
        others = call("Max", stack([s.dense_shape for s in sps]), np.int32(0))
    else:
        others = sps[0].dense_shape
    dense_shape = others * (1 - onehot) + offset * onehot
    joined = SparseTensor(_concat(parts, 0), _concat([s.values for s in sps], 0), dense_shape)
    return reorder(joined, name=name)


def sparse_dense_matmul(sp_a, b, adjoint_a: bool = False, adjoint_b: bool = False, name: str | None = None):
    """A (2-D) sparse matrix times a dense one, or a dense one times a sparse one."""
    if isinstance(sp_a, SparseTensor):
        return call("SparseTensorDenseMatMul", sp_a.indices, sp_a.values, sp_a.dense_shape, _t(b, sp_a.dtype),
                    adjoint_a=bool(adjoint_a), adjoint_b=bool(adjoint_b), name=name)  # fmt: skip
    sp_b = _check(b, "sparse_dense_matmul")
    # a @ b = (b^T a^T)^T; adjoints carry their conjugates (TF's order of operations)
    out = call("SparseTensorDenseMatMul", sp_b.indices, sp_b.values, sp_b.dense_shape, _t(sp_a, sp_b.dtype),
               adjoint_a=not adjoint_b, adjoint_b=not adjoint_a)  # fmt: skip
    if sp_b.dtype.is_complex:
        out = call("Conj", out)
    return call("Transpose", out, np.asarray([1, 0], np.int32), name=name)


def reduce_sum(sp_input, axis=None, keepdims=None, output_is_sparse: bool = False, name: str | None = None):
    """The sum over ``axis`` (every axis by default): dense, or a SparseTensor with
    ``output_is_sparse``."""
    sp = _check(sp_input, "reduce_sum")
    if axis is None:
        rank = sp.shape.rank
        axes = np.arange(rank, dtype=np.int32) if rank is not None else call(
            "Range", np.int32(0), cast(shape(sp.dense_shape)[0], dtypes.int32), np.int32(1))
    else:
        axes = np.asarray(axis, np.int32)
    keep = bool(keepdims)
    if output_is_sparse:
        indices, values, dense = call("SparseReduceSumSparse", sp.indices, sp.values, sp.dense_shape, axes,
                                      keep_dims=keep, name=name)  # fmt: skip
        return SparseTensor(indices, values, dense)
    return call("SparseReduceSum", sp.indices, sp.values, sp.dense_shape, axes, keep_dims=keep, name=name)


# --- segment reductions (dense data, sparse segment indices) -------------------------------------

def _segment(op: str):
    def fn(data, indices, segment_ids, num_segments=None, name: str | None = None, sparse_gradient: bool = False):
        args = [_t(data), _t(indices), _t(segment_ids)]
        if num_segments is not None:
            return call(f"{op}WithNumSegments", *args, _t(num_segments), name=name)
        return call(op, *args, name=name)

    fn.__name__ = op
    return fn


segment_sum = _segment("SparseSegmentSum")
segment_mean = _segment("SparseSegmentMean")
segment_sqrt_n = _segment("SparseSegmentSqrtN")

NAMES = sorted("""
SparseTensor add concat expand_dims fill_empty_rows from_dense map_values reduce_sum reorder reshape retain
segment_mean segment_sqrt_n segment_sum slice sparse_dense_matmul to_dense transpose
""".split())
