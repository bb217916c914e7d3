"""Cases for BatchMatMul (v1), BatchMatMulV3 and Einsum (matmul_ops, einsum_ops)."""

import numpy as np

from tests.ops.harness import Case, f32, f64, i32


def _mm(x, y):
    return np.matmul(x, y)


CASES = [
    Case("BatchMatMul", [f32(2, 3, 4), f32(2, 4, 5)], ref=_mm, rtol=1e-5),
    Case("BatchMatMul", [f64(2, 4, 3), f64(2, 5, 4)], attrs={"adj_x": True, "adj_y": True},
         ref=lambda x, y: np.swapaxes(x, -1, -2) @ np.swapaxes(y, -1, -2), id="BatchMatMul-adj"),
    Case("BatchMatMulV3", [i32(2, 3, 4).astype(np.int8), f32(4, 2)], attrs={"Tout": "float32"},
         ref=lambda x, y: x.astype(np.float32) @ y, rtol=1e-5),
    Case("BatchMatMulV3", [f64(1, 3, 2), f64(4, 3, 2)], attrs={"Tout": "float64", "adj_y": True},
         ref=lambda x, y: x @ np.swapaxes(y, -1, -2), id="BatchMatMulV3-broadcast"),
    Case("Einsum", [f32(2, 3, 4), f32(2, 4, 5)], attrs={"equation": "bij,bjk->bik"}, ref=_mm, rtol=1e-5),
    Case("Einsum", [f64(3, 4)], attrs={"equation": "ij->ji"}, ref=lambda x: x.T, id="Einsum-transpose"),
    Case("Einsum", [f64(3, 4)], attrs={"equation": "ij->"}, ref=lambda x: np.array(x.sum()), id="Einsum-sum"),
    # TF sums 'i' out of the first operand before its matmul: column 1 sums to 1, times inf is
    # inf; the products one by one (2 * inf + -1 * inf) would give NaN.
    Case("Einsum", [np.array([[1.0, 2.0], [2.0, -1.0]]), np.array([[1.0], [np.inf]])], attrs={"equation": "ij,jk->k"},
         ref=lambda x, y: np.array([np.inf]), id="Einsum-sums-a-lone-label-first"),
    Case("Einsum", [f64(2, 1, 3, 4), f64(5, 4, 2)], attrs={"equation": "...ij,...jk->...ik"},
         ref=lambda x, y: x @ y, id="Einsum-ellipsis-broadcast"),
    Case("Einsum", [f64(3), f64(4), f64(3, 4)], attrs={"equation": "i,j,ij->"},
         ref=lambda a, c, m: np.array(a @ m @ c), id="Einsum-three-operands"),
    Case("Einsum", [i32(2, 3), i32(3)], attrs={"equation": "ij,j"}, ref=lambda m, v: m @ v, id="Einsum-implicit-int"),
    Case("Einsum", [f64(4, 4)], attrs={"equation": "ii->i"}, ref=np.diagonal, id="Einsum-diagonal"),
    Case("Einsum", [f64(3, 2)], attrs={"equation": "ij->iji"}, id="Einsum-inflate",
         ref=lambda x: np.einsum("ij,ik->ijk", x, np.eye(3))),
    Case("Einsum", [f64(3), f64(2, 5, 3)], attrs={"equation": "i,...i->..."},
         ref=lambda v, m: m @ v, id="Einsum-ellipsis-only-in-one"),
]
