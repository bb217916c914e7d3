"""Writes tf_keras_text/: Keras 3 preprocessing-layer models exported by TensorFlow 2.21, with
TensorFlow's outputs (python make_tf_keras_text.py tests/export/data/tf_keras_text)."""

import sys

import keras
import numpy as np

out = sys.argv[1]
L = keras.layers
x = keras.Input((None,), dtype="string")
m = keras.Model(x, L.StringLookup(vocabulary=["a", "b", "cc"], num_oov_indices=2, mask_token="")(x))
m.export(f"{out}/string_lookup", verbose=False)
xs = np.array([["a", "b", "zz"], ["cc", "", "a"]], dtype=object)
tv = L.TextVectorization(output_mode="int", output_sequence_length=6)
tv.adapt(["The quick brown fox", "jumps over the lazy dog!", "the dog, the fox.", "Hello World"])
t = keras.Input((), dtype="string")
keras.Model(t, tv(t)).export(f"{out}/text_vectorization", verbose=False)
ts = np.array(["the fox jumps", "unknown Dog words, HELLO"], dtype=object)
np.savez(f"{out}/expected.npz", string_lookup_in=xs.astype(str), string_lookup_out=m(xs).numpy(),
         text_vectorization_in=ts.astype(str), text_vectorization_out=tv(ts).numpy())
