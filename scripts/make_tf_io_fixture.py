"""Write tests/api/data/tf_io/: TensorFlow's parses for the calls in tests/api/test_tf_io.py and
TFRecord files TF wrote (run with TensorFlow installed: PYTHONPATH=. python -m scripts.make_tf_io_fixture)."""

import numpy as np
import tensorflow as tf

from tests.api.test_tf_io import DATA, examples, flat_results

if __name__ == "__main__":
    DATA.mkdir(parents=True, exist_ok=True)
    serialized = examples(tf)
    for name, options in (("records.tfrecord", None), ("records.gz.tfrecord", "GZIP")):
        with tf.io.TFRecordWriter(str(DATA / name), options) as w:
            for r in serialized:
                w.write(r)
    out = flat_results(tf)
    out["serialized"] = np.array(serialized, dtype=object)
    np.savez(DATA / "parsed.npz", **out)
    print("wrote", DATA)
