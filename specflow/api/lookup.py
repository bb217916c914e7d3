"""sf.lookup: TensorFlow 2's lookup tables (``tf.lookup``) over ops/lookup_ops.py.

A table is a Python object owning one runtime table (ops/lookup_ops.LookupTable), created and
initialized once, eagerly (inside a function being traced: in init_scope, as TF does). Eager ops
reach it through its handle; a traced function through one HashTableV2/MutableHashTableV2 node
naming it (trace.table_handle), which every Session resolves to the same table
(lookup_ops.share_table), so a function looks keys up in the table the eager object filled.

``sf.save`` writes a static table's content as the function's own initializer
(``initialized_tables``): the saved graph creates its table by a shared name and fills it
(InitializeTableV2 of constants that an Identity of the handle, what every reader reads, runs
after; ignored once the table is filled, as TF ignores a second initialization). Mutable tables are not saved (an error says so).
"""

from __future__ import annotations

import hashlib
import itertools
import types
import weakref

import numpy as np

from specflow.api.context import STATE, device, eager_device
from specflow.api.op_functions import call, convert_to_tensor
from specflow.api.tensor import EagerTensor, GraphTensor, Tensor
from specflow.errors import ExportError, GraphError
from specflow.graph import dtypes
from specflow.graph.graph_def import GraphDef, NodeDef, parse_input
from specflow.graph.shapes import Shape
from specflow.ops import lookup_ops
from specflow.runtime.resources import ResourceHandle

__all__ = ["KeyValueTensorInitializer", "TextFileInitializer", "TextFileIndex", "StaticHashTable",
           "StaticVocabularyTable", "experimental"]

_IDS = itertools.count(1)
_TABLES: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # uid -> table (for sf.save)


class _init_scope:
    """Table creation runs eagerly, outside any function being traced (TF's init_scope)."""

    def __enter__(self):
        self.saved, STATE.trace = STATE.trace, None

    def __exit__(self, *exc):
        STATE.trace = self.saved


_HOME = "/device:CPU:0"  # where every table lives (TF's lookup kernels are CPU kernels)


def _on_home(fn):
    """Run a table method's ops on the table's device, whatever ``sf.device`` scope the caller is in
    (TF places an op reading a resource with the resource)."""

    def wrapped(*args, **kwargs):
        with device(_HOME):
            return fn(*args, **kwargs)

    wrapped.__name__, wrapped.__doc__ = fn.__name__, fn.__doc__
    return wrapped


def _release(mgr, uid: str) -> None:
    mgr.delete(lookup_ops.SHARED_CONTAINER, uid)


def _keys_of(keys, key_dtype, what: str = "keys", converted: bool = False):
    """``keys`` as a tensor of the table's key dtype. A tensor of another dtype is TF's TypeError,
    or with ``converted`` (where TF converts: a mutable table's insert and lookup) its ValueError."""
    if isinstance(keys, Tensor):
        if keys.dtype != key_dtype:
            if converted:
                raise ValueError(f"Tensor conversion requested dtype {key_dtype.name} for `{what}` of dtype "
                                 f"{keys.dtype.name}")
            raise TypeError(f"Dtype of argument `{what}` must be {key_dtype.name}, received: {keys.dtype.name}")
        return keys
    return convert_to_tensor(keys, dtype=key_dtype)


def _sparse_aware(lookup):
    """A static table's lookup of an sf.SparseTensor: its values looked up, indices and shape kept (TF's)."""

    def wrapped(self, keys, name=None):
        from specflow.api.sparse import SparseTensor

        if isinstance(keys, SparseTensor):
            if keys.values.dtype != self.key_dtype:
                raise TypeError(f"Dtype of argument `keys` must be {self.key_dtype.name}, received: "
                                f"{keys.values.dtype.name}")
            return SparseTensor(keys.indices, lookup(self, keys.values, name), keys.dense_shape)
        return lookup(self, keys, name)

    wrapped.__doc__ = lookup.__doc__
    return wrapped


