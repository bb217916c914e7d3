"""Every registered op as a Python function, generated from its OpDef: ``sf.ops.mat_mul(a, b,
transpose_b=True)`` (also ``sf.ops.matmul`` and ``sf.ops.MatMul``).

Inputs are positional or keyword (by OpDef name or spec alias: ``sf.ops.sum(x, axis=1)``), a
list input takes a sequence, attrs are keywords; inputs the spec may leave out (a reduction's
axes) may be left out here too. Tensors, variables, numpy arrays and Python values are accepted;
a literal takes the dtype its type attr gets from the other inputs (``x * 2`` stays float32),
else a natural one (float32, int32, bool). Outside a traced function the op runs now
(``api/eager.py``); inside one it adds a node to the traced graph. Either way it returns a
tensor, a list (a list output), a tuple (several outputs) or None (no outputs).
"""

from __future__ import annotations

import collections
import functools
from typing import Any

import numpy as np

from specflow.api import eager
from specflow.api.context import STATE, dtype_of, eager_device
from specflow.api.indexed_slices import IndexedSlices
from specflow.api.tensor import EagerTensor, GraphTensor, Tensor
from specflow.errors import OpError, ShapeError, SpecflowError, did_you_mean
from specflow.graph import dtypes
from specflow.graph.dtypes import DType, as_dtype
from specflow.ops.registry import ArgDef, OpDef, TensorSpec, all_ops, get_op

# Friendlier spellings TensorFlow's Python API uses for a few ops.
ALIASES = {"matmul": "MatMul", "batch_matmul": "BatchMatMulV2"}


def snake_case(op: str) -> str:
    """TensorFlow's generated-op spelling: MatMul -> mat_mul, AddV2 -> add_v2, Conv2D -> conv2d."""
    out = []
    for i, c in enumerate(op):
        if c.isupper() and i > 0:
            prev, nxt = op[i - 1], op[i + 1] if i + 1 < len(op) else ""
            if prev.islower() or (prev.isupper() and nxt.islower()):
                out.append("_")
        out.append(c.lower())
    return "".join(out)


_FUNCTIONS: dict[str, Any] = {}
_BY_NAME: dict[str, str] | None = None


def _names() -> dict[str, str]:
    global _BY_NAME
    if _BY_NAME is None:
        table = {snake_case(op): op for op in all_ops()}
        table.update({op: op for op in all_ops()})
        table.update(ALIASES)
        _BY_NAME = table
    return _BY_NAME


def function_for(name: str):
    """The op function called ``name`` (snake case, an alias or the op's own name)."""
    fn = _FUNCTIONS.get(name)
    if fn is not None:
        return fn
    op = _names().get(name)
    if op is None:
        raise AttributeError(f"specflow.ops has no op function '{name}'" + did_you_mean(name, _names()))
    fn = _FUNCTIONS[name] = make_function(get_op(op), name)
    return fn


def op_function_names() -> list[str]:
    return sorted(n for n in _names() if n not in ALIASES and not n[:1].isupper())


def make_function(opdef: OpDef, pyname: str):
    simple = not any(a.is_list for a in opdef.inputs)
    n_in = len(opdef.inputs)
    one_out = len(opdef.outputs) == 1 and not opdef.outputs[0].is_list
    execute = eager.execute

    def op_function(*args, name: str | None = None, **kwargs):
        # The common eager case first: every input given positionally as an eager tensor.
        if simple and len(args) == n_in and STATE.trace is None:
            for a in args:
                if type(a) is not EagerTensor:
                    break
            else:
                outs = execute(opdef, args, kwargs, name)
                return outs[0] if one_out else _result(opdef, outs, kwargs)
        return apply(opdef, args, kwargs, name)

    op_function.__name__ = pyname
    op_function.__qualname__ = pyname
    ins = ", ".join(a.name + ("=<default>" if a.has_default else "") for a in opdef.inputs)
    attrs = ", ".join(d.describe() for d in opdef.attrs.values())
    op_function.__doc__ = f"{opdef.name}({ins}; attrs: {attrs or 'none'})\n\n{opdef.doc}"
    return op_function


