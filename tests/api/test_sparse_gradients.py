"""Sparse gradients in the Python face: a variable read only through gathers gets an
sf.IndexedSlices from the tape (TF's), ops take it dense, and the optimizers apply it as Keras 3
does (a repeated row's occurrences squared apart in Adam/RMSprop/Adagrad, rows scattered)."""

from pathlib import Path

import numpy as np
import pytest

import specflow as sf

DATA = Path(__file__).parent / "data" / "keras_embedding_optimizers.npz"
IDS = np.array([[1, 1], [3, 0]], np.int32)


def _dense_reference(ids, dy, rows):
    out = np.zeros((rows,) + dy.shape[ids.ndim:], dy.dtype)
    np.add.at(out, ids.reshape(-1), dy.reshape((-1,) + dy.shape[ids.ndim:]))
    return out


def test_tape_gives_indexed_slices_for_a_gathered_variable():
    v = sf.Variable(np.arange(12, dtype=np.float32).reshape(4, 3))
    with sf.GradientTape() as tape:
        y = sf.reduce_sum(sf.gather(v, IDS) * 2.0)
    g = tape.gradient(y, v)
    assert isinstance(g, sf.IndexedSlices)
    np.testing.assert_array_equal(g.indices.numpy(), [1, 1, 3, 0])
    np.testing.assert_array_equal(g.values.numpy(), np.full((4, 3), 2.0, np.float32))
    np.testing.assert_array_equal(g.dense_shape.numpy(), [4, 3])
    np.testing.assert_array_equal(sf.convert_to_tensor(g).numpy(), _dense_reference(IDS, np.full((2, 2, 3), 2.0), 4))
    assert g.shape.as_list() == [4, 3] and g.dtype == sf.float32


def test_traced_tape_gives_indexed_slices_and_returns_it():
    v = sf.Variable(np.arange(12, dtype=np.float32).reshape(4, 3))

    @sf.function
    def grad():
        with sf.GradientTape() as tape:
            y = sf.reduce_sum(sf.gather(v, IDS) ** 2)
        return tape.gradient(y, v)

    g = grad()
    assert isinstance(g, sf.IndexedSlices)
    rows = np.arange(12, dtype=np.float32).reshape(4, 3)[IDS]
    np.testing.assert_allclose(np.asarray(g), _dense_reference(IDS, 2 * rows, 4))


def test_other_uses_make_the_gradient_dense():
    v = sf.Variable(np.ones((4, 3), np.float32))
    with sf.GradientTape(persistent=True) as tape:
        y = sf.reduce_sum(sf.gather(v, IDS)) + sf.reduce_sum(v * 3.0)
        x = sf.constant(np.ones((4, 3), np.float32))
        tape.watch(x)
        z = sf.reduce_sum(sf.gather(x, IDS))
    g = tape.gradient(y, v)
    assert not isinstance(g, sf.IndexedSlices)
    np.testing.assert_array_equal(g.numpy(), _dense_reference(IDS, np.ones((2, 2, 3), np.float32), 4) + 3.0)
    assert not isinstance(tape.gradient(z, x), sf.IndexedSlices)  # a tensor's gradient stays dense here


def test_jacobian_through_a_gather_is_dense():
    v = sf.Variable(np.ones((4, 3), np.float32))
    with sf.GradientTape() as tape:
        row = sf.gather(v, np.array([2], np.int32))[0]
    jac = tape.jacobian(row, v)
    expected = np.zeros((3, 4, 3), np.float32)
    expected[np.arange(3), 2, np.arange(3)] = 1
    np.testing.assert_array_equal(jac.numpy(), expected)


def test_two_gathers_join_their_rows():
    v = sf.Variable(np.ones((5, 2), np.float32))
    with sf.GradientTape() as tape:
        y = sf.reduce_sum(sf.gather(v, np.array([4, 1], np.int32))) + 2.0 * sf.reduce_sum(sf.gather(v, np.array([1], np.int32)))
    g = tape.gradient(y, v)
    assert isinstance(g, sf.IndexedSlices)
    np.testing.assert_array_equal(np.sort(g.indices.numpy()), [1, 1, 4])
    np.testing.assert_array_equal(np.asarray(g)[:, 0], [0, 3, 0, 0, 1])


def test_variable_scatter_methods():
    v = sf.Variable(np.zeros((3, 2), np.float32))
    delta = sf.IndexedSlices(np.array([[1, 2], [3, 4]], np.float32), np.array([2, 2], np.int32), np.array([3, 2]))
    v.scatter_add(delta)
    np.testing.assert_array_equal(v.numpy()[2], [4, 6])
    v.scatter_sub(delta)
    v.scatter_update(sf.IndexedSlices(np.array([[7, 8]], np.float32), np.array([0], np.int32)))
    np.testing.assert_array_equal(v.numpy(), [[7, 8], [0, 0], [0, 0]])
    with pytest.raises(TypeError, match="IndexedSlices"):
        v.scatter_add(np.ones((3, 2), np.float32))


