"""Writes tf_sliced.* with TensorFlow (a scratch venv): a Saver checkpoint of two partitioned
variables (``emb`` [10, 3] in 3 parts, ``big`` [300, 2] in 2) and a plain ``w``, and
tf_sliced_expected.npz: the whole tensors as ``tf.train.load_checkpoint`` reads them back.

    python tests/io/data/make_tf_sliced.py tests/io/data
"""

import os
import sys

import numpy as np
import tensorflow as tf

out = sys.argv[1]
tf.compat.v1.disable_eager_execution()
graph = tf.Graph()
with graph.as_default():
    for name, shape, parts, seed in (("emb", [10, 3], 3, 1), ("big", [300, 2], 2, 2)):
        tf.compat.v1.get_variable(name, shape=shape, initializer=tf.compat.v1.random_uniform_initializer(seed=seed),
                                  partitioner=tf.compat.v1.fixed_size_partitioner(parts))
    tf.compat.v1.get_variable("w", shape=[2], initializer=tf.compat.v1.ones_initializer())
    saver = tf.compat.v1.train.Saver(sharded=True)
    with tf.compat.v1.Session(graph=graph) as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        prefix = saver.save(sess, os.path.join(out, "tf_sliced"), write_meta_graph=False, write_state=False)
reader = tf.train.load_checkpoint(prefix)
np.savez(os.path.join(out, "tf_sliced_expected.npz"), **{n: reader.get_tensor(n) for n in ("emb", "big", "w")})
