"""Cases for reduction_ops: Sum, Mean, Max, Min, Prod, All, Any, ArgMax, ArgMin.

Axis inputs are const inputs, so the shape test sees their values as a lowered spec would.
"""

import numpy as np

from tests.ops.harness import Case, bools, f32, f64, i32, i64


def _ax(*axes):
    return np.array(axes, dtype=np.int32)


def _red(fn, keep=False, dtype=None):
    """Reference: ``fn`` over the given axes, cast back to the input dtype like TF."""

    def ref(x, axes):
        axes = tuple(sorted({int(a) % x.ndim for a in np.ravel(axes)}))  # TF allows duplicates
        out = fn(x, axis=axes, keepdims=keep)
        return np.asarray(out).astype(dtype or x.dtype)

    return ref


def _trunc_mean(x, axes):
    axes = tuple(int(a) for a in np.ravel(axes))
    s = x.sum(axis=axes, dtype=np.int64)
    n = int(np.prod([x.shape[a] for a in axes]))
    return (np.sign(s) * (np.abs(s) // n)).astype(x.dtype)


_I = np.array([[1, -2, 3], [-4, 5, -7]], dtype=np.int32)

_REDUCTIONS = [
    Case("Sum", [f32(2, 3, 4), _ax(1)], const_inputs=[1], ref=_red(np.sum), rtol=1e-5),
    Case(
        "Sum",
        [f32(2, 3, 4), _ax(0, -1)],
        attrs={"keep_dims": True},
        const_inputs=[1],
        ref=_red(np.sum, keep=True),
        rtol=1e-5,
        id="Sum-keep_dims-negative-axis",
    ),
    Case(
        "Sum",
        [i32(3, 4), np.array(-1, np.int64)],
        const_inputs=[1],
        ref=_red(np.sum),
        id="Sum-int-scalar-axis",
    ),
    Case(
        "Sum",
        [np.full((2, 3), 2**30, np.int32), _ax(0)],
        const_inputs=[1],
        ref=lambda x, a: np.full(3, -(2**31), np.int32),
        id="Sum-int32-wraps-in-T",
    ),
    Case("Sum", [f64(2, 3), _ax()], const_inputs=[1], ref=lambda x, a: x, id="Sum-no-axes"),
    Case("Mean", [f32(3, 4), _ax(0, 1)], const_inputs=[1], ref=_red(np.mean), rtol=1e-5),
    Case("Mean", [_I, _ax(1)], const_inputs=[1], ref=_trunc_mean, id="Mean-int-truncates"),
    Case("Mean", [np.zeros((0, 2), np.int64), _ax(0, -1)], attrs={"keep_dims": True}, const_inputs=[1],
         ref=lambda x, a: np.zeros((1, 1), np.int64), id="Mean-int-of-nothing-is-0"),
    Case(
        "Mean",
        [_I, _ax(0)],
        attrs={"keep_dims": True},
        const_inputs=[1],
        ref=lambda x, a: _trunc_mean(x, a)[None, :],
        id="Mean-int-keep_dims",
    ),
    # TF sums 8- to 32-bit integers in 64 bits: no wrap before the division; int64 wraps in T.
    Case("Mean", [np.array([200, 200, 200, 199], np.uint8), _ax(0)], const_inputs=[1], ref=lambda x, a: np.uint8(199),
         id="Mean-uint8-no-wrap"),
    Case("Mean", [np.array([[2**30 + 3, 2**30 + 3], [2**30 + 3, 2**30 + 2]], np.int32), _ax(0, 1)], const_inputs=[1],
         ref=lambda x, a: np.int32(2**30 + 2), id="Mean-int32-no-wrap"),
    Case("Mean", [np.array([[-100, -100], [-100, -99]], np.int8), _ax(1)], const_inputs=[1],
         ref=lambda x, a: np.array([-100, -99], np.int8), id="Mean-int8-negative-truncates"),
    Case("Mean", [np.array([2**62 + 3, 2**62 + 3], np.int64), _ax(0)], const_inputs=[1],
         ref=lambda x, a: np.int64(-(2**62) + 3), id="Mean-int64-wraps-in-T"),
    Case("Max", [f32(2, 5), _ax(-1)], const_inputs=[1], ref=_red(np.max)),
    Case(
        "Max",
        [np.zeros((2, 0), np.float32), _ax(1)],
        const_inputs=[1],
        ref=lambda x, a: np.full(2, -np.inf, np.float32),
        id="Max-empty-is-lowest",
    ),
    Case(
        "Min", [i64(3, 4), _ax(0)], attrs={"keep_dims": True}, const_inputs=[1], ref=_red(np.min, keep=True)
    ),
    Case("Prod", [f64(2, 3), _ax(1)], const_inputs=[1], ref=_red(np.prod)),
    Case("EuclideanNorm", [f64(2, 3, 4), _ax(0, 2)], const_inputs=[1],
         ref=_red(lambda x, axis, keepdims=False: np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims)))),
    Case("EuclideanNorm", [np.array([[-2.0, 3.0]], np.float32), np.zeros(0, np.int32)], const_inputs=[1],
         ref=lambda x, a: np.abs(x), id="EuclideanNorm-no-axes-is-abs"),
    Case("EuclideanNorm", [np.array(-2.5, np.float64), np.zeros(0, np.int32)], const_inputs=[1],
         ref=lambda x, a: np.abs(x), id="EuclideanNorm-scalar-is-abs"),
    Case("EuclideanNorm", [np.array([[3, 4], [1, 1]], np.int32), _ax(1)], const_inputs=[1],
         ref=lambda x, a: np.array([5, 1], np.int32), id="EuclideanNorm-int-floor"),
    Case("EuclideanNorm", [np.array([3 + 4j, 1j], np.complex64), _ax(0)], attrs={"keep_dims": True}, const_inputs=[1],
         ref=lambda x, a: np.array([np.sqrt(26)], np.complex64), id="EuclideanNorm-complex"),
    Case("Prod", [i32(2, 3, low=1, high=4), _ax(0, 1)], const_inputs=[1], ref=_red(np.prod), id="Prod-int"),
    Case("All", [bools(3, 4), _ax(1)], const_inputs=[1], ref=_red(np.all)),
    Case(
        "Any", [bools(3, 4), _ax(0)], attrs={"keep_dims": True}, const_inputs=[1], ref=_red(np.any, keep=True)
    ),
]

