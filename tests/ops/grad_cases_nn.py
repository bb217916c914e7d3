"""Gradient cases for nn_ops: activations, their gradient kernels (second derivatives),
softmax, BiasAdd, L2Loss and the cross-entropy losses.

Inputs stay away from the kinks (0 for relu-like ops, 6 for relu6) so that central
differences never straddle one.
"""

import numpy as np

from tests.ops.grad_harness import GradCase, away_from, g64, gpos

SELU_SCALE_ALPHA = 1.0507009873554804934193349852946 * 1.6732632423543772848170429916717


def _x(*shape, points=(0.0,), low=-2.0, high=2.0):
    return away_from(g64(*shape, low=low, high=high), points)


def _dist(*shape):
    """Rows of a probability distribution (soft labels)."""
    p = gpos(*shape)
    return p / p.sum(axis=-1, keepdims=True)


CASES = [
    # --- activations: each through its *Grad kernel ---
    GradCase("Relu", [_x(3, 4)]),
    GradCase("Relu6", [_x(3, 4, points=(0.0, 6.0), low=-2, high=8)]),
    GradCase("Elu", [_x(3, 4)]),
    GradCase("Selu", [_x(3, 4)]),
    GradCase("LeakyRelu", [_x(3, 4)], id="LeakyRelu-default-alpha"),
    GradCase("LeakyRelu", [_x(3, 4)], {"alpha": 0.3}, id="LeakyRelu-alpha"),
    GradCase("Softplus", [g64(3, 4, low=-4, high=4)]),
    GradCase("Softsign", [_x(3, 4)]),
    # --- the gradient kernels: linear in the gradient, slope' for the second input ---
    GradCase("ReluGrad", [g64(3, 4), _x(3, 4)]),
    GradCase("Relu6Grad", [g64(3, 4), _x(3, 4, points=(0.0, 6.0), low=-2, high=8)]),
    GradCase("EluGrad", [g64(3, 4), _x(3, 4, low=-0.9, high=2)]),
    GradCase("SeluGrad", [g64(3, 4), _x(3, 4, low=-0.9 * SELU_SCALE_ALPHA, high=2)]),
    GradCase("LeakyReluGrad", [g64(3, 4), _x(3, 4)], {"alpha": 0.3}),
    GradCase("SoftplusGrad", [g64(3, 4), g64(3, 4, low=-4, high=4)]),
    GradCase("SoftsignGrad", [g64(3, 4), _x(3, 4)]),
    GradCase("SigmoidGrad", [g64(3, 4, low=0.05, high=0.95), g64(3, 4)]),
    GradCase("TanhGrad", [g64(3, 4, low=-0.95, high=0.95), g64(3, 4)]),
    GradCase("SqrtGrad", [g64(3, 4, low=0.3, high=2), g64(3, 4)]),
    GradCase("RsqrtGrad", [g64(3, 4, low=0.3, high=2), g64(3, 4)]),
    GradCase("ReciprocalGrad", [g64(3, 4, low=0.3, high=2), g64(3, 4)]),
    GradCase("InvGrad", [g64(3, 4, low=-2, high=-0.3), g64(3, 4)]),
    # --- softmax over the last axis ---
    GradCase("Softmax", [g64(3, 4)]),
    GradCase("Softmax", [g64(2, 2, 3)], id="Softmax-rank3"),
    GradCase("LogSoftmax", [g64(3, 4)]),
    GradCase("LogSoftmax", [g64(2, 2, 3)], id="LogSoftmax-rank3"),
    # --- bias ---
    GradCase("BiasAdd", [g64(2, 3), g64(3)], id="BiasAdd-matrix"),
    GradCase("BiasAdd", [g64(1, 2, 2, 3), g64(3)], id="BiasAdd-NHWC"),
    GradCase("BiasAdd", [g64(1, 3, 2, 2), g64(3)], {"data_format": "NCHW"}, id="BiasAdd-NCHW"),
    GradCase("BiasAddGrad", [g64(2, 2, 3)], id="BiasAddGrad-NHWC"),
    GradCase("BiasAddGrad", [g64(2, 3, 2)], {"data_format": "NCHW"}, id="BiasAddGrad-NCHW"),
    # --- losses (both outputs of the cross entropies are weighted by the harness, so the
    # backprop output's own gradient is checked too) ---
    GradCase("L2Loss", [g64(3, 4)]),
    GradCase("L2Loss", [g64(5)], id="L2Loss-vector"),
    GradCase("SoftmaxCrossEntropyWithLogits", [g64(3, 4), _dist(3, 4)]),
    GradCase(
        "SoftmaxCrossEntropyWithLogits", [g64(3, 4), _dist(1, 4)], id="SoftmaxCrossEntropy-broadcast-labels"
    ),
    GradCase(
        "SoftmaxCrossEntropyWithLogits", [g64(1, 4), _dist(3, 4)], id="SoftmaxCrossEntropy-broadcast-logits"
    ),
    GradCase("SparseSoftmaxCrossEntropyWithLogits", [g64(3, 4), np.array([0, 3, 1], np.int64)]),
    GradCase(
        "SparseSoftmaxCrossEntropyWithLogits",
        [g64(2, 5), np.array([4, 4], np.int32)],
        id="SparseSoftmaxCrossEntropy-int32",
    ),
]
