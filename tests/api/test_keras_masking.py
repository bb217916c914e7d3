"""Keras 3's masks (api/keras_masking.py): ``Embedding(mask_zero=True)``'s and ``Masking``'s
masks flow through functional models, Sequential and eager layer calls; layers that support
masking pass them on or consume them, merge layers combine them, the others drop them. The
checks are Keras's semantics against references that need no TensorFlow: a masked recurrent
layer on a padded row equals the same layer on the unpadded row (the outputs of this file's
models matched Keras 3.15 to 2.4e-7 outside the repository, fit histories to 2.4e-7)."""

from __future__ import annotations

import numpy as np
import pytest

import specflow as sf
from specflow.api.keras_masking import get_mask

K = sf.keras
L = sf.keras.layers
IDS = np.array([[3, 5, 0, 0, 0], [2, 7, 1, 4, 0], [1, 2, 3, 4, 5]], np.int32)
LENGTHS = (IDS != 0).sum(1)


def _close(a, b, tol=1e-6):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def _per_row(fn):
    """fn on each row's unpadded prefix alone (no mask involved), stacked."""
    return np.concatenate([np.asarray(fn(IDS[i:i + 1, :n])) for i, n in enumerate(LENGTHS)])


@pytest.mark.parametrize("kind", ["lstm", "gru", "simple_rnn", "bidirectional"])
def test_functional_recurrent_layer_skips_the_padding(kind):
    emb = L.Embedding(10, 4, mask_zero=True)
    rnn = {"lstm": lambda: L.LSTM(3), "gru": lambda: L.GRU(3), "simple_rnn": lambda: L.SimpleRNN(3),
           "bidirectional": lambda: L.Bidirectional(L.LSTM(3))}[kind]()
    inp = K.Input((5,), dtype="int32")
    model = K.Model(inp, rnn(emb(inp)))
    plain = L.Embedding(10, 4)  # the same weights, no mask: the reference on unpadded rows
    plain(IDS)
    plain.set_weights(emb.get_weights())
    got = model(IDS).numpy()
    _close(got, _per_row(lambda ids: rnn(plain(ids))))
    unmasked = rnn(plain(IDS)).numpy()  # what the functional model gave before masks flowed
    assert not np.allclose(got[:2], unmasked[:2], atol=1e-4)


def test_sequences_then_global_average_pooling_average_the_valid_steps():
    emb, gru, pool = L.Embedding(10, 4, mask_zero=True), L.GRU(3, return_sequences=True), L.GlobalAveragePooling1D()
    inp = K.Input((5,), dtype="int32")
    model = K.Model(inp, pool(gru(emb(inp))))
    plain = L.Embedding(10, 4)
    plain(IDS)
    plain.set_weights(emb.get_weights())
    _close(model(IDS), _per_row(lambda ids: np.asarray(gru(plain(ids))).mean(1, keepdims=True)[:, 0]))
    seq = K.Sequential([emb, gru, pool])  # the same layers in a Sequential: the same masks
    _close(seq(IDS), model(IDS))
    _close(pool(gru(emb(IDS))), model(IDS))  # and called eagerly, one after the other


def test_embedding_sets_the_mask_and_layers_pass_it_on_or_end_it():
    emb = L.Embedding(10, 4, mask_zero=True)
    e = emb(IDS)
    np.testing.assert_array_equal(get_mask(e).numpy(), IDS != 0)
    assert get_mask(L.Embedding(10, 4)(IDS)) is None
    for layer in (L.Dense(2), L.Dropout(0.5), L.LayerNormalization(), L.Activation("relu"), L.ReLU()):
        assert get_mask(layer(e)) is get_mask(e), layer
    assert get_mask(L.LSTM(2, return_sequences=True)(e)) is get_mask(e)
    assert get_mask(L.LSTM(2)(e)) is None and get_mask(L.GlobalAveragePooling1D()(e)) is None
    out, h, c = L.LSTM(2, return_sequences=True, return_state=True)(e)
    assert get_mask(out) is get_mask(e) and get_mask(h) is None and get_mask(c) is None
    with pytest.warns(UserWarning, match="does not support masking"):
        conv = L.Conv1D(2, 2, padding="same")(e)
    assert get_mask(conv) is None


def test_merge_layers_combine_masks_as_keras():
    a = L.Embedding(10, 3, mask_zero=True)(IDS)
    shifted = np.where(np.arange(5) < 3, IDS, 0).astype(np.int32)  # fewer valid steps
    b = L.Embedding(10, 3, mask_zero=True)(shifted)
    ma, mb = IDS != 0, shifted != 0
    np.testing.assert_array_equal(get_mask(L.Add()([a, b])).numpy(), ma | mb)
    assert get_mask(L.Add()([a, L.Dense(3)(L.Embedding(10, 3)(IDS))])) is None  # one unmasked input: none
    cat = L.Concatenate()([a, L.Embedding(10, 3)(IDS)])
    np.testing.assert_array_equal(get_mask(cat).numpy(), np.ones_like(ma))  # unmasked counts as all valid
    av, bv, keep_a, keep_b = a.numpy(), b.numpy(), ma[..., None], mb[..., None]
    prod = L.Multiply()([a, b])  # masked steps multiply as 1, all-masked steps give 0
    _close(prod, np.where(keep_a | keep_b, np.where(keep_a, av, 1) * np.where(keep_b, bv, 1), 0))
    biggest = L.Maximum()([a, b])  # a masked step takes the other input's value
    _close(biggest, np.maximum(np.where(keep_a, av, np.where(keep_b, bv, av)), np.where(keep_b, bv, av)))
    assert get_mask(L.Dot(axes=2)([a, b])) is None


