"""The TensorFlow names added by api/tf_array_names.py, tf_math_names.py, tf_random_names.py,
nn_more.py and linalg.py: each against a numpy/scipy reference on small inputs, eagerly and a
few inside sf.function; the compositions' gradients (GradientTape) against finite differences;
the export lists kept equal to the modules' NAMES."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import scipy.special

import specflow as sf
from specflow.api import linalg, nn_more, tf_array_names, tf_math_names, tf_random_names

R = np.random.default_rng(0)


def f64(*shape):
    return R.normal(size=shape)


def spd(n, batch=()):
    a = R.normal(size=(*batch, n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _np(v):
    return [_np(x) for x in v] if isinstance(v, (list, tuple)) else np.asarray(v)


def close(got, want, rtol=1e-6, atol=1e-8):
    got, want = _np(got), _np(want)
    if isinstance(want, list):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            close(g, w, rtol, atol)
        return
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def check_grad(fn, *xs, eps=1e-6, rtol=1e-5, atol=1e-6):
    """GradientTape's gradient of sum(fn(*xs) * w) against central differences (float64)."""
    xs = [np.asarray(x, np.float64) for x in xs]
    w = np.random.default_rng(1).normal(size=np.shape(fn(*[sf.constant(x) for x in xs])))

    def value(*vals):
        return float(np.sum(np.asarray(fn(*[sf.constant(v) for v in vals])) * w))

    ts = [sf.constant(x) for x in xs]
    with sf.GradientTape() as tape:
        for t in ts:
            tape.watch(t)
        y = sf.reduce_sum(fn(*ts) * w)
    grads = tape.gradient(y, ts)
    for i, (x, g) in enumerate(zip(xs, grads)):
        num = np.zeros_like(x)
        for j in np.ndindex(x.shape):
            up, down = [v.copy() for v in xs], [v.copy() for v in xs]
            up[i][j] += eps
            down[i][j] -= eps
            num[j] = (value(*up) - value(*down)) / (2 * eps)
        np.testing.assert_allclose(np.asarray(g), num, rtol=rtol, atol=atol, err_msg=f"input {i}")


# --- the names are exported -----------------------------------------------------------------------

def test_the_new_names_are_exported_where_tensorflow_has_them():
    from specflow.api import TF_ARRAY_NAMES, TF_LINALG_NAMES, TF_MATH_NAMES

    assert sorted(TF_ARRAY_NAMES) == tf_array_names.NAMES
    assert sorted(TF_MATH_NAMES) == tf_math_names.NAMES
    assert sorted(TF_LINALG_NAMES) == linalg.NAMES
    for n in TF_ARRAY_NAMES + TF_MATH_NAMES + TF_LINALG_NAMES:
        assert callable(getattr(sf, n)), n
    for n in tf_math_names.MATH_NAMES:
        assert getattr(sf.math, n) is getattr(tf_math_names, n), n
    for n in ("exp", "reduce_sum", "top_k", "cumsum", "divide_no_nan"):  # the first ones stay
        assert callable(getattr(sf.math, n))
    for n in nn_more.NAMES + ["softmax", "log_softmax", "l2_normalize", "in_top_k", "top_k", "zero_fraction"]:
        assert callable(getattr(sf.nn, n)), n
    assert sf.nn.softmax is sf.math.softmax and sf.nn.l2_normalize is sf.linalg.l2_normalize
    for n in [*tf_random_names.RANDOM_NAMES, "normal", "uniform"]:
        assert callable(getattr(sf.random, n)), n
    assert sf.linalg.norm is sf.norm and sf.linalg.matmul is sf.matmul and callable(sf.math.special.spence)


# --- arrays ---------------------------------------------------------------------------------------

