"""GradientTape (eager and inside sf.function) against finite differences and the graph
gradients; sf.Module tracking and naming."""

from __future__ import annotations

import numpy as np
import pytest

import specflow as sf
from specflow.errors import GraphError

RNG = np.random.default_rng(7)


class MLP(sf.Module):
    def __init__(self, sizes=(4, 5, 3)):
        super().__init__()
        self.layers = [
            {"w": sf.Variable(RNG.normal(size=(a, b)) * 0.5, name=f"w{i}"),
             "b": sf.Variable(np.zeros(b), name=f"b{i}")}
            for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:]))
        ]
        self.steps = sf.Variable(0, trainable=False, name="steps")

    def __call__(self, x):
        for i, layer in enumerate(self.layers):
            x = sf.ops.mat_mul(x, layer["w"]) + layer["b"]
            if i < len(self.layers) - 1:
                x = sf.ops.tanh(x)
        return x


def loss_fn(model, x, y):
    logits = model(x)
    xent, _ = sf.ops.sparse_softmax_cross_entropy_with_logits(logits, y)
    return sf.ops.mean(xent)


def data():
    return RNG.normal(size=(6, 4)), np.array([0, 1, 2, 1, 0, 2], np.int64)


def finite_difference(f, var, eps=1e-6):
    base = var.numpy()
    grad = np.zeros_like(base)
    for idx in np.ndindex(base.shape):
        for sign in (1, -1):
            x = base.copy()
            x[idx] += sign * eps
            var.assign(x)
            grad[idx] += sign * float(f()) / (2 * eps)
    var.assign(base)
    return grad


def test_eager_tape_matches_finite_differences():
    model = MLP()
    x, y = data()
    with sf.GradientTape() as tape:
        loss = loss_fn(model, x, y)
    grads = tape.gradient(loss, model.trainable_variables)
    assert len(grads) == 4
    for var, g in zip(model.trainable_variables, grads):
        want = finite_difference(lambda: loss_fn(model, x, y), var)
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-5, atol=1e-8)


def test_function_tape_equals_eager_tape():
    model = MLP()
    x, y = data()
    with sf.GradientTape() as tape:
        loss = loss_fn(model, x, y)
    eager = tape.gradient(loss, model.trainable_variables)

    @sf.function
    def grads(x, y):
        with sf.GradientTape() as tape:
            loss = loss_fn(model, x, y)
        return loss, tape.gradient(loss, model.trainable_variables)

    traced_loss, traced = grads(x, y)
    assert float(traced_loss) == pytest.approx(float(loss))
    for a, b in zip(eager, traced):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10)


def test_watch_tensors_persistent_and_unconnected():
    x = sf.constant(np.array([1.0, 2.0, 3.0]))
    other = sf.constant(np.array([1.0]))
    with sf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = sf.ops.sum(x * x * x)
        z = sf.ops.sum(sf.ops.exp(x))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 3 * x.numpy() ** 2)
    np.testing.assert_allclose(tape.gradient(z, x).numpy(), np.exp(x.numpy()))
    assert tape.gradient(y, [other]) == [None]
    with sf.GradientTape() as once:
        once.watch(x)
        y = sf.ops.sum(x)
    once.gradient(y, x)
    with pytest.raises(GraphError, match="non-persistent"):
        once.gradient(y, x)


def test_unwatched_tensors_and_untrainable_variables_get_no_gradient():
    x = sf.constant(np.array([1.0, 2.0]))
    v = sf.Variable(np.array([1.0, 2.0]), trainable=False)
    with sf.GradientTape() as tape:
        y = sf.ops.sum(x * v)
    assert tape.gradient(y, [x, v]) == [None, None]


