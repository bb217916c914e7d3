"""Real models written as a TF2 user writes them (tests/api/tf_style_models.py: a CNN and a
transformer block trained by custom loops with Adam, a bidirectional LSTM + GRU tagger with
masking, tf.cond/tf.while_loop inside tf.function, variables made on the first call, retracing,
every Keras optimizer), run on specflow and compared with what TensorFlow 2.21 computed for the
same code (data/tf_style_models.npz): losses per step, gradients, final weights, trace counts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import specflow as sf

from . import tf_style_models as models

REFERENCE = np.load(Path(__file__).parent / "data" / "tf_style_models.npz")


def _compare(name: str, got: dict) -> None:
    want = {k.split("/", 1)[1]: REFERENCE[k] for k in REFERENCE.files if k.startswith(name + "/")}
    assert set(got) == set(want)
    for key, value in got.items():
        np.testing.assert_allclose(np.asarray(value), want[key], rtol=1e-5, atol=1e-6, err_msg=f"{name}/{key}")


@pytest.mark.parametrize("name", list(models.MODELS))
def test_model_matches_tensorflow(name):
    got = models.MODELS[name](sf, sf.optimizers)
    _compare(name, got)
    if "losses" in got and name != "control_flow":
        assert got["losses"][-1] < got["losses"][0]
    if "masked_out" in got:  # what padded steps hold changes nothing
        np.testing.assert_allclose(got["masked_out"], got["out0"], rtol=1e-6, atol=1e-6)


def test_retracing_matches_tensorflow():
    _compare("retracing", models.retracing(sf, lambda f: len(f.concrete_functions)))


def test_the_names_a_tf_user_reaches_for_are_exported():
    from specflow.api import TF_NAMES
    from specflow.api.tf_names import NAMES

    assert sorted(TF_NAMES) == NAMES
    for name in ("relu", "softmax", "conv2d", "max_pool2d", "dropout", "moments", "gelu",
                 "sparse_softmax_cross_entropy_with_logits", "sigmoid_cross_entropy_with_logits"):
        assert callable(getattr(sf.nn, name))
    for name in ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad"):
        assert issubclass(getattr(sf.optimizers, name), sf.optimizers.Optimizer)
    assert callable(sf.saved_model.save) and callable(sf.math.exp) and callable(sf.random.normal)


def test_a_spec_loaded_as_a_module_fine_tunes_with_an_optimizer_eagerly_and_in_a_function():
    """models/digits_mlp.yaml from Python: its serving signature under a tape, its variables
    updated by sf.optimizers; the same step inside sf.function gives the same numbers."""
    root = Path(__file__).resolve().parents[2]
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 64)).astype(np.float32)
    y = rng.integers(0, 10, 16)
    curves = []
    for in_function in (False, True):
        m = sf.load(root / "models" / "digits_mlp.yaml")
        opt = sf.optimizers.SGD(0.5, momentum=0.5)

        def step(x, y, m=m, opt=opt):
            with sf.GradientTape() as tape:
                probs = m.serving_default(images=x)["probabilities"]
                loss = -sf.reduce_mean(sf.math.log(sf.gather(probs, y, axis=1, batch_dims=1) + 1e-9))
            opt.apply_gradients(zip(tape.gradient(loss, m.trainable_variables), m.trainable_variables))
            return loss

        step = sf.function(step) if in_function else step
        curves.append([float(step(x, y)) for _ in range(4)])
        m.close()
    assert curves[0][-1] < 0.5 * curves[0][0]
    np.testing.assert_allclose(curves[1], curves[0], rtol=1e-5)


def test_keras_layers_in_sequential_models_match_keras():
    """sf.keras layers given Keras's initial weights (set_weights) train as Keras's do: losses per
    Adam step, outputs and the Keras losses (from logits and from probabilities); among them a
    masked (Embedding mask_zero) bidirectional LSTM feeding a GRU and a masked pooling, and a
    go_backwards LSTM."""
    weights = {}
    for name in ("cnn", "text", "rnn", "rnn_last"):
        count = sum(1 for k in REFERENCE.files if k.startswith(f"keras/{name}_weight"))
        weights[name] = [REFERENCE[f"keras/{name}_weight{i}"] for i in range(count)]
    got = models.keras_models(sf, sf.keras, weights)
    _compare("keras", got)
    for name in weights:
        assert got[f"{name}_losses"][-1] < got[f"{name}_losses"][0]


def test_keras_layers_build_on_first_call_and_explain_misuse():
    sf.keras.utils.set_random_seed(0)
    dense = sf.keras.layers.Dense(3, activation="relu")
    assert dense.weights == []
    y = dense(np.ones((2, 5), np.float32))
    assert y.shape.as_list() == [2, 3] and [w.shape.as_list() for w in dense.weights] == [[5, 3], [3]]
    limit = np.sqrt(6 / 8)  # Glorot uniform
    assert 0 < np.abs(dense.kernel.numpy()).max() <= limit
    with pytest.raises(sf.SpecflowError, match="unknown activation 'rleu'"):
        sf.keras.layers.Dense(2, activation="rleu")
    with pytest.raises(sf.SpecflowError, match="has 2 weight"):
        dense.set_weights([np.zeros((5, 3), np.float32)])
    drop = sf.keras.layers.Dropout(0.5, seed=1)
    x = np.ones((100,), np.float32)
    np.testing.assert_array_equal(drop(x).numpy(), x)  # inference: identity
    kept = drop(x, training=True).numpy()
    assert set(np.unique(kept)) <= {0.0, 2.0} and 20 < np.count_nonzero(kept) < 80