P = f64(3, 4, 2)
MASK = np.array([True, False, True])
ARRAY_CASES = {
    "gather_nd": (lambda: sf.gather_nd(P, [[0, 1], [2, 3]]), P[[0, 2], [1, 3]]),
    "gather_nd batch_dims": (lambda: sf.gather_nd(P, [[[1], [0]], [[3], [2]], [[0], [0]]], batch_dims=1),
                             np.stack([P[b][[i[0] for i in row]] for b, row in
                                       enumerate([[[1], [0]], [[3], [2]], [[0], [0]]])])),
    "scatter_nd": (lambda: sf.scatter_nd([[1], [3], [1]], np.array([1., 2, 3]), [5]), [0, 4, 0, 2, 0]),
    "tensor_scatter_nd_update": (lambda: sf.tensor_scatter_nd_update(np.zeros(4), [[1], [2]], np.array([5., 6])),
                                 [0, 5, 6, 0]),
    "tensor_scatter_nd_add": (lambda: sf.tensor_scatter_nd_add(np.ones(3), [[0], [0]], np.array([2., 3])), [6, 1, 1]),
    "tensor_scatter_nd_sub": (lambda: sf.tensor_scatter_nd_sub(np.ones(3), [[2]], np.array([2.])), [1, 1, -1]),
    "tensor_scatter_nd_min": (lambda: sf.tensor_scatter_nd_min(np.ones(3), [[0], [1]], np.array([0., 2])), [0, 1, 1]),
    "tensor_scatter_nd_max": (lambda: sf.tensor_scatter_nd_max(np.ones(3), [[0], [1]], np.array([0., 2])), [1, 2, 1]),
    "slice": (lambda: sf.slice(P, [1, 0, 0], [2, -1, 1]), P[1:3, :, 0:1]),
    "strided_slice": (lambda: sf.strided_slice(P, [0, 1], [3, 4], [2, 2]), P[0:3:2, 1:4:2]),
    "strided_slice masks": (lambda: sf.strided_slice(P, [1, 0], [2, 4], shrink_axis_mask=1, end_mask=2), P[1, 0:]),
    "boolean_mask": (lambda: sf.boolean_mask(P, MASK), P[MASK]),
    "boolean_mask 2-d axis=1": (lambda: sf.boolean_mask(P, P[0] > 0, axis=1), P[:, P[0] > 0]),
    "unique": (lambda: sf.unique(np.array([3, 1, 3, 2, 1], np.int32)), [[3, 1, 2], [0, 1, 0, 2, 1]]),
    "unique_with_counts": (lambda: sf.unique_with_counts(np.array([3, 1, 3])), [[3, 1], [0, 1, 0], [2, 1]]),
    "repeat": (lambda: sf.repeat(P[0], 2), np.repeat(P[0], 2)),
    "repeat axis=1": (lambda: sf.repeat(P[0], [1, 0, 3, 2], axis=0), np.repeat(P[0], [1, 0, 3, 2], axis=0)),
    "repeat vector axis=-1": (lambda: sf.repeat(P, [3, 1], axis=-1), np.repeat(P, [3, 1], axis=-1)),
    "roll": (lambda: sf.roll(P, [1, -1], [0, 2]), np.roll(P, (1, -1), (0, 2))),
    "sort": (lambda: sf.sort(P, axis=1), np.sort(P, axis=1)),
    "sort descending": (lambda: sf.sort(P, direction="DESCENDING"), -np.sort(-P)),
    "sort int": (lambda: sf.sort(np.array([3, -1, 2], np.int32)), [-1, 2, 3]),
    "sort uint8": (lambda: sf.sort(np.array([3, 255, 0], np.uint8)), np.array([0, 3, 255], np.uint8)),
    "argsort": (lambda: sf.argsort(np.array([1., 3, 1, 2])), np.argsort([1., 3, 1, 2], kind="stable")),
    "searchsorted": (lambda: sf.searchsorted(np.array([[1., 3, 5], [2, 4, 6]]), np.array([[3., 6], [1, 9]])),
                     [np.searchsorted([1., 3, 5], [3., 6]), np.searchsorted([2., 4, 6], [1., 9])]),
    "searchsorted right": (lambda: sf.searchsorted(np.array([1., 3, 3]), np.array([3.]), side="right"), [3]),
    "meshgrid": (lambda: sf.meshgrid(np.arange(3.), np.arange(2.)), np.meshgrid(np.arange(3.), np.arange(2.))),
    "meshgrid ij": (lambda: sf.meshgrid(np.arange(3.), np.arange(2.), np.arange(4.), indexing="ij"),
                    np.meshgrid(np.arange(3.), np.arange(2.), np.arange(4.), indexing="ij")),
    "linspace": (lambda: sf.linspace(-1.0, 2.0, 7), np.linspace(-1.0, 2.0, 7, dtype=np.float32)),
    "linspace nd axis=1": (lambda: sf.linspace(np.array([0., 1]), np.array([1., 3]), 3, axis=1),
                           np.linspace([0., 1], [1., 3], 3, axis=1)),
    "eye": (lambda: sf.eye(2, 3, batch_shape=[2], dtype=sf.float64), np.broadcast_to(np.eye(2, 3), (2, 2, 3))),
    "tensordot": (lambda: sf.tensordot(P, f64(2, 3, 5)[:, :, 0].T, [[2], [1]]),
                  None),  # reference filled below
    "identity_n": (lambda: sf.identity_n([np.ones(2), np.arange(3)]), [np.ones(2), np.arange(3)]),
    "shape_n": (lambda: sf.shape_n([P, np.ones(5)]), [[3, 4, 2], [5]]),
    "reverse_sequence": (lambda: sf.reverse_sequence(P[:, :, 0], [2, 4, 1], seq_axis=1),
                         [np.r_[P[0, 1::-1, 0], P[0, 2:, 0]], P[1, ::-1, 0], P[2, :, 0]]),
    "dynamic_partition": (lambda: sf.dynamic_partition(np.arange(4.), [1, 0, 1, 2], 3), [[1.], [0., 2], [3.]]),
    "dynamic_stitch": (lambda: sf.dynamic_stitch([[0, 2], [1, 3]], [np.array([1., 2]), np.array([3., 4])]),
                       [1, 3, 2, 4]),
    "unravel_index": (lambda: sf.unravel_index([5, 0, 11], [3, 4]), np.unravel_index([5, 0, 11], (3, 4))),
    "space_to_batch_nd": (lambda: sf.space_to_batch_nd(np.arange(8.).reshape(1, 4, 2, 1), [2, 1], [[0, 0], [0, 0]]),
                          np.arange(8.).reshape(2, 2, 2, 1).transpose(1, 0, 2, 3)),
    "batch_to_space": (lambda: sf.batch_to_space(np.arange(8.).reshape(4, 1, 2, 1), 2, [[0, 0], [0, 2]]),
                       np.arange(8.).reshape(2, 2, 1, 2).transpose(2, 0, 3, 1).reshape(1, 2, 4, 1)[:, :, :2]),
    "bitcast": (lambda: sf.bitcast(np.array([1.5], np.float32), sf.int32), np.array([1.5], np.float32).view(np.int32)),
    "saturate_cast": (lambda: sf.saturate_cast(np.array([-5., 3.7, 300.], np.float32), sf.uint8),
                      np.array([0, 3, 255], np.uint8)),
    "saturate_cast int": (lambda: sf.saturate_cast(np.array([-500, 300]), sf.int8), np.array([-128, 127], np.int8)),
    "complex": (lambda: sf.complex(np.array([1., 2]), np.array([3., 4])), [1 + 3j, 2 + 4j]),
    "parallel_stack": (lambda: sf.parallel_stack([np.ones(2), np.zeros(2)]), [[1, 1], [0, 0]]),
    "broadcast_dynamic_shape": (lambda: sf.broadcast_dynamic_shape([2, 1, 3], [4, 1]), [2, 4, 3]),
    "histogram_fixed_width": (lambda: sf.histogram_fixed_width(np.array([-1., 0, 0.5, 0.9, 3]), [-1., 1.], nbins=4),
                              [1, 0, 1, 3]),
    "clip_by_norm": (lambda: sf.clip_by_norm(np.array([3., 4.]), 1.0), [0.6, 0.8]),
    "clip_by_norm axes": (lambda: sf.clip_by_norm(np.array([[3., 4.], [0.3, 0.4]]), 1.0, axes=[1]),
                          [[0.6, 0.8], [0.3, 0.4]]),
    "truediv int": (lambda: sf.truediv(np.array([1, 7], np.int32), np.array([2, 2], np.int32)), [0.5, 3.5]),
    "realdiv": (lambda: sf.realdiv(np.array([1., 7]), np.array([2., 4])), [0.5, 1.75]),
    "truncatediv": (lambda: sf.truncatediv(np.array([-7, 7]), np.array([2, 2])), [-3, 3]),
    "truncatemod": (lambda: sf.truncatemod(np.array([-7., 7]), np.array([2., -2])), np.fmod([-7., 7], [2., -2])),
    "scalar_mul": (lambda: sf.scalar_mul(2.5, np.array([1., 2])), [2.5, 5]),
    "add_n": (lambda: sf.add_n([np.ones(2), np.ones(2), np.arange(2.)]), [2, 3]),
}
ARRAY_CASES["tensordot"] = (ARRAY_CASES["tensordot"][0], None)


