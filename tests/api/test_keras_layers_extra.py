"""The layers of api/keras_layers_extra.py and api/keras_layers_preprocessing.py against Keras 3.15:
each case builds the same layer in Keras and in sf.keras, sets Keras's (perturbed) weights into
sf's (so their order and shapes must be Keras's), and compares the outputs, the gradients of
sum(output * probe) with respect to the float inputs and the trainable weights, the adapted
statistics, the activity penalties; a few models are trained one epoch of SGD from the same weights in
both. The fixture holds Keras's results (scripts/make_keras_layers_extra_fixture.py, run with
Keras installed); the training-only noise layers are checked here: the identity at inference,
their statistics in training."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import specflow as sf

DATA = Path(__file__).parent / "data" / "keras_layers_extra.npz"


def _rng(name: str):
    return np.random.default_rng(sum(ord(c) * (i + 1) for i, c in enumerate(name)))


def _n(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def cases(L):  # noqa: N803 (keras.layers or sf.keras.layers)
    """name -> (layer factory, inputs (an array or a list), call kwargs); the same on both sides."""
    r = np.random.default_rng(0)
    img = (r.uniform(0, 255, (2, 7, 9, 3))).astype(np.float32)
    x3, x4 = _n(r, 2, 3, 4), _n(r, 2, 4, 5, 6)
    q, v, k = _n(r, 2, 3, 4), _n(r, 2, 5, 4), _n(r, 2, 5, 4)
    qm = np.array([[1, 1, 0], [1, 0, 1]], bool)
    vm = np.array([[1, 1, 1, 0, 0], [1, 0, 1, 1, 1]], bool)
    sq = _n(r, 2, 4, 4)
    sqm = np.array([[1, 1, 1, 0], [1, 1, 0, 1]], bool)
    adapt3 = _n(r, 8, 3, 4) * 3 + 1
    batches = [_n(r, 5, 3) * 2 + 1, _n(r, 3, 3) - 1, _n(r, 4, 3) * 0.5]
    seq = _n(r, 2, 8, 4)
    vol = _n(r, 2, 5, 6, 7, 3)
    ids = r.integers(0, 6, (3, 4)).astype(np.int32)
    disc = _n(r, 3, 4) * 2
    values = _n(r, 300) * 3 + 1
    small = r.uniform(0, 255, (2, 3, 8, 3)).astype(np.float32)

    def adapted(layer, data):
        layer.adapt(data)
        return layer

    return {  # fmt: skip
        "rescaling": (lambda: L.Rescaling(1 / 127.5, offset=-1.0), img, {}),
        "rescaling_channels": (lambda: L.Rescaling([0.5, 2.0, 3.0], offset=[1.0, 0.0, -1.0]), img, {}),
        "rescaling_int": (lambda: L.Rescaling(0.5), img.astype(np.uint8), {}),
        "normalization_given": (lambda: L.Normalization(mean=[1.0, 2.0, 3.0, 0.5], variance=[4.0, 5.0, 6.0, 0.0]), x3, {}),
        "normalization_invert": (lambda: L.Normalization(axis=None, mean=2.0, variance=9.0, invert=True), x3, {}),
        "normalization_adapt": (lambda: adapted(L.Normalization(axis=(1, 2)), adapt3), adapt3[:2], {}),
        "normalization_adapt_batches": (lambda: adapted(L.Normalization(), batches), batches[1], {}),
        "normalization_axis_none": (lambda: adapted(L.Normalization(axis=None), adapt3), adapt3[:3], {}),
        "time_distributed_dense": (lambda: L.TimeDistributed(L.Dense(4, activation="tanh")), _n(r, 2, 3, 5), {}),
        "time_distributed_conv": (lambda: L.TimeDistributed(L.Conv2D(2, 3)), _n(r, 2, 3, 6, 6, 2), {}),
        "time_distributed_bn": (lambda: L.TimeDistributed(L.BatchNormalization()), _n(r, 4, 3, 2), {"training": True}),
        "attention_dot": (lambda: L.Attention(), [q, v], {}),
        "attention_concat_scores": (lambda: L.Attention(use_scale=True, score_mode="concat"), [q, v, k],
                                    {"return_attention_scores": True}),
        "attention_masks": (lambda: L.Attention(use_scale=True), [q, v, k], {"mask": [qm, vm], "return_attention_scores": True}),
        "attention_causal": (lambda: L.Attention(), [sq, sq], {"mask": [sqm, sqm], "use_causal_mask": True}),
        "additive_attention": (lambda: L.AdditiveAttention(), [q, v, k], {"mask": [None, vm]}),
        "additive_attention_noscale": (lambda: L.AdditiveAttention(use_scale=False), [q, v],
                                       {"return_attention_scores": True}),
        "unit_normalization": (lambda: L.UnitNormalization(), x3, {}),
        "unit_normalization_axes": (lambda: L.UnitNormalization(axis=[1, 2]), x3, {}),
        "group_normalization": (lambda: L.GroupNormalization(groups=2), x4, {}),
        "group_normalization_axis1": (lambda: L.GroupNormalization(groups=2, axis=1, center=False), x4, {}),
        "group_normalization_instance": (lambda: L.GroupNormalization(groups=-1, epsilon=1e-5), x3, {}),
        "prelu": (lambda: L.PReLU(), x3, {}),
        "prelu_shared": (lambda: L.PReLU(shared_axes=[1, 2]), x4, {}),
        "activity_regularization": (lambda: L.ActivityRegularization(l1=0.01, l2=0.1), x3, {}),
        "up_sampling1d": (lambda: L.UpSampling1D(3), x3, {}),
        "zero_padding1d": (lambda: L.ZeroPadding1D((1, 2)), x3, {}),
        "zero_padding1d_cf": (lambda: L.ZeroPadding1D(2, data_format="channels_first"), x3, {}),
        "cropping1d": (lambda: L.Cropping1D((1, 0)), seq, {}),
        "cropping1d_both": (lambda: L.Cropping1D((2, 3)), seq, {}),
        "conv3d": (lambda: L.Conv3D(4, 3, strides=(1, 2, 1), padding="same"), vol, {}),
        "conv3d_dilated": (lambda: L.Conv3D(2, (2, 3, 2), dilation_rate=(2, 1, 1), activation="relu",
                                            activity_regularizer="l2"), vol, {}),
        "conv3d_groups": (lambda: L.Conv3D(6, 2, groups=3, use_bias=False), vol, {}),
        "conv3d_channels_first": (lambda: L.Conv3D(2, 2, data_format="channels_first"), vol.transpose(0, 4, 1, 2, 3), {}),
        "max_pooling3d": (lambda: L.MaxPooling3D(), vol, {}),
        "max_pooling3d_same": (lambda: L.MaxPooling3D((2, 3, 2), strides=1, padding="same"), vol, {}),
        "average_pooling3d": (lambda: L.AveragePooling3D((2, 2, 3), strides=(1, 2, 1), padding="same"), vol, {}),
        "average_pooling3d_cf": (lambda: L.AveragePooling3D(2, data_format="channels_first"), vol, {}),
        "global_average_pooling3d": (lambda: L.GlobalAveragePooling3D(), vol, {}),
        "global_max_pooling3d_keep": (lambda: L.GlobalMaxPooling3D(keepdims=True), vol, {}),
        "global_average_pooling3d_cf": (lambda: L.GlobalAveragePooling3D(data_format="channels_first"), vol, {}),
        "conv1d_transpose": (lambda: L.Conv1DTranspose(3, 3, strides=2), seq, {}),
        "conv1d_transpose_same": (lambda: L.Conv1DTranspose(3, 4, strides=3, padding="same", activation="relu"), seq, {}),
        "conv1d_transpose_output_padding": (lambda: L.Conv1DTranspose(2, 3, strides=2, padding="same",
                                                                      output_padding=1), seq, {}),
        "conv1d_transpose_dilated": (lambda: L.Conv1DTranspose(2, 3, dilation_rate=2), seq, {}),
        "separable_conv1d": (lambda: L.SeparableConv1D(5, 3, depth_multiplier=2, padding="same"), seq, {}),
        "separable_conv1d_strided": (lambda: L.SeparableConv1D(3, 2, strides=2, activation="tanh"), seq, {}),
        "separable_conv1d_stride_dilation": (lambda: L.SeparableConv1D(3, 2, strides=2, dilation_rate=2,
                                                                       padding="same"), seq, {}),
        "depthwise_conv1d": (lambda: L.DepthwiseConv1D(3, depth_multiplier=2), seq, {}),
        "depthwise_conv1d_stride_dilation": (lambda: L.DepthwiseConv1D(3, strides=2, dilation_rate=2), seq, {}),
        "depthwise_conv1d_cf": (lambda: L.DepthwiseConv1D(2, padding="same", data_format="channels_first"), seq, {}),
        "category_multi_hot": (lambda: L.CategoryEncoding(6), ids, {}),
        "category_multi_hot_1d": (lambda: L.CategoryEncoding(6), ids[0], {}),
        "category_one_hot": (lambda: L.CategoryEncoding(6, output_mode="one_hot"), ids[:, :1], {}),
        "category_one_hot_2d": (lambda: L.CategoryEncoding(6, output_mode="one_hot"), ids, {}),
        "category_count": (lambda: L.CategoryEncoding(6, output_mode="count"), ids, {}),
        "category_count_weights": (lambda: L.CategoryEncoding(6, output_mode="count"), ids,
                                   {"count_weights": _n(r, 3, 4)}),
        "discretization": (lambda: L.Discretization(bin_boundaries=[-1.0, 0.0, 1.5]), disc, {}),
        "discretization_one_hot": (lambda: L.Discretization(bin_boundaries=[0.0, 1.0], output_mode="one_hot"),
                                   disc[0], {}),
        "discretization_count": (lambda: L.Discretization(bin_boundaries=[-1.0, 0.0, 1.5], output_mode="count"),
                                 disc, {}),
        "discretization_adapt": (lambda: adapted(L.Discretization(num_bins=5, epsilon=0.01), values), disc, {}),
        "discretization_adapt_batches": (lambda: adapted(L.Discretization(num_bins=4, epsilon=0.05),
                                                         [values[:100], values[100:]]), disc, {}),
        "resizing": (lambda: L.Resizing(4, 5), img, {}),
        "resizing_up_nearest": (lambda: L.Resizing(10, 11, interpolation="nearest"), img, {}),
        "resizing_bicubic": (lambda: L.Resizing(5, 12, interpolation="bicubic"), img, {}),
        "resizing_area": (lambda: L.Resizing(3, 4, interpolation="area"), img, {}),
        "resizing_lanczos3": (lambda: L.Resizing(5, 6, interpolation="lanczos3"), img, {}),
        "resizing_antialias": (lambda: L.Resizing(3, 4, antialias=True), img, {}),
        "resizing_crop": (lambda: L.Resizing(4, 4, crop_to_aspect_ratio=True), img, {}),
        "resizing_pad": (lambda: L.Resizing(6, 4, pad_to_aspect_ratio=True, fill_value=0.5), img, {}),
        "resizing_uint8": (lambda: L.Resizing(5, 4), img.astype(np.uint8), {}),
        "resizing_cf_single": (lambda: L.Resizing(4, 6, data_format="channels_first"), img[0].transpose(2, 0, 1), {}),
        "center_crop": (lambda: L.CenterCrop(4, 5), img, {}),
        "center_crop_small": (lambda: L.CenterCrop(4, 5), small, {}),
        "center_crop_cf": (lambda: L.CenterCrop(3, 3, data_format="channels_first"), img.transpose(0, 3, 1, 2), {}),
    }


def models(K):  # noqa: N803 (keras or sf.keras)
    """name -> (model factory, x, y): trained one epoch of SGD from the same weights on both sides."""
    L = K.layers  # noqa: N806
    r = np.random.default_rng(1)

    def td_gn_prelu():
        x = K.Input((3, 8))
        h = L.TimeDistributed(L.Dense(6))(x)
        h = L.GroupNormalization(groups=3)(h)
        h = L.PReLU(shared_axes=[1])(h)
        return K.Model(x, L.Dense(2)(L.Flatten()(h)))

    def attention():
        x = K.Input((5, 6))
        h = L.Dense(6)(x)
        a = L.Attention(use_scale=True)([h, x])
        b = L.AdditiveAttention()([a, h, x])
        u = L.UnitNormalization()(b)
        return K.Model(x, L.Dense(2)(L.GlobalAveragePooling1D()(u)))

    def conv3d():
        x = K.Input((4, 5, 4, 2))
        h = L.Conv3D(3, 2, activation="relu", padding="same")(x)
        h = L.AveragePooling3D(2)(h)
        h = L.Conv3D(2, (1, 2, 1), groups=1)(h)
        return K.Model(x, L.Dense(1)(L.GlobalMaxPooling3D()(h)))

    def conv1d():
        x = K.Input((8, 3))
        h = L.SeparableConv1D(4, 3, padding="same", depth_multiplier=2)(x)
        h = L.DepthwiseConv1D(3, depth_multiplier=2, activity_regularizer=K.regularizers.L1(0.01))(h)
        h = L.Conv1DTranspose(2, 3, strides=2, activation="tanh")(h)
        h = L.ActivityRegularization(l1=0.001, l2=0.01)(h)
        h = L.ZeroPadding1D(1)(L.Cropping1D((1, 2))(L.UpSampling1D(2)(h)))
        return K.Model(x, L.Dense(1)(L.Flatten()(h)))

    def preprocessing():
        x = K.Input((4,))
        norm = L.Normalization()
        norm.adapt(np.random.default_rng(2).standard_normal((20, 4)).astype(np.float32) * 3 + 2)
        h = L.Rescaling(0.5, offset=0.1)(norm(x))
        return K.Model(x, L.Dense(1)(h))

    return {
        "fit_td_gn_prelu": (td_gn_prelu, _n(r, 8, 3, 8), _n(r, 8, 2)),
        "fit_attention": (attention, _n(r, 8, 5, 6), _n(r, 8, 2)),
        "fit_conv3d": (conv3d, _n(r, 8, 4, 5, 4, 2), _n(r, 8, 1)),
        "fit_conv1d": (conv1d, _n(r, 8, 8, 3), _n(r, 8, 1)),
        "fit_preprocessing": (preprocessing, _n(r, 8, 4), _n(r, 8, 1)),
    }


def masked_model(K):  # noqa: N803
    """Masks through the functional API: Masking -> TimeDistributed -> Attention -> pooling."""
    L = K.layers  # noqa: N806
    x = K.Input((5, 4))
    h = L.TimeDistributed(L.Dense(3))(L.Masking()(x))
    a = L.Attention()([h, h])
    return K.Model(x, L.GlobalAveragePooling1D()(a))


def masked_input():
    x = _n(np.random.default_rng(3), 2, 5, 4)
    x[0, 3:] = 0.0
    x[1, 1] = 0.0
    return x


def probe(name: str, shape):
    return _n(_rng(name), *shape)


def perturb(name: str, weights, trainable):
    rng = _rng(name + "/w")
    return [w + 0.5 * _n(rng, *w.shape) if t and w.dtype == np.float32 else w for w, t in zip(weights, trainable)]


# --- the sf side -------------------------------------------------------------------------------------


def _fixture():
    if not DATA.exists():
        pytest.skip(f"{DATA} missing (scripts/make_keras_layers_extra_fixture.py writes it)")
    return np.load(DATA)


L = sf.keras.layers
CASES = cases(L)


def _stored(fix, prefix: str) -> list:
    out, i = [], 0
    while f"{prefix}{i}" in fix:
        out.append(fix[f"{prefix}{i}"])
        i += 1
    return out


def _close(a, b, tol=2e-6, what=""):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (what, a.shape, b.shape)
    if a.dtype.kind in "iub":
        assert a.dtype == b.dtype, (what, a.dtype, b.dtype)
        np.testing.assert_array_equal(a, b, err_msg=what)
    else:
        scale = max(1.0, float(np.max(np.abs(b)))) if b.size else 1.0
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * scale, err_msg=what)


def _flat(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


@pytest.mark.parametrize("name", sorted(CASES))
def test_layer_matches_keras(name):
    fix = _fixture()
    make, x, kwargs = CASES[name]
    layer = make()
    xs = x if isinstance(x, list) else None
    args = [sf.constant(a) for a in xs] if xs is not None else sf.constant(x)
    layer(args, **kwargs)
    assert bool(layer.supports_masking) == bool(fix[f"{name}/masking"])
    stored = _stored(fix, f"{name}/w")
    assert [tuple(w.shape.as_list()) for w in layer.weights] == [w.shape for w in stored]
    for w, s in zip(layer.weights, stored):
        if not w.trainable:  # adapted statistics, computed here
            _close(w.numpy(), s, 1e-5, f"{name} adapted weight")
    if f"{name}/bins" in fix:
        _close(np.asarray(layer.bin_boundaries, np.float32), fix[f"{name}/bins"], 1e-6, "bin boundaries")
    layer.set_weights(stored)
    trainable = [w for w in layer.weights if w.trainable]
    watched = [a for a in (args if xs is not None else [args]) if a.dtype.is_floating]
    with sf.GradientTape() as tape:
        for a in watched:
            tape.watch(a)
        outs = _flat(layer(args, **kwargs))
        loss = None
        for j, o in enumerate(outs):
            if o.dtype.is_floating:
                term = sf.reduce_sum(o * probe(f"{name}/{j}", o.shape.as_list()))
                loss = term if loss is None else loss + term
    expected = _stored(fix, f"{name}/out")
    assert len(outs) == len(expected)
    for j, (o, e) in enumerate(zip(outs, expected)):
        _close(o.numpy(), e, 2e-6 if "resizing" not in name else 2e-5, f"{name} output {j}")
    if f"{name}/loss" in fix:
        _close(sum(p.numpy() for p in layer.losses), fix[f"{name}/loss"], 1e-6, f"{name} activity loss")
    grads = _stored(fix, f"{name}/g")
    if grads:
        got = tape.gradient(loss, watched + trainable)
        assert len(got) == len(grads)
        for j, (g, e) in enumerate(zip(got, grads)):
            _close(np.zeros_like(e) if g is None else sf.convert_to_tensor(g).numpy(), e, 1e-5, f"{name} gradient {j}")


@pytest.mark.parametrize("name", sorted(models(sf.keras)))
def test_one_epoch_of_fit_matches_keras(name):
    fix = _fixture()
    make, x, y = models(sf.keras)[name]
    model = make()
    model.set_weights(_stored(fix, f"{name}/init"))
    model.compile(optimizer=sf.keras.optimizers.SGD(0.05), loss="mse")
    history = model.fit(x, y, epochs=1, batch_size=4, shuffle=False, verbose=0)
    _close(history.history["loss"][0], fix[f"{name}/loss"], 1e-5, "loss")
    for j, (w, e) in enumerate(zip(model.get_weights(), _stored(fix, f"{name}/final"))):
        _close(w, e, 2e-5, f"weight {j} after the epoch")
    _close(model.predict(x, verbose=0), fix[f"{name}/pred"], 2e-5, "predictions after the epoch")


def test_masks_flow_through_the_functional_api_as_keras():
    fix = _fixture()
    model = masked_model(sf.keras)
    model.set_weights(_stored(fix, "masked/w"))
    x = masked_input()
    _close(model(x).numpy(), fix["masked/out"], 2e-6)
    _close(model.predict(x, verbose=0), fix["masked/out"], 2e-6)


def test_layers_run_inside_sf_function_and_sequential():
    make, x, kwargs = CASES["attention_masks"]
    layer = make()
    eager = [o.numpy() for o in layer([sf.constant(a) for a in x], **kwargs)]
    traced = sf.function(lambda a, b, c: layer([a, b, c], **kwargs))(*x)
    for a, b in zip(traced, eager):
        _close(a.numpy(), b)
    seq = sf.keras.Sequential([L.Conv1DTranspose(2, 3, strides=2), L.GroupNormalization(2), L.PReLU(),
                               L.Cropping1D(1), L.GlobalAveragePooling1D(), L.Dense(1)])
    xs = np.random.default_rng(4).standard_normal((3, 6, 2)).astype(np.float32)
    _close(sf.function(lambda t: seq(t))(xs).numpy(), seq(xs).numpy(), 1e-6)


@pytest.mark.parametrize("make", [lambda: L.Conv1DTranspose(2, 3, strides=2), lambda: L.GroupNormalization(3),
                                  lambda: L.DepthwiseConv1D(3, strides=2, dilation_rate=2, padding="same"),
                                  lambda: L.TimeDistributed(L.Dense(4)), lambda: L.UpSampling1D(2)])
def test_layers_trace_with_unknown_batch_and_length(make):
    layer = make()
    x = np.random.default_rng(6).standard_normal((2, 7, 6)).astype(np.float32)
    eager = layer(x).numpy()
    traced = sf.function(lambda t: layer(t), input_signature=[sf.TensorSpec([None, None, 6], "float32")])
    _close(traced(x).numpy(), eager, 1e-6)
    _close(traced(x[:1, :5]).numpy(), layer(x[:1, :5]).numpy(), 1e-6)


def test_noise_layers_are_the_identity_at_inference_and_random_in_training():
    x = np.random.default_rng(5).standard_normal((400, 8, 16)).astype(np.float32) + 2.0
    for layer in (L.GaussianNoise(0.3), L.GaussianDropout(0.4), L.SpatialDropout1D(0.3), L.SpatialDropout2D(0.3),
                  L.SpatialDropout3D(0.3)):
        data = x.reshape((400, 2, 4, 16)) if "2D" in type(layer).__name__ else x
        data = data.reshape((400, 2, 2, 2, 16)) if "3D" in type(layer).__name__ else data
        for training in (None, False):
            np.testing.assert_array_equal(layer(data, training=training).numpy(), data)
        assert layer.weights == [] and layer.supports_masking
    noise = L.GaussianNoise(0.3)(x, training=True).numpy() - x
    assert abs(noise.mean()) < 0.01 and abs(noise.std() - 0.3) < 0.01
    ratio = L.GaussianDropout(0.4)(x, training=True).numpy() / x
    assert abs(ratio.mean() - 1.0) < 0.02 and abs(ratio.std() - np.sqrt(0.4 / 0.6)) < 0.02
    y = L.SpatialDropout1D(0.3)(x, training=True).numpy()
    kept = y[:, 0, :] != 0  # per example and channel: the whole sequence dropped or scaled by 1 / 0.7
    np.testing.assert_allclose(y, np.where(kept[:, None, :], x / 0.7, 0.0), rtol=1e-6)
    assert abs(1 - kept.mean() - 0.3) < 0.03
    y2 = L.SpatialDropout2D(0.5, data_format="channels_first")(x.reshape(400, 8, 4, 4), training=True).numpy()
    kept2 = y2[:, :, 0, 0] != 0
    np.testing.assert_allclose(y2, np.where(kept2[:, :, None, None], x.reshape(400, 8, 4, 4) / 0.5, 0.0), rtol=1e-6)
    with pytest.raises(ValueError, match="expected ndim=4"):
        L.SpatialDropout2D(0.5)(x, training=True)


def test_noise_layers_in_fit_are_random_only_while_training():
    model = sf.keras.Sequential([sf.keras.Input((4,)), L.GaussianNoise(0.5), L.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x = np.ones((8, 4), np.float32)
    before = model.predict(x, verbose=0)
    np.testing.assert_allclose(before, before[:1].repeat(8, 0), rtol=1e-6)  # inference: no noise
    model.fit(x, np.zeros((8, 1), np.float32), epochs=1, batch_size=8, verbose=0)
    assert not np.allclose(model.predict(x, verbose=0), before)


def test_activity_regularization_penalty_is_in_fit_loss():
    model = sf.keras.Sequential([sf.keras.Input((3,)), L.Dense(2, kernel_initializer="ones"),
                                 L.ActivityRegularization(l1=0.5)])
    model.compile(optimizer=sf.keras.optimizers.SGD(0.0), loss="mse")
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    y = np.zeros((4, 2), np.float32)
    loss = model.evaluate(x, y, verbose=0)
    h = x.sum(1, keepdims=True).repeat(2, 1)
    np.testing.assert_allclose(loss, (h ** 2).mean() + 0.5 * np.abs(h).sum() / 4, rtol=1e-6)


def test_weights_file_and_errors():
    td = L.TimeDistributed(L.Dense(3))
    td(np.zeros((1, 2, 4), np.float32))
    assert [w.shape.as_list() for w in td.weights] == [[4, 3], [3]]
    from specflow.api.keras_weights_file import entries

    assert [p for p, _, ws in entries(td) if ws] == ["layer"]  # Keras's Wrapper: the weights under `layer`
    with pytest.raises(ValueError, match="Layer` instance"):
        L.TimeDistributed("dense")
    with pytest.raises(ValueError, match="called on a list of inputs"):
        L.Attention()(np.zeros((1, 2, 3), np.float32))
    with pytest.raises(ValueError, match="score_mode"):
        L.Attention(score_mode="general")
    with pytest.raises(ValueError, match="must be a multiple"):
        L.GroupNormalization(groups=4)(np.zeros((1, 6), np.float32))
    with pytest.raises(ValueError, match="bin_boundaries"):
        L.Discretization()
    with pytest.raises(ValueError, match="adapt"):
        L.Discretization(num_bins=3)(np.zeros(2, np.float32))
    with pytest.raises(ValueError, match="sparse"):
        L.CategoryEncoding(3, sparse=True)
    with pytest.raises(ValueError, match="interpolation"):
        L.Resizing(2, 2, interpolation="cubic")
    with pytest.raises(ValueError, match="smaller than the input length"):
        L.Cropping1D((2, 2))(np.zeros((1, 4, 1), np.float32))
