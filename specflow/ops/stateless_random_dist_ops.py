"""Stateless draws from the binomial, Poisson and gamma distributions, TF's CPU kernels value for
value: StatelessRandomBinomial, StatelessRandomPoisson (both from a [2] seed, scrambled as
tf.random.stateless_* do) and StatelessRandomGammaV3 (a Philox key and counter), with
RandomGammaGrad, the gradient of a gamma sample in alpha.

Every output element i runs its own rejection loop on its own Philox stream: the op's generator
skipped ahead by a fixed number of calls per element (256 for Poisson and gamma; 42 for the
binomial's inversion, 256 for its BTRS), so each value depends only on (seed, i). Doubles come two
per Philox call (TF's UniformDistribution<double>) and are read last first, as TF's UNIFORM macro
reads its buffer; the gamma's normals are TF's double Box-Muller pairs, read the same way.
The parameters broadcast against the output's trailing dims (output [samples..., params...])."""

from __future__ import annotations

import math

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext, broadcast_shape
from specflow.ops.registry import gradient, kernel, not_differentiable, register_op
from specflow.ops.special_function_ops import _igamma_grad_a
from specflow.ops.stateless_random_ops import (
    _stateless_args,
    key_counter_from_seed,
    normal_from_words,
    philox_words_at,
    uniform_from_words,
)

_RESERVED = 256  # TF's kReservedSamplesPerOutput: Philox calls set aside per output element
_PREFETCH = 4  # Philox calls computed up front, vectorized, for every element


class _Streams:
    """Per-element Philox streams: element i starts at the op's counter plus ``skip * i``; the
    first calls of every stream are made at once, later ones on demand."""

    def __init__(self, key: int, counter: tuple[int, int], n: int, skip: int):
        self.key, self.counter, self.skip = key, counter, skip
        base = np.arange(n, dtype=np.uint64) * np.uint64(skip)
        self.first = philox_words_at(np, key, counter, base[:, None] + np.arange(_PREFETCH, dtype=np.uint64))

    def call(self, i: int, j: int) -> np.ndarray:
        if j < _PREFETCH:
            return self.first[i, j]
        return philox_words_at(np, self.key, self.counter, np.array([i * self.skip + j], np.uint64))[0]


class _Reader:
    """TF's UNIFORM macro (and its normal twin) over one element's stream: a buffer of two values
    per Philox call, handed out last first."""

    def __init__(self, streams: _Streams, i: int):
        self.streams, self.i, self.calls = streams, i, 0
        self.uniforms: list[float] = []
        self.normals: list[float] = []

    def _words(self):
        w = self.streams.call(self.i, self.calls)
        self.calls += 1
        return w

    def uniform(self) -> float:
        if not self.uniforms:
            self.uniforms = [float(v) for v in uniform_from_words(np, self._words(), np.dtype(np.float64), 2)]
        return self.uniforms.pop()

    def normal(self) -> float:
        if not self.normals:
            self.normals = [float(v) for v in normal_from_words(np, self._words(), np.dtype(np.float64), 2)]
        return self.normals.pop()


def _sample_shape(ic: InferenceContext) -> list[Shape]:
    if ic.shape(0).rank not in (None, 1):
        raise ic.fail(f"shape must be a vector of dimensions, got a tensor of shape {ic.shape(0)}")
    return [ic.shape_from_value(0)]


def _dims(ctx, shape) -> tuple[int, ...]:
    dims = ctx.host(shape)
    if dims.ndim != 1 or (dims < 0).any():
        raise ctx.fail(f"shape must be a vector of non-negative dimensions, got {dims.tolist()}")
    return tuple(int(d) for d in dims)


