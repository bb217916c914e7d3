"""Keras 3's customizable steps (api/keras_model.py, api/keras_compile.py): ``fit``/``evaluate``/
``predict`` run a subclass's ``train_step``/``test_step``/``predict_step`` and take the dict they
return as the logs; ``compute_loss``, ``self.metrics``, ``optimizer.apply``, compile without a
loss, a Model subclass built functionally, sample weights and ``weighted_metrics``. The guide
"Customizing what happens in fit()" examples matched Keras 3.15 outside the repository (history,
evaluate, weights within 1.2e-7); expected literals are Keras's."""

from __future__ import annotations

import numpy as np
import pytest

import specflow as sf

K = sf.keras
L = sf.keras.layers
RNG = np.random.default_rng(0)
X = RNG.random((32, 4)).astype(np.float32)
Y = RNG.random((32, 1)).astype(np.float32)
SW = RNG.random(32).astype(np.float32)
W = [RNG.uniform(-0.5, 0.5, (4, 1)).astype(np.float32), np.array([0.1], np.float32)]


def test_an_overridden_train_step_runs_and_its_dict_is_the_history():
    """The tester's case; Keras 3.15 gives {'myloss': [2.0]} and the kernel [0.8, 0.8]."""
    class Custom(K.Model):
        def __init__(self):
            super().__init__()
            self.d = L.Dense(1, kernel_initializer="ones")

        def call(self, x, training=None):
            return self.d(x)

        def train_step(self, data):
            x, y = data
            with sf.GradientTape() as t:
                loss = sf.reduce_mean(sf.square(self(x, training=True) - y)) * 0.5
            g = t.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(g, self.trainable_variables))
            return {"myloss": loss}

    m = Custom()
    m.compile(optimizer=K.optimizers.SGD(0.1))  # no loss: accepted, as Keras
    h = m.fit(np.ones((8, 2), np.float32), np.zeros((8, 1), np.float32), batch_size=8, epochs=1, verbose=0)
    assert h.history == {"myloss": [2.0]}
    np.testing.assert_allclose(m.get_weights()[0].ravel(), [0.8, 0.8], rtol=1e-6)


def _guide_model(K_model_cls, **compile_kw):
    inputs = K.Input((4,))
    model = K_model_cls(inputs, L.Dense(1)(inputs))  # a Model subclass built functionally
    model.set_weights(W)
    model.compile(**compile_kw)
    return model


def test_guide_train_step_with_compute_loss_and_metrics_equals_the_default_fit():
    class CustomModel(K.Model):
        def train_step(self, data):
            x, y = data
            with sf.GradientTape() as tape:
                y_pred = self(x, training=True)
                loss = self.compute_loss(y=y, y_pred=y_pred)
            trainable_vars = self.trainable_variables
            self.optimizer.apply(tape.gradient(loss, trainable_vars), trainable_vars)
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss)
                else:
                    metric.update_state(y, y_pred)
            return {m.name: m.result() for m in self.metrics}

    custom = _guide_model(CustomModel, optimizer=K.optimizers.Adam(0.01), loss="mse", metrics=["mae"])
    assert isinstance(custom, CustomModel) and isinstance(custom, K.Model) and custom.layers[1].units == 1
    plain = _guide_model(K.Model, optimizer=K.optimizers.Adam(0.01), loss="mse", metrics=["mae"])
    h1 = custom.fit(X, Y, batch_size=8, epochs=2, verbose=0, shuffle=False).history
    h2 = plain.fit(X, Y, batch_size=8, epochs=2, verbose=0, shuffle=False).history
    assert sorted(h1) == ["loss", "mae"]
    for k in h2:  # the custom step's loss tracker counts batches, the default one samples: equal batches
        np.testing.assert_allclose(h1[k], h2[k], rtol=1e-6)
    np.testing.assert_allclose(custom.get_weights()[0], plain.get_weights()[0], rtol=1e-6)
    assert custom.metrics_names == ["loss", "compile_metrics"]