def _lifted(value, what: str):
    """A traced tensor's value now, when it depends on no input (a table is filled once, outside
    the function, as TF's init_scope lifts it); an error naming it otherwise."""
    if not isinstance(value, GraphTensor):
        return value
    from specflow.api.variables import _lift

    got = value.trace.constant_value(value)
    if got is None:
        got = _lift(value)
    if got is None:
        raise GraphError(f"KeyValueTensorInitializer: {what} '{value.name}' depend on the function's inputs; a table "
                         "is filled once, when it is made: give values computable at trace time")
    return got


def _check_table_dtypes(table, key_dtype, value_dtype) -> None:
    if key_dtype != table.key_dtype:
        raise TypeError(f"Invalid key dtype for table, expected {table.key_dtype.name} but got {key_dtype.name}.")
    if value_dtype != table.value_dtype:
        raise TypeError(f"Invalid value dtype for table, expected {table.value_dtype.name} but got "
                        f"{value_dtype.name}.")


# --- initializers -----------------------------------------------------------------------------------


class TextFileIndex:
    """What a TextFileInitializer takes from each line: ``WHOLE_LINE``, ``LINE_NUMBER`` or a column."""

    WHOLE_LINE = -2
    LINE_NUMBER = -1


class KeyValueTensorInitializer:
    """``KeyValueTensorInitializer(keys, values, key_dtype=None, value_dtype=None)``: the table's
    entries from two vectors."""

    def __init__(self, keys, values, key_dtype=None, value_dtype=None, name=None):
        with _init_scope():
            keys, values = _lifted(keys, "keys"), _lifted(values, "values")
            self._keys = convert_to_tensor(keys, dtype=None if key_dtype is None else dtypes.as_dtype(key_dtype))
            self._values = convert_to_tensor(values, dtype=None if value_dtype is None else dtypes.as_dtype(value_dtype))
        self.key_dtype = self._keys.dtype
        self.value_dtype = self._values.dtype
        self._name = name or "key_value_init"

    def initialize(self, table):
        _check_table_dtypes(table, self.key_dtype, self.value_dtype)
        with _init_scope(), device(_HOME):
            call("InitializeTableV2", table._handle, self._keys, self._values)


class TextFileInitializer:
    """``TextFileInitializer(filename, key_dtype, key_index, value_dtype, value_index,
    vocab_size=None, delimiter="\\t", name=None, value_index_offset=0)``: one entry per line of a
    text file (a column, ``TextFileIndex.WHOLE_LINE`` or ``LINE_NUMBER``)."""

    def __init__(self, filename, key_dtype, key_index, value_dtype, value_index, vocab_size=None, delimiter="\t",
                 name=None, value_index_offset=0):
        if isinstance(filename, Tensor):
            filename = np.asarray(filename).item()
        if isinstance(filename, bytes):
            filename = filename.decode("utf-8")
        if not filename:
            raise ValueError("`filename` argument required for tf.lookup.TextFileInitializer")
        key_dtype, value_dtype = dtypes.as_dtype(key_dtype), dtypes.as_dtype(value_dtype)
        for what, index, dtype in (("key", key_index, key_dtype), ("value", value_index, value_dtype)):
            if index < -2:
                raise ValueError(f"`{what}_index` should be >= -2, received: {index}.")
            if index == TextFileIndex.LINE_NUMBER and dtype != dtypes.int64:
                raise ValueError(f"`{what}_dtype` must be int64 if `{what}_index` is {index}, received: {dtype.name}")
            if index == TextFileIndex.WHOLE_LINE and not dtype.is_integer and dtype != dtypes.string:
                raise ValueError(f"`{what}_dtype` should be either integer or string for `{what}_index` {index}, "
                                 f"received: {dtype.name}")
        if vocab_size is not None and vocab_size <= 0:
            raise ValueError(f"`vocab_size` should be > 0, received: {vocab_size}")
        self.filename = str(filename)
        self.key_dtype, self.value_dtype = key_dtype, value_dtype
        self._attrs = {"key_index": int(key_index), "value_index": int(value_index),
                       "vocab_size": -1 if vocab_size is None else int(vocab_size), "delimiter": delimiter,
                       "offset": int(value_index_offset)}
        self._name = name or "text_file_init"

    def initialize(self, table):
        _check_table_dtypes(table, self.key_dtype, self.value_dtype)
        lookup_ops.allow_vocabulary_file(self.filename)  # the file this Python code named
        with _init_scope(), device(_HOME):
            call("InitializeTableFromTextFileV2", table._handle, np.asarray(self.filename.encode(), dtype=object),
                 **self._attrs)


