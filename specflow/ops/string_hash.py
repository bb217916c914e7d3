"""The string hashes TensorFlow's ops use, in pure Python (exact, 64-bit wrap-around arithmetic).

``fingerprint64``: farmhash's ``Fingerprint64`` (``farmhashna::Hash64``), what
StringToHashBucketFast, StringToHashBucket and Fingerprint(method="farmhash64") compute.
``siphash24``: SipHash-2-4 with a 128-bit key (highwayhash's ``SipHashState``), what
StringToHashBucketStrong computes (TF's ``StrongKeyedHash``).
"""

from __future__ import annotations

import struct

_M = (1 << 64) - 1
K0 = 0xC3A5C85C97CB3127
K1 = 0xB492B66FBE98F273
K2 = 0x9AE16A3B2F90404F
_KMUL = 0x9DDFEA08EB382D69


def _f64(s: bytes, i: int) -> int:
    return struct.unpack_from("<Q", s, i)[0]


def _f32(s: bytes, i: int) -> int:
    return struct.unpack_from("<I", s, i)[0]


def _rot(v: int, shift: int) -> int:
    return v if shift == 0 else ((v >> shift) | (v << (64 - shift))) & _M


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def _hash16(u: int, v: int, mul: int = _KMUL) -> int:
    a = ((u ^ v) * mul) & _M
    a ^= a >> 47
    b = ((v ^ a) * mul) & _M
    b ^= b >> 47
    return (b * mul) & _M


def _len0to16(s: bytes) -> int:
    n = len(s)
    if n >= 8:
        mul = (K2 + n * 2) & _M
        a = (_f64(s, 0) + K2) & _M
        b = _f64(s, n - 8)
        c = (_rot(b, 37) * mul + a) & _M
        d = ((_rot(a, 25) + b) * mul) & _M
        return _hash16(c, d, mul)
    if n >= 4:
        mul = (K2 + n * 2) & _M
        a = _f32(s, 0)
        return _hash16((n + (a << 3)) & _M, _f32(s, n - 4), mul)
    if n > 0:
        a, b, c = s[0], s[n >> 1], s[n - 1]
        y = (a + (b << 8)) & 0xFFFFFFFF
        z = (n + (c << 2)) & 0xFFFFFFFF
        return (_shift_mix(((y * K2) ^ (z * K0)) & _M) * K2) & _M
    return K2


def _len17to32(s: bytes) -> int:
    n = len(s)
    mul = (K2 + n * 2) & _M
    a = (_f64(s, 0) * K1) & _M
    b = _f64(s, 8)
    c = (_f64(s, n - 8) * mul) & _M
    d = (_f64(s, n - 16) * K2) & _M
    return _hash16((_rot((a + b) & _M, 43) + _rot(c, 30) + d) & _M, (a + _rot((b + K2) & _M, 18) + c) & _M, mul)


def _len33to64(s: bytes) -> int:
    n = len(s)
    mul = (K2 + n * 2) & _M
    a = (_f64(s, 0) * K2) & _M
    b = _f64(s, 8)
    c = (_f64(s, n - 8) * mul) & _M
    d = (_f64(s, n - 16) * K2) & _M
    y = (_rot((a + b) & _M, 43) + _rot(c, 30) + d) & _M
    z = _hash16(y, (a + _rot((b + K2) & _M, 18) + c) & _M, mul)
    e = (_f64(s, 16) * mul) & _M
    f = _f64(s, 24)
    g = ((y + _f64(s, n - 32)) * mul) & _M
    h = ((z + _f64(s, n - 24)) * mul) & _M
    return _hash16((_rot((e + f) & _M, 43) + _rot(g, 30) + h) & _M, (e + _rot((f + a) & _M, 18) + g) & _M, mul)


def _weak32(s: bytes, i: int, a: int, b: int) -> tuple[int, int]:
    w, x, y, z = _f64(s, i), _f64(s, i + 8), _f64(s, i + 16), _f64(s, i + 24)
    a = (a + w) & _M
    b = _rot((b + a + z) & _M, 21)
    c = a
    a = (a + x + y) & _M
    b = (b + _rot(a, 44)) & _M
    return (a + z) & _M, (b + c) & _M


