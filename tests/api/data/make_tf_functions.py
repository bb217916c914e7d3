"""Writes tf_functions/ (a SavedModel from tf.saved_model.save of a tf.Module whose tf.functions
no signature serves) and tf_functions_expected.npz (inputs, and what tf.saved_model.load's restored
functions return for them) beside it. Run with TensorFlow installed:
``python tests/api/data/make_tf_functions.py tests/api/data/tf_functions``
(the files beside this one were written by TensorFlow 2.21 on CPU)."""

import os
import shutil
import sys

import numpy as np
import tensorflow as tf


class Sub(tf.Module):  # functions only, no variables
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def square(self, v):
        return v * v


class Model(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2))
        self.b = tf.Variable([1.0, -1.0])
        self.counter = tf.Variable(0.0)
        self.sub = Sub()

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def __call__(self, x):
        return tf.matmul(x, self.w) + self.b + self.counter

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([], tf.float32)])
    def scaled(self, x, s):
        return {"y": s * tf.matmul(x, self.w), "n": tf.reduce_sum(x)}

    @tf.function
    def double(self, x):  # traced twice: [2] and [1, 2]
        return 2.0 * x + self.b

    @tf.function
    def mode(self, x, training=False):  # a Python bool, traced as a constant
        return (x * 2.0, [x]) if training else (x - 1.0, [self.b])

    @tf.function(input_signature=[])
    def bump(self):
        self.counter.assign_add(1.0)


def main(out: str) -> None:
    shutil.rmtree(out, ignore_errors=True)
    m = Model()
    m.double(tf.constant([1.0, 2.0]))
    m.double(tf.constant([[1.0, 2.0]]))
    m.mode(tf.zeros([2]))
    m.mode(tf.zeros([2]), training=True)
    tf.saved_model.save(m, out, signatures={"serving_default": m.__call__})
    shutil.rmtree(os.path.join(out, "assets"), ignore_errors=True)  # empty
    for extra in ("fingerprint.pb",):
        if os.path.exists(os.path.join(out, extra)):
            os.remove(os.path.join(out, extra))
    loaded = tf.saved_model.load(out)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    v2 = rng.standard_normal(2).astype(np.float32)
    v12 = rng.standard_normal((1, 2)).astype(np.float32)
    rec = {"x": x, "v2": v2, "v12": v12, "call": loaded(x)}
    scaled = loaded.scaled(x, 2.0)
    rec.update(scaled_y=scaled["y"], scaled_n=scaled["n"])
    rec.update(double_v2=loaded.double(v2), double_v12=loaded.double(v12), square=loaded.sub.square(v2))
    for training in (False, True):
        first, (second,) = loaded.mode(v2, training=training)
        rec.update({f"mode_{training}_0": first, f"mode_{training}_1": second})
    loaded.bump()
    loaded.bump()
    rec.update(counter=loaded.counter, call_after_bump=loaded(x))
    np.savez(os.path.join(os.path.dirname(os.path.abspath(out)), "tf_functions_expected.npz"),
             **{k: np.asarray(v) for k, v in rec.items()})


if __name__ == "__main__":
    main(sys.argv[1])
