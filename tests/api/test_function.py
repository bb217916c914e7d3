"""sf.function: tracing, the trace cache and retracing rules, input_signature, reduce_retracing,
variables (by reference, first trace only, held weakly), automatic control dependencies,
sf.cond / sf.while_loop, run_functions_eagerly."""

from __future__ import annotations

import gc
import warnings
import weakref

import numpy as np
import pytest

import specflow as sf
from specflow.errors import GraphError


def f32(*shape):
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) / 7


def test_traces_once_per_signature():
    @sf.function
    def f(x, scale):
        return x * scale

    np.testing.assert_allclose(f(f32(2, 3), 2.0).numpy(), f32(2, 3) * 2)
    f(f32(2, 3) + 1, 2.0)  # same dtype, shape and Python value: the cached concrete function
    assert f.trace_count == 1
    f(f32(4, 3), 2.0)  # new shape
    assert f.trace_count == 2
    np.testing.assert_allclose(f(f32(2, 3), 3.0).numpy(), f32(2, 3) * 3)  # Python values key by value
    assert f.trace_count == 3
    f(f32(2, 3).astype(np.float64), 3.0)  # new dtype
    assert f.trace_count == 4


def test_retracing_warns():
    @sf.function
    def f(n):
        return sf.constant(1.0) * n

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(6):
            f(float(n))
    assert any(issubclass(w.category, sf.RetracingWarning) and "traced 5 times" in str(w.message) for w in caught)


def test_input_signature_fixes_one_trace():
    @sf.function(input_signature=[sf.TensorSpec([None, 3], "float32")])
    def f(x):
        return sf.ops.sum(x, axis=1)

    for n in (1, 2, 5):
        np.testing.assert_allclose(f(f32(n, 3)).numpy(), f32(n, 3).sum(1), rtol=1e-6)
    assert f.trace_count == 1
    with pytest.raises(GraphError, match="does not match its input_signature float32"):
        f(f32(2, 4))
    concrete = f.get_concrete_function(sf.TensorSpec([None, 3], "float32"))
    assert concrete.input_specs[0][1].as_list() == [None, 3]
    assert f.get_concrete_function() is concrete  # no arguments: the signature's (as TensorFlow)


def test_input_signature_binds_arguments_by_parameter_name():
    @sf.function(input_signature=[sf.TensorSpec([None], "float32"), sf.TensorSpec([None], "float32")])
    def sub(y, x):
        return y - x

    five, one = np.array([5.0], np.float32), np.array([1.0], np.float32)
    assert float(sub(five, one)[0]) == 4.0
    assert float(sub(five, x=one)[0]) == 4.0  # was -4: the keyword was matched to the wrong input
    assert float(sub(x=one, y=five)[0]) == 4.0
    assert sub.trace_count == 1
    with pytest.raises(GraphError, match="too many positional arguments"):
        sub(five, one, one)

    @sf.function
    def sub2(y, x):
        return y - x

    concrete = sub2.get_concrete_function(sf.TensorSpec([None], "float32"), sf.TensorSpec([None], "float32"))
    assert float(concrete(five, x=one)[0]) == 4.0 and float(concrete(y=five, x=one)[0]) == 4.0


def test_input_signature_converts_python_values_and_takes_nested_specs():
    @sf.function(input_signature=[sf.TensorSpec([None], "float32"), sf.TensorSpec([], "int32")])
    def scale(x, n):
        return x * sf.ops.cast(n, DstT="float32")

    np.testing.assert_array_equal(scale([1.0, 2.0], 3).numpy(), [3.0, 6.0])  # a list and an int
    np.testing.assert_array_equal(scale(np.ones(2, np.float32), np.int64(2)).numpy(), [2.0, 2.0])
    with pytest.raises(GraphError, match="non-integer value 2.5"):
        scale([1.0], 2.5)

    @sf.function(input_signature=[{"a": sf.TensorSpec([None], "float32"), "b": sf.TensorSpec([None], "float32")}])
    def product(d):
        return d["a"] * d["b"]

    np.testing.assert_array_equal(product({"a": [2.0], "b": np.array([3.0], np.float32)}).numpy(), [6.0])
    assert product.get_concrete_function().inputs == ["d_0:0", "d_1:0"]
    with pytest.raises(GraphError, match=r"must be a dict with keys \['a', 'b'\]"):
        product({"a": [2.0], "c": [3.0]})
    assert scale.trace_count == product.trace_count == 1


