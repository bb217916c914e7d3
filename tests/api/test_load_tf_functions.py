"""sf.load of a TF2 SavedModel's saved tf.functions that no signature serves (``m.scaled(x, s)``,
``m.sub.f(x)``), against what ``tf.saved_model.load``'s restored functions return.

The first tests read data/tf_functions (written by data/make_tf_functions.py with TensorFlow's
outputs beside it) and run without TensorFlow; the rest build SavedModels with TensorFlow and
skip where it is not installed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import specflow as sf

DATA = Path(__file__).parent / "data"


def close(got, want) -> None:
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6)


# --- the committed fixture (no TensorFlow needed) -----------------------------------------------------


def test_restored_functions_of_a_tensorflow_savedmodel_return_tensorflows_outputs():
    rec = np.load(DATA / "tf_functions_expected.npz")
    m = sf.load(DATA / "tf_functions")
    x, v2, v12 = rec["x"], rec["v2"], rec["v12"]
    assert sorted(m.functions) == ["__call__", "bump", "double", "mode", "scaled", "sub.square"]
    close(m(x).numpy(), rec["call"])
    out = m.scaled(x, 2.0)  # a Python float for a float32 scalar
    assert isinstance(out, dict) and set(out) == {"y", "n"} and isinstance(out["y"], sf.Tensor)
    close(out["y"], rec["scaled_y"])
    close(out["n"], rec["scaled_n"])
    close(m.scaled(s=np.float32(2.0), x=x)["y"], rec["scaled_y"])
    # two concrete functions: each call picks the one its shape fits
    close(m.double(v2), rec["double_v2"])
    close(m.double(v12), rec["double_v12"])
    close(m.double(v12.tolist()), rec["double_v12"])  # a Python list, converted as TF converts it
    # a sub-object holding only a function
    assert "square" in vars(m.sub) and len(m.sub.variables) == 0
    close(m.sub.square(v2), rec["square"])
    # a Python bool traced as a constant: its default, or the value given
    for training in (False, True):
        args = {"training": True} if training else {}
        first, second = m.mode(v2, **args)
        assert isinstance(second, list) and len(second) == 1
        close(first, rec[f"mode_{training}_0"])
        close(second[0], rec[f"mode_{training}_1"])
    # a function assigning a variable: the module's own, as its signature and m.counter see it
    assert m.bump() is None and m.bump() is None
    close(m.counter.numpy(), rec["counter"])
    close(m(x), rec["call_after_bump"])
    close(m.signatures["serving_default"](x=x)["output_0"], rec["call_after_bump"])


def test_a_call_no_concrete_function_takes_is_a_one_line_error():
    m = sf.load(DATA / "tf_functions")
    want = (r"^function 'double' has no concrete function for \(x: float32\[3\]\); it was saved for: "
            r"double\(x: float32\[2\]\); double\(x: float32\[1, 2\]\)$")
    with pytest.raises(sf.SpecflowError, match=want) as e:
        m.double(np.ones(3, np.float32))
    assert "\n" not in e.value.format()
    with pytest.raises(sf.SpecflowError, match=r"no concrete function for \(x: float64\[2\]\)"):
        m.double(np.ones(2))  # dtypes must be equal: float64 does not feed float32
    with pytest.raises(sf.SpecflowError, match=r"for \(x: float32\[2\], training='yes'\); it was saved for: "
                                               r"mode\(x: float32\[2\], training=False\); mode\(x: float32\[2\], training=True\)"):
        m.mode(np.ones(2, np.float32), training="yes")  # a Python value must equal the traced one
    with pytest.raises(sf.SpecflowError, match=r"'scaled' takes 2 positional argument\(s\) \(x, s\), got 3"):
        m.scaled(np.ones((1, 3), np.float32), 1.0, 2.0)
    with pytest.raises(sf.SpecflowError, match=r"'scaled' has no argument 'z' \(arguments: x, s\)"):
        m.scaled(np.ones((1, 3), np.float32), 1.0, z=1)
    with pytest.raises(sf.SpecflowError, match=r"'scaled' needs argument 's'"):
        m.scaled(np.ones((1, 3), np.float32))
    with pytest.raises(sf.SpecflowError, match=r"no concrete function for \(x: float32\[1, 3\], s=\(2\.5\+0j\)\)"):
        m.scaled(np.ones((1, 3), np.float32), 2.5 + 0j)  # a complex does not convert to float32


def test_restored_functions_are_built_once_and_listed():
    m = sf.load(DATA / "tf_functions")
    assert repr(m.functions["double"]) == "<restored function 'double(x)': 2 concrete function(s)>"
    assert m.double is m.functions["double"] and m.sub.square is m.functions["sub.square"]
    v = np.ones(2, np.float32)
    m.double(v)
    size = len(m._session.graph_def.nodes)
    m.double(v)
    m.double(v + 1)
    assert len(m._session.graph_def.nodes) == size


def test_a_loaded_model_saved_after_a_restored_call_keeps_what_it_assigned(tmp_path):
    m = sf.load(DATA / "tf_functions")
    m.bump()
    sf.save(m, tmp_path / "again")
    again = sf.load(tmp_path / "again")
    assert sorted(v.numpy().tolist() for v in again.variables if v.shape.rank == 0) == [1.0]
    x = np.ones((1, 3), np.float32)
    close(again.signatures["serving_default"](x=x)["output_0"], m(x))


def test_restored_functions_are_differentiable_under_a_gradient_tape():
    """As TensorFlow's restored functions are: gradients reach the model's variables and the
    inputs (against the analytic ones), eagerly and inside sf.function; a function run under a
    recording tape for its assignment still assigns."""
    rec = np.load(DATA / "tf_functions_expected.npz")
    m = sf.load(DATA / "tf_functions")
    x, v2 = rec["x"], rec["v2"]
    xt = sf.constant(x)
    with sf.GradientTape() as tape:
        tape.watch(xt)
        y = m.scaled(xt, 2.0)["y"]  # 2 x @ w
        loss = sf.reduce_sum(y * y)
        assert m.bump() is None
    gw, gb, gx = tape.gradient(loss, [m.w, m.b, xt])
    close(y, rec["scaled_y"])
    close(gw, 4.0 * x.T @ y.numpy())  # d/dw sum((2 x w)^2) = 2 x^T (2 y)
    assert gb is None  # scaled does not read b
    close(gx, 4.0 * y.numpy() @ m.w.numpy().T)
    close(m.counter.numpy(), 1.0)
    with sf.GradientTape() as tape:  # a Python value traced as a constant; a list returned
        first, (second,) = m.mode(v2)
        loss = sf.reduce_sum(first) + 3.0 * sf.reduce_sum(second) + sf.reduce_sum(m.double(v2))
    close(tape.gradient(loss, m.b), [4.0, 4.0])  # mode returns b (3 b summed), double adds b

    @sf.function
    def step(x):
        with sf.GradientTape() as tape:
            loss = sf.reduce_sum(m.scaled(x, 2.0)["y"] ** 2)
        return tape.gradient(loss, m.w)

    close(step(xt), gw)


# --- SavedModels made by TensorFlow here -------------------------------------------------------------


@pytest.fixture
def tf():
    return pytest.importorskip("tensorflow")


def same(got, want) -> None:
    """``got`` (specflow's) has ``want``'s (TensorFlow's) structure and values."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want)
        for k in want:
            same(got[k], want[k])
    elif isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w)
    elif want is None:
        assert got is None
    else:
        assert isinstance(got, sf.Tensor) and got.dtype.name == want.dtype.name
        if want.dtype.name == "string":
            assert np.asarray(got.numpy()).tolist() == np.asarray(want.numpy()).tolist()
        else:
            close(got.numpy(), want.numpy())


def _model(tf):
    class Sub(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def f(self, x):
            return x * x + 1.0

    class Layer(tf.Module):
        def __init__(self):
            super().__init__()
            self.k = tf.Variable([[1.0, 2.0], [3.0, 4.0]])

        @tf.function
        def apply(self, x):
            return tf.matmul(x, self.k)

    class M(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2))
            self.b = tf.Variable([1.0, -1.0])
            self.counter = tf.Variable(0, dtype=tf.int64)
            self.sub = Sub()
            self.layer = Layer()

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
        def __call__(self, x):
            return tf.matmul(x, self.w) + self.b

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([], tf.float32)])
        def scaled(self, x, s):
            return {"y": s * tf.matmul(x, self.w), "n": tf.reduce_sum(x)}

        @tf.function
        def double(self, x):
            return 2.0 * x + self.b

        @tf.function
        def nested(self, x):
            return (x + 1.0, {"a": x * 2.0, "b": [x, self.b]}), tf.shape(x)

        @tf.function
        def power(self, x, n):  # n: a Python int, traced as a constant
            return x**n

        @tf.function(input_signature=[])
        def bump(self):
            return self.counter.assign_add(1)

        @tf.function(input_signature=[tf.TensorSpec([], tf.int64)])
        def count(self, extra):
            return self.counter + extra

        @tf.function(input_signature=[tf.TensorSpec([], tf.string)])
        def greet(self, name):
            return tf.strings.join(["hi ", name])

    m = M()
    m.double(tf.constant([1.0, 2.0]))
    m.double(tf.constant([[1.0, 2.0]]))
    m.layer.apply(tf.ones([1, 2]))
    m.nested(tf.constant([1.0, 2.0]))
    m.power(tf.constant([1.0, 2.0]), 2)
    m.power(tf.constant([1.0, 2.0]), 3)
    return m