def test_adam_squares_each_occurrence_as_keras():
    """One Adam step on a repeated row: v holds the sum of the squares (Keras 3), not the square
    of the sum (a dense gradient's)."""
    v = sf.Variable(np.zeros((3, 1), np.float32))
    opt = sf.optimizers.Adam(learning_rate=0.1)
    with sf.GradientTape() as tape:
        y = sf.reduce_sum(sf.gather(v, np.array([1, 1], np.int32)) * np.array([[1.0], [2.0]], np.float32))
    opt.apply_gradients([(tape.gradient(y, v), v)])
    np.testing.assert_allclose(opt.slot(v, "v").numpy()[:, 0], [0, 0.001 * 5, 0], rtol=1e-6)
    np.testing.assert_allclose(opt.slot(v, "m").numpy()[:, 0], [0, 0.1 * 3, 0], rtol=1e-6)


@pytest.mark.parametrize("key", ["sgd", "sgd_mom", "sgd_nesterov", "adam", "adam_ams", "adamw", "rmsprop", "rmsprop_c",
                                 "rmsprop_m", "adagrad", "adamax", "nadam", "adadelta", "ftrl", "adam_clipnorm",
                                 "adam_clipvalue", "adam_global", "sgd_clipnorm"])  # fmt: skip
def test_embedding_fit_matches_keras(key):
    """An Embedding (repeated ids) + Dense fitted 4 epochs with each optimizer, against Keras 3.15
    on TensorFlow 2.21 (the fixture: its weights after fit from the same initial weights)."""
    configs = {
        "sgd": ("SGD", dict(learning_rate=0.1)), "sgd_mom": ("SGD", dict(learning_rate=0.1, momentum=0.9)),
        "sgd_nesterov": ("SGD", dict(learning_rate=0.1, momentum=0.9, nesterov=True)),
        "adam": ("Adam", dict(learning_rate=0.05)), "adam_ams": ("Adam", dict(learning_rate=0.05, amsgrad=True)),
        "adamw": ("AdamW", dict(learning_rate=0.05, weight_decay=0.1)),
        "rmsprop": ("RMSprop", dict(learning_rate=0.01)), "rmsprop_c": ("RMSprop", dict(learning_rate=0.01, centered=True)),
        "rmsprop_m": ("RMSprop", dict(learning_rate=0.01, momentum=0.5)),
        "adagrad": ("Adagrad", dict(learning_rate=0.1)), "adamax": ("Adamax", dict(learning_rate=0.05)),
        "nadam": ("Nadam", dict(learning_rate=0.05)), "adadelta": ("Adadelta", dict(learning_rate=1.0)),
        "ftrl": ("Ftrl", dict(learning_rate=0.1, l2_shrinkage_regularization_strength=0.01)),
        "adam_clipnorm": ("Adam", dict(learning_rate=0.05, clipnorm=0.05)),
        "adam_clipvalue": ("Adam", dict(learning_rate=0.05, clipvalue=0.02)),
        "adam_global": ("Adam", dict(learning_rate=0.05, global_clipnorm=0.05)),
        "sgd_clipnorm": ("SGD", dict(learning_rate=0.5, clipnorm=0.05)),
    }  # fmt: skip
    ref = np.load(DATA)
    K = sf.keras
    name, kw = configs[key]
    m = K.Sequential([K.Input((3,), dtype="int32"), K.layers.Embedding(5, 4), K.layers.Flatten(), K.layers.Dense(1)])
    m.set_weights([ref["w0_0"], ref["w0_1"], ref["w0_2"]])
    m.compile(optimizer=getattr(K.optimizers, name)(**kw), loss="mse")
    m.fit(ref["ids"], ref["y"], epochs=4, batch_size=2, verbose=0, shuffle=False)
    for i, w in enumerate(m.get_weights()):
        np.testing.assert_allclose(w, ref[f"{key}_{i}"], atol=3e-7, err_msg=f"{key} weight {i}")


def test_clip_ops_keep_indexed_slices_as_tensorflow():
    """tf.clip_by_global_norm / clip_by_norm / clip_by_value on an IndexedSlices: the norm of its
    values as they are (repeated rows apart), the rows kept (values from TF 2.21)."""
    vals = np.array([[1.0, 2.0], [3.0, -4.0], [0.5, 0.5]], np.float32)
    g = sf.IndexedSlices(vals, np.array([1, 1, 0], np.int32), np.array([3, 2], np.int32))
    (clipped, dense), norm = sf.clip_by_global_norm([g, np.ones((2, 2), np.float32)], 2.0)
    assert isinstance(clipped, sf.IndexedSlices)
    np.testing.assert_allclose(float(norm), 5.8736701011657715, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(clipped).ravel(), [0.17025131, 0.17025131, 1.3620105, -0.68100524, 0, 0], rtol=1e-6)
    np.testing.assert_allclose(dense.numpy().ravel(), [0.34050262] * 4, rtol=1e-6)
    c = sf.clip_by_norm(g, 1.0)
    np.testing.assert_allclose(c.values.numpy().ravel(), [0.1810715, 0.362143, 0.5432145, -0.724286, 0.09053575, 0.09053575],
                               rtol=1e-6)  # fmt: skip
    np.testing.assert_array_equal(sf.clip_by_value(g, -1.0, 1.5).values.numpy().ravel(), [1, 1.5, 1.5, -1, 0.5, 0.5])
