"""Lookup tables through a Session; the expected values and messages are TensorFlow 2.21's on the
same calls (tf.raw_ops). Also: Keras 3 preprocessing-layer SavedModels TensorFlow wrote, loaded and
run (their table initializers run by the loader's init op)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from specflow.errors import SpecflowError
from specflow.graph.builder import GraphBuilder
from specflow.ops import lookup_ops
from specflow.runtime.session import Session

DATA = os.path.join(os.path.dirname(__file__), "..", "export", "data", "tf_keras_text")


def S(*xs) -> np.ndarray:
    out = np.empty(len(xs), dtype=object)
    out[:] = [x.encode() for x in xs]
    return out


class Table:
    """One table with feedable keys/values/default and every op wired up."""

    def __init__(self, op: str, key: str, value: str, **attrs):
        b = GraphBuilder()
        t = b.add_op(op, attrs={"key_dtype": key, "value_dtype": value, **attrs}, name="table").name
        k = b.add_op("Placeholder", attrs={"dtype": key, "shape": None}, name="k").name
        v = b.add_op("Placeholder", attrs={"dtype": value, "shape": None}, name="v").name
        d = b.add_op("Placeholder", attrs={"dtype": value, "shape": None}, name="d").name
        f = b.add_op("Placeholder", attrs={"dtype": "string", "shape": []}, name="f").name
        if op == "HashTableV2":
            b.add_op("InitializeTableV2", [t, k, v], name="init")
            b.add_op("InitializeTableFromTextFileV2", [t, f], attrs={"key_index": -1, "value_index": -2},
                     name="init_file")
        b.add_op("LookupTableImportV2", [t, k, v], name="import")
        b.add_op("LookupTableInsertV2", [t, k, v], name="insert")
        b.add_op("LookupTableRemoveV2", [t, k], name="remove")
        b.add_op("LookupTableFindV2", [t, k, d], name="find")
        b.add_op("LookupTableSizeV2", [t], name="size")
        b.add_op("LookupTableExportV2", [t], attrs={"Tkeys": key, "Tvalues": value}, name="export")
        self.session = Session(b.graph_def)

    def do(self, target, keys=None, values=None):
        feeds = {"k": keys} if keys is not None else {}
        if values is not None:
            feeds["v"] = values
        self.session.run([], feeds, targets=[target])

    def find(self, keys, default):
        return self.session.run("find", {"k": keys, "d": default})

    def size(self):
        return int(self.session.run("size"))

    def export(self):
        k, v = self.session.run(["export", "export:1"])
        return k.tolist(), v.tolist()


def test_hash_table_is_initialized_once_and_finds_with_its_default():
    t = Table("HashTableV2", "string", "int64")
    with pytest.raises(SpecflowError, match=r"Table not initialized\."):
        t.find(S("a"), np.int64(-1))
    assert t.size() == 0
    t.do("init", S("a", "b", "a"), np.array([1, 2, 1]))
    t.do("init", S("a", "c"), np.array([1, 3]))  # ignored, as TF ignores it
    t.do("import", S("a", "c"), np.array([1, 3]))
    keys = np.array([[b"a", b"zz"], [b"b", b"c"]], dtype=object)
    np.testing.assert_array_equal(t.find(keys, np.int64(-1)), [[1, -1], [2, -1]])
    # A HashTable's full-size default: only its first element counts (TF's HashTable::DoFind).
    np.testing.assert_array_equal(t.find(keys, np.array([[-1, -2], [-3, -4]])), [[1, -1], [2, -1]])
    with pytest.raises(SpecflowError, match=r"Expected shape \[\] or \[2,2\] for default value, got \[1\]"):
        t.find(keys, np.array([-1]))
    assert t.size() == 2 and t.export() == ([b"a", b"b"], [1, 2])
    with pytest.raises(SpecflowError, match="Insert not supported by InitializableLookupTable implementations"):
        t.do("insert", S("q"), np.array([1]))
    with pytest.raises(SpecflowError, match="Remove not supported by InitializableLookupTable implementations"):
        t.do("remove", S("a"))


def test_hash_table_initialization_checks():
    t = Table("HashTableV2", "int64", "int64")
    with pytest.raises(SpecflowError, match="Keys and values must have the same size 2 vs 1"):
        t.do("init", np.array([1, 2]), np.array([1]))
    with pytest.raises(SpecflowError, match=r"Keys must be a vector, but received shape\[1,2\]"):
        t.do("init", np.array([[1, 2]]), np.array([[1, 2]]))
    with pytest.raises(SpecflowError, match="HashTable has different value for same key. Key 1 has 10 and trying to add value 20"):
        t.do("init", np.array([1, 1, 2]), np.array([10, 20, 30]))


def test_mutable_hash_table():
    t = Table("MutableHashTableV2", "int64", "float32")
    np.testing.assert_array_equal(t.find(np.array([1, 2]), np.float32(0.5)), [0.5, 0.5])
    t.do("insert", np.array([3, 1, 2]), np.array([1.0, 2.0, 3.0], np.float32))
    t.do("insert", np.array([1]), np.array([9.0], np.float32))
    t.do("insert", np.array([5, 5]), np.array([1.0, 2.0], np.float32))  # the later one wins
    np.testing.assert_array_equal(t.find(np.array([[1, 2], [5, 7]]), np.float32(0.5)), [[9.0, 3.0], [2.0, 0.5]])
    np.testing.assert_array_equal(t.find(np.array([1, 7]), np.array([0.5, 0.25], np.float32)), [9.0, 0.25])
    t.do("remove", np.array([1, 99]))
    assert t.size() == 3
    keys, values = t.export()
    assert dict(zip(keys, values)) == {5: 2.0, 2: 3.0, 3: 1.0}
    t.do("import", np.array([10, 11]), np.array([1.0, 2.0], np.float32))
    keys, values = t.export()
    assert dict(zip(keys, values)) == {10: 1.0, 11: 2.0}
    with pytest.raises(SpecflowError, match=r"Expected shape \[2\] for value, got \[1\]"):
        t.do("insert", np.array([1, 2]), np.array([9.0], np.float32))


def test_mutable_hash_table_of_tensors():
    t = Table("MutableHashTableOfTensorsV2", "string", "int64", value_shape=[2])
    t.do("insert", S("a", "b"), np.array([[1, 2], [3, 4]]))
    keys = np.array([[b"a"], [b"z"]], dtype=object)
    np.testing.assert_array_equal(t.find(keys, np.array([0, -1])), [[[1, 2]], [[0, -1]]])
    with pytest.raises(SpecflowError, match=r"Expected shape \[2\] or \[1,2\] for default value, got \[\]"):
        t.find(S("a"), np.int64(0))
    with pytest.raises(SpecflowError, match=r"Expected shape \[1,2\] for value, got \[3\]"):
        t.do("insert", S("a"), np.array([1, 2, 3]))
    assert t.size() == 2


def test_text_file_initializer_reads_only_registered_asset_directories(tmp_path):
    vocab = tmp_path / "assets" / "vocab.txt"
    vocab.parent.mkdir()
    vocab.write_text("x\ny\n")
    t = Table("HashTableV2", "int64", "string")
    feed = {"f": np.array(str(vocab).encode(), dtype=object)}
    with pytest.raises(SpecflowError, match="only from a loaded SavedModel's assets/ directory"):
        t.session.run([], feed, targets=["init_file"])
    lookup_ops.allow_asset_directory(str(vocab.parent))
    t.session.run([], feed, targets=["init_file"])
    np.testing.assert_array_equal(t.find(np.array([0, 1, 2]), np.array(b"?", dtype=object)), [b"x", b"y", b"?"])


@pytest.mark.parametrize("name", ["string_lookup", "text_vectorization"])
def test_keras_preprocessing_saved_models_load_and_match_tensorflow(name):
    import specflow as sf

    expected = np.load(os.path.join(DATA, "expected.npz"))
    module = sf.load(os.path.join(DATA, name))
    sig = module.signatures["serving_default"]
    got = sig(**{next(iter(sig.inputs)): expected[f"{name}_in"]})
    np.testing.assert_array_equal(np.asarray(next(iter(got.values()))), expected[f"{name}_out"])
