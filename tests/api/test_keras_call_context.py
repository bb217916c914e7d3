"""Keras 3's call context: a layer called without ``training`` inside another layer's call takes
the outer call's value, and a custom layer made of layers holds their weights. A subclassed
model of a custom block (Dense + BatchNormalization) fitted from fixed weights: history and
moving mean are Keras 3.15's (written out)."""

from __future__ import annotations

import numpy as np

import specflow as sf

K = sf.keras


class Block(K.layers.Layer):
    def __init__(self, rate: float = 0.0):
        super().__init__()
        self.d = K.layers.Dense(4)
        self.bn = K.layers.BatchNormalization()
        self.drop = K.layers.Dropout(rate)

    def call(self, x):  # no training argument: the context gives it to bn and drop
        return self.drop(self.bn(self.d(x)))


class Net(K.Model):
    def __init__(self, rate: float = 0.0):
        super().__init__()
        self.b = Block(rate)
        self.o = K.layers.Dense(1)

    def call(self, x, training=None):
        return self.o(self.b(x))


RNG = np.random.default_rng(0)
X = RNG.standard_normal((32, 3)).astype(np.float32)
Y = RNG.standard_normal((32, 1)).astype(np.float32)
WEIGHTS = [np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), np.zeros(4, np.float32), np.ones(4, np.float32),
           np.zeros(4, np.float32), np.zeros(4, np.float32), np.ones(4, np.float32),
           np.linspace(0.5, -0.5, 4, dtype=np.float32).reshape(4, 1), np.zeros(1, np.float32)]


def test_a_custom_blocks_layers_follow_the_outer_training_flag_and_fit_as_keras():
    m = Net()
    m(X)
    assert len(m.b.weights) == 6 and len(m.weights) == 8  # the block's Dense and BatchNormalization
    m.set_weights(WEIGHTS)
    m.compile(optimizer=K.optimizers.SGD(0.1), loss="mse")
    history = m.fit(X, Y, batch_size=8, epochs=3, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(history, [1.2685219049453735, 1.0904806852340698, 1.0232573747634888], rtol=1e-6)
    np.testing.assert_allclose(m.get_weights()[4], [0.031909603625535965, 0.036351729184389114,
                                                    0.040573909878730774, 0.04751567170023918], rtol=1e-6)


def test_a_nested_dropout_is_active_only_when_the_outer_call_trains():
    m = Net(rate=0.5)
    x = np.ones((4, 3), np.float32)
    m(x)
    inference = m(x, training=False).numpy()
    assert np.allclose(inference, inference[0]) and np.array_equal(m(x).numpy(), inference)
    assert not np.allclose(m(x, training=True).numpy(), inference)
