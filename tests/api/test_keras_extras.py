"""sf.keras.initializers / regularizers / metrics / activations / losses / optimizers.schedules,
against numpy references computed here (the comparison with Keras 3 itself is a scratch script)."""

import math
import random

import numpy as np
import pytest

import specflow as sf

K = sf.keras


def _n(x):
    return np.asarray(x.numpy() if hasattr(x, "numpy") else x, np.float64)


# --- initializers ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name, shape, std, limit", [
    ("GlorotUniform", (300, 200), math.sqrt(2 / 500), math.sqrt(6 / 500)),
    ("HeUniform", (3, 3, 16, 32), math.sqrt(2 / 144), math.sqrt(6 / 144)),
    ("LecunUniform", (300, 200), math.sqrt(1 / 300), math.sqrt(3 / 300)),
    ("GlorotNormal", (300, 200), math.sqrt(2 / 500), 2 * math.sqrt(2 / 500) / 0.87962566103423978),
    ("HeNormal", (3, 3, 16, 32), math.sqrt(2 / 144), 2 * math.sqrt(2 / 144) / 0.87962566103423978),
    ("LecunNormal", (300, 200), math.sqrt(1 / 300), 2 * math.sqrt(1 / 300) / 0.87962566103423978),
    ("RandomUniform", (300, 200), 0.1 / math.sqrt(12), 0.05),
    ("TruncatedNormal", (300, 200), 0.05 * 0.87962566103423978, 0.1),
])
def test_initializer_moments_and_limits(name, shape, std, limit):
    values = getattr(K.initializers, name)(seed=7)(shape)
    assert values.shape == shape and values.dtype == np.float32
    assert abs(values.mean()) < 0.02 * std * 10
    assert values.std() == pytest.approx(std, rel=0.02)
    assert np.abs(values).max() <= limit + 1e-6
    assert np.abs(values).max() > 0.95 * limit  # the draws reach the limit: not a narrower law
    np.testing.assert_array_equal(values, getattr(K.initializers, name)(seed=7)(shape))  # seeded: reproducible
    assert not np.array_equal(values, getattr(K.initializers, name)(seed=8)(shape))


def test_unseeded_initializers_follow_set_random_seed():
    K.utils.set_random_seed(3)
    a = K.initializers.get("he_normal")((5, 4))
    K.utils.set_random_seed(3)
    np.testing.assert_array_equal(a, K.initializers.HeNormal()((5, 4)))
    assert K.initializers.RandomNormal(mean=1.0, stddev=0.5, seed=1)((20000,)).mean() == pytest.approx(1.0, abs=0.02)


def test_deterministic_initializers():
    for shape in [(6, 4), (4, 6), (3, 3, 4, 5)]:
        q = K.initializers.Orthogonal(gain=2.0, seed=0)(shape).reshape(-1, shape[-1]).astype(np.float64)
        gram = q.T @ q if q.shape[0] >= q.shape[1] else q @ q.T
        np.testing.assert_allclose(gram, 4 * np.eye(len(gram)), atol=1e-5)
    np.testing.assert_array_equal(K.initializers.Identity(gain=3.0)((2, 3)), 3 * np.eye(2, 3))
    np.testing.assert_array_equal(K.initializers.Constant(0.25)((2, 2)), np.full((2, 2), 0.25, np.float32))
    np.testing.assert_array_equal(K.initializers.get("ones")((3,)), np.ones(3, np.float32))
    vs = K.initializers.VarianceScaling(scale=0.5, mode="fan_out", distribution="untruncated_normal", seed=2)
    assert vs((3, 3, 32, 64)).std() == pytest.approx(math.sqrt(0.5 / (9 * 64)), rel=0.02)
    with pytest.raises(ValueError, match="initializer identifier"):
        K.initializers.get("nope")


