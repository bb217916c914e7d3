"""sf.lookup (api/lookup.py) against TensorFlow's tf.lookup: the calls of ``lookup_results`` run
with either library; TensorFlow's results are stored in data/tf_lookup.npz (written by
scripts/make_lookup_fixture.py), so these tests need no TensorFlow."""

import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

import specflow as sf
from specflow.errors import ExportError, SpecflowError

DATA = Path(__file__).parent / "data" / "tf_lookup.npz"

WORDS = ["a", "b", "c", "d", "hello", "world", "", "élan", "zz", "a longer key with spaces"]
INTS = [10, 11, 12, -5, 0, 123456789012, 30, -9223372036854775808]


def _files(tmp: str) -> dict:
    paths = {"vocab": os.path.join(tmp, "vocab.txt"), "cols": os.path.join(tmp, "cols.txt"),
             "csv": os.path.join(tmp, "cols.csv")}
    with open(paths["vocab"], "w", encoding="utf-8") as f:
        f.write("apple\nbanana\ncherry\nélan\n")
    with open(paths["cols"], "w") as f:
        f.write("a\t7\nb\t8\nc\t9\n")
    with open(paths["csv"], "w") as f:
        f.write("3,x,0.5\n4,y,1.5\n")
    return paths


def _error(fn) -> str:
    try:
        fn()
    except (TypeError, ValueError) as e:
        return type(e).__name__
    return "none"