def test_training_with_function_and_tape_lowers_the_loss():
    model = MLP()
    x, y = data()

    @sf.function
    def train_step(x, y):
        with sf.GradientTape() as tape:
            loss = loss_fn(model, x, y)
        for v, g in zip(model.trainable_variables, tape.gradient(loss, model.trainable_variables)):
            v.assign_sub(0.5 * g)
        model.steps.assign_add(1)
        return loss

    first = float(train_step(x, y))
    for _ in range(30):
        last = float(train_step(x, y))
    assert last < first * 0.5
    assert int(model.steps.numpy()) == 31 and train_step.trace_count == 1


def test_module_tracks_variables_by_attribute_path():
    model = MLP()
    named = model.named_variables()
    assert list(named) == ["layers/0/b", "layers/0/w", "layers/1/b", "layers/1/w", "steps"]
    assert len(model.trainable_variables) == 4 and model.steps not in model.trainable_variables

    class Outer(sf.Module):
        def __init__(self):
            super().__init__()
            self.body = MLP()
            self.head = sf.Variable(1.0)
            self.alias = self.head  # the same variable once

    outer = Outer()
    assert outer.submodules == (outer.body,)
    assert len(outer.variables) == 6
    assert "body/layers/0/w" in outer.named_variables()
    assert outer.name == "outer"


def test_a_function_called_under_an_eager_tape_is_differentiated():
    x = sf.constant(np.array([1.0, 2.0]))

    @sf.function
    def cube_sum(x):
        return sf.ops.sum(x * x * x)

    with sf.GradientTape() as tape:
        tape.watch(x)
        y = cube_sum(x)  # runs its Python eagerly, so the tape records its ops
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 3 * x.numpy() ** 2)
    assert float(cube_sum(x)) == 9.0 and cube_sum.trace_count == 1


def test_tape_gradients_equal_the_training_graphs():
    """The digits MLP's loss written with sf.ops: the tape's gradients equal the ones the spec's
    training graph computes (train/graph.py) for the same weights and batch."""
    from pathlib import Path

    from specflow.runtime.session import Session
    from specflow.train.graph import build_training_graph

    spec = sf.load_spec(Path(__file__).resolve().parents[2] / "models" / "digits_mlp.yaml")
    tg = build_training_graph(spec, spec.train, None)
    x = RNG.uniform(0, 1, size=(8, 64)).astype(np.float32)
    y = RNG.integers(0, 10, size=8).astype(np.int64)
    with Session(tg.graph_def) as sess:
        sess.run([], targets=[tg.init_op])
        names = [v.name for v in tg.trainable]
        weights = {n: sess.run(v.read) for n, v in zip(names, tg.trainable)}
        want = sess.run([tg.gradients[n] for n in names], {"images": x, "labels": y})
    vs = {n: sf.Variable(w, name=n) for n, w in weights.items()}
    with sf.GradientTape() as tape:
        hidden = sf.ops.relu(sf.ops.bias_add(sf.ops.mat_mul(x, vs["hidden/kernel"]), vs["hidden/bias"]))
        logits = sf.ops.bias_add(sf.ops.mat_mul(hidden, vs["logits/kernel"]), vs["logits/bias"])
        loss = sf.ops.mean(sf.ops.sparse_softmax_cross_entropy_with_logits(logits, y)[0])
    got = tape.gradient(loss, [vs[n] for n in names])
    for n, g, w in zip(names, got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-7, err_msg=n)