def test_layer_initializer_arguments():
    d = K.layers.Dense(3, kernel_initializer="ones", bias_initializer=K.initializers.Constant(0.5))
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_allclose(_n(d(x)), x.sum(1, keepdims=True) + np.full((2, 3), 0.5))
    c = K.layers.Conv2D(2, 3, kernel_initializer=K.initializers.HeNormal(seed=1), bias_initializer="ones")
    c(np.zeros((1, 5, 5, 4), np.float32))
    np.testing.assert_array_equal(c.kernel.numpy(), K.initializers.HeNormal(seed=1)((3, 3, 4, 2)))
    np.testing.assert_array_equal(c.bias.numpy(), np.ones(2, np.float32))
    c1 = K.layers.Conv1D(2, 3, kernel_initializer=K.initializers.Constant(0.5), kernel_regularizer=K.regularizers.L1(0.1))
    c1(np.zeros((1, 5, 4), np.float32))
    assert float(_n(c1.losses[0])) == pytest.approx(0.1 * 0.5 * 3 * 4 * 2)
    e = K.layers.Embedding(10, 3, embeddings_initializer="zeros")
    assert not e.embeddings.numpy().any()
    K.utils.set_random_seed(5)  # the defaults: glorot uniform kernels seeded from Python's random, as Keras's
    k = K.layers.Dense(7)
    k(x)
    seed = random.Random(5).randint(1, int(1e9))  # (test_keras_random.py: the draws equal Keras's)
    np.testing.assert_array_equal(k.kernel.numpy(), K.initializers.GlorotUniform(seed=seed)((4, 7)))


# --- regularizers ------------------------------------------------------------------------------------


def test_regularizer_penalties_and_layer_losses():
    w = np.random.default_rng(1).normal(size=(4, 3)).astype(np.float32)
    assert float(_n(K.regularizers.L1()(w))) == pytest.approx(0.01 * np.abs(w).sum(), rel=1e-6)
    assert float(_n(K.regularizers.l2(0.3)(w))) == pytest.approx(0.3 * np.square(w).sum(), rel=1e-6)
    l1l2 = K.regularizers.L1L2(l1=0.02, l2=0.05)(w)
    assert float(_n(l1l2)) == pytest.approx(0.02 * np.abs(w).sum() + 0.05 * np.square(w).sum(), rel=1e-6)
    assert float(_n(K.regularizers.l1_l2()(w))) == 0.0  # Keras 3: L1L2's factors default to 0
    model = K.Sequential([K.layers.Dense(3, kernel_regularizer="l2", bias_regularizer=K.regularizers.L1(0.5),
                                         bias_initializer="ones"), K.layers.Dense(2)])
    model(np.zeros((1, 4), np.float32))
    k = model.layers[0].kernel.numpy()
    assert len(model.losses) == 2
    assert float(_n(model.losses[0])) == pytest.approx(0.01 * np.square(k).sum(), rel=1e-6)
    assert float(_n(model.losses[1])) == pytest.approx(1.5)
    with sf.GradientTape() as tape:  # differentiable: computed from the variables when read
        total = model.losses[0]
    np.testing.assert_allclose(tape.gradient(total, model.layers[0].kernel).numpy(), 0.02 * k, rtol=1e-6)


def test_fit_adds_l2_penalty_first_step_update():
    x = np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32)
    y = np.random.default_rng(1).normal(size=(8, 2)).astype(np.float32)
    model = K.Sequential([K.layers.Dense(2, kernel_regularizer=K.regularizers.L2(0.1))])
    model(x[:1])
    w0, b0 = model.get_weights()
    model.compile(K.optimizers.SGD(0.05), "mse")
    hist = model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0).history
    err = x @ w0 + b0 - y
    grad_w = 2 * x.T @ err / err.size + 2 * 0.1 * w0
    grad_b = 2 * err.sum(0) / err.size
    w1, b1 = model.get_weights()
    np.testing.assert_allclose(w1, w0 - 0.05 * grad_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b1, b0 - 0.05 * grad_b, rtol=1e-5, atol=1e-6)
    # the epoch loss includes the penalty (Keras's), at the weights before the step
    assert hist["loss"][0] == pytest.approx(np.mean(err ** 2) + 0.1 * np.square(w0).sum(), rel=1e-5)


# --- metrics -------------------------------------------------------------------------------------------


