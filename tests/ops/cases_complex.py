"""Cases for complex_ops: Complex, Real, Imag, ComplexAbs, Angle (gradients: test_complex_ops.py)."""

import numpy as np

from tests.ops.harness import Case, f32, f64

_z = f64(2, 3) + 1j * f64(2, 3)
_z64 = (f32(4) + 1j * f32(4)).astype(np.complex64)

CASES = [
    Case("Complex", [f32(2, 3), f32(3)], ref=lambda re, im: (re + 1j * im).astype(np.complex64)),
    Case("Complex", [f64(3), f64(2, 1)], attrs={"Tout": "complex128"}, ref=lambda re, im: re + 1j * im,
         id="Complex-float64-broadcast"),
    Case("Real", [_z], attrs={"Tout": "float64"}, ref=np.real),
    Case("Imag", [_z64], ref=lambda z: np.imag(z).astype(np.float32), rtol=1e-6),
    Case("ComplexAbs", [_z], attrs={"Tout": "float64"}, ref=np.abs),
    Case("ComplexAbs", [np.array([3e200 + 4e200j])], attrs={"Tout": "float64"}, ref=lambda z: np.array([5e200]),
         id="ComplexAbs-no-overflow"),
    Case("Angle", [_z64], ref=lambda z: np.angle(z).astype(np.float32), rtol=1e-6),
    Case("Angle", [np.array([-1 + 0j, 1j, 0j])], attrs={"Tout": "float64"},
         ref=lambda z: np.array([np.pi, np.pi / 2, 0.0]), id="Angle-literal"),
]  # fmt: skip
