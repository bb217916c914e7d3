"""The added sf.keras layers (api/keras_layers_more.py, api/keras_layers_blocks.py) against numpy
references written here: BatchNormalization's batch moments and moving update (eagerly and in
``fit``), Conv1D/Conv2DTranspose/DepthwiseConv2D/SeparableConv2D against loops, MultiHeadAttention
against an einsum implementation of Keras's math, the merge and reshaping layers, and finite-
difference gradients. (Against Keras itself the layers agree to ~1e-7; that comparison lives
outside the repository, Keras being no dependency.)"""

from __future__ import annotations

import numpy as np
import pytest

import specflow as sf

L = sf.keras.layers
RNG = np.random.default_rng(0)


def _r(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _randomize(layer, x, *more):
    layer(x, *more)
    layer.set_weights([w + 0.3 * _r(*w.shape) for w in layer.get_weights()])
    return [w.numpy() for w in layer.weights]


def _fd_check(fn, x, eps=1e-2, n=6, tol=2e-2):
    """d sum(fn(x) * probe) / dx by the tape against central differences at a few entries."""
    x = x.astype(np.float64).astype(np.float32)
    probe = _r(*np.shape(fn(sf.constant(x)).numpy()))
    xt = sf.constant(x)
    with sf.GradientTape() as tape:
        tape.watch(xt)
        loss = sf.reduce_sum(fn(xt) * probe)
    g = tape.gradient(loss, xt).numpy()
    for flat in RNG.choice(x.size, n, replace=False):
        idx = np.unravel_index(flat, x.shape)
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        fd = (np.sum(fn(sf.constant(xp)).numpy() * probe) - np.sum(fn(sf.constant(xm)).numpy() * probe)) / (2 * eps)
        assert abs(fd - g[idx]) <= tol * max(1.0, abs(fd)), (idx, fd, g[idx])


# --- BatchNormalization ----------------------------------------------------------------------------

def test_batch_norm_training_uses_batch_moments_and_updates_moving_stats():
    x = _r(6, 3, 4) * 2 + 1
    bn = L.BatchNormalization(momentum=0.8, epsilon=1e-3)
    bn.build([6, 3, 4])
    bn.built = True
    gamma, beta = _r(4), _r(4)
    mm0, mv0 = _r(4), np.abs(_r(4)) + 0.5
    bn.set_weights([gamma, beta, mm0, mv0])
    assert [w.trainable for w in bn.weights] == [True, True, False, False]
    y = bn(x, training=True).numpy()
    mean, var = x.mean(axis=(0, 1)), x.var(axis=(0, 1))  # the biased variance, as Keras 3
    np.testing.assert_allclose(y, (x - mean) / np.sqrt(var + 1e-3) * gamma + beta, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(bn.moving_mean.numpy(), mm0 * 0.8 + mean * 0.2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bn.moving_variance.numpy(), mv0 * 0.8 + var * 0.2, rtol=1e-5, atol=1e-6)
    mm1, mv1 = bn.moving_mean.numpy(), bn.moving_variance.numpy()
    for training in (False, None):
        y = bn(x, training=training).numpy()
        np.testing.assert_allclose(y, (x - mm1) / np.sqrt(mv1 + 1e-3) * gamma + beta, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(bn.moving_mean.numpy(), mm1)  # inference leaves them


def test_batch_norm_axis_1_and_gradient():
    x = _r(5, 3, 4)
    bn = L.BatchNormalization(axis=1, center=False)
    bn(x)
    assert [w.shape.as_list() for w in bn.weights] == [[3], [3], [3]]
    y = bn(x, training=True).numpy()
    mean, var = x.mean(axis=(0, 2), keepdims=True), x.var(axis=(0, 2), keepdims=True)
    np.testing.assert_allclose(y, (x - mean) / np.sqrt(var + 1e-3), rtol=1e-4, atol=1e-5)
    _fd_check(lambda t: L.BatchNormalization()(t, training=True) ** 2, _r(4, 3))


def test_batch_norm_in_fit_updates_moving_stats_in_the_traced_step():
    x = _r(16, 3) * 2 + 3
    y = _r(16, 1)
    model = sf.keras.Sequential([L.BatchNormalization(momentum=0.5), L.Dense(1)])
    model(x[:2])
    bn = model.layers[0]
    model.compile(sf.keras.optimizers.SGD(0.0), "mse")  # lr 0: only the moving stats change
    model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    mm, mv = np.zeros(3), np.ones(3)
    for b in (x[:8], x[8:]):
        mm, mv = mm * 0.5 + b.mean(0) * 0.5, mv * 0.5 + b.var(0) * 0.5
    np.testing.assert_allclose(bn.moving_mean.numpy(), mm, rtol=1e-5)
    np.testing.assert_allclose(bn.moving_variance.numpy(), mv, rtol=1e-5)
    w, b = model.layers[1].get_weights()
    expected = ((x - mm) / np.sqrt(mv + 1e-3)) @ w + b
    np.testing.assert_allclose(model.predict(x, verbose=0), expected, rtol=1e-4, atol=1e-5)
    assert len(model.trainable_weights) == 4 and len(model.non_trainable_weights) == 2


# --- convolutions ----------------------------------------------------------------------------------

def _conv1d_ref(x, k, b, stride, dilation, pad_left, pad_right):
    x = np.pad(x, [(0, 0), (pad_left, pad_right), (0, 0)])
    span = dilation * (k.shape[0] - 1) + 1
    steps = (x.shape[1] - span) // stride + 1
    return np.stack([np.einsum("nkc,kcf->nf", x[:, t * stride:t * stride + span:dilation], k)
                     for t in range(steps)], axis=1) + b


@pytest.mark.parametrize("padding,stride,dilation,pads", [
    ("valid", 1, 2, (0, 0)), ("same", 2, 1, (1, 1)), ("causal", 1, 2, (4, 0))])
def test_conv1d_against_a_loop(padding, stride, dilation, pads):
    x = _r(2, 9, 3)
    layer = L.Conv1D(4, 3, strides=stride, padding=padding, dilation_rate=dilation)
    k, b = _randomize(layer, x)
    assert k.shape == (3, 3, 4) and b.shape == (4,)
    np.testing.assert_allclose(layer(x).numpy(), _conv1d_ref(x, k, b, stride, dilation, *pads), rtol=1e-5, atol=1e-5)


def test_conv2d_transpose_against_scattered_kernels():
    x = _r(2, 3, 4, 2)
    layer = L.Conv2DTranspose(3, 3, strides=2, padding="valid")
    k, b = _randomize(layer, x)
    assert k.shape == (3, 3, 3, 2)  # [kh, kw, filters, in]: Keras's
    ref = np.zeros((2, 2 * 3 + 1, 2 * 4 + 1, 3), np.float32)  # in * stride + max(k - stride, 0)
    for i in range(3):
        for j in range(4):
            ref[:, 2 * i:2 * i + 3, 2 * j:2 * j + 3] += np.einsum("nc,hwfc->nhwf", x[:, i, j], k)
    np.testing.assert_allclose(layer(x).numpy(), ref + b, rtol=1e-5, atol=1e-5)
    same = L.Conv2DTranspose(3, 3, strides=2, padding="same")
    assert same(x).shape.as_list() == [2, 6, 8, 3]


def test_depthwise_and_separable_against_loops():
    x = _r(2, 5, 5, 3)
    dw = L.DepthwiseConv2D(3, depth_multiplier=2)
    k, b = _randomize(dw, x)
    ref = np.zeros((2, 3, 3, 3, 2), np.float32)
    for i in range(3):
        for j in range(3):
            ref[:, i, j] = np.einsum("nhwc,hwcm->ncm", x[:, i:i + 3, j:j + 3], k)
    np.testing.assert_allclose(dw(x).numpy(), ref.reshape(2, 3, 3, 6) + b, rtol=1e-5, atol=1e-5)
    sep = L.SeparableConv2D(4, 3, depth_multiplier=2, activation="relu")
    dk, pk, sb = _randomize(sep, x)
    assert (dk.shape, pk.shape, sb.shape) == ((3, 3, 3, 2), (1, 1, 6, 4), (4,))
    depth = np.zeros((2, 3, 3, 3, 2), np.float32)
    for i in range(3):
        for j in range(3):
            depth[:, i, j] = np.einsum("nhwc,hwcm->ncm", x[:, i:i + 3, j:j + 3], dk)
    ref = np.maximum(depth.reshape(2, 3, 3, 6) @ pk[0, 0] + sb, 0)
    np.testing.assert_allclose(sep(x).numpy(), ref, rtol=1e-5, atol=1e-5)


def test_conv_gradients_against_finite_differences():
    conv = L.Conv1D(2, 3, padding="same")
    _fd_check(conv, _r(2, 5, 2))
    tconv = L.Conv2DTranspose(2, 2, strides=2)
    _fd_check(tconv, _r(1, 3, 3, 2))


# --- pooling and reshaping -------------------------------------------------------------------------

def test_pooling_upsampling_padding_cropping():
    x = _r(2, 6, 3)
    np.testing.assert_allclose(L.MaxPooling1D(2)(x).numpy(), x.reshape(2, 3, 2, 3).max(2))
    np.testing.assert_allclose(L.AveragePooling1D(3)(x).numpy(), x.reshape(2, 2, 3, 3).mean(2), rtol=1e-6)
    np.testing.assert_allclose(L.GlobalMaxPooling1D()(x).numpy(), x.max(1))
    x4 = _r(2, 3, 4, 2)
    np.testing.assert_allclose(L.GlobalMaxPooling2D(keepdims=True)(x4).numpy(), x4.max((1, 2), keepdims=True))
    up = L.UpSampling2D((2, 3))(x4).numpy()
    np.testing.assert_array_equal(up, x4.repeat(2, axis=1).repeat(3, axis=2))
    padded = L.ZeroPadding2D(((1, 2), (0, 1)))(x4).numpy()
    np.testing.assert_array_equal(padded, np.pad(x4, [(0, 0), (1, 2), (0, 1), (0, 0)]))
    np.testing.assert_array_equal(L.Cropping2D(((1, 0), (1, 2)))(x4).numpy(), x4[:, 1:, 1:2])


def test_reshape_permute_repeat_vector():
    x = _r(2, 3, 4)
    np.testing.assert_array_equal(L.Reshape((-1, 2))(x).numpy(), x.reshape(2, 6, 2))
    np.testing.assert_array_equal(L.Reshape((4, 3))(x).numpy(), x.reshape(2, 4, 3))
    np.testing.assert_array_equal(L.Permute((2, 1))(x).numpy(), x.transpose(0, 2, 1))
    v = _r(2, 5)
    np.testing.assert_array_equal(L.RepeatVector(3)(v).numpy(), np.repeat(v[:, None], 3, axis=1))
    with pytest.raises(Exception, match="permutation"):
        L.Permute((1, 3))


# --- activations and merges ------------------------------------------------------------------------

def test_activation_layers():
    x = _r(3, 5) * 3
    np.testing.assert_allclose(L.LeakyReLU()(x).numpy(), np.where(x > 0, x, 0.3 * x), rtol=1e-6)
    np.testing.assert_allclose(L.ReLU(max_value=1.0)(x).numpy(), np.clip(x, 0, 1))
    np.testing.assert_allclose(L.ReLU(negative_slope=0.1, threshold=0.5)(x).numpy(),
                               np.where(x > 0.5, x, 0) - 0.1 * np.maximum(0.5 - x, 0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(L.ELU(0.5)(x).numpy(), np.where(x > 0, x, 0.5 * np.expm1(x)), rtol=1e-5, atol=1e-6)
    e = np.exp(x - x.max(0))
    np.testing.assert_allclose(L.Softmax(axis=0)(x).numpy(), e / e.sum(0), rtol=1e-5)
    mask = np.array([[1, 1, 0, 1, 0]] * 3, bool)
    e = np.where(mask, np.exp(x - x.max(1, keepdims=True)), 0)
    np.testing.assert_allclose(L.Softmax()(x, mask=mask).numpy(), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(L.Activation("tanh")(x).numpy(), np.tanh(x), rtol=1e-5)
    np.testing.assert_array_equal(L.Lambda(lambda t: t * 2)(x).numpy(), x * 2)
    np.testing.assert_array_equal(L.Identity()(x).numpy(), x)


def test_merge_layers():
    a, b, c = _r(2, 3), _r(2, 3), _r(2, 3)
    np.testing.assert_allclose(L.Add()([a, b, c]).numpy(), a + b + c, rtol=1e-6)
    np.testing.assert_allclose(L.Subtract()([a, b]).numpy(), a - b)
    np.testing.assert_allclose(L.Multiply()([a, b, c]).numpy(), a * b * c, rtol=1e-6)
    np.testing.assert_allclose(L.Average()([a, b, c]).numpy(), (a + b + c) / 3, rtol=1e-6)
    np.testing.assert_array_equal(L.Maximum()([a, b, c]).numpy(), np.maximum(np.maximum(a, b), c))
    np.testing.assert_array_equal(L.Minimum()([a, b]).numpy(), np.minimum(a, b))
    np.testing.assert_array_equal(L.Concatenate(axis=0)([a, b]).numpy(), np.concatenate([a, b]))
    np.testing.assert_allclose(L.Dot(axes=1)([a, b]).numpy(), (a * b).sum(1, keepdims=True), rtol=1e-6)
    p, q = _r(2, 3, 4), _r(2, 5, 4)
    n = lambda t: t / np.linalg.norm(t, axis=2, keepdims=True)  # noqa: E731
    np.testing.assert_allclose(L.Dot(axes=2, normalize=True)([p, q]).numpy(), n(p) @ n(q).transpose(0, 2, 1),
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(Exception, match="exactly 2"):
        L.Subtract()([a, b, c])
    _fd_check(lambda t: L.Multiply()([t, t * 2 + 1]), _r(2, 3))


# --- MultiHeadAttention and SimpleRNN --------------------------------------------------------------

def _mha_ref(w, q_in, v_in, k_in, mask, heads, key_dim):
    qk, qb, kk, kb, vk, vb, ok, ob = w
    q = np.einsum("btd,dnh->btnh", q_in, qk) + qb
    k = np.einsum("bsd,dnh->bsnh", k_in, kk) + kb
    v = np.einsum("bsd,dnh->bsnh", v_in, vk) + vb
    logits = np.einsum("btnh,bsnh->bnts", q, k) / np.sqrt(key_dim)
    if mask is not None:
        logits = np.where(mask[:, None], logits, -1e30)
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    out = np.einsum("bnts,bsnh->btnh", p, v)
    return np.einsum("btnh,nhd->btd", out, ok) + ob, p


@pytest.mark.parametrize("scores", [False, True])
def test_multi_head_attention_against_einsum_math(scores):
    q, v, k = _r(2, 4, 6), _r(2, 5, 3), _r(2, 5, 7)
    mask = RNG.random((2, 4, 5)) > 0.4
    mask[:, :, 0] = True
    mha = L.MultiHeadAttention(num_heads=2, key_dim=3, value_dim=4, output_shape=8)
    mha(q, v, key=k)
    shapes = [w.shape.as_list() for w in mha.weights]
    assert shapes == [[6, 2, 3], [2, 3], [7, 2, 3], [2, 3], [3, 2, 4], [2, 4], [2, 4, 8], [8]]
    w = _randomize(mha, q, v, k)
    out = mha(q, v, key=k, attention_mask=mask, return_attention_scores=scores)
    ref, p = _mha_ref(w, q, v, k, mask, 2, 3)
    np.testing.assert_allclose((out[0] if scores else out).numpy(), ref, rtol=1e-4, atol=1e-5)
    if scores:
        np.testing.assert_allclose(out[1].numpy(), p, rtol=1e-4, atol=1e-6)


def test_multi_head_attention_causal_and_gradient():
    x = _r(1, 4, 4)
    mha = L.MultiHeadAttention(2, 2)
    w = _randomize(mha, x, x)
    causal = np.tril(np.ones((4, 4), bool))[None]
    np.testing.assert_allclose(mha(x, x, use_causal_mask=True).numpy(), _mha_ref(w, x, x, x, causal, 2, 2)[0],
                               rtol=1e-4, atol=1e-5)
    _fd_check(lambda t: mha(t, t), x)


def test_simple_rnn_against_a_loop_and_in_bidirectional():
    x = _r(2, 4, 3)
    rnn = L.SimpleRNN(5, return_sequences=True)
    k, rk, b = _randomize(rnn, x)
    h, outs = np.zeros((2, 5), np.float32), []
    for t in range(4):
        h = np.tanh(x[:, t] @ k + b + h @ rk)
        outs.append(h)
    np.testing.assert_allclose(rnn(x).numpy(), np.stack(outs, 1), rtol=1e-5, atol=1e-6)
    bi = L.Bidirectional(L.SimpleRNN(2))
    assert bi(x).shape.as_list() == [2, 4] and len(bi.weights) == 6
