"""sf.Variable: a Python object owning a mutable tensor; no global collections.

The value lives in a runtime variable (``runtime/resources.Variable``), the object the state
ops' kernels read and update: eagerly through the variable's device's eager resource manager,
inside a traced function through the function's Session, where the same runtime variable is
registered, so a function reads and updates the Python object's value by reference. When the
sf.Variable is collected, its runtime variable leaves every manager it was registered in.
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any

import numpy as np

from specflow.api.context import STATE, eager_device
from specflow.api.tensor import EagerTensor, GraphTensor, Tensor, numpy_value
from specflow.errors import GraphError
from specflow.graph import dtypes
from specflow.graph.dtypes import as_dtype
from specflow.graph.shapes import Shape, as_shape
from specflow.runtime import resources

CONTAINER = "sf"
_IDS = itertools.count(1)


def _release(managers: list, uid: str) -> None:
    for mgr in managers:
        mgr.delete(CONTAINER, uid)


def _lift(t: GraphTensor):
    """The value of trace tensor ``t`` computed now, once, when it depends on no input and no
    variable (``sf.Variable(sf.random.normal(shape))`` on a function's first trace: TensorFlow
    lifts such an initializer out of the function); None otherwise. Only data inputs count: a
    random op's ordering after earlier effects is the function's, not the initializer's."""
    from specflow.graph.graph_def import GraphDef, parse_input
    from specflow.runtime.session import Session

    nodes = t.trace.builder.graph_def.node_map()
    keep, todo = {}, [parse_input(t.name).node]
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        node = nodes[name]
        if node.op in ("Placeholder", "VarHandleOp", "Enter", "Merge", "Switch"):
            return None
        keep[name] = node
        todo.extend(parse_input(i).node for i in node.data_inputs)
    order = [n.copy() for n in t.trace.builder.graph_def.nodes if n.name in keep]
    for n in order:
        n.inputs = n.data_inputs
    with Session(GraphDef(order)) as session:
        return session.run(t.name, {})


# id(v[key]'s tensor) -> (weak reference to it, v, key); by id: tensors' == is elementwise
_SLICES: dict[int, tuple] = {}


class _SliceAssign:
    """TF's ``v[key].assign(value)`` on the tensor ``v[key]`` reads (its class swapped in place,
    so a recording tape still knows the tensor)."""

    __slots__ = ()

    def assign(self, value, name=None):
        _, var, key = _SLICES[id(self)]
        return var._assign_slice(key, value)


class _EagerSlice(_SliceAssign, EagerTensor):
    __slots__ = ()


class _GraphSlice(_SliceAssign, GraphTensor):
    __slots__ = ()


