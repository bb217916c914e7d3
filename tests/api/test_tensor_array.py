"""sf.TensorArray (api/tensor_array.py) against TensorFlow 2.21's results, written out: writes in
a while loop with a dynamic size, unstack/read/gather, scatter into a fixed size, concat of
pieces of different lengths, size; eagerly and in sf.function; and the gradient of a tanh RNN
whose outputs a TensorArray collects."""

from __future__ import annotations

import numpy as np
import pytest

import specflow as sf

X = np.arange(6, dtype=np.float32).reshape(3, 2)


def program(x):
    ta = sf.TensorArray(sf.float32, size=0, dynamic_size=True)
    _, ta = sf.while_loop(lambda i, ta: i < sf.shape(x)[0], lambda i, ta: (i + 1, ta.write(i, x[i] * 2.0)),
                          [sf.constant(0), ta])
    t2 = sf.TensorArray(sf.float32, size=3).unstack(x)
    t3 = sf.TensorArray(sf.float32, size=4, element_shape=[2]).scatter([3, 1], x[:2])
    t4 = sf.TensorArray(sf.float32, size=0, dynamic_size=True, infer_shape=False).write(0, x[0:1]).write(1, x[1:3])
    return ta.stack(), t2.read(1), t2.gather([2, 0]), t3.stack(), t4.concat(), ta.size()


WANT = [  # TensorFlow 2.21, eagerly and in tf.function alike
    [[0.0, 2.0], [4.0, 6.0], [8.0, 10.0]],
    [2.0, 3.0],
    [[4.0, 5.0], [0.0, 1.0]],
    [[0.0, 0.0], [2.0, 3.0], [0.0, 0.0], [0.0, 1.0]],
    [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]],
    3,
]


@pytest.mark.parametrize("traced", [False, True])
def test_tensor_array_methods_match_tensorflow(traced):
    got = (sf.function(program) if traced else program)(sf.constant(X))
    assert [np.asarray(g).tolist() for g in got] == WANT


def test_a_tensor_array_collecting_rnn_outputs_differentiates_as_tensorflow():
    w = sf.Variable(np.array([[0.5, -0.2], [0.1, 0.3]], np.float32))

    @sf.function
    def f(x):
        with sf.GradientTape() as tape:
            def body(i, h, ta):
                h = sf.tanh(sf.reshape(sf.matmul(w, sf.reshape(x[i], [2, 1])), [2]) + h)
                return i + 1, h, ta.write(i, h)
            _, _, ta = sf.while_loop(lambda i, h, ta: i < 3, body,
                                     [sf.constant(0), sf.zeros([2]), sf.TensorArray(sf.float32, size=3)])
            loss = sf.reduce_sum(ta.stack() * sf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
        return loss, tape.gradient(loss, w)

    loss, grad = f(sf.constant(X / 5))
    np.testing.assert_allclose(loss.numpy(), 5.910176753997803, rtol=1e-6)
    np.testing.assert_allclose(grad.numpy(), [[6.862308025360107, 11.088207244873047],
                                              [6.192275047302246, 10.362147331237793]], rtol=1e-5)


def test_a_write_of_another_shape_or_dtype_is_refused():
    ta = sf.TensorArray(sf.float32, size=2).write(0, [1.0, 2.0])
    with pytest.raises(ValueError, match="shape"):
        ta.write(1, [1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="int32"):
        ta.write(1, sf.constant([1, 2]))
