"""Lookup tables (tf.lookup; what Keras's StringLookup, IntegerLookup and TextVectorization build),
each a resource, as TF 2.21's CPU kernels behave.

``HashTableV2`` (a static table: initialized once by InitializeTableV2, LookupTableImportV2 or
InitializeTableFromTextFileV2; later initializations are ignored, as TF ignores them; Insert and
Remove are unimplemented), ``MutableHashTableV2`` (scalar values) and
``MutableHashTableOfTensorsV2`` (values of ``value_shape``): Insert overwrites, Import replaces
the whole content, Remove ignores missing keys. ``LookupTableFindV2``'s default is a value (a
HashTable's: its first element) or, for the mutable tables, one per key. Export gives keys in
insertion order (TF's is its hash map's).

InitializeTableFromTextFileV2 reads a vocabulary file only when the file is one a loaded
SavedModel owns (its ``assets/``, registered through ``allow_asset_directory`` by whoever loads
it) or one Python code named (``allow_vocabulary_file``: sf.lookup.TextFileInitializer): a path
held in a graph is never opened otherwise.

Tables of sf.lookup (container ``SHARED_CONTAINER``) are Python objects' tables: ``share_table``
records each, and a HashTableV2 node of that container in any Session (a traced function's)
hands out that very table, as a traced function's VarHandleOp hands out its sf.Variable.
"""

from __future__ import annotations

import os
import threading
import weakref

import numpy as np

from specflow.graph import dtypes
from specflow.graph.shapes import Shape, as_shape
from specflow.ops.inference import InferenceContext, no_outputs, scalar_shape
from specflow.ops.registry import KernelContext, kernel, not_differentiable, register_op
from specflow.ops.state_ops import _handle, _resources
from specflow.runtime.resources import ResourceHandle

_CPU = ("CPU",)
_KEYS = "{int32, int64, string}"
_VALUES = "{bool, float32, float64, int32, int64, string}"
SHARED_CONTAINER = "sf_lookup"
_SHARED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # shared_name -> LookupTable


def share_table(name: str, table) -> None:
    """Make ``table`` what a HashTableV2 node of container SHARED_CONTAINER and shared_name
    ``name`` finds in every Session (held weakly: it lives as long as its sf.lookup table, which the
    concrete functions reading it keep alive)."""
    _SHARED[name] = table


class LookupTable:
    """One table. ``values`` maps a key (a Python scalar: bytes, int) to a value (a scalar or an
    array of ``value_shape``); ``initialized`` is a HashTable's state."""

    def __init__(self, kind: str, key_dtype, value_dtype, value_shape: Shape):
        self.kind = kind
        self.key_dtype = dtypes.as_dtype(key_dtype)
        self.value_dtype = dtypes.as_dtype(value_dtype)
        self.value_shape = value_shape
        self.values: dict = {}
        self.initialized = kind != "HashTable"
        self.lock = threading.Lock()

    @property
    def static(self) -> bool:
        return self.kind == "HashTable"


def _table(ctx: KernelContext, handle) -> LookupTable:
    h = _handle(ctx, handle)
    table = _resources(ctx).lookup(h.container, h.name)
    if not isinstance(table, LookupTable):
        raise ctx.fail(f"resource '{h.name}' is a {type(table).__name__}, not a lookup table")
    return table