def call(op: str, *args, name: str | None = None, **kwargs):
    """Run op ``op`` (its registered name) on ``args``; what ``sf.ops.<op>`` does."""
    return function_for(op)(*args, name=name, **kwargs)


def apply(opdef: OpDef, args: tuple, kwargs: dict, name: str | None):
    given, attrs = _split(opdef, args, kwargs, name)
    trace = STATE.trace
    if trace is None:
        for vals in given.values():
            if any(isinstance(v, GraphTensor) for v in vals):
                trace = vals[0].trace if isinstance(vals[0], GraphTensor) else next(
                    v.trace for v in vals if isinstance(v, GraphTensor))
                break
    if trace is not None:
        flat = _convert(opdef, given, attrs, name, trace)
        return _result(opdef, trace.add_op(opdef, flat, attrs, name), attrs)
    flat = _convert(opdef, given, attrs, name, None)
    return _result(opdef, eager.execute(opdef, flat, attrs, name), attrs)


def _split(opdef: OpDef, args: tuple, kwargs: dict, name: str | None) -> tuple[dict[str, list], dict]:
    """Inputs by arg name (each a list of values) and the attrs."""
    node = name or opdef.name
    if len(args) > len(opdef.inputs):
        raise ShapeError(f"{opdef.name} takes {len(opdef.inputs)} input(s) "
                         f"({', '.join(a.name for a in opdef.inputs) or 'none'}), got {len(args)}", node=node)
    given: dict[str, Any] = {}
    for arg, v in zip(opdef.inputs, args):
        given[arg.name] = v
    attrs = {}
    by_key = {a.name: a for a in opdef.inputs} | {a.alias: a for a in opdef.inputs if a.alias}
    for k, v in kwargs.items():
        arg = by_key.get(k)
        if arg is not None and k not in opdef.attrs:
            if arg.name in given:
                raise OpError(f"{opdef.name}: input '{arg.name}' given twice", node=node)
            given[arg.name] = v
        elif k in opdef.attrs:
            attrs[k] = v
        else:
            raise OpError(f"op {opdef.name} has no input or attr '{k}'" + did_you_mean(k, list(by_key) + list(opdef.attrs)),
                          node=node)
    out: dict[str, list] = {}
    for arg in opdef.inputs:
        if arg.name in given:
            v = given[arg.name]
            out[arg.name] = list(v) if arg.is_list else [v]
        elif arg.has_default:
            out[arg.name] = [_Default(arg)]
        else:
            raise ShapeError(f"{opdef.name} is missing input '{arg.name}'; it takes "
                             f"{', '.join(a.name for a in opdef.inputs)}", node=node)
    return out, attrs


class _Default:
    """An input left out: its spec default, computed once the other inputs are known."""

    def __init__(self, arg: ArgDef):
        self.arg = arg


