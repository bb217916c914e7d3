"""Write tests/api/data/tf_lookup.npz: TensorFlow's tf.lookup results for the calls in
tests/api/test_lookup.py (run with TensorFlow installed: PYTHONPATH=. python -m scripts.make_lookup_fixture)."""

import tempfile

import numpy as np
import tensorflow as tf

from tests.api.test_lookup import DATA, lookup_results

if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        eager = lookup_results(tf, tmp)
    with tempfile.TemporaryDirectory() as tmp:
        traced = lookup_results(tf, tmp, in_function=True)
    for name in eager:  # TF's tf.function gives what eager gives
        np.testing.assert_array_equal(eager[name], traced[name], err_msg=name)
    DATA.parent.mkdir(parents=True, exist_ok=True)
    np.savez(DATA, **eager)
    print("wrote", DATA, DATA.stat().st_size, "bytes")