def test_add_of_two_masked_branches_feeds_an_lstm_the_union_mask():
    inp = K.Input((5,), dtype="int32")
    e1, e2, lstm = L.Embedding(10, 4, mask_zero=True), L.Embedding(10, 4, mask_zero=True), L.LSTM(3)
    model = K.Model(inp, lstm(L.Add()([e1(inp), e2(inp)])))
    s1, s2 = L.Embedding(10, 4), L.Embedding(10, 4)
    s1(IDS), s2(IDS)
    s1.set_weights(e1.get_weights()), s2.set_weights(e2.get_weights())
    _close(model(IDS), _per_row(lambda ids: lstm(s1(ids) + s2(ids))))


def test_attention_masks_and_keras_graph_masks_after_it():
    """MultiHeadAttention uses the query's and value's masks and clears its inputs' masks as it
    runs (Keras's); in a functional model a layer taking ``mask`` still gets the mask the graph
    propagated when it was built, so the pooling after a residual Add is masked."""
    emb, mha, add, pool = L.Embedding(10, 4, mask_zero=True), L.MultiHeadAttention(2, 3), L.Add(), \
        L.GlobalAveragePooling1D()
    inp = K.Input((5,), dtype="int32")
    e_sym = emb(inp)
    model = K.Model(inp, pool(add([e_sym, mha(e_sym, e_sym)])))
    e = emb(IDS)
    keep = IDS != 0
    att = mha(e, e)
    assert get_mask(e) is None and get_mask(att) is not None  # cleared inputs; the output has the query's
    unmasked = L.MultiHeadAttention(2, 3)
    unmasked(np.zeros((1, 5, 4), np.float32), np.zeros((1, 5, 4), np.float32))
    unmasked.set_weights(mha.get_weights())
    ev = e.numpy()
    explicit = mha(ev, ev, attention_mask=keep[:, None, :] & keep[:, :, None]).numpy()
    _close(att, explicit)
    assert not np.allclose(att.numpy(), unmasked(ev, ev).numpy(), atol=1e-4)
    summed = ev + explicit
    want = (summed * keep[..., None]).sum(1) / keep.sum(1, keepdims=True)
    _close(model(IDS), want, 1e-5)


def test_masking_layer_and_a_mask_given_to_the_model():
    x = np.random.default_rng(0).standard_normal((3, 5, 2)).astype(np.float32)
    x[IDS == 0] = 0.0
    inp = K.Input((5, 2))
    lstm = L.LSTM(3)
    model = K.Model(inp, lstm(L.Masking(0.0)(inp)))
    _close(model(x), np.concatenate([lstm(x[i:i + 1, :n]).numpy() for i, n in enumerate(LENGTHS)]))
    inp2 = K.Input((5, 2))
    given = K.Model(inp2, lstm(inp2))  # no Masking: the mask comes with the call
    with pytest.warns(UserWarning, match="does not support masking"):  # Keras warns too (a Model drops it)
        _close(given(x, mask=IDS != 0), model(x))
    masked = L.Masking(0.0)(x)
    np.testing.assert_array_equal(get_mask(masked).numpy(), IDS != 0)


def test_batch_normalization_training_moments_skip_masked_steps():
    e = L.Embedding(10, 3, mask_zero=True)(IDS)
    bn = L.BatchNormalization(momentum=0.0)
    bn(e, training=True)
    values = e.numpy()[IDS != 0]
    _close(bn.moving_mean, values.mean(0), 1e-5)
    _close(bn.moving_variance, values.var(0), 1e-4)


def test_custom_layers_take_mask_and_compute_mask_as_in_keras():
    class Scale(L.Layer):
        def call(self, inputs, mask=None):  # gets the mask; compute_mask overridden: supports masking
            self.seen = mask
            return inputs * 2.0

        def compute_mask(self, inputs, mask=None):
            return None if mask is None else sf.logical_not(mask)

    e = L.Embedding(10, 3, mask_zero=True)(IDS)
    layer = Scale()
    out = layer(e)
    np.testing.assert_array_equal(layer.seen.numpy(), IDS != 0)
    np.testing.assert_array_equal(get_mask(out).numpy(), IDS == 0)
    lam = L.Lambda(lambda t: t * 3.0, mask=lambda t, m: m)
    assert lam.supports_masking and get_mask(lam(e)) is get_mask(e)
    with pytest.warns(UserWarning, match="does not support masking"):
        assert get_mask(L.Lambda(lambda t: t * 1.0)(e)) is None  # Lambda without mask= ends it


def test_fit_on_a_masked_sequence_output_masks_the_loss_and_metrics():
    rng = np.random.default_rng(0)
    y = np.where(IDS > 0, rng.integers(0, 3, IDS.shape), 0)
    inp = K.Input((5,), dtype="int32")
    model = K.Model(inp, L.Dense(3)(L.LSTM(4, return_sequences=True)(L.Embedding(10, 4, mask_zero=True)(inp))))
    model.compile(optimizer=K.optimizers.SGD(0.1), loss=K.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    logits = model.predict(IDS, verbose=0)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    ce = -np.take_along_axis(logp, y[..., None], -1)[..., 0]
    keep = IDS != 0
    loss, acc = model.evaluate(IDS, y, verbose=0)
    assert loss == pytest.approx(ce[keep].mean(), rel=1e-5)  # the mean over the valid steps only
    assert acc == pytest.approx((logits.argmax(-1) == y)[keep].mean(), rel=1e-6)
    hist = model.fit(IDS, y, epochs=2, batch_size=3, verbose=0)
    assert hist.history["loss"][0] == pytest.approx(loss, rel=1e-5)