def _convert(opdef: OpDef, given: dict[str, list], attrs: dict, name: str | None, trace) -> list:
    """The flat input list as tensors (EagerTensors, or the trace's GraphTensors)."""
    from specflow.api.variables import Variable

    # Pass 1: tensors (and variables) give their dtypes to their type attrs, as TF's fast path
    # does; then numpy arrays and scalars, where no tensor did.
    known: dict[str, DType] = {}
    for k, v in attrs.items():
        if k in opdef.attrs and opdef.attrs[k].type == "type":
            known[k] = as_dtype(v)
    for arrays in (False, True):
        for arg in opdef.inputs:
            if arg.type_attr is None:
                continue
            for v in given[arg.name]:
                if arrays:
                    if isinstance(v, (np.ndarray, np.generic)) and v.dtype.kind not in "OUSV":
                        known.setdefault(arg.type_attr, dtype_of(v))
                elif isinstance(v, Variable) and arg.dtype is None and v.dtype.name != "resource":
                    known.setdefault(arg.type_attr, v.dtype)
                elif isinstance(v, (Tensor, IndexedSlices)):
                    known.setdefault(arg.type_attr, v.dtype)
    flat: list = []
    specs: list[TensorSpec] = []
    for arg in opdef.inputs:
        for v in given[arg.name]:
            if isinstance(v, _Default):
                value = v.arg.default
                if callable(value):
                    try:
                        value = value(specs)
                    except ValueError as e:
                        raise OpError(f"{opdef.name}: cannot default input '{arg.name}' ({e}); give it "
                                      "explicitly", node=name or opdef.name) from None
                v = value
            if isinstance(v, IndexedSlices):  # TF's conversion: the dense tensor
                v = v._dense()
            if isinstance(v, Variable):
                t = v._handle_tensor(trace) if arg.dtype == dtypes.resource else v._read(trace)
            elif isinstance(v, Tensor):
                t = v
                if isinstance(t, GraphTensor) and trace is not None and t.trace is not trace:
                    t = trace.capture_outer(t)
                elif isinstance(t, EagerTensor) and trace is not None:
                    t = trace.capture(t)
            else:
                # An array keeps its dtype (a mismatch is the spec's dtype error); a literal takes
                # the arg's type, or the first literal's when nothing else gave one (so
                # ``maximum(2.5, 3)`` is float32, as TF's).
                want = None if isinstance(v, np.ndarray) and v.dtype.kind not in "OUS" else (
                    arg.dtype if arg.dtype is not None else known.get(arg.type_attr) if arg.type_attr else None)
                t = to_tensor(v, want, f"input '{arg.name}' of {opdef.name}", name or opdef.name)
                if arg.type_attr is not None and arg.dtype is None:
                    known.setdefault(arg.type_attr, t.dtype)
                if trace is not None:
                    t = trace.capture(t)
            flat.append(t)
            specs.append(TensorSpec(t.dtype, t.shape))
    return flat


def to_tensor(value: Any, dtype: DType | None = None, what: str = "value", node: str | None = None) -> EagerTensor:
    """``value`` (an array, Python number or nested list) as an EagerTensor on the current device."""
    if isinstance(value, EagerTensor):
        return value
    arr = value if isinstance(value, np.ndarray) else np.asarray(value)
    if arr.dtype.kind in "US" or (arr.dtype == object and dtype is None):
        items = [x.encode() if isinstance(x, str) else x for x in arr.ravel().tolist()]
        if arr.dtype == object and any(not isinstance(x, bytes) for x in items):
            odd = [x for x in items if not isinstance(x, (bytes, int, float, complex, np.generic))]
            why = f"{type(odd[0]).__name__} is no number, bool or string" if odd else "strings mixed with numbers"
            raise ShapeError(f"{what}: cannot make a tensor of {value!r} ({why})", node=node)
        arr = np.array(items, dtype=object).reshape(arr.shape)
        dt = dtypes.string
    elif dtype is not None and dtype != dtypes.string:
        dt = dtype
        if arr.dtype != dtype.numpy:
            if arr.dtype.kind == "f" and dtype.is_integer and not isinstance(value, np.ndarray) \
                    and np.any(arr != np.round(arr)):
                raise ShapeError(f"{what} must be {dtype.name}, got the non-integer value {value!r}", node=node)
            if dtype.is_bool and arr.dtype.kind != "b" and not isinstance(value, (np.ndarray, np.generic)):
                # (TF's: a Python number is no bool; ``mask == 2`` is an error, not all True)
                raise ShapeError(f"{what} must be bool, got the {arr.dtype.kind in 'iu' and 'integer' or 'number'} "
                                 f"value {value!r}", node=node)
            if arr.dtype.kind == "c" and not dtype.is_complex:
                raise ShapeError(f"{what} must be {dtype.name}, got a complex value", node=node)
            arr = arr.astype(dtype.numpy)
    else:
        if not isinstance(value, (np.ndarray, np.generic)):  # a numpy scalar keeps its dtype, as in TF
            arr = arr.astype(dtypes.python_number_dtype(arr), copy=False)
        try:
            dt = dtype_of(arr)
        except TypeError as e:
            raise ShapeError(f"{what}: cannot make a tensor of {value!r} ({e})", node=node) from None
    return EagerTensor(arr, dt, eager_device().name)