# --- tables -----------------------------------------------------------------------------------------


class _Table:
    """A table resource: created on the CPU's eager resource manager, shared with every Session
    a traced function runs in."""

    _op = "HashTableV2"
    _kind = "HashTable"

    def __init__(self, key_dtype, value_dtype, name: str, value_shape: Shape | None = None):
        self._key_dtype, self._value_dtype = dtypes.as_dtype(key_dtype), dtypes.as_dtype(value_dtype)
        self._name = name
        self._value_shape = value_shape or Shape.scalar()
        self._uid = f"{name.replace('/', '_')}_{next(_IDS)}"
        dev = eager_device(_HOME)
        table = lookup_ops.LookupTable(self._kind, self._key_dtype, self._value_dtype, self._value_shape)
        dev.resources.lookup_or_create(lookup_ops.SHARED_CONTAINER, self._uid, lambda: table)
        lookup_ops.share_table(self._uid, table)
        self._table = table  # the runtime table lives as long as this object
        self._eager_handle = EagerTensor(ResourceHandle(dev.name, lookup_ops.SHARED_CONTAINER, self._uid),
                                         dtypes.resource, dev.name)
        _TABLES[self._uid] = self
        weakref.finalize(self, _release, dev.resources, self._uid)

    def _op_attrs(self) -> dict:
        attrs = {"container": lookup_ops.SHARED_CONTAINER, "shared_name": self._uid, "use_node_name_sharing": False,
                 "key_dtype": self._key_dtype, "value_dtype": self._value_dtype}
        if self._op == "MutableHashTableOfTensorsV2":
            attrs["value_shape"] = self._value_shape
        return attrs

    @property
    def _handle(self):
        """The handle where the caller is: eager, or a node of the function being traced."""
        trace = STATE.trace
        return self._eager_handle if trace is None else trace.table_handle(self)

    @property
    def resource_handle(self):
        return self._handle

    @property
    def key_dtype(self):
        return self._key_dtype

    @property
    def value_dtype(self):
        return self._value_dtype

    @property
    def name(self) -> str:
        return self._name

    @_on_home
    def size(self, name=None):
        return call("LookupTableSizeV2", self._handle, name=name)

    def __getitem__(self, keys):
        return self.lookup(keys)

    def __repr__(self) -> str:
        return (f"<sf.lookup.{type(self).__name__} '{self._name}': {self._key_dtype.name} -> "
                f"{self._value_dtype.name}>")


class StaticHashTable(_Table):
    """``StaticHashTable(initializer, default_value, name=None)``: a table filled once by its
    initializer; ``lookup(keys)`` (or ``table[keys]``) gives ``default_value`` for absent keys."""

    def __init__(self, initializer, default_value, name=None, experimental_is_anonymous=False):
        with _init_scope():
            default = convert_to_tensor(default_value, dtype=initializer.value_dtype)
        if default.shape.rank != 0:
            raise ValueError(f"default_value must be a scalar, got shape {default.shape}")
        super().__init__(initializer.key_dtype, initializer.value_dtype, name or "hash_table")
        self._default_value = default
        self._initializer = initializer
        initializer.initialize(self)

    @property
    def default_value(self):
        return self._default_value

    @_on_home
    @_sparse_aware
    def lookup(self, keys, name=None):
        keys = _keys_of(keys, self._key_dtype)
        return call("LookupTableFindV2", self._handle, keys, self._default_value, name=name)

    @_on_home
    def export(self, name=None):
        return call("LookupTableExportV2", self._handle, Tkeys=self._key_dtype, Tvalues=self._value_dtype, name=name)