def _shape_str(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


# --- creating tables ------------------------------------------------------------------------------


def _register_table(op: str, kind: str, extra_attrs: list[str], doc: str) -> None:
    register_op(
        op,
        outputs=["table_handle: resource"],
        attrs=["container: string = ''", "shared_name: string = ''", "use_node_name_sharing: bool = false",
               f"key_dtype: {_KEYS}", f"value_dtype: {_VALUES}", *extra_attrs],
        stateful=True,
        shape=scalar_shape,
        doc=doc,
    )

    @kernel(op, devices=_CPU)
    def _create(ctx):
        a = ctx.attrs
        container, name = a["container"], a["shared_name"] or ctx.node.name
        shape = as_shape(a["value_shape"]) if "value_shape" in a else Shape.scalar()
        if not shape.is_fully_defined:
            raise ctx.fail(f"value_shape must be fully defined, got {shape}")

        def make():
            if container == SHARED_CONTAINER:
                shared = _SHARED.get(name)
                if shared is None:
                    raise ctx.fail(f"lookup table '{name}' was deleted (the sf.lookup table object this graph "
                                   "names is gone: keep a reference, e.g. on a Module)")
                return shared
            return LookupTable(kind, a["key_dtype"], a["value_dtype"], shape)

        table = _resources(ctx).lookup_or_create(container, name, make)
        if (not isinstance(table, LookupTable) or table.kind != kind or table.key_dtype != dtypes.as_dtype(a["key_dtype"])
                or table.value_dtype != dtypes.as_dtype(a["value_dtype"]) or table.value_shape != shape):
            raise ctx.fail(f"resource '{name}' exists and is not a {kind} of {a['key_dtype']} -> {a['value_dtype']}")
        return ResourceHandle(ctx.device, container, name)


_register_table("HashTableV2", "HashTable", [],
                "A static hash table: initialized once (InitializeTableV2, LookupTableImportV2, "
                "InitializeTableFromTextFileV2), then read.")
_register_table("MutableHashTableV2", "MutableHashTable", [],
                "A mutable hash table of scalar values (insert, remove, import, export).")
_register_table("MutableHashTableOfTensorsV2", "MutableHashTableOfTensors", ["value_shape: shape = []"],
                "A mutable hash table whose values are tensors of `value_shape`.")


# --- checks shared by the ops ---------------------------------------------------------------------


def _check_types(ctx, table: LookupTable, key_attr: str | None, value_attr: str | None) -> None:
    have = [dtypes.as_dtype(ctx.attrs[key_attr]).name] if key_attr else []
    want = [table.key_dtype.name] if key_attr else []
    if value_attr:
        have.append(dtypes.as_dtype(ctx.attrs[value_attr]).name)
        want.append(table.value_dtype.name)
    if have != want:
        raise ctx.fail(f"Signature mismatch, have: resource, {', '.join(have)} expected: resource, {', '.join(want)}")


def _key(x):
    return x if isinstance(x, bytes) else (x.encode("utf-8") if isinstance(x, str) else x)


def _flat_keys(keys) -> list:
    arr = np.asarray(keys)
    return [_key(k) for k in arr.reshape(-1).tolist()]


def _rows(ctx, table: LookupTable, keys, values, verb: str) -> list[tuple]:
    """(key, value) pairs of an insert/import/initialize, shapes checked as TF checks them."""
    k, v = np.asarray(keys), np.asarray(values)
    if table.static:
        if k.ndim != 1:
            raise ctx.fail(f"Keys must be a vector, but received shape{_shape_str(k.shape)}")
        if k.size != v.size:
            raise ctx.fail(f"Keys and values must have the same size {k.size} vs {v.size}")
        vals = v.reshape(-1)
    else:
        want = tuple(k.shape) + tuple(table.value_shape.as_list())
        if v.shape != want:
            raise ctx.fail(f"Expected shape {_shape_str(want)} for value, got {_shape_str(v.shape)}")
        inner = int(np.prod(table.value_shape.as_list(), dtype=np.int64))
        vals = v.reshape(-1, *table.value_shape.as_list()) if table.value_shape.rank else v.reshape(-1)
        if inner == 0 and k.size:
            vals = np.zeros((k.size, *table.value_shape.as_list()), v.dtype)
    return list(zip(_flat_keys(k), [x if isinstance(x, np.ndarray) else x for x in vals]))


def _static_insert(ctx, table: LookupTable, rows) -> None:
    if table.initialized:
        return  # TF ignores a second initialization of a static table
    values = {}
    for k, v in rows:
        if k in values and values[k] != v:
            raise ctx.fail(f"HashTable has different value for same key. Key {_text(k)} has {_text(values[k])} "
                           f"and trying to add value {_text(v)}")
        values[k] = v
    table.values = values
    table.initialized = True


def _text(x) -> str:
    if isinstance(x, bytes):
        return x.decode("utf-8", "replace")
    if isinstance(x, (bool, np.bool_)):
        return "1" if x else "0"
    return str(x.item() if isinstance(x, np.generic) else x)


# --- initializing ---------------------------------------------------------------------------------

register_op(
    "InitializeTableV2",
    inputs=["table_handle: resource", "keys: Tkey", "values: Tval"],
    attrs=["Tkey: type", "Tval: type"],
    stateful=True,
    shape=no_outputs,
    doc="Fills a static table from the vectors `keys` and `values` (ignored once it is initialized).",
)


@kernel("InitializeTableV2", devices=_CPU)
def _initialize_table(ctx, table_handle, keys, values):
    table = _table(ctx, table_handle)
    _check_types(ctx, table, "Tkey", "Tval")
    with table.lock:
        if not table.static:
            raise ctx.fail("InitializeTableV2 needs a HashTable (an initializable table)")
        if table.initialized:  # a saved function initializes its table on every call: nothing to read
            return
        _static_insert(ctx, table, _rows(ctx, table, keys, values, "initialize"))


register_op(
    "LookupTableImportV2",
    inputs=["table_handle: resource", "keys: Tin", "values: Tout"],
    attrs=["Tin: type", "Tout: type"],
    stateful=True,
    shape=no_outputs,
    doc="Replaces a table's content with `keys` -> `values` (a static table: initializes it).",
)


@kernel("LookupTableImportV2", devices=_CPU)
def _import(ctx, table_handle, keys, values):
    table = _table(ctx, table_handle)
    _check_types(ctx, table, "Tin", "Tout")
    with table.lock:
        if table.static:
            _static_insert(ctx, table, _rows(ctx, table, keys, values, "import"))
        else:
            table.values = dict(_rows(ctx, table, keys, values, "import"))


# Asset directories a loader registered: InitializeTableFromTextFileV2 opens files inside them only.
_ASSET_DIRS: set[str] = set()
_ASSET_LOCK = threading.Lock()


def allow_asset_directory(path: str) -> None:
    """Let InitializeTableFromTextFileV2 read vocabulary files inside ``path`` (a loaded
    SavedModel's ``assets/`` directory)."""
    with _ASSET_LOCK:
        _ASSET_DIRS.add(os.path.realpath(path))


_FILES: set[str] = set()


def allow_vocabulary_file(path: str) -> None:
    """Let InitializeTableFromTextFileV2 read the one file ``path`` (named by Python code:
    sf.lookup.TextFileInitializer's)."""
    with _ASSET_LOCK:
        _FILES.add(os.path.realpath(path))


def _allowed_file(name: str) -> bool:
    real = os.path.realpath(name)
    with _ASSET_LOCK:
        return real in _FILES or any(real.startswith(d + os.sep) for d in _ASSET_DIRS)


def _text_file_shape(ic: InferenceContext) -> list[Shape]:
    if ic.shape(1).rank not in (None, 0):
        raise ic.fail(f"filename must be a scalar, got shape {ic.shape(1)}")
    return []


register_op(
    "InitializeTableFromTextFileV2",
    inputs=["table_handle: resource", "filename: string"],
    attrs=["key_index: int >= -2", "value_index: int >= -2", "vocab_size: int >= -1 = -1",
           "delimiter: string = '\t'", "offset: int = 0"],
    stateful=True,
    shape=_text_file_shape,
    doc="Fills a static table from a text file, one entry per line (key and value: a column split "
        "at `delimiter`, -2 the whole line, -1 the line number: TF's kWholeLine, kLineNumber). Only a "
        "loaded SavedModel's own asset files, or a file sf.lookup.TextFileInitializer names, are read.",
)


@kernel("InitializeTableFromTextFileV2", devices=_CPU)
def _initialize_from_text_file(ctx, table_handle, filename):
    table = _table(ctx, table_handle)
    f = np.asarray(filename, dtype=object)
    if f.ndim != 0:
        raise ctx.fail(f"filename should be a single string, but got {_shape_str(f.shape)}")
    name = _key(f.item()).decode("utf-8", "surrogateescape")
    if not _allowed_file(name):
        raise ctx.fail(f"InitializeTableFromTextFileV2: not reading '{name}': specflow reads a vocabulary "
                       "file only from a loaded SavedModel's assets/ directory")
    a = ctx.attrs
    try:
        with open(name, "rb") as fh:
            lines = fh.read().split(b"\n")
    except OSError as e:
        raise ctx.fail(f"{name}: {e.strerror or e}") from None
    if lines and lines[-1] == b"":
        lines.pop()
    lines = [ln.removesuffix(b"\r") for ln in lines]
    if a["vocab_size"] >= 0:
        if len(lines) < a["vocab_size"]:
            raise ctx.fail(f"Invalid vocab_size in {name}: expected {a['vocab_size']} but got {len(lines)}")
        lines = lines[:a["vocab_size"]]
    delim = a["delimiter"].encode("utf-8")

    def column(line: bytes, number: int, index: int, dtype):
        if index == -1:  # TF's kLineNumber
            v = number + a["offset"]
        elif index == -2:  # kWholeLine
            v = line
        else:
            cols = line.split(delim)
            if index >= len(cols):
                raise ctx.fail(f"Invalid number of columns in {name} line {number} ({line!r}) : expected "
                               f"at least {index + 1} got {len(cols)}")
            v = cols[index]
        if dtype.name == "string":
            return v if isinstance(v, bytes) else str(v).encode()
        if isinstance(v, bytes):
            try:
                v = float(v) if dtype.is_floating else int(v)
            except ValueError:
                raise ctx.fail(f"Field {v!r} in line {number} is not a valid {dtype.name}") from None
        return np.asarray(v, dtype=dtype.numpy).item()

    rows = [(column(ln, i, a["key_index"], table.key_dtype), column(ln, i, a["value_index"], table.value_dtype))
            for i, ln in enumerate(lines)]
    with table.lock:
        if not table.static:
            raise ctx.fail("InitializeTableFromTextFileV2 needs a HashTable (an initializable table)")
        _static_insert(ctx, table, rows)


# --- reading and writing --------------------------------------------------------------------------


def _find_shape(ic: InferenceContext) -> list[Shape]:
    # A scalar default is the value shape ([] for a HashTable): the output has the keys' shape.
    return [ic.shape(1) if ic.shape(2).rank == 0 else Shape.unknown()]


register_op(
    "LookupTableFindV2",
    inputs=["table_handle: resource", "keys: Tin", "default_value: Tout"],
    outputs=["values: Tout"],
    attrs=["Tin: type", "Tout: type"],
    stateful=True,
    shape=_find_shape,
    doc="The value of each key ([keys..., value_shape...]), `default_value` where a key is absent.",
)


@kernel("LookupTableFindV2", devices=_CPU)
def _find(ctx, table_handle, keys, default_value):
    table = _table(ctx, table_handle)
    _check_types(ctx, table, "Tin", "Tout")
    if not table.initialized:
        raise ctx.fail("Table not initialized.")
    k, d = np.asarray(keys), np.asarray(default_value)
    vshape = tuple(table.value_shape.as_list())
    full = tuple(k.shape) + vshape
    if d.shape != vshape and d.shape != full:
        raise ctx.fail(f"Expected shape {_shape_str(vshape)} or {_shape_str(full)} for default value, "
                       f"got {_shape_str(d.shape)}")
    flat = _flat_keys(k)
    dtype = table.value_dtype.numpy if table.value_dtype.name != "string" else object
    out = np.empty((len(flat), *vshape), dtype=dtype)
    if table.static or d.shape == vshape:
        dflat = [d.reshape(-1)[0]] * len(flat) if table.static else [d] * len(flat)
    else:
        dflat = list(d.reshape(len(flat), *vshape)) if vshape else d.reshape(-1).tolist()
    with table.lock:
        get = table.values.get
        for i, key in enumerate(flat):
            v = get(key)
            out[i] = dflat[i] if v is None else v
    return out.reshape(full)


register_op(
    "LookupTableInsertV2",
    inputs=["table_handle: resource", "keys: Tin", "values: Tout"],
    attrs=["Tin: type", "Tout: type"],
    stateful=True,
    shape=no_outputs,
    doc="Sets `keys` to `values` in a mutable table (a later duplicate wins).",
)


@kernel("LookupTableInsertV2", devices=_CPU)
def _insert(ctx, table_handle, keys, values):
    table = _table(ctx, table_handle)
    _check_types(ctx, table, "Tin", "Tout")
    if table.static:
        raise ctx.fail("Insert not supported by InitializableLookupTable implementations")
    with table.lock:
        table.values.update(_rows(ctx, table, keys, values, "insert"))


register_op(
    "LookupTableRemoveV2",
    inputs=["table_handle: resource", "keys: Tin"],
    attrs=["Tin: type"],
    stateful=True,
    shape=no_outputs,
    doc="Removes `keys` from a mutable table (absent keys are ignored).",
)


@kernel("LookupTableRemoveV2", devices=_CPU)
def _remove(ctx, table_handle, keys):
    table = _table(ctx, table_handle)
    _check_types(ctx, table, "Tin", None)
    if table.static:
        raise ctx.fail("Remove not supported by InitializableLookupTable implementations")
    with table.lock:
        for key in _flat_keys(keys):
            table.values.pop(key, None)


register_op(
    "LookupTableSizeV2",
    inputs=["table_handle: resource"],
    outputs=["size: int64"],
    stateful=True,
    shape=scalar_shape,
    doc="The number of entries (0 for a table not yet initialized).",
)


@kernel("LookupTableSizeV2", devices=_CPU)
def _size(ctx, table_handle):
    table = _table(ctx, table_handle)
    with table.lock:
        return np.int64(len(table.values))


def _export_shape(ic: InferenceContext) -> list[Shape]:
    return [Shape([None]), Shape.unknown()]


register_op(
    "LookupTableExportV2",
    inputs=["table_handle: resource"],
    outputs=["keys: Tkeys", "values: Tvalues"],
    attrs=["Tkeys: type", "Tvalues: type"],
    stateful=True,
    shape=_export_shape,
    doc="Every key and its value: [n] keys, [n, value_shape...] values.",
)


@kernel("LookupTableExportV2", devices=_CPU)
def _export(ctx, table_handle):
    table = _table(ctx, table_handle)
    _check_types(ctx, table, "Tkeys", "Tvalues")
    with table.lock:
        items = list(table.values.items())
    kd = object if table.key_dtype.name == "string" else table.key_dtype.numpy
    vd = object if table.value_dtype.name == "string" else table.value_dtype.numpy
    keys = np.empty(len(items), dtype=kd)
    values = np.empty((len(items), *table.value_shape.as_list()), dtype=vd)
    for i, (k, v) in enumerate(items):
        keys[i] = k
        values[i] = v
    return keys, values


not_differentiable("HashTableV2", "MutableHashTableV2", "MutableHashTableOfTensorsV2", "InitializeTableV2",
                   "LookupTableImportV2", "InitializeTableFromTextFileV2", "LookupTableFindV2",
                   "LookupTableInsertV2", "LookupTableRemoveV2", "LookupTableSizeV2", "LookupTableExportV2")
