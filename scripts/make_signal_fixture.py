"""Write tests/api/data/tf_signal.npz: TensorFlow's tf.signal and tf.bitwise results for the calls
in tests/api/test_signal.py (run with TensorFlow installed: PYTHONPATH=. python -m scripts.make_signal_fixture)."""

import numpy as np
import tensorflow as tf

from tests.api.test_signal import DATA, flat_results

if __name__ == "__main__":
    DATA.parent.mkdir(parents=True, exist_ok=True)
    np.savez(DATA, **flat_results(tf))
    print("wrote", DATA, DATA.stat().st_size, "bytes")
