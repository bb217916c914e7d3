"""Discrete Fourier transforms over the innermost 1, 2 or 3 dims: FFT, IFFT, FFT2D, IFFT2D, FFT3D,
IFFT3D, and the real ones RFFT, IRFFT, RFFT2D, IRFFT2D, IRFFT3D's siblings RFFT3D, IRFFT3D, with
TensorFlow's gradients (fft_ops' gradients in TF's signal module).

A real transform's ``fft_length`` crops or zero-pads each transformed dim of its input first (for
the inverse ones, the innermost dim to fft_length / 2 + 1), as TF and numpy's ``n``/``s`` do.
Results keep the input's precision (complex64 stays complex64), computed by numpy's pocketfft in
double precision."""

from __future__ import annotations

import numpy as np

from specflow.errors import GraphError
from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext, unchanged_shape
from specflow.ops.registry import gradient, kernel, register_op

_COMPLEX = "Tcomplex: {complex64, complex128} = complex64"
_REAL = "Treal: {float32, float64} = float32"


def _axes(rank: int) -> tuple[int, ...]:
    return tuple(range(-rank, 0))


def _check_rank(ctx, x, rank: int) -> None:
    if x.ndim < rank:
        raise ctx.fail(f"input must have rank >= {rank}, got shape {list(x.shape)}")


# --- complex to complex -----------------------------------------------------------------------

for _rank in (1, 2, 3):
    for _inverse in (False, True):
        _name = ("I" if _inverse else "") + "FFT" + ("" if _rank == 1 else f"{_rank}D")
        register_op(
            _name,
            inputs=["input: Tcomplex"],
            outputs=["output: Tcomplex"],
            attrs=[_COMPLEX],
            shape=unchanged_shape,
            doc=f"The {'inverse ' if _inverse else ''}discrete Fourier transform over the innermost "
            f"{_rank} dim{'s' if _rank > 1 else ''}{' (divided by their size)' if _inverse else ''}.",
        )

        def _register(name=_name, rank=_rank, inverse=_inverse):
            @kernel(name)
            def _fft(ctx, x):
                _check_rank(ctx, x, rank)
                xp = ctx.xp
                fn = xp.fft.ifftn if inverse else xp.fft.fftn
                if x.size == 0:  # TF transforms nothing; numpy refuses 0-point transforms
                    return xp.zeros(x.shape, x.dtype)
                return fn(x, axes=_axes(rank)).astype(x.dtype, copy=False)

            @gradient(name)
            def _fft_grad(b, node, dys):
                # FFT's adjoint is n * IFFT, IFFT's is FFT / n (n: the transformed dims' size).
                other = name[1:] if inverse else "I" + name
                x = node.data_inputs[0]
                out = gu.emit(b, other, dys[0])
                return [gu.emit(b, "RealDiv" if inverse else "Mul", out, _size(b, x, rank))]

        _register()


def _size(b, x: str, rank: int) -> str:
    """The product of x's innermost ``rank`` dims, as a scalar of x's (complex) dtype."""
    dims, ct = b.spec(x).shape, b.spec(x).dtype
    if dims.rank is not None and all(d is not None for d in dims.dims[-rank:]):
        return gu.const(b, complex(np.prod(dims.dims[-rank:])), ct)
    shape = gu.shape_of(b, x)
    inner = gu.emit(b, "StridedSlice", shape, gu.const(b, [-rank], "int32"), gu.const(b, [0], "int32"),
                    gu.const(b, [1], "int32"), end_mask=1)  # fmt: skip
    return gu.emit(b, "Cast", gu.emit(b, "Prod", inner, gu.const(b, 0, "int32")), DstT=ct)


# --- real to complex and back -----------------------------------------------------------------


def _lengths(c, fft_length, rank: int) -> tuple[int, ...] | None:
    if fft_length is None:
        return None
    v = np.asarray(fft_length).reshape(-1)
    if v.size != rank:
        raise c.fail(f"fft_length must hold {rank} value{'s' if rank > 1 else ''}, got {v.tolist()}")
    if (v < 0).any():
        raise c.fail(f"fft_length must not be negative, got {v.tolist()}")
    return tuple(int(d) for d in v)


def _real_shape(inverse: bool, rank: int):
    def infer(ic: InferenceContext) -> list[Shape]:
        x = ic.shape(0)
        if x.rank is not None and x.rank < rank:
            raise ic.fail(f"input must have rank >= {rank}, got shape {x}")
        n = _lengths(ic, ic.value(1), rank)
        if x.rank is None:
            return [Shape.unknown()]
        if n is None:
            return [Shape([*x.dims[:-rank], *[None] * rank])]
        last = n[-1] if inverse else n[-1] // 2 + 1
        return [Shape([*x.dims[:-rank], *n[:-1], last])]

    return infer


