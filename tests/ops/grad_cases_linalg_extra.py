"""Gradient cases for linalg_extra_ops (TF registers no gradient for Lu). Eig's is checked through
its eigenvalues (distinct ones; the eigenvectors' phase is not defined)."""

import numpy as np

from tests.ops.grad_harness import GradCase, g64

_x = g64(3, 3)
_spd = _x @ _x.T + np.eye(3)


def _bands(*shape, lower=True):
    b = g64(*shape)
    b[..., 0 if lower else -1, :] += 4.0
    return b


CASES = [
    GradCase("ConjugateTranspose", [g64(2, 3, 4), np.array([2, 0, 1], np.int32)], wrt=[0]),
    GradCase("MatrixSquareRoot", [_spd]),
    GradCase("MatrixSquareRoot", [np.stack([_spd, 2 * np.eye(3) + 0.1 * _x])], id="MatrixSquareRoot-batch"),
    GradCase("BandedTriangularSolve", [_bands(2, 4), g64(4, 2)]),
    GradCase("BandedTriangularSolve", [_bands(3, 4, lower=False), g64(4, 1)], attrs={"lower": False, "adjoint": True},
             id="BandedTriangularSolve-upper-adjoint"),
    GradCase("BandedTriangularSolve", [_bands(2, 3), g64(2, 3, 2)], attrs={"adjoint": True}, id="BandedTriangularSolve-broadcast"),
    GradCase("Eig", [np.diag([1.0, 2.5, -2.0]) + 0.3 * g64(3, 3)], attrs={"Tout": "complex128", "compute_v": False}, outputs=[0]),
]

NO_GRADIENT = {"Lu": "TensorFlow registers no gradient for Lu"}
