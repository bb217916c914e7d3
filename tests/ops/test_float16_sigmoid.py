"""float16 Sigmoid as TF's half kernel rounds it (e / (1 + e), each step in half; 1 where exp
overflows): bit patterns TensorFlow 2.21 gave on CPU, recorded as literals. An exactly rounded
logistic differs in the last bit for about one input in six, which a gradient at saturation,
y * (1 - y), turns into a visible difference."""

import numpy as np

from specflow.ops.eval import evaluate_op

X = np.array([-12.0, -3.0, -0.0096, 0.5, 2.0, 11.1, 15.0], np.float16)
TF_BITS = [103, 10770, 14326, 14587, 15116, 15360, 15360]


def test_float16_sigmoid_matches_tf_bits():
    out = evaluate_op("Sigmoid", [X])[0]
    assert out.dtype == np.float16 and out.view(np.uint16).tolist() == TF_BITS


def test_float16_sigmoid_edges():
    out = evaluate_op("Sigmoid", [np.array([np.inf, -np.inf, np.nan, 0.0], np.float16)])[0]
    assert out[0] == 1 and out[1] == 0 and np.isnan(out[2]) and out[3] == 0.5
