"""sf.data (api/data.py, data_sources.py, data_ops.py): TensorFlow's tf.data.Dataset run eagerly.
Elements, structure, dtypes, element_spec and cardinality against hand-computed expectations (the
values TensorFlow 2 gives for the same pipelines), the errors, and a linear model trained by a
``for xb, yb in ds.shuffle(...).batch(...)`` loop around an sf.function step."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import specflow as sf
from specflow.errors import GraphError, ShapeError

D = sf.data.Dataset
NT = collections.namedtuple("NT", "x y")


def spec(shape, dtype):
    return sf.TensorSpec(shape, dtype)


def values(ds):
    return list(ds.as_numpy_iterator())


def ints(ds):
    return [int(x) for x in ds]


def card(ds):
    c = ds.cardinality()
    assert isinstance(c, sf.Tensor) and c.dtype.name == "int64"
    return int(c)


# --- sources and dtypes ------------------------------------------------------------------------------


def test_from_tensor_slices_structure_and_dtypes():
    x = np.arange(6, dtype=np.float64).reshape(3, 2)
    ds = D.from_tensor_slices((x, [1, 2, 3]))
    assert ds.element_spec == (spec([2], "float64"), spec([], "int32"))
    assert card(ds) == 3 and len(ds) == 3
    elems = list(ds)
    assert len(elems) == 3 and all(type(e) is tuple and len(e) == 2 for e in elems)
    xb, yb = elems[1]
    assert isinstance(xb, sf.Tensor) and xb.dtype.name == "float64" and isinstance(yb, sf.Tensor)
    np.testing.assert_array_equal(xb.numpy(), [2.0, 3.0])
    assert yb.dtype.name == "int32" and int(yb) == 2


def test_python_values_take_tensorflows_dtypes():
    assert D.from_tensor_slices([1.0, 2.5]).element_spec == spec([], "float32")
    assert D.from_tensor_slices([True, False]).element_spec == spec([], "bool")
    assert D.from_tensor_slices([1, 2**40]).element_spec == spec([], "int64")
    # a list is one tensor (numpy arrays in it keep their dtype); a tuple is a structure
    assert D.from_tensor_slices([np.array([1, 2]), np.array([3, 4])]).element_spec == spec([2], "int64")
    assert D.from_tensor_slices([[1, 2], [3, 4]]).element_spec == spec([2], "int32")
    assert D.from_tensors(([1, 2], 3.0)).element_spec == (spec([2], "int32"), spec([], "float32"))
    assert D.from_tensor_slices(np.zeros((2, 3), np.uint8)).element_spec == spec([3], "uint8")


def test_strings_dicts_namedtuples_nested():
    ds = D.from_tensor_slices({"b": [1, 2], "a": ["x", "yz"]})
    assert ds.element_spec == {"b": spec([], "int32"), "a": spec([], "string")}
    e = next(iter(ds))
    assert type(e) is dict and list(e) == ["b", "a"] and e["a"].dtype.name == "string"
    assert values(ds) == [{"b": 1, "a": b"x"}, {"b": 2, "a": b"yz"}]
    assert isinstance(values(ds)[0]["a"], bytes) and isinstance(values(ds)[0]["b"], np.int32)
    nt = values(D.from_tensor_slices(NT([1, 2], [3.0, 4.0])))
    assert nt == [NT(1, 3.0), NT(2, 4.0)] and type(nt[0]) is NT
    nested = D.from_tensor_slices(((np.zeros((2, 2)), [1, 2]), {"k": ["a", "b"]}))
    assert nested.element_spec == ((spec([2], "float64"), spec([], "int32")), {"k": spec([], "string")})


def test_source_copies_its_input():
    arr = np.arange(3.0)
    ds = D.from_tensor_slices(arr)
    arr[0] = 99.0
    assert values(ds) == [0.0, 1.0, 2.0]


def test_range_zip_enumerate():
    assert values(D.range(5)) == [0, 1, 2, 3, 4] and D.range(5).element_spec == spec([], "int64")
    assert values(D.range(2, 10, 3)) == [2, 5, 8] and card(D.range(2, 10, 3)) == 3
    assert values(D.range(5, 0, -2)) == [5, 3, 1] and card(D.range(0)) == 0
    z = D.zip((D.range(3), D.from_tensor_slices(["a", "b", "c", "d"])))
    assert values(z) == [(0, b"a"), (1, b"b"), (2, b"c")] and card(z) == 3
    assert values(D.zip(D.range(2), D.range(5))) == [(0, 0), (1, 1)]
    zd = D.zip({"a": D.range(3), "b": D.range(5).repeat()})
    assert card(zd) == 3 and values(zd)[2] == {"a": 2, "b": 2}
    assert card(D.zip((D.range(3).repeat(), D.range(2).repeat()))) == -1
    assert card(D.zip((D.range(3).filter(lambda x: True), D.range(5)))) == -2
    with pytest.raises(TypeError, match="tuple"):
        D.zip([D.range(2), D.range(3)])
    en = D.from_tensor_slices([1.0, 2.0]).enumerate(5)
    assert values(en) == [(5, 1.0), (6, 2.0)] and en.element_spec == (spec([], "int64"), spec([], "float32"))


# --- map and filter ----------------------------------------------------------------------------------


def test_map_unpacks_tuples_passes_dicts_and_traces_its_spec():
    ds = D.from_tensor_slices(([1, 2], [3, 4])).map(lambda a, b: a + b)
    assert values(ds) == [4, 6] and ds.element_spec == spec([], "int32")
    assert values(D.from_tensor_slices({"a": [1, 2]}).map(lambda d: d["a"] * 2)) == [2, 4]
    as_tuple = D.range(3).map(lambda x: [x, x + 1])  # a list result is a tuple
    assert values(as_tuple)[2] == (2, 3) and as_tuple.element_spec == (spec([], "int64"),) * 2
    assert D.range(2).map(lambda x: (x, [x, x])).element_spec == (spec([], "int64"), spec([2], "int64"))
    assert D.range(3).map(lambda x: 1.5).element_spec == spec([], "float32")
    assert D.range(5).batch(2).map(lambda x: x * 2).element_spec == spec([None], "int64")
    sliced = D.from_tensor_slices(np.zeros((4, 3))).map(lambda r: r[:2])
    assert sliced.element_spec == spec([2], "float64")


def test_map_that_only_runs_eagerly_gives_dtypes_and_ranks():
    ds = D.from_tensor_slices(np.arange(6.0).reshape(3, 2)).map(lambda r: sf.constant(r.numpy()[::-1].copy()))
    assert ds.element_spec == spec([None], "float64")
    np.testing.assert_array_equal(values(ds)[0], [1.0, 0.0])


def test_map_bad_results_are_one_line_errors():
    with pytest.raises(TypeError, match="Dataset.map.*cannot make a tensor of object"):
        list(D.range(3).map(lambda x: object()))
    with pytest.raises(TypeError, match="returned None"):
        list(D.range(3).map(lambda x: None))


def test_filter_and_take_while():
    ds = D.range(10).filter(lambda x: sf.equal(x % 3, 0))
    assert values(ds) == [0, 3, 6, 9] and card(ds) == -2 and ds.element_spec == spec([], "int64")
    with pytest.raises(TypeError, match="unknown"):
        len(ds)
    x, y = np.arange(8.0).reshape(4, 2), np.array([0, 1, 1, 0])
    kept = values(D.from_tensor_slices((x, y)).filter(lambda a, b: b > 0))
    assert [k[0].tolist() for k in kept] == [[2.0, 3.0], [4.0, 5.0]]
    with pytest.raises(ValueError, match="bool scalar"):
        list(D.range(3).filter(lambda v: v))
    assert values(D.range(5).take_while(lambda v: v < 3)) == [0, 1, 2]


# --- batching ------------------------------------------------------------------------------------------


def test_batch():
    ds = D.range(7).batch(3)
    assert [v.tolist() for v in values(ds)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert ds.element_spec == spec([None], "int64") and card(ds) == 3
    dropped = D.range(7).batch(3, drop_remainder=True)
    assert len(values(dropped)) == 2 and dropped.element_spec == spec([3], "int64") and card(dropped) == 2
    x, y = np.arange(12.0).reshape(6, 2), np.arange(6)
    xb, yb = next(iter(D.from_tensor_slices((x, y)).batch(4)))
    np.testing.assert_array_equal(xb.numpy(), x[:4])
    np.testing.assert_array_equal(yb.numpy(), y[:4])
    strs = values(D.from_tensor_slices({"s": ["a", "b", "c"]}).batch(2))
    assert strs[0]["s"].dtype == object and strs[0]["s"].tolist() == [b"a", b"b"]
    assert card(D.range(7).repeat().batch(3)) == -1 and card(D.range(7).filter(lambda v: True).batch(3)) == -2
    with pytest.raises(ValueError, match="greater than zero"):
        D.range(3).batch(0)


def test_batch_of_ragged_elements_names_padded_batch():
    ds = D.range(1, 4).map(lambda x: sf.range(sf.cast(x, "int32"))).batch(3)
    with pytest.raises(ShapeError, match="padded_batch") as e:
        list(ds)
    assert "[2]" in str(e.value) and "[1]" in str(e.value)


def test_padded_batch():
    ragged = D.range(1, 5).map(lambda x: sf.range(sf.cast(x, "int32")))
    ds = ragged.padded_batch(2)
    assert ds.element_spec == spec([None, None], "int32") and card(ds) == 2
    got = values(ds)
    np.testing.assert_array_equal(got[0], [[0, 0], [0, 1]])
    np.testing.assert_array_equal(got[1], [[0, 1, 2, 0], [0, 1, 2, 3]])
    fixed = ragged.padded_batch(3, padded_shapes=[5], padding_values=-1)
    assert fixed.element_spec == spec([None, 5], "int32")
    np.testing.assert_array_equal(values(fixed)[1], [[0, 1, 2, 3, -1]])
    pairs = D.range(1, 4).map(lambda x: (sf.range(x, dtype="int64"), x)).padded_batch(
        2, padding_values=(sf.constant(7, "int64"), sf.constant(0, "int64")))
    first = values(pairs)[0]
    np.testing.assert_array_equal(first[0], [[0, 7], [0, 1]])
    np.testing.assert_array_equal(first[1], [1, 2])
    strs = values(D.from_tensor_slices([["a"], ["b"]]).padded_batch(2, padded_shapes=[3]))[0]
    assert strs.tolist() == [[b"a", b"", b""], [b"b", b"", b""]]
    assert D.range(5).padded_batch(2, drop_remainder=True).element_spec == spec([2], "int64")


def test_padded_batch_errors():
    with pytest.raises(TypeError, match="int32.*int64"):
        D.range(3).map(lambda x: sf.range(x, dtype="int64")).padded_batch(2, padding_values=-1)
    with pytest.raises(ValueError, match="not compatible"):
        D.from_tensor_slices([[1.0, 2.0]]).padded_batch(2, padded_shapes=(1,))
    with pytest.raises(ShapeError, match="larger than its padded shape"):
        list(D.range(1, 4).map(lambda x: sf.range(x, dtype="int64")).padded_batch(3, padded_shapes=[2]))


def test_unbatch():
    ds = D.range(7).batch(3).unbatch()
    assert values(ds) == list(range(7)) and card(ds) == -2 and ds.element_spec == spec([], "int64")
    assert card(D.range(7).batch(3, drop_remainder=True).unbatch()) == 6
    rows = D.from_tensors(np.arange(6.0).reshape(3, 2)).unbatch()
    assert rows.element_spec == spec([2], "float64") and card(rows) == 3 and values(rows)[2].tolist() == [4.0, 5.0]
    with pytest.raises(ValueError, match="rank >= 1"):
        D.range(3).unbatch()


# --- order: repeat, take, skip, shard, concatenate, shuffle --------------------------------------------


def test_repeat_take_skip_cardinalities():
    assert values(D.range(3).repeat(2)) == [0, 1, 2, 0, 1, 2] and card(D.range(3).repeat(2)) == 6
    assert card(D.range(3).repeat(0)) == 0 and values(D.range(3).repeat(0)) == []
    forever = D.range(2).repeat()
    assert card(forever) == -1 and values(forever.take(5)) == [0, 1, 0, 1, 0] and card(forever.take(5)) == 5
    with pytest.raises(TypeError, match="infinite"):
        len(forever)
    assert values(D.range(0).repeat()) == [] and card(D.range(0).repeat()) == 0
    assert values(D.range(5).take(3)) == [0, 1, 2] and card(D.range(5).take(10)) == 5
    assert card(D.range(5).take(-1)) == 5
    assert values(D.range(5).skip(3)) == [3, 4] and card(D.range(5).skip(-1)) == 0 and values(D.range(5).skip(-1)) == []
    assert card(D.range(5).repeat().skip(3)) == -1 and card(D.range(5).filter(lambda v: True).skip(3)) == -2


def test_shard_concatenate_cache_prefetch():
    assert values(D.range(10).shard(3, 1)) == [1, 4, 7] and card(D.range(10).shard(3, 1)) == 3
    assert values(D.range(10).shard(3, 0)) == [0, 3, 6, 9] and card(D.range(10).shard(3, 0)) == 4
    with pytest.raises(ValueError, match="index 3"):
        D.range(10).shard(3, 3)
    cat = D.range(3).concatenate(D.range(10, 12))
    assert values(cat) == [0, 1, 2, 10, 11] and card(cat) == 5
    assert D.from_tensors([1, 2]).concatenate(D.from_tensors([1, 2, 3])).element_spec == spec([None], "int32")
    with pytest.raises(TypeError, match="incompatible"):
        D.range(3).concatenate(D.from_tensor_slices([1.0, 2.0]))
    calls = []
    cached = D.range(3).map(lambda x: (calls.append(1), x * 3)[1]).cache()
    next(iter(cached))  # an unfinished pass caches nothing
    assert values(cached) == [0, 3, 6] and values(cached) == [0, 3, 6] and len(calls) == 4
    with pytest.raises(ValueError, match="memory only"):
        D.range(3).cache("/tmp/never_written")
    assert values(D.range(3).prefetch(sf.data.AUTOTUNE)) == [0, 1, 2]


def test_shuffle_is_a_seeded_buffer_shuffle():
    ds = D.range(20).shuffle(5, seed=3)
    first, second = values(ds), values(ds)
    assert sorted(first) == list(range(20)) and sorted(second) == list(range(20))
    assert first != second  # reshuffled each iteration
    assert values(D.range(20).shuffle(5, seed=3)) == first  # the seed repeats the orders
    assert values(D.range(20).shuffle(5, seed=4)) != first
    fixed = D.range(20).shuffle(5, seed=3, reshuffle_each_iteration=False)
    assert values(fixed) == values(fixed)
    # TF's buffer: output i is one of the first i + buffer_size inputs
    for order in (first, second):
        assert all(v < i + 5 for i, v in enumerate(order))
    assert values(D.range(6).shuffle(1, seed=0)) == list(range(6))
    epochs = values(D.range(6).shuffle(6, seed=1).repeat(2))
    assert sorted(epochs[:6]) == sorted(epochs[6:]) == list(range(6)) and epochs[:6] != epochs[6:]
    assert card(D.range(6).shuffle(3)) == 6


def test_original_dataset_iterates_again():
    base = D.from_tensor_slices(np.arange(5))
    batched = base.batch(2)
    assert len(values(batched)) == 3
    assert values(base) == [0, 1, 2, 3, 4] and values(base) == [0, 1, 2, 3, 4]


# --- nested datasets, reduce, single elements ---------------------------------------------------------


def test_flat_map_interleave_window():
    assert values(D.range(1, 4).flat_map(lambda x: D.range(x))) == [0, 0, 1, 0, 1, 2]
    inter = D.range(1, 6).interleave(lambda x: D.from_tensors(x).repeat(x), cycle_length=2, block_length=2)
    assert values(inter) == [1, 2, 2, 3, 3, 3, 4, 4, 5, 5, 4, 4, 5, 5, 5]
    windows = D.range(7).window(3, shift=2).flat_map(lambda w: w.batch(3))
    assert [w.tolist() for w in values(windows)] == [[0, 1, 2], [2, 3, 4], [4, 5, 6], [6]]
    assert card(D.range(7).window(3, shift=2)) == 4 and card(D.range(7).window(3, shift=2, drop_remainder=True)) == 3
    strided = D.range(10).window(3, shift=1, stride=2, drop_remainder=True).flat_map(lambda w: w.batch(3))
    assert [w.tolist() for w in values(strided)][:2] == [[0, 2, 4], [1, 3, 5]] and len(values(strided)) == 6
    pairs = D.from_tensor_slices(([1, 2, 3], [4, 5, 6])).window(2).flat_map(
        lambda a, b: D.zip((a.batch(2), b.batch(2))))
    assert [(a.tolist(), b.tolist()) for a, b in values(pairs)] == [([1, 2], [4, 5]), ([3], [6])]


def test_choose_and_sample_from_datasets():
    choice = D.from_tensor_slices(np.array([0, 1, 1, 0, 0, 0, 1], np.int64))
    assert values(D.choose_from_datasets([D.range(3), D.range(10, 13)], choice)) == [0, 10, 11, 1, 2]
    assert values(D.choose_from_datasets([D.range(3), D.range(10, 13)], choice, stop_on_empty_dataset=False)) == \
        [0, 10, 11, 1, 2, 12]
    sampled = D.sample_from_datasets([D.range(3), D.range(10, 13)], seed=1)
    got = values(sampled)
    assert sorted(got) == [0, 1, 2, 10, 11, 12] and got == values(sampled)
    assert [v for v in got if v < 10] == [0, 1, 2]  # each input keeps its order


def test_reduce_and_get_single_element():
    total = D.range(5).reduce(np.int64(0), lambda s, x: s + x)
    assert isinstance(total, sf.Tensor) and int(total) == 10
    s, f = D.from_tensor_slices(([1, 2], [3.0, 4.0])).reduce((0, 0.0), lambda st, e: (st[0] + e[0], st[1] + e[1]))
    assert int(s) == 3 and float(f) == 7.0 and f.dtype.name == "float32"
    with pytest.raises(TypeError, match="initial state"):
        D.range(3).reduce(np.int64(0), lambda st, x: sf.cast(st, "float32"))
    one = D.from_tensors((1, 2.0)).get_single_element()
    assert type(one) is tuple and int(one[0]) == 1
    with pytest.raises(GraphError, match="more than one"):
        D.range(3).get_single_element()
    with pytest.raises(GraphError, match="empty"):
        D.range(0).get_single_element()


def test_from_generator_checks_what_it_yields():
    sig = (sf.TensorSpec([], "int64"), sf.TensorSpec([None], "float32"))
    ds = D.from_generator(lambda: iter([(1, [1.0, 2.0]), (2, [3.0])]), output_signature=sig)
    assert ds.element_spec == sig and card(ds) == -2
    got = values(ds)
    assert got[1][0] == 2 and isinstance(got[1][0], np.int64) and got[1][1].dtype == np.float32
    assert values(D.from_generator(lambda n: iter(range(n)), args=(3,),
                                   output_signature=sf.TensorSpec([], "int64"))) == [0, 1, 2]
    assert values(D.from_generator(lambda: iter(["a"]), output_signature=sf.TensorSpec([], "string"))) == [b"a"]
    with pytest.raises(TypeError, match="element 1 .*where output_signature has int32"):
        list(D.from_generator(lambda: iter([1, 2.5]), output_signature=sf.TensorSpec([], "int32")))
    with pytest.raises(TypeError, match=r"element 1 has shape \[3\]"):
        list(D.from_generator(lambda: iter([[1, 2], [1, 2, 3]]), output_signature=sf.TensorSpec([2], "int32")))
    with pytest.raises(TypeError, match="element 0.*structure"):
        list(D.from_generator(lambda: iter([(1,)]), output_signature=sig))
    with pytest.raises(TypeError, match="callable"):
        D.from_generator(iter([1]), output_signature=sf.TensorSpec([], "int32"))


# --- errors and the eager boundary ----------------------------------------------------------------------


def test_input_errors_are_one_line():
    with pytest.raises(ValueError, match=r"first dimensions differ \(\[3, 2\]\)"):
        D.from_tensor_slices(([1, 2, 3], [1, 2]))
    with pytest.raises(ValueError, match="scalar"):
        D.from_tensor_slices(1)
    with pytest.raises(ValueError, match="non-rectangular"):
        D.from_tensor_slices([[1, 2], [3]])
    with pytest.raises(TypeError, match="cannot make a tensor of object"):
        D.from_tensors(object())


def test_iterating_inside_sf_function_is_an_error():
    @sf.function
    def f(x):
        for e in D.range(3):
            x = x + e
        return x

    with pytest.raises(GraphError, match="eagerly"):
        f(sf.constant(1, "int64"))


def test_exports():
    assert sf.data.AUTOTUNE == -1 and sf.data.INFINITE_CARDINALITY == -1 and sf.data.UNKNOWN_CARDINALITY == -2
    assert int(sf.data.experimental.cardinality(D.range(4))) == 4
    assert "BatchDataset" in repr(D.range(3).batch(2)) and bool(D.range(0).repeat())


# --- end to end -------------------------------------------------------------------------------------------


def test_linear_model_trained_from_a_dataset():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 3)).astype(np.float32)
    y = (x @ np.array([[1.5], [-2.0], [0.5]], np.float32) + 0.3).astype(np.float32)
    w, b = sf.Variable(np.zeros((3, 1), np.float32)), sf.Variable(np.zeros((1,), np.float32))
    opt = sf.optimizers.SGD(0.1)

    @sf.function
    def train_step(xb, yb):
        with sf.GradientTape() as tape:
            loss = sf.reduce_mean(sf.square(sf.matmul(xb, w) + b - yb))
        grads = tape.gradient(loss, [w, b])
        opt.apply_gradients(zip(grads, [w, b]))
        return loss

    ds = D.from_tensor_slices((x, y)).shuffle(200, seed=1).batch(32)
    epoch_losses = []
    for _ in range(5):
        losses = [float(train_step(xb, yb)) for xb, yb in ds]
        assert len(losses) == 7  # 200 / 32, the last batch smaller
        epoch_losses.append(np.mean(losses))
    assert all(a > b for a, b in zip(epoch_losses, epoch_losses[1:]))
    assert epoch_losses[-1] < 0.01 * epoch_losses[0]
    np.testing.assert_allclose(w.numpy().ravel(), [1.5, -2.0, 0.5], atol=0.05)
