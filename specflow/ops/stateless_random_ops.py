"""Counter-based (stateless) random numbers: StatelessRandomUniformV2, NormalV2, TruncatedNormalV2,
StatelessMultinomial and StatelessShuffle.

The same (key, counter, alg) always gives the same numbers, bit for bit TensorFlow's on CPU for
the Philox algorithm: Philox4x32-10 (Salmon et al. 2011, as TF's philox_random.h) makes four
32-bit words per counter value; element group g uses the 128-bit counter plus g; the words become
floats by filling a mantissa under a zero exponent (float32: 23 bits of one word, float64: 20 bits
of one word and 32 of the next, float16: 10 bits of one word, bfloat16: 7) and subtracting 1.

Everything runs on ``ctx.xp`` in uint64 arithmetic (32-bit products fit), so a GPU computes the
same words without a host round trip.
"""

from __future__ import annotations

import math

import numpy as np

from specflow.graph import dtypes
from specflow.graph.shapes import Shape
from specflow.ops.inference import InferenceContext
from specflow.ops.random_ops import _multinomial_shape
from specflow.ops.registry import kernel, not_differentiable, register_op

RNG_ALG_PHILOX, RNG_ALG_THREEFRY, RNG_ALG_AUTO_SELECT = 1, 2, 3

_W32A, _W32B = 0x9E3779B9, 0xBB67AE85  # key schedule (golden ratio, sqrt(3) - 1)
_M4x32A, _M4x32B = 0xD2511F53, 0xCD9E8D57  # round multipliers
_MASK32 = 0xFFFFFFFF


def philox4x32(xp, counter_words, key: tuple[int, int], rounds: int = 10):
    """Philox4x32 on ``counter_words`` (four uint64 arrays holding 32-bit values) with the key
    (two 32-bit ints); returns the four output words the same way."""
    c0, c1, c2, c3 = counter_words
    k0, k1 = key
    mask = np.uint64(_MASK32)
    ma, mb = np.uint64(_M4x32A), np.uint64(_M4x32B)
    for r in range(rounds):
        if r:
            k0, k1 = (k0 + _W32A) & _MASK32, (k1 + _W32B) & _MASK32
        p0, p1 = c0 * ma, c2 * mb  # 32 x 32 -> 64 bits: exact in uint64
        hi0, lo0 = p0 >> np.uint64(32), p0 & mask
        hi1, lo1 = p1 >> np.uint64(32), p1 & mask
        c0, c1, c2, c3 = hi1 ^ c1 ^ np.uint64(k0), lo1, hi0 ^ c3 ^ np.uint64(k1), lo0
    return c0, c1, c2, c3


def philox_words(xp, key: int, counter: tuple[int, int], groups: int):
    """The [groups, 4] uint32 words TF's PhiloxRandom(counter, key) gives on ``groups`` calls."""
    return philox_words_at(xp, key, counter, xp.arange(groups, dtype=np.uint64))


def philox_words_at(xp, key: int, counter: tuple[int, int], skips):
    """The [..., 4] uint32 words of PhiloxRandom(counter, key) after Skip(s), for each s of the
    uint64 array ``skips`` (TF's Skip adds to the 128-bit counter)."""
    g = skips
    lo64 = np.uint64(counter[0]) + g  # the 128-bit counter plus g: low half wraps, carries up
    carry = (lo64 < np.uint64(counter[0])).astype(np.uint64)
    hi64 = np.uint64(counter[1]) + carry
    mask, s32 = np.uint64(_MASK32), np.uint64(32)
    words = (lo64 & mask, lo64 >> s32, hi64 & mask, hi64 >> s32)
    out = philox4x32(xp, words, (key & _MASK32, (key >> 32) & _MASK32))
    return xp.stack(out, axis=-1).astype(np.uint32)