def _params(ctx, dims, *params):
    """The parameters broadcast to the output's trailing dims, flat, and the number of samples
    per parameter (TF's: the output shape must end with the parameters' broadcast shape)."""
    try:
        shape = np.broadcast_shapes(*(p.shape for p in params))
    except ValueError:
        raise ctx.fail(f"parameters of shapes {[list(p.shape) for p in params]} do not broadcast") from None
    if len(shape) > len(dims) or tuple(dims[len(dims) - len(shape):]) != shape:
        raise ctx.fail(f"shape {list(dims)} must end with the parameters' shape {list(shape)}")
    flat = [np.broadcast_to(p, shape).reshape(-1) for p in params]
    n_params = int(np.prod(shape, dtype=np.int64))
    return flat, n_params


def _fill(dims, n_params, draw, dtype):
    """out[i] = draw(i, parameter index) with TF's layout: output_idx runs over (parameter,
    sample), the value lands at sample * n_params + parameter."""
    n = int(np.prod(dims, dtype=np.int64))
    per = n // n_params if n_params else 0
    out = np.empty(n, np.float64)
    for idx in range(n):
        p, s = divmod(idx, per)
        out[s * n_params + p] = draw(idx, p)
    with np.errstate(invalid="ignore", over="ignore"):
        return out.astype(dtype).reshape(dims)


# --- StatelessRandomBinomial ------------------------------------------------------------------

_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
         0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
         0.00925546218271273, 0.00833056343336287)  # fmt: skip


def _stirling_tail(k: float) -> float:
    if k <= 9:
        return _TAIL[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


def _binomial_inversion(count: float, prob: float, r: _Reader) -> float:
    geom_sum, num_geom = 0.0, 0
    while True:
        geom = math.ceil(math.log(r.uniform()) / math.log1p(-prob))
        geom_sum += geom
        if geom_sum > count:
            return float(num_geom)
        num_geom += 1


def _btrs(count: float, prob: float, r: _Reader) -> float:
    # Hormann's transformed rejection with squeeze, as TF writes it.
    stddev = math.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    ratio = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = math.floor((count + 1) * prob)
    while True:
        u = r.uniform() - 0.5
        v = r.uniform()
        us = 0.5 - abs(u)
        k = math.floor((2 * a / us + b) * u + c)
        if us >= 0.07 and v <= v_r:
            return float(k)
        if k < 0 or k > count:
            continue
        v = math.log(v * alpha / (a / (us * us) + b))
        upper = ((m + 0.5) * math.log((m + 1) / (ratio * (count - m + 1)))
                 + (count + 1) * math.log((count - m + 1) / (count - k + 1))
                 + (k + 0.5) * math.log(ratio * (count - k + 1) / (k + 1))
                 + _stirling_tail(m) + _stirling_tail(count - m) - _stirling_tail(k) - _stirling_tail(count - k))  # fmt: skip
        if v <= upper:
            return float(k)


register_op(
    "StatelessRandomBinomial",
    inputs=["shape: S", "seed: Tseed", "counts: T", "probs: T"],
    outputs=["output: dtype"],
    attrs=["S: {int32, int64}", "Tseed: {int32, int64} = int64", "T: {float16, float32, float64, int32, int64} = float64",
           "dtype: {float16, float32, float64, int32, int64} = int64"],  # fmt: skip
    shape=_sample_shape,
    doc="Binomial(counts, probs) draws that depend only on the [2] seed (tf.random.stateless_binomial): "
    "TF's inversion for count * p < 10, BTRS otherwise (p > 0.5 by its complement).",
)


@kernel("StatelessRandomBinomial", devices=("CPU",), host_inputs=(0, 1, 2, 3))
def _stateless_binomial(ctx, shape, seed, counts, probs):
    dims = _dims(ctx, shape)
    (cs, ps), n_params = _params(ctx, dims, ctx.host(counts), ctx.host(probs))
    key, counter = key_counter_from_seed(ctx, seed)
    n = int(np.prod(dims, dtype=np.int64))
    small, large = (_Streams(key, counter, n, skip) for skip in (42, _RESERVED))
    t = ps.dtype.type

    def draw(idx, p):
        count, prob = cs[p], ps[p]
        dcount = float(count)
        if dcount <= 0.0 or prob <= 0:
            return 0.0
        if prob >= 1:
            return dcount
        if np.isnan(prob):
            return math.nan
        flip = prob > t(0.5)
        q = t(1) - prob if flip else prob
        if count * q >= t(10):
            k = _btrs(dcount, float(q), _Reader(large, idx))
        else:
            k = _binomial_inversion(dcount, float(q), _Reader(small, idx))
        return dcount - k if flip else k

    return _fill(dims, n_params, draw, ctx.attrs["dtype"].numpy)


# --- StatelessRandomPoisson -------------------------------------------------------------------


def _poisson(rate: float, r: _Reader, highest: float) -> float:
    if rate < 10:  # TF's kPoissonLowHighCutoff; Knuth: multiply uniforms until the product drops to exp(-rate)
        exp_neg, prod, x = math.exp(-rate), 1.0, 0.0
        while True:
            prod *= r.uniform()
            if prod <= exp_neg and x <= highest:
                return x
            x += 1
    if math.isinf(rate) and rate > 0:
        return math.inf
    # Hormann's transformed rejection (PTRS).
    log_rate = math.log(rate)
    b = 0.931 + 2.53 * math.sqrt(rate)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2)
    while True:
        u = r.uniform() - 0.5
        v = r.uniform()
        us = 0.5 - abs(u)
        k = math.floor((2 * a / us + b) * u + rate + 0.43)
        if k < 0:
            continue
        if us >= 0.07 and v <= vr:
            return float(k)
        v = math.log(v) + math.log(inv_alpha) - math.log(a / (us * us) + b)
        if v <= -rate + k * log_rate - math.lgamma(k + 1):
            return float(k)