@pytest.mark.parametrize("name", list(ARRAY_CASES))
def test_array_names_match_numpy(name):
    fn, want = ARRAY_CASES[name]
    if name == "tensordot":
        b = np.ones((3, 2))
        close(sf.tensordot(P, b, [[2], [1]]), np.tensordot(P, b, [[2], [1]]))
        close(sf.tensordot(P, f64(2, 5), 1).shape.as_list(), [3, 4, 5])
        return
    got = fn()
    if name.startswith("unique") or name in ("shape_n", "dynamic_partition"):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
        return
    close(got, want)


def test_broadcast_static_shape_and_trig():
    assert sf.broadcast_static_shape([2, 1, 3], [4, 1]).as_list() == [2, 4, 3]
    x = np.array([-0.5, 0.2, 0.7])
    for name in ("tan", "sinh", "cosh", "asin", "acos", "atan", "asinh", "atanh"):
        close(getattr(sf, name)(x), getattr(np, {"asin": "arcsin", "acos": "arccos", "atan": "arctan",
                                                 "asinh": "arcsinh", "atanh": "arctanh"}.get(name, name))(x))
    close(sf.acosh(x + 2), np.arccosh(x + 2))
    close(sf.atan2(x, x[::-1]), np.arctan2(x, x[::-1]))
    assert sf.math.tan is sf.tan and sf.math.atan2 is sf.atan2


# --- math -----------------------------------------------------------------------------------------

X = f64(3, 4)
D = f64(4, 3)
SEG = np.array([0, 0, 1, 3])
UIDS = np.array([2, 0, 2, 1])


def _segments(data, ids, n, reduce, empty=0.0):
    return np.stack([reduce(data[ids == i], axis=0) if np.any(ids == i) else np.full(data.shape[1:], empty)
                     for i in range(n)])


MATH_CASES = {
    "cumprod": (lambda: sf.math.cumprod(X, axis=1, exclusive=True), np.cumprod(np.c_[np.ones(3), X[:, :-1]], 1)),
    "cumulative_logsumexp": (lambda: sf.math.cumulative_logsumexp(X, axis=1),
                             np.logaddexp.accumulate(X, axis=1)),
    "segment_sum": (lambda: sf.math.segment_sum(D, SEG), _segments(D, SEG, 4, np.sum)),
    "segment_mean": (lambda: sf.math.segment_mean(D, SEG), _segments(D, SEG, 4, np.mean)),
    "segment_max": (lambda: sf.math.segment_max(D, SEG), _segments(D, SEG, 4, np.max)),
    "segment_min": (lambda: sf.math.segment_min(D, SEG), _segments(D, SEG, 4, np.min)),
    "segment_prod": (lambda: sf.math.segment_prod(D, SEG), _segments(D, SEG, 4, np.prod, 1.0)),
    "unsorted_segment_sum": (lambda: sf.math.unsorted_segment_sum(D, UIDS, 4), _segments(D, UIDS, 4, np.sum)),
    "unsorted_segment_mean": (lambda: sf.math.unsorted_segment_mean(D, UIDS, 4), _segments(D, UIDS, 4, np.mean)),
    "unsorted_segment_sqrt_n": (lambda: sf.math.unsorted_segment_sqrt_n(D, UIDS, 4),
                                _segments(D, UIDS, 4, lambda v, axis: v.sum(axis) / np.sqrt(len(v)))),
    "unsorted_segment_max": (lambda: sf.math.unsorted_segment_max(D, UIDS, 3), _segments(D, UIDS, 3, np.max)),
    "unsorted_segment_min": (lambda: sf.math.unsorted_segment_min(D, UIDS, 3), _segments(D, UIDS, 3, np.min)),
    "unsorted_segment_prod": (lambda: sf.math.unsorted_segment_prod(D, UIDS, 3), _segments(D, UIDS, 3, np.prod)),
    "softmax axis=0": (lambda: sf.math.softmax(X, axis=0), scipy.special.softmax(X, axis=0)),
    "log_softmax": (lambda: sf.math.log_softmax(X), scipy.special.log_softmax(X, axis=-1)),
    "log_sigmoid": (lambda: sf.math.log_sigmoid(X), -np.logaddexp(0, -X)),
    "softsign": (lambda: sf.math.softsign(X), X / (1 + np.abs(X))),
    "lbeta": (lambda: sf.math.lbeta(np.abs(X) + 0.5),
              np.sum(scipy.special.gammaln(np.abs(X) + 0.5), -1) - scipy.special.gammaln(np.sum(np.abs(X) + 0.5, -1))),
    "erfcinv": (lambda: sf.math.erfcinv(np.array([0.2, 1.0, 1.7])), scipy.special.erfcinv([0.2, 1.0, 1.7])),
    "logical_xor": (lambda: sf.math.logical_xor([True, True, False], [True, False, False]), [False, True, False]),
    "multiply_no_nan": (lambda: sf.math.multiply_no_nan(np.array([np.inf, 2.]), np.array([0., 3.])), [0, 6]),
    "reciprocal_no_nan": (lambda: sf.math.reciprocal_no_nan(np.array([0., 4.])), [0, 0.25]),
    "reduce_std": (lambda: sf.math.reduce_std(X, axis=1), np.std(X, axis=1)),
    "reduce_variance": (lambda: sf.math.reduce_variance(X, keepdims=True), np.var(X, keepdims=True)),
    "reduce_euclidean_norm": (lambda: sf.math.reduce_euclidean_norm(X, axis=0), np.linalg.norm(X, axis=0)),
    "count_nonzero": (lambda: sf.math.count_nonzero(np.array([[0., 1, 2], [0, 0, 3]]), axis=1), [2, 1]),
    "bincount": (lambda: sf.math.bincount(np.array([1, 1, 4, 2]), minlength=6), np.bincount([1, 1, 4, 2], minlength=6)),
    "bincount weights": (lambda: sf.math.bincount(np.array([1, 1, 3]), weights=np.array([.5, 1., 2.]), maxlength=3),
                         [0, 1.5, 0]),
    "confusion_matrix": (lambda: sf.math.confusion_matrix([1, 2, 0], [2, 2, 0], num_classes=3),
                         [[1, 0, 0], [0, 0, 1], [0, 0, 1]]),
    "in_top_k": (lambda: sf.math.in_top_k([0, 3], np.array([[1., 2, 3, 0], [0, 1, 0, 5]], np.float32), 2),
                 [False, True]),
    "invert_permutation": (lambda: sf.math.invert_permutation([2, 0, 3, 1]), np.argsort([2, 0, 3, 1])),
    "is_inf": (lambda: sf.math.is_inf(np.array([np.inf, 1.0, np.nan])), [True, False, False]),
    "complex parts": (lambda: [f(sf.complex(np.array([1., -2]), np.array([1., 0.5]))) for f in
                               (sf.math.conj, sf.math.real, sf.math.imag, sf.math.angle)],
                      [np.conj([1 + 1j, -2 + .5j]), [1, -2], [1, .5], np.angle([1 + 1j, -2 + .5j])]),
    "real-input parts": (lambda: [sf.math.real(np.array([-1., 2])), sf.math.imag(np.array([-1., 2])),
                                  sf.math.angle(np.array([-1., 2]))], [[-1, 2], [0, 0], [np.pi, 0]]),
    "zero_fraction": (lambda: sf.math.zero_fraction(np.array([0, 1, 0, 0])), np.float32(0.75)),
    "polyval": (lambda: sf.math.polyval([1.0, -2.0, 3.0], X), np.polyval([1.0, -2.0, 3.0], X)),
    "nextafter": (lambda: sf.math.nextafter(np.array([1.]), np.array([2.])), np.nextafter([1.], [2.])),
    "is_non_decreasing": (lambda: [sf.math.is_non_decreasing([1, 2, 2]), sf.math.is_strictly_increasing([1, 2, 2])],
                          [True, False]),
    "accumulate_n": (lambda: sf.math.accumulate_n([np.ones(2), np.ones(2)]), [2, 2]),
    "mod": (lambda: sf.math.mod(np.array([-7, 7]), np.array([2, -2])), np.mod([-7, 7], [2, -2])),
}
SPECIAL = {"lgamma": scipy.special.gammaln, "digamma": scipy.special.digamma, "erfc": scipy.special.erfc,
           "erfinv": lambda v: scipy.special.erfinv(v / 3), "ndtri": lambda v: scipy.special.ndtri(v / 3),
           "rint": np.rint, "bessel_i0": scipy.special.i0, "bessel_i0e": scipy.special.i0e,
           "bessel_i1": scipy.special.i1, "bessel_i1e": scipy.special.i1e, "special.bessel_j0": scipy.special.j0,
           "special.bessel_k1e": scipy.special.k1e, "special.dawsn": scipy.special.dawsn,
           "special.spence": scipy.special.spence, "special.expint": scipy.special.expi}
