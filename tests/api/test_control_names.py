"""sf.map_fn / scan / foldl / foldr / switch_case / case, sf.custom_gradient, sf.gradients,
control_dependencies and the checks (sf.debugging): values against numpy, traced against eager,
gradients against finite differences; the expected numbers were also checked against TensorFlow
2.21 by hand."""

from __future__ import annotations

import io

import numpy as np
import pytest

import specflow as sf

X = np.arange(6, dtype=np.float32).reshape(3, 2)


def close(got, want, tol=1e-5) -> None:
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=tol, atol=tol)


PROGRAMS = {
    "map_fn": lambda w, x: sf.map_fn(lambda r: sf.reduce_sum(r * w), x),
    "map_fn_structure": lambda w, x: sf.map_fn(lambda e: e[0] * e[1] + w, (x, x * 2.0),
                                               fn_output_signature=sf.float32),
    "scan": lambda w, x: sf.scan(lambda a, r: a * w + r, x),
    "scan_reverse": lambda w, x: sf.scan(lambda a, r: a * w + r, x, reverse=True),
    "scan_initializer_reverse": lambda w, x: sf.scan(lambda a, r: a + r * w, x, initializer=np.ones(2, np.float32),
                                                     reverse=True),
    "foldl": lambda w, x: sf.foldl(lambda a, r: a * w + r, x),
    "foldr": lambda w, x: sf.foldr(lambda a, r: a * w + r, x, initializer=np.zeros(2, np.float32)),
    "switch_case": lambda w, x: sf.switch_case(sf.cast(sf.reduce_sum(x) > 10, sf.int32),
                                               [lambda: x * w, lambda: x * w * w]),
    "case": lambda w, x: sf.case([(sf.reduce_sum(x) < 0, lambda: x * 0.0), (sf.reduce_sum(x) > 0, lambda: x * w)],
                                 default=lambda: x),
}


