"""Recurrent layers (lstm, gru, simple_rnn, bidirectional) against numpy references of Keras's
cells, with masks, sequence lengths, initial states, go_backwards and return_state; gradients
through the while loop against finite differences; Keras parity where TensorFlow imports."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.errors import SpecError
from tests.schema.layer_harness import LayerRun

RNG = np.random.default_rng(11)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def lstm_cell(x, states, w, u):
    h, c = states
    z = x @ w["kernel"] + h @ w["recurrent_kernel"] + w["bias"]
    i, f, g, o = sigmoid(z[:, :u]), sigmoid(z[:, u:2 * u]), np.tanh(z[:, 2 * u:3 * u]), sigmoid(z[:, 3 * u:])
    c = f * c + i * g
    return [o * np.tanh(c), c]


def gru_cell(x, states, w, u, reset_after=True):
    (h,) = states
    b = w["bias"]
    if reset_after:
        xw = x @ w["kernel"] + b[0]
        rw = h @ w["recurrent_kernel"] + b[1]
        z = sigmoid(xw[:, :u] + rw[:, :u])
        r = sigmoid(xw[:, u:2 * u] + rw[:, u:2 * u])
        hh = np.tanh(xw[:, 2 * u:] + r * rw[:, 2 * u:])
    else:
        xw = x @ w["kernel"] + b
        rk = w["recurrent_kernel"]
        z = sigmoid(xw[:, :u] + h @ rk[:, :u])
        r = sigmoid(xw[:, u:2 * u] + h @ rk[:, u:2 * u])
        hh = np.tanh(xw[:, 2 * u:] + (r * h) @ rk[:, 2 * u:])
    return [z * h + (1 - z) * hh]


def simple_cell(x, states, w, u):
    return [np.tanh(x @ w["kernel"] + states[0] @ w["recurrent_kernel"] + w["bias"])]


CELLS = {"lstm": (lstm_cell, 2), "gru": (gru_cell, 1), "simple_rnn": (simple_cell, 1)}


def np_rnn(kind, x, w, u, mask=None, initial=None, go_backwards=False, **cell_kw):
    """Keras's RNN loop: returns (outputs in processing order [batch, steps, u], final states)."""
    cell, n_states = CELLS[kind]
    states = initial or [np.zeros((x.shape[0], u))] * n_states
    outs = []
    steps = range(x.shape[1] - 1, -1, -1) if go_backwards else range(x.shape[1])
    for t in steps:
        new = cell(x[:, t], states, w, u, **cell_kw)
        if mask is not None:
            m = mask[:, t:t + 1].astype(bool)
            new = [np.where(m, n, s) for n, s in zip(new, states)]
        states = new
        outs.append(states[0])
    return np.stack(outs, 1), states


def randomize(run):
    values = {k: RNG.normal(size=v.shape) * 0.5 for k, v in run.weights().items()}
    run.set_weights(values)
    return values


@pytest.mark.parametrize("kind", ["lstm", "gru", "simple_rnn"])
def test_rnn_matches_numpy_and_differentiates(kind):
    x = RNG.normal(size=(2, 3, 2))
    run = LayerRun(kind, {"x": x}, units=2, return_sequences=True, return_state=True)
    w = randomize(run)
    got = run.run()
    want, states = np_rnn(kind, x, w, 2)
    np.testing.assert_allclose(got[0], want, rtol=1e-10)
    for g, s in zip(got[1:], states):
        np.testing.assert_allclose(g, s, rtol=1e-10)
    assert len(got) == 1 + CELLS[kind][1]
    run.check_gradients(["x", "kernel", "recurrent_kernel", "bias"])


def test_lstm_weights_layout_and_forget_bias():
    run = LayerRun("lstm", {"x": np.zeros((1, 2, 3), np.float32)}, units=4)
    w = run.weights()
    assert w["kernel"].shape == (3, 16) and w["recurrent_kernel"].shape == (4, 16) and w["bias"].shape == (16,)
    np.testing.assert_array_equal(w["bias"], np.r_[np.zeros(4), np.ones(4), np.zeros(8)])
    assert LayerRun("gru", {"x": np.zeros((1, 2, 3))}, units=4).weights()["bias"].shape == (2, 12)
    assert LayerRun("gru", {"x": np.zeros((1, 2, 3))}, units=4, reset_after=False).weights()["bias"].shape == (12,)