def _result(opdef: OpDef, outs: list, attrs: dict | None = None):
    outputs = opdef.outputs
    if len(outputs) == 1 and not outputs[0].is_list:
        return outs[0]
    if not outs and not outputs:
        return None
    if len(outputs) == 1:
        return list(outs)
    # A list output's length comes from its attr when given (ParseExampleV2 has six lists); the
    # one list whose attr was inferred from the inputs takes what is left.
    sizes = [_list_size(arg, attrs or {}) if arg.is_list else 1 for arg in outputs]
    if sizes.count(None) == 1:
        sizes[sizes.index(None)] = len(outs) - sum(n for n in sizes if n is not None)
    elif None in sizes:  # several unknown: only one list output per op in practice
        sizes = [len(outs) - (len(outputs) - 1) if arg.is_list else 1 for arg in outputs]
    grouped, i = [], 0
    for arg, n in zip(outputs, sizes):
        if arg.is_list:
            grouped.append(list(outs[i:i + n]))
        else:
            grouped.append(outs[i])
        i += n
    return _outputs_tuple(opdef.name, tuple(arg.name for arg in outputs))(*grouped)


@functools.cache
def _outputs_tuple(op: str, names: tuple[str, ...]):
    """TF's raw-op result type: a namedtuple named for the op with its output args' names
    (``top_k(x).values``, ``unique(x).idx``); a plain tuple where a name is no identifier."""
    if not all(n.isidentifier() and not n.startswith("_") for n in names) or len(set(names)) != len(names):
        return lambda *values: tuple(values)
    return collections.namedtuple(op, names)


def _list_size(arg, attrs: dict) -> int | None:
    if arg.number_attr is not None and arg.number_attr in attrs:
        return int(attrs[arg.number_attr])
    if arg.type_list_attr is not None and arg.type_list_attr in attrs:
        return len(attrs[arg.type_list_attr])
    return None


# --- what the Tensor operators call ---------------------------------------------------------------


def binary(op: str, x, y):
    x, y = _operands(x, y)
    if op == "StringJoin":
        return call("StringJoin", [x, y])
    return function_for(op)(x, y)


def bitwise(kind: str, x, y):
    """``x & y``, ``x | y``, ``x ^ y``: Bitwise<kind> when the tensor operand is an integer,
    Logical<kind> otherwise (xor as TF composes it: (x or y) and not (x and y))."""
    x, y = _operands(x, y)
    t = x if isinstance(x, Tensor) else y
    if t.dtype.is_integer:
        return function_for(f"Bitwise{kind}")(x, y)
    if kind == "Xor":
        return call("LogicalAnd", call("LogicalOr", x, y), call("LogicalNot", call("LogicalAnd", x, y)))
    return function_for(f"Logical{kind}")(x, y)


def _operands(x, y):
    """An operator's numpy-array operand in the tensor operand's dtype, as TensorFlow's operators
    convert it (``x32 + np.array([1.0])``, ``i32 + np.arange(3)``): floats to a float tensor's
    width, ints to a float tensor or to an int tensor whose range holds them, bools to bool.
    Anything else stays as it is (a float array beside an int tensor is the op's dtype error:
    TensorFlow would truncate it)."""
    if isinstance(x, Tensor) and isinstance(y, np.ndarray):
        return x, _like(y, x.dtype)
    if isinstance(y, Tensor) and isinstance(x, np.ndarray):
        return _like(x, y.dtype), y
    return x, y