def _two_updates(metric, *args, sample_weight=None):
    for half in (slice(0, 3), slice(3, None)):
        extra = {} if sample_weight is None else {"sample_weight": sample_weight[half]}
        metric.update_state(*(a[half] for a in args), **extra)
    return float(_n(metric.result()))


def test_metric_objects_against_numpy():
    rng = np.random.default_rng(3)
    n, c = 8, 4
    probs = rng.uniform(size=(n, c)).astype(np.float32)
    labels = rng.integers(0, c, n)
    onehot = np.eye(c, dtype=np.float32)[labels]
    sw = rng.uniform(size=n).astype(np.float32)
    hits = (probs.argmax(1) == labels).astype(np.float64)
    assert _two_updates(K.metrics.SparseCategoricalAccuracy(), labels, probs, sample_weight=sw) == pytest.approx(
        (hits * sw).sum() / sw.sum(), rel=1e-6)
    assert _two_updates(K.metrics.CategoricalAccuracy(), onehot, probs) == pytest.approx(hits.mean())
    top2 = (probs >= np.sort(probs, 1)[:, -2:-1])[np.arange(n), labels]
    assert _two_updates(K.metrics.SparseTopKCategoricalAccuracy(k=2), labels, probs) == pytest.approx(top2.mean())
    assert _two_updates(K.metrics.TopKCategoricalAccuracy(k=2), onehot, probs, sample_weight=sw) == pytest.approx(
        (top2 * sw).sum() / sw.sum(), rel=1e-6)
    yt, yp = rng.normal(size=(n, 3)).astype(np.float32), rng.normal(size=(n, 3)).astype(np.float32)
    mse = ((yt - yp) ** 2).mean(1)
    assert _two_updates(K.metrics.MeanSquaredError(), yt, yp, sample_weight=sw) == pytest.approx(
        (mse * sw).sum() / sw.sum(), rel=1e-5)
    assert _two_updates(K.metrics.RootMeanSquaredError(), yt, yp) == pytest.approx(np.sqrt(mse.mean()), rel=1e-5)
    assert _two_updates(K.metrics.MeanAbsoluteError(), yt, yp) == pytest.approx(np.abs(yt - yp).mean(), rel=1e-5)
    assert _two_updates(K.metrics.Mean(), yt[:, 0], sample_weight=sw) == pytest.approx(
        (yt[:, 0] * sw).sum() / sw.sum(), rel=1e-5)
    assert _two_updates(K.metrics.Sum(), yt[:, 0], sample_weight=sw) == pytest.approx((yt[:, 0] * sw).sum(), rel=1e-5)
    yb = np.array([1, 0, 1, 1, 0, 0, 1, 0], np.float32)
    pb = np.array([0.9, 0.6, 0.4, 0.8, 0.1, 0.55, 0.7, 0.3], np.float32)
    pos = pb > 0.5
    tp, fp, fn = (sw * (pos & (yb == 1))).sum(), (sw * (pos & (yb == 0))).sum(), (sw * (~pos & (yb == 1))).sum()
    assert _two_updates(K.metrics.Precision(), yb, pb, sample_weight=sw) == pytest.approx(tp / (tp + fp), rel=1e-6)
    assert _two_updates(K.metrics.Recall(), yb, pb, sample_weight=sw) == pytest.approx(tp / (tp + fn), rel=1e-6)
    assert _two_updates(K.metrics.BinaryAccuracy(), yb, pb) == pytest.approx(((pb > 0.5) == yb).mean())
    # AUC: the exact ROC AUC (all pairs) when no two scores share a threshold bucket
    pairs = [(p, q) for p, t in zip(pb, yb) if t for q, u in zip(pb, yb) if not u]
    assert _two_updates(K.metrics.AUC(), yb, pb) == pytest.approx(np.mean([p > q for p, q in pairs]), abs=1e-6)
    m = K.metrics.Accuracy()
    m.update_state([1, 2, 3], [1, 0, 3])
    assert float(_n(m.result())) == pytest.approx(2 / 3)
    m.reset_state()
    assert float(_n(m.result())) == 0.0