def lookup_results(lib, tmp: str, in_function: bool = False) -> dict[str, np.ndarray]:
    """Every checked value of ``lib.lookup`` (tf or sf) by name; ``in_function``: the lookups run
    inside ``lib.function``."""
    lk, c, out = lib.lookup, lib.constant, {}
    paths = _files(tmp)

    def run(f, *args):
        return lib.function(f)(*args) if in_function else f(*args)

    def put(name, t):
        out[name] = np.asarray(t.numpy() if hasattr(t, "numpy") else t)

    kv = lk.KeyValueTensorInitializer(["a", "b", "c"], c([10, 20, 30], lib.int64))
    table = lk.StaticHashTable(kv, -1)
    put("static_str", run(lambda k: table.lookup(k), c([["a", "x"], ["c", "b"]])))
    put("static_str_item", run(lambda k: table[k], c(["b", "q"])))
    put("static_str_size", run(lambda: table.size()))
    out["static_str_dtypes"] = np.array([table.key_dtype.name, table.value_dtype.name, table.default_value.dtype.name])
    keys, values = table.export()
    order = np.argsort(keys.numpy())
    put("static_str_export", np.stack([keys.numpy()[order], values.numpy()[order].astype(str).astype(object)]))

    kvf = lk.KeyValueTensorInitializer(c([1, 2, 3], lib.int64), c([0.5, 1.5, 2.5], lib.float32))
    ftable = lk.StaticHashTable(kvf, 0.25)
    put("static_int_float", run(lambda k: ftable.lookup(k), c([3, 4, 1], lib.int64)))
    i32 = lk.KeyValueTensorInitializer([1, 2], [3, 4])
    out["static_i32_dtypes"] = np.array([i32.key_dtype.name, i32.value_dtype.name])

    vocab = lk.StaticVocabularyTable(lk.KeyValueTensorInitializer(["a", "b", "c"], c([0, 1, 2], lib.int64)), 5)
    put("vocab_str", run(lambda k: vocab.lookup(k), c(WORDS)))
    put("vocab_str_size", run(lambda: vocab.size()))
    ivocab = lk.StaticVocabularyTable(lk.KeyValueTensorInitializer(c([10, 20, 30], lib.int64),
                                                                   c([0, 1, 2], lib.int64)), 7)
    put("vocab_int", run(lambda k: ivocab.lookup(k), c(INTS, lib.int64)))
    i32vocab = lk.StaticVocabularyTable(lk.KeyValueTensorInitializer(c([10, 20, 30], lib.int64),
                                                                     c([0, 1, 2], lib.int64)), 3,
                                        lookup_key_dtype=lib.int32)
    put("vocab_int32", run(lambda k: i32vocab.lookup(k), c([10, 11, 30, -7], lib.int32)))
    sparse = lib.SparseTensor([[0, 0], [1, 2], [1, 3]], c(["c", "zz", "a"]), [2, 4])
    put("vocab_sparse_values", run(lambda: vocab.lookup(sparse).values))
    put("vocab_sparse_indices", vocab.lookup(sparse).indices)
    put("static_sparse_values", run(lambda: table.lookup(sparse).values))
    bare = lk.StaticVocabularyTable(None, 11)
    put("vocab_none", run(lambda k: bare.lookup(k), c(WORDS)))
    put("vocab_none_size", run(lambda: bare.size()))

    ti = lk.TextFileIndex
    text = lk.StaticHashTable(lk.TextFileInitializer(paths["vocab"], lib.string, ti.WHOLE_LINE, lib.int64,
                                                     ti.LINE_NUMBER), -1)
    put("text_whole_line", run(lambda k: text.lookup(k), c(["banana", "apple", "élan", "kiwi"])))
    rev = lk.StaticHashTable(lk.TextFileInitializer(paths["vocab"], lib.int64, ti.LINE_NUMBER, lib.string,
                                                    ti.WHOLE_LINE, value_index_offset=0), "?")
    put("text_line_number", run(lambda k: rev.lookup(k), c([0, 3, 9], lib.int64)))
    cols = lk.StaticHashTable(lk.TextFileInitializer(paths["cols"], lib.string, 0, lib.int64, 1), 0)
    put("text_columns", run(lambda k: cols.lookup(k), c(["c", "a", "z"])))
    csv = lk.StaticHashTable(lk.TextFileInitializer(paths["csv"], lib.int64, 0, lib.float32, 2, delimiter=","), -1.0)
    put("text_csv", run(lambda k: csv.lookup(k), c([4, 3, 5], lib.int64)))
    short = lk.StaticHashTable(lk.TextFileInitializer(paths["vocab"], lib.string, ti.WHOLE_LINE, lib.int64,
                                                      ti.LINE_NUMBER, vocab_size=2, value_index_offset=100), -1)
    put("text_vocab_size_offset", run(lambda k: short.lookup(k), c(["apple", "banana", "cherry"])))
    put("text_vocab_size_offset_size", run(lambda: short.size()))
    tvocab = lk.StaticVocabularyTable(lk.TextFileInitializer(paths["vocab"], lib.string, ti.WHOLE_LINE, lib.int64,
                                                             ti.LINE_NUMBER), 3)
    put("text_vocab_oov", run(lambda k: tvocab.lookup(k), c(["cherry", "kiwi", "mango", "apple"])))

    m = lk.experimental.MutableHashTable(lib.string, lib.int64, -1)

    def edit(k, v, gone):
        m.insert(k, v)
        m.remove(gone)
        return m.lookup(c(["x", "y", "z", "w"]))

    m.insert(c(["x", "y"]), c([5, 6], lib.int64))
    put("mutable_lookup", run(edit, c(["z", "x"]), c([9, 50], lib.int64), c(["y", "nope"])))
    put("mutable_size", m.size())
    keys, values = m.export()
    order = np.argsort(keys.numpy())
    put("mutable_export_keys", keys.numpy()[order])
    put("mutable_export_values", values.numpy()[order])
    mv = lk.experimental.MutableHashTable(lib.int64, lib.float32, c([-1.0, -2.0]))
    mv.insert(c([1, 2], lib.int64), c([[1.0, 2.0], [3.0, 4.0]]))
    put("mutable_vectors", run(lambda k: mv.lookup(k), c([2, 7], lib.int64)))
    put("mutable_dynamic_default", mv.lookup(c([1, 5], lib.int64), dynamic_default_values=c([[0.5, 0.5], [9.0, 9.0]])))

    out["errors"] = np.array([
        _error(lambda: table.lookup(c([1, 2]))),
        _error(lambda: vocab.lookup(c([1, 2], lib.int64))),
        _error(lambda: ivocab.lookup(c([1, 2], lib.int32))),
        _error(lambda: lk.StaticVocabularyTable(i32, 3)),
        _error(lambda: lk.StaticVocabularyTable(lk.KeyValueTensorInitializer(["a"], c([1.0])), 3)),
        _error(lambda: lk.StaticVocabularyTable(kv, 0)),
        _error(lambda: lk.TextFileInitializer(paths["vocab"], lib.string, ti.LINE_NUMBER, lib.int64, 0)),
        _error(lambda: lk.TextFileInitializer(paths["vocab"], lib.string, ti.WHOLE_LINE, lib.float32, ti.WHOLE_LINE)),
        _error(lambda: lk.TextFileInitializer(paths["vocab"], lib.string, -3, lib.int64, 0)),
        _error(lambda: lk.TextFileInitializer("", lib.string, 0, lib.int64, 1)),
        _error(lambda: lk.StaticHashTable(lk.KeyValueTensorInitializer(["a"], [1]), c([1, 2]))),
        _error(lambda: m.insert(c([1]), c([1], lib.int64))),
        _error(lambda: m.lookup(c([1]))),
        _error(lambda: m.remove(c([1]))),
    ])
    return out


