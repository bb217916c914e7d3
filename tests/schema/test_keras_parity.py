"""Keras parity: a Keras layer's weights loaded into the spec layer give Keras's outputs to 1e-5.
Skipped where TensorFlow (Keras 3) is not importable."""

from __future__ import annotations

import numpy as np
import pytest

from tests.schema.layer_harness import LayerRun

keras = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

RNG = np.random.default_rng(5)
X = RNG.normal(size=(3, 6, 4)).astype(np.float32)
MASK = np.array([[1] * 6, [1, 1, 1, 1, 0, 0], [1, 1, 0, 0, 0, 0]], bool)


def compare(kind, keras_layer, keras_args, keras_kwargs, inputs, roles=None, **config):
    """Build the Keras layer on ``keras_args``, give its weights (randomized) to the spec layer,
    compare every output."""
    want = keras_layer(*keras_args, **keras_kwargs)  # builds the weights
    weights = [RNG.normal(size=w.shape).astype(np.float32) * 0.5 for w in keras_layer.get_weights()]
    keras_layer.set_weights(weights)
    want = keras_layer(*keras_args, **keras_kwargs)
    want = [np.asarray(w) for w in (want if isinstance(want, (list, tuple)) else [want])]
    run = LayerRun(kind, inputs, roles=roles, **config)
    names = list(run.weights())
    assert [run.weights()[n].shape for n in names] == [w.shape for w in weights], names
    run.set_weights(dict(zip(names, weights)))
    got = run.run()
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind, cls", [("lstm", "LSTM"), ("gru", "GRU"), ("simple_rnn", "SimpleRNN")])
@pytest.mark.parametrize("backwards", [False, True])
def test_rnn(kind, cls, backwards):
    layer = getattr(keras.layers, cls)(5, return_sequences=True, return_state=True, go_backwards=backwards)
    compare(kind, layer, [X], {"mask": MASK}, {"x": X, "m": MASK}, roles={"sequence": "x", "mask": "m"},
            units=5, return_sequences=True, return_state=True, go_backwards=backwards)


def test_gru_reset_before_and_last_output():
    layer = keras.layers.GRU(3, reset_after=False)
    compare("gru", layer, [X], {}, {"x": X}, units=3, reset_after=False)


@pytest.mark.parametrize("mode", ["concat", "sum"])
def test_bidirectional(mode):
    layer = keras.layers.Bidirectional(keras.layers.LSTM(3, return_sequences=True), merge_mode=mode)
    compare("bidirectional", layer, [X], {"mask": MASK}, {"x": X, "m": MASK}, roles={"sequence": "x", "mask": "m"},
            merge_mode=mode, rnn={"lstm": {"units": 3, "return_sequences": True}})


def test_bidirectional_initial_state():
    layer = keras.layers.Bidirectional(keras.layers.LSTM(3, return_sequences=True, return_state=True), merge_mode=None)
    init = [RNG.normal(size=(3, 3)).astype(np.float32) for _ in range(4)]
    names = ["forward_initial_h", "forward_initial_c", "backward_initial_h", "backward_initial_c"]
    compare("bidirectional", layer, [X], {"initial_state": init}, {"x": X, **dict(zip(names, init))},
            roles={"sequence": "x", **{n: n for n in names}}, merge_mode=None,
            rnn={"lstm": {"units": 3, "return_sequences": True, "return_state": True}})


def test_multi_head_attention():
    q = RNG.normal(size=(3, 5, 6)).astype(np.float32)
    pad = np.ones((3, 5, 6), bool)
    pad[1, :, 4:] = False
    layer = keras.layers.MultiHeadAttention(num_heads=2, key_dim=3, value_dim=4)
    compare("multi_head_attention", layer, [q, X], {"attention_mask": pad}, {"q": q, "v": X, "m": pad},
            roles={"query": "q", "value": "v", "mask": "m"}, num_heads=2, key_dim=3, value_dim=4)
    layer = keras.layers.MultiHeadAttention(num_heads=3, key_dim=2)
    compare("multi_head_attention", layer, [X, X], {"use_causal_mask": True}, {"x": X}, num_heads=3, key_dim=2,
            causal=True)
    layer = keras.layers.MultiHeadAttention(num_heads=2, key_dim=2)
    compare("multi_head_attention", layer, [X, X], {"return_attention_scores": True}, {"x": X}, num_heads=2,
            key_dim=2, return_attention_scores=True)


