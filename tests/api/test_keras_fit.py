"""sf.keras's training API (api/keras_model.py): compile/fit/evaluate/predict on small data
against numpy's arithmetic, callbacks (History, EarlyStopping, a plain object), subclassed
models, iterables of batches and the errors. (Keras itself gives the same numbers to ~1e-7: the
comparison lives outside the repository, Keras being no dependency.)"""

from __future__ import annotations

import numpy as np
import pytest

import specflow as sf

K = sf.keras


def _data(n=10, d=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5], np.float32)[:d] + 0.3).astype(np.float32)
    return x, y


def _linear(x, w, b, lr=0.1):
    model = K.Sequential([K.layers.Dense(1)])
    model(x[:1])
    model.set_weights([w, b])
    model.compile(optimizer=K.optimizers.SGD(lr), loss="mse")
    return model


W0, B0 = np.array([[0.2], [0.1], [-0.3]], np.float32), np.array([0.05], np.float32)


def _numpy_sgd(x, y, w, b, lr, batch):
    """Keras's SGD on MSE, batch by batch; the epoch's loss weighted by batch size."""
    w, b = w.astype(np.float64), b.astype(np.float64)
    losses, sizes = [], []
    for s in range(0, len(x), batch):
        xb, yb = x[s:s + batch], y[s:s + batch, None]
        err = xb @ w + b - yb
        losses.append(np.mean(err ** 2))
        sizes.append(len(xb))
        w, b = w - lr * 2 * xb.T @ err / len(xb), b - lr * 2 * err.sum(0) / len(xb)
    return w, b, np.average(losses, weights=sizes), losses


def test_one_full_batch_sgd_epoch_is_the_analytic_update():
    x, y = _data()
    model = _linear(x, W0, B0)
    hist = model.fit(x, y, batch_size=len(x), epochs=1, shuffle=False, verbose=0)
    err = x @ W0 + B0 - y[:, None]
    np.testing.assert_allclose(hist.history["loss"], [np.mean(err ** 2)], rtol=1e-6)
    w, b = model.get_weights()
    np.testing.assert_allclose(w, W0 - 0.1 * 2 * x.T @ err / len(x), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(b, B0 - 0.1 * 2 * err.sum(0) / len(x), rtol=1e-5, atol=1e-7)
    assert hist.epoch == [0] and model.history is hist


def test_epoch_loss_is_the_batch_size_weighted_mean_and_the_step_is_one_function():
    x, y = _data(n=10)
    model = _linear(x, W0, B0, lr=0.05)
    hist = model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)  # batches of 4, 4, 2
    w, b, loss0, batch_losses = _numpy_sgd(x, y, W0, B0, 0.05, 4)
    assert abs(loss0 - np.mean(batch_losses)) > 1e-3  # the weighting matters here
    w, b, loss1, _ = _numpy_sgd(x, y, w, b, 0.05, 4)
    np.testing.assert_allclose(hist.history["loss"], [loss0, loss1], rtol=1e-5)
    np.testing.assert_allclose(model.get_weights()[0], w, rtol=1e-5, atol=1e-6)
    train = model._sf_compiled.functions["train"]
    assert isinstance(train, sf.Function) and len(train.concrete_functions) == 2  # batch of 4, batch of 2
    eager = _linear(x, W0, B0, lr=0.05)
    eager.compile(optimizer=K.optimizers.SGD(0.05), loss="mse", run_eagerly=True)
    h2 = eager.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    assert not isinstance(eager._sf_compiled.functions["train"], sf.Function)
    np.testing.assert_allclose(h2.history["loss"], hist.history["loss"], rtol=1e-6)


def test_validation_split_takes_the_last_samples_and_evaluate_predict_agree():
    x, y = _data(n=10)
    model = _linear(x, W0, B0, lr=0.0)  # weights stay: every number is numpy's
    model.compile(optimizer=K.optimizers.SGD(0.0), loss="mse", metrics=["mae"])
    hist = model.fit(x, y, batch_size=3, epochs=2, validation_split=0.25, verbose=0)  # 7 train, 3 validation
    pred = x @ W0 + B0
    err = pred[:, 0] - y
    assert list(hist.history) == ["loss", "mae", "val_loss", "val_mae"]
    np.testing.assert_allclose(hist.history["loss"], [np.mean(err[:7] ** 2)] * 2, rtol=1e-5)  # shuffled: same mean
    np.testing.assert_allclose(hist.history["val_loss"], [np.mean(err[7:] ** 2)] * 2, rtol=1e-5)
    np.testing.assert_allclose(hist.history["val_mae"], [np.mean(np.abs(err[7:]))] * 2, rtol=1e-5)
    loss, mae = model.evaluate(x, y, batch_size=4, verbose=0)
    np.testing.assert_allclose([loss, mae], [np.mean(err ** 2), np.mean(np.abs(err))], rtol=1e-5)
    assert model.evaluate(x, y, verbose=0, return_dict=True) == pytest.approx({"loss": loss, "mae": mae}, rel=1e-6)
    got = model.predict(x, batch_size=3, verbose=0)
    assert isinstance(got, np.ndarray) and got.shape == (10, 1)
    np.testing.assert_allclose(got, model(x).numpy(), rtol=1e-6)
    np.testing.assert_allclose(model.predict_on_batch(x[:2]), pred[:2], rtol=1e-5)
    np.testing.assert_allclose(model.test_on_batch(x[:4], y[:4]), [np.mean(err[:4] ** 2), np.mean(np.abs(err[:4]))],
                               rtol=1e-5)


