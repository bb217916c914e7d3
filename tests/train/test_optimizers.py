"""Optimizers over several steps against numpy implementations of the published update rules
(Keras' formulas), slots and global step bookkeeping, parameter errors, and global-norm clipping."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specflow.errors import GraphError, SpecError
from specflow.graph.builder import GraphBuilder
from specflow.runtime.session import Session
from specflow.schema.layers.variables import create_variable
from specflow.train.clipping import clip_by_global_norm
from specflow.train.optimizers import create_global_step, make_optimizer
from specflow.train.schedules import learning_rate

RNG = np.random.default_rng(3)
STEPS = 6
SHAPES = {"hidden/kernel": (3, 2), "hidden/bias": (2,)}


class NumpyOptimizer:
    """The published rules in float64: Keras SGD/momentum, Adam (Kingma & Ba), RMSProp (Hinton;
    centered: Graves), Adagrad (Duchi et al.), decoupled weight decay (Loshchilov & Hutter)."""

    def __init__(self, name, p):
        self.name, self.p, self.t, self.slots = name, p, 0, {}

    def step(self, var, g, lr, key):
        p, s = self.p, self.slots.setdefault(key, {})
        var = var - lr * p.get("weight_decay", 0.004 if self.name == "adamw" else 0.0) * var
        if self.name == "sgd":
            return var - lr * g
        if self.name == "momentum":
            v = p.get("momentum", 0.9) * s.get("v", 0) - lr * g
            s["v"] = v
            return var + (p.get("momentum", 0.9) * v - lr * g if p.get("nesterov") else v)
        if self.name in ("adam", "adamw"):
            b1, b2, eps = p.get("beta_1", 0.9), p.get("beta_2", 0.999), p.get("epsilon", 1e-7)
            s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
            s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
            m_hat, v_hat = s["m"] / (1 - b1**self.t), s["v"] / (1 - b2**self.t)
            # Keras/TF add epsilon before the bias correction: the paper's "epsilon hat" form.
            return var - lr * m_hat / (np.sqrt(v_hat) + eps / np.sqrt(1 - b2**self.t))
        if self.name == "rmsprop":
            rho, mom, eps = p.get("rho", 0.9), p.get("momentum", 0.0), p.get("epsilon", 1e-7)
            s["ms"] = rho * s.get("ms", 0) + (1 - rho) * g * g
            denom = s["ms"]
            if p.get("centered"):
                s["mg"] = rho * s.get("mg", 0) + (1 - rho) * g
                denom = denom - s["mg"] ** 2
            s["mom"] = mom * s.get("mom", 0) + lr * g / np.sqrt(denom + eps)
            return var - s["mom"]
        if self.name == "adagrad":
            s["acc"] = s.get("acc", p.get("initial_accumulator_value", 0.1)) + g * g
            return var - lr * g / (np.sqrt(s["acc"]) + p.get("epsilon", 1e-7))
        raise AssertionError(self.name)


class Model:
    """Two variables, their gradients fed through Placeholders, one optimizer's train op."""

    def __init__(self, name, params, dtype="float32", schedule=None):
        b = GraphBuilder()
        self.b = b
        self.init_values = {k: RNG.uniform(-1, 1, s).astype(dtype) for k, s in SHAPES.items()}
        self.vars = {k: create_variable(b, k, s, dtype, {"constant": self.init_values[k].tolist()}) for k, s in SHAPES.items()}
        self.grads = {
            k: b.add_op("Placeholder", attrs={"dtype": dtype, "shape": list(s)}, name=f"grad/{k}").name
            for k, s in SHAPES.items()
        }
        self.global_step = create_global_step(b)
        self.opt = make_optimizer(name, params)
        self.lr = learning_rate(b, schedule if schedule is not None else self.opt.learning_rate, self.global_step)
        pairs = [(self.grads[k], self.vars[k]) for k in SHAPES]
        self.train = self.opt.apply_gradients(b, pairs, self.lr, self.global_step)
        self.init = b.add_op("NoOp", name="init", control_inputs=b.collections["init_ops"]).name
        self.session = Session(b.graph_def)
        self.session.run([], targets=[self.init])

    def step(self, grads):
        feeds = {self.grads[k]: g for k, g in grads.items()}
        lr, _ = self.session.run([self.lr, self.train], feeds=feeds)
        return float(lr)

    def values(self):
        return self.session.run({k: v.read for k, v in self.vars.items()})


