"""window.py's tap machinery against a brute-force reference over random window geometries:
1-3 spatial dims, strides, dilations, asymmetric and oversized padding, empty outputs, and
channel counts on both sides of the kernels' few-channels switches."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from specflow.ops import window as wn
from specflow.ops.window import _Window


def _geometry(rng, rank: int):
    spatial = tuple(int(v) for v in rng.integers(1, 7, rank))
    ksize = tuple(int(v) for v in rng.integers(1, 4, rank))
    strides = tuple(int(v) for v in rng.integers(1, 4, rank))
    dil = tuple(int(v) for v in rng.integers(1, 3, rank))
    pads, out = [], []
    for n, k, s, d in zip(spatial, ksize, strides, dil):
        a, z = (int(v) for v in rng.integers(0, 4, 2))
        span = (k - 1) * d + 1
        pads.append((a, z))
        out.append(max((n + a + z - span) // s + 1, 0))
    return spatial, _Window(ksize, strides, dil, tuple(out), tuple(pads))


def _reference_windows(x, win: _Window, fill):
    """[N, *out, K, C] by loops over output positions and taps; ``fill`` where padding is read,
    and a mask of which entries are real."""
    n, *spatial, c = x.shape
    kk = list(itertools.product(*(range(k) for k in win.ksize)))
    out = np.full((n, *win.out, len(kk), c), fill, dtype=x.dtype)
    real = np.zeros((*win.out, len(kk)), dtype=bool)
    for o in itertools.product(*(range(v) for v in win.out)):
        for t, k in enumerate(kk):
            idx = [oi * s + ki * d - p[0] for oi, ki, s, d, p in zip(o, k, win.strides, win.dilations, win.pads)]
            if all(0 <= i < size for i, size in zip(idx, spatial)):
                out[(slice(None), *o, t)] = x[(slice(None), *idx)]
                real[(*o, t)] = True
    return out, real


CASES = [(seed, rank, c) for seed in range(12) for rank, c in ((1, 3), (2, 1), (2, 5), (2, 17), (3, 2))]


@pytest.mark.parametrize("gather", [True, False])
@pytest.mark.parametrize("seed,rank,c", CASES)
def test_im2col_by_gather_and_by_taps_match_the_reference(seed, rank, c, gather, monkeypatch):
    """Small inputs take one gather (``_im2col_gather``), larger ones a copy per tap or of the
    strided window view: both against the loops."""
    monkeypatch.setattr(wn, "GATHER_MAX", 1 << 30 if gather else 0)
    monkeypatch.setattr(wn, "GATHER_WIDE", gather)
    rng = np.random.default_rng(seed * 31 + rank * 7 + c)
    spatial, win = _geometry(rng, rank)
    x = rng.standard_normal((2, *spatial, c))
    ref, _ = _reference_windows(x, win, 0.0)
    k = ref.shape[-2]
    for state in (None, {}):
        np.testing.assert_array_equal(wn.im2col(np, x, win, state), ref.reshape(*ref.shape[:-2], k * c))


@pytest.mark.parametrize("seed,rank,c", CASES)
def test_window_kernels_match_the_reference(seed, rank, c):
    rng = np.random.default_rng(seed * 31 + rank * 7 + c)
    spatial, win = _geometry(rng, rank)
    x = rng.standard_normal((2, *spatial, c))
    x[0, ..., 0] = np.round(x[0, ..., 0])  # ties for the max pool's first maximum
    ref0, real = _reference_windows(x, win, 0.0)
    k = ref0.shape[-2]

    cols = wn.im2col(np, x, win)
    np.testing.assert_array_equal(cols, ref0.reshape(*ref0.shape[:-2], k * c))
    np.testing.assert_allclose(wn.window_sum(np, x, win), ref0.sum(axis=-2), atol=1e-12)
    np.testing.assert_array_equal(wn.window_counts(np, spatial, win, x.dtype)[0, ..., 0], real.sum(axis=-1))

    lo, _ = _reference_windows(x, win, -np.inf)
    y = wn.max_pool(np, x, win)
    np.testing.assert_array_equal(y, lo.max(axis=-2) if k else y)

    # Gradients as adjoints: <forward(x), dy> == <x, backward(dy)>.
    o = 4
    f = rng.standard_normal((*win.ksize, c, o))
    dy = rng.standard_normal((2, *win.out, o))
    dx = wn.conv_input_grad(np, dy, f, x.shape, win)
    fwd = cols.reshape(-1, k * c) @ f.reshape(k * c, o)
    np.testing.assert_allclose(np.vdot(fwd, dy.reshape(-1, o)), np.vdot(x, dx), rtol=1e-9, atol=1e-9)
    parts = [rng.standard_normal((2, *win.out, c)) for _ in range(k)]
    dx = wn.scatter(np, x.shape, win, x.dtype, parts)
    np.testing.assert_allclose(
        sum(np.vdot(ref0[..., t, :], p) for t, p in enumerate(parts)), np.vdot(x, dx), rtol=1e-9, atol=1e-9
    )

    # MaxPoolGrad: each window's gradient goes to its first real maximum, row-major.
    g = rng.standard_normal(y.shape)
    want = np.zeros_like(x)
    gg_want = np.zeros_like(y)
    xg = rng.standard_normal(x.shape)
    refg, _ = _reference_windows(xg, win, 0.0)
    for pos in itertools.product(*(range(v) for v in y.shape[:-1])):
        for ch in range(c):
            for t in range(k):
                if real[(*pos[1:], t)] and ref0[(*pos, t, ch)] == y[(*pos, ch)]:
                    kk = list(itertools.product(*(range(v) for v in win.ksize)))[t]
                    idx = [oi * s + ki * d - p[0] for oi, ki, s, d, p in
                           zip(pos[1:], kk, win.strides, win.dilations, win.pads)]  # fmt: skip
                    want[(pos[0], *idx, ch)] += g[(*pos, ch)]
                    gg_want[(*pos, ch)] = refg[(*pos, t, ch)]
                    break
    np.testing.assert_allclose(wn.max_pool_grad(np, x, y, g, win), want, atol=1e-12)
    np.testing.assert_allclose(wn.max_pool_grad_grad(np, x, y, xg, win), gg_want, atol=1e-12)


def test_taps_that_read_only_padding_are_empty():
    # One input element, padded by one on each side, read every second position by a 3-wide
    # window: only the middle tap reads it.
    win = _Window((3,), (2,), (1,), (1,), ((1, 1),))
    ts = wn.taps(win, (1,))
    assert [t.empty for t in ts] == [True, False, True]
    assert ts[1].full and ts[1].inp == (slice(0, 1, 2),)
    win = _Window((2,), (4,), (1,), (2,), ((3, 0),))
    assert [t.ranges for t in wn.taps(win, (5,))] == [((1, 2),), ((1, 2),)]
    x = np.arange(5.0).reshape(1, 5, 1)
    np.testing.assert_array_equal(wn.im2col(np, x, win)[0, :, :], [[0, 0], [1, 2]])


def test_the_filter_gradient_reuses_the_forward_im2col_of_the_same_array():
    from specflow.graph.dtypes import float32, int32
    from specflow.graph.graph_def import NodeDef
    from specflow.ops.conv_ops import FROM_ATTR, SHARE_ATTR
    from specflow.ops.eval import evaluate_op, run_kernel
    from specflow.ops.registry import KernelContext, bind_attrs, get_op

    rng = np.random.default_rng(0)
    x, f = rng.standard_normal((2, 5, 5, 3)).astype(np.float32), rng.standard_normal((3, 3, 3, 4)).astype(np.float32)
    attrs = {"strides": [1, 1, 1, 1], "padding": "SAME"}
    dy = rng.standard_normal((2, 5, 5, 4)).astype(np.float32)
    sizes = np.array(f.shape, np.int32)
    want = evaluate_op("Conv2DBackpropFilter", [x, sizes, dy], **attrs)[0]
    fwd_attrs = bind_attrs(get_op("Conv2D"), [float32, float32], dict(attrs), node="conv")
    bwd_attrs = bind_attrs(get_op("Conv2DBackpropFilter"), [float32, int32, float32], dict(attrs), node="bf")
    fwd = NodeDef("conv", "Conv2D", ["x", "f"], attrs={**fwd_attrs, SHARE_ATTR: True})
    bwd = NodeDef("bf", "Conv2DBackpropFilter", ["x", "s", "dy"], attrs={**bwd_attrs, FROM_ATTR: "conv"})
    extras: dict = {}
    # The same array: the kept im2col is used (doubled here, so the gradient doubles); an equal
    # copy: rebuilt (the kept one, zeroed, is not read).
    for reread, scale, factor in ((x, 2, 2), (x.copy(), 0, 1)):
        run_kernel(fwd, [x, f], ctx=KernelContext(node=fwd, attrs=fwd.attrs, extras=extras))
        extras[("im2col", "conv")][1][...] *= scale
        ctx = KernelContext(node=bwd, attrs=bwd.attrs, extras=extras)
        got = run_kernel(bwd, [reread, sizes, dy], ctx=ctx)[0]
        assert ("im2col", "conv") not in extras  # taken (or dropped) by the gradient
        np.testing.assert_allclose(got, factor * want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("c", [3, 17])
def test_a_tap_covering_the_input_writes_the_input_gradient_first(c):
    """Stride-1 SAME: the centre tap reads every input element once, so the input gradient
    starts as its product (no zeroed buffer); the rest still adds up to the adjoint."""
    rng = np.random.default_rng(c)
    win = _Window((3, 3), (1, 1), (1, 1), (4, 5), ((1, 1), (1, 1)))
    x = rng.standard_normal((2, 4, 5, c))
    assert [t.index for t in wn.taps(win, (4, 5)) if wn.covers(t, x.shape)] == [4]
    f, dy = rng.standard_normal((3, 3, c, 6)), rng.standard_normal((2, 4, 5, 6))
    fwd = wn.im2col(np, x, win).reshape(-1, 9 * c) @ f.reshape(9 * c, 6)
    for empty in (None, lambda shape, dtype: np.full(shape, np.nan, dtype)):  # an arena's buffer: garbage
        dx = wn.conv_input_grad(np, dy, f, x.shape, win, empty=empty)
        np.testing.assert_allclose(np.vdot(fwd, dy.reshape(-1, 6)), np.vdot(x, dx), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("m, k, o", [(3 * wn.TALL_BLOCK + 5, 9, 16), (2 * wn.TALL_BLOCK, 3, 2), (100, 9, 16), (9000, 64, 32)])
def test_tall_products_in_row_blocks_equal_one_product(m, k, o):
    rng = np.random.default_rng(m)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((m, o))
    np.testing.assert_allclose(wn.tall_product(np, a, b), a.T @ b, rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("seed,rank,c", CASES[::3])
def test_max_pool_one_dim_at_a_time_matches_the_reference(seed, rank, c, monkeypatch):
    """The separable max pool (large inputs only) on the random geometries above."""
    monkeypatch.setattr(wn, "SEPARABLE_MIN", 0)
    rng = np.random.default_rng(seed * 31 + rank * 7 + c)
    spatial, win = _geometry(rng, rank)
    x = rng.standard_normal((2, *spatial, c))
    lo, _ = _reference_windows(x, win, -np.inf)
    y = wn.max_pool(np, x, win)
    np.testing.assert_array_equal(y, lo.max(axis=-2) if lo.shape[-2] else y)
    np.testing.assert_array_equal(y, wn._max_pool_taps(np, x, win))


@pytest.mark.parametrize("seed", range(8))
def test_tiling_max_pool_matches_the_reference_and_writes_the_arena_buffer(seed):
    """Windows that tile the input (ksize == strides, unpadded, whole windows) pool by reducing
    a reshaped view (``_max_pool_tiled``): against the loops, 1-3 dims, k of 1 in some."""
    rng = np.random.default_rng(seed)
    for _ in range(10):
        rank = int(rng.integers(1, 4))
        ks = tuple(int(v) for v in rng.integers(1, 4, rank))
        out = tuple(int(v) for v in rng.integers(1, 4, rank))
        win = wn._Window(ks, ks, (1,) * rank, out, ((0, 0),) * rank)
        x = np.round(rng.standard_normal((2, *(o * k for o, k in zip(out, ks)), 3)))  # ties
        assert wn._tile_plan(win, x.shape) is not None
        lo, _ = _reference_windows(x, win, -np.inf)
        given: list = []

        def empty(shape, dtype, given=given):
            given.append(np.full(shape, np.nan, dtype))
            return given[-1]

        y = wn.max_pool(np, x, win, empty)
        np.testing.assert_array_equal(y, lo.max(axis=-2))
        assert y is given[-1]