@pytest.mark.parametrize("kind", ["sparse", "categorical", "binary"])
def test_accuracy_resolves_from_the_shapes_as_keras_does(kind):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(12, 4)).astype(np.float32)
    units, loss = {"sparse": (3, "sparse_categorical_crossentropy"), "categorical": (3, "categorical_crossentropy"),
                   "binary": (1, "binary_crossentropy")}[kind]
    labels = rng.integers(0, units if units > 1 else 2, 12)
    y = np.eye(3, dtype=np.float32)[labels] if kind == "categorical" else labels
    model = K.Sequential([K.layers.Dense(units, activation="sigmoid" if units == 1 else "softmax")])
    model.compile(optimizer="sgd", loss=loss, metrics=["accuracy", "acc"])
    loss_value, acc, acc2 = model.evaluate(x, y, batch_size=5, verbose=0)
    p = model.predict(x, verbose=0)
    picked = (p[:, 0] > 0.5).astype(int) if units == 1 else p.argmax(-1)
    assert acc == acc2 == pytest.approx(np.mean(picked == labels))
    if kind == "sparse":
        assert loss_value == pytest.approx(-np.mean(np.log(p[np.arange(12), labels])), rel=1e-5)
    assert model.metrics_names == ["loss", "compile_metrics"]  # Keras 3's: the loss tracker and the container


def _counting_callback():
    class Recorder:
        def __init__(self):
            self.calls = []

        def on_epoch_end(self, epoch, logs=None):
            self.calls.append((epoch, dict(logs)))
    return Recorder()


def test_early_stopping_stops_at_the_right_epoch_on_a_crafted_history():
    x, y = _data()
    crafted = [1.0, 0.8, 0.85, 0.9, 0.95, 0.5, 0.4]  # best at epoch 1; 2 epochs without improvement after it

    class Craft:  # runs before EarlyStopping and writes the monitored value into the same logs
        def on_epoch_end(self, epoch, logs):
            logs["val_loss"] = crafted[epoch]
            weights_at_end.append(model.get_weights()[0].copy())

    weights_at_end = []
    model = _linear(x, W0, B0, lr=0.05)
    stop = K.callbacks.EarlyStopping(monitor="val_loss", patience=2, restore_best_weights=True)
    rec = _counting_callback()
    hist = model.fit(x, y, batch_size=5, epochs=7, verbose=0, callbacks=[Craft(), stop, rec])
    assert hist.epoch == [0, 1, 2, 3] and hist.history["val_loss"] == crafted[:4]
    assert stop.stopped_epoch == 3 and stop.best_epoch == 1 and model.stop_training
    assert [e for e, _ in rec.calls] == [0, 1, 2, 3] and set(rec.calls[0][1]) == {"loss", "val_loss"}
    np.testing.assert_array_equal(model.get_weights()[0], weights_at_end[1])  # restored
    # min_delta: 0.8 -> 0.79 is no improvement by more than 0.05; mode from the metric's direction
    for monitor, values, mode, expect in (("val_loss", [1.0, 0.99, 0.97, 0.5], "auto", 1),
                                          ("accuracy", [0.5, 0.6, 0.55, 0.58, 0.7], "auto", 3),
                                          ("accuracy", [0.5, 0.4, 0.3], "min", None)):
        cb = K.callbacks.EarlyStopping(monitor=monitor, min_delta=0.05 if monitor == "val_loss" else 0,
                                       patience=1 if monitor == "val_loss" else 2, mode=mode)
        m = _linear(x, W0, B0)
        m.compile(optimizer="sgd", loss="mse", metrics=["accuracy"])
        cb.set_model(m)
        cb.on_train_begin()
        for epoch, v in enumerate(values):
            cb.on_epoch_end(epoch, {monitor: v})
            if m.stop_training:
                break
        assert (cb.stopped_epoch if m.stop_training else None) == expect, (monitor, values)