PAIRS = {"xlogy": scipy.special.xlogy, "xlog1py": scipy.special.xlog1py, "xdivy": lambda x, y: x / y,
         "igamma": scipy.special.gammainc, "igammac": scipy.special.gammaincc, "zeta": scipy.special.zeta,
         "polygamma": scipy.special.polygamma}


@pytest.mark.parametrize("name", list(MATH_CASES))
def test_math_names_match_numpy(name):
    fn, want = MATH_CASES[name]
    close(fn(), want, rtol=1e-6 if name != "zero_fraction" else 1e-7)


def test_math_special_functions_match_scipy():
    v = np.array([0.3, 1.2, 2.5])
    for name, ref in SPECIAL.items():
        fn = getattr(sf.math.special, name.split(".")[1]) if name.startswith("special.") else getattr(sf.math, name)
        arg = v if name not in ("erfinv", "ndtri") else v
        x = arg / 3 if name in ("erfinv", "ndtri") else arg
        close(fn(x), ref(arg), rtol=1e-6, atol=1e-10)
    x = np.array([0.4, 1.0, 2.0])
    for name, ref in PAIRS.items():
        a = {"zeta": np.array([1.5, 2.0, 4.0]), "polygamma": np.array([0.0, 1.0, 3.0])}.get(name, np.array([0.5, 1, 3]))
        close(getattr(sf.math, name)(a, x), ref(a, x), rtol=1e-6)
    a = np.array([0.5, 1.0, 3.0])
    close(sf.math.betainc(a, a + 1, np.array([0.2, 0.5, 0.9])), scipy.special.betainc(a, a + 1, [0.2, 0.5, 0.9]))


# --- nn -------------------------------------------------------------------------------------------

