"""Gradient cases for linalg_ops. Cholesky reads one triangle of a symmetric input, so a
one-element perturbation cannot check TF's symmetric gradient: tests/ops/test_linalg_grads.py
checks it through a symmetric input built from free variables."""

import numpy as np

from tests.ops.grad_harness import GradCase, g64

_a = g64(2, 3, 3) + 3 * np.eye(3)

CASES = [
    GradCase("MatrixInverse", [_a]),
    GradCase("MatrixInverse", [_a[0]], attrs={"adjoint": True}, id="MatrixInverse-adjoint"),
    GradCase("MatrixDeterminant", [_a]),
    # Through the values: the vectors' signs cancel (v diag(g) v^H, u diag(g) v^H).
    GradCase("SelfAdjointEigV2", [g64(2, 3, 3)], outputs=[0]),
    GradCase("Svd", [g64(2, 4, 3)], outputs=[0]),
    GradCase("Svd", [g64(3, 3)], attrs={"compute_uv": False}, outputs=[0], id="Svd-values-only"),
    GradCase("LogMatrixDeterminant", [_a], outputs=[1]),
    GradCase("MatrixSolve", [_a, g64(2, 3, 2)]),
    GradCase("MatrixSolve", [_a[0], g64(3, 1)], attrs={"adjoint": True}, id="MatrixSolve-adjoint"),
    # Only the read triangle is an input: perturbing the other changes nothing, and its gradient is 0.
    GradCase("MatrixTriangularSolve", [_a, g64(2, 3, 2)]),
    GradCase("MatrixTriangularSolve", [_a[0], g64(2, 3, 2)], attrs={"lower": False, "adjoint": True},
             id="MatrixTriangularSolve-upper-adjoint-broadcast"),
    # Fixed inputs keep the Householder signs stable under the finite-difference steps.
    GradCase("Qr", [g64(2, 4, 3)], id="Qr-tall"),
    GradCase("Qr", [g64(3, 3)], id="Qr-square"),
    GradCase("Qr", [g64(2, 3, 5)], id="Qr-wide"),
    GradCase("Qr", [g64(3, 4)], attrs={"full_matrices": True}, id="Qr-wide-full"),
    GradCase("Qr", [g64(4, 3)], outputs=[1], id="Qr-tall-r-only"),
    GradCase("MatrixBandPart", [g64(2, 3, 4), np.int64(1), np.int64(0)]),
    GradCase("MatrixDiagV3", [g64(2, 3), np.array([-1, 0], np.int32), np.int32(3), np.int32(3), np.float64(0.5)],
             wrt=[0]),  # TF gives padding_value no gradient
    GradCase("MatrixDiagPartV3", [g64(4, 3), np.array([-1, 1], np.int32), np.float64(0)], wrt=[0]),
    GradCase("MatrixSetDiagV3", [g64(2, 4, 3), g64(2, 3, 3), np.array([-1, 1], np.int32)], wrt=[0, 1]),
    GradCase("Diag", [g64(2, 2)]),
    GradCase("DiagPart", [g64(3, 3)]),
    GradCase("Cross", [g64(2, 3), g64(2, 3)]),
]

NO_GRADIENT = {"Cholesky": "checked through a symmetric input in tests/ops/test_linalg_grads.py"}