def test_numpy_scalars_are_tensors_not_python_values():
    @sf.function
    def f(x):
        return x * 2

    out = f(np.float32(1.5))
    assert isinstance(out, sf.Tensor) and out.dtype.name == "float32" and float(out) == 3.0
    assert float(f(np.float32(2.5))) == 5.0
    assert f.trace_count == 1  # one trace per dtype, as TensorFlow; a Python float traces per value
    f(np.float64(2.5))
    assert f.trace_count == 2
    assert float(f.get_concrete_function(np.float32(0))(np.float32(4.0))) == 8.0


def test_reduce_retracing_generalizes_shapes():
    @sf.function(reduce_retracing=True)
    def f(x):
        return x + 1

    f(f32(2, 3))
    f(f32(4, 3))  # traced again with the first dim unknown
    f(f32(7, 3))
    f(f32(1, 3))
    assert f.trace_count == 2
    shapes = [c.input_specs[0][1].as_list() for c in f.concrete_functions]
    assert [None, 3] in shapes


def test_variables_by_reference_and_control_dependencies():
    v = sf.Variable(1.0)

    @sf.function
    def step(x):
        v.assign(x)  # a read after an assign sees the assign
        before = v.read_value()
        v.assign_add(2.0)
        return before, v.read_value()

    before, after = step(sf.constant(5.0))
    assert float(before) == 5.0 and float(after) == 7.0
    assert float(v) == 7.0  # the function updated the Python object's value
    v.assign(10.0)  # and sees eager updates
    before, after = step(sf.constant(1.0))
    assert (float(before), float(after), float(v)) == (1.0, 3.0, 3.0)


def test_variables_only_on_first_trace():
    class Counter(sf.Module):
        def __init__(self):
            super().__init__()
            self.v = None

        @sf.function
        def __call__(self, x):
            if self.v is None:
                self.v = sf.Variable(0.0, name="count")
            self.v.assign_add(sf.ops.sum(x))
            return self.v.read_value()

    c = Counter()
    assert float(c(f32(2))) == pytest.approx(f32(2).sum())
    assert float(c(f32(2))) == pytest.approx(2 * f32(2).sum())
    assert [v.name for v in c.variables] == ["count"]

    @sf.function
    def bad(x):
        sf.Variable(1.0, name="made_every_time")
        return x

    bad(f32(2))
    with pytest.raises(GraphError, match="created variable 'made_every_time' on a later trace"):
        bad(f32(3))

    state = {"fail": True}

    @sf.function
    def flaky(x):
        state["v"] = sf.Variable(1.0)  # kept: a function holds its variables weakly
        if state["fail"]:
            raise GraphError("a bug in the function")
        return x * state["v"]

    with pytest.raises(GraphError, match="a bug"):
        flaky(f32(2))
    state["fail"] = False  # a first trace that failed does not use up the first trace
    np.testing.assert_allclose(flaky(f32(2)).numpy(), f32(2))


def test_variables_are_held_weakly_and_collected():
    box = {"v": sf.Variable(np.ones(3, np.float32), name="temp")}
    v = box["v"]
    ref = weakref.ref(v)

    @sf.function
    def f():
        return box["v"].read_value() * 2

    np.testing.assert_array_equal(f().numpy(), [2, 2, 2])
    mgrs = list(v._managers)
    uid = v._uid
    del v
    box.clear()
    gc.collect()
    assert ref() is None  # the function did not keep it alive
    assert all(m.get("sf", uid) is None for m in mgrs)  # nor did any resource manager
    with pytest.raises(GraphError, match="which was deleted"):
        f()