def _conv_ref(x, w, stride=1, dilation=1):
    """VALID N-d convolution (channels last), numpy."""
    n = w.ndim - 2
    k = [(w.shape[i] - 1) * dilation + 1 for i in range(n)]
    out_sp = [(x.shape[1 + i] - k[i]) // stride + 1 for i in range(n)]
    out = np.zeros([x.shape[0], *out_sp, w.shape[-1]])
    for idx in np.ndindex(*out_sp):
        sl = tuple(slice(idx[i] * stride, idx[i] * stride + k[i], dilation) for i in range(n))
        out[(slice(None), *idx)] = np.tensordot(x[(slice(None), *sl)], w, axes=(list(range(1, n + 2)),
                                                                                list(range(n + 1))))
    return out


def _depthwise_ref(x, w, stride=1, dilation=1):
    c, m = w.shape[2], w.shape[3]
    outs = [_conv_ref(x[..., i:i + 1], w[:, :, i:i + 1, :], stride, dilation) for i in range(c)]
    return np.stack(outs, -2).reshape(*outs[0].shape[:-1], c * m)


IMG = f64(2, 6, 5, 3)
DW = f64(3, 2, 3, 2)


def test_convolutions_match_a_numpy_reference():
    close(sf.nn.depthwise_conv2d(IMG, DW, [1, 1, 1, 1], "VALID"), _depthwise_ref(IMG, DW))
    close(sf.nn.depthwise_conv2d(IMG, DW, [1, 2, 2, 1], "VALID"), _depthwise_ref(IMG, DW, stride=2))
    close(sf.nn.depthwise_conv2d(IMG, DW, [1, 1, 1, 1], "VALID", dilations=[2, 2]), _depthwise_ref(IMG, DW, dilation=2))
    pw = f64(1, 1, 6, 4)
    close(sf.nn.separable_conv2d(IMG, DW, pw, [1, 1, 1, 1], "VALID"), _depthwise_ref(IMG, DW) @ pw[0, 0])
    vol, w3 = f64(1, 4, 5, 3, 2), f64(2, 3, 2, 2, 3)
    close(sf.nn.conv3d(vol, w3, [1, 1, 1, 1, 1], "VALID"), _conv_ref(vol, w3))
    close(sf.nn.convolution(vol, w3, strides=2), _conv_ref(vol, w3, stride=2))
    seq, w1 = f64(2, 7, 3), f64(3, 3, 2)
    close(sf.nn.convolution(seq, w1, dilations=2), _conv_ref(seq, w1, dilation=2))
    wa = f64(2, 2, 3, 1)
    close(sf.nn.atrous_conv2d(IMG, wa, 2, "VALID"), _conv_ref(IMG, wa, dilation=2))
    # a transposed convolution is the gradient of the convolution with respect to its input
    x = sf.constant(f64(2, 8, 3))
    g = f64(2, 4, 2)
    with sf.GradientTape() as tape:
        tape.watch(x)
        y = sf.reduce_sum(sf.nn.convolution(x, w1, strides=2, padding="SAME") * g)
    dx = tape.gradient(y, x)
    close(sf.nn.conv1d_transpose(g, w1, [2, 8, 3], 2), dx)
    close(sf.nn.conv_transpose(g, w1, [2, 8, 3], 2), dx)
    v = sf.constant(f64(1, 4, 6, 4, 2))
    gv = f64(1, 2, 3, 2, 3)
    with sf.GradientTape() as tape:
        tape.watch(v)
        y = sf.reduce_sum(sf.nn.conv3d(v, w3, [1, 2, 2, 2, 1], "SAME") * gv)
    close(sf.nn.conv3d_transpose(gv, w3, [1, 4, 6, 4, 2], 2), tape.gradient(y, v))
    back = sf.nn.depthwise_conv2d_backprop_input([2, 6, 5, 3], DW, f64(2, 4, 4, 6), [1, 1, 1, 1], "VALID")
    assert back.shape.as_list() == [2, 6, 5, 3]
    assert sf.nn.depthwise_conv2d_backprop_filter(IMG, [3, 2, 3, 2], f64(2, 4, 4, 6), [1, 1, 1, 1],
                                                  "VALID").shape.as_list() == [3, 2, 3, 2]


def test_pooling_shuffles_and_morphology_match_numpy():
    seq = f64(2, 6, 3)
    close(sf.nn.max_pool1d(seq, 2, 2, "VALID"), seq.reshape(2, 3, 2, 3).max(2))
    close(sf.nn.avg_pool1d(seq, 3, 3, "VALID"), seq.reshape(2, 2, 3, 3).mean(2))
    vol = f64(1, 4, 2, 4, 2)
    close(sf.nn.max_pool3d(vol, 2, 2, "VALID"), vol.reshape(1, 2, 2, 1, 2, 2, 2, 2).max((2, 4, 6)))
    close(sf.nn.avg_pool3d(vol, 2, 2, "VALID"), vol.reshape(1, 2, 2, 1, 2, 2, 2, 2).mean((2, 4, 6)))
    close(sf.nn.pool(vol, [2, 2, 2], "AVG", strides=[2, 2, 2]), sf.nn.avg_pool3d(vol, 2, 2, "VALID"))
    img = f64(1, 4, 4, 1)
    out, arg = sf.nn.max_pool_with_argmax(img, 2, 2, "VALID")
    close(out, img.reshape(1, 2, 2, 2, 2, 1).max((2, 4)))
    close(np.asarray(img).ravel()[np.asarray(arg)], out)
    close(sf.nn.pool(img, [2, 2], "MAX", strides=[2, 2]), out)
    x = f64(1, 2, 2, 8)
    d2s = x.reshape(1, 2, 2, 2, 2, 2).transpose(0, 1, 3, 2, 4, 5).reshape(1, 4, 4, 2)
    close(sf.nn.depth_to_space(x, 2), d2s)
    close(sf.nn.space_to_depth(d2s, 2), x)
    close(sf.nn.crelu(X, axis=0), np.maximum(np.concatenate([X, -X], 0), 0))
    img, f = f64(1, 4, 4, 1), f64(2, 2, 1)
    dil = np.array([[[(img[0, i:i + 2, j:j + 2, 0] + f[:, :, 0]).max()] for j in range(3)] for i in range(3)])
    close(sf.nn.dilation2d(img, f, [1, 1, 1, 1], "VALID", "NHWC", [1, 1, 1, 1]), dil[None])
    ero = np.array([[[(img[0, i:i + 2, j:j + 2, 0] - f[::-1, ::-1, 0]).min()] for j in range(3)] for i in range(3)])
    close(sf.nn.erosion2d(img, f, [1, 1, 1, 1], "VALID", "NHWC", [1, 1, 1, 1]), ero[None])
    y = f64(1, 1, 1, 6)
    sq = np.array([np.sum(y[..., max(0, c - 2):c + 3] ** 2) for c in range(6)])
    close(sf.nn.local_response_normalization(y, 2, 1.0, 0.5, 0.75), y / (1.0 + 0.5 * sq) ** 0.75)
    assert sf.nn.lrn is sf.nn.local_response_normalization


def test_nn_losses_and_statistics_match_numpy():
    t, li = np.abs(f64(5)) + np.array([0, 0, 1, 2, 0]), f64(5)
    close(sf.nn.log_poisson_loss(t, li), np.exp(li) - li * t)
    stirling = t * np.log(t) - t + 0.5 * np.log(2 * np.pi * t)
    close(sf.nn.log_poisson_loss(t, li, compute_full_loss=True),
          np.exp(li) - li * t + np.where((t >= 0) & (t <= 1), 0, stirling))
    z, x = R.uniform(size=(3, 2)), f64(3, 2)
    sig = 1 / (1 + np.exp(-x))
    close(sf.nn.weighted_cross_entropy_with_logits(z, x, 2.5), -(2.5 * z * np.log(sig) + (1 - z) * np.log(1 - sig)))
    counts, m_ss, v_ss, shift = sf.nn.sufficient_statistics(P, [0, 1], shift=0.5)
    close([counts, m_ss, v_ss], [12.0, (P - 0.5).sum((0, 1)), ((P - 0.5) ** 2).sum((0, 1))])
    close(sf.nn.normalize_moments(counts, m_ss, v_ss, shift), [P.mean((0, 1)), P.var((0, 1))])
    w = np.abs(f64(3, 4, 1)) + 0.1
    mean = (w * P).sum((0, 1)) / np.broadcast_to(w, P.shape).sum((0, 1))
    var = (w * (P - mean) ** 2).sum((0, 1)) / np.broadcast_to(w, P.shape).sum((0, 1))
    close(sf.nn.weighted_moments(P, [0, 1], w), [mean, var])
    close(sf.nn.compute_average_loss(np.array([1., 2, 3, 6])), 3.0)
    close(sf.nn.compute_average_loss(np.array([1., 2]), sample_weight=np.array([2., 1]), global_batch_size=8), 0.5)
    close(sf.nn.scale_regularization_loss(np.array([1., 2])), 3.0)
    close(sf.nn.batch_norm_with_global_normalization(X, X[0], np.ones(4), X[1], X[2], 0.0, True),
          (X - X[0]) * X[2] + X[1])
    close(sf.nn.in_top_k([0, 3], np.array([[1., 2, 3, 0], [0, 1, 0, 5]], np.float32), 1), [False, True])


# --- linalg ---------------------------------------------------------------------------------------

A, AB, G = spd(3), spd(3, (2,)), f64(4, 3)


def test_linalg_names_match_numpy_and_scipy():
    la = sf.linalg
    close(la.inv(AB), np.linalg.inv(AB))
    close(la.det(AB), np.linalg.det(AB))
    close(la.slogdet(-A), np.linalg.slogdet(-A))
    close(la.logdet(AB), np.linalg.slogdet(AB)[1])
    close(la.cholesky(A), np.linalg.cholesky(A))
    b = f64(2, 3, 2)
    close(la.cholesky_solve(la.cholesky(AB), b), np.linalg.solve(AB, b))
    q, r = la.qr(G)
    close(q @ r, G)
    close(la.svd(G, compute_uv=False), np.linalg.svd(G, compute_uv=False))
    s, u, v = la.svd(G)
    close(u @ np.diag(np.asarray(s)) @ np.asarray(v).T, G)
    e, vec = la.eigh(A)
    close(e, np.linalg.eigvalsh(A))
    close(np.asarray(vec) @ np.diag(np.asarray(e)) @ np.asarray(vec).T, A)
    close(la.eigvalsh(AB), np.linalg.eigvalsh(AB))
    close(np.sort(np.asarray(la.eigvals(A)).real), np.linalg.eigvalsh(A))
    close(la.solve(AB, b), np.linalg.solve(AB, b))
    close(la.triangular_solve(np.triu(A), b[0], lower=False), scipy.linalg.solve_triangular(np.triu(A), b[0]))
    close(la.lstsq(G, G[:, :1]), np.eye(3, 1))
    rhs = f64(4, 2)
    close(la.lstsq(G, rhs), np.linalg.lstsq(G, rhs, rcond=None)[0])
    close(la.lstsq(G, rhs, fast=False), np.linalg.lstsq(G, rhs, rcond=None)[0])
    close(la.band_part(X, 1, 0), np.tril(np.triu(X, -1)))
    close(la.diag(X[0]), np.diag(X[0]))
    close(la.diag_part(X), np.diag(X))
    close(la.set_diag(X, np.zeros(3)), X - np.diag(np.diag(X)) @ np.eye(3, 4))
    close(la.tensor_diag(X[:2, :2]), np.diag(X[:2, :2].ravel()).reshape(2, 2, 2, 2))
    close(la.tensor_diag_part(la.tensor_diag(X[:2, :2])), X[:2, :2])
    close(la.trace(AB), np.trace(AB, axis1=-2, axis2=-1))
    close(la.cross(X[:, :3], X[:, 1:]), np.cross(X[:, :3], X[:, 1:]))
    close(la.adjoint(sf.complex(X, X)), (X - 1j * X).T)
    close(la.matrix_transpose(P), P.transpose(0, 2, 1))
    close(la.global_norm([X, None, G]), np.sqrt((X ** 2).sum() + (G ** 2).sum()))
    close(la.pinv(G), np.linalg.pinv(G))
    low = np.outer(f64(4), f64(3))
    close(la.pinv(low), np.linalg.pinv(low), atol=1e-7)
    assert int(la.matrix_rank(low)) == 1 and int(la.matrix_rank(G)) == 3
    lu, perm = la.lu(AB)
    close(la.lu_reconstruct(lu, perm), AB)
    close(la.lu_solve(lu, perm, b), np.linalg.solve(AB, b))
    close(la.lu_matrix_inverse(lu, perm), np.linalg.inv(AB))
    lu2, perm2 = la.lu(A)
    close(la.lu_reconstruct(lu2, perm2), A)
    close(la.lu_solve(lu2, perm2, b[0]), np.linalg.solve(A, b[0]))
    close(la.sqrtm(A), scipy.linalg.sqrtm(A))
    close(la.matvec(G, X[0, :3]), G @ X[0, :3])
    close(la.normalize(X, axis=1), [X / np.linalg.norm(X, axis=1, keepdims=True),
                                    np.linalg.norm(X, axis=1, keepdims=True)])


NORMS = [("euclidean", None), (1, 1), (3, -1), (np.inf, 0), ("fro", (0, 2)), (1, (0, 1)), (np.inf, (1, 2)),
         (2, (1, 0))]


@pytest.mark.parametrize("ord_axis", NORMS, ids=[f"{o}-{a}" for o, a in NORMS])
def test_norm_matches_numpy(ord_axis):
    o, axis = ord_axis
    want = np.linalg.norm(P.ravel() if axis is None else P, ord=None if o in ("euclidean", "fro") and axis is None
                          else o, axis=axis)
    close(sf.norm(P, ord=o, axis=axis), want)
    assert sf.norm(P, ord=o, axis=axis, keepdims=True).shape.rank == 3


# --- random ---------------------------------------------------------------------------------------

def test_random_names_give_the_right_shapes_ranges_and_seeding():
    rnd = sf.random
    x = rnd.truncated_normal([2000], mean=1.0, stddev=2.0, seed=3).numpy()
    assert x.shape == (2000,) and np.all(np.abs(x - 1.0) <= 4.0) and abs(x.mean() - 1.0) < 0.2
    c = rnd.categorical(np.log([[0.1, 0.9], [1.0, 1e-9]]), 200, seed=1).numpy()
    assert c.shape == (2, 200) and c.dtype == np.int64 and c[0].mean() > 0.7 and np.all(c[1] == 0)
    assert sorted(rnd.shuffle(np.arange(10), seed=2).numpy()) == list(range(10))
    g = rnd.gamma([500], alpha=[2.0, 5.0], beta=2.0, seed=1).numpy()
    assert g.shape == (500, 2) and np.all(g > 0) and abs(g[:, 1].mean() - 2.5) < 0.4
    p = rnd.poisson([1000], lam=3.0, dtype=sf.int32, seed=1).numpy()
    assert p.dtype == np.int32 and np.all(p >= 0) and abs(p.mean() - 3.0) < 0.3
    for fn, kw in [(rnd.stateless_uniform, {"minval": 2.0, "maxval": 3.0}), (rnd.stateless_normal, {}),
                   (rnd.stateless_truncated_normal, {})]:
        a, b, other = (fn([50], seed=s, **kw).numpy() for s in ([1, 2], [1, 2], [2, 1]))
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(a, other)
    u = rnd.stateless_uniform([100], seed=[1, 2], minval=2.0, maxval=3.0).numpy()
    assert np.all((u >= 2.0) & (u < 3.0))
    i = rnd.stateless_uniform([100], seed=[1, 2], minval=-3, maxval=4, dtype=sf.int32).numpy()
    assert i.dtype == np.int32 and i.min() >= -3 and i.max() < 4
    assert np.all(np.abs(rnd.stateless_truncated_normal([100], seed=[4, 4]).numpy()) <= 2.0)
    assert rnd.stateless_categorical(np.log([[0.5, 0.5]]), 7, seed=[1, 1]).shape.as_list() == [1, 7]
    assert np.all(rnd.stateless_gamma([10], seed=[1, 2], alpha=2.0).numpy() > 0)
    assert rnd.stateless_poisson([10], seed=[1, 2], lam=2.0).numpy().dtype == np.int32
    assert np.all(rnd.stateless_binomial([10], seed=[1, 2], counts=5.0, probs=0.5).numpy() <= 5)


# --- inside sf.function ---------------------------------------------------------------------------

def test_the_names_trace_into_a_function_with_the_eager_values():
    def body(p, x, img):
        return [sf.boolean_mask(p, MASK), sf.repeat(x, [1, 0, 2], axis=1), sf.sort(p, axis=1), sf.argsort(x),
                sf.math.unsorted_segment_mean(x, [1, 0, 1], 2), sf.norm(p, ord=3, axis=-1),
                sf.tensordot(x, x, [[1], [1]]), sf.linspace(0.0, 1.0, 5), sf.meshgrid(x[0], x[1])[0],
                sf.nn.depthwise_conv2d(img, DW, [1, 1, 1, 1], "SAME"), sf.linalg.logdet(AB),
                sf.math.bincount(sf.cast(sf.abs(x) * 3, sf.int32)), sf.clip_by_norm(x, 1.0),
                sf.random.stateless_normal([3], seed=[1, 2])]

    x = f64(3, 3)
    eager = body(P, x, IMG)
    traced = sf.function(body)(P, x, IMG)
    close(traced, [np.asarray(e) for e in eager])


# --- gradients of the compositions ----------------------------------------------------------------

def _spd(m):
    return sf.matmul(m, m, transpose_b=True) + 3.0 * np.eye(3)


GRADS = {
    "unsorted_segment_mean": (lambda d: sf.math.unsorted_segment_mean(d, UIDS[:3], 3), [f64(3, 2)]),
    "unsorted_segment_sqrt_n": (lambda d: sf.math.unsorted_segment_sqrt_n(d, UIDS[:3], 3), [f64(3, 2)]),
    "segment_mean": (lambda d: sf.math.segment_mean(d, [0, 0, 2]), [f64(3, 2)]),
    "norm p=3": (lambda x: sf.norm(x, ord=3, axis=1), [f64(2, 3)]),
    "norm fro": (lambda x: sf.norm(x, ord="fro", axis=(0, 1)), [f64(2, 3)]),
    "norm 2 matrix": (lambda x: sf.norm(x, ord=2, axis=(0, 1)), [f64(3, 2)]),
    "tensordot": (lambda a, b: sf.tensordot(a, b, [[0, 2], [1, 0]]), [f64(2, 3, 2), f64(2, 2, 3)]),
    "l2_normalize": (lambda x: sf.math.l2_normalize(x, axis=0), [f64(3, 2)]),
    "log_softmax axis=0": (lambda x: sf.math.log_softmax(x, axis=0), [f64(3, 2)]),
    "reduce_std": (lambda x: sf.math.reduce_std(x, axis=0), [f64(3, 2)]),
    "lbeta": (lambda x: sf.math.lbeta(x), [np.abs(f64(2, 3)) + 0.5]),
    "polyval": (lambda x: sf.math.polyval([2.0, -1.0, 0.5], x), [f64(4)]),
    "cumulative_logsumexp": (lambda x: sf.math.cumulative_logsumexp(x, reverse=True), [f64(4)]),
    "depthwise_conv2d": (lambda x, w: sf.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "SAME"),
                         [f64(1, 4, 4, 2), f64(2, 2, 2, 2)]),
    "separable_conv2d": (lambda x, w, p: sf.nn.separable_conv2d(x, w, p, [1, 1, 1, 1], "VALID", dilations=[2, 1]),
                         [f64(1, 4, 3, 2), f64(2, 2, 2, 1), f64(1, 1, 2, 2)]),
    "clip_by_norm": (lambda x: sf.clip_by_norm(x, 0.5, axes=[1]), [f64(2, 3)]),
    "boolean_mask + repeat": (lambda x: sf.repeat(sf.boolean_mask(x, MASK), [2, 1, 0], axis=1), [f64(3, 3)]),
    "sort": (lambda x: sf.sort(x, axis=0, direction="DESCENDING"), [f64(3, 2)]),
    "linspace + meshgrid": (lambda a, b: sf.meshgrid(sf.linspace(a, b, 3), b)[0], [f64(2), f64(2)]),
    "logdet + cholesky_solve": (lambda m, b: sf.linalg.cholesky_solve(sf.linalg.cholesky(_spd(m)), b)
                                * sf.linalg.logdet(_spd(m)), [f64(3, 3), f64(3, 1)]),
    "lstsq": (lambda a, b: sf.linalg.lstsq(a, b, l2_regularizer=0.1), [f64(4, 2), f64(4, 1)]),
    "weighted_moments": (lambda x, w: sf.stack(sf.nn.weighted_moments(x, [0], w)), [f64(3, 2), np.abs(f64(3, 1)) + 1]),
    "weighted_cross_entropy": (lambda z, x: sf.nn.weighted_cross_entropy_with_logits(z, x, 3.0),
                               [R.uniform(size=4), f64(4)]),
    "log_poisson_loss full": (lambda t, x: sf.nn.log_poisson_loss(t, x, compute_full_loss=True),
                              [np.array([0.5, 2.0, 3.0]), f64(3)]),
    "sufficient_statistics + normalize_moments": (
        lambda x: sf.stack(sf.nn.normalize_moments(*sf.nn.sufficient_statistics(x, [0], shift=0.1)[:3], 0.1)),
        [f64(4, 2)]),
    "lu_solve": (lambda b: sf.linalg.lu_solve(*sf.linalg.lu(A), b), [f64(3, 2)]),
    "reduce_variance + zero_fraction-free": (lambda x: sf.math.reduce_variance(x, axis=1, keepdims=True), [f64(2, 3)]),
}