def _like(a: np.ndarray, want) -> np.ndarray:
    """``a`` in ``want`` where TF converts it and no value changes (floats to a float tensor's
    width as TF does; integral floats to ints, 0/1 to bools); else ``a`` unchanged."""
    kind = a.dtype.kind
    if dtype_of(a) == want or kind not in "biufcV" or want.np_type in (None, object):
        return a
    if (want.is_floating and kind in "iufV") or (want.is_complex and kind in "iufcV"):
        return a.astype(want.numpy)
    with np.errstate(all="ignore"):
        b = a.astype(want.numpy)
        same = np.array_equal(b.astype(a.dtype), a)
    return b if same else a


def compare(op: str, x, y):
    """``x == y`` / ``x != y`` on a tensor, as TensorFlow 2's: elementwise Equal/NotEqual, and a
    plain False (True for ``!=``) for None or a value that cannot be compared with it (another
    kind, shapes that do not broadcast)."""
    if y is None or not isinstance(y, (Tensor, np.ndarray, np.generic, int, float, complex, bool, list, tuple, str,
                                       bytes)):
        return op == "NotEqual"
    try:
        return function_for(op)(*_operands(x, y))
    except (SpecflowError, TypeError, ValueError):
        return op == "NotEqual"


def truediv(x, y, name: str | None = None):
    """``x / y`` as Python divides: integer tensors are divided as floats, TensorFlow's rule
    (8- and 16-bit integers as float32, wider ones as float64)."""
    def int_dtype(v):
        dt = v.dtype if isinstance(v, Tensor) else (dtype_of(v) if isinstance(v, np.ndarray) else None)
        return dt if dt is not None and dt.is_integer else None

    x, y = _operands(x, y)
    dt = int_dtype(x) or int_dtype(y)
    if dt is not None:
        to = dtypes.float32 if dt.itemsize <= 2 else dtypes.float64
        x = call("Cast", x, DstT=to) if isinstance(x, Tensor) else np.asarray(x, to.numpy)
        y = call("Cast", y, DstT=to) if isinstance(y, Tensor) else np.asarray(y, to.numpy)
    return call("RealDiv", x, y, name=name)


def matmul_any(x, y):
    x, y = _operands(x, y)
    rank = [v.shape.rank if isinstance(v, Tensor) else np.ndim(v) for v in (x, y)]
    if rank[0] == 2 and rank[1] == 2:
        return call("MatMul", x, y)
    return call("BatchMatMulV2", x, y)


def getitem(x, key):
    """``x[key]`` for ints, slices, ``...``, ``None`` and scalar integer tensors (a traced loop
    counter, ``shape(x)[0]``), as one StridedSlice; with a traced index its begin/end/strides
    are packed tensors, as TF's ``_slice_helper`` builds them."""
    bounds, masks = slice_spec(key)
    return call("StridedSlice", x, *bounds, **masks)


