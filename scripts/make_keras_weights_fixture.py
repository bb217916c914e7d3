"""Write tests/api/data/keras_weights/: for each model of tests/api/test_keras_weights_file.py,
Keras 3's .weights.h5 after two Adam steps, its predictions, and its weights after one more step
(run where Keras is installed: PYTHONPATH=. python -m scripts.make_keras_weights_fixture)."""

import keras
import numpy as np

from tests.api.test_keras_weights_file import DATA, build, data

if __name__ == "__main__":
    DATA.mkdir(parents=True, exist_ok=True)
    for name in ("mlp", "rnn_attention"):
        keras.utils.set_random_seed(0)
        x, y = data(name)
        m = build(keras, name)
        m.compile(keras.optimizers.Adam(0.01), "mse")
        m.fit(x, y, epochs=2, batch_size=8, verbose=0, shuffle=False)
        m.save_weights(DATA / f"{name}.weights.h5")
        pred = np.asarray(m(x, training=False))
        m.fit(x, y, epochs=1, batch_size=8, verbose=0, shuffle=False)
        np.savez(DATA / f"{name}.npz", pred=pred, **{f"after_{i}": w for i, w in enumerate(m.get_weights())})
        print("wrote", name)