register_op(
    "StatelessRandomPoisson",
    inputs=["shape: T", "seed: Tseed", "lam: Rtype"],
    outputs=["output: dtype"],
    attrs=["Rtype: {float16, float32, float64, int32, int64}", "dtype: {float16, float32, float64, int32, int64}",
           "T: {int32, int64}", "Tseed: {int32, int64} = int64"],  # fmt: skip
    shape=_sample_shape,
    doc="Poisson(lam) draws that depend only on the [2] seed (tf.random.stateless_poisson): TF's "
    "Knuth product of uniforms below rate 10, Hormann's PTRS rejection above.",
)


@kernel("StatelessRandomPoisson", devices=("CPU",), host_inputs=(0, 1, 2))
def _stateless_poisson(ctx, shape, seed, lam):
    dims = _dims(ctx, shape)
    (rates,), n_params = _params(ctx, dims, ctx.host(lam))
    key, counter = key_counter_from_seed(ctx, seed)
    streams = _Streams(key, counter, int(np.prod(dims, dtype=np.int64)), _RESERVED)
    out = ctx.attrs["dtype"].numpy
    highest = float(np.iinfo(out).max) if out.kind == "i" else float(np.finfo(out).max)
    return _fill(dims, n_params, lambda idx, p: _poisson(float(rates[p]), _Reader(streams, idx), highest), out)


# --- StatelessRandomGammaV3 -------------------------------------------------------------------


def _gamma(alpha: float, r: _Reader) -> float:
    if alpha == 1.0:  # exponential
        return -math.log1p(-r.uniform())
    # Marsaglia and Tsang; alpha < 1 boosted by one and scaled by u^(1/alpha).
    below_one = alpha < 1
    d = alpha + (2.0 / 3 if below_one else -1.0 / 3)
    c = 1.0 / 3 / math.sqrt(d)
    while True:
        x = r.normal()
        v = 1 + c * x
        if v <= 0:
            continue
        v = v * v * v
        u = r.uniform()
        if u < 1 - 0.0331 * (x * x) * (x * x) or math.log(u) < 0.5 * x * x + d * (1 - v + math.log(v)):
            res = d * v
            if below_one:
                res *= r.uniform() ** (1 / alpha)
            return res