def test_metric_objects_in_compile():
    x = np.random.default_rng(0).normal(size=(12, 3)).astype(np.float32)
    y = np.arange(12) % 2
    model = K.Sequential([K.layers.Dense(2, activation="softmax")])
    model.compile("sgd", "sparse_categorical_crossentropy", metrics=[K.metrics.SparseCategoricalAccuracy()])
    model(x[:1])
    logs = model.evaluate(x, y, return_dict=True, verbose=0)
    expected = (model.predict(x, verbose=0).argmax(1) == y).mean()
    assert logs["sparse_categorical_accuracy"] == pytest.approx(expected)


# --- losses and activations ------------------------------------------------------------------------


def test_losses_against_numpy():
    rng = np.random.default_rng(5)
    yt, yp = rng.normal(size=(6, 3)).astype(np.float32), rng.normal(size=(6, 3)).astype(np.float32)
    sw = rng.uniform(size=6).astype(np.float32)
    e = yp - yt
    huber = np.where(np.abs(e) <= 1, 0.5 * e ** 2, np.abs(e) - 0.5).mean(1)
    assert float(_n(K.losses.Huber()(yt, yp))) == pytest.approx(huber.mean(), rel=1e-5)
    assert float(_n(K.losses.Huber()(yt, yp, sample_weight=sw))) == pytest.approx((huber * sw).mean(), rel=1e-5)
    assert float(_n(K.losses.LogCosh()(yt, yp))) == pytest.approx(np.log(np.cosh(e)).mean(), rel=1e-5)
    assert float(_n(K.losses.MeanAbsoluteError()(yt, yp))) == pytest.approx(np.abs(e).mean(), rel=1e-5)
    cos = -(yt * yp).sum(1) / np.linalg.norm(yt, axis=1) / np.linalg.norm(yp, axis=1)
    assert float(_n(K.losses.CosineSimilarity()(yt, yp))) == pytest.approx(cos.mean(), rel=1e-5)
    pt, pp = rng.uniform(size=(6, 3)).astype(np.float32), rng.uniform(size=(6, 3)).astype(np.float32)
    assert float(_n(K.losses.KLDivergence()(pt, pp))) == pytest.approx((pt * np.log(pt / pp)).sum(1).mean(), rel=1e-5)
    yb = np.array([[0.0], [1.0], [1.0], [0.0]], np.float32)
    pb = np.array([[0.3], [-0.2], [1.5], [-2.0]], np.float32)
    assert float(_n(K.losses.Hinge()(yb, pb))) == pytest.approx(np.maximum(1 - (2 * yb - 1) * pb, 0).mean(), rel=1e-6)
    logits = rng.normal(size=(6, 4)).astype(np.float32)
    labels = rng.integers(0, 4, 6)
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    np.testing.assert_allclose(_n(K.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)),
                               -logp[np.arange(6), labels], rtol=1e-5)
    np.testing.assert_allclose(_n(K.losses.sparse_categorical_crossentropy(labels, np.exp(logp))),
                               -logp[np.arange(6), labels], rtol=1e-5)
    np.testing.assert_allclose(_n(K.losses.mean_squared_error(yt, yp)), (e ** 2).mean(1), rtol=1e-5)


def test_compile_loss_names_and_functions():
    x = np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32)
    y = np.random.default_rng(1).normal(size=(8, 2)).astype(np.float32)
    model = K.Sequential([K.layers.Dense(2)])
    model(x[:1])
    e = model.predict(x, verbose=0) - y
    model.compile("sgd", loss="huber")
    assert model.evaluate(x, y, verbose=0) == pytest.approx(
        np.where(np.abs(e) <= 1, 0.5 * e ** 2, np.abs(e) - 0.5).mean(), rel=1e-5)
    model.compile("sgd", loss=K.losses.mean_absolute_error)
    assert model.evaluate(x, y, verbose=0) == pytest.approx(np.abs(e).mean(), rel=1e-5)
    cls = K.Sequential([K.layers.Dense(3, activation="softmax")])
    cls.compile("sgd", loss=K.losses.sparse_categorical_crossentropy)
    labels = np.arange(8) % 3
    p = cls.predict(x, verbose=0)
    assert cls.evaluate(x, labels, verbose=0) == pytest.approx(-np.log(p[np.arange(8), labels]).mean(), rel=1e-5)