for _rank in (1, 2, 3):
    for _inverse in (False, True):
        _name = ("IRFFT" if _inverse else "RFFT") + ("" if _rank == 1 else f"{_rank}D")
        register_op(
            _name,
            inputs=["input: Tcomplex" if _inverse else "input: Treal", "fft_length: int32"],
            outputs=["output: Treal" if _inverse else "output: Tcomplex"],
            attrs=[_REAL, _COMPLEX],
            shape=_real_shape(_inverse, _rank),
            doc=(f"The real signal whose {_rank}-D transform's non-negative frequencies are the input "
                 "(the innermost dim cropped or zero-padded to fft_length / 2 + 1)" if _inverse else
                 f"The {_rank}-D transform of a real signal: its fft_length / 2 + 1 non-negative frequencies "
                 "in the innermost dim (each transformed dim of the input cropped or zero-padded to "
                 "fft_length first)") + ".",
        )  # fmt: skip

        def _register_real(name=_name, rank=_rank, inverse=_inverse):
            @kernel(name, host_inputs=(1,))
            def _rfft(ctx, x, fft_length):
                _check_rank(ctx, x, rank)
                n = _lengths(ctx, ctx.host(fft_length), rank)
                xp = ctx.xp
                fn, out_t, last = (xp.fft.irfftn, ctx.attrs["Treal"], n[-1]) if inverse else \
                    (xp.fft.rfftn, ctx.attrs["Tcomplex"], n[-1] // 2 + 1)  # fmt: skip
                if 0 in n:
                    return xp.zeros((*x.shape[:-rank], *n[:-1], last), dtype=out_t.numpy)
                return fn(x, s=n, axes=_axes(rank)).astype(out_t.numpy, copy=False)

        _register_real()


def _static_lengths(b, node, rank: int) -> tuple[int, ...]:
    n = b.value(node.data_inputs[1])
    if n is None:
        raise GraphError(f"the gradient of {node.op} needs a constant fft_length", node=node.name,
                         location=node.location)  # fmt: skip
    return tuple(int(d) for d in np.asarray(n).reshape(-1))


def _fit(b, t: str, dims: list[int | None], rank: int) -> str:
    """``t``'s innermost ``rank`` dims cropped or zero-padded to ``dims`` (static sizes)."""
    have = b.spec(t).shape
    if have.rank is None or any(d is None for d in have.dims[-rank:]) or any(d is None for d in dims):
        raise GraphError("an FFT gradient needs the transformed dims' sizes known statically")
    lead = have.rank - rank
    cur = list(have.dims[-rank:])
    if any(c > d for c, d in zip(cur, dims)):
        begin = gu.const(b, np.zeros(have.rank, np.int32))
        size = gu.const(b, np.array([-1] * lead + [min(c, d) for c, d in zip(cur, dims)], np.int32))
        t = gu.emit(b, "Slice", t, begin, size)
        cur = [min(c, d) for c, d in zip(cur, dims)]
    if any(c < d for c, d in zip(cur, dims)):
        pads = np.array([[0, 0]] * lead + [[0, d - c] for c, d in zip(cur, dims)], np.int32)
        t = gu.emit(b, "Pad", t, gu.const(b, pads))
    return t


def _rfft_grad(rank: int):
    def grad(b, node, dys):
        # y = P F x (P keeps the non-negative frequencies): for a real x, dx = re(F^H P^T g) =
        # re(size * IFFT(g zero-padded to the full spectrum)), fitted back to x's dims.
        x = node.data_inputs[0]
        n = _static_lengths(b, node, rank)
        full = _fit(b, dys[0], list(n), rank)
        inv = gu.emit(b, "IFFT" + ("" if rank == 1 else f"{rank}D"), full)
        real_t = b.spec(x).dtype
        re = gu.emit(b, "Real", inv, Tout=real_t)
        scaled = gu.emit(b, "Mul", re, gu.const(b, float(np.prod(n)), real_t))
        return [_fit(b, scaled, list(b.spec(x).shape.dims[-rank:]), rank), None]

    return grad


def _irfft_grad(rank: int):
    def grad(b, node, dys):
        # TF's rule: RFFT of the gradient, the frequencies a real signal holds twice (all but
        # DC and, for an even length, Nyquist) doubled, divided by the transform's size.
        x = node.data_inputs[0]
        n = _static_lengths(b, node, rank)
        spec = gu.emit(b, "RFFT" + ("" if rank == 1 else f"{rank}D"), dys[0], gu.const(b, np.array(n, np.int32)),
                       Tcomplex=b.spec(x).dtype)  # fmt: skip
        half = n[-1] // 2 + 1
        mask = np.full(half, 2.0)
        mask[0] = 1.0
        if n[-1] % 2 == 0:
            mask[-1] = 1.0
        mask /= float(np.prod(n))
        scaled = gu.emit(b, "Mul", spec, gu.const(b, mask.astype(b.spec(x).dtype.numpy), b.spec(x).dtype))
        return [_fit(b, scaled, list(b.spec(x).shape.dims[-rank:]), rank), None]

    return grad


for _rank in (1, 2, 3):
    _suffix = "" if _rank == 1 else f"{_rank}D"
    gradient("RFFT" + _suffix)(_rfft_grad(_rank))
    gradient("IRFFT" + _suffix)(_irfft_grad(_rank))
