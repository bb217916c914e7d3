"""Write tests/api/data/keras_ops.npz: Keras 3's keras.ops results for the calls in
tests/api/test_keras_ops.py (run with Keras installed: PYTHONPATH=. python -m scripts.make_keras_ops_fixture)."""

from pathlib import Path

import keras
import numpy as np

from tests.api.test_keras_ops import DATA, flat_results

if __name__ == "__main__":
    np.savez(Path(DATA), **flat_results(keras.ops))
    print("wrote", DATA)