def test_activations():
    x = np.linspace(-4, 4, 17).astype(np.float32)
    act = K.activations
    np.testing.assert_allclose(_n(act.get("hard_sigmoid")(x)), np.clip(x / 6 + 0.5, 0, 1), atol=1e-7)
    np.testing.assert_allclose(_n(act.softsign(x)), x / (1 + np.abs(x)), rtol=1e-6)
    np.testing.assert_allclose(_n(act.get("swish")(x)), x / (1 + np.exp(-x)), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(_n(act.leaky_relu(x)), np.where(x > 0, x, 0.2 * x), rtol=1e-6)
    np.testing.assert_allclose(_n(act.relu(x, negative_slope=0.1, max_value=2.0, threshold=1.0)),
                               np.where(x > 1, np.minimum(x, 2.0), 0.1 * (x - 1)), rtol=1e-6)
    np.testing.assert_allclose(_n(act.exponential(x)), np.exp(x), rtol=1e-6)
    assert act.get(None) is act.linear
    with pytest.raises(ValueError):
        act.get("nope")


# --- schedules ---------------------------------------------------------------------------------------


def test_schedule_values():
    s = K.optimizers.schedules
    steps = np.arange(25)
    cases = [
        (s.ExponentialDecay(0.1, 3, 0.7), 0.1 * 0.7 ** (steps / 3)),
        (s.ExponentialDecay(0.1, 3, 0.7, staircase=True), 0.1 * 0.7 ** np.floor(steps / 3)),
        (s.PiecewiseConstantDecay([3, 7], [0.1, 0.05, 0.01]), np.where(steps <= 3, 0.1, np.where(steps <= 7, 0.05, 0.01))),
        (s.PolynomialDecay(0.1, 10, 0.01, power=2.0), 0.09 * (1 - np.minimum(steps, 10) / 10) ** 2 + 0.01),
        (s.InverseTimeDecay(0.1, 4, 0.5), 0.1 / (1 + 0.5 * steps / 4)),
        (s.CosineDecay(0.1, 10, alpha=0.2), 0.1 * (0.8 * 0.5 * (1 + np.cos(np.pi * np.minimum(steps, 10) / 10)) + 0.2)),
        (s.CosineDecay(0.0, 10, warmup_target=0.2, warmup_steps=4),
         np.where(steps < 4, 0.2 * steps / 4, 0.2 * 0.5 * (1 + np.cos(np.pi * (np.minimum(steps, 14) - 4) / 10)))),
    ]
    for sched, expected in cases:
        got = [float(_n(sched(np.int64(i)))) for i in steps]
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-8, err_msg=type(sched).__name__)
    cyc = s.PolynomialDecay(0.1, 4, 0.0, cycle=True)  # decay steps stretched to the next multiple of 4
    assert float(_n(cyc(np.int64(6)))) == pytest.approx(0.1 * (1 - 6 / 8), rel=1e-6)


def test_optimizer_steps_with_schedule_in_function_and_fit():
    sched = K.optimizers.schedules.ExponentialDecay(0.1, 2, 0.5)
    opt = K.optimizers.SGD(sched)
    v = sf.Variable(np.float32(1.0))
    step = sf.function(lambda g: opt.apply_gradients([(g, v)]))
    for _ in range(5):
        step(sf.constant(np.float32(1.0)))
    assert float(v.numpy()) == pytest.approx(1 - sum(0.1 * 0.5 ** (i / 2) for i in range(5)), rel=1e-6)
    # inside fit: batch i uses lr(i); with a zero-input Dense only the bias moves: b -= lr(i) * dL/db
    model = K.Sequential([K.layers.Dense(1, kernel_initializer="zeros")])
    model.compile(K.optimizers.SGD(K.optimizers.schedules.PiecewiseConstantDecay([1], [0.1, 0.01])), "mse")
    x, y = np.zeros((4, 2), np.float32), np.ones((4, 1), np.float32)
    model.fit(x, y, batch_size=2, epochs=1, shuffle=False, verbose=0)
    b = 0.0
    for lr in (0.1, 0.1, 0.01):  # steps 0, 1 (<= boundary 1), then 2
        b -= lr * 2 * (b - 1.0)
    assert model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0) is not None
    assert float(model.layers[0].bias.numpy()[0]) == pytest.approx(b, rel=1e-6)