@pytest.mark.parametrize("name", list(GRADS))
def test_gradients_match_finite_differences(name):
    fn, xs = GRADS[name]
    check_grad(fn, *xs)


# --- errors ---------------------------------------------------------------------------------------

def test_bad_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match="mask"):
        sf.boolean_mask(P, True)
    with pytest.raises(ValueError, match="side"):
        sf.searchsorted([1.0, 2.0], [1.0], side="middle")
    with pytest.raises(ValueError, match="direction"):
        sf.sort(P, direction="UP")
    with pytest.raises(ValueError, match="ord"):
        sf.norm(P, ord=-1)
    with pytest.raises(ValueError, match="ord"):
        sf.norm(P, ord=3, axis=(0, 1))
    with pytest.raises(TypeError, match="float32"):
        sf.complex(np.ones(2, np.float32), np.ones(2))
    with pytest.raises(ValueError, match="indexing"):
        sf.meshgrid(np.ones(2), indexing="xz")
    with pytest.raises(ValueError, match="coeffs"):
        sf.math.polyval(np.ones(2), 1.0)
    with pytest.raises(ValueError, match="alg"):
        sf.random.stateless_normal([2], seed=[1, 2], alg="threefry")
    with pytest.raises(ValueError, match="length"):
        sf.nn.conv_transpose(np.ones((1, 2, 2, 1, 1, 1)), np.ones((1, 1, 1, 1)), [1, 2, 2, 1, 1, 1], 1)
    with pytest.raises(ValueError, match="SAME.*dilation_rate"):  # TF 2's refusal, word for word
        sf.nn.pool(IMG, [2, 2], "MAX", padding="SAME", dilations=[2, 2])
    with pytest.raises(ValueError, match="strides"):
        sf.nn.pool(IMG, [2, 2], "MAX", strides=[2, 2], dilations=[2, 2])