def slice_spec(key) -> tuple[list, dict]:
    """``key``'s StridedSlice (begin, end, strides) and masks."""
    if not isinstance(key, tuple):
        key = (key,)
    begin, end, strides = [], [], []
    masks = {"begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0, "new_axis_mask": 0, "shrink_axis_mask": 0}
    for i, k in enumerate(key):
        bit = 1 << i
        if k is Ellipsis:
            masks["ellipsis_mask"] |= bit
            begin.append(0), end.append(0), strides.append(1)
        elif k is None:
            masks["new_axis_mask"] |= bit
            begin.append(0), end.append(0), strides.append(1)
        elif isinstance(k, slice):
            begin.append(0 if k.start is None else _index(k.start))
            end.append(0 if k.stop is None else _index(k.stop))
            strides.append(1 if k.step is None else _index(k.step))
            if k.start is None:
                masks["begin_mask"] |= bit
            if k.stop is None:
                masks["end_mask"] |= bit
        else:
            k = _index(k)
            # (a shrunk axis reads only begin: end 0 for -1 is that element, as in TF)
            begin.append(k), end.append(k + 1 if isinstance(k, Tensor) or k != -1 else 0), strides.append(1)
            masks["shrink_axis_mask"] |= bit
    traced = [v for v in (*begin, *end, *strides) if isinstance(v, Tensor)]
    if not traced:
        return [np.asarray(v, np.int32) for v in (begin, end, strides)], masks
    dtype = dtypes.int64 if any(v.dtype == dtypes.int64 for v in traced) else dtypes.int32
    return [_packed(v, dtype) for v in (begin, end, strides)], masks


def _index(k):
    """An index or slice bound: a Python int, or a scalar int32/int64 tensor (an eager one as
    its int)."""
    if isinstance(k, (int, np.integer)) and not isinstance(k, bool) or (
            isinstance(k, np.ndarray) and k.ndim == 0 and k.dtype.kind in "iu"):
        return int(k)
    if isinstance(k, Tensor) and k.shape.rank == 0 and k.dtype in (dtypes.int32, dtypes.int64):
        return int(k) if isinstance(k, EagerTensor) else k
    raise TypeError("tensor indices must be ints, slices, ..., None or scalar int32/int64 tensors, "
                    f"got {type(k).__name__}" + (f" of dtype {k.dtype.name} and shape {k.shape}"
                                                 if isinstance(k, Tensor) else ""))


def _packed(values: list, dtype):
    """Ints and traced scalars as one vector of ``dtype``: a Pack, as TF's ``stack``."""
    parts = [call("Cast", v, DstT=dtype) if isinstance(v, Tensor) and v.dtype != dtype else
             v if isinstance(v, Tensor) else np.asarray(v, dtype.numpy) for v in values]  # fmt: skip
    return call("Pack", parts, axis=0)


def constant(value, dtype=None, shape=None, name: str | None = None) -> Tensor:
    """``sf.constant([[1., 2.]])``: an eager tensor (inside sf.function, a Const of the trace).
    ``shape``: as TensorFlow's, a scalar (or one element) filled to it, or ``value`` reshaped
    to it when the element counts agree."""
    if isinstance(value, Tensor) and dtype is not None and value.dtype != as_dtype(dtype):
        raise TypeError(f"sf.constant: the tensor is {value.dtype.name}, not {as_dtype(dtype).name} (use sf.cast)")
    if shape is not None:
        arr = np.asarray(value)
        if not isinstance(value, (Tensor, np.ndarray, np.generic)) and arr.dtype.kind in "iuf" and dtype is None:
            arr = arr.astype(dtypes.python_number_dtype(arr), copy=False)  # Python numbers: int32/float32
        dims = [int(d) for d in np.atleast_1d(np.asarray(shape, dtype=np.int64))]
        size = int(np.prod(dims, dtype=np.int64))
        if arr.size == 1:
            value = np.full(dims, arr.reshape(()), dtype=arr.dtype)
        elif arr.size == size:
            value = arr.reshape(dims)
        else:
            raise TypeError(f"sf.constant: {arr.size} value(s) cannot make shape {dims} (one value fills any "
                            "shape; otherwise the counts must agree)")
    t = to_tensor(value, as_dtype(dtype) if dtype is not None else None, "constant")
    return STATE.trace.capture(t) if STATE.trace is not None else t


def convert_to_tensor(value, dtype=None, dtype_hint=None, name: str | None = None) -> Tensor:
    """TF's ``tf.convert_to_tensor``: ``dtype_hint`` is tried when no ``dtype`` is given and the
    value converts to it (else the value's own dtype)."""
    from specflow.api.variables import Variable

    if isinstance(value, Variable):
        value = value.read_value()
    if isinstance(value, IndexedSlices):
        value = value._dense()
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype != as_dtype(dtype):
            raise ShapeError(f"tensor of dtype {value.dtype.name} where {as_dtype(dtype).name} is expected")
        return value
    if dtype is None and dtype_hint is not None:
        try:
            return constant(value, dtype_hint)
        except (SpecflowError, TypeError, ValueError):
            pass
    return constant(value, dtype)