def _numpy(name: str, w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The same programs written with numpy loops."""
    if name == "map_fn":
        return np.array([np.sum(r * w) for r in x])
    if name == "map_fn_structure":
        return x * (2 * x) + w
    if name in ("scan", "foldl", "scan_reverse"):
        rows = x[::-1] if name == "scan_reverse" else x
        acc, out = rows[0], [rows[0]]
        for r in rows[1:]:
            acc = acc * w + r
            out.append(acc)
        return acc if name == "foldl" else np.stack(out[::-1] if name == "scan_reverse" else out)
    if name == "scan_initializer_reverse":
        acc, out = np.ones(2, np.float32), {}
        for i in reversed(range(len(x))):
            acc = acc + x[i] * w
            out[i] = acc
        return np.stack([out[i] for i in range(len(x))])
    if name == "foldr":
        acc = np.zeros(2, np.float32)
        for r in x[::-1]:
            acc = acc * w + r
        return acc
    if name == "switch_case":
        return x * w * w if x.sum() > 10 else x * w
    return x * w if x.sum() > 0 else x


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_loops_and_branches_match_numpy_eagerly_and_traced_with_their_gradients(name):
    prog = PROGRAMS[name]
    w = sf.Variable(np.array([1.0, 2.0], np.float32))
    with sf.GradientTape() as tape:
        y = prog(w, X)
        loss = sf.reduce_sum(y * y)
    eager_grad = tape.gradient(loss, w)
    close(y, _numpy(name, w.numpy(), X))

    @sf.function
    def traced(x):
        with sf.GradientTape() as tape:
            y = prog(w, x)
            loss = sf.reduce_sum(y * y)
        return y, tape.gradient(loss, w)

    ty, traced_grad = traced(X)
    close(ty, y)
    close(traced_grad, eager_grad)
    w0, eps, fd = w.numpy(), 1e-2, []
    for i in range(2):
        step = eps * np.eye(2, dtype=np.float32)[i]
        fd.append((np.sum(_numpy(name, w0 + step, X) ** 2) - np.sum(_numpy(name, w0 - step, X) ** 2)) / (2 * eps))
    close(eager_grad, fd, tol=1e-2)


def test_a_traced_map_over_an_unknown_length_is_one_loop():
    @sf.function(input_signature=[sf.TensorSpec([None, 2], sf.float32)])
    def f(x):
        return sf.map_fn(lambda r: r * 2.0, x), sf.scan(lambda a, r: a + r, x)

    for n in (1, 4):
        x = np.arange(2 * n, dtype=np.float32).reshape(n, 2)
        m, s = f(x)
        close(m, x * 2.0)
        close(s, np.cumsum(x, axis=0))
    graph = f.get_concrete_function().graph_def
    assert sum(n.op == "LoopCond" for n in graph.nodes) == 2  # one while loop each, whatever the length


def test_map_fn_whose_output_differs_from_its_input_needs_the_signature():
    with pytest.raises(sf.SpecflowError, match=r"map_fn: fn returned .* give fn_output_signature="):
        sf.map_fn(lambda e: e[0] + e[1], (X, X))
    close(sf.map_fn(lambda r: sf.cast(r, sf.int32), X, fn_output_signature=sf.int32), X.astype(np.int32))


def test_switch_case_takes_the_last_branch_or_the_default_out_of_range():
    branches = {0: lambda: sf.constant(10), 2: lambda: sf.constant(12)}
    assert int(sf.switch_case(2, branches)) == 12
    assert int(sf.switch_case(7, branches)) == 12
    assert int(sf.switch_case(7, branches, default=lambda: sf.constant(-1))) == -1

    @sf.function
    def f(i):
        return sf.switch_case(i, [lambda: sf.constant(1.0), lambda: sf.constant(2.0)], default=lambda: sf.constant(9.0))

    assert [float(f(np.int32(i))) for i in (0, 1, 5)] == [1.0, 2.0, 9.0]


def test_case_without_a_default_needs_the_last_predicate():
    pairs = [(sf.constant(False), lambda: sf.constant(1.0)), (sf.constant(True), lambda: sf.constant(2.0))]
    assert float(sf.case(pairs)) == 2.0
    with pytest.raises(sf.SpecflowError, match="None of the conditions evaluated as True"):
        sf.case([(sf.constant(False), lambda: sf.constant(1.0)), (sf.constant(False), lambda: sf.constant(2.0))])
    with pytest.raises(sf.SpecflowError, match="exclusive=True"):
        sf.case([(sf.constant(True), lambda: sf.constant(1.0)), (sf.constant(True), lambda: sf.constant(2.0))],
                exclusive=True)


def test_a_cond_reading_a_variable_in_one_branch_has_zero_gradient_when_the_other_runs():
    """The variable's handle is switched into one branch only; TensorFlow gives zeros for it
    when the other branch runs (this used to fail while building the gradient)."""
    w = sf.Variable(np.array([1.0, 2.0], np.float32))

    @sf.function
    def f(x, p):
        with sf.GradientTape() as tape:
            y = sf.cond(p, lambda: x * w, lambda: x)
            loss = sf.reduce_sum(y * y)
        return tape.gradient(loss, w)

    x = np.ones(2, np.float32)
    close(f(x, True), [2.0, 4.0])
    close(f(x, False), [0.0, 0.0])


# --- custom_gradient ----------------------------------------------------------------------------------


@sf.custom_gradient
def log1pexp(x):
    e = sf.exp(x)

    def grad(dy):
        return dy * (1 - 1 / (1 + e))

    return sf.math.log(1 + e), grad


@sf.custom_gradient
def clip_gradient(x):
    return sf.identity(x), lambda dy: sf.clip_by_value(dy, -0.5, 0.5)


def test_custom_gradient_replaces_the_functions_own_eagerly_and_traced():
    x = sf.constant(np.array([0.0, 100.0], np.float32))  # at 100 the ops' own gradient is NaN

    def grads(x):
        with sf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = log1pexp(x)
            z = clip_gradient(x * 3.0)
        return tape.gradient(y, x), tape.gradient(z, x)

    for got in (grads(x), sf.function(grads)(x)):
        close(got[0], [0.5, 1.0])
        close(got[1], [1.5, 1.5])  # dy = 1 * 3 clipped to 0.5, times 3


def test_custom_gradient_second_derivative_and_variables():
    x = sf.constant(np.array([0.5], np.float32))
    with sf.GradientTape() as outer:
        outer.watch(x)
        with sf.GradientTape() as inner:
            inner.watch(x)
            y = log1pexp(x)
        g = inner.gradient(y, x)
    s = 1 / (1 + np.exp(-0.5))
    close(g, [s])
    close(outer.gradient(g, x), [s * (1 - s)])  # grad_fn's use of exp(x) is differentiated again

    w = sf.Variable(np.array([1.0, -2.0], np.float32))

    @sf.custom_gradient
    def scaled(x):
        def grad(dy, variables=None):
            assert [v.name for v in variables] == [w.name]
            return dy * w * 10.0, [dy * x * 100.0]

        return x * w, grad

    v = sf.constant(np.array([3.0, 4.0], np.float32))

    def both(v):
        with sf.GradientTape() as tape:
            tape.watch(v)
            loss = sf.reduce_sum(scaled(v))
        return tape.gradient(loss, [v, w])

    for gv, gw in (both(v), sf.function(both)(v)):
        close(gv, [10.0, -20.0])
        close(gw, [300.0, 400.0])

    @sf.custom_gradient
    def forgot(x):
        return x * w, lambda dy: dy

    with pytest.raises(TypeError, match="must take a keyword argument 'variables'"):
        with sf.GradientTape():
            forgot(v)


# --- gradients, order, checks, queries ---------------------------------------------------------------


def test_gradients_inside_a_function_and_not_eagerly():
    w = sf.Variable(np.array([1.0, 2.0], np.float32))

    @sf.function
    def f(x):
        y = sf.reduce_sum(x * w * w)
        return sf.gradients(y, [w, x])

    gw, gx = f(np.array([3.0, 4.0], np.float32))
    close(gw, [6.0, 16.0])
    close(gx, [1.0, 4.0])
    with pytest.raises(RuntimeError, match="use sf.GradientTape"):
        sf.gradients(sf.constant(1.0), [w])


def test_control_dependencies_and_group_order_the_graph():
    v = sf.Variable(0.0)

    @sf.function
    def f(x):
        a = x + 1.0
        with sf.control_dependencies([a]):
            b = x * 2.0
        g = sf.group(a, b)
        with sf.control_dependencies([g]):
            c = sf.identity(x)
        assert not sf.executing_eagerly()
        return b, c

    f(np.float32(1.0))
    nodes = f.get_concrete_function(np.float32(1.0)).graph_def.node_map()
    mul = next(n for n in nodes.values() if n.op == "Mul")
    assert any(i.startswith("^") and nodes[i[1:]].op == "AddV2" for i in mul.inputs)
    ident = next(n for n in nodes.values() if n.op == "Identity" and any(i.startswith("^") for i in n.inputs))
    assert nodes[ident.control_inputs[0]].op == "NoOp"
    assert sf.executing_eagerly() and sf.group(v) is None and sf.no_op() is None
    with sf.control_dependencies([v]):  # eagerly: nothing to order
        assert float(v) == 0.0


def test_asserts_fail_eagerly_and_when_a_function_runs():
    sf.debugging.assert_equal(sf.constant([1, 2]), [1, 2])
    sf.assert_less(1.0, 2.0)
    with pytest.raises(sf.SpecflowError, match=r"assertion failed: \[sizes differ\] \[Condition x == y"):
        sf.debugging.assert_equal(sf.constant([1, 2]), [1, 3], message="sizes differ")
    with pytest.raises(ValueError, match="must have rank 2"):
        sf.assert_rank(sf.constant([1.0]), 2)
    with pytest.raises(sf.SpecflowError, match="not equal to tolerance"):
        sf.debugging.assert_near(sf.constant(1.0), 1.1)

    @sf.function
    def positive(x):
        sf.debugging.assert_greater(x, 0.0, message="x must be positive")
        return sf.sqrt(x)

    close(positive(np.float32(4.0)), 2.0)
    with pytest.raises(sf.SpecflowError, match="x must be positive"):
        positive(np.float32(-4.0))
    with pytest.raises(sf.SpecflowError, match="bad values"):
        sf.debugging.check_numerics(sf.constant([1.0, np.nan]), "bad values")


def test_queries_shapes_scopes_and_print():
    assert sf.is_tensor(sf.constant(1.0)) and not sf.is_tensor(np.ones(2))
    assert sf.get_static_value(sf.constant([1, 2])).tolist() == [1, 2]
    with pytest.raises(sf.SpecflowError, match="EnsureShape|shape"):
        sf.ensure_shape(sf.constant([1.0, 2.0]), [3])
    close(sf.ensure_shape(sf.constant([1.0, 2.0]), [None]), [1.0, 2.0])
    seen = {}

    @sf.function
    def f(x):
        seen["static"] = sf.get_static_value(sf.shape(x))
        seen["unknown"] = sf.get_static_value(x)
        with sf.init_scope():
            seen["eager"] = sf.executing_eagerly()
        return x

    f(np.ones((2, 3), np.float32))
    assert seen["static"].tolist() == [2, 3] and seen["unknown"] is None and seen["eager"]
    out = io.StringIO()
    sf.print("x:", sf.constant([1, 2, 3]), output_stream=out)
    assert out.getvalue() == "x: [1 2 3]\n"


def test_print_eagerly_and_in_a_function_as_tensorflow_writes_it(capfd):
    sf.print("x is", sf.constant(np.arange(10)), {"a": sf.constant([1.5, 2.0])}, 7, [1, 2])
    assert capfd.readouterr().err == "x is [0 1 2 ... 7 8 9] {'a': [1.5 2]} 7 [1, 2]\n"

    @sf.function
    def f(x):
        sf.print("in fn", x, [x, 3], summarize=2)
        return x * 2.0

    close(f(np.arange(6, dtype=np.float32)), np.arange(6) * 2.0)
    assert capfd.readouterr().err == "in fn [0 1 ... 4 5] [[0 1 ... 4 5], 3]\n"
    nodes = [n.op for n in f.get_concrete_function(np.arange(6, dtype=np.float32)).graph_def.nodes]
    assert "StringFormat" in nodes and "PrintV2" in nodes
    f(np.arange(3, dtype=np.float32))  # a new trace prints too
    assert capfd.readouterr().err == "in fn [0 1 2] [[0 1 2], 3]\n"


def _save_printing_module(path) -> None:
    @sf.function(input_signature=[sf.TensorSpec([None], sf.float32)])
    def g(v):
        sf.print("v:", v)
        return v + 1.0

    module = sf.Module()
    module.g = g
    sf.save(module, path, signatures={"serving_default": g})


def test_a_saved_function_that_prints_prints_when_loaded(tmp_path, capfd):
    _save_printing_module(tmp_path / "m")
    capfd.readouterr()
    loaded = sf.load(tmp_path / "m")
    close(loaded.g(np.ones(4, np.float32)), np.full(4, 2.0))
    assert capfd.readouterr().err == "v: [1 1 1 1]\n"


def test_a_tensorflow_savedmodel_that_prints_loads_and_prints_the_same(tmp_path, capfd):
    tf = pytest.importorskip("tensorflow")

    class M(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable([1.0, 2.0])

        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
        def __call__(self, x):
            tf.print("x is", x, "sum", tf.reduce_sum(x), summarize=2)
            return x * self.w

    tf.saved_model.save(M(), str(tmp_path / "m"))
    x = np.arange(10, dtype=np.float32).reshape(5, 2) / 3
    capfd.readouterr()
    want = tf.saved_model.load(str(tmp_path / "m"))(x).numpy()
    printed = capfd.readouterr().err
    got = sf.load(tmp_path / "m")(x)
    assert capfd.readouterr().err == printed and printed.startswith("x is [[0 0.333333343]")
    close(got, want)

    _save_printing_module(tmp_path / "ours")
    close(tf.saved_model.load(str(tmp_path / "ours")).g(np.ones(4, np.float32)), np.full(4, 2.0))
    assert capfd.readouterr().err.endswith("v: [1 1 1 1]\n")


def test_a_loop_over_a_traced_length_is_written_with_the_loop_functions():
    @sf.function
    def total(n):
        return sf.foldl(lambda a, i: a + i, sf.range(n), initializer=np.int32(0))

    assert int(total(np.int32(5))) == 10

    @sf.function
    def python_loop(n):
        return [i for i in sf.range(n)]

    with pytest.raises(sf.SpecflowError, match="cannot iterate .* sf.while_loop, sf.map_fn or sf.scan"):
        python_loop(np.int32(3))


def test_range_takes_the_widest_of_its_arguments_dtypes_as_tensorflow():
    assert sf.range(sf.constant(np.int64(4))).dtype == sf.int64
    assert sf.range(np.int64(3)).dtype == sf.int64 and sf.range(3).dtype == sf.int32
    assert sf.range(0, 2.5, 0.5).dtype == sf.float32
    assert sf.range(sf.constant(2.0, sf.float64)).dtype == sf.float64


def test_gradients_is_a_list_and_none_grad_ys_seed_ones():
    """TF's tf.gradients: always a list, one per x (a single y and x gave the tensor itself, so
    `[0]` took its first element); a None in grad_ys seeds with ones (it gave NaN); the eager
    tape refuses a None output gradient, as TF's."""
    x = sf.constant(np.array([1.0, -2.0, 3.0], np.float32))

    @sf.function
    def f(x):
        y1, y2 = x * 2.0, x * x
        return (sf.gradients(x * x, x), sf.gradients([y1, y2], [x], grad_ys=[None, sf.ones_like(x) * 2.0]),
                sf.gradients([y1, y2], x, grad_ys=[None, sf.ones_like(x)], stop_gradients=[y1]))

    single, seeded, stopped = f(x)
    assert isinstance(single, list) and len(single) == 1
    close(single[0], [2.0, -4.0, 6.0])
    close(seeded[0], [6.0, -6.0, 14.0])
    close(stopped[0], [2.0, -4.0, 6.0])
    with sf.GradientTape() as tape:
        tape.watch(x)
        y1, y2 = x * 2.0, x * x
    with pytest.raises(ValueError, match="output_gradients holds None"):
        tape.gradient([y1, y2], x, output_gradients=[None, np.ones(3, np.float32)])