CONFIGS = [
    ("sgd", {"learning_rate": 0.1}),
    ("sgd", {"learning_rate": 0.1, "weight_decay": 0.05}),
    ("momentum", {"learning_rate": 0.05, "momentum": 0.9}),
    ("momentum", {"learning_rate": 0.05, "momentum": 0.8, "nesterov": True}),
    ("momentum", {"learning_rate": 0.05, "nesterov": True, "weight_decay": 0.1}),
    ("adam", {"learning_rate": 0.01}),
    ("adam", {"learning_rate": 0.01, "beta_1": 0.8, "beta_2": 0.99, "epsilon": 1e-3, "weight_decay": 0.02}),
    ("adamw", {"learning_rate": 0.01}),
    ("adamw", {"learning_rate": 0.01, "weight_decay": 0.1}),
    ("rmsprop", {"learning_rate": 0.01}),
    ("rmsprop", {"learning_rate": 0.01, "momentum": 0.5, "rho": 0.8}),
    ("rmsprop", {"learning_rate": 0.01, "momentum": 0.5, "centered": True, "weight_decay": 0.01}),
    ("adagrad", {"learning_rate": 0.1}),
    ("adagrad", {"learning_rate": 0.1, "initial_accumulator_value": 0.5, "epsilon": 1e-3, "weight_decay": 0.1}),
]


def _run_against_numpy(name, params, dtype, rtol, schedule=None, lr_of_step=None):
    model = Model(name, params, dtype, schedule)
    ref = NumpyOptimizer(name, params)
    want = {k: v.astype(np.float64) for k, v in model.init_values.items()}
    for step in range(STEPS):
        grads = {k: RNG.normal(size=s).astype(dtype) for k, s in SHAPES.items()}
        lr = model.step(grads)
        expected_lr = lr_of_step(step) if lr_of_step else params["learning_rate"]
        np.testing.assert_allclose(lr, expected_lr, rtol=1e-6)
        ref.t = step + 1
        # The rate is a float32 tensor: the reference uses its exact value.
        want = {k: ref.step(want[k], grads[k].astype(np.float64), lr, k) for k in SHAPES}
    got = model.values()
    for k in SHAPES:
        assert got[k].dtype == np.dtype(dtype)
        np.testing.assert_allclose(got[k], want[k], rtol=rtol, atol=rtol, err_msg=k)
    assert model.session.run(model.global_step.read) == STEPS
    return model


@pytest.mark.parametrize("name,params", CONFIGS, ids=[f"{n}-{'-'.join(p)}" for n, p in CONFIGS])
def test_optimizer_matches_published_rule(name, params):
    _run_against_numpy(name, params, "float32", rtol=2e-5)


@pytest.mark.parametrize("name", ["adam", "rmsprop"])
def test_float64_variables_with_a_float32_learning_rate(name):
    _run_against_numpy(name, {"learning_rate": 0.01, "centered": True} if name == "rmsprop" else {"learning_rate": 0.01},
                       "float64", rtol=1e-9)  # fmt: skip


def test_schedule_uses_the_step_before_the_increment():
    schedule = {"schedule": "exponential", "initial": 0.1, "decay_steps": 2, "decay_rate": 0.5}
    _run_against_numpy("momentum", {"learning_rate": 0.1}, "float32", rtol=2e-5, schedule=schedule,
                       lr_of_step=lambda s: 0.1 * 0.5 ** (s / 2))  # fmt: skip