def fingerprint64(s: bytes) -> int:
    """farmhash::Fingerprint64(s), an unsigned 64-bit int."""
    n = len(s)
    if n <= 16:
        return _len0to16(s)
    if n <= 32:
        return _len17to32(s)
    if n <= 64:
        return _len33to64(s)
    seed = 81
    x = seed
    y = (seed * K1 + 113) & _M
    z = (_shift_mix((y * K2 + 113) & _M) * K2) & _M
    v0 = v1 = w0 = w1 = 0
    x = (x * K2 + _f64(s, 0)) & _M
    end = ((n - 1) // 64) * 64
    last64 = end + ((n - 1) & 63) - 63
    p = 0
    while True:
        x = (_rot((x + y + v0 + _f64(s, p + 8)) & _M, 37) * K1) & _M
        y = (_rot((y + v1 + _f64(s, p + 48)) & _M, 42) * K1) & _M
        x ^= w1
        y = (y + v0 + _f64(s, p + 40)) & _M
        z = (_rot((z + w0) & _M, 33) * K1) & _M
        v0, v1 = _weak32(s, p, (v1 * K1) & _M, (x + w0) & _M)
        w0, w1 = _weak32(s, p + 32, (z + w1) & _M, (y + _f64(s, p + 16)) & _M)
        z, x = x, z
        p += 64
        if p == end:
            break
    mul = (K1 + ((z & 0xFF) << 1)) & _M
    p = last64
    w0 = (w0 + ((n - 1) & 63)) & _M
    v0 = (v0 + w0) & _M
    w0 = (w0 + v0) & _M
    x = (_rot((x + y + v0 + _f64(s, p + 8)) & _M, 37) * mul) & _M
    y = (_rot((y + v1 + _f64(s, p + 48)) & _M, 42) * mul) & _M
    x ^= (w1 * 9) & _M
    y = (y + v0 * 9 + _f64(s, p + 40)) & _M
    z = (_rot((z + w0) & _M, 33) * mul) & _M
    v0, v1 = _weak32(s, p, (v1 * mul) & _M, (x + w0) & _M)
    w0, w1 = _weak32(s, p + 32, (z + w1) & _M, (y + _f64(s, p + 16)) & _M)
    z, x = x, z
    return _hash16((_hash16(v0, w0, mul) + _shift_mix(y) * K0 + z) & _M, (_hash16(v1, w1, mul) + x) & _M, mul)


def _sipround(v0: int, v1: int, v2: int, v3: int) -> tuple[int, int, int, int]:
    v0 = (v0 + v1) & _M
    v1 = _rotl(v1, 13) ^ v0
    v0 = _rotl(v0, 32)
    v2 = (v2 + v3) & _M
    v3 = _rotl(v3, 16) ^ v2
    v0 = (v0 + v3) & _M
    v3 = _rotl(v3, 21) ^ v0
    v2 = (v2 + v1) & _M
    v1 = _rotl(v1, 17) ^ v2
    v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


def _rotl(v: int, s: int) -> int:
    return ((v << s) | (v >> (64 - s))) & _M


def siphash24(key: tuple[int, int], s: bytes) -> int:
    """SipHash-2-4 of ``s`` under the 128-bit key (k0, k1), an unsigned 64-bit int."""
    k0, k1 = key[0] & _M, key[1] & _M
    v0, v1 = k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D
    v2, v3 = k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573
    n = len(s)
    full = n - n % 8
    for i in range(0, full, 8):
        m = _f64(s, i)
        v3 ^= m
        v0, v1, v2, v3 = _sipround(*_sipround(v0, v1, v2, v3))
        v0 ^= m
    last = int.from_bytes(s[full:], "little") | ((n & 0xFF) << 56)
    v3 ^= last
    v0, v1, v2, v3 = _sipround(*_sipround(v0, v1, v2, v3))
    v0 ^= last
    v2 ^= 0xFF
    for _ in range(4):
        v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
    return v0 ^ v1 ^ v2 ^ v3
