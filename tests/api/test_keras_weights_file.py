"""model.save_weights / load_weights in Keras 3's .weights.h5 layout, against files Keras 3.15
wrote (scripts/make_keras_weights_fixture.py): a Keras file loads into the same sf.keras model
(predictions equal Keras's), the file sf writes has Keras's exact layout (so Keras loads it), and
a compiled model's optimizer state loads too: training continued after loading equals Keras's."""

from pathlib import Path

import numpy as np
import pytest

import specflow as sf

pytest.importorskip("h5py")
DATA = Path(__file__).parent / "data" / "keras_weights"


def build(K, name: str):
    """The same two models in Keras (K = keras) and sf.keras (K = sf.keras)."""
    if name == "mlp":
        return K.Sequential([K.Input((6,)), K.layers.Dense(5, activation="relu"), K.layers.BatchNormalization(),
                             K.layers.Dropout(0.0), K.layers.Dense(2)])  # fmt: skip (no random mask: Keras and sf draw differently)
    x = K.Input((4, 3))
    h = K.layers.Bidirectional(K.layers.GRU(2, return_sequences=True))(x)
    h = K.layers.MultiHeadAttention(2, 3)(h, h)
    h = K.layers.LayerNormalization()(h)
    h = K.layers.LSTM(3)(h)
    return K.Model(x, K.layers.Dense(1)(h))


def data(name: str):
    rng = np.random.default_rng(0)
    if name == "mlp":
        return rng.standard_normal((8, 6)).astype(np.float32), rng.standard_normal((8, 2)).astype(np.float32)
    return rng.standard_normal((8, 4, 3)).astype(np.float32), rng.standard_normal((8, 1)).astype(np.float32)


def layout(path) -> dict:
    import h5py

    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda n, o: out.__setitem__(n, tuple(o.shape) if hasattr(o, "shape") else None))
    return out


@pytest.mark.parametrize("name", ["mlp", "rnn_attention"])
def test_keras_file_loads_and_training_continues_as_keras(name, tmp_path):
    x, y = data(name)
    ref = np.load(DATA / f"{name}.npz")
    m = build(sf.keras, name)
    m(x)
    m.compile(sf.keras.optimizers.Adam(0.01), "mse")
    m.load_weights(DATA / f"{name}.weights.h5")
    np.testing.assert_allclose(m(x, training=False).numpy(), ref["pred"], atol=2e-6)
    assert int(m.optimizer.iterations.numpy()) == 2  # Keras's two steps, with their Adam slots
    m.fit(x, y, epochs=1, batch_size=8, verbose=0, shuffle=False)
    # attention's key bias has a zero gradient up to rounding, which Adam's m / sqrt(v) scales up
    # to ~1e-5 on either side: a looser bound there, as for any weight of that model
    atol = 2e-6 if name == "mlp" else 3e-5
    for i, w in enumerate(m.get_weights()):
        np.testing.assert_allclose(w, ref[f"after_{i}"], atol=atol, err_msg=f"weight {i}")
    # what sf writes has Keras's layout, dataset for dataset
    mine = tmp_path / "mine.weights.h5"
    m.save_weights(mine)
    assert layout(mine) == layout(DATA / f"{name}.weights.h5")
    again = build(sf.keras, name)
    again(x)
    again.load_weights(mine)
    np.testing.assert_array_equal(again(x, training=False).numpy(), m(x, training=False).numpy())


def test_weights_file_errors(tmp_path):
    m = build(sf.keras, "mlp")
    m(np.zeros((1, 6), np.float32))
    with pytest.raises(ValueError, match=r"\.weights\.h5"):
        m.save_weights(tmp_path / "w.h5")
    with pytest.raises(FileNotFoundError):
        m.load_weights(tmp_path / "missing.weights.h5")
    other = sf.keras.Sequential([sf.keras.Input((6,)), sf.keras.layers.Dense(3)])
    other(np.zeros((1, 6), np.float32))
    other.save_weights(tmp_path / "other.weights.h5")
    before = m.get_weights()
    with pytest.raises(ValueError, match=r"shape.*\(6, 5\).*\(6, 3\)"):
        m.load_weights(tmp_path / "other.weights.h5")
    for w, b in zip(m.get_weights(), before):  # nothing assigned: every value is checked first
        np.testing.assert_array_equal(w, b)
    no_norm = sf.keras.Sequential([sf.keras.Input((6,)), sf.keras.layers.Dense(5), sf.keras.layers.Dense(2)])
    no_norm(np.zeros((1, 6), np.float32))
    no_norm.save_weights(tmp_path / "no_norm.weights.h5")
    with pytest.raises(ValueError, match=r"'batch_normalization(_\d+)?' expected 4 variables, but received 0"):
        m.load_weights(tmp_path / "no_norm.weights.h5")
    m.save_weights(tmp_path / "m.weights.h5")
    with pytest.raises(FileExistsError):
        m.save_weights(tmp_path / "m.weights.h5", overwrite=False)
