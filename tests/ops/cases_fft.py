"""Cases for fft_ops against numpy.fft (gradients: test_complex_gradients.py and test_fft_gradients.py)."""

import numpy as np

from tests.ops.harness import Case, f32, f64


def _c(*shape, dtype=np.complex128):
    return (f64(*shape) + 1j * f64(*shape)).astype(dtype)


_TOL = {"rtol": 1e-5, "atol": 1e-5}

CASES = [
    Case("FFT", [_c(2, 8)], ref=np.fft.fft),
    Case("FFT", [_c(3, 5, dtype=np.complex64)], ref=lambda x: np.fft.fft(x).astype(np.complex64), id="FFT-complex64", **_TOL),
    Case("IFFT", [_c(2, 7)], ref=np.fft.ifft),
    # empty inputs transform to empty outputs, as in TF (numpy refuses 0-point transforms)
    *(Case(op, [np.zeros(shape, np.complex64)], ref=lambda x: x, id=f"{op}-empty")
      for op, shape in (("FFT", (2, 0)), ("IFFT", (0, 3)), ("IFFT2D", (2, 0, 3)), ("FFT3D", (0, 2, 2, 2)))),
    Case("FFT2D", [_c(2, 3, 4)], ref=np.fft.fft2),
    Case("IFFT2D", [_c(3, 4)], ref=np.fft.ifft2),
    Case("FFT3D", [_c(2, 2, 3, 4)], ref=lambda x: np.fft.fftn(x, axes=(-3, -2, -1))),
    Case("IFFT3D", [_c(2, 3, 2)], ref=np.fft.ifftn),
    Case("RFFT", [f32(3, 8), np.array([8], np.int32)], const_inputs=[1],
         ref=lambda x, n: np.fft.rfft(x).astype(np.complex64), **_TOL),
    Case("RFFT", [f64(2, 8), np.array([5], np.int32)], attrs={"Tcomplex": "complex128"}, const_inputs=[1],
         ref=lambda x, n: np.fft.rfft(x, 5), id="RFFT-cropped"),
    Case("RFFT", [f64(2, 4), np.array([7], np.int32)], attrs={"Tcomplex": "complex128"}, const_inputs=[1],
         ref=lambda x, n: np.fft.rfft(x, 7), id="RFFT-padded"),
    Case("IRFFT", [_c(2, 5), np.array([8], np.int32)], attrs={"Treal": "float64"}, const_inputs=[1],
         ref=lambda x, n: np.fft.irfft(x, 8)),
    Case("IRFFT", [_c(2, 5), np.array([5], np.int32)], attrs={"Treal": "float64"}, const_inputs=[1],
         ref=lambda x, n: np.fft.irfft(x, 5), id="IRFFT-odd-cropped"),
    Case("RFFT2D", [f64(2, 4, 6), np.array([3, 6], np.int32)], attrs={"Tcomplex": "complex128"}, const_inputs=[1],
         ref=lambda x, n: np.fft.rfft2(x, s=(3, 6))),
    Case("IRFFT2D", [_c(4, 3), np.array([4, 4], np.int32)], attrs={"Treal": "float64"}, const_inputs=[1],
         ref=lambda x, n: np.fft.irfft2(x, s=(4, 4))),
    Case("RFFT3D", [f64(2, 3, 4), np.array([2, 3, 4], np.int32)], attrs={"Tcomplex": "complex128"}, const_inputs=[1],
         ref=lambda x, n: np.fft.rfftn(x)),
    Case("IRFFT3D", [_c(2, 2, 3), np.array([2, 2, 4], np.int32)], attrs={"Treal": "float64"}, const_inputs=[1],
         ref=lambda x, n: np.fft.irfftn(x, s=(2, 2, 4), axes=(0, 1, 2))),
]  # fmt: skip