def test_restored_functions_match_tensorflows(tf, tmp_path):
    m = _model(tf)
    tf.saved_model.save(m, str(tmp_path / "m"), signatures={"serving_default": m.__call__})
    t = tf.saved_model.load(str(tmp_path / "m"))
    s = sf.load(tmp_path / "m")
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    v = np.array([0.5, -2.0], np.float32)
    same(s(x), t(x))
    same(s.scaled(x, 2.0), t.scaled(x, 2.0))
    same(s.scaled(x, s=3), t.scaled(x, s=3))
    same(s.double(v), t.double(tf.constant(v)))
    same(s.double(v[None]), t.double(tf.constant(v[None])))
    same(s.nested(v), t.nested(tf.constant(v)))
    same(s.power(v, 2), t.power(tf.constant(v), 2))
    same(s.power(v, n=3), t.power(tf.constant(v), n=3))
    same(s.sub.f(v), t.sub.f(tf.constant(v)))
    same(s.layer.apply(np.ones((1, 2), np.float32)), t.layer.apply(tf.ones([1, 2])))
    same(s.greet("you"), t.greet("you"))
    assert len(s.sub.variables) == 0 and s.layer.k is s.layer.variables[0]
    with pytest.raises(sf.SpecflowError, match=r"function 'power' has no concrete function for "
                                               r"\(x: float32\[2\], n=4\); it was saved for: power\(x: float32\[2\], n=2\); "
                                               r"power\(x: float32\[2\], n=3\)"):
        s.power(v, 4)


