"""``sf.keras.Sequential`` built as Keras 3 builds it (api/keras_sequential.py): from an
``sf.keras.Input``, a first layer's ``input_shape=``/``input_dim=``, ``build(input_shape)`` or
the first call; ``count_params``, ``output_shape``, ``summary``, ``pop``; Keras's default layer
names. The shapes and counts are Keras 3.15's for the same models."""

from __future__ import annotations

import numpy as np
import pytest

import specflow as sf

K = sf.keras
L = sf.keras.layers


def test_an_input_first_builds_the_model():
    m = K.Sequential([K.Input((4,)), L.Dense(3), L.Dense(2)])
    assert len(m.layers) == 2 and len(m.weights) == 4  # the Input is no layer of it, as Keras
    assert m.count_params() == 23 and [layer.count_params() for layer in m.layers] == [15, 8]
    assert m.input_shape == (None, 4) and m.output_shape == (None, 2)
    x = np.ones((2, 4), np.float32)
    np.testing.assert_allclose(m(x).numpy(), x @ m.get_weights()[0] @ m.get_weights()[2]
                               + m.get_weights()[1] @ m.get_weights()[2] + m.get_weights()[3], rtol=1e-5)
    ints = K.Sequential([K.Input((6,), dtype="int32"), L.Embedding(20, 4, mask_zero=True), L.LSTM(3)])
    assert ints.count_params() == 176 and ints.output_shape == (None, 3)
    assert ints(np.array([[1.0, 2.0, 0.0, 0.0, 0.0, 0.0]])).shape == [1, 3]  # cast to the Input's int32


def test_input_shape_and_input_dim_on_the_first_layer():
    with pytest.warns(UserWarning, match="input_shape"):
        m = K.Sequential([L.Dense(3, input_dim=4), L.Dropout(0.1), L.Dense(2)])
    assert m.count_params() == 23 and m.output_shape == (None, 2)
    with pytest.warns(UserWarning):
        conv = K.Sequential([L.Conv1D(2, 3, input_shape=(10, 3)), L.Flatten(), L.Dense(1)])
    assert [w.shape.as_list() for w in conv.weights] == [[3, 3, 2], [2], [16, 1], [1]]
    assert conv.output_shape == (None, 1) and conv.count_params() == 37


def test_build_add_pop_and_a_call_build():
    m = K.Sequential()
    m.add(L.Dense(5))
    m.build((None, 7))
    assert m.count_params() == 40 and m.output_shape == (None, 5)
    m.add(L.Dense(1))  # built already: the new layer is built at once
    assert m.count_params() == 46 and m.output_shape == (None, 1)
    assert m.pop().units == 1 and m.output_shape == (None, 5)
    with pytest.raises(ValueError, match="cannot add a different Input"):
        m.add(K.Input((3,)))
    called = K.Sequential([L.Dense(5)])
    with pytest.raises(AttributeError, match="no defined outputs"):
        _ = called.output_shape
    with pytest.raises(ValueError, match="isn't built"):
        called.layers[0].count_params()
    called(np.zeros((2, 3), np.float32))
    assert called.count_params() == 20 and called.output_shape == (2, 5)  # Keras builds with the call's shape


def test_summary_and_default_names():
    K.backend.clear_session()
    m = K.Sequential([K.Input((4,)), L.Dense(3), L.Dense(2, name="head"), L.Dense(1)])
    assert m.name == "sequential" and [layer.name for layer in m.layers] == ["dense", "head", "dense_1"]
    assert L.GlobalAveragePooling1D().name == "global_average_pooling1d"  # Keras's snake case
    assert L.Conv2DTranspose(1, 2).name == "conv2d_transpose"
    lines = []
    m.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert 'Model: "sequential"' in text and "dense (Dense)" in text and "(None, 3)" in text
    assert "Total params: 26 (104.00 B)" in text and "Non-trainable params: 0 (0.00 B)" in text
    K.backend.clear_session()
    assert L.Dense(1).name == "dense"


def test_a_functional_model_summary_and_shapes():
    inp = K.Input((5, 3))
    out = L.Dense(2)(L.LSTM(4, return_sequences=True)(inp))
    model = K.Model(inp, out)
    assert model.output_shape == (None, 5, 2) and model.input_shape == (None, 5, 3)
    assert model.count_params() == 4 * (3 * 4 + 4 * 4 + 4) + 10
    lines = []
    model.summary(print_fn=lines.append)
    assert any("(None, 5, 4)" in line and "LSTM" in line for line in lines)


def test_a_functional_model_adds_its_layers_regularization_penalties():
    inp = K.Input((3,))
    dense = L.Dense(2, kernel_regularizer=K.regularizers.L2(0.1))
    model = K.Model(inp, dense(inp))
    assert len(model.losses) == 1
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.ones((4, 3), np.float32), np.zeros((4, 2), np.float32)
    p = model.predict(x, verbose=0)
    want = np.mean(p ** 2) + 0.1 * np.sum(dense.kernel.numpy() ** 2)
    assert model.evaluate(x, y, verbose=0) == pytest.approx(want, rel=1e-5)