def uniform_from_words(xp, words, dtype: np.dtype, n: int):
    """The first ``n`` floats in [0, 1) of TF's UniformDistribution over Philox output ``words``."""
    if dtype == np.float64:  # two words per double: 20 high mantissa bits, then 32 low ones
        pairs = words.reshape(-1, 2).astype(np.uint64)
        man = ((pairs[:, 0] & np.uint64(0xFFFFF)) << np.uint64(32)) | pairs[:, 1]
        bits = (np.uint64(1023) << np.uint64(52)) | man
        return (bits.view(np.float64) - 1.0)[:n]
    flat = words.reshape(-1)
    if dtype == dtypes.bfloat16.numpy:  # the low 7 bits of each word: 1.m - 1 is m / 128 exactly
        return ((flat & np.uint32(0x7F)).astype(np.float32) / np.float32(128.0))[:n]
    if dtype == np.float16:  # the low 10 bits of each word
        bits = (np.uint16(15) << np.uint16(10)) | (flat & np.uint32(0x3FF)).astype(np.uint16)
        return (bits.view(np.float16) - np.float16(1.0))[:n]
    bits = (np.uint32(127) << np.uint32(23)) | (flat & np.uint32(0x7FFFFF))
    return (bits.view(np.float32) - np.float32(1.0))[:n]


def _stateless_shape(ic: InferenceContext) -> list[Shape]:
    if ic.shape(0).rank not in (None, 1):
        raise ic.fail(f"shape must be a vector of dimensions, got a tensor of shape {ic.shape(0)}")
    if ic.shape(1).rank not in (None, 1) or ic.shape(1).with_rank(1)[0] not in (None, 1):
        raise ic.fail(f"key must have shape [1], got {ic.shape(1)}")
    if ic.shape(3).rank not in (None, 0):
        raise ic.fail(f"alg must be a scalar, got shape {ic.shape(3)}")
    return [ic.shape_from_value(0)]


