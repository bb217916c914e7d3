"""Write tf_style_models.npz: TensorFlow's numbers for the models in tests/api/tf_style_models.py
(run with TensorFlow installed: ``PYTHONPATH=. python tests/api/data/make_tf_style_models.py``;
the npz beside this file was written by TensorFlow 2.21 on CPU)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def main() -> None:
    import tensorflow as tf

    sys.path.insert(0, str(HERE.parent))
    import tf_style_models as models

    out = {}
    for name, build in models.MODELS.items():
        for k, v in build(tf, tf.keras.optimizers).items():
            out[f"{name}/{k}"] = np.asarray(v)
    for k, v in models.retracing(tf, lambda f: f.experimental_get_tracing_count()).items():
        out[f"retracing/{k}"] = np.asarray(v)
    import keras

    for k, v in models.keras_models(tf, keras).items():
        out[f"keras/{k}"] = np.asarray(v)
    np.savez_compressed(HERE / "tf_style_models.npz", tf_version=np.array(tf.__version__), **out)


if __name__ == "__main__":
    main()