def test_slots_are_named_like_tensorflow_and_join_the_collections():
    model = Model("adam", {"learning_rate": 0.01})
    names = [v.name for v in model.b.collections["variables"]]
    assert names == ["hidden/kernel", "hidden/bias", "global_step", "hidden/kernel/Adam", "hidden/kernel/Adam_1",
                     "hidden/bias/Adam", "hidden/bias/Adam_1", "beta1_power", "beta2_power"]  # fmt: skip
    assert [v.name for v in model.b.collections["trainable_variables"]] == ["hidden/kernel", "hidden/bias"]
    init_ops = model.b.collections["init_ops"]
    assert all(f"{n}/Assign" in init_ops for n in names)
    nodes = {n.name: n for n in model.b.graph_def.nodes}
    assert model.train == "Adam" and nodes["Adam"].op == "NoOp"
    assert nodes["Adam/update_hidden/kernel/ResourceApplyAdam"].inputs[:3] == [
        "hidden/kernel", "hidden/kernel/Adam", "hidden/kernel/Adam_1"]  # fmt: skip
    # After one step the beta powers have advanced once.
    model.step({k: np.ones(s, np.float32) for k, s in SHAPES.items()})
    b1, b2 = model.session.run([f"{n}/Read/ReadVariableOp" for n in ("beta1_power", "beta2_power")])
    np.testing.assert_allclose([b1, b2], [0.81, 0.999**2], rtol=1e-6)


def test_rmsprop_and_adagrad_slots():
    centered = Model("rmsprop", {"centered": True})
    assert [v.name for v in centered.b.collections["variables"]][3:6] == [
        "hidden/kernel/RMSProp", "hidden/kernel/RMSProp_1", "hidden/kernel/RMSProp_2"]  # fmt: skip
    adagrad = Model("adagrad", {"initial_accumulator_value": 0.25})
    slot = adagrad.session.run("hidden/kernel/Adagrad/Read/ReadVariableOp")
    np.testing.assert_array_equal(slot, np.full((3, 2), 0.25, np.float32))


def test_global_step_counts_train_op_runs_only():
    model = Model("sgd", {"learning_rate": 0.1})
    step = model.global_step
    assert (step.name, step.dtype.name, step.shape.dims, step.trainable) == ("global_step", "int64", (), False)
    assert create_global_step(model.b) is step  # one per graph
    grads = {k: np.ones(s, np.float32) for k, s in SHAPES.items()}
    for i in range(4):
        assert model.session.run(step.read) == i
        model.session.run(model.lr)  # reading the rate does not count a step
        model.step(grads)
    assert model.session.run(step.read) == 4


def test_a_value_read_before_the_update_is_unchanged_after_it():
    model = Model("adam", {"learning_rate": 0.1, "weight_decay": 0.1})
    before = model.values()
    kept = {k: v.copy() for k, v in before.items()}
    model.step({k: np.ones(s, np.float32) for k, s in SHAPES.items()})
    after = model.values()
    for k in SHAPES:
        np.testing.assert_array_equal(before[k], kept[k])
        assert not np.allclose(after[k], kept[k])


def test_none_gradients_skip_their_variable():
    b = GraphBuilder()
    w = create_variable(b, "w", [2], "float32", {"constant": 1.0})
    frozen = create_variable(b, "frozen", [2], "float32", {"constant": 1.0})
    g = b.const(np.ones(2, np.float32), name="g")
    train = make_optimizer("momentum", {}).apply_gradients(b, [(g, w), (None, frozen)], b.const(0.5), None)
    assert not b.has_node("frozen/Momentum")
    init = b.add_op("NoOp", name="init", control_inputs=b.collections["init_ops"]).name
    s = Session(b.graph_def)
    s.run([], targets=[init])
    s.run([], targets=[train])
    np.testing.assert_allclose(s.run(w.read), [0.5, 0.5])
    np.testing.assert_allclose(s.run(frozen.read), [1.0, 1.0])


def test_apply_gradients_errors():
    b = GraphBuilder()
    w = create_variable(b, "w", [2], "float32", "zeros")
    with pytest.raises(SpecError, match="no gradients to apply"):
        make_optimizer("sgd", {}).apply_gradients(b, [(None, w)], b.const(0.1), None)
    g64 = b.const(np.ones(2), "float64", name="g64")
    with pytest.raises(GraphError, match="gradient 'g64' is float64 but variable 'w' is float32"):
        make_optimizer("sgd", {}).apply_gradients(b, [(g64, w)], b.const(0.1), None)


