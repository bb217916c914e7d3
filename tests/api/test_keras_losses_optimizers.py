"""Keras 3's losses (api/keras_loss_base.py, api/keras_losses_more.py) and optimizers
(api/keras_optimizers.py): integer labels of shape (N, 1), ``reduction=``, ``label_smoothing=``,
``ignore_class=``, Poisson / MeanSquaredLogarithmicError / BinaryFocalCrossentropy, Adamax, Nadam,
Adadelta, Ftrl and the clipping options. The expected numbers are Keras 3.15's (TensorFlow
2.21), computed outside the repository from the same inputs."""

from __future__ import annotations

import numpy as np
import pytest

import specflow as sf

K = sf.keras
LOGITS = np.array([[1.0, -0.5, 2.0], [0.3, 0.2, -1.0], [-2.0, 1.5, 0.5], [0.0, 0.1, 0.2]], np.float32)
PROBS = np.array([[0.2, 0.5, 0.3], [0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.3, 0.3, 0.4]], np.float32)
LAB = np.array([[2], [0], [1], [1]])
ONEHOT = np.eye(3, dtype=np.float32)[LAB[:, 0]]
YB = np.array([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 0]], np.float32)
SW = np.array([1.0, 0.5, 0.0, 2.0], np.float32)
PER_SAMPLE = [0.37153908610343933, 0.778117299079895, 0.3350975513458252, 1.1019428968429565]
L = K.losses

KERAS = [  # (loss, y_true, y_pred, sample_weight, Keras 3.15's value)
    (lambda: L.SparseCategoricalCrossentropy(from_logits=True), LAB, LOGITS, None, 0.6466742157936096),
    (lambda: L.SparseCategoricalCrossentropy(), LAB, PROBS, SW, 0.9475640058517456),
    (lambda: L.SparseCategoricalCrossentropy(from_logits=True, ignore_class=1), LAB, LOGITS, None, 0.5748282074928284),
    (lambda: L.SparseCategoricalCrossentropy(from_logits=True, reduction="sum"), LAB, LOGITS, None, 2.5866968631744385),
    (lambda: L.SparseCategoricalCrossentropy(from_logits=True, reduction="none"), LAB, LOGITS, None, PER_SAMPLE),
    (lambda: L.CategoricalCrossentropy(label_smoothing=0.2), ONEHOT, PROBS, None, 1.2789044380187988),
    (lambda: L.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1, reduction="sum"), ONEHOT, LOGITS, None,
     2.9000303745269775),
    (lambda: L.BinaryCrossentropy(label_smoothing=0.2), YB, PROBS, None, 1.2163026332855225),
    (lambda: L.BinaryCrossentropy(from_logits=True, reduction="none"), YB, LOGITS, None,
     [0.3047555685043335, 0.9885852932929993, 1.1008061170578003, 0.7118942141532898]),
    (lambda: L.BinaryFocalCrossentropy(), YB, PROBS, None, 0.8101039528846741),
    (lambda: L.BinaryFocalCrossentropy(apply_class_balancing=True, alpha=0.4, gamma=1.5, from_logits=True,
                                       label_smoothing=0.1), YB, LOGITS, None, 0.17903690040111542),
    (lambda: L.Poisson(), YB * 2, PROBS * 3, None, 1.7222437858581543),
    (lambda: L.MeanSquaredLogarithmicError(), YB * 2, PROBS * 3, None, 0.648513913154602),
    (lambda: L.MeanSquaredError(reduction="mean_with_sample_weight"), YB, PROBS, SW, 0.33619049191474915),
]


@pytest.mark.parametrize("case", range(len(KERAS)))
def test_losses_match_keras(case):
    make, y_true, y_pred, sw, want = KERAS[case]
    got = make()(y_true, y_pred, sample_weight=sw)
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6, atol=1e-7)


def test_sparse_labels_of_shape_n_by_1_in_functions_metrics_and_fit():
    np.testing.assert_allclose(np.asarray(L.sparse_categorical_crossentropy(LAB, LOGITS, from_logits=True)),
                               PER_SAMPLE, rtol=2e-6)
    acc = K.metrics.SparseCategoricalAccuracy()
    acc.update_state(LAB, PROBS)
    assert float(acc.result()) == 0.25  # Keras's
    seq_labels = np.array([[0, 1, 2], [2, 2, 0]])  # [batch, steps] labels of [batch, steps, classes] logits
    seq_logits = np.stack([LOGITS[:3], LOGITS[1:]])
    want = -np.log(np.take_along_axis(np.exp(seq_logits) / np.exp(seq_logits).sum(-1, keepdims=True),
                                      seq_labels[..., None], -1)).mean()
    assert float(L.SparseCategoricalCrossentropy(from_logits=True)(seq_labels, seq_logits)) == pytest.approx(want,
                                                                                                           rel=1e-5)
    model = K.Sequential([K.Input((3,)), K.layers.Dense(3)])
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    assert sorted(model.fit(np.ones((4, 3), np.float32), LAB, epochs=1, verbose=0).history) == ["accuracy", "loss"]


