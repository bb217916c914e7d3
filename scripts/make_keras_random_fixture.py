"""Write tests/api/data/keras_random.npz: Keras 3's (TensorFlow backend, CPU) results for the
cases of tests/api/test_keras_random.py (``run_cases``: keras.random draws, initializers, the
dropout/noise layers in training, layers' and models' initial weights after
``keras.utils.set_random_seed`` and a few ``fit`` steps). Run with Keras installed:
KERAS_BACKEND=tensorflow PYTHONPATH=. python -m scripts.make_keras_random_fixture"""

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")  # TF's CPU kernels: Philox, the bits sf computes

import keras  # noqa: E402
import numpy as np  # noqa: E402

from tests.api.test_keras_random import DATA, run_cases  # noqa: E402


def main() -> None:
    assert keras.backend.backend() == "tensorflow", keras.backend.backend()
    out = run_cases(keras)
    DATA.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(DATA, **out)
    print(f"wrote {DATA}: {len(out)} arrays, {DATA.stat().st_size} bytes")


if __name__ == "__main__":
    main()
