"""Cases for fake_quant_ops against a per-element Python loop: the range nudged so that 0 is a
step (zero point round-half-away into [quant_min, quant_max], in float32 as TF computes it), each
value clamped and rounded to the nearest step; the gradients pass inside the nudged range, and
the Vars ops' min and max gradients sum what falls below and above it. Hand-worked values pin the
nudge itself: [-1, 1] in 8 bits has steps of 2/255 and a zero point of 127.5, which float32
makes 127.49999, so it rounds to 127 and the range becomes [-254/255, 256/255]."""

import math

import numpy as np

from tests.ops.harness import RNG, Case

F = np.float32


def _nudged(lo, hi, bits, narrow):
    qmin, qmax = F(1 if narrow else 0), F(2**bits - 1)
    scale = (F(hi) - F(lo)) / (qmax - qmin)
    zero = qmin - F(lo) / scale
    zero = qmin if zero < qmin else qmax if zero > qmax else F(math.floor(zero + 0.5))  # zero >= 0: half away
    return float((qmin - zero) * scale), float((qmax - zero) * scale), float(scale)


def _quantize(x, lo, hi, bits=8, narrow=False):
    lo, hi = np.broadcast_to(lo, x.shape[-1:] if np.ndim(lo) else ()), np.broadcast_to(hi, np.shape(lo))
    out = np.zeros(x.shape, F)
    for idx in np.ndindex(x.shape):
        c = idx[-1] if np.ndim(lo) else ()
        a, b = float(lo[c]), float(hi[c])
        if a == 0 and b == 0:
            continue
        n_min, n_max, scale = _nudged(a, b, bits, narrow)
        v = min(max(float(x[idx]), n_min), n_max)
        out[idx] = math.floor((v - n_min) / scale + 0.5) * scale + n_min
    return out


def _grads(dy, x, lo, hi, bits=8, narrow=False, per_channel=False):
    dx = np.zeros(x.shape, F)
    dmin, dmax = np.zeros(np.shape(lo), np.float64), np.zeros(np.shape(lo), np.float64)
    for idx in np.ndindex(x.shape):
        c = idx[-1] if per_channel else ()
        a, b = float(np.asarray(lo)[c]), float(np.asarray(hi)[c])
        if a == 0 and b == 0:
            dx[idx] = dy[idx]
            continue
        n_min, n_max, _ = _nudged(a, b, bits, narrow)
        v = float(x[idx])
        if v < n_min:
            dmin[c] += dy[idx]
        elif v > n_max:
            dmax[c] += dy[idx]
        else:
            dx[idx] = dy[idx]
    return dx, dmin.astype(F), dmax.astype(F)


_X = (RNG.standard_normal((4, 5)) * 2).astype(F)
_DY = RNG.standard_normal((4, 5)).astype(F)
_EDGES = np.array([-2.0, -1.0, -254 / 255, 0.0, 0.5, 0.9, 3.0], F)
_LO, _HI = np.array([-1.0, 0.0, 0.2, -3.0, -0.5], F), np.array([1.0, 0.0, 2.0, -0.1, 4.0], F)

