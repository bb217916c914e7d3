"""Cases for StatelessRandomUniformV2 (bit-exact Philox4x32-10), StatelessRandomUniformIntV2 and
StatelessRandomUniformFullIntV2, StatelessRandomNormalV2,
StatelessRandomGetKeyCounter/GetAlg, StatelessTruncatedNormalV2, StatelessMultinomial and Multinomial.

The Philox words below are the published known-answer vectors of Random123 (the reference
implementation TF's philox_random.h follows); the expected floats are derived from them by TF's
mantissa rule, written out here independently of the kernel."""

import numpy as np

from specflow.graph import dtypes
from specflow.ops.eval import evaluate_op
from tests.ops.harness import Case

U64 = np.uint64
ALL_ONES = U64(0xFFFFFFFFFFFFFFFF)
KAT_ZERO = [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]  # counter 0, key 0
KAT_ONES = [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]  # every bit of counter and key set


TF_KEY_12345_F32 = np.array([float.fromhex(h) for h in (
    "0x1.f967ap-1", "0x1.e18e8p-5", "0x1.ca1ep-8", "0x1.25c7p-2", "0x1.e7bc7p-3", "0x1.93adbp-1")], np.float32)
TF_KEY_12345_F64 = np.array([float.fromhex(h) for h in (
    "0x1.cb3d0870f0c74p-1", "0x1.ca1f354971c00p-5", "0x1.cf78ef4c9d6d8p-1", "0x1.468b831e2f3a8p-1",
    "0x1.cbb9452c95bd8p-3", "0x1.52ba7ed0822c2p-1")], np.float64)


def _f32(words):
    return np.array([(w & 0x7FFFFF) / 2**23 for w in words], np.float32)


def _f64(words):
    return np.array([(((words[i] & 0xFFFFF) << 32) | words[i + 1]) / 2**52 for i in (0, 2)], np.float64)


def _f16(words):
    return np.array([(w & 0x3FF) / 2**10 for w in words], np.float16)


def _uniform(shape, key, counter, dtype="float32", alg=1):
    ins = [np.array(shape, np.int32), np.array([key], U64), np.array(counter, U64), np.int32(alg)]
    return ins, {"dtype": dtype}


def _case(shape, key, counter, ref, dtype="float32", alg=1, id=""):
    ins, attrs = _uniform(shape, key, counter, dtype, alg)
    return Case("StatelessRandomUniformV2", ins, attrs=attrs, ref=lambda *a: ref, const_inputs=[0], atol=0, rtol=0,
                id=id)


def _check_stream(outs, ins):
    """10k draws: in [0, 1), moments of U(0, 1); group 1 after a low-half wrap equals group 0
    of the carried counter; a fresh evaluation gives the same bits."""
    x = np.asarray(outs[0])
    assert x.shape == (100, 100) and x.dtype == np.float32
    assert x.min() >= 0 and x.max() < 1 and abs(x.mean() - 0.5) < 0.01 and abs(x.std() - 0.2887) < 0.01
    again = evaluate_op("StatelessRandomUniformV2", ins, dtype="float32")[0]
    np.testing.assert_array_equal(again, x)
    wrap, _ = _uniform([8], 5, [ALL_ONES, U64(7)])
    carried, _ = _uniform([4], 5, [U64(0), U64(8)])
    a = evaluate_op("StatelessRandomUniformV2", wrap)[0]
    b = evaluate_op("StatelessRandomUniformV2", carried)[0]
    np.testing.assert_array_equal(a[4:], b)


def _check_multinomial(outs, ins):
    x = np.asarray(outs[0])
    assert x.shape == (3, 4000) and x.dtype == np.int64
    assert (x[0] == 2).all()  # one finite logit: always that class
    assert set(np.unique(x[1])) <= {0, 3}  # -inf logits are never drawn
    freq = np.bincount(x[2], minlength=4) / 4000
    np.testing.assert_allclose(freq, [0.1, 0.2, 0.3, 0.4], atol=0.03)
    again = evaluate_op("Multinomial", ins, seed=3, seed2=4)[0]
    np.testing.assert_array_equal(again, x)


_logits = np.log(np.array([[1, 1, 1, 1], [0.5, 1, 1, 0.5], [0.1, 0.2, 0.3, 0.4]], np.float64))
_logits[0, [0, 1, 3]] = -np.inf
_logits[1, [1, 2]] = -np.inf
_KEY59, _COUNTER59 = np.array([2309766540399829419], U64), np.array([0, 5831162995244409410], U64)


