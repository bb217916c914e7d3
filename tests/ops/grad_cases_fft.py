"""fft_ops' gradients map complex tensors (and real ones to complex and back): checked against
central differences in TF's convention by test_complex_gradients.py and test_fft_gradients.py."""

CASES: list = []
TESTED_ELSEWHERE = {
    **{op: "tests/ops/test_complex_gradients.py" for op in ("FFT", "IFFT", "FFT2D", "IFFT2D", "FFT3D", "IFFT3D")},
    **{op: "tests/ops/test_fft_gradients.py" for op in ("RFFT", "IRFFT", "RFFT2D", "IRFFT2D", "RFFT3D", "IRFFT3D")},
}
