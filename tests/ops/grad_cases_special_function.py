"""Gradient cases for special_function_ops: Igamma's and Igammac's in a (IgammaGradA) and x,
Betainc's in x, Zeta's in q (TF defines no others)."""

import numpy as np

from tests.ops.grad_harness import GradCase, gpos

NO_GRADIENT = {"IgammaGradA": "TensorFlow registers no gradient for it"}

CASES = [
    GradCase("Igamma", [gpos(2, 3) + 0.3, gpos(2, 3)]),
    GradCase("Igamma", [gpos(3) + 0.5, np.array([[0.4], [3.0]])], id="Igamma-broadcast-both-methods"),
    GradCase("Igammac", [gpos(2, 3) + 0.3, gpos(2, 3)]),
    GradCase("Betainc", [gpos(2, 3), gpos(2, 3), gpos(2, 3, low=0.1, high=0.9)], wrt=[2]),
    GradCase("Betainc", [np.float64(1.5), gpos(3), np.float64(0.3)], wrt=[2], id="Betainc-scalar-x"),
    GradCase("Zeta", [gpos(2, 3) + 1.5, gpos(3)], wrt=[1]),
]
