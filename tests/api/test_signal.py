"""sf.signal and sf.bitwise against TensorFlow 2.21's tf.signal and tf.bitwise: FFTs, windows,
framing, STFT and its inverse, DCTs, mel filterbanks, MFCCs, MDCT, gradients through a
spectrogram, a signal of unknown length in a traced function. The fixture holds TF's results
(scripts/make_signal_fixture.py, run where TensorFlow is installed)."""

from pathlib import Path

import numpy as np
import pytest

import specflow as sf

DATA = Path(__file__).parent / "data" / "tf_signal.npz"


def cases(tf):
    """The calls, each a thunk, for ``tf`` (TensorFlow or specflow)."""
    rng = np.random.default_rng(3)
    S = rng.standard_normal((2, 50)).astype(np.float32)  # noqa: N806 (signals)
    S64 = S.astype(np.float64)  # noqa: N806
    C = (rng.standard_normal((3, 8)) + 1j * rng.standard_normal((3, 8))).astype(np.complex64)  # noqa: N806
    C3 = (rng.standard_normal((2, 4, 6, 5)) + 1j * rng.standard_normal((2, 4, 6, 5))).astype(np.complex128)  # noqa: N806
    R = rng.standard_normal((3, 6, 10)).astype(np.float32)  # noqa: N806
    F = rng.standard_normal((2, 7, 12)).astype(np.float32)  # noqa: N806 (frames)
    M = rng.standard_normal((4, 16)).astype(np.float32)  # noqa: N806
    W = rng.standard_normal((2, 5, 9)).astype(np.float32)  # noqa: N806 (stft weights)
    I8 = rng.integers(-128, 127, (4, 5)).astype(np.int8)  # noqa: N806
    U8 = rng.integers(0, 255, (4, 5)).astype(np.uint8)  # noqa: N806
    I32 = rng.integers(-2**31, 2**31 - 1, (4, 5), dtype=np.int64).astype(np.int32)  # noqa: N806
    SH = rng.integers(0, 8, (4, 5)).astype(np.int8)  # noqa: N806
    sg, bw = tf.signal, tf.bitwise
    C3, S64 = tf.constant(C3), tf.constant(S64)  # noqa: N806 (TF's eager numpy conversion of these drifts)

    def grad(fn, x):
        x = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        return tape.gradient(y, x)

    def dynamic(fn, spec_shape, x):
        f = tf.function(fn, input_signature=[tf.TensorSpec(spec_shape, tf.float32)])
        return f(x)

    spectro = lambda x: tf.reduce_sum(tf.abs(sg.stft(x, 16, 8)) ** 2 * W)  # noqa: E731
    mel = sg.linear_to_mel_weight_matrix(6, 9, 8000, 100.0, 3000.0)
    log_mel = lambda x: tf.reduce_sum(tf.math.log(tf.matmul(tf.abs(sg.stft(x, 16, 8)), mel) + 1e-3))  # noqa: E731
    return {  # fmt: skip
        "fft": lambda: sg.fft(C), "ifft": lambda: sg.ifft(C), "fft2d": lambda: sg.fft2d(C3), "ifft2d": lambda: sg.ifft2d(C3),
        "fft3d": lambda: sg.fft3d(C3), "ifft3d": lambda: sg.ifft3d(C3),
        "rfft": lambda: sg.rfft(S), "rfft_crop": lambda: sg.rfft(S, [32]), "rfft_pad": lambda: sg.rfft(S, [64]),
        "rfft_f64": lambda: sg.rfft(S64, [20]),
        "rfft_numpy_f64": lambda: sg.rfft(S.astype(np.float64)), "irfft_numpy_c128": lambda: sg.irfft(C.astype(np.complex128)),
        "rfft_list": lambda: sg.rfft([1.0, 2.0, 3.0, 4.0]), "rfft2d": lambda: sg.rfft2d(R), "rfft2d_len": lambda: sg.rfft2d(R, [8, 12]),
        "rfft3d": lambda: sg.rfft3d(R), "irfft": lambda: sg.irfft(C), "irfft_odd": lambda: sg.irfft(C, [15]),
        "irfft_long": lambda: sg.irfft(C, [30]), "irfft2d": lambda: sg.irfft2d(C3[0]), "irfft3d": lambda: sg.irfft3d(C3),
        "fftshift": lambda: sg.fftshift(R), "fftshift_axis": lambda: sg.fftshift(R, axes=1),
        "fftshift_axes": lambda: sg.fftshift(R, axes=[0, -1]), "ifftshift": lambda: sg.ifftshift(R),
        "ifftshift_axes": lambda: sg.ifftshift(R, axes=[1, 2]),
        "hann_8": lambda: sg.hann_window(8), "hann_7": lambda: sg.hann_window(7), "hann_1": lambda: sg.hann_window(1),
        "hann_sym": lambda: sg.hann_window(8, periodic=False), "hann_f64": lambda: sg.hann_window(9, dtype=tf.float64),
        "hamming": lambda: sg.hamming_window(10), "hamming_sym": lambda: sg.hamming_window(11, periodic=False),
        "vorbis": lambda: sg.vorbis_window(12), "kaiser": lambda: sg.kaiser_window(9, beta=4.0),
        "kaiser_even": lambda: sg.kaiser_window(8), "kaiser_1": lambda: sg.kaiser_window(1),
        "kbd": lambda: sg.kaiser_bessel_derived_window(10, beta=6.0),
        "frame": lambda: sg.frame(S, 16, 8), "frame_pad": lambda: sg.frame(S, 16, 8, pad_end=True, pad_value=2.5),
        "frame_axis0": lambda: sg.frame(R, 3, 2, axis=0), "frame_axis1": lambda: sg.frame(R, 4, 1, axis=1, pad_end=True),
        "frame_none": lambda: sg.frame(S, 60, 8), "frame_big_step": lambda: sg.frame(S, 5, 7),
        "frame_int": lambda: sg.frame(I32, 2, 2),
        "ola": lambda: sg.overlap_and_add(F, 5), "ola_fast": lambda: sg.overlap_and_add(F, 12),
        "ola_odd": lambda: sg.overlap_and_add(F, 7), "ola_rank3": lambda: sg.overlap_and_add(R, 3),
        "stft": lambda: sg.stft(S, 16, 8), "stft_len": lambda: sg.stft(S, 15, 5, fft_length=32),
        "stft_pad": lambda: sg.stft(S, 16, 6, pad_end=True), "stft_nowin": lambda: sg.stft(S, 10, 4, window_fn=None),
        "stft_hamming": lambda: sg.stft(S64, 12, 3, window_fn=sg.hamming_window),
        "istft": lambda: sg.inverse_stft(sg.stft(S, 16, 4), 16, 4, window_fn=sg.inverse_stft_window_fn(4)),
        "istft_short": lambda: sg.inverse_stft(sg.stft(S, 16, 8), 20, 8, fft_length=16),
        "istft_hann": lambda: sg.inverse_stft(sg.stft(S, 12, 5, fft_length=16), 12, 5, fft_length=16),
        "dct2": lambda: sg.dct(M), "dct2_ortho": lambda: sg.dct(M, norm="ortho"), "dct1": lambda: sg.dct(M, type=1),
        "dct3": lambda: sg.dct(M, type=3), "dct3_ortho": lambda: sg.dct(M, type=3, norm="ortho"),
        "dct4": lambda: sg.dct(M, type=4), "dct4_ortho": lambda: sg.dct(M, type=4, norm="ortho"),
        "dct_n_short": lambda: sg.dct(M, n=10), "dct_n_long": lambda: sg.dct(M, n=20, norm="ortho"),
        "idct2": lambda: sg.idct(M, norm="ortho"), "idct3": lambda: sg.idct(M, type=3), "idct1": lambda: sg.idct(M, type=1),
        "mel": lambda: sg.linear_to_mel_weight_matrix(), "mel_custom": lambda: mel,
        "mel_f64": lambda: sg.linear_to_mel_weight_matrix(10, 33, 16000, 20.0, 8000.0, dtype=tf.float64),
        "mfcc": lambda: sg.mfccs_from_log_mel_spectrograms(M),
        "mdct": lambda: sg.mdct(S, 8), "mdct_ortho": lambda: sg.mdct(S, 12, norm="ortho", pad_end=True),
        "imdct": lambda: sg.inverse_mdct(sg.mdct(S, 8)), "imdct_ortho": lambda: sg.inverse_mdct(sg.mdct(S, 8, norm="ortho"),
                                                                                                 norm="ortho"),
        "mdct_nowin": lambda: sg.mdct(S, 8, window_fn=None),
        "grad_spectro": lambda: grad(spectro, S), "grad_log_mel": lambda: grad(log_mel, S),
        "grad_dct": lambda: grad(lambda x: tf.reduce_sum(sg.dct(x, norm="ortho") * M[::-1]), M),
        "grad_dct3": lambda: grad(lambda x: tf.reduce_sum(sg.dct(x, type=3) ** 2), M),
        "grad_frame": lambda: grad(lambda x: tf.reduce_sum(sg.frame(x, 16, 6, pad_end=True) ** 2), S),
        "grad_ola": lambda: grad(lambda x: tf.reduce_sum(sg.overlap_and_add(x, 5) ** 3), F),
        "grad_istft": lambda: grad(lambda x: tf.reduce_sum(sg.inverse_stft(sg.stft(x, 16, 4), 16, 4) ** 2), S),
        "dyn_stft": lambda: dynamic(lambda x: tf.abs(sg.stft(x, 16, 8, pad_end=True)), [None, None], S),
        "dyn_frame": lambda: dynamic(lambda x: sg.frame(x, 7, 3), [2, None], S),
        "dyn_rfft": lambda: dynamic(lambda x: tf.abs(sg.rfft(x)), [None, None], S[:, :13]),
        "dyn_irfft": lambda: dynamic(lambda x: sg.irfft(sg.rfft(x)), [2, None], S[:, :13]),
        "dyn_fftshift": lambda: dynamic(lambda x: sg.fftshift(x, axes=1), [2, None], S[:, :13]),
        "dyn_hann_ola": lambda: dynamic(lambda x: sg.overlap_and_add(sg.frame(x, 8, 4) * sg.hann_window(8), 4),
                                        [2, None], S),
        "and_i8": lambda: bw.bitwise_and(I8, I8[::-1]), "or_u8": lambda: bw.bitwise_or(U8, U8[:, ::-1]),
        "xor_i32": lambda: bw.bitwise_xor(I32, I32[::-1]), "invert_i8": lambda: bw.invert(I8),
        "invert_u8": lambda: bw.invert(U8), "lshift": lambda: bw.left_shift(I8, SH), "rshift": lambda: bw.right_shift(I8, SH),
        "rshift_u8": lambda: bw.right_shift(U8, SH.astype(np.uint8)),
        "lshift_wide": lambda: bw.left_shift(I32, np.int32(33)), "rshift_neg": lambda: bw.right_shift(I32, np.int32(-1)),
        "and_scalar": lambda: bw.bitwise_and(I32, 0xFF),
    }