@pytest.mark.parametrize(
    "name,params,match",
    [
        ("adma", {}, r"unknown optimizer 'adma' \(did you mean 'adam'\?\)"),
        ("adam", {"beta1": 0.9}, r"has no parameter 'beta1' \(did you mean 'beta_1'\?\)"),
        ("sgd", {"momentum": 0.9}, "optimizer 'sgd' has no parameter 'momentum'"),
        ("adam", {"beta_2": 1.0}, r"train.optimizer.adam.beta_2: must be a number in \[0, 1\)"),
        ("momentum", {"nesterov": "yes"}, "must be true or false"),
        ("rmsprop", {"epsilon": -1}, "must be a number >= 0"),
        ("sgd", {"learning_rate": -0.1}, "must be a number >= 0 or a schedule"),
        ("sgd", {"learning_rate": {"schedule": "cosine", "initial": 0.1}}, "needs 'decay_steps'"),
    ],
)
def test_parameter_errors(name, params, match):
    with pytest.raises(SpecError, match=match):
        make_optimizer(name, params)


def test_defaults_follow_keras():
    assert make_optimizer("adamw", {}).params == {
        "learning_rate": 0.001, "weight_decay": 0.004, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7}  # fmt: skip
    assert make_optimizer("sgd", {}).learning_rate == 0.01
    assert make_optimizer("adagrad", {}).params["initial_accumulator_value"] == 0.1


# --- clipping ---------------------------------------------------------------------------------


def _clip_graph(grads, clip_norm):
    b = GraphBuilder()
    names = [None if g is None else b.const(g, name="g") for g in grads]
    clipped, norm = clip_by_global_norm(b, names, clip_norm)
    s = Session(b.graph_def)
    fetch = [c for c in clipped if c is not None]
    return clipped, s.run(fetch), float(s.run(norm))


@pytest.mark.parametrize("clip_norm", [0.5, 3.0, 100.0])
def test_clip_by_global_norm_matches_numpy(clip_norm):
    grads = [RNG.normal(size=(3, 2)).astype(np.float32), None, RNG.normal(size=(4,)).astype(np.float32)]
    clipped, values, norm = _clip_graph(grads, clip_norm)
    present = [g for g in grads if g is not None]
    want_norm = np.sqrt(sum(float(np.sum(g.astype(np.float64) ** 2)) for g in present))
    np.testing.assert_allclose(norm, want_norm, rtol=1e-6)
    assert clipped[1] is None
    for got, g in zip(values, present):
        np.testing.assert_allclose(got, g * clip_norm / max(want_norm, clip_norm), rtol=1e-6)


def test_clip_with_an_infinite_norm_gives_nan():
    _, values, norm = _clip_graph([np.array([np.inf, 1.0], np.float32)], 1.0)
    assert np.isinf(norm) and np.isnan(values[0]).all()


def test_clip_norm_must_be_positive():
    with pytest.raises(SpecError, match="clip norm must be a finite number > 0"):
        clip_by_global_norm(GraphBuilder(), [], 0.0)


ROWS = RNG.normal(size=(5, 2)).astype(np.float32)
ROW_IDS = np.array([0, 2, 0, 1, 2], np.int32)  # repeated ids: TF counts each row, unmerged
DENSE = RNG.normal(size=(3,)).astype(np.float32)


def _sparse_clip(clip_norm):
    from specflow.ops.grad_util import IndexedSlices

    b = GraphBuilder()
    sparse = IndexedSlices(b, b.const(ROWS, name="rows"), b.const(ROW_IDS, name="ids"), lambda: b.const(4, name="n"))
    clipped, norm = clip_by_global_norm(b, [sparse, b.const(DENSE, name="g")], clip_norm)
    assert isinstance(clipped[0], IndexedSlices) and clipped[0].indices == sparse.indices
    s = Session(b.graph_def)
    return s.run([clipped[0].values, clipped[1]]), float(s.run(norm))


