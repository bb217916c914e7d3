"""Gradients where the math leaves a choice: inputs exactly on kinks and ties (relu at 0, max
ties, clip bounds, 0 ** 0 ...). TensorFlow's values for them are recorded in
``data/tf_grad_kinks.json`` by ``scripts/tf_grad_parity.py --record``; test_grad_kinks.py holds
specflow to them."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.ops.grad_harness import GradCase

RECORDED = Path(__file__).parent / "data" / "tf_grad_kinks.json"


def kink_cases():
    z = np.array([-1.0, 0.0, 0.0, 2.0, 6.0])
    ties = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    img = np.zeros((1, 4, 4, 1))
    img[0, :2, :2, 0] = 5.0
    return [
        *[GradCase(op, [z], id=f"{op}-kinks") for op in
          ("Relu", "Relu6", "Abs", "Elu", "Selu", "Softplus", "Sign", "Sqrt", "Rsqrt", "Floor", "Round", "Neg",
           "Square", "Softsign", "Sigmoid", "Tanh")],
        GradCase("LeakyRelu", [z], {"alpha": 0.2}, id="LeakyRelu-kinks"),
        GradCase("Maximum", [ties, np.array([3.0, 2.0, 1.0])], id="Maximum-ties"),
        GradCase("Minimum", [ties, np.array([3.0, 2.0, 1.0])], id="Minimum-ties"),
        GradCase("ClipByValue", [z, np.float64(0.0), np.float64(2.0)], id="ClipByValue-bounds"),
        GradCase("Max", [ties, np.array([1], np.int32)], id="Max-ties"),
        GradCase("Min", [ties, np.array([0, 1], np.int32)], id="Min-ties"),
        GradCase("Pow", [np.array([0.0, 0.0, 2.0, -2.0]), np.array([0.0, 2.0, 0.0, 2.0])], id="Pow-zeros"),
        GradCase("Atan2", [np.array([0.0, 1.0]), np.array([0.0, 0.0])], id="Atan2-origin"),
        GradCase("MaxPool", [img], {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "VALID"},
                 id="MaxPool-ties"),
        GradCase("Xlogy", [np.array([0.0, 0.0, 1.0]), np.array([0.0, 1.0, 2.0])], id="Xlogy-zeros"),
        GradCase("Div", [np.array([1.0, 0.0]), np.array([0.0, 0.0])], id="Div-by-zero"),
        GradCase("DivNoNan", [np.array([1.0, 0.0]), np.array([0.0, 2.0])], id="DivNoNan-zero"),
        GradCase("Log", [np.array([0.0, 1.0])], id="Log-zero"),
        GradCase("Reciprocal", [np.array([0.0, 2.0])], id="Reciprocal-zero"),
        GradCase("Mean", [np.zeros((0, 3)), np.array([0], np.int32)], id="Mean-empty"),
        GradCase("Prod", [np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 1.0]]), np.array([1], np.int32)], id="Prod-zeros"),
        # The loss output only: TF's labels gradient leaves out what flows back through the
        # backprop output (d(softmax - labels)/dlabels); ours includes it (finite differences agree).
        GradCase("SoftmaxCrossEntropyWithLogits", [np.zeros((2, 3)), np.array([[1.0, 0, 0], [0.5, 0.5, 0]])],
                 outputs=[0], id="SoftmaxXent-uniform"),
        GradCase("L2Loss", [z], id="L2Loss"),
        GradCase("Cumprod", [np.array([2.0, 0.0, 3.0]), np.int32(0)], id="Cumprod-zero"),
    ]