def test_reduction_names_are_checked_and_compile_takes_the_new_losses():
    with pytest.raises(ValueError, match="reduction"):
        L.MeanSquaredError(reduction="average")
    x = np.abs(np.random.default_rng(0).standard_normal((8, 3))).astype(np.float32)
    for name in ("poisson", "mean_squared_logarithmic_error", "msle", "binary_focal_crossentropy", "Poisson"):
        model = K.Sequential([K.Input((3,)), K.layers.Dense(3, activation="sigmoid")])
        model.compile(optimizer="sgd", loss=name)
        assert np.isfinite(model.evaluate(x, (x > 0.5).astype(np.float32), verbose=0))


W0 = np.array([0.5, -1.0, 2.0], np.float32)
OPTIMIZERS = [  # 10 steps of the gradients below from W0: Keras 3.15's results
    ("Adamax", {"learning_rate": 0.05}, [0.38994306325912476, -1.035972237586975, 1.5000004768371582]),
    ("Nadam", {"learning_rate": 0.05}, [0.4503736197948456, -1.0078378915786743, 1.6112697124481201]),
    ("Adadelta", {"learning_rate": 1.0}, [0.49947595596313477, -0.9989500045776367, 1.9854044914245605]),
    ("Ftrl", {"learning_rate": 0.1, "l1_regularization_strength": 0.01, "l2_regularization_strength": 0.02,
              "beta": 0.5}, [0.2881506681442261, -0.007026012521237135, 0.1909073442220688]),
    ("SGD", {"learning_rate": 0.1, "clipnorm": 1.0}, [0.4684413969516754, -0.826935887336731, 1.7735073566436768]),
    ("SGD", {"learning_rate": 0.1, "clipvalue": 0.5}, [0.47909998893737793, -0.8499999046325684, 1.5000004768371582]),
    ("Adam", {"learning_rate": 0.1, "global_clipnorm": 1.0},
     [0.24414309859275818, -0.9741203784942627, 1.0215234756469727]),
    ("SGD", {"learning_rate": 0.1, "weight_decay": 0.5},
     [0.26939135789871216, -0.47911742329597473, 0.7962111830711365]),
]


@pytest.mark.parametrize("case", range(len(OPTIMIZERS)))
def test_optimizers_match_keras_over_ten_steps(case):
    name, kwargs, want = OPTIMIZERS[case]
    v = sf.Variable(W0.copy())
    opt = getattr(K.optimizers, name)(**kwargs)
    for t in range(10):
        g = np.array([np.cos(t) * 2, np.sin(2 * t) * 3, 0.5], np.float32)
        if t % 2:
            opt.apply([g], [v])  # Keras's apply(grads, variables)
        else:
            opt.apply_gradients([(g, v)])
    np.testing.assert_allclose(v.numpy(), want, rtol=2e-6, atol=2e-7)
    assert int(opt.iterations.numpy()) == 10


def test_optimizer_options_and_names():
    with pytest.raises(ValueError, match="Only one of"):
        K.optimizers.SGD(clipnorm=1.0, clipvalue=1.0)
    assert isinstance(K.optimizers.Adam(), sf.optimizers.Adam)  # sf's rule, Keras's options
    v = sf.Variable(np.ones(2, np.float32))
    opt = K.optimizers.SGD(0.1)
    with pytest.raises(ValueError, match="must already be built"):
        opt.apply([np.ones(2, np.float32)])
    opt.build([v])
    opt.apply([np.ones(2, np.float32)])  # the variables it was built on
    np.testing.assert_allclose(v.numpy(), [0.9, 0.9], rtol=1e-6)
    model = K.Sequential([K.Input((2,)), K.layers.Dense(1)])
    for name in ("adamax", "nadam", "adadelta", "ftrl"):
        model.compile(optimizer=name, loss="mse")
        assert type(model.optimizer).__name__.lower() == name
    nadam = K.optimizers.Nadam()
    assert [x.name for x in nadam.variables] == ["iteration", "u_product"]
