"""Write tests/api/data/tf_sparse.npz: TensorFlow's tf.sparse results for the calls in
tests/api/test_sparse.py (run with TensorFlow installed: PYTHONPATH=. python -m scripts.make_sparse_fixture)."""

import numpy as np
import tensorflow as tf

from tests.api.test_sparse import DATA, flat_results

if __name__ == "__main__":
    np.savez(DATA, **flat_results(tf))
    print("wrote", DATA, DATA.stat().st_size, "bytes")