def test_a_restored_function_assigns_the_modules_own_variables(tf, tmp_path):
    m = _model(tf)
    tf.saved_model.save(m, str(tmp_path / "m"))
    t = tf.saved_model.load(str(tmp_path / "m"))
    s = sf.load(tmp_path / "m")
    for _ in range(3):
        same(s.bump(), t.bump())
    assert s.counter.numpy() == t.counter.numpy() == 3
    s.counter.assign(10)  # and an assignment from outside reaches the function
    assert s.count(np.int64(1)).numpy() == 11
    assert s.count(2).numpy() == 12  # a Python int for an int64 scalar
    s.layer.k.assign(np.eye(2, dtype=np.float32))
    close(s.layer.apply(np.array([[3.0, 4.0]], np.float32)), [[3.0, 4.0]])


def test_a_module_saved_without_signatures_is_callable_through_its_restored_call(tf, tmp_path):
    class Plain(tf.Module):
        def __init__(self):
            super().__init__()
            self.v = tf.Variable([2.0, 3.0])

        @tf.function
        def __call__(self, x, square=False):
            return x * x * self.v if square else x * self.v

    p = Plain()
    p(tf.constant([1.0, 1.0]))
    p(tf.constant([1.0, 1.0]), square=True)
    tf.saved_model.save(p, str(tmp_path / "p"))
    t = tf.saved_model.load(str(tmp_path / "p"))
    s = sf.load(tmp_path / "p")
    assert not s.signatures
    v = np.array([2.0, -1.0], np.float32)
    same(s(v), t(tf.constant(v)))
    same(s(v, square=True), t(tf.constant(v), square=True))
    same(s(v, True), t(tf.constant(v), True))