def test_gru_reset_before():
    x = RNG.normal(size=(3, 4, 2))
    run = LayerRun("gru", {"x": x}, units=3, reset_after=False, return_sequences=True)
    w = randomize(run)
    np.testing.assert_allclose(run.run()[0], np_rnn("gru", x, w, 3, reset_after=False)[0], rtol=1e-10)
    run.check_gradients(["recurrent_kernel"])


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_mask_lengths_initial_state_and_go_backwards(kind):
    x = RNG.normal(size=(3, 5, 2))
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]], bool)
    h0 = RNG.normal(size=(3, 4))
    c0 = RNG.normal(size=(3, 4))
    inputs = {"x": x, "m": mask, "h0": h0, "c0": c0}
    roles = {"sequence": "x", "mask": "m", "initial_h": "h0", "initial_c": "c0"}
    if kind == "gru":
        del inputs["c0"], roles["initial_c"]
    initial = [h0, c0] if kind == "lstm" else [h0]
    for backwards in (False, True):
        run = LayerRun(kind, inputs, roles=roles, units=4, return_sequences=True, go_backwards=backwards)
        w = randomize(run)
        want, _ = np_rnn(kind, x, w, 4, mask=mask, initial=initial, go_backwards=backwards)
        np.testing.assert_allclose(run.run()[0], want, rtol=1e-10)
    # Sequence lengths [batch] mean the same mask; the last output is the last real step's.
    lengths = mask.sum(1).astype(np.int32)
    run = LayerRun(kind, {"x": x, "n": lengths}, roles={"sequence": "x", "mask": "n"}, units=4, return_state=True)
    w = randomize(run)
    want, states = np_rnn(kind, x, w, 4, mask=mask)
    got = run.run()
    np.testing.assert_allclose(got[0], want[:, -1], rtol=1e-10)
    np.testing.assert_allclose(got[0], [want[0, 4], want[1, 2], want[2, 0]], rtol=1e-10)
    run.check_gradients(["x", "recurrent_kernel"])


def test_any_length_runs_through_one_graph():
    run = LayerRun("simple_rnn", {"x": np.zeros((2, 3, 2))}, shapes={"x": [None, None, 2]}, units=3,
                   return_sequences=True)
    w = randomize(run)
    for steps in (1, 4, 9):
        x = RNG.normal(size=(2, steps, 2))
        np.testing.assert_allclose(run.run({"x": x})[0], np_rnn("simple_rnn", x, w, 3)[0], rtol=1e-10)


def test_embedding_mask_zero_feeds_an_rnn():
    ids = np.array([[3, 1, 0, 0], [2, 2, 2, 0]], np.int64)
    run = LayerRun("embedding", {"ids": ids}, input_dim=5, output_dim=2, mask_zero=True)
    out, mask = run.run()
    np.testing.assert_array_equal(mask, ids != 0)
    assert out.shape == (2, 4, 2)


def test_dropout_only_in_training():
    x = RNG.normal(size=(4, 3, 2)).astype(np.float32)
    run = LayerRun("lstm", {"x": x}, units=3, dropout=0.5, recurrent_dropout=0.5, seed=2)
    w = run.weights()
    want, _ = np_rnn("lstm", x.astype(np.float64), {k: v.astype(np.float64) for k, v in w.items()}, 3)
    np.testing.assert_allclose(run.run()[0], want[:, -1], rtol=1e-5, atol=1e-6)
    assert not np.allclose(run.run({"training": np.array(True)})[0], want[:, -1], rtol=1e-3)


@pytest.mark.parametrize("mode", ["concat", "sum", "ave", "mul", None])
def test_bidirectional(mode):
    x = RNG.normal(size=(2, 4, 3))
    mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0]], bool)
    run = LayerRun("bidirectional", {"x": x, "m": mask}, roles={"sequence": "x", "mask": "m"}, merge_mode=mode,
                   rnn={"gru": {"units": 2, "return_sequences": True}})
    w = randomize(run)
    fw = {k.split("/", 1)[1]: v for k, v in w.items() if k.startswith("forward_gru/")}
    bw = {k.split("/", 1)[1]: v for k, v in w.items() if k.startswith("backward_gru/")}
    yf, _ = np_rnn("gru", x, fw, 2, mask=mask)
    yb, _ = np_rnn("gru", x, bw, 2, mask=mask, go_backwards=True)
    yf, yb = yf * mask[..., None], yb[:, ::-1] * mask[..., None]  # time order; zeros where masked
    merged = {"concat": lambda: np.concatenate([yf, yb], -1), "sum": lambda: yf + yb, "ave": lambda: (yf + yb) / 2,
              "mul": lambda: yf * yb, None: lambda: None}[mode]()
    got = run.run()
    if mode is None:
        np.testing.assert_allclose(got[0], yf, rtol=1e-10)
        np.testing.assert_allclose(got[1], yb, rtol=1e-10)
    else:
        np.testing.assert_allclose(got[0], merged, rtol=1e-10)
    if mode == "concat":
        run.check_gradients(["x", "backward_gru/kernel"])


def test_bidirectional_return_state_order():
    x = RNG.normal(size=(2, 3, 2))
    run = LayerRun("bidirectional", {"x": x}, rnn={"lstm": {"units": 2, "return_state": True}})
    w = randomize(run)
    got = run.run()
    assert [g.shape for g in got] == [(2, 4), (2, 2), (2, 2), (2, 2), (2, 2)]
    fw = {k.split("/", 1)[1]: v for k, v in w.items() if k.startswith("forward_lstm/")}
    _, (h, c) = np_rnn("lstm", x, fw, 2)
    np.testing.assert_allclose(got[1], h, rtol=1e-10)
    np.testing.assert_allclose(got[2], c, rtol=1e-10)