class Variable(Tensor):
    """``sf.Variable(initial_value, trainable=True, name=None, dtype=None, shape=None)``.

    Used where a tensor is expected it reads its current value. ``assign``, ``assign_add`` and
    ``assign_sub`` update it (through the registered AssignVariableOp kernels); ``name`` is its
    checkpoint name (sf.Module renames it by attribute path when it has none).
    """

    def __init__(self, initial_value: Any, trainable: bool = True, name: str | None = None,
                 dtype: Any = None, shape: Any = None):
        from specflow.api.op_functions import to_tensor

        trace = STATE.trace
        if trace is not None:
            trace.variable_created(self, name)  # the first-trace-only rule
        if callable(initial_value):
            initial_value = initial_value()
        if isinstance(initial_value, Variable):
            initial_value = np.asarray(initial_value)
        if isinstance(initial_value, GraphTensor):
            value = initial_value.trace.constant_value(initial_value)
            if value is None:
                value = _lift(initial_value)
            if value is None:
                raise GraphError(f"variable '{name or 'Variable'}': its initial value '{initial_value.name}' "
                                 "depends on the function's inputs; give a value computable at trace time")
            initial_value = value
        t = to_tensor(initial_value, as_dtype(dtype) if dtype is not None else None, "initial_value")
        self.dtype = t.dtype
        self._shape = as_shape(shape) if shape is not None else t.shape
        if not self._shape.is_compatible_with(t.shape):
            raise GraphError(f"variable '{name}': initial value of shape {t.shape} does not fit shape {self._shape}")
        self.trainable = bool(trainable) and (self.dtype.is_floating or self.dtype.is_complex)
        self.name = name or "Variable"
        dev = eager_device()
        var = resources.Variable(self.name, self.dtype, self._shape)
        # Stored where the variable lives (a GPU scope's variable holds a cupy array), and a copy
        # of the initial value, never the caller's array itself.
        value = dev.to_device(t.value)
        var.value = value.copy() if value is t.value else value
        self._attach(var, dev)

    @classmethod
    def _adopt(cls, var: resources.Variable, name: str, trainable: bool = True) -> Variable:
        """An sf.Variable over an existing runtime variable (one a Session holds: a loaded spec's
        or SavedModel's), sharing its storage: updates on either side are seen by the other."""
        self = cls.__new__(cls)
        self.dtype = var.dtype
        self._shape = var.shape
        self.trainable = bool(trainable) and (self.dtype.is_floating or self.dtype.is_complex)
        self.name = name
        self._attach(var, eager_device())
        return self

    def _attach(self, var: resources.Variable, dev) -> None:
        self.device = dev.name
        self._serial = next(_IDS)  # creation order (GradientTape.watched_variables sorts by it)
        self._uid = f"{self.name.replace('/', '_')}_{self._serial}"
        self._var = var
        self._managers = [dev.resources]
        dev.resources.lookup_or_create(CONTAINER, self._uid, lambda: var)
        self._handle = EagerTensor(resources.ResourceHandle(dev.name, CONTAINER, self._uid, self.dtype, self._shape),
                                   dtypes.resource, dev.name)
        weakref.finalize(self, _release, self._managers, self._uid)

    # --- registration in sessions (traced functions) --------------------------------------------

    def _register(self, mgr) -> None:
        """Make this variable's storage the one ``mgr`` hands out under its uid."""
        mgr.lookup_or_create(CONTAINER, self._uid, lambda: self._var)
        if mgr not in self._managers:
            self._managers.append(mgr)

    # --- reading ---------------------------------------------------------------------------------

    @property
    def shape(self) -> Shape:
        return self._shape

    def _handle_tensor(self, trace=None):
        return self._handle if trace is None else trace.variable_handle(self)

    def _read(self, trace=None):
        if trace is None:
            trace = STATE.trace
        if trace is not None:
            from specflow.api.op_functions import call

            for tape in STATE.tapes:
                tape._traced_read(self)
            return call("ReadVariableOp", trace.variable_handle(self), dtype=self.dtype)
        value = self._var.value  # a read hands out the stored array (updates never change it)
        if value is None:
            raise GraphError(f"variable '{self.name}' has no value")
        t = EagerTensor(value, self.dtype, self.device)
        if STATE.tapes:
            for tape in STATE.tapes:
                tape._record_read(self, t)
        return t

    def read_value(self):
        return self._read()

    def value(self):
        return self._read()

    def get_shape(self) -> Shape:
        return self.shape

    def sparse_read(self, indices, name: str | None = None):
        """TF's ``v.sparse_read(indices)``: the rows at ``indices`` (a gather of the value, so a
        tape's gradient is TF's IndexedSlices)."""
        from specflow.api.op_functions import call

        return call("GatherV2", self, indices, np.int32(0), name=name)

    def gather_nd(self, indices, name: str | None = None):
        from specflow.api.op_functions import call

        return call("GatherNd", self, indices, name=name)

    def numpy(self):
        """A copy of the value: an array; a scalar as a numpy scalar (``bytes`` for a string), as
        TensorFlow's. ``np.asarray(v)`` is always an array."""
        return numpy_value(self._array())

    def _array(self) -> np.ndarray:
        value = self._var.value
        return np.array(value if isinstance(value, np.ndarray) else value.get())

    def __array__(self, dtype=None, copy=None):
        a = self._array()
        return a if dtype is None else a.astype(dtype, copy=False)

    # --- updating --------------------------------------------------------------------------------

    def assign(self, value, read_value: bool = False):
        return self._update("AssignVariableOp", value, read_value)

    def assign_add(self, delta, read_value: bool = False):
        return self._update("AssignAddVariableOp", delta, read_value)

    def __getitem__(self, key):
        """``v[key]``: the slice's value, with TF's ``v[key].assign(value)``."""
        from specflow.api.op_functions import getitem

        t = getitem(self, key)
        if type(t) in (EagerTensor, GraphTensor):
            t.__class__ = _EagerSlice if isinstance(t, EagerTensor) else _GraphSlice
            k = id(t)
            _SLICES[k] = (weakref.ref(t, lambda _, k=k: _SLICES.pop(k, None)), self, key)
        return t

    def _assign_slice(self, key, value):
        """TF's ResourceStridedSliceAssign, as read + TensorStridedSliceUpdate + assign (value
        broadcast to the slice's shape)."""
        from specflow.api.op_functions import call, convert_to_tensor, slice_spec

        bounds, masks = slice_spec(key)
        value = value if isinstance(value, Tensor) else convert_to_tensor(np.asarray(value, self.dtype.numpy))
        return self.assign(call("TensorStridedSliceUpdate", self.read_value(), *bounds, value, **masks))

    def assign_sub(self, delta, read_value: bool = False):
        return self._update("AssignSubVariableOp", delta, read_value)

    def scatter_nd_update(self, indices, updates, name=None):
        """``variable[indices] = updates`` (ResourceScatterNdUpdate; TF's indices [..., k])."""
        return self._scatter_nd("ResourceScatterNdUpdate", indices, updates, name)

    def scatter_nd_add(self, indices, updates, name=None):
        return self._scatter_nd("ResourceScatterNdAdd", indices, updates, name)

    def scatter_nd_sub(self, indices, updates, name=None):
        return self._scatter_nd("ResourceScatterNdSub", indices, updates, name)

    # TF's tf.Variable.scatter_*(sparse_delta): an sf.IndexedSlices's rows (ResourceScatter*)
    def scatter_add(self, sparse_delta, use_locking=False, name=None):
        return self._scatter("ResourceScatterAdd", sparse_delta, name)

    def scatter_sub(self, sparse_delta, use_locking=False, name=None):
        return self._scatter("ResourceScatterSub", sparse_delta, name)

    def scatter_update(self, sparse_delta, use_locking=False, name=None):
        return self._scatter("ResourceScatterUpdate", sparse_delta, name)

    def scatter_mul(self, sparse_delta, use_locking=False, name=None):
        return self._scatter("ResourceScatterMul", sparse_delta, name)

    def scatter_div(self, sparse_delta, use_locking=False, name=None):
        return self._scatter("ResourceScatterDiv", sparse_delta, name)

    def scatter_max(self, sparse_delta, use_locking=False, name=None):
        return self._scatter("ResourceScatterMax", sparse_delta, name)

    def scatter_min(self, sparse_delta, use_locking=False, name=None):
        return self._scatter("ResourceScatterMin", sparse_delta, name)

    def _scatter(self, op: str, sparse_delta, name):
        from specflow.api.indexed_slices import IndexedSlices
        from specflow.api.op_functions import call

        if not isinstance(sparse_delta, IndexedSlices):
            raise TypeError(f"sparse_delta must be an sf.IndexedSlices, got {type(sparse_delta).__name__}")
        call(op, self, sparse_delta.indices, sparse_delta.values, name=name)
        return self

    def _scatter_nd(self, op: str, indices, updates, name):
        from specflow.api.op_functions import call, convert_to_tensor

        if not isinstance(indices, Tensor):
            indices = np.asarray(indices)
            indices = indices.astype(np.int64 if indices.dtype == np.int64 else np.int32)
        if not isinstance(updates, Tensor):
            updates = convert_to_tensor(updates, self.dtype)
        call(op, self, indices, updates, name=name)
        return self

    @property
    def initial_value(self):
        """As in TensorFlow 2, not kept for a variable (it would double every variable's memory)."""
        raise RuntimeError(f"variable '{self.name}': initial_value is not supported for eager variables (as in "
                           "TensorFlow 2); keep the value you created it from")

    def _update(self, op: str, value, read_value: bool):
        from specflow.api.op_functions import call

        if isinstance(value, (np.ndarray, np.generic)) and value.dtype != self.dtype.numpy:
            value = self._converted(value)
        call(op, self, value, dtype=self.dtype)
        return self._read() if read_value else self

    def _converted(self, value) -> np.ndarray:
        """A numpy array of another dtype, as the variable's (as TensorFlow converts it:
        ``v.assign(np.zeros(2))`` into float32, ``np.array([3, 4])`` into int32), refused only where
        values would change beyond a float's rounding."""
        arr = np.asarray(value)
        if arr.dtype.kind not in "biufc" or self.dtype.numpy is None or np.dtype(self.dtype.numpy).kind not in "biufc":
            return arr  # the kernel's dtype error
        if arr.dtype.kind == "c" and not self.dtype.is_complex:
            changed = arr.size
        else:
            with np.errstate(all="ignore"):
                out = arr.astype(self.dtype.numpy)
                changed = (not (self.dtype.is_floating or self.dtype.is_complex)
                           and np.count_nonzero(out.astype(arr.dtype) != arr))
        if changed:
            raise GraphError(f"variable '{self.name}' is {self.dtype.name}: converting the {arr.dtype} value would "
                             f"change {changed} of {arr.size} value(s)")
        return out

    def __repr__(self) -> str:
        value = getattr(getattr(self, "_var", None), "value", None)
        shown = "<no value>" if value is None else repr(self.numpy())
        return f"<sf.Variable '{self.name}' shape={self._shape} dtype={self.dtype.name}, numpy={shown}>"

    def __bool__(self) -> bool:
        return bool(self.numpy())

    def __float__(self) -> float:
        return float(self.numpy())

    def __int__(self) -> int:
        return int(self.numpy())

    def __len__(self) -> int:
        return len(self.numpy())