def _register_stateless(name: str, doc: str, from_words) -> None:
    """A V2 stateless op: ``from_words(xp, words, dtype, n)`` turns Philox output into its
    values (two values per call for float64, four otherwise, for both the uniform and the normal)."""
    register_op(
        name,
        inputs=["shape: Tshape", "key: uint64", "counter: uint64", "alg: int32"],
        outputs=["output: dtype"],
        attrs=["dtype: {bfloat16, float16, float32, float64} = float32", "Tshape: {int32, int64} = int32"],
        shape=_stateless_shape,
        doc=doc,
    )

    @kernel(name, host_inputs=(0, 1, 2, 3))
    def _run(ctx, shape, key, counter, alg):
        dims, key, counter = _stateless_args(ctx, shape, key, counter, alg)
        dtype = ctx.attrs["dtype"].numpy
        n = int(np.prod(dims, dtype=np.int64))
        per_group = 2 if dtype == np.float64 else 4
        words = philox_words(ctx.xp, int(key[0]), (int(counter[0]), int(counter[1])), -(-n // per_group))
        return from_words(ctx.xp, words, dtype, n).reshape(tuple(int(d) for d in dims))

    not_differentiable(name)


def _stateless_args(ctx, shape, key, counter, alg):
    """A V2 stateless op's checked (dims, key, counter), read on the host."""
    dims = ctx.host(shape)
    if dims.ndim != 1 or (dims < 0).any():
        raise ctx.fail(f"shape must be a vector of non-negative dimensions, got {dims.tolist()}")
    return (dims, *_key_counter(ctx, key, counter, alg))


def _key_counter(ctx, key, counter, alg):
    """A V2 stateless op's checked (key, counter), read on the host."""
    key, counter, alg = ctx.host(key), ctx.host(counter), ctx.host(alg)
    if key.shape != (1,):
        raise ctx.fail(f"key must have shape [1], got {list(key.shape)}")
    if alg.ndim != 0:
        raise ctx.fail(f"alg must be a scalar, got shape {list(alg.shape)}")
    if int(alg) not in (RNG_ALG_PHILOX, RNG_ALG_AUTO_SELECT):
        raise ctx.fail(f"Unsupported algorithm id: {int(alg)} (Philox, 1, and auto-select, 3, are implemented)")
    if counter.ndim != 1 or counter.size < 2:
        raise ctx.fail(f"counter must be a vector of at least 2 elements for Philox, got shape {list(counter.shape)}")
    return key, counter


_register_stateless(
    "StatelessRandomUniformV2",
    "Uniform values in [0, 1) that depend only on (key, counter, alg): TF's counter-based "
    "generator (alg 1 = Philox, or 3 = auto, which is Philox).",
    uniform_from_words,
)


# --- seeds to (key, counter), and the algorithm ----------------------------------------------

# TF scrambles an old-style [2] seed into a Philox key and counter by one Philox round trip of
# the seed's four 32-bit words under this fixed key (so no part of the seed must be strong).
_SCRAMBLE_KEY = (0x3EC8F720, 0x02461E29)


register_op(
    "StatelessRandomGetKeyCounter",
    inputs=["seed: Tseed"],
    outputs=["key: uint64", "counter: uint64"],
    attrs=["Tseed: {int32, int64} = int64"],
    shape=lambda ic: [Shape([1]), Shape([2])],
    doc="The Philox key and counter TF's stateless ops derive from a [2] seed (tf.random.stateless_*).",
)


def key_counter_from_seed(ctx, seed) -> tuple[int, tuple[int, int]]:
    """The Philox key and (low, high) counter TF derives from a [2] seed read on the host."""
    s = ctx.host(seed)
    if s.shape != (2,):
        raise ctx.fail(f"seed must have shape [2], got {list(s.shape)}")
    s0, s1 = (int(v) & 0xFFFFFFFFFFFFFFFF for v in s)
    words = [np.array([w], np.uint64) for w in (s0 & _MASK32, s0 >> 32, s1 & _MASK32, s1 >> 32)]
    m0, m1, m2, m3 = (int(w[0]) for w in philox4x32(np, words, _SCRAMBLE_KEY))
    return m0 | (m1 << 32), (0, m2 | (m3 << 32))


@kernel("StatelessRandomGetKeyCounter", host_inputs=(0,))
def _get_key_counter(ctx, seed):
    key, counter = key_counter_from_seed(ctx, seed)
    return ctx.xp.asarray(np.array([key], np.uint64)), ctx.xp.asarray(np.array(counter, np.uint64))


register_op(
    "StatelessRandomGetAlg",
    outputs=["alg: int32"],
    shape=lambda ic: [Shape([])],
    doc="The counter-based algorithm the stateless ops use here: 1, Philox (as TF's CPU kernels).",
)


@kernel("StatelessRandomGetAlg")
def _get_alg(ctx):
    return ctx.xp.asarray(np.int32(RNG_ALG_PHILOX))


not_differentiable("StatelessRandomGetKeyCounter", "StatelessRandomGetAlg")


# --- StatelessRandomNormalV2 ------------------------------------------------------------------


# TF's float Box-Muller calls the C library's logf and sincosf (glibc's, on Linux): their
# results are not always the correctly rounded ones (numpy's float32 functions, or float64 then
# rounded, differ in about 1% of values by an ulp). These are glibc's algorithms (from ARM's
# optimized-routines, MIT), step for step in float64, which give glibc's float for every one of
# the 2^23 uniforms a Philox word can make (checked against libm.so.6 exhaustively).
_LOGF_TABLE = np.array([float.fromhex(h) for h in """
    0x1.661ec79f8f3bep+0 -0x1.57bf7808caadep-2 0x1.571ed4aaf883dp+0 -0x1.2bef0a7c06ddbp-2
    0x1.49539f0f010bp+0 -0x1.01eae7f513a67p-2 0x1.3c995b0b80385p+0 -0x1.b31d8a68224e9p-3
    0x1.30d190c8864a5p+0 -0x1.6574f0ac07758p-3 0x1.25e227b0b8eap+0 -0x1.1aa2bc79c81p-3
    0x1.1bb4a4a1a343fp+0 -0x1.a4e76ce8c0e5ep-4 0x1.12358f08ae5bap+0 -0x1.1973c5a611cccp-4
    0x1.0953f419900a7p+0 -0x1.252f438e10c1ep-5 0x1p+0 0x0p+0
    0x1.e608cfd9a47acp-1 0x1.aa5aa5df25984p-5 0x1.ca4b31f026aap-1 0x1.c5e53aa362eb4p-4
    0x1.b2036576afce6p-1 0x1.526e57720db08p-3 0x1.9c2d163a1aa2dp-1 0x1.bc2860d22477p-3
    0x1.886e6037841edp-1 0x1.1058bc8a07ee1p-2 0x1.767dcf5534862p-1 0x1.4043057b6ee09p-2
""".split()]).reshape(16, 2)  # (1/c, log c) at the centres of 16 subintervals of [0.7, 1.4)
_LOGF_LN2 = float.fromhex("0x1.62e42fefa39efp-1")
_LOGF_POLY = [float.fromhex(h) for h in ("-0x1.00ea348b88334p-2", "0x1.5575b0be00b6ap-2", "-0x1.ffffef20a4123p-2")]
# sincosf: 2/pi scaled by 2^24, pi/2, the cosine (c0..c4) and sine (s1..s3) polynomials
_SINCOSF = [float.fromhex(h) for h in (
    "0x1.45F306DC9C883p+23", "0x1.921FB54442D18p0", "0x1p0", "-0x1.ffffffd0c621cp-2", "0x1.55553e1068f19p-5",
    "-0x1.6c087e89a359dp-10", "0x1.99343027bf8c3p-16", "-0x1.555545995a603p-3", "0x1.1107605230bc4p-7",
    "-0x1.994eb3774cf24p-13")]


def glibc_logf(xp, x):
    """glibc's logf of positive normal float32 ``x``: x = 2^k z, log1p(z/c - 1) + log c + k ln2
    with c from a 16-entry table and a degree-4 polynomial, in float64, rounded once."""
    ix = x.view(np.uint32)
    tmp = ix - np.uint32(0x3F330000)  # (wraps, as C's uint32)
    i = ((tmp >> np.uint32(19)) & np.uint32(15)).astype(np.intp)
    k = tmp.view(np.int32) >> np.int32(23)  # arithmetic shift, as C's
    z = (ix - (tmp & np.uint32(0xFF800000))).view(np.float32).astype(np.float64)
    r = z * xp.asarray(_LOGF_TABLE[:, 0])[i] - 1.0
    y0 = xp.asarray(_LOGF_TABLE[:, 1])[i] + k.astype(np.float64) * _LOGF_LN2
    r2 = r * r
    y = _LOGF_POLY[0] * r2 + (_LOGF_POLY[1] * r + _LOGF_POLY[2])
    y = y * r2 + (y0 + r)
    return xp.where(x == np.float32(1), np.float32(0), y.astype(np.float32))


def glibc_sincosf(xp, y):
    """glibc's sincosf of float32 ``y`` in [0, 120) (Box-Muller's angles): one multiply-subtract
    reduction to x in [-pi/4, pi/4] and the quadrant q (0 below pi/4, where glibc skips the
    reduction: the same arithmetic), the polynomials in float64, rounded; then sin, cos are
    (s, c), (c, -s), (-s, -c), (-c, s) by quadrant (glibc's signs flip exactly)."""
    hpi_inv, hpi, c0, c1, c2, c3, c4, s1, s2, s3 = _SINCOSF
    x = y.astype(np.float64)
    n = ((x * hpi_inv).astype(np.int32) + np.int32(0x800000)) >> np.int32(24)
    x = x - n * hpi
    x2 = x * x
    x3, x4 = x2 * x, x2 * x2
    sp = (x + x3 * s1 + (x3 * x2) * (s2 + x2 * s3)).astype(np.float32)
    cp = (c0 + x2 * c1 + x4 * c2 + (x4 * x2) * (c3 + x2 * c4)).astype(np.float32)
    odd, q = (n & 1) != 0, n & 3
    first, second = xp.where(odd, cp, sp), xp.where(odd, sp, cp)
    sin = xp.where(q >= 2, -first, first)
    cos = xp.where((q == 1) | (q == 2), -second, second)
    tiny = y < np.float32(2.0**-12)  # glibc: sin y = y, cos y = 1
    return xp.where(tiny, y, sin), xp.where(tiny, np.float32(1), cos)


def normal_from_words(xp, words, dtype: np.dtype, n: int):
    """The first ``n`` normals of TF's NormalDistribution over Philox output ``words``: Box-Muller
    on pairs of uniforms (a 32-bit word each, or two per double), the first clamped to 1e-7. For
    floats, as TF's BoxMullerFloat: the angle float(2 pi (a double) * u2), sqrt(-2 logf(u1)), and
    glibc's logf and sincosf."""
    if dtype == np.float64:
        u = uniform_from_words(xp, words, np.dtype(np.float64), words.size // 2)
        u1, u2 = xp.maximum(u[0::2], 1.0e-7), u[1::2]
        # TF's BoxMullerDouble: the C library's log, sin and cos. numpy's float64 sin and cos are
        # the C library's; its log is its own (an ulp off in ~0.4% of values): Python's is libm's.
        log = (np.fromiter(map(math.log, u1.tolist()), np.float64, u1.shape[0]) if xp is np else xp.log(u1))
        radius = xp.sqrt(-2.0 * log)
        angle = 2.0 * np.pi * u2
        out = xp.stack([xp.sin(angle) * radius, xp.cos(angle) * radius], axis=-1).reshape(-1)
        return out[:n]
    u = uniform_from_words(xp, words, np.dtype(np.float32), words.size)
    u1, u2 = xp.maximum(u[0::2], np.float32(1.0e-7)), u[1::2]
    radius = xp.sqrt(np.float32(-2.0) * glibc_logf(xp, u1))
    sin, cos = glibc_sincosf(xp, (2.0 * np.pi * u2.astype(np.float64)).astype(np.float32))
    out = xp.stack([sin * radius, cos * radius], axis=-1).reshape(-1)
    return out[:n].astype(dtype)


_register_stateless(
    "StatelessRandomNormalV2",
    "Standard normal values that depend only on (key, counter, alg): TF's Box-Muller over its "
    "counter-based generator (Philox).",
    normal_from_words,
)


# --- StatelessTruncatedNormalV2 ---------------------------------------------------------------

_TRUNCATE_AT = 2.0  # TF's kTruncateValue: normals at or beyond 2 are drawn again
_RESERVED_PER_VALUE = 256  # TF's kReservedSamplesPerOutput: Philox words set aside per value

register_op(
    "StatelessTruncatedNormalV2",
    inputs=["shape: Tshape", "key: uint64", "counter: uint64", "alg: int32"],
    outputs=["output: dtype"],
    attrs=["dtype: {bfloat16, float16, float32, float64} = float32", "Tshape: {int32, int64} = int32"],
    shape=_stateless_shape,
    doc="Standard normal values within (-2, 2) that depend only on (key, counter, alg): TF's "
    "rejection of Box-Muller normals over its counter-based generator (Philox).",
)


@kernel("StatelessTruncatedNormalV2", host_inputs=(0, 1, 2, 3))
def _truncated_normal(ctx, shape, key, counter, alg):
    # TF fills groups of 4 values (2 for float64); group g starts its own generator at counter
    # + 256 g (128 g for float64: 256 words per value) and takes Box-Muller pairs from it, word
    # after word, keeping the values with |v| < 2 until the group is full. Here every group tries
    # two Philox calls at once (twice the values it needs: 4.6% of normals are dropped); the few
    # groups still lacking values try 4, 8, ... calls, from their start.
    xp = ctx.xp
    dims, key, counter = _stateless_args(ctx, shape, key, counter, alg)
    dtype = ctx.attrs["dtype"].numpy
    n = int(np.prod(dims, dtype=np.int64))
    if n == 0:
        return xp.zeros(tuple(int(d) for d in dims), dtype)
    work = np.dtype(np.float64 if dtype == np.float64 else np.float32)
    per_group = 2 if work == np.float64 else 4
    groups = -(-n // per_group)
    base = xp.arange(groups, dtype=np.uint64) * np.uint64(per_group * _RESERVED_PER_VALUE // 4)
    k, c = int(key[0]), (int(counter[0]), int(counter[1]))
    slots = xp.arange(1, per_group + 1)

    def attempt(starts, calls):
        """Each group's first per_group values within (-2, 2) from ``calls`` Philox calls, and
        whether it found them."""
        words = philox_words_at(xp, k, c, starts[:, None] + xp.arange(calls, dtype=np.uint64)[None, :])
        values = normal_from_words(xp, words.reshape(-1), work, words.size // (4 // per_group))
        values = values.reshape(starts.shape[0], -1)
        keep = xp.abs(values) < work.type(_TRUNCATE_AT)
        rank = xp.cumsum(keep, axis=1)
        where = xp.argmax(keep[:, :, None] & (rank[:, :, None] == slots), axis=1)  # [groups, per_group]
        return xp.take_along_axis(values, where, axis=1), rank[:, -1] >= per_group

    out, full = attempt(base, 2)
    lacking, calls = xp.nonzero(~full)[0], 4
    while lacking.shape[0]:
        got, ok = attempt(base[lacking], calls)
        out[lacking[ok]] = got[ok]
        lacking, calls = lacking[~ok], calls * 2
    return out.reshape(-1)[:n].astype(dtype).reshape(tuple(int(d) for d in dims))


not_differentiable("StatelessTruncatedNormalV2")


# --- StatelessMultinomial ---------------------------------------------------------------------

register_op(
    "StatelessMultinomial",
    inputs=["logits: T", "num_samples: int32", "seed: Tseed"],
    outputs=["output: output_dtype"],
    attrs=["T: {real}", "Tseed: {int32, int64} = int64", "output_dtype: {int32, int64} = int64"],
    shape=_multinomial_shape,
    doc="num_samples class indices per row of logits, drawn with probabilities softmax(row) (a "
    "non-finite logit is never drawn), depending only on the [2] seed (tf.random.stateless_categorical).",
)


@kernel("StatelessMultinomial", host_inputs=(0, 1, 2))
def _stateless_multinomial(ctx, logits, num_samples, seed):
    # TF's CPU kernel: one Philox stream from the scrambled seed, read a double (two words) per
    # sample, row after row; each sample is the upper bound of u * total in the row's running sum
    # of exp(logit - max), the non-finite logits adding nothing. (TF starts a thread's block of
    # rows at counter + row (num_samples + 3) / 4, so a batch large enough to be split across
    # its threads continues differently there; a single block, as TF runs small batches, is this.)
    x, n = np.asarray(ctx.host(logits)), ctx.host(num_samples)
    if x.ndim != 2:
        raise ctx.fail(f"logits must be a matrix [batch, classes], got shape {list(x.shape)}")
    if n.ndim != 0 or int(n) < 0:
        raise ctx.fail(f"num_samples must be a non-negative scalar, got {n.tolist()}")
    batch, classes, n = x.shape[0], x.shape[1], int(n)
    if classes == 0 and batch and n:
        raise ctx.fail("num_classes should be positive, got 0")
    key, counter = key_counter_from_seed(ctx, seed)
    words = philox_words(np, key, counter, -(-2 * batch * n // 4))
    u = uniform_from_words(np, words, np.dtype(np.float64), batch * n).reshape(batch, n)
    out = np.zeros((batch, n), np.int64)
    finite = np.isfinite(x)
    for b in range(batch if classes else 0):
        row = x[b].astype(np.float64)
        top = float(row[finite[b]].max()) if finite[b].any() else float(np.finfo(x.dtype).min)
        cdf = np.cumsum(np.where(finite[b], np.exp(np.where(finite[b], row, top) - top), 0.0))
        out[b] = np.searchsorted(cdf, u[b] * cdf[-1], side="right")
    return ctx.xp.asarray(out.astype(ctx.attrs["output_dtype"].numpy))


not_differentiable("StatelessMultinomial")


# --- integers: StatelessRandomUniformIntV2, StatelessRandomUniformFullIntV2 --------------------


def _int_from_words(words, dtype: np.dtype, n: int):
    """TF's integer draws from Philox words: one 32-bit word per value for 32-bit types, two (low
    word first) per value for 64-bit ones, as uint64 bit patterns."""
    if np.dtype(dtype).itemsize == 8:
        pairs = words.reshape(-1, 2).astype(np.uint64)
        return (pairs[:, 0] | (pairs[:, 1] << np.uint64(32)))[:n]
    return words.reshape(-1).astype(np.uint64)[:n]


def _int_draws(ctx, shape, key, counter, alg):
    dims, key, counter = _stateless_args(ctx, shape, key, counter, alg)
    dtype = ctx.attrs["dtype"].numpy
    n = int(np.prod(dims, dtype=np.int64))
    per_group = 2 if np.dtype(dtype).itemsize == 8 else 4
    words = philox_words(ctx.xp, int(key[0]), (int(counter[0]), int(counter[1])), -(-n // per_group))
    return _int_from_words(words, dtype, n), dtype, tuple(int(d) for d in dims)


def _int_shape(ic: InferenceContext) -> list[Shape]:
    for i, what in ((4, "minval"), (5, "maxval")):
        if ic.shape(i).rank not in (None, 0):
            raise ic.fail(f"{what} must be a scalar, got shape {ic.shape(i)}")
    return _stateless_shape(ic)


register_op(
    "StatelessRandomUniformIntV2",
    inputs=["shape: Tshape", "key: uint64", "counter: uint64", "alg: int32", "minval: dtype", "maxval: dtype"],
    outputs=["output: dtype"],
    attrs=["dtype: {int32, int64, uint32, uint64}", "Tshape: {int32, int64} = int32"],
    shape=_int_shape,
    doc="Integers in [minval, maxval) that depend only on (key, counter, alg): minval + (a Philox word, "
    "or two for 64-bit types) % (maxval - minval), as TF (slightly biased where the range does not "
    "divide 2^32).",
)


@kernel("StatelessRandomUniformIntV2", host_inputs=(0, 1, 2, 3, 4, 5))
def _stateless_uniform_int(ctx, shape, key, counter, alg, minval, maxval):
    lo, hi = ctx.host(minval), ctx.host(maxval)
    if lo.ndim or hi.ndim:
        raise ctx.fail(f"minval and maxval must be scalars, got shapes {list(lo.shape)} and {list(hi.shape)}")
    if not lo < hi:
        raise ctx.fail(f"Need minval < maxval: {lo} >= {hi}")
    bits, dtype, dims = _int_draws(ctx, shape, key, counter, alg)
    wide = np.uint64 if np.dtype(dtype).itemsize == 8 else np.uint32
    mask = (1 << (8 * np.dtype(dtype).itemsize)) - 1
    span, base = (int(hi) - int(lo)) & mask, int(lo) & mask  # in the type's unsigned twin, as TF
    # lo + bits % span in the type's wrapping arithmetic
    out = (bits % np.uint64(span) + np.uint64(base)) & np.uint64(mask)
    return out.astype(wide).view(dtype).reshape(dims)


register_op(
    "StatelessRandomUniformFullIntV2",
    inputs=["shape: Tshape", "key: uint64", "counter: uint64", "alg: int32"],
    outputs=["output: dtype"],
    attrs=["dtype: {int32, int64, uint32, uint64} = uint64", "Tshape: {int32, int64} = int32"],
    shape=_stateless_shape,
    doc="Integers over the dtype's whole range that depend only on (key, counter, alg): the Philox "
    "words' bits (two words, low first, for 64-bit types).",
)


@kernel("StatelessRandomUniformFullIntV2", host_inputs=(0, 1, 2, 3))
def _stateless_uniform_full_int(ctx, shape, key, counter, alg):
    bits, dtype, dims = _int_draws(ctx, shape, key, counter, alg)
    wide = np.uint64 if np.dtype(dtype).itemsize == 8 else np.uint32
    return bits.astype(wide).view(dtype).reshape(dims)


not_differentiable("StatelessRandomUniformIntV2", "StatelessRandomUniformFullIntV2")


# --- StatelessShuffle -------------------------------------------------------------------------


register_op(
    "StatelessShuffle",
    inputs=["value: T", "key: uint64", "counter: uint64", "alg: int32"],
    outputs=["output: T"],
    attrs=["T: type"],
    shape=lambda ic: [ic.shape(0)],
    doc="value permuted along its first dimension by a permutation that depends only on (key, "
    "counter, alg): TF's (tf.random.experimental.stateless_shuffle).",
)


@kernel("StatelessShuffle", host_inputs=(1, 2, 3))
def _stateless_shuffle(ctx, value, key, counter, alg):
    key, counter = _key_counter(ctx, key, counter, alg)
    if int(ctx.host(alg)) == RNG_ALG_THREEFRY:  # (_key_counter allows only Philox and auto)
        raise ctx.fail("Unsupported algorithm id: 2")
    n = value.shape[0] if value.ndim else 1
    if value.size <= 1 or n <= 1:
        return value  # TF's output is the input itself
    # TF's shuffle_common.h: Fisher-Yates from the front, swapping i with i + u % (n - i) for
    # u the Philox stream's next 32-bit word, taken one at a time from each block of four
    words = philox_words(np, int(key[0]), (int(counter[0]), int(counter[1])), -(-(n - 1) // 4)).reshape(-1)
    perm = np.arange(n)
    for i, u in enumerate(words[: n - 1].tolist()):
        j = i + u % (n - i)
        perm[i], perm[j] = perm[j], perm[i]
    return value[ctx.xp.asarray(perm)]


# StatelessShuffle has no gradient: TF registers none (a tape through it fails there too).
