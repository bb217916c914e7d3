"""TensorFlow 2 core API gaps: tape controls, Variable scatter, name scopes,
TensorShape/dtypes, sf.nest, sf.config devices, sf.random.set_seed, sf.summary."""

import collections
import glob

import numpy as np
import pytest

import specflow as sf
from specflow.errors import GraphError

# --- GradientTape ---------------------------------------------------------------------------------


def test_stop_recording_eager_and_traced():
    a, b = sf.Variable(3.0), sf.Variable(2.0)
    with sf.GradientTape() as t:
        with t.stop_recording():
            z = a * a  # a constant to the tape
        y = z * b + a
    ga, gb = t.gradient(y, [a, b])
    assert float(ga) == 1.0 and float(gb) == 9.0

    @sf.function
    def f():
        with sf.GradientTape() as t:
            with t.stop_recording():
                z = a * a
            y = z * b + a
        return t.gradient(y, [a, b])

    ga, gb = f()
    assert float(ga) == 1.0 and float(gb) == 9.0
    with pytest.raises(ValueError):
        with sf.GradientTape() as t:
            pass
        with t.stop_recording():
            pass


def test_reset_and_watched_variables():
    a, b, c = sf.Variable(1.0, name="a"), sf.Variable(2.0, name="b"), sf.Variable(3.0, name="c")
    with sf.GradientTape() as t:
        c * b + a  # read c, b, a: TensorFlow lists them in creation order
    assert [v.name for v in t.watched_variables()] == ["a", "b", "c"]
    with sf.GradientTape() as t:
        t.watch(a)
        c * a
        t.reset()
        y2 = b * b
    assert [v.name for v in t.watched_variables()] == ["b"]
    ga, gb, gc = t.gradient(y2, [a, b, c])
    assert ga is None and gc is None and float(gb) == 4.0

    @sf.function
    def f():
        with sf.GradientTape() as t:
            y = c * b
            t.reset()  # y is now a constant to the tape
            y2 = y * b
        return t.gradient(y2, [b, c])

    gb, gc = f()
    assert float(gb) == 6.0 and gc is None


def test_batch_jacobian_matches_per_example_jacobians():
    xv = np.arange(6, dtype=np.float32).reshape(2, 3) / 3
    wv = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    x = sf.constant(xv)
    with sf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = sf.sin(sf.matmul(x, wv))[:, :, None] * sf.reshape(x, [2, 1, 3])
    bj = t.batch_jacobian(y, x).numpy()
    j = t.jacobian(y, x).numpy()  # [2, 2, 3, 2, 3]
    assert bj.shape == (2, 2, 3, 3)
    np.testing.assert_allclose(bj, np.stack([j[i, :, :, i] for i in range(2)]), rtol=1e-6)
    # hand-computed: y[i,k,m] = sin(x_i.w_k) x[i,m]
    i, k, m, s = 1, 0, 2, 1
    expect = np.cos(xv[i] @ wv[:, k]) * wv[s, k] * xv[i, m] + np.sin(xv[i] @ wv[:, k]) * (m == s)
    np.testing.assert_allclose(bj[i, k, m, s], expect, rtol=1e-5)


# --- Variable -------------------------------------------------------------------------------------


def test_variable_scatter_nd_and_initial_value():
    v = sf.Variable(np.zeros((3, 2), np.float32))
    v.scatter_nd_update([[0], [2]], [[1.0, 2.0], [3.0, 4.0]])
    v.scatter_nd_add([[1, 1]], [5.0])
    v.scatter_nd_sub([[0, 0]], [1.0])
    np.testing.assert_array_equal(v.numpy(), [[0, 2], [0, 5], [3, 4]])

    @sf.function
    def f():
        v.scatter_nd_add([[2, 0]], [10.0])
        return v + 1.0

    np.testing.assert_array_equal(f().numpy(), [[1, 3], [1, 6], [14, 5]])
    np.testing.assert_array_equal(v.numpy(), [[0, 2], [0, 5], [13, 4]])
    with pytest.raises(RuntimeError, match="initial_value is not supported for eager variables"):
        v.initial_value  # noqa: B018 (as TensorFlow 2 raises)


# --- names, shapes, dtypes ------------------------------------------------------------------------


