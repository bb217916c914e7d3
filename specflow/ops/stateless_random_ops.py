"""Counter-based (stateless) random numbers: StatelessRandomUniformV2.

The same (key, counter, alg) always gives the same numbers, bit for bit TensorFlow's on CPU for
the Philox algorithm: Philox4x32-10 (Salmon et al. 2011, as TF's philox_random.h) makes four
32-bit words per counter value; element group g uses the 128-bit counter plus g; the words become
floats by filling a mantissa under a zero exponent (float32: 23 bits of one word, float64: 20 bits
of one word and 32 of the next, float16: 10 bits of one word) and subtracting 1.

Everything runs on ``ctx.xp`` in uint64 arithmetic (32-bit products fit), so a GPU computes the
same words without a host round trip.
"""

from __future__ import annotations

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops.inference import InferenceContext
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
    g = xp.arange(groups, dtype=np.uint64)
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


register_op(
    "StatelessRandomUniformV2",
    inputs=["shape: Tshape", "key: uint64", "counter: uint64", "alg: int32"],
    outputs=["output: dtype"],
    attrs=["dtype: {float16, float32, float64} = float32", "Tshape: {int32, int64} = int32"],
    shape=_stateless_shape,
    doc="Uniform values in [0, 1) that depend only on (key, counter, alg): TF's counter-based "
    "generator (alg 1 = Philox, or 3 = auto, which is Philox).",
)


@kernel("StatelessRandomUniformV2", host_inputs=(0, 1, 2, 3))
def _stateless_random_uniform(ctx, shape, key, counter, alg):
    xp = ctx.xp
    dims, key, counter, alg = ctx.host(shape), ctx.host(key), ctx.host(counter), ctx.host(alg)
    if dims.ndim != 1 or (dims < 0).any():
        raise ctx.fail(f"shape must be a vector of non-negative dimensions, got {dims.tolist()}")
    if key.shape != (1,):
        raise ctx.fail(f"key must have shape [1], got {list(key.shape)}")
    if alg.ndim != 0:
        raise ctx.fail(f"alg must be a scalar, got shape {list(alg.shape)}")
    if int(alg) not in (RNG_ALG_PHILOX, RNG_ALG_AUTO_SELECT):
        raise ctx.fail(f"Unsupported algorithm id: {int(alg)} (Philox, 1, and auto-select, 3, are implemented)")
    if counter.ndim != 1 or counter.size < 2:
        raise ctx.fail(f"counter must be a vector of at least 2 elements for Philox, got shape {list(counter.shape)}")
    dtype = ctx.attrs["dtype"].numpy
    n = int(np.prod(dims, dtype=np.int64))
    per_group = 2 if dtype == np.float64 else 4
    words = philox_words(xp, int(key[0]), (int(counter[0]), int(counter[1])), -(-n // per_group))
    return uniform_from_words(xp, words, dtype, n).reshape(tuple(int(d) for d in dims))


not_differentiable("StatelessRandomUniformV2")
