"""Cases for nn_ops: activations and their gradients, softmax, bias, losses, InTopKV2.

References are the formulas from TensorFlow's op documentation written out in plain numpy
(float64 where a stable form matters), not calls into the kernels.
"""

import numpy as np

from tests.ops.harness import Case, f32, f64, i32

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def softmax_ref(x):
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def sigmoid_ref(x):
    return 1.0 / (1.0 + np.exp(-np.asarray(x, np.float64)))


def _cast_like(fn):
    """Run a float64 reference and cast to the first input's dtype."""
    return lambda *xs: np.asarray(fn(*[np.asarray(x, np.float64) for x in xs])).astype(xs[0].dtype)


# Inputs kept away from the kinks (0 and 6) so float rounding cannot flip a branch.
_x = f32(3, 4, low=-3, high=8)
_x[np.abs(_x) < 1e-3] = 0.5
_g = f32(3, 4)
_y_sig = sigmoid_ref(f32(3, 4)).astype(np.float32)
_y_tanh = np.tanh(f32(3, 4))
_y_pos = np.abs(f32(3, 4)) + np.float32(0.25)
_elu_out = np.where(_x < 0, np.exp(_x) - 1, _x).astype(np.float32)
_selu_out = (SELU_SCALE * np.where(_x < 0, SELU_ALPHA * (np.exp(_x) - 1), _x)).astype(np.float32)


def _zero_where_no_dy(f, y, dy):
    with np.errstate(all="ignore"):
        return np.where(dy == 0, np.float32(0), f(y, dy)).astype(np.float32)


def _in_top_k_ref(pred, targets, k):
    out = []
    for row, t in zip(pred, targets, strict=True):
        if not 0 <= t < len(row) or not np.all(np.isfinite(row)):
            out.append(False)
        else:
            out.append(sum(1 for v in row if v > row[t]) < k)
    return np.array(out)


_pred = np.array(
    [[0.1, 0.5, 0.5, 0.2], [0.4, 0.3, 0.2, 0.1], [0.9, np.inf, 0.1, 0.0], [0.1, 0.2, 0.3, 0.4], [1, 2, 3, 4]],
    np.float32,
)


def _xent_ref(features, labels):
    f, lab = np.broadcast_arrays(np.asarray(features, np.float64), np.asarray(labels, np.float64))
    p = softmax_ref(f)
    return (-(lab * np.log(p)).sum(-1)).astype(features.dtype), (p - lab).astype(features.dtype)


def _sparse_xent_ref(features, labels):
    onehot = np.eye(features.shape[1])[labels]
    return _xent_ref(features, onehot)


def _bias_add_ref(value, bias, channel_axis):
    out = value.copy()
    for c in range(bias.shape[0]):
        index = [slice(None)] * value.ndim
        index[channel_axis] = c
        out[tuple(index)] += bias[c]
    return out


def _bias_grad_ref(dy, channel_axis):
    moved = np.moveaxis(dy, channel_axis, 0)
    return np.array([moved[c].sum() for c in range(moved.shape[0])], dtype=dy.dtype)


_labels_dist = softmax_ref(f32(3, 4)).astype(np.float32)
_v4 = f32(2, 3, 4, 5)
_b5, _b3 = f32(5), f32(3)

_relu_lines = f32(128, 160)  # above wide_rows.MIN_SIZE
_relu_lines[0, :4] = [np.nan, -np.inf, np.inf, -0.0]