class TwoLayer(K.Model):
    def __init__(self):
        super().__init__()
        self.hidden = K.layers.Dense(8, activation="tanh")
        self.head = K.layers.Dense(3)  # set after "hidden": Keras's order, not the attributes' names

    def call(self, x, training=None):
        return self.head(self.hidden(x))


def test_a_subclassed_model_trains_with_weights_in_keras_order():
    K.utils.set_random_seed(0)
    rng = np.random.default_rng(2)
    x = rng.normal(size=(40, 5)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0)
    model = TwoLayer()
    model.compile(optimizer=K.optimizers.Adam(0.05),
                  loss=K.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    hist = model.fit(x, y, batch_size=8, epochs=8, verbose=0)
    assert hist.history["loss"][-1] < 0.6 * hist.history["loss"][0]
    assert hist.history["accuracy"][-1] > 0.8
    assert [tuple(w.shape) for w in model.get_weights()] == [(5, 8), (8,), (8, 3), (3,)]
    assert [v.name for v in model.trainable_variables] == [v.name for v in model.weights]
    saved = model.get_weights()
    model.set_weights([np.zeros_like(w) for w in saved])
    assert np.all(model.predict(x, verbose=0) == 0)
    model.set_weights(saved)
    np.testing.assert_allclose(model.predict(x, verbose=0), model(x).numpy(), rtol=1e-6)


def test_an_iterable_of_batches_is_iterated_afresh_each_epoch():
    x, y = _data(n=10)

    class Batches:  # a re-iterable of (x, y), as sf.data.Dataset is
        passes = 0

        def __iter__(self):
            Batches.passes += 1
            for s in range(0, 10, 4):
                yield x[s:s + 4], y[s:s + 4]

    by_iter = _linear(x, W0, B0, lr=0.05).fit(Batches(), epochs=3, verbose=0)
    assert Batches.passes == 3
    by_arrays = _linear(x, W0, B0, lr=0.05).fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0)
    np.testing.assert_allclose(by_iter.history["loss"], by_arrays.history["loss"], rtol=1e-6)
    model = _linear(x, W0, B0)
    assert model.evaluate(Batches(), verbose=0) == pytest.approx(model.evaluate(x, y, verbose=0), rel=1e-6)
    np.testing.assert_allclose(model.predict(Batches(), verbose=0), model.predict(x, verbose=0), rtol=1e-6)
    hist = model.fit(x, y, epochs=2, validation_data=Batches(), verbose=0)
    assert len(hist.history["val_loss"]) == 2


def test_shuffle_reorders_each_epoch_and_verbose_prints_a_line_per_epoch(capsys):
    x, y = _data(n=12)
    seen = []

    class Recording(K.Model):
        def __init__(self):
            super().__init__()
            self.d = K.layers.Dense(1)

        def call(self, x, training=None):
            seen.append(tuple(np.asarray(x)[:, 0]))
            return self.d(x)

    model = Recording()
    model.compile(optimizer=K.optimizers.SGD(0.0), loss="mse", run_eagerly=True)
    hist = model.fit(x, y, batch_size=4, epochs=3, verbose=1)
    orders = [sum(seen[i:i + 3], ()) for i in range(0, 9, 3)]
    assert all(sorted(o) == sorted(x[:, 0]) for o in orders) and len(set(orders)) > 1
    full = np.mean((model.predict(x, verbose=0)[:, 0] - y) ** 2)
    np.testing.assert_allclose(hist.history["loss"], [full] * 3, rtol=1e-5)  # lr 0: any order, same mean
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 3 and out[0].startswith("Epoch 1/3") and "loss: " in out[0]
    model.fit(x, y, epochs=1, verbose=0)
    assert capsys.readouterr().out == ""


def test_compile_names_and_train_on_batch():
    x, y = _data()
    model = _linear(x, W0, B0)
    for name, cls, lr in (("rmsprop", "RMSprop", 0.001), ("adam", "Adam", 0.001), ("SGD", "SGD", 0.01)):
        model.compile(optimizer=name, loss="mean_squared_error")
        assert type(model.optimizer).__name__ == cls and model.optimizer.learning_rate == lr
    model.compile(optimizer=K.optimizers.SGD(0.1), loss="mse")
    err = x @ W0 + B0 - y[:, None]
    assert model.train_on_batch(x, y) == pytest.approx(np.mean(err ** 2), rel=1e-5)
    np.testing.assert_allclose(model.get_weights()[0], W0 - 0.1 * 2 * x.T @ err / len(x), rtol=1e-5, atol=1e-7)
    model.compile(optimizer="sgd", loss=lambda t, p: sf.reduce_mean(sf.abs(p - t), axis=-1))  # per-sample: averaged
    assert model.evaluate(x, y[:, None], verbose=0) == pytest.approx(
        np.mean(np.abs(model.predict(x, verbose=0) - y[:, None])), rel=1e-5)