_TIES = np.array([[1, 3, 3], [2, 2, 0]], dtype=np.int32)

_NANS = np.array([[np.nan, 1, 2, 0], [1, np.nan, 0, 3], [np.nan, np.nan, np.nan, np.nan], [np.nan, -np.inf, -np.inf, 5]],
                 np.float32)

_ARG = [
    # NaN never wins (TF's Eigen arg reducer); a row of NaNs gives 0.
    Case("ArgMax", [_NANS, np.array(1, np.int32)], const_inputs=[1], ref=lambda x, a: np.array([2, 3, 0, 3], np.int64),
         id="ArgMax-nan"),
    Case("ArgMin", [_NANS, np.array(1, np.int32)], const_inputs=[1], ref=lambda x, a: np.array([3, 2, 0, 1], np.int64),
         id="ArgMin-nan"),
    Case(
        "ArgMax", [f32(3, 4), np.array(1, np.int32)], const_inputs=[1], ref=lambda x, a: np.argmax(x, axis=1)
    ),
    Case(
        "ArgMax",
        [_TIES, np.array(-1, np.int32)],
        attrs={"output_type": "int32"},
        const_inputs=[1],
        ref=lambda x, a: np.array([1, 0], np.int32),
        id="ArgMax-ties-first-int32",
    ),
    Case(
        "ArgMax",
        [f64(2, 3, 4), np.array(0, np.int64)],
        const_inputs=[1],
        ref=lambda x, a: np.argmax(x, axis=0),
        id="ArgMax-int64-axis",
    ),
    Case(
        "ArgMin", [i64(3, 4), np.array(0, np.int32)], const_inputs=[1], ref=lambda x, a: np.argmin(x, axis=0)
    ),
    Case(
        "ArgMin",
        [bools(5), np.array(0, np.int32)],
        const_inputs=[1],
        ref=lambda x, a: np.argmin(x),
        id="ArgMin-bool",
    ),
]

CASES = _REDUCTIONS + _ARG


def _scan(fn, identity, exclusive=False, reverse=False):
    """Reference Cumsum/Cumprod: flip, accumulate, shift in the identity, flip back."""

    def ref(x, axis):
        a = int(axis) % x.ndim
        y = np.flip(x, a) if reverse else x
        out = fn(y, axis=a, dtype=x.dtype)
        if exclusive:
            head = np.full_like(np.take(out, [0], axis=a), identity)
            out = np.concatenate([head, np.take(out, range(x.shape[a] - 1), axis=a)], axis=a)
        return np.flip(out, a) if reverse else out

    return ref


_SCANS = [
    Case("Cumsum", [f32(3, 4), np.array(1, np.int32)], const_inputs=[1], ref=_scan(np.cumsum, 0), rtol=1e-5),
    Case(
        "Cumsum",
        [i32(4, 2), np.array(0, np.int64)],
        attrs={"exclusive": True, "reverse": True},
        const_inputs=[1],
        ref=_scan(np.cumsum, 0, exclusive=True, reverse=True),
        id="Cumsum-int-exclusive-reverse",
    ),
    Case(
        "Cumprod",
        [f64(2, 3), np.array(-1, np.int32)],
        attrs={"exclusive": True},
        const_inputs=[1],
        ref=_scan(np.cumprod, 1, exclusive=True),
        id="Cumprod-exclusive",
    ),
    Case(
        "Cumprod",
        [f32(5), np.array(0, np.int32)],
        attrs={"reverse": True},
        const_inputs=[1],
        ref=_scan(np.cumprod, 1, reverse=True),
        rtol=1e-5,
        id="Cumprod-reverse",
    ),
    Case(
        "Cumprod",
        [np.zeros((0, 2), np.float32), np.array(0, np.int32)],
        attrs={"exclusive": True},
        const_inputs=[1],
        ref=lambda x, a: x,
        id="Cumprod-empty",
    ),
]

CASES = CASES + _SCANS