def flat_results(tf) -> dict[str, np.ndarray]:
    return {k: np.asarray(fn()) for k, fn in cases(tf).items()}


CASES = cases(sf)


@pytest.fixture(scope="module")
def expected():
    return dict(np.load(DATA))  # committed; rewritten by scripts/make_signal_fixture.py


def test_every_case_has_a_reference(expected):
    assert sorted(CASES) == sorted(expected)


@pytest.mark.parametrize("key", sorted(CASES))
def test_matches_tensorflow(key, expected):
    got, want = np.asarray(CASES[key]()), expected[key]
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind in "iub":
        np.testing.assert_array_equal(got, want)
    else:
        eps = np.finfo(want.dtype).eps
        scale = max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
        np.testing.assert_allclose(got, want, rtol=64 * eps, atol=64 * eps * scale)


def test_bad_arguments_are_one_line_errors():
    x = np.zeros((2, 16), np.float32)
    with pytest.raises(ValueError, match="dtype must be a floating point"):
        sf.signal.hann_window(4, dtype=sf.int32)
    with pytest.raises(ValueError, match="multiple of 4"):
        sf.signal.mdct(x, 6)
    with pytest.raises(ValueError, match="Nyquist"):
        sf.signal.linear_to_mel_weight_matrix(sample_rate=1000, upper_edge_hertz=3800.0)
    with pytest.raises(ValueError, match="RFFT requires float32 or float64"):
        sf.signal.rfft(sf.constant([1, 2]))
    with pytest.raises(ValueError, match="Type-I DCT"):
        sf.signal.dct(x, type=1, norm="ortho")