def test_name_scope_names_trace_nodes_as_tensorflow():
    class Block(sf.Module):
        def __init__(self):
            super().__init__()
            self.w = sf.Variable(2.0)

        @sf.Module.with_name_scope
        def __call__(self, x):
            return sf.multiply(x, self.w, name="mul")

    block = Block()

    @sf.function
    def f(x):
        with sf.name_scope("a") as scope:
            assert scope == "a/"
            y = sf.add(x, 1.0, name="add")
            with sf.name_scope("b"):
                y = sf.multiply(y, 2.0, name="mul")
        with sf.name_scope("a"):  # taken: a_1, as in TensorFlow
            y = sf.subtract(y, 1.0, name="sub")
        with sf.name_scope("abs/"):
            y = sf.negative(y, name="neg")
        return block(y)

    cf = f.get_concrete_function(sf.TensorSpec([], sf.float32))
    names = [n.name for n in cf.graph_def.nodes if n.op in ("AddV2", "Mul", "Sub", "Neg")]
    assert names == ["a/add", "a/b/mul", "a_1/sub", "abs/neg", "block/mul"]  # TF gives the first four
    assert float(f(sf.constant(1.0))) == -6.0
    with sf.name_scope("outer") as s1, sf.name_scope("inner") as s2:
        assert (s1, s2) == ("outer/", "outer/inner/")


def test_tensor_shape_and_dtypes():
    s = sf.TensorShape([None, 2])
    assert s.as_list() == [None, 2] and s.rank == 2 and s[0] is None and s[1] == 2
    assert s.is_compatible_with([5, 2]) and not s.is_compatible_with([5, 3])
    assert sf.TensorShape(None).rank is None
    assert sf.constant([[1.0, 2.0]]).shape == sf.TensorShape([1, 2])
    assert sf.dtypes.float32 is sf.float32 and sf.dtypes.as_dtype("int64") is sf.int64
    assert sf.as_dtype(np.float64) is sf.float64 and isinstance(sf.float32, sf.DType)
    assert sf.dtypes.double is sf.float64 and sf.dtypes.DType is sf.DType


# --- nest -----------------------------------------------------------------------------------------

P = collections.namedtuple("P", "y x")


def test_nest_orderings_as_tensorflow():
    # The expected leaf orders are what tf.nest gives (checked against TensorFlow 2).
    s = {"b": 1, "a": [2, (3, 4)], "c": {"z": 5, "y": 6}}
    assert sf.nest.flatten(s) == [2, 3, 4, 1, 6, 5]
    assert sf.nest.flatten(P(y={"k": 7, "j": 8}, x=[9, None])) == [8, 7, 9, None]
    od = collections.OrderedDict([("z", 1), ("a", 2)])
    assert sf.nest.flatten([od, (P(1, 2),)]) == [2, 1, 1, 2]
    packed = sf.nest.pack_sequence_as([od, (P(0, 0),)], ["A", "Z", "y", "x"])
    assert list(packed[0].items()) == [("z", "Z"), ("a", "A")] and packed[1][0] == P("y", "x")
    assert sf.nest.pack_sequence_as(s, list(range(6))) == {"b": 3, "a": [0, (1, 2)], "c": {"z": 5, "y": 4}}
    assert sf.nest.flatten(np.ones(3)).__len__() == 1 and sf.nest.flatten(None) == [None]


def test_nest_map_structure_and_assert_same_structure():
    a = {"w": [1, 2], "b": P(3, 4)}
    b = {"w": [10, 20], "b": P(30, 40)}
    assert sf.nest.map_structure(lambda u, v: u + v, a, b) == {"w": [11, 22], "b": P(33, 44)}
    with pytest.raises(TypeError):
        sf.nest.assert_same_structure([1, 2], (1, 2))
    sf.nest.assert_same_structure([1, 2], (1, 2), check_types=False)
    with pytest.raises(ValueError):
        sf.nest.assert_same_structure({"a": 1}, {"b": 1})
    with pytest.raises(ValueError):
        sf.nest.assert_same_structure([1, [2]], [1, 2])
    with pytest.raises(ValueError):
        sf.nest.map_structure(lambda u, v: u, [1, 2], [1, 2, 3])
    assert sf.nest.is_nested(P(1, 2)) and sf.nest.is_nested({}) and not sf.nest.is_nested("ab")