def _results(in_function: bool) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        return lookup_results(sf, tmp, in_function)


@pytest.fixture(scope="module")
def expected() -> dict:
    return dict(np.load(DATA, allow_pickle=True))  # committed; rewritten by scripts/make_lookup_fixture.py


@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "sf.function"])
def test_lookup_matches_tensorflow(expected, in_function):
    got = _results(in_function)
    assert sorted(got) == sorted(expected)
    for name, want in expected.items():
        have = got[name]
        assert have.shape == want.shape, name
        if want.dtype == object or want.dtype.kind in "US":
            assert [_text(x) for x in have.reshape(-1)] == [_text(x) for x in want.reshape(-1)], name
        else:
            assert have.dtype == want.dtype, name
            np.testing.assert_array_equal(have, want, err_msg=name)


def _text(x):
    return x.decode("utf-8") if isinstance(x, bytes) else str(x)


# --- tables in functions, and saved ------------------------------------------------------------------


def _vocab_module():
    class Words(sf.Module):
        def __init__(self):
            super().__init__()
            init = sf.lookup.KeyValueTensorInitializer(["a", "b", "c"], sf.constant([0, 1, 2], sf.int64))
            self.vocab = sf.lookup.StaticVocabularyTable(init, 5)
            self.weights = sf.Variable(np.arange(8, dtype=np.float32) * 0.5)

        @sf.function(input_signature=[sf.TensorSpec([None], sf.string)])
        def __call__(self, words):
            ids = self.vocab.lookup(words)
            return {"ids": ids, "w": sf.gather(self.weights, ids)}

    return Words()


def test_a_function_reads_the_table_the_eager_object_filled():
    table = sf.lookup.experimental.MutableHashTable(sf.string, sf.int64, -1)
    read = sf.function(lambda k: table.lookup(k))
    keys = sf.constant(["x", "y"])
    np.testing.assert_array_equal(read(keys).numpy(), [-1, -1])
    table.insert(keys, sf.constant([3, 4], sf.int64))  # eagerly, after the trace: the function sees it
    np.testing.assert_array_equal(read(keys).numpy(), [3, 4])
    sf.function(lambda: table.remove(sf.constant(["x"])))()
    np.testing.assert_array_equal(table.lookup(keys).numpy(), [-1, 4])


def test_a_closed_over_tensor_used_in_both_branches_of_a_cond():
    two = sf.constant(2.0)
    table = sf.lookup.StaticHashTable(sf.lookup.KeyValueTensorInitializer(["a"], sf.constant([5.0])), -1.0)

    @sf.function
    def f(x, flag):
        if flag:
            return x + two + table.lookup(sf.constant("a"))
        return x * two + table.lookup(sf.constant("b"))

    assert float(f(sf.constant(1.0), sf.constant(True))) == 8.0
    assert float(f(sf.constant(1.0), sf.constant(False))) == 1.0


def test_a_table_read_in_a_while_loop():
    table = sf.lookup.StaticHashTable(
        sf.lookup.KeyValueTensorInitializer(sf.constant([0, 1, 2], sf.int64), sf.constant([10, 20, 30], sf.int64)), 0)

    @sf.function
    def total(n):
        i, acc = sf.constant(0, sf.int64), sf.constant(0, sf.int64)
        while i < n:
            acc += table.lookup(i)
            i += 1
        return acc

    assert int(total(sf.constant(5, sf.int64))) == 60


def test_a_table_made_inside_a_function_is_made_and_filled_once():
    made = []

    @sf.function
    def f(k):
        if not made:  # TF's pattern: the table made on the first trace, in init_scope
            init = sf.lookup.KeyValueTensorInitializer(sf.constant(["a", "b"]), sf.constant([1, 2]) * 10)
            made.append(sf.lookup.StaticHashTable(init, -1))
        return made[0].lookup(k)

    np.testing.assert_array_equal(f(sf.constant(["b", "q"])).numpy(), [20, -1])
    np.testing.assert_array_equal(f(sf.constant(["a"])).numpy(), [10])
    assert len(made) == 1

    @sf.function
    def g(k):
        return sf.lookup.StaticHashTable(sf.lookup.KeyValueTensorInitializer(k, [1, 2]), -1).lookup(k)

    with pytest.raises(SpecflowError, match="keys 'k:0' depend on the function's inputs"):
        g(sf.constant(["a", "b"]))