def test_restored_function_gradients_match_tensorflows(tf, tmp_path):
    """Gradients of restored functions (one with a while loop, one with a cond on a tensor) and
    of what they return, against tf.GradientTape over tf.saved_model.load's."""

    class M(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2))
            self.b = tf.Variable([0.5, -0.5])

        @tf.function
        def __call__(self, x, training=False):
            y = tf.tanh(tf.matmul(x, self.w) + self.b)
            return y * 2.0 if training else y

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([], tf.int32)])
        def repeat(self, x, n):
            h = tf.matmul(x, self.w)
            for _ in tf.range(n):  # a While in the saved function
                h = tf.sin(h) + self.b
            return h

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
        def gate(self, x):
            h = tf.matmul(x, self.w)
            return tf.cond(tf.reduce_sum(h) > 0, lambda: h * self.b, lambda: h - self.b)

    m = M()
    m(tf.ones([2, 3]))
    m(tf.ones([2, 3]), training=True)
    tf.saved_model.save(m, str(tmp_path / "m"))
    t = tf.saved_model.load(str(tmp_path / "m"))
    s = sf.load(tmp_path / "m")
    x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    calls = [
        (lambda f, x: f(x), {}),
        (lambda f, x: f(x, training=True), {}),
        (lambda f, x: f.repeat(x, 3), {}),
        (lambda f, x: f.gate(x), {}),
        (lambda f, x: f.gate(-x), {}),
    ]
    for call, _ in calls:
        xt = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(xt)
            loss = tf.reduce_sum(call(t, xt) ** 2)
        want = tape.gradient(loss, [t.w, t.b, xt])
        xs = sf.constant(x)
        with sf.GradientTape() as tape:
            tape.watch(xs)
            loss = sf.reduce_sum(call(s, xs) ** 2)
        got = tape.gradient(loss, [s.w, s.b, xs])
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6)


def test_a_lambdas_function_loads_and_differentiates(tf, tmp_path):
    """tf.function(lambda ...) is saved as __inference_<lambda>_N: its call graph's scope is
    made a node name."""
    m = tf.Module()
    m.v = tf.Variable(2.0)
    m.f = tf.function(lambda x: x * m.v, input_signature=[tf.TensorSpec([None], tf.float32)])
    tf.saved_model.save(m, str(tmp_path / "sm"))
    back = sf.load(tmp_path / "sm")
    x = np.float32([1, 2])
    with sf.GradientTape() as tape:
        y = sf.reduce_sum(back.f(x))
    np.testing.assert_array_equal(back.f(x).numpy(), [2, 4])
    assert tape.gradient(y, back.trainable_variables)[0].numpy() == 3.0
