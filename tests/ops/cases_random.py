"""Cases for the random ops: statistical checks on 10k samples instead of a numpy reference.

Seeded cases also re-run the op in a fresh context and expect the identical stream.
"""

import numpy as np

from specflow.ops.eval import evaluate_op
from tests.ops.harness import Case

_SHAPE = np.array([100, 100], np.int32)  # 10k samples
_SHAPE64 = np.array([10, 1000], np.int64)


def _random_case(op, inputs, attrs, check, id, const_inputs=(0,)) -> Case:
    """A case whose check runs ``check(output, inputs)``; when seeded, also the determinism check."""

    def full_check(outs, ins):
        out = np.asarray(outs[0])
        check(out, ins)
        if attrs.get("seed") or attrs.get("seed2"):
            again = evaluate_op(op, ins, **attrs)[0]  # a fresh context: same seeds, same stream
            np.testing.assert_array_equal(np.asarray(again), out)

    return Case(op, inputs, attrs=attrs, check=full_check, const_inputs=const_inputs, id=id)


def _stats(dtype, shape, low, high, mean, std, tol_mean, tol_std):
    """Check dtype, shape, bounds (low <= x < high, or <= high for normals) and moments."""

    def check(out, ins):
        assert out.dtype == np.dtype(dtype), out.dtype
        assert out.shape == tuple(shape), out.shape
        assert out.min() >= low and out.max() <= high, (out.min(), out.max())
        x = out.astype(np.float64)
        assert abs(x.mean() - mean) < tol_mean, x.mean()
        assert abs(x.std() - std) < tol_std, x.std()

    return check


def _uniform_check(dtype, shape):
    inner = _stats(dtype, shape, 0.0, 1.0, 0.5, (1 / 12) ** 0.5, 0.02, 0.01)

    def check(out, ins):
        inner(out, ins)
        assert out.max() < 1.0, "uniform values must be < 1"

    return check


def _uniform_int_check(out, ins):
    lo, hi = int(ins[1]), int(ins[2])
    assert out.dtype == ins[1].dtype and out.shape == (100, 100)
    assert out.min() >= lo and out.max() < hi
    assert set(np.unique(out).tolist()) == set(range(lo, hi)), "every value in [minval, maxval) appears"
    assert abs(out.mean() - (lo + hi - 1) / 2) < 0.1


def _permutation_check(out, ins):
    value = ins[0]
    assert out.shape == value.shape and out.dtype == value.dtype
    # Rows move intact: sorting rows by their first column restores the input.
    order = np.argsort(out[:, 0] if out.ndim > 1 else out, kind="stable")
    np.testing.assert_array_equal(out[order], value)
    assert not np.array_equal(out, value), "a 1000-row shuffle left the order unchanged"


# Standard deviation of a standard normal truncated to [-2, 2].
_TRUNC_STD = 0.8796

CASES = [
    _random_case("RandomUniform", [_SHAPE], {"dtype": "float32", "seed": 7}, _uniform_check(np.float32, (100, 100)), "RandomUniform-f32-seeded"),
    _random_case("RandomUniform", [_SHAPE64], {"dtype": "float64"}, _uniform_check(np.float64, (10, 1000)), "RandomUniform-f64"),
    _random_case("RandomUniform", [_SHAPE], {"dtype": "float16", "seed2": 3}, _uniform_check(np.float16, (100, 100)), "RandomUniform-f16"),
    _random_case(
        "RandomStandardNormal", [_SHAPE], {"dtype": "float32", "seed": 1, "seed2": 2},
        _stats(np.float32, (100, 100), -np.inf, np.inf, 0.0, 1.0, 0.05, 0.03), "RandomStandardNormal-f32-seeded",
    ),
    _random_case(
        "RandomStandardNormal", [_SHAPE64], {"dtype": "float64"},
        _stats(np.float64, (10, 1000), -np.inf, np.inf, 0.0, 1.0, 0.05, 0.03), "RandomStandardNormal-f64",
    ),
    _random_case(
        "TruncatedNormal", [_SHAPE], {"dtype": "float32", "seed": 11},
        _stats(np.float32, (100, 100), -2.0, 2.0, 0.0, _TRUNC_STD, 0.05, 0.03), "TruncatedNormal-f32-seeded",
    ),
    _random_case(
        "TruncatedNormal", [_SHAPE64], {"dtype": "float64"},
        _stats(np.float64, (10, 1000), -2.0, 2.0, 0.0, _TRUNC_STD, 0.05, 0.03), "TruncatedNormal-f64",
    ),
    _random_case(
        "RandomUniformInt", [_SHAPE, np.int32(-3), np.int32(5)], {"seed": 5},
        _uniform_int_check, "RandomUniformInt-i32-seeded",
    ),
    _random_case(
        "RandomUniformInt", [_SHAPE, np.int64(0), np.int64(10)], {},
        _uniform_int_check, "RandomUniformInt-i64",
    ),
    _random_case(
        "RandomShuffle", [np.arange(1000, dtype=np.int64)], {"seed": 9}, _permutation_check,
        "RandomShuffle-1d-seeded", const_inputs=(),
    ),
    _random_case(
        "RandomShuffle", [np.arange(3000, dtype=np.float32).reshape(1000, 3)], {}, _permutation_check,
        "RandomShuffle-rows", const_inputs=(),
    ),
]


def _mask_check(threshold, dtype, out_dtype):
    """_RandomUniformMask: exactly Cast(RandomUniform >= threshold) from the same seeds' stream."""

    def check(out, ins):
        attrs = {"dtype": dtype, "seed": 7, "seed2": 1}
        u = np.asarray(evaluate_op("RandomUniform", ins, **attrs)[0])
        want = (u >= np.asarray(threshold, dtype)).astype(out_dtype)
        assert out.dtype == np.dtype(out_dtype) and out.shape == u.shape
        np.testing.assert_array_equal(out, want)

    return check


CASES += [
    _random_case("_RandomUniformMask", [np.array([37, 3], np.int32)],
                 {"dtype": dtype, "seed": 7, "seed2": 1, "threshold": t, "DstT": dst},
                 _mask_check(t, dtype, dst), f"_RandomUniformMask-{dtype}-{t}-{dst}")
    for dtype, t, dst in (("float32", 0.25, "float32"), ("float64", 0.5, "float64"), ("float32", 0.75, "float16"),
                          ("float16", 0.5, "float32"))
]  # fmt: skip