def test_multi_head_attention_masked_rows_and_query_mask():
    """A row with every key masked: Keras 3 gives it zero weights; Keras's query mask (what an
    Embedding(mask_zero=True) propagates) is the layer's query_mask role."""
    pad = np.ones((3, 6, 6), bool)
    pad[0, 2] = False
    pad[2, :, 3:] = False
    layer = keras.layers.MultiHeadAttention(num_heads=2, key_dim=3)
    compare("multi_head_attention", layer, [X, X], {"attention_mask": pad, "return_attention_scores": True},
            {"x": X, "m": pad}, roles={"query": "x", "mask": "m"}, num_heads=2, key_dim=3,
            return_attention_scores=True)
    import tensorflow as tf

    def masked():  # tensors carrying Keras masks, as after an Embedding (each call clears them)
        query, value = tf.constant(X), tf.constant(X)
        keras.src.backend.set_keras_mask(query, tf.constant(MASK))
        keras.src.backend.set_keras_mask(value, tf.constant(MASK))
        return query, value

    layer = keras.layers.MultiHeadAttention(num_heads=2, key_dim=3)
    layer(*masked())
    weights = [RNG.normal(size=w.shape).astype(np.float32) * 0.5 for w in layer.get_weights()]
    layer.set_weights(weights)
    want = layer(*masked(), use_causal_mask=True, return_attention_scores=True)
    run = LayerRun("multi_head_attention", {"x": X, "m": MASK}, roles={"query": "x", "mask": "m", "query_mask": "m"},
                   num_heads=2, key_dim=3, causal=True, return_attention_scores=True)
    run.set_weights(dict(zip(run.weights(), weights)))
    for got, w in zip(run.run(), want):
        np.testing.assert_allclose(got, np.asarray(w), rtol=1e-5, atol=1e-5)


def test_norms_convs_and_activations():
    compare("layer_norm", keras.layers.LayerNormalization(epsilon=1e-3), [X], {}, {"x": X})
    compare("group_norm", keras.layers.GroupNormalization(groups=2), [X], {}, {"x": X}, groups=2)
    compare("group_norm", keras.layers.GroupNormalization(groups=3, axis=1), [X], {}, {"x": X}, groups=3, axis=1)
    compare("conv1d", keras.layers.Conv1D(3, 3, padding="causal", dilation_rate=2), [X], {}, {"x": X},
            filters=3, kernel_size=3, padding="causal", dilation_rate=2)
    img = RNG.normal(size=(2, 3, 4, 2)).astype(np.float32)
    for padding in ("valid", "same"):
        compare("conv2d_transpose", keras.layers.Conv2DTranspose(3, 3, strides=2, padding=padding), [img], {},
                {"x": img}, filters=3, kernel_size=3, strides=2, padding=padding)
    compare("upsampling2d", keras.layers.UpSampling2D((2, 3)), [img], {}, {"x": img}, size=[2, 3])
    compare("depthwise_conv2d", keras.layers.DepthwiseConv2D(3, depth_multiplier=2, padding="same"), [img], {},
            {"x": img}, kernel_size=3, depth_multiplier=2, padding="same")
    compare("separable_conv2d", keras.layers.SeparableConv2D(3, 2, strides=2), [img], {}, {"x": img},
            filters=3, kernel_size=2, strides=2)
    for name, fn in [("silu", "silu"), ("hard_sigmoid", "hard_sigmoid"), ("softplus", "softplus")]:
        want = np.asarray(getattr(keras.activations, fn)(X))
        np.testing.assert_allclose(LayerRun(name, {"x": X}).run()[0], want, rtol=1e-5, atol=1e-6)
    for approximate in (True, False):
        want = np.asarray(keras.activations.gelu(X, approximate=approximate))
        got = LayerRun("gelu", {"x": X}, approximate=approximate).run()[0]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