class StaticVocabularyTable:
    """``StaticVocabularyTable(initializer, num_oov_buckets, lookup_key_dtype=None, name=None)``:
    an int64 id per key, a key outside the vocabulary hashed into one of ``num_oov_buckets``
    buckets after it (TF's StringToHashBucketFast of the key, an integer key's decimal string)."""

    def __init__(self, initializer, num_oov_buckets, lookup_key_dtype=None, name=None,
                 experimental_is_anonymous=False):
        if num_oov_buckets <= 0:
            raise ValueError("`num_oov_buckets` must be > 0; use StaticHashTable.")
        if name:
            name = name.rstrip("/")
        if initializer is not None:
            if lookup_key_dtype is None:
                lookup_key_dtype = initializer.key_dtype
            lookup_key_dtype = dtypes.as_dtype(lookup_key_dtype)
            if initializer.key_dtype not in (dtypes.int64, dtypes.string):
                raise TypeError(f"Invalid `key_dtype`, expected one of (int64, string), but got "
                                f"{initializer.key_dtype.name}.")
            if initializer.key_dtype.is_integer != lookup_key_dtype.is_integer:
                raise TypeError(f"Invalid `key_dtype`, expected {'integer' if lookup_key_dtype.is_integer else 'non-integer'} "
                                f"but got {initializer.key_dtype.name}.")
            if initializer.value_dtype != dtypes.int64:
                raise TypeError(f"Invalid `value_dtype`, expected int64 but got {initializer.value_dtype.name}.")
            self._table = StaticHashTable(initializer, -1, name=name)
            name = name or self._table.name
        else:
            lookup_key_dtype = dtypes.string
            self._table = None
            name = name or "hash_bucket"
        if not lookup_key_dtype.is_integer and lookup_key_dtype != dtypes.string:
            raise TypeError(f"Invalid `key_dtype`, expected integer or string, got {lookup_key_dtype.name}")
        self._key_dtype = lookup_key_dtype
        self._num_oov_buckets = int(num_oov_buckets)
        self._name = name.split("/")[-1]

    key_dtype = property(lambda self: self._key_dtype)
    value_dtype = property(lambda self: dtypes.int64)
    name = property(lambda self: self._name)

    @property
    def resource_handle(self):
        return None if self._table is None else self._table.resource_handle

    @_on_home
    def size(self, name=None):
        n = self._table.size() if self._table is not None else convert_to_tensor(0, dtype=dtypes.int64)
        return call("AddV2", n, np.int64(self._num_oov_buckets), name=name)

    @_on_home
    @_sparse_aware
    def lookup(self, keys, name=None):
        keys = _keys_of(keys, self._key_dtype)
        values = keys
        if self._table is not None and self._table.key_dtype == dtypes.int64 and keys.dtype != dtypes.int64:
            values = call("Cast", values, DstT=dtypes.int64)
        text = values if values.dtype == dtypes.string else call("AsString", values)
        buckets = call("StringToHashBucketFast", text, num_buckets=self._num_oov_buckets)
        if self._table is None:
            return buckets
        ids = self._table.lookup(values)
        buckets = call("AddV2", buckets, self._table.size())
        found = call("NotEqual", ids, self._table.default_value)
        return call("SelectV2", found, ids, buckets, name=name)

    def __getitem__(self, keys):
        return self.lookup(keys)

    def __repr__(self) -> str:
        return f"<sf.lookup.StaticVocabularyTable '{self._name}': {self._num_oov_buckets} oov bucket(s)>"


class MutableHashTable(_Table):
    """``experimental.MutableHashTable(key_dtype, value_dtype, default_value, name=...)``: insert,
    remove, lookup, export, size; a non-scalar ``default_value`` makes values of its shape."""

    def __init__(self, key_dtype, value_dtype, default_value, name="MutableHashTable", checkpoint=True,
                 experimental_is_anonymous=False):
        value_dtype = dtypes.as_dtype(value_dtype)
        with _init_scope():
            default = convert_to_tensor(default_value, dtype=value_dtype)
        if default.shape.rank:
            self._op, self._kind = "MutableHashTableOfTensorsV2", "MutableHashTableOfTensors"
        super().__init__(key_dtype, value_dtype, name or "MutableHashTable", default.shape)
        self._default_value = default

    _op = "MutableHashTableV2"
    _kind = "MutableHashTable"

    @property
    def default_value(self):
        return self._default_value

    @_on_home
    def lookup(self, keys, dynamic_default_values=None, name=None):
        keys = _keys_of(keys, self._key_dtype, converted=True)
        default = self._default_value if dynamic_default_values is None else dynamic_default_values
        return call("LookupTableFindV2", self._handle, keys, convert_to_tensor(default, dtype=self._value_dtype),
                    name=name)

    @_on_home
    def insert(self, keys, values, name=None):
        keys = _keys_of(keys, self._key_dtype, converted=True)
        values = _keys_of(values, self._value_dtype, "values", converted=True)
        return call("LookupTableInsertV2", self._handle, keys, values, name=name)

    @_on_home
    def remove(self, keys, name=None):
        keys = _keys_of(keys, self._key_dtype)
        return call("LookupTableRemoveV2", self._handle, keys, name=name)

    @_on_home
    def export(self, name=None):
        return call("LookupTableExportV2", self._handle, Tkeys=self._key_dtype, Tvalues=self._value_dtype, name=name)