def test_bidirectional_initial_states_by_direction():
    x = RNG.normal(size=(2, 3, 2))
    h = {d: RNG.normal(size=(2, 2)) for d in ("hf", "cf", "hb", "cb")}
    roles = {"sequence": "x", "forward_initial_h": "hf", "forward_initial_c": "cf", "backward_initial_h": "hb",
             "backward_initial_c": "cb"}
    run = LayerRun("bidirectional", {"x": x, **h}, roles=roles, merge_mode=None,
                   rnn={"lstm": {"units": 2, "return_sequences": True, "return_state": True}})
    w = randomize(run)
    fw = {k.split("/", 1)[1]: v for k, v in w.items() if k.startswith("forward_lstm/")}
    bw = {k.split("/", 1)[1]: v for k, v in w.items() if k.startswith("backward_lstm/")}
    yf, (hf, cf) = np_rnn("lstm", x, fw, 2, initial=[h["hf"], h["cf"]])
    yb, (hb, cb) = np_rnn("lstm", x, bw, 2, initial=[h["hb"], h["cb"]], go_backwards=True)
    got = run.run()
    for g, want in zip(got, [yf, yb[:, ::-1], hf, cf, hb, cb]):
        np.testing.assert_allclose(g, want, rtol=1e-10)
    run.check_gradients(["hf", "cf"])
    run.check_gradients(["hb", "cb"], output=1)
    with pytest.raises(SpecError, match="bidirectional gru has no state 'c'; its initial states are "
                                        "forward_initial_h, backward_initial_h"):
        LayerRun("bidirectional", {"x": x, "c": h["cf"]}, roles={"sequence": "x", "forward_initial_c": "c"},
                 rnn={"gru": {"units": 2}})


def test_errors():
    with pytest.raises(SpecError, match=r"lstm needs a \[batch, steps, features\] input"):
        LayerRun("lstm", {"x": np.zeros((2, 3))}, units=2)
    with pytest.raises(SpecError, match="initial_h must be a float64"):
        LayerRun("gru", {"x": np.zeros((2, 3, 1)), "h": np.zeros((2, 2), np.float32)},
                 roles={"sequence": "x", "initial_h": "h"}, units=2)
    with pytest.raises(SpecError, match="mask must be"):
        LayerRun("gru", {"x": np.zeros((2, 3, 1)), "m": np.zeros((2, 3, 1), bool)},
                 roles={"sequence": "x", "mask": "m"}, units=2)


def test_bidirectional_sequence_lengths_equal_the_mask():
    x = RNG.normal(size=(2, 4, 3))
    mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0]], bool)
    cfg = {"rnn": {"lstm": {"units": 2, "return_sequences": True}}}
    by_mask = LayerRun("bidirectional", {"x": x, "m": mask}, roles={"sequence": "x", "mask": "m"}, **cfg)
    by_len = LayerRun("bidirectional", {"x": x, "n": mask.sum(1).astype(np.int32)}, roles={"sequence": "x", "mask": "n"},
                      **cfg)
    by_len.set_weights(randomize(by_mask))
    np.testing.assert_allclose(by_len.run()[0], by_mask.run()[0], rtol=1e-12)
    assert np.all(by_mask.run()[0][1, 2:] == 0)
    # a numeric mask (token ids, say) means nonzero = a real step, as Keras casts it to bool; it
    # scaled the outputs by the ids before
    ids = np.array([[5, 3, 7, 2], [9, 4, 0, 0]], np.float64)
    by_ids = LayerRun("bidirectional", {"x": x, "m": ids}, roles={"sequence": "x", "mask": "m"}, **cfg)
    by_ids.set_weights(randomize(by_mask))
    np.testing.assert_allclose(by_ids.run()[0], by_mask.run()[0], rtol=1e-12)


@pytest.mark.parametrize("kind, gates", [("simple_rnn", 1), ("gru", 3), ("lstm", 4)])
def test_recurrent_kernel_starts_orthogonal(kind, gates):
    # Keras's default: the [units, gates * units] recurrent kernel has orthonormal rows (square
    # for simple_rnn); an orthogonal kernel_initializer on a tall [12, gates * 2] kernel gives
    # orthonormal columns.
    x = np.zeros((1, 2, 12), np.float32)
    w = LayerRun(kind, {"x": x}, units=2, kernel_initializer="orthogonal").weights()
    rec, ker = w["recurrent_kernel"], w["kernel"]
    assert rec.shape == (2, 2 * gates) and ker.shape == (12, 2 * gates)
    np.testing.assert_allclose(rec @ rec.T, np.eye(2), atol=1e-6)
    np.testing.assert_allclose(ker.T @ ker, np.eye(2 * gates), atol=1e-6)

    def seeded(**params):
        init = {"orthogonal": {"seed": 5, **params}}
        return LayerRun(kind, {"x": x}, units=2, recurrent_initializer=init).weights()["recurrent_kernel"]

    first = seeded()
    np.testing.assert_array_equal(seeded(), first)  # a seeded run reproduces
    np.testing.assert_allclose(seeded(gain=2.0), 2 * first, rtol=1e-6)
    assert not np.array_equal(seeded(seed=6), first)