def test_guide_own_metrics_property_and_no_compiled_loss():
    class CustomModel(K.Model):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.loss_tracker = K.metrics.Mean(name="loss")
            self.mae_metric = K.metrics.MeanAbsoluteError(name="mae")

        def train_step(self, data):
            x, y = data
            with sf.GradientTape() as tape:
                y_pred = self(x, training=True)
                loss = K.losses.mean_squared_error(y, y_pred)
            self.optimizer.apply(tape.gradient(loss, self.trainable_variables), self.trainable_variables)
            self.loss_tracker.update_state(loss)
            self.mae_metric.update_state(y, y_pred)
            return {"loss": self.loss_tracker.result(), "mae": self.mae_metric.result()}

        @property
        def metrics(self):  # reset at each epoch's start
            return [self.loss_tracker, self.mae_metric]

    model = _guide_model(CustomModel, optimizer=K.optimizers.SGD(0.01))
    h = model.fit(X, Y, batch_size=32, epochs=2, verbose=0)
    err = X @ W[0] + W[1] - Y
    assert h.history["loss"][0] == pytest.approx(np.mean(err ** 2), rel=1e-5)  # epoch 2 not accumulating epoch 1
    assert h.history["mae"][0] == pytest.approx(np.mean(np.abs(err)), rel=1e-5)
    assert h.history["loss"][1] < h.history["loss"][0]
    with pytest.raises(ValueError, match="No loss to compute"):  # the default test_step needs a loss
        model.evaluate(X, Y, verbose=0)


def test_test_step_and_predict_step_overrides():
    class CustomModel(K.Model):
        def test_step(self, data):
            x, y = data
            y_pred = self(x, training=False)
            return {"first": y_pred[0, 0], "doubled_error": 2.0 * sf.reduce_mean(sf.abs(y_pred - y))}

        def predict_step(self, data):
            x = data[0] if isinstance(data, tuple) else data
            return {"out": self(x, training=False), "twice": 2.0 * self(x, training=False)}

    model = _guide_model(CustomModel, loss="mse")
    p = X @ W[0] + W[1]
    logs = model.evaluate(X, Y, batch_size=32, verbose=0, return_dict=True)
    assert logs == pytest.approx({"doubled_error": 2 * np.mean(np.abs(p - Y)), "first": p[0, 0]}, rel=1e-5)
    out = model.predict(X, batch_size=10, verbose=0)
    np.testing.assert_allclose(out["out"], p, rtol=1e-5)
    np.testing.assert_allclose(out["twice"], 2 * p, rtol=1e-5)


def test_super_train_step_and_an_extra_metric_attribute():
    class Net(K.Model):
        def __init__(self):
            super().__init__()
            self.d = L.Dense(1)
            self.pred_mean = K.metrics.Mean(name="pred_mean")

        def call(self, x, training=None):
            return self.d(x)

        def train_step(self, data):
            logs = super().train_step(data)
            self.pred_mean.update_state(self(data[0]))
            return {**logs, "pred_mean": self.pred_mean.result()}

    m = Net()
    m(X[:1])
    m.set_weights(W)
    m.compile(optimizer=K.optimizers.SGD(0.0), loss="mse", metrics=["mae"])
    assert [x.name for x in m.metrics] == ["loss", "compile_metrics", "pred_mean"]
    h = m.fit(X, Y, batch_size=32, epochs=2, verbose=0)
    p = X @ W[0] + W[1]
    assert h.history["pred_mean"] == pytest.approx([p.mean()] * 2, rel=1e-5)  # reset each epoch
    assert h.history["loss"] == pytest.approx([np.mean((p - Y) ** 2)] * 2, rel=1e-5)


