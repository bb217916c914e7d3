"""``sf.signal``: TensorFlow's ``tf.signal`` — FFTs, windows, framing, STFT and its inverse,
DCTs, mel filterbanks and MFCCs — over the registered ops (ops/fft_ops.py and the array/math ops).

Each function builds the ops TensorFlow's own does, in the same order, so values match TF's
and gradients are the ops' own (a spectrogram in a model trains). A signal's length may be
unknown until it runs (``sf.function`` with ``None`` dimensions); frame lengths, steps and FFT
lengths are Python ints, or tensors whose value is known when traced."""

from __future__ import annotations

import math as _math

import numpy as np

from specflow.api.op_functions import call
from specflow.api.tensor import Tensor
from specflow.api.tf_control_names import get_static_value
from specflow.api.tf_names import _t, cast, concat, expand_dims, pad, reshape, shape
from specflow.graph import dtypes

_COMPLEX_OF = {dtypes.float32: dtypes.complex64, dtypes.float64: dtypes.complex128}
_REAL_OF = {c: r for r, c in _COMPLEX_OF.items()}


def _int(value, what: str) -> int:
    """A length or step: a Python int, or a tensor whose value the trace knows."""
    v = get_static_value(value) if isinstance(value, Tensor) else value
    if v is None:
        raise ValueError(f"sf.signal: {what} must be known when the function is traced (a Python int)")
    v = np.asarray(v)
    if v.ndim != 0 or v.dtype.kind not in "iu":
        raise ValueError(f"sf.signal: {what} must be an integer scalar, got {v!r}")
    return int(v)


def _dim(x: Tensor, axis: int):
    """Dimension ``axis`` of ``x``: an int when static, else an int32 scalar tensor."""
    d = x.shape[axis]
    return d if d is not None else shape(x)[axis]


def _shape_vec(parts) -> Tensor:
    """A shape (or paddings) from ints and int32 scalar tensors, nested lists packed."""
    def pack(p):
        if isinstance(p, (list, tuple)):
            return call("Pack", [pack(q) for q in p], axis=0)
        return cast(p, dtypes.int32) if isinstance(p, Tensor) else np.int32(p)

    return pack(parts)


def _float_input(x, what: str, preferred: bool = False) -> Tensor:
    """A real signal. ``preferred``: as TF's FFT wrappers convert a Python or numpy value,
    float32 when it converts to it (a float64 array too)."""
    if not isinstance(x, Tensor):
        arr = np.asarray(x)
        if arr.dtype.kind in "biuf" and (preferred or arr.dtype.kind != "f"):
            arr = arr.astype(np.float32)
        x = arr
    x = _t(x)
    if x.dtype not in _COMPLEX_OF:
        raise ValueError(f"{what} requires float32 or float64 inputs, got {x.dtype.name}")
    return x


# --- FFTs ----------------------------------------------------------------------------------------

def _complex_input(x, preferred: bool = False) -> Tensor:
    """A complex input; a Python value is complex64 (``preferred``: a numpy array too, as TF's
    inverse real FFT wrappers convert one)."""
    if not isinstance(x, Tensor):
        arr = np.asarray(x)
        if not isinstance(x, np.ndarray) or (preferred and arr.dtype.kind in "biufc"):
            arr = arr.astype(np.complex64)
        x = arr
    return _t(x)


def _complex_fft(op: str):
    def fn(input, name: str | None = None):  # noqa: A002 (TF's name)
        return call(op, _complex_input(input), name=name)

    fn.__name__ = op.lower()
    fn.__doc__ = f"TensorFlow's ``tf.signal.{op.lower()}``: {op} over the innermost dimension(s)."
    return fn


fft, ifft, fft2d, ifft2d, fft3d, ifft3d = (_complex_fft(op) for op in ("FFT", "IFFT", "FFT2D", "IFFT2D", "FFT3D",
                                                                       "IFFT3D"))


