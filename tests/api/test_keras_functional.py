"""Keras's functional API (api/keras_functional.py): ``sf.keras.Input`` and
``sf.keras.Model(inputs, outputs)`` against the same layers called directly (eager composition),
layer/weight order (Keras 3's map_graph order, checked against Keras outside the repository),
shared layers, multi-output structures, replay inside ``sf.function``, fit, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import specflow as sf

K = sf.keras
L = sf.keras.layers
RNG = np.random.default_rng(0)


def _r(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _close(a, b, tol=1e-6):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def _randomize(model):
    model.set_weights([w + 0.3 * _r(*w.shape) for w in model.get_weights()])


def test_input_is_symbolic_and_layer_calls_record_shapes_without_values():
    x = K.Input((5, 6), name="seq")
    assert isinstance(x, type(L.Input((1,)))) and x.shape == (None, 5, 6) and x.dtype == "float32" and x.name == "seq"
    dense = L.Dense(3)
    y = dense(x)
    assert y.shape == (None, 5, 3) and y.dtype == "float32"
    assert [w.shape.as_list() for w in dense.weights] == [[6, 3], [3]]  # built at construction, as Keras
    ids = K.Input((4,), dtype="int32", batch_size=2)
    e = L.Embedding(10, 3)(ids)
    assert e.shape == (2, 4, 3)
    out, scores = L.MultiHeadAttention(2, 4)(x, x, return_attention_scores=True)
    assert out.shape == (None, 5, 6) and scores.shape == (None, 2, 5, 5)


def test_two_input_model_matches_eager_composition():
    a, b = K.Input((4,)), K.Input((3,))
    d1, d2, cat, head = L.Dense(5, activation="relu"), L.Dense(6, activation="tanh"), L.Concatenate(), L.Dense(2)
    model = K.Model([a, b], head(cat([d1(a), d2(b)])))
    _randomize(model)
    x1, x2 = _r(7, 4), _r(7, 3)
    want = head(cat([d1(x1), d2(x2)])).numpy()
    _close(model([x1, x2]), want)
    _close(model((x1, x2)), want)
    assert [type(layer).__name__ for layer in model.layers] == ["InputLayer", "InputLayer", "Dense", "Dense",
                                                                "Concatenate", "Dense"]
    assert [id(w) for w in model.weights] == [id(w) for layer in (d1, d2, head) for w in layer.weights]


def test_residual_block_matches_eager_composition_and_passes_training():
    x = K.Input((6, 6, 3))
    conv1, bn, relu, conv2, add = L.Conv2D(4, 3, padding="same"), L.BatchNormalization(), L.ReLU(), \
        L.Conv2D(3, 3, padding="same"), L.Add()
    model = K.Model(x, relu(add([x, conv2(relu(bn(conv1(x))))])))
    # the ReLU used twice is listed once, at its deeper use (Keras's order)
    assert model.layers == [x._node.layer, conv1, bn, relu, conv2, add]
    assert len(model.weights) == 8 and len(model.trainable_variables) == 6  # BN's moving stats are not trainable
    _randomize(model)
    xv = _r(2, 6, 6, 3)

    def eager(training):
        return relu(add([xv, conv2(relu(bn(conv1(xv), training=training)))])).numpy()

    _close(model(xv), eager(False))
    before = bn.moving_mean.numpy().copy()
    got = model(xv, training=True).numpy()  # batch statistics, and the moving mean moves
    assert not np.allclose(bn.moving_mean.numpy(), before)
    bn.moving_mean.assign(before)
    _close(got, eager(True), 1e-5)


def test_shared_layer_runs_twice_with_the_same_weights():
    a, b = K.Input((4,)), K.Input((4,))
    shared, cat, head = L.Dense(3, activation="tanh"), L.Concatenate(), L.Dense(1)
    model = K.Model([a, b], head(cat([shared(a), shared(b)])))
    assert [type(layer).__name__ for layer in model.layers] == ["InputLayer", "InputLayer", "Dense", "Concatenate",
                                                                "Dense"]
    assert len(model.weights) == 4 and model.weights[0] is shared.kernel  # each weight once
    _randomize(model)
    x1, x2 = _r(5, 4), _r(5, 4)
    _close(model([x1, x2]), head(cat([shared(x1), shared(x2)])))
    with sf.GradientTape() as tape:
        loss = sf.reduce_sum(model([x1, x2]))
    g = tape.gradient(loss, shared.kernel)
    with sf.GradientTape() as tape:
        loss = sf.reduce_sum(head(cat([shared(x1), shared(x2)])))
    _close(g, tape.gradient(loss, shared.kernel), 1e-5)


def test_transformer_block_matches_eager_composition_and_traced_replay():
    x = K.Input((5, 8))
    mha, add1, ln1, ff, add2, ln2, pool, head = (L.MultiHeadAttention(num_heads=2, key_dim=4), L.Add(),
                                                 L.LayerNormalization(), L.Dense(8, activation="relu"), L.Add(),
                                                 L.LayerNormalization(), L.GlobalAveragePooling1D(), L.Dense(3))
    h = ln1(add1([x, mha(x, x)]))
    h = ln2(add2([h, ff(h)]))
    model = K.Model(x, head(pool(h)))
    assert [type(layer).__name__ for layer in model.layers] == [
        "InputLayer", "MultiHeadAttention", "Add", "LayerNormalization", "Dense", "Add", "LayerNormalization",
        "GlobalAveragePooling1D", "Dense"]
    _randomize(model)
    xv = _r(3, 5, 8)
    hv = ln1(add1([xv, mha(xv, xv)]))
    want = head(pool(ln2(add2([hv, ff(hv)])))).numpy()
    _close(model(xv), want, 1e-5)
    _close(sf.function(lambda t: model(t))(sf.constant(xv)), want, 1e-5)


def test_layer_order_follows_keras_depth_order():
    K.backend.clear_session()  # default names count from "dense" again, as in Keras
    a, b = K.Input((4,), name="a"), K.Input((2,), name="b")
    d1, d2, cat, head = L.Dense(5), L.Dense(3), L.Concatenate(), L.Dense(1)
    model = K.Model([a, b], head(cat([d2(d1(a)), b])))
    # Keras 3 lists the shallow input b after the deeper Dense layers (by depth from the outputs)
    assert [layer.name for layer in model.layers] == ["a", "dense", "dense_1", "b", "concatenate", "dense_2"]
    assert model.layers[1] is d1 and model.layers[2] is d2
    values = [_r(*w.shape) for w in model.weights]
    model.set_weights(values)
    _close(d2.kernel.numpy(), values[2])
    assert [w.shape for w in model.get_weights()] == [(4, 5), (5,), (5, 3), (3,), (5, 1), (1,)]


def test_multiple_outputs_list_and_dict_and_dict_inputs():
    a, b = K.Input((3,), name="a"), K.Input((2,), name="b")
    h = L.Concatenate()([a, b])
    o1, o2 = L.Dense(2)(h), L.Dense(1, activation="sigmoid")(h)
    xa, xb = _r(4, 3), _r(4, 2)
    as_list = K.Model({"a": a, "b": b}, [o1, o2])
    out = as_list({"a": xa, "b": xb})
    assert isinstance(out, list) and [o.shape.as_list() for o in out] == [[4, 2], [4, 1]]
    as_dict = K.Model([a, b], {"logits": o1, "prob": o2})
    got = as_dict([xa, xb])
    assert sorted(got) == ["logits", "prob"]
    _close(got["logits"], out[0])
    _close(as_dict({"a": xa, "b": xb})["prob"], out[1])  # a list-input model also takes inputs by name


def test_nested_functional_model_is_a_layer():
    x = K.Input((4,))
    inner = K.Model(x, L.Dense(3, activation="relu")(x))
    y = K.Input((4,))
    outer = K.Model(y, L.Dense(1)(inner(y)))
    assert [type(layer).__name__ for layer in outer.layers] == ["InputLayer", "Functional", "Dense"]
    assert len(outer.weights) == 4 and outer.weights[0] is inner.weights[0]
    xv = _r(5, 4)
    _close(outer(xv), outer.layers[2](inner(xv)))


def test_custom_layer_subclass_works_symbolically():
    class Scale(L.Layer):
        def build(self, input_shape):
            self.scale = self.add_weight(shape=(input_shape[-1],), initializer=sf.keras.initializers.Constant(2.0), name="scale")

        def call(self, x, training=None):
            return x * self.scale

    x = K.Input((3,))
    model = K.Model(x, Scale()(x))
    assert model.layers[1].weights[0].shape.as_list() == [3]
    _close(model(np.ones((2, 3), np.float32)), np.full((2, 3), 2.0))


def test_fit_equals_the_same_chain_as_sequential():
    x, y = _r(24, 4), _r(24, 1)
    inp = K.Input((4,))
    functional = K.Model(inp, L.Dense(1)(L.Dense(6, activation="tanh")(inp)))
    _randomize(functional)
    seq = K.Sequential([L.Dense(6, activation="tanh"), L.Dense(1)])
    seq(x[:1])
    seq.set_weights(functional.get_weights())
    hists = []
    for model in (functional, seq):
        model.compile(optimizer=sf.keras.optimizers.SGD(0.1), loss="mse")
        hists.append(model.fit(x, y, epochs=3, batch_size=8, shuffle=False, verbose=0).history["loss"])
    _close(hists[0], hists[1], 1e-5)
    assert hists[0][-1] < hists[0][0]
    _close(functional.predict(x, verbose=0), seq.predict(x, verbose=0), 1e-5)
    assert np.isclose(functional.evaluate(x, y, verbose=0), seq.evaluate(x, y, verbose=0), rtol=1e-5)


def test_subclassing_still_works():
    class M(K.Model):
        def __init__(self):
            super().__init__()
            self.d = L.Dense(2)

        def call(self, x, training=None):
            return self.d(x)

    m = M()
    assert m(np.ones((1, 3), np.float32)).shape.as_list() == [1, 2] and type(m) is M
    x = K.Input((3,))
    assert isinstance(K.Model(inputs=x, outputs=m(x)), K.Model)  # a subclassed model is a layer too
    with pytest.raises(ValueError, match="functional"):
        K.Model([1], [2])


def test_errors():
    x = K.Input((3,))
    for fn in (lambda: sf.nn.relu(x), lambda: x + 1, lambda: 2 * x, lambda: x[:, 0], lambda: np.asarray(x)):
        with pytest.raises(TypeError, match="use a layer instead"):
            fn()
    other = K.Input((3,), name="other")
    y = L.Add()([x, other])
    with pytest.raises(ValueError, match="Graph disconnected.*other"):
        K.Model(x, y)
    a, b = K.Input((2,)), K.Input((2,))
    model = K.Model([a, b], L.Add()([a, b]))
    with pytest.raises(ValueError, match="expects 2 input"):
        model(np.ones((1, 2), np.float32))
    with pytest.raises(ValueError, match="expects 2 input"):
        model([np.ones((1, 2), np.float32)] * 3)
    with pytest.raises(ValueError, match="missing input"):
        K.Model({"a": a, "b": b}, L.Add()([a, b]))({"a": np.ones((1, 2), np.float32)})
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match="several inputs or outputs"):
        model.fit([np.ones((4, 2), np.float32)] * 2, np.ones((4, 2), np.float32), verbose=0)
