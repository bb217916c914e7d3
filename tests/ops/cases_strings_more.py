"""tf.strings' ops (specflow/ops/string_more_ops.py). The expected values are literals TensorFlow
2.21 gave on the same inputs (its farmhash, SipHash, printf and RE2 behaviour included)."""

from __future__ import annotations

import numpy as np

from tests.ops.harness import Case


def S(*xs) -> np.ndarray:
    out = np.empty(len(xs), dtype=object)
    out[:] = [x if isinstance(x, bytes) else x.encode() for x in xs]
    return out


def want(*xs):
    return lambda *_: S(*xs)


def values(v, dtype=None):
    return lambda *_: np.asarray(v, dtype=dtype)


WORDS = S("héllo", "", "ÀB straße")

CASES = [
    Case("StringLength", [S("héllo", "", "\xff")], values([6, 0, 2], np.int32), id="StringLength-bytes"),
    Case("StringLength", [S("héllo", "", b"\xff\xfe")], values([5, 0, 2], np.int32), attrs={"unit": "UTF8_CHAR"},
         id="StringLength-utf8"),
    Case("StringLower", [S("HÉllO", "ÀB")], want(b"h\xc3\x89llo", b"\xc3\x80b"), id="StringLower-ascii"),
    Case("StringLower", [S("HÉllO", "ÀB", "İ")], want("héllo", "àb", "i\u0307"), attrs={"encoding": "utf-8"},
         id="StringLower-utf8"),
    Case("StringUpper", [S("héllo", "straße")], want("HéLLO", "STRAßE"), id="StringUpper-ascii"),
    Case("StringUpper", [S("héllo", "straße", "ǆ")], want("HÉLLO", "STRASSE", "Ǆ"), attrs={"encoding": "utf-8"},
         id="StringUpper-utf8"),
    Case("StringStrip", [S(" \t a b \n\v\f\r", "", "\xa0x")], want("a b", "", "\xa0x")),
    Case("AsString", [np.array([3.14159, -0.5, 1e20, np.nan, -np.nan, np.inf, 1e-7], np.float32)],
         want("3.141590", "-0.500000", "100000002004087734272.000000", "nan", "-nan", "inf", "0.000000"),
         id="AsString-float"),
    Case("AsString", [np.array([3.14159, 1e20, 1e-7, 123456789.0])], want("3.14159", "1e+20", "1e-07", "1.23457e+08"),
         attrs={"shortest": True}, id="AsString-shortest"),
    Case("AsString", [np.array([3.14159, 1e20])], want("3.142e+00", "1.000e+20"),
         attrs={"scientific": True, "precision": 3}, id="AsString-scientific"),
    Case("AsString", [np.array([3.14159, -2.0, np.nan], np.float32)], want("0000003.14", "-000002.00", "       nan"),
         attrs={"width": 10, "fill": "0", "precision": 2}, id="AsString-zero-fill"),
    Case("AsString", [np.array([5, -5], np.int64)], want("   +5", "   -5"), attrs={"width": 5, "fill": "+"},
         id="AsString-int-plus"),
    Case("AsString", [np.array([0, 100], np.uint8)], want("  0", "100"), attrs={"width": 3, "fill": " "},
         id="AsString-unsigned"),
    Case("AsString", [np.array([True, False])], want("true", "false"), attrs={"width": 7}, id="AsString-bool"),
    Case("AsString", [np.array([1 + 2j], np.complex64)], want("(1.000000,2.000000)"), id="AsString-complex"),
    Case("AsString", [S("ab", "héllo")], want("       a", "       h"), attrs={"width": 8, "precision": 1},
         id="AsString-string"),
    Case("StringToNumber", [S("1", " 2 ", "+4", "0x1A", "1e3", ".5", "-Inf", "infinity", "3.4e39")],
         values([1, 2, 4, 26, 1000, 0.5, -np.inf, np.inf, np.inf], np.float32), id="StringToNumber-float32"),
    Case("StringToNumber", [S("3.4e39", "-12")], values([3.4e39, -12.0]), attrs={"out_type": "float64"},
         id="StringToNumber-float64"),
    Case("StringToNumber", [S("-2147483648", "\t7\n", "+4")], values([-2147483648, 7, 4], np.int32),
         attrs={"out_type": "int32"}, id="StringToNumber-int32"),
    Case("StringToNumber", [S("18446744073709551615")], values([2**64 - 1], np.uint64), attrs={"out_type": "uint64"},
         id="StringToNumber-uint64"),
    Case("Substr", [S("hello", "héllo"), np.int32(1), np.int32(2)], want("el", b"\xc3\xa9"), id="Substr-bytes"),
    Case("Substr", [S("hello", "héllo"), np.int32(-5), np.int32(3)], want("hel", "hél"), attrs={"unit": "UTF8_CHAR"},
         id="Substr-utf8"),
    Case("Substr", [S("hello"), np.int64(3), np.int64(-2)], want("lo"), id="Substr-negative-len"),
    Case("Substr", [np.array([[b"ab", b"cd"], [b"ef", b"gh"]], dtype=object), np.array([0, 1], np.int32),
                    np.array([1, 1], np.int32)],
         lambda *_: np.array([[b"a", b"d"], [b"e", b"h"]], dtype=object), id="Substr-broadcast"),
    Case("Substr", [S("abc", "def"), np.array([[0], [1]]), np.array([[1], [2]])],
         lambda *_: np.array([[b"a", b"d"], [b"bc", b"ef"]], dtype=object), id="Substr-broadcast-up"),
    Case("ReduceJoin", [np.array([[[b"a", b"b"], [b"c", b"d"]], [[b"e", b"f"], [b"g", b"h"]]], dtype=object),
                        np.array([2, 0], np.int32)], want("abef", "cdgh"), const_inputs=[1], id="ReduceJoin-order"),
    Case("ReduceJoin", [np.array([[[b"a", b"b"], [b"c", b"d"]], [[b"e", b"f"], [b"g", b"h"]]], dtype=object),
                        np.array([0, 2], np.int32)], want("aebf", "cgdh"), const_inputs=[1], id="ReduceJoin-order2"),
    Case("ReduceJoin", [np.array([[b"a", b"b", b"c"], [b"d", b"e", b"f"]], dtype=object), np.array([-1], np.int32)],
         lambda *_: np.array([[b"a-b-c"], [b"d-e-f"]], dtype=object), attrs={"keep_dims": True, "separator": "-"},
         const_inputs=[1], id="ReduceJoin-keep-dims"),
    Case("ReduceJoin", [np.empty((2, 0), dtype=object), np.array([1], np.int32)], want("", ""), const_inputs=[1],
         id="ReduceJoin-empty"),
    Case("StaticRegexReplace", [S("hello", "abaa", "héllo\n", "a1b22")], want("-h-e-l-l-o-", "-b--", "-h-é-l-l-o-\n-",
                                                                             "-1-b-2-2-"),
         attrs={"pattern": "a|", "rewrite": "-"}, id="StaticRegexReplace-empty-matches"),
    Case("StaticRegexReplace", [S("hello", "héllo\n")], want("hell0", "héllo\n"), attrs={"pattern": "o$", "rewrite": "0"},
         id="StaticRegexReplace-dollar"),
    Case("StaticRegexReplace", [S("abaa", "a1b22")], want("aabaaaa", "aa1b22"), attrs={"pattern": "(a)", "rewrite": r"\0\1"},
         id="StaticRegexReplace-groups"),
    Case("StaticRegexReplace", [S("abaa")], want("abaa"), attrs={"pattern": "(a)", "rewrite": r"\3"},
         id="StaticRegexReplace-missing-group"),
    Case("StaticRegexReplace", [S("abaa")], want("bbaa"), attrs={"pattern": "a", "rewrite": "b", "replace_global": False},
         id="StaticRegexReplace-first"),
    Case("RegexReplace", [S("The Quick, fox!", "a1b22"), np.array(b"[[:punct:]]|\\d", dtype=object),
                          np.array(b"_", dtype=object)], want("The Quick_ fox_", "a_b__"), id="RegexReplace-posix"),
    Case("RegexFullMatch", [S("hello", "ab", "héllo", "hello\n", ""), np.array(b"h.llo", dtype=object)],
         values([True, False, True, False, False]), id="RegexFullMatch"),
    Case("StringSplitV2", [S("  a b  c ", "x,,y", "", "abab"), np.array(b"", dtype=object)],
         lambda *_: (np.array([[0, 0], [0, 1], [0, 2], [1, 0], [3, 0]], np.int64), S("a", "b", "c", "x,,y", "abab"),
                     np.array([4, 3], np.int64)), exact_shape=False, id="StringSplitV2-whitespace"),
    Case("StringSplitV2", [S("a  b", " a"), np.array(b"", dtype=object)],
         lambda *_: (np.array([[0, 0], [0, 1], [1, 0], [1, 1]], np.int64), S("a", "b", "a", ""),
                     np.array([2, 2], np.int64)), attrs={"maxsplit": 1}, exact_shape=False,
         id="StringSplitV2-maxsplit"),
    Case("StringSplitV2", [S("x,,y", ""), np.array(b",", dtype=object)],
         lambda *_: (np.array([[0, 0], [0, 1], [0, 2], [1, 0]], np.int64), S("x", "", "y", ""), np.array([2, 3], np.int64)),
         exact_shape=False, id="StringSplitV2-sep"),
    Case("StringNGrams", [S("a", "b", "c", "d"), np.array([0, 3, 3, 4], np.int64)],
         lambda *_: (S("a b", "b c"), np.array([0, 2, 2, 2], np.int64)),
         attrs={"separator": " ", "ngram_widths": [2], "left_pad": "", "right_pad": "", "pad_width": 0,
                "preserve_short_sequences": False}, exact_shape=False, id="StringNGrams"),
    Case("StringNGrams", [S("a", "b", "c", "d"), np.array([0, 3, 3, 4], np.int64)],
         lambda *_: (S("< a b", "a b c", "b c >", "< d >"), np.array([0, 3, 3, 4], np.int64)),
         attrs={"separator": " ", "ngram_widths": [3], "left_pad": "<", "right_pad": ">", "pad_width": 1,
                "preserve_short_sequences": True}, exact_shape=False, id="StringNGrams-pad"),
    Case("StringToHashBucketFast", [S("a", "hello world", "", "x" * 70)], values([5, 0, 6, 2], np.int64),
         attrs={"num_buckets": 7}),
    Case("StringToHashBucketStrong", [S("a", "hello world", "", "x" * 70)], values([2, 8, 2, 6], np.int64),
         attrs={"num_buckets": 11, "key": [123, 456]}),
    Case("Fingerprint", [S("ab", "c"), np.array(b"farmhash64", dtype=object)],
         values([[30, 165, 173, 66, 82, 110, 141, 170], [40, 123, 203, 224, 169, 24, 161, 158]], np.uint8),
         id="Fingerprint-strings"),
    Case("Fingerprint", [np.array([["ab", "c"], ["", "dd"]], dtype=object), np.array(b"farmhash64", dtype=object)],
         values([[65, 83, 39, 149, 164, 245, 170, 22], [24, 143, 123, 80, 250, 203, 244, 251]], np.uint8),
         id="Fingerprint-string-rows"),
    Case("Fingerprint", [np.array([[1, 2], [3, 4]], np.int32), np.array(b"farmhash64", dtype=object)],
         values([[76, 18, 253, 133, 168, 204, 240, 10], [254, 162, 60, 240, 103, 244, 53, 255]], np.uint8),
         id="Fingerprint-ints"),
    Case("RaggedBincount", [np.array([0, 2, 2, 5], np.int64), np.array([1, 1, 3, 0, 9], np.int64), np.int64(4),
                            np.array([0.5, 1.0, 2.0, 3.0, 4.0], np.float32)],
         values([[0, 1.5, 0, 0], [0, 0, 0, 0], [3, 0, 0, 2]], np.float32), const_inputs=[2], id="RaggedBincount"),
    Case("RaggedBincount", [np.array([0, 2, 2, 5], np.int64), np.array([1, 1, 3, 0, 9], np.int64), np.int64(4),
                            np.array([], np.int64)],
         values([[0, 1, 0, 0], [0, 0, 0, 0], [1, 0, 0, 1]], np.int64), attrs={"binary_output": True},
         const_inputs=[2], id="RaggedBincount-binary"),
]