def _fft_lengths(x: Tensor, rank: int, fft_length, inverse: bool):
    """``fft_length`` as TF's wrappers take it: given, or the input's last ``rank`` dims (the
    inverse's last one 2 * (n - 1)); a list of ints when static, else an int32 tensor."""
    if fft_length is not None:
        v = get_static_value(fft_length) if isinstance(fft_length, Tensor) else np.asarray(fft_length)
        return [int(n) for n in np.ravel(v)] if v is not None else cast(fft_length, dtypes.int32)
    dims = [x.shape[a] for a in range(-rank, 0)]
    if all(d is not None for d in dims):
        if inverse and dims:
            dims[-1] = max(0, 2 * (dims[-1] - 1))
        return dims
    lengths = shape(x)[-rank:]
    if inverse:
        last = call("Maximum", np.int32(0), 2 * (lengths[-1] - 1))
        lengths = concat([lengths[:-1], reshape(last, [1])], 0)
    return lengths


def _pad_for_rfft(x: Tensor, rank: int, lengths, inverse: bool) -> Tensor:
    """Zero-pad the transformed dims up to the FFT's lengths (the inverse's last to n // 2 + 1):
    the op crops but does not pad. A zero-size input is left as is, as TF does."""
    if x.shape.rank is not None and any(d == 0 for d in x.shape.as_list()):
        return x
    if isinstance(lengths, list):
        want = list(lengths)
        if inverse and want:
            want[-1] = want[-1] // 2 + 1
        have = [x.shape[a] for a in range(-rank, 0)]
        if all(h is not None for h in have):
            extra = [max(w - h, 0) for w, h in zip(want, have)]
            if not any(extra):
                return x
            return pad(x, [[0, 0]] * (x.shape.rank - rank) + [[0, e] for e in extra])
        lengths = np.asarray(want, np.int32)
    elif inverse:
        lengths = concat([lengths[:-1], lengths[-1:] // 2 + 1], 0)
    extra = call("Maximum", np.int32(0), lengths - shape(x)[-rank:])
    outer = call("Fill", reshape(call("Maximum", np.int32(0), call("Rank", x) - rank), [1]), np.int32(0))
    after = concat([outer, extra], 0)
    return pad(x, call("Pack", [call("ZerosLike", after), after], axis=1))


def _real_fft(op: str, rank: int, inverse: bool):
    """TF's RFFT/IRFFT wrappers: ``fft_length`` given or inferred, the input zero-padded to it
    (the op crops but does not pad), the output dtype the input's complex or real pair."""
    def fn(input_tensor, fft_length=None, name: str | None = None):
        if inverse:
            x = _complex_input(input_tensor, preferred=True)
            if x.dtype not in _REAL_OF:
                raise ValueError(f"IRFFT requires complex64 or complex128 inputs, got {x.dtype.name}")
        else:
            x = _float_input(input_tensor, "RFFT", preferred=True)
        lengths = _fft_lengths(x, rank, fft_length, inverse=inverse)
        x = _pad_for_rfft(x, rank, lengths, inverse=inverse)
        n = np.asarray(lengths, np.int32) if isinstance(lengths, list) else lengths
        if inverse:
            return call(op, x, n, Treal=_REAL_OF[x.dtype], name=name)
        return call(op, x, n, Tcomplex=_COMPLEX_OF[x.dtype], name=name)

    fn.__name__ = op.lower()
    fn.__doc__ = (f"TensorFlow's ``tf.signal.{op.lower()}``: "
                  + ("default length 2 * (n - 1) on the last axis." if inverse else
                     f"the real input padded to ``fft_length``, then {op}."))  # fmt: skip
    return fn


rfft, rfft2d, rfft3d = (_real_fft(f"RFFT{s}", r, False) for r, s in ((1, ""), (2, "2D"), (3, "3D")))
irfft, irfft2d, irfft3d = (_real_fft(f"IRFFT{s}", r, True) for r, s in ((1, ""), (2, "2D"), (3, "3D")))


def _shift(x, axes, sign: int, name):
    x = _t(x)
    if axes is None:
        axes = list(range(x.shape.rank))
    single = isinstance(axes, (int, np.integer))
    axes_list = [int(axes)] if single else [int(a) for a in axes]
    dims = [_dim(x, a) for a in axes_list]
    if all(isinstance(d, int) for d in dims):
        shift = np.asarray([sign * (d // 2) for d in dims], np.int32)
    else:
        shift = call("Pack", [cast(d, dtypes.int32) // 2 * sign for d in dims], axis=0)
    if single:
        shift = shift[0]
        axes_arg = np.int32(axes_list[0])
    else:
        axes_arg = np.asarray(axes_list, np.int32)
    return call("Roll", x, shift, axes_arg, name=name)


def fftshift(x, axes=None, name: str | None = None):
    """Zero frequency to the centre: a roll by n // 2 along ``axes`` (every axis by default)."""
    return _shift(x, axes, 1, name)


def ifftshift(x, axes=None, name: str | None = None):
    """``fftshift``'s inverse: a roll by -(n // 2)."""
    return _shift(x, axes, -1, name)


# --- windows -------------------------------------------------------------------------------------

def _window_length(window_length, dtype):
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError(f"dtype must be a floating point type. Found {dtype.name}")
    n = window_length if isinstance(window_length, Tensor) else _t(np.int32(window_length))
    return cast(n, dtypes.int32), get_static_value(n), dtype


def _raised_cosine(window_length, periodic, dtype, a: float, b: float, name):
    n, static, dtype = _window_length(window_length, dtype)
    if static is not None and int(static) == 1:
        return call("Fill", np.asarray([1], np.int32), np.asarray(1, dtype.numpy), name=name)
    # TF's denominator: N - 1, or N when periodic and N is even (an odd periodic window is
    # the symmetric one, as TensorFlow computes it)
    even = 1 - call("FloorMod", n, np.int32(2))
    p = np.int32(1 if periodic else 0) if not isinstance(periodic, Tensor) else cast(periodic, dtypes.int32)
    denom = cast(n + p * even - 1, dtype)
    count = cast(call("Range", np.int32(0), n, np.int32(1)), dtype)
    arg = np.asarray(2 * np.pi, dtype.numpy) * count / denom
    out = np.asarray(a, dtype.numpy) - np.asarray(b, dtype.numpy) * call("Cos", arg)
    if static is None:  # a length known only when it runs: one gives [1.0], as TF's cond
        one = call("Fill", reshape(n, [1]), np.asarray(1, dtype.numpy))
        out = call("SelectV2", call("Equal", n, np.int32(1)), one, out)
    return call("Identity", out, name=name) if name else out


def hann_window(window_length, periodic=True, dtype=dtypes.float32, name: str | None = None):
    return _raised_cosine(window_length, periodic, dtype, 0.5, 0.5, name)


def hamming_window(window_length, periodic=True, dtype=dtypes.float32, name: str | None = None):
    return _raised_cosine(window_length, periodic, dtype, 0.54, 0.46, name)


def vorbis_window(window_length, dtype=dtypes.float32, name: str | None = None):
    n, _, dtype = _window_length(window_length, dtype)
    arg = cast(call("Range", np.int32(0), n, np.int32(1)), dtype)
    inner = call("Sin", np.asarray(np.pi, dtype.numpy) / cast(n, dtype) * (arg + np.asarray(0.5, dtype.numpy)))
    return call("Sin", np.asarray(np.pi / 2.0, dtype.numpy) * call("Pow", inner, np.asarray(2.0, dtype.numpy)),
                name=name)


def kaiser_window(window_length, beta=12.0, dtype=dtypes.float32, name: str | None = None):
    n, static, dtype = _window_length(window_length, dtype)
    if static is not None and int(static) == 1:
        return call("Fill", np.asarray([1], np.int32), np.asarray(1, dtype.numpy), name=name)
    half = (cast(n, dtypes.float32) - np.float32(1.0)) / np.float32(2.0)
    arg = cast(call("Range", -half, half + np.float32(0.1), np.float32(1.0)), dtype)
    beta = cast(_t(beta), dtype)
    half = cast(half, dtype)
    one = np.asarray(1.0, dtype.numpy)
    num = beta * call("Sqrt", call("Relu", one - call("Square", arg / half)))
    return call("Mul", call("Exp", num - beta), call("BesselI0e", num) / call("BesselI0e", beta), name=name)


def kaiser_bessel_derived_window(window_length, beta=12.0, dtype=dtypes.float32, name: str | None = None):
    n, _, dtype = _window_length(window_length, dtype)
    w = kaiser_window(n // 2 + 1, beta, dtype)
    csum = call("Cumsum", w, np.int32(0))
    half = call("Sqrt", csum[:-1] / csum[-1])
    return concat([half, call("ReverseV2", half, np.asarray([0], np.int32))], 0, name=name)


# --- framing -------------------------------------------------------------------------------------

def frame(signal, frame_length, frame_step, pad_end: bool = False, pad_value=0, axis: int = -1,
          name: str | None = None):
    """Frames of ``frame_length`` samples every ``frame_step`` along ``axis``: shape
    ``outer + [frames, frame_length] + inner``. With ``pad_end`` the end is padded with
    ``pad_value`` so that every sample is in a frame (ceil(n / step) frames)."""
    x = _t(signal)
    if x.shape.rank is None or x.shape.rank < 1:
        raise ValueError("frame: the signal must have rank >= 1")
    length, step = _int(frame_length, "frame_length"), _int(frame_step, "frame_step")
    if length < 0 or step <= 0:
        raise ValueError(f"frame: frame_length must be >= 0 and frame_step > 0, got {length} and {step}")
    axis = range(x.shape.rank)[axis]
    n = _dim(x, axis)
    if pad_end:
        if isinstance(n, int):
            frames = -(-n // step)
            extra = max(0, length + step * (frames - 1) - n)
        else:
            frames = -(-n // step)
            extra = call("Maximum", np.int32(0), length + step * (frames - 1) - n)
        after = [0] * axis + [extra] + [0] * (x.shape.rank - axis - 1)
        x = call("PadV2", x, _shape_vec([[0, a] for a in after]) if not isinstance(extra, int)
                 else np.asarray([[0, a] for a in after], np.int32), _t(pad_value, x.dtype))  # fmt: skip
    elif isinstance(n, int):
        frames = max(0, 1 + (n - length) // step)
    else:
        frames = call("Maximum", np.int32(0), 1 + (n - length) // step)
    if isinstance(frames, int):
        index = np.arange(frames, dtype=np.int32)[:, None] * step + np.arange(length, dtype=np.int32)[None, :]
    else:
        starts = call("Range", np.int32(0), frames, np.int32(1)) * np.int32(step)
        index = expand_dims(starts, 1) + np.arange(length, dtype=np.int32)[None, :]
    return call("GatherV2", x, index, np.int32(axis), batch_dims=0, name=name)


def overlap_and_add(signal, frame_step, name: str | None = None):
    """Frames ``[..., frames, frame_length]`` added back at ``frame_step`` apart: length
    ``frame_length + frame_step * (frames - 1)`` (TF's segment sum, the same order of adds)."""
    x = _t(signal)
    if x.shape.rank is None or x.shape.rank < 2:
        raise ValueError("overlap_and_add: the signal must have rank >= 2")
    step = _int(frame_step, "frame_step")
    r = x.shape.rank - 2
    length = x.shape[-1]
    if length is None:
        raise ValueError("overlap_and_add: the frame length must be known when traced")
    frames = _dim(x, -2)
    outer = [_dim(x, a) for a in range(r)]
    out_len = length + step * (frames - 1)

    def full(inner):
        parts = outer + list(inner)
        return np.asarray(parts, np.int32) if all(isinstance(p, int) for p in parts) else _shape_vec(parts)

    if step == length:
        return reshape(x, full([out_len]), name=name)
    segments = -(-length // step)
    x = pad(x, [[0, 0]] * r + [[0, segments], [0, segments * step - length]])
    x = reshape(x, full([frames + segments, segments, step]))
    x = call("Transpose", x, np.asarray(list(range(r)) + [r + 1, r, r + 2], np.int32))
    x = reshape(x, full([(frames + segments) * segments, step]))
    x = x[..., :(frames + segments - 1) * segments, :]
    x = reshape(x, full([segments, frames + segments - 1, step]))
    x = call("Sum", x, np.int32(-3), keep_dims=False)
    x = reshape(x, full([(frames + segments - 1) * step]))
    out = x[..., :out_len]
    return call("Identity", out, name=name) if name else out


# --- short-time Fourier transform ----------------------------------------------------------------

def _enclosing_power_of_two(n: int) -> int:
    return int(2 ** np.ceil(np.log(n) / np.log(2.0)))


def stft(signals, frame_length, frame_step, fft_length=None, window_fn=hann_window, pad_end: bool = False,
         name: str | None = None):
    """Frames, windowed, RFFT'd: ``[..., frames, fft_length // 2 + 1]`` complex."""
    x = _float_input(signals, "stft")
    length = _int(frame_length, "frame_length")
    n = _enclosing_power_of_two(length) if fft_length is None else _int(fft_length, "fft_length")
    framed = frame(x, length, frame_step, pad_end=pad_end)
    if window_fn is not None:
        framed = framed * window_fn(length, dtype=framed.dtype)
    return rfft(framed, [n], name=name)


def inverse_stft_window_fn(frame_step, forward_window_fn=hann_window, name: str | None = None):
    """A window for ``inverse_stft`` that undoes ``forward_window_fn``'s overlapping gain."""
    step = _int(frame_step, "frame_step")

    def window_fn(frame_length, dtype):
        length = _int(frame_length, "frame_length")
        forward = forward_window_fn(length, dtype=dtype)
        denom = call("Square", forward)
        overlaps = -(-length // step)
        denom = pad(denom, [(0, overlaps * step - length)])
        denom = reshape(denom, [overlaps, step])
        denom = call("Sum", denom, np.int32(0), keep_dims=True)
        denom = call("Tile", denom, np.asarray([overlaps, 1], np.int32))
        denom = reshape(denom, [overlaps * step])[:length]
        zero = call("ZerosLike", forward)
        return call("SelectV2", call("Equal", denom, np.asarray(0.0, denom.dtype.numpy)), zero, forward / denom)

    return window_fn


def inverse_stft(stfts, frame_length, frame_step, fft_length=None, window_fn=hann_window, name: str | None = None):
    """The signal back from ``stft``'s frames: IRFFT, cut or padded to ``frame_length``,
    windowed (``inverse_stft_window_fn`` for a perfect reconstruction), overlap-added."""
    x = _complex_input(stfts)
    if x.shape.rank is None or x.shape.rank < 2:
        raise ValueError("inverse_stft: stfts must have rank >= 2")
    length = _int(frame_length, "frame_length")
    n = _enclosing_power_of_two(length) if fft_length is None else _int(fft_length, "fft_length")
    frames = irfft(x, [n])
    have = frames.shape[-1]
    if have is not None and have > length:
        frames = frames[..., :length]
    elif have is not None and have < length:
        frames = pad(frames, [[0, 0]] * (frames.shape.rank - 1) + [[0, length - have]])
    if window_fn is not None:
        frames = frames * window_fn(length, dtype=_REAL_OF[x.dtype])
    return overlap_and_add(frames, frame_step, name=name)


# --- DCTs, mel filterbanks, MFCCs ----------------------------------------------------------------

def _dct(x: Tensor, kind: int, n, norm):
    if n is not None:
        seq = x.shape[-1]
        if seq is None:
            raise ValueError("dct: n needs the last dimension known when traced")
        x = x[..., 0:n] if n <= seq else pad(x, [[0, 0]] * (x.shape.rank - 1) + [[0, n - seq]])
    dim = x.shape[-1]
    if dim is None:
        raise ValueError("dct: the last dimension must be known when traced")
    dt = x.dtype.numpy
    dim_f = np.asarray(dim, dt)
    zero = np.asarray(0.0, dt)
    if kind == 1:
        mirrored = concat([x, call("ReverseV2", x[..., 1:dim - 1], np.asarray([-1], np.int32))], -1)
        return call("Real", rfft(mirrored), Tout=x.dtype)
    if kind == 2:
        steps = call("Range", zero, dim_f, np.asarray(1.0, dt))
        scale = 2.0 * call("Exp", call("Complex", call("ZerosLike", steps),
                                       -steps * np.asarray(_math.pi, dt) * np.asarray(0.5, dt) / dim_f,
                                       Tout=_COMPLEX_OF[x.dtype]))  # fmt: skip
        spec = rfft(x, [2 * dim])[..., :dim] * scale
        out = call("Real", spec, Tout=x.dtype)
        if norm == "ortho":
            n1 = np.asarray(0.5, dt) * call("Rsqrt", _t(dim_f))
            n2 = n1 * np.asarray(_math.sqrt(2.0), dt)
            weights = call("PadV2", expand_dims(n1, 0), np.asarray([[0, dim - 1]], np.int32), n2)
            out = out * weights
        return out
    if kind == 3:
        if norm == "ortho":
            n1 = call("Sqrt", _t(dim_f))
            n2 = n1 * np.asarray(_math.sqrt(0.5), dt)
            x = x * call("PadV2", expand_dims(n1, 0), np.asarray([[0, dim - 1]], np.int32), n2)
        else:
            x = x * dim_f
        steps = call("Range", zero, dim_f, np.asarray(1.0, dt))
        scale = 2.0 * call("Exp", call("Complex", call("ZerosLike", steps),
                                       steps * np.asarray(_math.pi, dt) * np.asarray(0.5, dt) / dim_f,
                                       Tout=_COMPLEX_OF[x.dtype]))  # fmt: skip
        spec = scale * call("Complex", x, call("ZerosLike", x), Tout=_COMPLEX_OF[x.dtype])
        return irfft(spec, [2 * dim])[..., :dim]  # real already (TF's math.real of it is itself)
    # type IV: the odd terms of a type II of twice the length
    out = _dct(x, 2, 2 * dim, None)[..., 1::2]
    if norm == "ortho":
        out = out * (np.asarray(_math.sqrt(0.5), dt) * call("Rsqrt", _t(dim_f)))
    return out


def _check_dct(x: Tensor, kind, n, axis, norm):
    if axis != -1:
        raise NotImplementedError(f"axis must be -1. Got: {axis}")
    if n is not None and n < 1:
        raise ValueError("n should be a positive integer or None")
    if kind not in (1, 2, 3, 4):
        raise ValueError("Types I, II, III and IV (I)DCT are supported.")
    if kind == 1:
        if norm == "ortho":
            raise ValueError("Normalization is not supported for the Type-I DCT.")
        if x.shape.rank and x.shape[-1] is not None and x.shape[-1] < 2:
            raise ValueError("Type-I DCT requires the dimension to be greater than one.")
    if norm not in (None, "ortho"):
        raise ValueError(f"Unknown normalization. Expected None or 'ortho', got: {norm}")


def dct(input, type: int = 2, n=None, axis: int = -1, norm=None, name: str | None = None):  # noqa: A002
    """The discrete cosine transform of ``type`` 1-4 along the last axis, by an RFFT (TF's way)."""
    x = _float_input(input, "dct")
    _check_dct(x, type, n, axis, norm)
    out = _dct(x, type, n, norm)
    return call("Identity", out, name=name) if name else out


def idct(input, type: int = 2, n=None, axis: int = -1, norm=None, name: str | None = None):  # noqa: A002
    """The inverse DCT: type 2's is type 3 (and the reverse), 1 and 4 their own (scaled unless ortho)."""
    x = _float_input(input, "idct")
    _check_dct(x, type, n, axis, norm)
    out = _dct(x, {1: 1, 2: 3, 3: 2, 4: 4}[type], n, norm)
    return call("Identity", out, name=name) if name else out


def _hertz_to_mel(hz):
    return 1127.0 * call("Log", 1.0 + hz / 700.0)


def linear_to_mel_weight_matrix(num_mel_bins: int = 20, num_spectrogram_bins: int = 129, sample_rate=8000,
                                lower_edge_hertz: float = 125.0, upper_edge_hertz: float = 3800.0,
                                dtype=dtypes.float32, name: str | None = None):
    """``[num_spectrogram_bins, num_mel_bins]`` triangular filters on the HTK mel scale (peak 1.0),
    to right-multiply a linear-frequency spectrogram; the DC bin gets none."""
    dtype = dtypes.as_dtype(dtype)
    rate = get_static_value(sample_rate) if isinstance(sample_rate, Tensor) else sample_rate
    if num_mel_bins <= 0:
        raise ValueError(f"num_mel_bins must be positive. Got: {num_mel_bins}")
    if lower_edge_hertz < 0.0:
        raise ValueError(f"lower_edge_hertz must be non-negative. Got: {lower_edge_hertz}")
    if lower_edge_hertz >= upper_edge_hertz:
        raise ValueError(f"lower_edge_hertz {lower_edge_hertz:.1f} >= upper_edge_hertz {upper_edge_hertz:.1f}")
    if rate is not None:
        if float(rate) <= 0.0:
            raise ValueError(f"sample_rate must be positive. Got: {rate}")
        if upper_edge_hertz > float(rate) / 2:
            raise ValueError("upper_edge_hertz must not be larger than the Nyquist frequency (sample_rate / 2). "
                             f"Got {upper_edge_hertz} for sample_rate: {rate}")
    if not dtype.is_floating:
        raise ValueError(f"dtype must be a floating point type. Got: {dtype.name}")
    from specflow.api.tf_array_names import linspace

    dt = dtype.numpy
    rate = cast(_t(sample_rate), dtype)
    lower, upper = _t(np.asarray(lower_edge_hertz, dt)), _t(np.asarray(upper_edge_hertz, dt))
    zero = np.asarray(0.0, dt)
    linear = linspace(_t(zero), rate / np.asarray(2.0, dt), num_spectrogram_bins)[1:]
    bins_mel = expand_dims(_hertz_to_mel(linear), 1)
    edges = frame(linspace(_hertz_to_mel(lower), _hertz_to_mel(upper), num_mel_bins + 2), 3, 1)
    lo, centre, hi = (reshape(e, [1, num_mel_bins]) for e in call("Split", np.int32(1), edges, num_split=3))
    lower_slopes = (bins_mel - lo) / (centre - lo)
    upper_slopes = (hi - bins_mel) / (hi - centre)
    weights = call("Maximum", zero, call("Minimum", lower_slopes, upper_slopes))
    return pad(weights, [[1, 0], [0, 0]], name=name)


def mfccs_from_log_mel_spectrograms(log_mel_spectrograms, name: str | None = None):
    """MFCCs: the orthonormal type II DCT of log-mel spectrograms (TF's scaling)."""
    x = _float_input(log_mel_spectrograms, "mfccs_from_log_mel_spectrograms")
    bins = x.shape[-1] if x.shape.rank else None
    if bins == 0:
        raise ValueError("num_mel_bins must be positive")
    if bins is None:
        raise ValueError("mfccs_from_log_mel_spectrograms: the mel bins must be known when traced")
    out = _dct(x, 2, None, None) * call("Rsqrt", _t(np.asarray(bins, x.dtype.numpy)) * np.asarray(2.0, x.dtype.numpy))
    return call("Identity", out, name=name) if name else out


# --- MDCT ----------------------------------------------------------------------------------------

def mdct(signals, frame_length, window_fn=vorbis_window, pad_end: bool = False, norm=None, name: str | None = None):
    """The modified DCT of frames half-overlapping (``frame_length`` a multiple of 4)."""
    x = _float_input(signals, "mdct")
    length = _int(frame_length, "frame_length")
    if length % 4 != 0:
        raise ValueError("The frame length must be a multiple of 4.")
    framed = frame(x, length, length // 2, pad_end=pad_end)
    if window_fn is not None:
        framed = framed * window_fn(length, dtype=framed.dtype)
    else:
        framed = framed * np.asarray(1.0 / np.sqrt(2), framed.dtype.numpy)
    a, b, c, d = call("Split", np.int32(-1), framed, num_split=4)
    rev = np.asarray([-1], np.int32)
    first = -call("ReverseV2", c, rev) - d
    second = a - call("ReverseV2", b, rev)
    return dct(concat([first, second], -1), type=4, norm=norm, name=name)


def inverse_mdct(mdcts, window_fn=vorbis_window, norm=None, name: str | None = None):
    """Frames back from ``mdct``, windowed and overlap-added (TDAC)."""
    x = _float_input(mdcts, "inverse_mdct")
    half = x.shape[-1]
    if half is None:
        raise ValueError("inverse_mdct: the last dimension must be known when traced")
    dt = x.dtype.numpy
    if norm is None:
        out = np.asarray(0.5, dt) / np.asarray(half, dt) * dct(x, type=4)
    elif norm == "ortho":
        out = dct(x, type=4, norm="ortho")
    else:
        raise ValueError(f"Unknown normalization. Expected None or 'ortho', got: {norm}")
    lo, hi = call("Split", np.int32(-1), out, num_split=2)
    rev = np.asarray([-1], np.int32)
    frames = concat([hi, -call("ReverseV2", hi, rev), -call("ReverseV2", lo, rev), -lo], -1)
    if window_fn is not None:
        frames = frames * window_fn(2 * half, dtype=x.dtype)
    else:
        frames = frames * np.asarray(1.0 / np.sqrt(2), dt)
    return overlap_and_add(frames, half, name=name)


NAMES = sorted("""
dct fft fft2d fft3d fftshift frame hamming_window hann_window idct ifft ifft2d ifft3d ifftshift
inverse_mdct inverse_stft inverse_stft_window_fn irfft irfft2d irfft3d kaiser_bessel_derived_window
kaiser_window linear_to_mel_weight_matrix mdct mfccs_from_log_mel_spectrograms overlap_and_add rfft
rfft2d rfft3d stft vorbis_window
""".split())