def test_variable_updates_of_watched_tensors_under_a_tape():
    # an update inside the tape (a moving average of the loss, a counter) is no part of the
    # gradient; it crashed gradient() ("resource has no numpy equivalent")
    v = sf.Variable(np.array([0.0, 0.0]))
    x = sf.constant(np.array([1.0, 2.0]))
    with sf.GradientTape() as tape:
        tape.watch(x)
        v.assign_add(x)
        y = x * 3.0 + v
    gx, gv = tape.gradient(y, [x, v])
    np.testing.assert_array_equal(gx.numpy(), [3.0, 3.0])
    np.testing.assert_array_equal(gv.numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_output_gradients_as_numpy_arrays_eagerly_and_in_a_function():
    seed = np.array([1.0, 10.0])  # float64, for float32 targets: takes the target's dtype

    @sf.function
    def traced(x):
        with sf.GradientTape() as tape:
            tape.watch(x)
            y = x * x
        return tape.gradient(y, x, output_gradients=seed)  # was AttributeError: no attribute 'name'

    x = np.array([1.0, 2.0], np.float32)
    np.testing.assert_array_equal(traced(x).numpy(), [2.0, 40.0])
    xt = sf.constant(x)
    with sf.GradientTape() as tape:
        tape.watch(xt)
        y = xt * xt
    np.testing.assert_array_equal(tape.gradient(y, xt, output_gradients=seed).numpy(), [2.0, 40.0])


def test_unwatched_sources_get_no_gradient_inside_functions_and_eagerly():
    # As TensorFlow: a non-trainable variable, an unwatched argument and (with
    # watch_accessed_variables=False) an unwatched variable get None, also inside sf.function,
    # where they got gradients (a loop over model.variables then updated them too)
    w = sf.Variable(np.float32(2.0))
    frozen = sf.Variable(np.float32(3.0), trainable=False)

    @sf.function
    def default(x):
        with sf.GradientTape() as tape:
            h = w * x
            y = h * frozen
        return tape.gradient(y, [w, frozen, x, h])

    gw, gf, gx, gh = default(np.float32(1.0))
    assert (float(gw), gf, gx, float(gh)) == (3.0, None, None, 3.0)

    @sf.function
    def chosen(x):
        with sf.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(x)
            y = w * x * frozen
        return tape.gradient(y, [w, frozen, x])

    gw, gf, gx = chosen(np.float32(1.0))
    assert (gw, gf, float(gx)) == (None, None, 6.0)
    x = sf.constant(np.float32(1.0))
    with sf.GradientTape() as tape:
        y = w * x * frozen
    gw, gf, gx = tape.gradient(y, [w, frozen, x])
    assert (float(gw), gf, gx) == (3.0, None, None)  # x unwatched: was 6.0


def test_inside_a_function_values_computed_before_the_tape_are_constants_to_it():
    """As TensorFlow: a tape differentiates only the ops run while it records. A variable read
    (or any value) computed before the tape opened gets no gradient through it; ops made after
    the tape closed are not recorded either. They used to be differentiated anyway."""
    w = sf.Variable(np.float32(2.0))

    @sf.function
    def before(x):
        h = w * x  # read before the tape
        with sf.GradientTape() as tape:
            y = h * 2.0 + w * 3.0  # this read is recorded
        return tape.gradient(y, w)

    assert float(before(np.float32(5.0))) == 3.0  # TF: 3.0 (was 13.0)

    @sf.function
    def reopened(x):
        tape = sf.GradientTape(persistent=True)
        with tape:
            a = w * x
        b = a * w  # not recorded
        with tape:
            c = b * 2.0 + a
        return tape.gradient(c, w), tape.gradient(a, w)

    g, ga = reopened(np.float32(5.0))
    assert (float(g), float(ga)) == (5.0, 5.0)  # c = 2b + a: b is a constant to the tape, a = w x


def test_a_variable_as_the_target_is_its_own_gradient_source():
    """As TF (whose tape sees the variable's handle): d(w)/d(w) is ones, recorded or not, and
    adds to what the other targets give; it was None."""
    w, v = sf.Variable(np.float32(2.0)), sf.Variable(np.ones(3, np.float32))
    with sf.GradientTape(persistent=True) as tape:
        y = w * 3.0
    assert float(tape.gradient(w, w)) == 1.0 and tape.gradient(w, v) is None
    np.testing.assert_array_equal(tape.gradient(v, v).numpy(), np.ones(3))
    assert float(tape.gradient([y, w], w)) == 4.0
    assert float(tape.gradient(w, w, output_gradients=np.float32(5.0))) == 5.0

    @sf.function
    def f(x):
        with sf.GradientTape() as t:
            y = w * x
        return t.gradient([w, y], w)

    assert float(f(np.float32(1.5))) == 2.5