# --- config devices -------------------------------------------------------------------------------


def test_list_devices():
    from specflow.api.context import _gpus_here

    phys = sf.config.list_physical_devices()
    assert phys[0].name == "/physical_device:CPU:0" and phys[0].device_type == "CPU"
    gpus = sf.config.list_physical_devices("GPU")
    assert [d.name for d in gpus] == [f"/physical_device:GPU:{i}" for i in range(_gpus_here())]
    assert len(phys) == 1 + len(gpus)
    logical = sf.config.list_logical_devices("CPU")
    assert [(d.name, d.device_type) for d in logical] == [("/job:localhost/replica:0/task:0/device:CPU:0", "CPU")]
    with sf.device(logical[0].name):
        assert float(sf.add(1.0, 2.0)) == 3.0


# --- random.set_seed ------------------------------------------------------------------------------


def test_set_seed_reproduces_and_resets():
    def draws():
        return [sf.random.normal([3]).numpy(), sf.random.normal([3]).numpy(), sf.random.uniform([2]).numpy()]

    try:
        sf.random.set_seed(7)
        first = draws()
        assert not np.array_equal(first[0], first[1])  # each op gets its own seed
        sf.random.set_seed(7)
        again = draws()
        for x, y in zip(first, again):
            np.testing.assert_array_equal(x, y)
        sf.random.set_seed(8)
        assert not np.array_equal(draws()[0], first[0])

        @sf.function
        def f():
            return sf.random.normal([3])

        sf.random.set_seed(7)
        traced = f().numpy()
        np.testing.assert_array_equal(traced, first[0])  # the same op seed, traced
        sf.keras.utils.set_random_seed(7)
        np.testing.assert_array_equal(sf.random.normal([3]).numpy(), first[0])
    finally:
        sf.random.set_seed(None)
    assert not np.array_equal(sf.random.normal([3]).numpy(), sf.random.normal([3]).numpy())


# --- summary --------------------------------------------------------------------------------------


def _events(logdir):
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    from tensorboard.util import tensor_util

    out = []
    for path in sorted(glob.glob(f"{logdir}/events.out.tfevents.*")):
        for e in EventFileLoader(path).Load():
            for v in e.summary.value:
                out.append((e.step, v.tag, v.metadata.plugin_data.plugin_name, tensor_util.make_ndarray(v.tensor)))
    return out


def test_summary_writes_event_files(tmp_path):
    writer = sf.summary.create_file_writer(str(tmp_path))
    assert sf.summary.scalar("ignored", 1.0, step=0) is False  # no default writer: nothing written
    with writer.as_default(step=3):
        with sf.name_scope("train"):
            assert sf.summary.scalar("loss", sf.constant(1.5))
        sf.summary.histogram("w", np.array([1.0, 2.0, 2.0, 7.0]))
        sf.summary.text("note", "hello")
    with writer.as_default():
        sf.summary.experimental.set_step(sf.Variable(5, dtype=sf.int64))
        sf.summary.scalar("acc", 0.25)
        sf.summary.scalar("acc", 0.5, step=6)
        assert int(sf.summary.experimental.get_step()) == 5
    sf.summary.experimental.set_step(None)
    with writer.as_default(), pytest.raises(ValueError):
        sf.summary.scalar("nostep", 1.0)
    writer.close()
    ev = _events(tmp_path)
    assert [(s, t, p) for s, t, p, _ in ev] == [(3, "train/loss", "scalars"), (3, "w", "histograms"),
                                                (3, "note", "text"), (5, "acc", "scalars"), (6, "acc", "scalars")]
    assert float(ev[0][3]) == 1.5 and float(ev[3][3]) == 0.25 and float(ev[4][3]) == 0.5
    hist = ev[1][3]  # rows (left, right, count)
    assert hist[:, 2].sum() == 4 and hist[0, 0] == 1.0 and hist[-1, 1] == 7.0
    assert ev[2][3].item() == b"hello"

    @sf.function
    def f():
        sf.summary.scalar("x", 1.0, step=1)
        return sf.constant(0)

    with writer.as_default(), pytest.raises(GraphError, match="eagerly only"):
        f()