@pytest.mark.parametrize("fmt", ["NWC", "NHWC", "NDHWC", "NCW", "NCHW"])
@pytest.mark.parametrize("kind", ["MAX", "AVG"])
def test_dilated_pool_valid_matches_the_dilated_windows(fmt, kind):
    """tf.nn.pool with dilations (VALID): each output the max/mean of the input at i + k * rate
    (TF 2.21 gave the same values for these shapes, through its space-to-batch)."""
    n = len(fmt) - 2
    window, rates, sizes = [3, 2, 2][:n], [2, 3, 2][:n], [7, 6, 5][:n]
    first = fmt.startswith("NC")
    x = np.random.default_rng(1).standard_normal([2] + ([3] + sizes if first else sizes + [3]))
    xl = np.moveaxis(x, 1, -1) if first else x  # channels last for the reference
    out_sizes = [s - (w - 1) * r for s, w, r in zip(sizes, window, rates)]
    ref = np.empty([2] + out_sizes + [3])
    for idx in np.ndindex(*out_sizes):
        taps = [xl[(slice(None),) + tuple(i + k * r for i, k, r in zip(idx, ks, rates))]
                for ks in np.ndindex(*window)]  # fmt: skip
        ref[(slice(None),) + idx] = np.max(taps, 0) if kind == "MAX" else np.mean(taps, 0)
    got = np.asarray(sf.nn.pool(x, window, kind, padding="VALID", data_format=fmt, dilations=rates))
    np.testing.assert_allclose(np.moveaxis(got, 1, -1) if first else got, ref, rtol=1e-12)
