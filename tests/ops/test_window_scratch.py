"""Kernel-internal scratch buffers (window.take/give): the im2col, bordered-input and input-
gradient temporaries a conv kernel keeps in its per-node state between steps. Reused buffers
must never leak into results: every call equals the stateless kernel, across inputs, shapes,
strides, paddings and dilations, and through a Session running forward and both gradients."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.graph import dtypes
from specflow.graph.builder import GraphBuilder
from specflow.ops import window as wn
from specflow.ops import window_gather as wg
from specflow.ops.eval import evaluate_op
from specflow.runtime.session import Session, SessionConfig
from specflow.train.gradients import gradients
from tests.ops.test_window import _geometry


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("c", [1, 5, 17])  # per-tap im2col, strided-view im2col; dcols / per-tap input grad
def test_kernels_with_state_equal_the_stateless_ones(seed, c):
    rng = np.random.default_rng(seed * 13 + c)
    spatial, win = _geometry(rng, 2)
    state: dict = {}
    o = 3
    f = rng.standard_normal((*win.ksize, c, o))
    firsts = []
    for _ in range(3):  # the second and third calls run on the buffers the first gave back
        x = rng.standard_normal((2, *spatial, c))
        cols = wn.im2col(np, x, win, state)
        np.testing.assert_array_equal(cols, wn.im2col(np, x, win))
        wn.give(state, "im2col", cols)
        dy = rng.standard_normal((2, *win.out, o))
        dx = wn.conv_input_grad(np, dy, f, x.shape, win, state)
        np.testing.assert_array_equal(dx, wn.conv_input_grad(np, dy, f, x.shape, win))
        firsts.append((dx, dx.copy()))
    for dx, copy in firsts:  # results are never scratch: later calls left them alone
        np.testing.assert_array_equal(dx, copy)
    if 0 not in cols.shape:
        assert state["im2col"] is cols  # kept for the next step


def test_take_reuses_only_a_fitting_buffer_and_lends_it_once():
    state: dict = {}
    a = wn.take(np, state, "k", (4, 3), np.float32)
    wn.give(state, "k", a)
    b = wn.take(np, state, "k", (4, 3), np.float32)
    assert b is a and "k" not in state  # out while in use
    assert wn.take(np, state, "k", (4, 3), np.float32) is not a  # a second user gets its own
    wn.give(state, "k", a)
    assert wn.take(np, state, "k", (4, 3), np.float64) is not a  # dtype changed
    wn.give(state, "k", a)
    assert wn.take(np, state, "k", (5, 3), np.float32) is not a  # shape changed (another batch)
    assert wn.take(np, None, "k", (2,), np.float32).shape == (2,)  # no state: a fresh buffer


CONV_CASES = [
    # (channels in, padding, strides, dilations): both im2col paths, both input-gradient paths
    (3, "SAME", [1, 1, 1, 1], [1, 1, 1, 1]),
    (16, "SAME", [1, 1, 1, 1], [1, 1, 1, 1]),
    (8, "VALID", [1, 2, 2, 1], [1, 1, 1, 1]),
    (16, "SAME", [1, 2, 1, 1], [1, 1, 1, 1]),
    (4, "SAME", [1, 1, 1, 1], [1, 2, 2, 1]),
    (20, "VALID", [1, 1, 1, 1], [1, 1, 2, 1]),
]


@pytest.mark.parametrize("cin,padding,strides,dilations", CONV_CASES)
def test_conv_and_its_gradients_through_a_session_across_steps(cin, padding, strides, dilations):
    """Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter (the last reading the forward's
    im2col, which it gives back) in one graph, run for alternating inputs and batch sizes:
    each step equals the kernels evaluated alone."""
    attrs = {"strides": strides, "padding": padding, "dilations": dilations}
    b = GraphBuilder()
    x = b.add_op("Placeholder", [], {"dtype": dtypes.float32, "shape": [None, 7, 6, cin]}, name="x").name
    dy = b.add_op("Placeholder", [], {"dtype": dtypes.float32, "shape": None}, name="dy").name
    rng = np.random.default_rng(cin)
    f_val = rng.standard_normal((3, 3, cin, 5)).astype(np.float32)
    f = b.const(f_val, name="f")
    y = b.add_op("Conv2D", [x, f], dict(attrs), name="conv").name
    dx, df = gradients(b, [y], [x, f], grad_ys=[dy])
    with Session(b.graph_def, SessionConfig(devices="cpu:1")) as sess:
        for batch in (2, 3, 2, 2):
            xv = rng.standard_normal((batch, 7, 6, cin)).astype(np.float32)
            want_y = evaluate_op("Conv2D", [xv, f_val], **attrs)[0]
            dyv = rng.standard_normal(want_y.shape).astype(np.float32)
            got_y, got_dx, got_df = sess.run([y, dx, df], {x: xv, dy: dyv})
            want_dx = evaluate_op("Conv2DBackpropInput", [np.array(xv.shape, np.int32), f_val, dyv], **attrs)[0]
            want_df = evaluate_op("Conv2DBackpropFilter", [xv, np.array(f_val.shape, np.int32), dyv], **attrs)[0]
            np.testing.assert_allclose(got_y, want_y, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(got_dx, want_dx, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(got_df, want_df, rtol=1e-5, atol=1e-4)


def test_a_bordered_buffer_fills_its_border_once_and_again_when_replaced(monkeypatch):
    monkeypatch.setattr(wn, "GATHER_MAX", 0)  # (small inputs take a gather, without a bordered copy)
    monkeypatch.setattr(wn, "GATHER_WIDE", False)  # (and so do 8 float64 channels)
    win = wn._Window((3, 3), (1, 1), (1, 1), (4, 4), ((1, 1), (1, 1)))
    rng = np.random.default_rng(0)
    state: dict = {}
    fills = []
    for batch in (2, 2, 3, 2):  # a new shape replaces the kept buffer: its border is filled anew
        x = rng.standard_normal((batch, 4, 4, 8))
        cols = wn.im2col(np, x, win, state)
        fills.append(state["bordered_ready"][0])
        np.testing.assert_array_equal(cols, wn.im2col(np, x, win))
        wn.give(state, "im2col", cols)
    assert fills[0] is fills[1] and fills[2] is not fills[1] and fills[3] is not fills[2]


@pytest.mark.parametrize("seed", range(4))
def test_max_pool_grad_with_kept_masks_equals_the_stateless_one(seed):
    rng = np.random.default_rng(seed)
    spatial, win = _geometry(rng, 2)
    state: dict = {}
    for _ in range(3):  # later calls reuse the hit / seen masks the first gave back
        x = np.round(rng.standard_normal((2, *spatial, 3)))  # ties
        y = wn.max_pool(np, x, win)
        dy = rng.standard_normal(y.shape)
        np.testing.assert_array_equal(wn.max_pool_grad(np, x, y, dy, win, state=state),
                                      wn.max_pool_grad(np, x, y, dy, win))  # fmt: skip


@pytest.mark.parametrize("c, dtype, gathers", [(16, np.float32, True), (4, np.float32, True), (3, np.float32, False),
                                               (2, np.float64, True), (1, np.float32, False)])  # fmt: skip
def test_large_im2col_gathers_whole_16_byte_channel_rows_into_the_kept_buffer(c, dtype, gathers, monkeypatch):
    win = wn._Window((3, 3), (1, 1), (1, 1), (16, 16), ((1, 1), (1, 1)))
    x = np.random.default_rng(c).standard_normal((max(8, 128 // c), 16, 16, c)).astype(dtype)
    cols_bytes = x.nbytes * 9
    assert x.size * 9 > wn.GATHER_MAX and cols_bytes <= wn.COLS_KEEP_MAX and wn._gathers_fast(c * x.itemsize) == gathers
    state: dict = {}
    first = wn.im2col(np, x, win, state)
    wn.give(state, "im2col", first)
    again = wn.im2col(np, x, win, state)
    assert np.shares_memory(again, first)  # the kept buffer, refilled
    monkeypatch.setattr(wn, "GATHER_WIDE", False)
    np.testing.assert_array_equal(again, wn.im2col(np, x, win))


def test_an_im2col_above_the_keep_limit_is_fresh_every_call(monkeypatch):
    monkeypatch.setattr(wg, "COLS_KEEP_MAX", 1 << 16)
    win = wn._Window((3, 3), (1, 1), (1, 1), (16, 16), ((1, 1), (1, 1)))
    x = np.random.default_rng(0).standard_normal((2, 16, 16, 4)).astype(np.float32)  # 73,728 bytes of cols
    state: dict = {}
    first = wn.im2col(np, x, win, state)
    wn.give(state, "im2col", first)
    again = wn.im2col(np, x, win, state)
    assert not np.shares_memory(again, first) and "im2col" not in state
    np.testing.assert_array_equal(again, first)