CASES = [
    # activations
    Case("Relu", [_x], ref=lambda x: x * (x > 0)),
    Case("Relu", [i32(3, 4)], ref=lambda x: x * (x > 0), id="Relu-int32"),
    # lines of zeros (ops/wide_rows.py): NaN propagates, -inf and -0.0 give 0
    Case("Relu", [_relu_lines], ref=lambda x: np.maximum(x, 0), id="Relu-lines"),
    Case("Relu6", [_x], ref=lambda x: np.minimum(x * (x > 0), 6)),
    Case("Elu", [_x], ref=_cast_like(lambda x: np.where(x < 0, np.exp(x) - 1, x)), rtol=1e-5),
    Case("Selu", [_x], ref=_cast_like(lambda x: SELU_SCALE * np.where(x < 0, SELU_ALPHA * (np.exp(x) - 1), x)), rtol=1e-5),
    # TF selects on features < 0: -0.0 passes through as -0.0 (1 / elu(-0.0) is -inf in TF).
    *(Case(op, [np.array([-0.0, 0.0, -1.0], np.float32)], id=f"{op}-negative-zero",
           check=lambda outs, ins: np.testing.assert_array_equal(np.signbit(outs[0]), [True, False, True]))
      for op in ("Elu", "Selu")),
    Case("LeakyRelu", [_x], ref=lambda x: np.where(x < 0, np.float32(0.2) * x, x)),
    Case("LeakyRelu", [f64(3, 4)], attrs={"alpha": 0.5}, ref=lambda x: np.where(x < 0, 0.5 * x, x), id="LeakyRelu-alpha"),
    # TF's alpha attr is a float32: on float64 the slope is float32(0.2), not 0.2 (differs at 3e-9).
    Case("LeakyRelu", [np.array([-1.0, 2.0, -3.0])],
         ref=lambda x: np.array([-0.20000000298023224, 2.0, -0.6000000089406967]), rtol=0, atol=1e-16,
         id="LeakyRelu-float64-alpha-is-float32"),
    Case("LeakyReluGrad", [np.array([1.0, 1.0]), np.array([-1.0, 1.0])],
         ref=lambda g, x: np.array([0.20000000298023224, 1.0]), rtol=0, atol=1e-17,
         id="LeakyReluGrad-float64-alpha-is-float32"),
    Case("Softplus", [_x], ref=_cast_like(lambda x: np.log(np.exp(x) + 1)), rtol=1e-5),
    Case("Softplus", [np.array([-200.0, 200.0], np.float32)], ref=lambda x: np.array([0.0, 200.0], np.float32),
         id="Softplus-no-overflow"),
    Case("Softsign", [_x], ref=_cast_like(lambda x: x / (np.abs(x) + 1)), rtol=1e-5),
    # gradient kernels
    Case("ReluGrad", [_g, _x], ref=lambda g, x: g * (x > 0)),
    Case("Relu6Grad", [_g, _x], ref=lambda g, x: g * ((x > 0) & (x < 6))),
    # TF multiplies by the mask: an infinite or NaN gradient outside (0, 6) gives NaN, not 0.
    Case("Relu6Grad", [np.array([np.inf, -np.inf, np.nan, 2.0, np.inf], np.float32), np.array([-1.0, 7.0, 0.0, 8.0, 3.0], np.float32)],
         ref=lambda g, x: np.array([np.nan, np.nan, np.nan, 0.0, np.inf], np.float32), id="Relu6Grad-non-finite-gradient"),
    Case("EluGrad", [_g, _elu_out], ref=_cast_like(lambda g, y: np.where(y < 0, g * (y + 1), g)), rtol=1e-5),
    Case("SeluGrad", [_g, _selu_out],
         ref=_cast_like(lambda g, y: np.where(y < 0, g * (y + SELU_SCALE * SELU_ALPHA), g * SELU_SCALE)), rtol=1e-5),
    Case("LeakyReluGrad", [_g, _x], attrs={"alpha": 0.3}, ref=lambda g, x: np.where(x > 0, g, np.float32(0.3) * g)),
    Case("SoftplusGrad", [_g, _x], ref=_cast_like(lambda g, x: g / (1 + np.exp(-x))), rtol=1e-5),
    Case("SigmoidGrad", [_y_sig, _g], ref=_cast_like(lambda y, dy: dy * y * (1 - y)), rtol=1e-5),
    Case("TanhGrad", [_y_tanh, _g], ref=_cast_like(lambda y, dy: dy * (1 - y * y)), rtol=1e-5),
    # complex: TF's kernels do not conjugate (its gradients pass conj(y)); TF 2.21's numbers
    Case("TanhGrad", [np.array([0.3 + 0.7j]), np.array([1.0 + 0.5j])], ref=lambda y, dy: np.array([1.61 + 0.28j]),
         rtol=1e-12, id="TanhGrad-complex-tf"),
    Case("SigmoidGrad", [np.array([0.3 + 0.7j]), np.array([1.0 + 0.5j])], ref=lambda y, dy: np.array([0.56 + 0.63j]),
         rtol=1e-12, id="SigmoidGrad-complex-tf"),
    # the gradients TF's own gradient functions emit (ops/math_grad_ops.py)
    Case("SqrtGrad", [_y_pos, _g], ref=_cast_like(lambda y, dy: dy * 0.5 / y), rtol=1e-5),
    Case("RsqrtGrad", [_y_pos, _g], ref=_cast_like(lambda y, dy: dy * -0.5 * y**3), rtol=1e-5),
    Case("ReciprocalGrad", [_y_pos, _g], ref=_cast_like(lambda y, dy: -dy * y * y), rtol=1e-5),
    Case("InvGrad", [_y_pos.astype(np.float64), _g.astype(np.float64)], ref=lambda y, dy: -dy * y * y),
    # TF's kernels give 0 where dy is 0, whatever y (a NaN or infinite forward value with no gradient)
    *[Case(op, [np.array([np.nan, np.inf, -np.inf, 0.0, np.nan, 2.0], np.float32),
                np.array([0.0, 0.0, -0.0, 0.0, 1.0, 0.0], np.float32)],
           ref=lambda y, dy, f=f: _zero_where_no_dy(f, y, dy), id=f"{op}-zero-dy")
      for op, f in (("SqrtGrad", lambda y, dy: dy * 0.5 / y), ("RsqrtGrad", lambda y, dy: dy * -0.5 * y**3),
                    ("ReciprocalGrad", lambda y, dy: -dy * y * y))],
    Case("SqrtGrad", [np.array([1 + 2j, -0.5j], np.complex128), np.array([1 - 1j, 2], np.complex128)],
         ref=lambda y, dy: dy * np.conj(0.5 / y), id="SqrtGrad-complex-conjugates"),
    # softmax
    Case("Softmax", [f32(3, 5)], ref=_cast_like(softmax_ref), rtol=1e-5),
    Case("Softmax", [f32(2, 3, 4) + 1000], ref=lambda x: softmax_ref(x - 1000).astype(np.float32), rtol=1e-5,
         id="Softmax-large-logits"),
    Case("LogSoftmax", [f64(3, 5)], ref=lambda x: np.log(softmax_ref(x))),
    Case("LogSoftmax", [f32(4) + 500], ref=lambda x: np.log(softmax_ref(x - 500)).astype(np.float32), rtol=1e-5,
         atol=1e-5, id="LogSoftmax-large-logits"),
    # bias
    Case("BiasAdd", [_v4, _b5], ref=lambda v, b: _bias_add_ref(v, b, 3)),
    Case("BiasAdd", [f32(4, 5), _b5], ref=lambda v, b: _bias_add_ref(v, b, 1), id="BiasAdd-matrix"),
    Case("BiasAdd", [_v4, _b3], attrs={"data_format": "NCHW"}, ref=lambda v, b: _bias_add_ref(v, b, 1),
         id="BiasAdd-NCHW"),
    Case("BiasAddGrad", [_v4], ref=lambda d: _bias_grad_ref(d, 3), rtol=1e-5, atol=1e-5),
    Case("BiasAddGrad", [_v4], attrs={"data_format": "NCHW"}, ref=lambda d: _bias_grad_ref(d, 1), rtol=1e-5,
         atol=1e-5, id="BiasAddGrad-NCHW"),
    # losses
    Case("SoftmaxCrossEntropyWithLogits", [f32(3, 4), _labels_dist], ref=_xent_ref, rtol=1e-5, atol=1e-6),
    Case("SoftmaxCrossEntropyWithLogits", [f64(3, 4), softmax_ref(f64(1, 4))], ref=_xent_ref,
         id="SoftmaxCrossEntropyWithLogits-broadcast-labels"),
    Case("SparseSoftmaxCrossEntropyWithLogits", [f32(4, 3), np.array([0, 2, 1, 2], np.int64)], ref=_sparse_xent_ref,
         rtol=1e-5, atol=1e-6),
    Case("SparseSoftmaxCrossEntropyWithLogits", [f64(2, 5), np.array([4, 0], np.int32)], ref=_sparse_xent_ref,
         id="SparseSoftmaxCrossEntropyWithLogits-int32"),
    # More classes than the kernel's transposed (few-classes) path takes: the row-wise path.
    Case("SparseSoftmaxCrossEntropyWithLogits", [f32(5, 70), np.array([0, 69, 33, 7, 69], np.int64)],
         ref=_sparse_xent_ref, rtol=1e-5, atol=1e-6, id="SparseSoftmaxCrossEntropyWithLogits-many-classes"),
    Case("L2Loss", [f32(3, 4)], ref=_cast_like(lambda t: (t**2).sum() / 2), rtol=1e-5),
    Case("InTopKV2", [_pred, np.array([1, 0, 0, 3, 7], np.int32), np.array(1, np.int32)], ref=_in_top_k_ref),
    Case("InTopKV2", [_pred, np.array([2, 3, 1, 1, -1], np.int64), np.array(3, np.int64)], ref=_in_top_k_ref,
         id="InTopKV2-k3-int64"),
]  # fmt: skip