def test_sample_weights_weighted_metrics_and_keras_names():
    model = K.Sequential([K.Input((4,)), L.Dense(1)])
    model.set_weights(W)
    model.compile(optimizer=K.optimizers.SGD(0.0), loss="mse", metrics=["mae", "mse"], weighted_metrics=["mae"])
    h = model.fit(X, Y, sample_weight=SW, batch_size=32, epochs=1, verbose=0)
    err = (X @ W[0] + W[1] - Y)[:, 0]
    assert sorted(h.history) == ["loss", "mae", "mse", "weighted_mae"]
    assert h.history["loss"][0] == pytest.approx(np.sum(SW * err ** 2) / 32, rel=1e-5)  # sum_over_batch_size
    assert h.history["mae"][0] == pytest.approx(np.mean(np.abs(err)), rel=1e-5)  # metrics=: unweighted
    assert h.history["weighted_mae"][0] == pytest.approx(np.sum(SW * np.abs(err)) / SW.sum(), rel=1e-5)
    loss, mae, mse, mae_again, wmae = model.evaluate(X, Y, sample_weight=SW, verbose=0)  # Keras's list, as is
    assert mae_again == mae
    assert (loss, wmae) == pytest.approx((h.history["loss"][0], h.history["weighted_mae"][0]), rel=1e-5)
    batches = [(X[i:i + 8], Y[i:i + 8], SW[i:i + 8]) for i in range(0, 32, 8)]  # (x, y, sample_weight) batches
    assert model.evaluate(batches, verbose=0, return_dict=True)["weighted_mae"] == pytest.approx(wmae, rel=1e-5)
    logs = model.train_on_batch(X, Y, sample_weight=SW, return_dict=True)
    assert logs["loss"] == pytest.approx(loss, rel=1e-5)


def test_a_gan_style_model_with_its_own_compile_and_optimizers():
    """Keras's GAN example shape: compile(d_optimizer, g_optimizer, loss_fn), two sub-models, fit
    on x alone; the optimizers are not the model's weights."""
    class GAN(K.Model):
        def __init__(self, discriminator, generator):
            super().__init__()
            self.discriminator, self.generator = discriminator, generator
            self.d_loss_tracker = K.metrics.Mean(name="d_loss")

        def compile(self, d_optimizer, g_optimizer, loss_fn):
            super().compile()
            self.d_optimizer, self.g_optimizer, self.loss_fn = d_optimizer, g_optimizer, loss_fn

        def train_step(self, real):
            fake = self.generator(real[:, :2] * 2.0 - 1.0)  # deterministic "noise"
            both = sf.concat([fake, real], axis=0)
            labels = sf.concat([sf.ones((tf_shape(real), 1)), sf.zeros((tf_shape(real), 1))], axis=0)
            with sf.GradientTape() as tape:
                d_loss = self.loss_fn(labels, self.discriminator(both))
            grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
            self.d_optimizer.apply_gradients(zip(grads, self.discriminator.trainable_weights))
            with sf.GradientTape() as tape:
                g_loss = self.loss_fn(sf.zeros((tf_shape(real), 1)),
                                      self.discriminator(self.generator(real[:, :2] * 2.0 - 1.0)))
            grads = tape.gradient(g_loss, self.generator.trainable_weights)
            self.g_optimizer.apply_gradients(zip(grads, self.generator.trainable_weights))
            self.d_loss_tracker.update_state(d_loss)
            return {"d_loss": self.d_loss_tracker.result(), "g_loss": g_loss}

    def tf_shape(t):
        return int(t.shape[0])

    disc = K.Sequential([K.Input((4,)), L.Dense(3, activation="relu"), L.Dense(1)])
    gen = K.Sequential([K.Input((2,)), L.Dense(4, activation="sigmoid")])
    gan = GAN(disc, gen)
    gan.compile(K.optimizers.Adam(0.01), K.optimizers.Adam(0.01), K.losses.BinaryCrossentropy(from_logits=True))
    before = [w.copy() for w in gan.get_weights()]
    h = gan.fit(sf.data.Dataset.from_tensor_slices(X).batch(8), epochs=2, verbose=0)
    assert sorted(h.history) == ["d_loss", "g_loss"] and len(h.history["d_loss"]) == 2
    assert len(gan.weights) == len(disc.weights) + len(gen.weights)  # no optimizer slots among them
    assert all(not np.allclose(a, b) for a, b in zip(before, gan.get_weights()))


def test_compile_accepts_no_loss_and_the_default_step_says_it_needs_one():
    model = K.Sequential([L.Dense(1)])
    model.compile(optimizer="sgd")
    with pytest.raises(ValueError, match="No loss to compute"):
        model.fit(X, Y, verbose=0)
    model.compile(optimizer="sgd", loss="mse")
    assert model.compiled_metrics is not None and model.metrics_names == ["loss"]