def test_a_table_is_read_on_its_own_device_under_another_device_scope(expected):
    vocab = sf.lookup.StaticVocabularyTable(
        sf.lookup.KeyValueTensorInitializer(["a", "b", "c"], sf.constant([0, 1, 2], sf.int64)), 5)
    with sf.device("/cpu:1"):  # the table lives on CPU:0, as TF's lookups run where the table is
        words = sf.constant(WORDS)
        np.testing.assert_array_equal(vocab.lookup(words).numpy(), expected["vocab_str"])
        np.testing.assert_array_equal(sf.function(lambda w: vocab[w])(words).numpy(), expected["vocab_str"])


def test_a_concrete_function_keeps_its_tables():
    held = [sf.lookup.StaticHashTable(sf.lookup.KeyValueTensorInitializer(["x"], [1]), -1)]
    cf = sf.function(lambda k: held[0].lookup(k)).get_concrete_function(sf.TensorSpec([None], sf.string))
    held.clear()  # the function captured the table: it lives on, as TF's captured resources
    np.testing.assert_array_equal(cf(sf.constant(["x", "y"])).numpy(), [1, -1])


def test_save_and_load_a_module_whose_function_uses_a_table(tmp_path, expected):
    module = _vocab_module()
    words = sf.constant(WORDS)
    want = module(words)
    np.testing.assert_array_equal(want["ids"].numpy(), expected["vocab_str"])  # TF's oov buckets
    sf.save(module, str(tmp_path / "m"))
    del module  # the saved graph fills its own table
    got = sf.load(str(tmp_path / "m")).signatures["serving_default"](words=words)
    np.testing.assert_array_equal(got["ids"].numpy(), expected["vocab_str"])
    np.testing.assert_array_equal(got["w"].numpy(), expected["vocab_str"] * 0.5)


def test_a_saved_table_is_named_by_its_content():
    # uids repeat across processes: two SavedModels in one TF process must not share a table
    # unless they hold the same entries
    def saved_name(keys, values):
        table = sf.lookup.StaticHashTable(sf.lookup.KeyValueTensorInitializer(keys, values), -1)
        cf = sf.function(lambda k: table.lookup(k)).get_concrete_function(sf.TensorSpec([None], sf.string))
        graph = sf.lookup.initialized_tables(cf.graph_def, "test")
        return next(n.attrs["shared_name"].rsplit("_", 1)[1] for n in graph.nodes if n.op == "HashTableV2")

    assert saved_name(["a", "b"], [1, 2]) == saved_name(["a", "b"], [1, 2])
    assert saved_name(["a", "b"], [1, 2]) != saved_name(["a", "b"], [1, 3])
    assert saved_name(["a", "b"], [1, 2]) != saved_name(["a", "c"], [1, 2])


def test_saving_a_mutable_table_is_an_error(tmp_path):
    table = sf.lookup.experimental.MutableHashTable(sf.int64, sf.int64, -1)

    class M(sf.Module):
        @sf.function(input_signature=[sf.TensorSpec([None], sf.int64)])
        def __call__(self, k):
            return table.lookup(k)

    with pytest.raises(ExportError, match="MutableHashTable 'MutableHashTable': sf.save writes static tables"):
        sf.save(M(), str(tmp_path / "m"))


def test_tensorflow_loads_a_saved_table(tmp_path, expected):
    tf = pytest.importorskip("tensorflow")
    sf.save(_vocab_module(), str(tmp_path / "m"))
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    got = loaded.signatures["serving_default"](words=tf.constant(WORDS))
    np.testing.assert_array_equal(got["ids"].numpy(), expected["vocab_str"])
    np.testing.assert_array_equal(loaded(tf.constant(WORDS))["w"].numpy(), expected["vocab_str"] * 0.5)


def test_a_table_made_while_tracing_lives_as_long_as_the_function():
    """A table made inside a traced function and kept by no Python variable: the concrete
    function keeps it, as TF's captures do (its second call found the table deleted)."""
    import gc

    @sf.function
    def f(k):
        table = sf.lookup.StaticHashTable(sf.lookup.KeyValueTensorInitializer(["a", "b"], sf.constant([1, 2])), -1)
        return table.lookup(k)

    np.testing.assert_array_equal(f(sf.constant(["b", "z"])).numpy(), [2, -1])
    gc.collect()
    np.testing.assert_array_equal(f(sf.constant(["a", "b"])).numpy(), [1, 2])