register_op(
    "StatelessRandomGammaV3",
    inputs=["shape: shape_dtype", "key: uint64", "counter: uint64", "alg: int32", "alpha: dtype"],
    outputs=["output: dtype"],
    attrs=["dtype: {float16, float32, float64}", "shape_dtype: {int32, int64} = int32"],
    shape=_sample_shape,
    doc="Gamma(alpha, 1) draws that depend only on (key, counter, alg) (tf.random.stateless_gamma): "
    "TF's Marsaglia-Tsang rejection from its double normals and uniforms, an exponential for alpha 1.",
)


@kernel("StatelessRandomGammaV3", devices=("CPU",), host_inputs=(0, 1, 2, 3, 4))
def _stateless_gamma(ctx, shape, key, counter, alg, alpha):
    dims, key, counter = _stateless_args(ctx, shape, key, counter, alg)
    dims = tuple(int(d) for d in dims)
    (alphas,), n_params = _params(ctx, dims, ctx.host(alpha))
    streams = _Streams(int(key[0]), (int(counter[0]), int(counter[1])), int(np.prod(dims, dtype=np.int64)), _RESERVED)
    return _fill(dims, n_params, lambda idx, p: _gamma(float(alphas[p]), _Reader(streams, idx)), ctx.attrs["dtype"].numpy)


not_differentiable("StatelessRandomBinomial", "StatelessRandomPoisson")


# --- RandomGammaGrad: d sample / d alpha, and the gamma's gradient -----------------------------

register_op(
    "RandomGammaGrad",
    inputs=["alpha: T", "sample: T"],
    outputs=["output: T"],
    attrs=["T: {float32, float64}"],
    shape=broadcast_shape,
    doc="The derivative of a Gamma(alpha, 1) sample in alpha at fixed CDF (implicit "
    "reparameterization): -dP(alpha, x)/dalpha / pdf(x), 0 where the sample is 0.",
)


class _NumpyCtx:
    xp = np


@kernel("RandomGammaGrad", devices=("CPU",))
def _random_gamma_grad(ctx, alpha, sample):
    a, x = np.broadcast_arrays(alpha, sample)
    work = np.float64
    a64, x64 = a.astype(work), x.astype(work)
    from scipy.special import gammaln

    with np.errstate(all="ignore"):
        # (_igamma_grad_a gives scalars back as 1-element vectors: the broadcast shape restored)
        da = np.asarray(_igamma_grad_a(_NumpyCtx, np.ascontiguousarray(a), np.ascontiguousarray(x)), work).reshape(a.shape)
        log_pdf = -x64 + (a64 - 1) * np.log(x64) - gammaln(a64)
        out = -da / np.exp(log_pdf)
    out = np.where(x64 == 0, 0.0, out)
    return out.astype(alpha.dtype)


not_differentiable("RandomGammaGrad")


@gradient("StatelessRandomGammaV3")
def _stateless_gamma_grad(b, node, dys):
    # TF's: RandomGammaGrad(alpha, sample) times the incoming gradient, summed over the sample
    # dims (those in front of alpha's broadcast shape).
    shape, alpha = node.data_inputs[0], node.data_inputs[4]
    sample = f"{node.name}:0"
    a_shape = gu.shape_of(b, alpha, b.spec(shape).dtype)
    lead = gu.emit(b, "Sub", gu.emit(b, "Size", shape, out_type=b.spec(shape).dtype), gu.emit(b, "Size", a_shape, out_type=b.spec(shape).dtype))
    axes = gu.emit(b, "Range", gu.const(b, np.zeros((), b.spec(shape).dtype.numpy)), lead,
                   gu.const(b, np.ones((), b.spec(shape).dtype.numpy)))  # fmt: skip
    partial = gu.emit(b, "RandomGammaGrad", alpha, sample)
    total = gu.emit(b, "Sum", gu.emit(b, "Mul", partial, dys[0]), axes)
    return [None, None, None, None, gu.emit(b, "Reshape", total, a_shape)]