def test_nested_structures_and_python_values_out():
    @sf.function
    def f(inputs, k):
        return {"sum": inputs["a"] + inputs["b"], "k": k, "pair": (inputs["a"] * 2, None)}

    out = f({"a": f32(2), "b": f32(2)}, "tag")
    assert out["k"] == "tag" and out["pair"][1] is None
    np.testing.assert_allclose(out["sum"].numpy(), 2 * f32(2))


def test_cond_and_while_loop_in_functions_and_eagerly():
    def collatz_steps(n):
        def body(n, steps):
            n = sf.cond(sf.ops.equal(n % 2, 0), lambda: n // 2, lambda: 3 * n + 1)
            return n, steps + 1

        return sf.while_loop(lambda n, steps: n > 1, body, [n, 0])[1]

    traced = sf.function(collatz_steps)
    for n in (1, 6, 27):
        want = int(collatz_steps(sf.constant(n)))
        assert int(traced(sf.constant(n))) == want
    assert int(traced(sf.constant(27))) == 111
    assert traced.trace_count == 1


def test_effects_in_branches_and_loops_keep_program_order():
    v = sf.Variable(0.0)

    @sf.function
    def f(x):
        sf.cond(x > 0, lambda: v.assign_add(x) and None, lambda: v.assign_sub(1.0) and None)
        after_cond = v.read_value()

        def body(i):
            v.assign_add(1.0)
            return i + 1

        sf.while_loop(lambda i: i < 3, body, [0])
        return after_cond, v.read_value()

    a, b = f(sf.constant(2.0))
    assert (float(a), float(b)) == (2.0, 5.0)
    a, b = f(sf.constant(-2.0))
    assert (float(a), float(b)) == (4.0, 7.0)


def test_run_functions_eagerly():
    calls = []

    @sf.function
    def f(x):
        calls.append(1)
        return x * 2

    f(f32(2)), f(f32(2))
    assert len(calls) == 1
    sf.config.run_functions_eagerly(True)
    try:
        out = f(sf.constant(f32(2)))
        f(sf.constant(f32(2)))
        assert len(calls) == 3 and isinstance(out, sf.Tensor)
    finally:
        sf.config.run_functions_eagerly(False)


def test_function_calls_inline_into_the_calling_trace():
    @sf.function
    def inner(x):
        return x * 3

    @sf.function
    def outer(x):
        return inner(x) + 1

    np.testing.assert_allclose(outer(f32(2)).numpy(), f32(2) * 3 + 1)
    assert inner.trace_count == 0


def test_symbolic_tensors_refuse_python_bool():
    @sf.function(autograph=False)  # with AutoGraph (the default) the `if` is a cond: test_autograph.py
    def f(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(GraphError, match="write the branch with sf.cond"):
        f(sf.constant(1.0))


def test_device_scope_in_a_function_places_nodes():
    @sf.function
    def f(x):
        with sf.device("/cpu:1"):
            y = x * 2
        return y + 1

    np.testing.assert_allclose(f(f32(3)).numpy(), f32(3) * 2 + 1)
    concrete = f.get_concrete_function(f32(3))
    assert any(n.device == "/cpu:1" for n in concrete.graph_def.nodes)
    assert len(concrete.session.devices) == 2


def test_while_loop_maximum_iterations_caps_the_loop_as_tensorflow():
    def cond(i, s):
        return i < 100

    def body(i, s):
        return i + 1, s * 2.0

    i, s = sf.while_loop(cond, body, [0, 1.0], maximum_iterations=5)
    assert (int(i), float(s)) == (5, 32.0)
    capped = sf.function(lambda n: sf.while_loop(cond, body, [0, sf.constant(1.0)], maximum_iterations=n))
    assert [float(v) for v in capped(np.int32(5))] == [5.0, 32.0]
    assert [float(v) for v in capped(np.int32(0))] == [0.0, 1.0]
    early = sf.function(lambda: sf.while_loop(lambda i, s: i < 3, body, [0, sf.constant(1.0)], maximum_iterations=10))
    assert [float(v) for v in early()] == [3.0, 8.0]

    @sf.function
    def power(x):
        with sf.GradientTape() as tape:
            tape.watch(x)
            _, y = sf.while_loop(lambda i, y: i < 100, lambda i, y: (i + 1, y * x), [0, sf.constant(1.0)],
                                 maximum_iterations=3)
        return y, tape.gradient(y, x)

    y, g = power(sf.constant(1.5))
    assert (float(y), float(g)) == (3.375, 6.75)


def test_input_signature_converts_when_the_python_runs_eagerly():
    # Under a recording tape (or run_functions_eagerly) the Python runs, on the arguments the
    # signature makes of the values given: float64 numpy failed with "dtype mismatch in Mul"
    w = sf.Variable(np.float32(2.0))

    @sf.function(input_signature=[sf.TensorSpec([None], "float32")])
    def scaled(x):
        return x * w

    with sf.GradientTape() as tape:
        y = scaled(np.array([1.0, 2.0]))
    assert y.dtype.name == "float32"
    np.testing.assert_array_equal(y.numpy(), [2.0, 4.0])
    assert float(tape.gradient(y, w)) == 3.0
    sf.config.run_functions_eagerly(True)
    try:
        np.testing.assert_array_equal(scaled(x=[1.0, 3.0]).numpy(), [2.0, 6.0])
        with pytest.raises(GraphError, match="does not match its input_signature"):
            scaled(np.ones((2, 2)))
    finally:
        sf.config.run_functions_eagerly(False)


def test_a_variable_with_a_random_initializer_made_on_the_first_trace():
    """``sf.Variable(sf.random.normal(shape))`` inside the function (Keras's build-on-first-call):
    the initializer depends on no input, so it is computed once at trace time, as TensorFlow lifts
    it out of the function. Before: 'depends on the function's inputs'."""

    class Lazy(sf.Module):
        def __init__(self):
            super().__init__()
            self.w = None

        @sf.function
        def __call__(self, x):
            if self.w is None:
                self.w = sf.Variable(sf.random.normal([x.shape[-1], 2], stddev=0.1, seed=3))
            return sf.matmul(x, self.w)

    layer = Lazy()
    x = np.ones((1, 3), np.float32)
    first = layer(x).numpy()
    w = layer.w.numpy()
    assert w.shape == (3, 2) and 0 < np.abs(w).max() < 1
    np.testing.assert_allclose(first, x @ w, rtol=1e-6)
    np.testing.assert_array_equal(layer(x).numpy(), first)  # the same variable, not a new draw

    @sf.function
    def from_input(x):
        return sf.Variable(x * 2)

    with pytest.raises(GraphError, match="depends on the function's inputs"):
        from_input(x)


def test_function_takes_tensorflows_parameters():
    """``tf.function(fn, input_signature)`` positionally, and jit_compile / autograph /
    experimental_relax_shapes as TF code passes them (a TypeError before)."""
    g = sf.function(lambda x: x + 1, [sf.TensorSpec([None], sf.float32)])
    np.testing.assert_array_equal(g(np.ones(3, np.float32)).numpy(), [2, 2, 2])

    @sf.function(jit_compile=True, autograph=False, experimental_relax_shapes=True)
    def f(x):
        return x * 2

    for n in (1, 2, 3):
        f(np.ones(n, np.float32))
    assert len(f.concrete_functions) == 2  # relaxed to an unknown dim on the second shape


def test_while_loop_gives_back_the_structure_it_was_given():
    """As TensorFlow's: a tuple of loop variables comes back a tuple (it was always a list)."""
    body = lambda i, x: (i + 1, x * 2)  # noqa: E731
    assert isinstance(sf.while_loop(lambda i, x: i < 3, body, (0, sf.constant(1.0))), tuple)
    assert isinstance(sf.while_loop(lambda i, x: i < 3, body, [0, sf.constant(1.0)]), list)
    traced = sf.function(lambda x: sf.while_loop(lambda i, x: i < 3, body, (0, x), maximum_iterations=2))
    out = traced(sf.constant(1.0))
    assert isinstance(out, tuple) and float(out[1]) == 4.0
