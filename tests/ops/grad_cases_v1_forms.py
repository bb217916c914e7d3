"""Gradient cases for v1_forms: each runs its successor's gradient with its inputs translated."""

import numpy as np

from tests.ops.grad_harness import GradCase, g64, gpos

NO_GRADIENT = {op: "TensorFlow registers no gradient for it" for op in ("Mod", "InplaceUpdate", "InplaceAdd", "InplaceSub")}

CASES = [
    GradCase("Inv", [gpos(2, 3)]),
    GradCase("AccumulateNV2", [g64(2, 3), g64(2, 3)], attrs={"shape": [2, 3]}),
    GradCase("CheckNumericsV2", [g64(3)], attrs={"message": "m"}),
    GradCase("Concat", [np.int32(1), g64(2, 1), g64(2, 3)]),
    GradCase("Reverse", [g64(2, 3, 4), np.array([True, False, True])]),
    GradCase("BiasAddV1", [g64(2, 3, 4), g64(4)]),
    GradCase("TopK", [np.array([[1.0, 3.0, 2.0, 3.5], [5.0, 4.0, 6.0, 0.0]])], attrs={"k": 2}, outputs=[0]),
    GradCase("MatrixDiag", [g64(2, 3)]),
    GradCase("MatrixDiagPart", [g64(2, 3, 4)]),
    GradCase("MatrixSetDiag", [g64(2, 3, 4), g64(2, 3)]),
    GradCase("MatrixDiagV2", [g64(2, 3), np.array([-1, 0], np.int32), np.int32(-1), np.int32(-1), np.float64(0)],
             wrt=[0]),
    GradCase("MatrixDiagPartV2", [g64(2, 3, 4), np.array([-1, 1], np.int32), np.float64(0)], wrt=[0]),
    GradCase("MatrixSetDiagV2", [g64(2, 3, 3), g64(2, 2, 3), np.array([-1, 0], np.int32)], wrt=[0, 1]),
]