experimental = types.SimpleNamespace(MutableHashTable=MutableHashTable)


# --- saving -----------------------------------------------------------------------------------------


def initialized_tables(graph: GraphDef, where: str) -> GraphDef:
    """``graph`` (a traced function's) with each sf.lookup table it uses made its own: the table
    node named by a plain shared name (container ""), filled by an InitializeTableV2 of the
    table's current content, every reader of the handle rerouted through an Identity that runs
    after it (a no-op once the table is filled), so the saved graph creates and initializes its table wherever it is loaded."""
    tables = {}
    for node in graph.nodes:
        if node.op in ("HashTableV2", "MutableHashTableV2", "MutableHashTableOfTensorsV2") and \
                node.attrs.get("container") == lookup_ops.SHARED_CONTAINER:
            uid = node.attrs["shared_name"]
            table = _TABLES.get(uid)
            if table is None:
                raise ExportError(f"{where} uses lookup table '{uid}', which was deleted")
            if not isinstance(table, StaticHashTable):
                raise ExportError(f"{where} uses {type(table).__name__} '{table.name}': sf.save writes static "
                                  "tables (StaticHashTable, StaticVocabularyTable) only")
            tables[node.name] = table
    if not tables:
        return graph
    nodes, ready_of = [], {}
    for node in graph.nodes:
        table = tables.get(node.name)
        if table is None:
            continue
        keys, values = (t.numpy() for t in table.export())
        new = node.copy()
        new.attrs = dict(node.attrs, container="", shared_name=f"{table._uid}_{_digest(keys, values)}")
        k = NodeDef(f"{node.name}/keys", "Const", [], "", {"dtype": table.key_dtype, "value": keys})
        v = NodeDef(f"{node.name}/values", "Const", [], "", {"dtype": table.value_dtype, "value": values})
        init = NodeDef(f"{node.name}/init", "InitializeTableV2", [node.name, k.name, v.name], "",
                       {"Tkey": table.key_dtype, "Tval": table.value_dtype})
        ready = NodeDef(f"{node.name}/initialized", "Identity", [node.name, f"^{init.name}"], "",
                        {"T": dtypes.resource})
        nodes += [new, k, v, init, ready]
        ready_of[node.name] = ready.name
    for node in graph.nodes:  # every reader of a table reads it through its "initialized" Identity
        if node.name in tables:
            continue
        if any(parse_input(i).node in ready_of for i in node.data_inputs):
            node = node.copy()
            node.inputs = [_reroute(i, ready_of) for i in node.inputs]
        nodes.append(node)
    return GraphDef(nodes)


def _digest(keys: np.ndarray, values: np.ndarray) -> str:
    """The content's hash, in the saved table's shared name: two SavedModels loaded into one
    TensorFlow process share a table only when it holds the same entries (uids repeat across
    processes; TF would keep the first one's content)."""
    h = hashlib.sha256()
    for a in (keys, values):
        h.update(repr(a.dtype).encode())
        h.update(repr(a.reshape(-1).tolist()).encode())  # repr: bytes and numbers unambiguous
        h.update(b"\1")
    return h.hexdigest()[:16]


def _reroute(name: str, ready_of: dict) -> str:
    if name.startswith("^"):
        return name
    ref = parse_input(name)
    return ready_of.get(ref.node, ref.node) + (f":{ref.index}" if ref.index else "")