CASES = [
    Case("FakeQuantWithMinMaxArgs", [_X], attrs={"min": -1.0, "max": 1.0}, rtol=1e-5, atol=1e-6,
         ref=lambda x: _quantize(x, -1.0, 1.0)),
    Case("FakeQuantWithMinMaxArgs", [_EDGES], attrs={"min": -1.0, "max": 1.0}, rtol=1e-6, atol=1e-7,
         id="FakeQuantWithMinMaxArgs-nudged-range",
         ref=lambda x: np.array([-254, -254, -254, 0, 128, 230, 256], F) / F(255)),
    Case("FakeQuantWithMinMaxArgs", [_X], attrs={"min": 0.3, "max": 2.2, "num_bits": 4, "narrow_range": True},
         rtol=1e-5, atol=1e-6, id="FakeQuantWithMinMaxArgs-narrow-positive",
         ref=lambda x: _quantize(x, 0.3, 2.2, 4, True)),
    Case("FakeQuantWithMinMaxArgsGradient", [_DY, _X], attrs={"min": -1.0, "max": 1.0},
         ref=lambda dy, x: _grads(dy, x, -1.0, 1.0)[0]),
    Case("FakeQuantWithMinMaxVars", [_X, F(-2.7), F(-0.3)], attrs={"num_bits": 5}, rtol=1e-5, atol=1e-6,
         ref=lambda x, lo, hi: _quantize(x, float(lo), float(hi), 5)),
    Case("FakeQuantWithMinMaxVars", [_X, F(0), F(0)], ref=lambda x, lo, hi: np.zeros_like(x), id="FakeQuantWithMinMaxVars-zero-range"),
    Case("FakeQuantWithMinMaxVarsGradient", [_DY, _X, F(-0.37), F(1.91)], attrs={"num_bits": 3, "narrow_range": True},
         rtol=1e-5, atol=1e-6, ref=lambda dy, x, lo, hi: _grads(dy, x, float(lo), float(hi), 3, True)),
    Case("FakeQuantWithMinMaxVarsGradient", [_DY, _X, F(0), F(0)], id="FakeQuantWithMinMaxVarsGradient-zero-range",
         ref=lambda dy, x, lo, hi: (dy, F(0), F(0))),
    Case("FakeQuantWithMinMaxVarsPerChannel", [_X, _LO, _HI], rtol=1e-5, atol=1e-6,
         ref=lambda x, lo, hi: _quantize(x, lo, hi)),
    Case("FakeQuantWithMinMaxVarsPerChannelGradient", [_DY, _X, _LO, _HI], attrs={"num_bits": 6}, rtol=1e-5, atol=1e-6,
         ref=lambda dy, x, lo, hi: _grads(dy, x, lo, hi, 6, per_channel=True)),
    # An input halfway between two steps (TF 2.21's numbers, found by tf_fuzz_parity.py --family 4):
    # Vars divides by the scale and rounds 0.5 in [0, 1] at 4 bits down to 7/15 and 2.0 in [-6, 6]
    # down to 1.6; Args and PerChannel multiply by the inverse scale and round them up
    Case("FakeQuantWithMinMaxVars", [np.array([0.5, 0.1], np.float32), F(0), F(1)], attrs={"num_bits": 4}, rtol=0, atol=0,
         ref=lambda *a: np.array([0.46666669845581055, 0.13333334028720856], np.float32), id="FakeQuantWithMinMaxVars-halfway"),
    Case("FakeQuantWithMinMaxVars", [np.array([2.0, -7.0], np.float32), F(-6), F(6)], attrs={"num_bits": 4}, rtol=0, atol=0,
         ref=lambda *a: np.array([1.6, -6.4], np.float32), id="FakeQuantWithMinMaxVars-halfway-2"),
    Case("FakeQuantWithMinMaxVarsPerChannel", [np.array([[0.5, 2.0]], np.float32), np.array([0, -6], np.float32),
                                               np.array([1, 6], np.float32)], attrs={"num_bits": 4}, rtol=0, atol=0,
         ref=lambda *a: np.array([[0.53333336, 2.4]], np.float32), id="FakeQuantWithMinMaxVarsPerChannel-halfway"),
    # a [0, 0] channel's min and max gradients are 0 even for a NaN or infinite dy
    Case("FakeQuantWithMinMaxVarsPerChannelGradient", [np.array([[np.nan, np.inf], [1.0, 2.0]], np.float32),
                                                       np.array([[-1.0, 5.0], [0.5, -3.0]], np.float32), np.array([0, -1], np.float32),
                                                       np.array([0, 1], np.float32)], id="FakeQuantWithMinMaxVarsPerChannelGradient-zero-nan",
         ref=lambda *a: [np.array([[np.nan, np.nan], [1.0, 0.0]], np.float32), np.array([0.0, np.nan], np.float32),
                         np.array([0.0, np.inf], np.float32)]),
    Case("FakeQuantWithMinMaxVarsGradient", [np.array([np.nan, 1.0], np.float32), np.array([-1.0, 5.0], np.float32), F(0), F(0)],
         ref=lambda *a: [np.array([np.nan, 1.0], np.float32), F(0), F(0)], id="FakeQuantWithMinMaxVarsGradient-zero-nan"),
]  # fmt: skip