def test_backend_and_utils():
    K.backend.clear_session()
    np.testing.assert_array_equal(K.utils.to_categorical([[1], [0], [2]], 3), np.eye(3)[[1, 0, 2]])
    assert K.utils.to_categorical([3, 1]).shape == (2, 4)


def test_custom_layer_add_weight_as_keras():
    """Keras 3's add_weight(shape=, initializer=, regularizer=, constraint=, trainable=, name=) in a
    custom layer, fitted 3 epochs with SGD: the history and the weights equal Keras 3.15's (the
    fixture, from the same initial weights); MaxNorm and non_neg applied after each update."""
    from pathlib import Path

    K = sf.keras
    ref = np.load(Path(__file__).parent / "data" / "keras_custom_layer.npz")

    class Linear(K.layers.Layer):
        def __init__(self, units=4, **kw):
            super().__init__(**kw)
            self.units = units

        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1], self.units), initializer="glorot_uniform", name="w",
                                     regularizer=K.regularizers.L2(0.01), constraint=K.constraints.MaxNorm(0.8))
            self.b = self.add_weight(shape=(self.units,), initializer="zeros", name="b", constraint="non_neg")
            self.c = self.add_weight(shape=(), initializer=K.initializers.Constant(0.5), trainable=False, name="c")

        def call(self, x):
            return sf.nn.relu(sf.matmul(x, self.w) + self.b) * self.c

    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((16, 5)).astype(np.float32), rng.standard_normal((16, 1)).astype(np.float32)
    m = K.Sequential([K.Input((5,)), Linear(6, name="lin"), K.layers.Dense(1)])
    assert [tuple(w.shape.as_list()) for w in m.weights] == [(5, 6), (6,), (), (6, 1), (1,)]
    assert len(m.trainable_weights) == 4 and len(m.losses) == 1
    m.set_weights([ref[f"w0_{i}"] for i in range(5)])
    m.compile(K.optimizers.SGD(0.1), "mse")
    history = m.fit(x, y, epochs=3, batch_size=8, verbose=0, shuffle=False).history["loss"]
    np.testing.assert_allclose(history, ref["loss"], rtol=1e-6)
    for i, w in enumerate(m.get_weights()):
        np.testing.assert_allclose(w, ref[f"out_{i}"], atol=1e-6)
    assert (m.weights[1].numpy() >= 0).all()
    assert np.sqrt((m.weights[0].numpy() ** 2).sum(0)).max() <= 0.8 + 1e-6


def test_constraints_formulas():
    K = sf.keras
    w = np.array([[3.0, -4.0], [4.0, 0.5]], np.float32)
    norms = np.sqrt((w ** 2).sum(0, keepdims=True))
    np.testing.assert_allclose(K.constraints.MaxNorm(2.0)(w).numpy(), w * np.minimum(norms, 2) / (1e-7 + norms), rtol=1e-6)
    np.testing.assert_allclose(K.constraints.UnitNorm()(w).numpy(), w / (1e-7 + norms), rtol=1e-6)
    np.testing.assert_array_equal(K.constraints.get("non_neg")(w).numpy(), np.maximum(w, 0))
    mm = K.constraints.MinMaxNorm(1.0, 2.0, rate=0.5)(w).numpy()
    np.testing.assert_allclose(mm, w * (0.5 * np.clip(norms, 1, 2) + 0.5 * norms) / (1e-7 + norms), rtol=1e-6)
    with pytest.raises(ValueError, match="constraint"):
        K.constraints.get("nonneg_typo")
