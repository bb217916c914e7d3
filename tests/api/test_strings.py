"""sf.strings (api/strings.py) against TensorFlow 2.21's tf.strings, values written out (18
functions and options; all equal TF's by hand, bytes for bytes)."""

from __future__ import annotations

import numpy as np

import specflow as sf

X = ["  Hello World ", "ünïcode  ", "abc123", ""]
S = sf.strings


def _v(t):
    return np.asarray(t.numpy()).tolist()


def test_string_functions_match_tensorflow():
    assert _v(S.length(X)) == [14, 11, 6, 0] and _v(S.length(X, unit="UTF8_CHAR")) == [14, 9, 6, 0]
    assert _v(S.lower(X)) == [b"  hello world ", "ünïcode  ".encode(), b"abc123", b""]
    assert _v(S.upper(X))[0] == b"  HELLO WORLD " and _v(S.strip(X))[:2] == [b"Hello World", "ünïcode".encode()]
    assert _v(S.join([X, X], separator="|"))[2:] == [b"abc123|abc123", b"|"]
    assert _v(S.reduce_join([["a", "b"], ["c", "d"]], axis=1, separator="-")) == [b"a-b", b"c-d"]
    assert _v(S.reduce_join([["a", "b"], ["c", "d"]])) == b"abcd"  # every axis, last first: row-major
    assert _v(S.regex_replace(X, r"[aeiou]", "_"))[:3] == [b"  H_ll_ W_rld ", "ünïc_d_  ".encode(), b"_bc123"]
    assert _v(S.regex_replace(X, r"(\w+)", r"<\1>", replace_global=False))[:3] == [
        b"  <Hello> World ", "ü<n>ïcode  ".encode(), b"<abc123>"]
    assert _v(S.regex_full_match(X, r".*\d+")) == [False, False, True, False]
    assert _v(S.substr(["hello", "world"], 1, 3)) == [b"ell", b"orl"]
    assert _v(S.to_number(["1.5", "-2", "3e2"])) == [1.5, -2.0, 300.0]
    assert _v(S.to_number(["7", "-3"], out_type=sf.int32)) == [7, -3]
    assert _v(S.as_string([1.5, 2.25], precision=3)) == [b"1.500", b"2.250"]
    assert _v(S.as_string([7, -3], width=4, fill="0")) == [b"0007", b"-003"]
    assert _v(S.to_hash_bucket_fast(X, 100)) == [15, 31, 78, 63]
    assert _v(S.to_hash_bucket_strong(X, 100, [1, 2])) == [60, 20, 70, 35]


def test_string_functions_trace():
    f = sf.function(lambda x: (S.upper(S.strip(x)), S.length(x), S.regex_replace(x, "o", "0")))
    up, n, re = f(sf.constant([b" foo ", b"bar"]))
    assert _v(up) == [b"FOO", b"BAR"] and _v(n) == [5, 3] and _v(re) == [b" f00 ", b"bar"]
