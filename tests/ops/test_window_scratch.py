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


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("c", [4, 17])  # the strided-view im2col; the per-tap input gradient at 17
def test_batch_blocks_give_the_whole_batch_results(seed, c, monkeypatch):
    """Forward, filter and input gradients computed in batch blocks (as large batches are)
    equal the one-block results, over random strides, dilations and paddings."""
    rng = np.random.default_rng(seed * 7 + c)
    spatial, win = _geometry(rng, 2)
    x = rng.standard_normal((7, *spatial, c))
    o = 3
    f = rng.standard_normal((*win.ksize, c, o))
    dy = rng.standard_normal((7, *win.out, o))
    whole = [slice(0, 7)]
    want_y = wn.correlate(np, x, f, win, whole)
    want_df = wn.filter_grad(np, x, dy, win, whole)
    want_dx = wn.conv_input_grad(np, dy, f, x.shape, win)
    monkeypatch.setattr(wn, "BLOCK_BYTES", 64)  # a few images per block at most
    blocks = wn.batch_blocks(x, win)
    if win.ksize[-1] * c >= 8 and 0 not in win.out:
        assert len(blocks) > 1 and blocks[-1].stop == 7
    state: dict = {}
    for _ in range(2):  # again on the kept buffers
        np.testing.assert_allclose(wn.correlate(np, x, f, win, blocks, state), want_y, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(wn.filter_grad(np, x, dy, win, blocks, state), want_df, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(wn.conv_input_grad(np, dy, f, x.shape, win, state), want_dx, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(want_y.reshape(-1, o), wn.im2col(np, x, win).reshape(-1, f.size // o) @ f.reshape(-1, o))


def test_a_large_conv_runs_in_blocks_through_its_kernels(monkeypatch):
    """Conv2D and Conv2DBackpropFilter take the blocked path for a large im2col (NHWC and NCHW)."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 5, 5, 8)).astype(np.float32)
    f = rng.standard_normal((3, 3, 8, 4)).astype(np.float32)
    dy = rng.standard_normal((6, 5, 5, 4)).astype(np.float32)
    attrs = {"strides": [1, 1, 1, 1], "padding": "SAME"}
    want_y = evaluate_op("Conv2D", [x, f], **attrs)[0]
    want_df = evaluate_op("Conv2DBackpropFilter", [x, np.array(f.shape, np.int32), dy], **attrs)[0]
    monkeypatch.setattr(wn, "BLOCK_BYTES", 4096)
    win = _window_of(x, f)
    assert len(wn.batch_blocks(x, win)) > 1
    nchw = {**attrs, "data_format": "NCHW"}
    for fmt_x, fmt_dy, fmt_attrs, back in ((x, dy, attrs, lambda t: t), (x.transpose(0, 3, 1, 2), dy.transpose(0, 3, 1, 2), nchw,
                                                                       lambda t: t.transpose(0, 2, 3, 1))):
        y = evaluate_op("Conv2D", [fmt_x, f], **fmt_attrs)[0]
        np.testing.assert_allclose(back(y), want_y, rtol=1e-5, atol=1e-5)
        df = evaluate_op("Conv2DBackpropFilter", [fmt_x, np.array(f.shape, np.int32), fmt_dy], **fmt_attrs)[0]
        np.testing.assert_allclose(df, want_df, rtol=1e-5, atol=1e-4)


def _window_of(x, f):
    from specflow.ops.window import _Window

    return _Window(f.shape[:2], (1, 1), (1, 1), x.shape[1:3], ((1, 1), (1, 1)))