def _check_truncated(outs, ins):
    """40k draws: all within (-2, 2), with the moments of a normal truncated there (sd 0.8796)."""
    x = np.asarray(outs[0])
    assert x.shape == (200, 200) and x.dtype == np.float32
    assert np.abs(x).max() < 2 and abs(x.mean()) < 0.02 and abs(x.std() - 0.8796) < 0.01
    # The CPU's stream, from any device (a GPU's log and sin round the last bit differently:
    # 3.6e-7 apart at most on an H100).
    np.testing.assert_allclose(evaluate_op("StatelessTruncatedNormalV2", ins)[0], x, rtol=1e-6, atol=1e-6)


def _check_stateless_multinomial(outs, ins):
    x = np.asarray(outs[0])
    assert x.shape == (3, 4000) and x.dtype == np.int64
    assert (x[0] == 2).all() and set(np.unique(x[1])) <= {0, 3}
    np.testing.assert_allclose(np.bincount(x[2], minlength=4) / 4000, [0.1, 0.2, 0.3, 0.4], atol=0.03)
    np.testing.assert_array_equal(evaluate_op("StatelessMultinomial", ins)[0], x)


CASES = [
    _case([4], 0, [0, 0], _f32(KAT_ZERO)),
    _case([2, 2], ALL_ONES, [ALL_ONES, ALL_ONES], _f32(KAT_ONES).reshape(2, 2), id="StatelessRandomUniformV2-ones"),
    _case([3], 0, [0, 0], _f32(KAT_ZERO)[:3], alg=3, id="StatelessRandomUniformV2-auto-partial-group"),
    _case([2], 0, [0, 0], _f64(KAT_ZERO), dtype="float64", id="StatelessRandomUniformV2-float64"),
    _case([4], ALL_ONES, [ALL_ONES, ALL_ONES], _f16(KAT_ONES), dtype="float16", id="StatelessRandomUniformV2-float16"),
    # Recorded from TensorFlow 2.21 (tf.raw_ops.StatelessRandomUniformV2, CPU), bit for bit.
    _case([2, 3], 12345, [7, 0], TF_KEY_12345_F32.reshape(2, 3), id="StatelessRandomUniformV2-tf-float32"),
    _case([6], 12345, [7, 0], TF_KEY_12345_F64, dtype="float64", id="StatelessRandomUniformV2-tf-float64"),
    Case("StatelessRandomUniformV2", _uniform([100, 100], 12345, [9, 1])[0], check=_check_stream, const_inputs=[0],
         id="StatelessRandomUniformV2-stream"),
    # Integers: minval + word % (maxval - minval); 64-bit types join two words, low first.
    Case("StatelessRandomUniformIntV2", _uniform([4], 0, [0, 0])[0] + [np.int32(-3), np.int32(7)], attrs={"dtype": "int32"},
         const_inputs=[0], ref=lambda *a: np.array([w % 10 - 3 for w in KAT_ZERO], np.int32)),
    Case("StatelessRandomUniformIntV2", _uniform([2], 0, [0, 0])[0] + [np.int64(-(2 ** 40)), np.int64(5)],
         attrs={"dtype": "int64"}, const_inputs=[0], id="StatelessRandomUniformIntV2-int64",
         ref=lambda *a: np.array([((KAT_ZERO[i] | KAT_ZERO[i + 1] << 32) % (2 ** 40 + 5)) - 2 ** 40 for i in (0, 2)], np.int64)),
    # The whole int32 range: the offset wraps past 2^31 back to negative values.
    Case("StatelessRandomUniformIntV2", _uniform([3], ALL_ONES, [ALL_ONES, ALL_ONES])[0] + [np.int32(-(2 ** 31)), np.int32(2 ** 31 - 1)],
         attrs={"dtype": "int32"}, const_inputs=[0], id="StatelessRandomUniformIntV2-full-range",
         ref=lambda *a: np.array([(w % (2 ** 32 - 1)) - 2 ** 31 for w in KAT_ONES[:3]], np.int64).astype(np.int32)),
    Case("StatelessRandomUniformFullIntV2", _uniform([4], 0, [0, 0])[0], attrs={"dtype": "int32"}, const_inputs=[0],
         ref=lambda *a: np.array(KAT_ZERO, np.uint32).view(np.int32)),
    Case("StatelessRandomUniformFullIntV2", _uniform([2], ALL_ONES, [ALL_ONES, ALL_ONES])[0], const_inputs=[0],
         id="StatelessRandomUniformFullIntV2-uint64",
         ref=lambda *a: np.array([KAT_ONES[0] | KAT_ONES[1] << 32, KAT_ONES[2] | KAT_ONES[3] << 32], np.uint64)),
    Case("Multinomial", [_logits, np.int32(4000)], attrs={"seed": 3, "seed2": 4}, check=_check_multinomial,
         const_inputs=[1]),
    # Recorded from TensorFlow 2.21: the seed [5, 9] as tf.random.stateless_* turns it into a key
    # and counter, and Box-Muller normals from them (float32: sin/log may differ by an ulp).
    Case("StatelessRandomGetKeyCounter", [np.array([5, 9], np.int64)], atol=0, rtol=0,
         ref=lambda s: [np.array([2309766540399829419], U64), np.array([0, 5831162995244409410], U64)]),
    Case("StatelessRandomGetAlg", [], ref=lambda: np.int32(1)),
    Case("StatelessRandomNormalV2", [np.array([5], np.int32), np.array([2309766540399829419], U64),
                                     np.array([0, 5831162995244409410], U64), np.int32(1)],
         attrs={"dtype": "float64"}, const_inputs=[0], atol=0, rtol=0,
         ref=lambda *a: np.array([0.5876982787041761, -0.1184694047620983, -0.7091370884137689, 0.7218571539552823,
                                  -1.6245970018592226])),
    Case("StatelessRandomNormalV2", [np.array([2, 3], np.int32), np.array([2309766540399829419], U64),
                                     np.array([0, 5831162995244409410], U64), np.int32(1)],
         const_inputs=[0], rtol=1e-6, atol=1e-6, id="StatelessRandomNormalV2-float32",
         ref=lambda *a: np.array([[0.2132473886013031, -0.7651700973510742, -1.0377172231674194],
                                  [-1.6080163717269897, 0.5758202075958252, -0.6180840134620667]], np.float32)),
    # Recorded from TensorFlow 2.21 (tf.raw_ops, CPU): the key and counter of seed [5, 9]. Group g of
    # a truncated normal starts at counter + 256 g words per value (float64: the second group's
    # values are not the normal stream's third and fourth).
    Case("StatelessTruncatedNormalV2", [np.array([5], np.int32), _KEY59, _COUNTER59, np.int32(1)],
         attrs={"dtype": "float64"}, const_inputs=[0], atol=0, rtol=0,
         ref=lambda *a: np.array([0.5876982787041761, -0.1184694047620983, -0.5791094242818403, -0.5133580483161647,
                                  0.04795841394857466])),
    Case("StatelessTruncatedNormalV2", [np.array([2, 3], np.int32), _KEY59, _COUNTER59, np.int32(1)],
         const_inputs=[0], rtol=1e-6, atol=1e-6, id="StatelessTruncatedNormalV2-float32",
         ref=lambda *a: np.array([[0.2132473886013031, -0.7651700973510742, -1.0377172231674194],
                                  [-1.6080163717269897, 0.10526004433631897, 0.3191651403903961]], np.float32)),
    # bfloat16 (TF 2.21's numbers, found by tf_fuzz_parity.py --family 4): the uniform from the low
    # 7 bits of each word, the normals as float32's rounded; and an empty truncated normal
    *(Case(op, [np.array([6], np.int32), _KEY59, _COUNTER59, np.int32(1)], attrs={"dtype": "bfloat16"}, const_inputs=[0],
           atol=0, rtol=0, id=f"{op}-bfloat16", ref=lambda *a, w=want: np.array(w, np.float32).astype(dtypes.bfloat16.numpy))
      for op, want in (("StatelessRandomUniformV2", [0.5, 0.0625, 0.34375, 0.5703125, 0.5390625, 0.078125]),
                       ("StatelessRandomNormalV2", [0.212890625, -0.765625, -1.0390625, -1.609375, 0.57421875, -0.6171875]),
                       ("StatelessTruncatedNormalV2", [0.212890625, -0.765625, -1.0390625, -1.609375, 0.10546875, 0.318359375]))),
    Case("StatelessTruncatedNormalV2", [np.array([0, 3], np.int32), _KEY59, _COUNTER59, np.int32(1)], const_inputs=[0],
         ref=lambda *a: np.zeros((0, 3), np.float32), id="StatelessTruncatedNormalV2-empty"),
    Case("StatelessTruncatedNormalV2", [np.array([200, 200], np.int64), np.array([77], U64), np.array([5, 6], U64),
                                        np.int32(3)], attrs={"Tshape": "int64"}, const_inputs=[0],
         check=_check_truncated, id="StatelessTruncatedNormalV2-stream"),
    Case("StatelessMultinomial", [np.array([[0.5, -1, 2, 0], [1, 1, 1, -np.inf]], np.float32), np.int32(6),
                                  np.array([5, 9], np.int64)], const_inputs=[1], atol=0, rtol=0,
         ref=lambda *a: np.array([[2, 2, 2, 2, 2, 2], [0, 2, 2, 2, 0, 1]], np.int64)),
    Case("StatelessMultinomial", [_logits, np.int32(4000), np.array([3, 4], np.int32)], attrs={"Tseed": "int32"},
         const_inputs=[1], check=_check_stateless_multinomial, id="StatelessMultinomial-stream"),
]