def test_clip_keeps_a_sparse_gradient_sparse_and_counts_its_rows_unmerged():
    (rows, dense), norm = _sparse_clip(0.5)
    want = np.sqrt(np.sum(ROWS.astype(np.float64) ** 2) + np.sum(DENSE.astype(np.float64) ** 2))
    merged = np.zeros((4, 2))
    np.add.at(merged, ROW_IDS, ROWS)
    assert abs(want - np.sqrt(np.sum(merged**2) + np.sum(DENSE.astype(np.float64) ** 2))) > 0.1  # they differ
    np.testing.assert_allclose(norm, want, rtol=1e-6)
    np.testing.assert_allclose(rows, ROWS * 0.5 / want, rtol=1e-6)
    np.testing.assert_allclose(dense, DENSE * 0.5 / want, rtol=1e-6)


def test_sparse_clip_agrees_with_tensorflow():
    tf = pytest.importorskip("tensorflow")
    sparse = tf.IndexedSlices(tf.constant(ROWS), tf.constant(ROW_IDS), tf.constant([4, 2]))
    (want_sparse, want_dense), want_norm = tf.clip_by_global_norm([sparse, tf.constant(DENSE)], 0.5)
    (rows, dense), norm = _sparse_clip(0.5)
    np.testing.assert_allclose(norm, want_norm.numpy(), rtol=1e-6)
    np.testing.assert_allclose(rows, want_sparse.values.numpy(), rtol=1e-6)
    np.testing.assert_allclose(dense, want_dense.numpy(), rtol=1e-6)


def test_clip_each_by_norm_and_by_value_match_tensorflow_formulas():
    """Keras's clipnorm (tf.clip_by_norm of each gradient) and clipvalue; a zero gradient stays 0,
    a sparse gradient's values are clipped as they are."""
    from specflow.ops.grad_util import IndexedSlices
    from specflow.train.clipping import clip_each_by_norm, clip_each_by_value

    b = GraphBuilder()
    g1 = RNG.normal(size=(3, 2)).astype(np.float32) * 3
    zero = np.zeros(4, np.float32)
    sparse = IndexedSlices(b, b.const(ROWS, name="rows"), b.const(ROW_IDS, name="ids"), lambda: b.const(4, name="n"))
    names = [b.const(g1, name="g1"), None, b.const(zero, name="z"), sparse]
    by_norm = clip_each_by_norm(b, names, 0.5)
    by_value = clip_each_by_value(b, names, 0.7)
    assert by_norm[1] is None and isinstance(by_norm[3], IndexedSlices) and by_norm[3].indices == sparse.indices
    s = Session(b.graph_def)
    n0, n2, n3 = s.run([by_norm[0], by_norm[2], by_norm[3].values])
    np.testing.assert_allclose(n0, g1 * 0.5 / max(np.linalg.norm(g1), 0.5), rtol=1e-6)
    np.testing.assert_array_equal(n2, zero)
    np.testing.assert_allclose(n3, ROWS * 0.5 / max(np.linalg.norm(ROWS), 0.5), rtol=1e-6)  # unmerged rows
    v0, v3 = s.run([by_value[0], by_value[3].values])
    np.testing.assert_array_equal(v0, np.clip(g1, -0.7, 0.7))
    np.testing.assert_array_equal(v3, np.clip(ROWS, -0.7, 0.7))


def test_at_most_one_clip_in_a_train_section():
    from specflow.schema.loader import load_spec_text

    text = (Path(__file__).resolve().parents[2] / "models" / "digits_mlp.yaml").read_text()
    with pytest.raises(SpecError, match="at most one of clip_global_norm, clip_norm and clip_value"):
        load_spec_text(text.replace("train:\n", "train:\n  clip_norm: 1.0\n  clip_value: 0.5\n", 1), "two_clips.yaml")
    spec = load_spec_text(text.replace("train:\n", "train:\n  clip_norm: 1.0\n", 1), "clip.yaml")
    assert spec.train.clip_norm == 1.0
