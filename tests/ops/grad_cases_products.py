"""Gradient cases for BatchMatMul (v1), BatchMatMulV3 and Einsum."""

from tests.ops.grad_harness import GradCase, g64

CASES = [
    GradCase("BatchMatMul", [g64(2, 2, 3), g64(2, 3, 2)]),
    GradCase("BatchMatMul", [g64(2, 3, 2), g64(2, 4, 3)], attrs={"adj_x": True, "adj_y": True}, id="BatchMatMul-adj"),
    GradCase("BatchMatMulV3", [g64(1, 2, 3), g64(3, 3, 2)], attrs={"Tout": "float64"}),
    GradCase("Einsum", [g64(2, 3, 4), g64(2, 4, 2)], attrs={"equation": "bij,bjk->bik"}),
    GradCase("Einsum", [g64(3, 4)], attrs={"equation": "ij->i"}, id="Einsum-summed-label"),
    GradCase("Einsum", [g64(2, 3), g64(3, 4, 2)], attrs={"equation": "ab,bcd->ca"}, id="Einsum-label-in-one-input"),
    GradCase("Einsum", [g64(2, 1, 3, 2), g64(4, 2, 3)], attrs={"equation": "...ij,...jk->...ik"},
             id="Einsum-ellipsis-broadcast"),
    GradCase("Einsum", [g64(3), g64(2), g64(3, 2)], attrs={"equation": "i,j,ij->j"}, id="Einsum-three-operands"),
    GradCase("Einsum", [g64(3, 3, 2)], attrs={"equation": "iij->j"}, id="Einsum-trace-reduced"),
    GradCase("Einsum", [g64(3, 3), g64(3, 2)], attrs={"equation": "ii,ij->ij"}, id="Einsum-diagonal-binary"),
    GradCase("Einsum", [g64(3, 2)], attrs={"equation": "ij->iji"}, id="Einsum-inflate"),
    GradCase("Einsum", [g64(3, 2), g64(4, 1, 2, 5)], attrs={"equation": "ij,...jk->...ik"}, id="Einsum-ellipsis-in-one"),
    GradCase("Einsum", [g64(2, 3, 1), g64(2, 3, 1, 4)], attrs={"equation": "a...b,...bc->a...c"},
             id="Einsum-ellipsis-in-the-middle"),
]