def test_errors_are_one_clear_line():
    x, y = _data()
    model = K.Sequential([K.layers.Dense(1)])
    cases = [
        (lambda: model.fit(x, y, verbose=0), "must call `compile()`"),
        (lambda: model.evaluate(x, y, verbose=0), "must call `compile()`"),
        (lambda: model.compile(optimizer="adamm", loss="mse"), "optimizer identifier: 'adamm'"),
        (lambda: model.compile(optimizer="sgd", loss="mse_loss"), "loss identifier: 'mse_loss'"),
        (lambda: model.compile(optimizer="sgd", loss="mse", metrics=["accuracyy"]), "metric identifier: 'accuracyy'"),
    ]
    for fn, message in cases:
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
            fn()
    model.compile(optimizer="sgd")  # Keras accepts no loss (a custom train_step may not need one)...
    with pytest.raises(ValueError, match="No loss to compute"):  # ...the default step does
        model.fit(x, y, verbose=0)
    model.compile(optimizer="sgd", loss="mse")
    for fn, message in (
        (lambda: model.fit(x, y[:9], verbose=0), "x has 10 samples, y has 9"),
        (lambda: model.fit(x, verbose=0), "y is missing"),
        (lambda: model.evaluate(x, verbose=0), "y is missing"),
        (lambda: model.fit([(x, y)], validation_split=0.2, verbose=0), "validation_split"),
        (lambda: model.fit(x, y, validation_split=0.95, verbose=0), "not sufficient to split"),
        (lambda: model.fit([(x, y, y, y)], verbose=0), "Data is expected to be in format"),
    ):
        with pytest.raises(ValueError, match=message):
            fn()
    with pytest.raises(ValueError, match="functional"):
        K.Model([1], [2])


def test_fit_takes_a_dataset_whose_length_is_unknown_or_infinite():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 3)).astype(np.float32)
    y = (x.sum(1) > 0).astype(np.int32)
    m = sf.keras.Sequential([sf.keras.layers.Dense(2)])
    m.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    kept = sf.data.Dataset.from_tensor_slices((x, y)).filter(lambda a, b: b >= 0).batch(8)  # len() raises
    assert len(m.fit(kept, epochs=2, verbose=0).history["loss"]) == 2
    endless = sf.data.Dataset.from_tensor_slices((x, y)).batch(8).repeat()
    seen = []

    class Count(sf.keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append(batch)

    m.fit(endless, epochs=2, steps_per_epoch=3, verbose=0, callbacks=[Count()])
    assert seen == [0, 1, 2, 0, 1, 2]


def test_export_writes_a_savedmodel_serving_the_model(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 4)).astype(np.float32)
    m = sf.keras.Sequential([sf.keras.layers.Dense(3, activation="relu"), sf.keras.layers.Dense(2)])
    with pytest.raises(ValueError, match="has not been called yet"):
        m.export(tmp_path / "early", verbose=False)
    m.compile(optimizer="sgd", loss="mse")
    m.fit(x, rng.standard_normal((6, 2)).astype(np.float32), epochs=1, verbose=0)
    m.export(tmp_path / "m", verbose=False)
    loaded = sf.load(tmp_path / "m")
    np.testing.assert_allclose(loaded.serve(x).numpy(), m.predict(x, verbose=0), rtol=1e-6, atol=1e-6)
    out = loaded.signatures["serving_default"](x=x)
    np.testing.assert_allclose(next(iter(out.values())).numpy(), m.predict(x, verbose=0), rtol=1e-6, atol=1e-6)
    inp = sf.keras.Input((4,))
    functional = sf.keras.Model(inp, sf.keras.layers.Dense(2)(inp))
    functional.export(tmp_path / "f", verbose=False)  # the Input gives the spec
    np.testing.assert_allclose(sf.load(tmp_path / "f").serve(x).numpy(), functional(x).numpy(), rtol=1e-6)


def test_an_exported_model_serves_in_tensorflow(tmp_path):
    tf = pytest.importorskip("tensorflow")
    x = np.random.default_rng(1).standard_normal((5, 8, 8, 3)).astype(np.float32)
    m = sf.keras.Sequential([sf.keras.layers.Conv2D(4, 3, activation="relu"), sf.keras.layers.BatchNormalization(),
                             sf.keras.layers.Flatten(), sf.keras.layers.Dense(2)])
    m(x)
    m.export(tmp_path / "m", verbose=False)
    loaded = tf.saved_model.load(str(tmp_path / "m"))  # held: TF's loaded functions need their object alive
    np.testing.assert_allclose(loaded.serve(x).numpy(), m(x).numpy(), rtol=1e-5, atol=1e-6)
