"""A loaded model's signature under a GradientTape: gradients for its inputs and variables (a
Keras SavedModel, a spec), against finite differences and TensorFlow's recorded outputs; a
signature with loops (TF2 While/If lowered to frames, our own exported loops) differentiated as a
whole, eagerly and inside sf.function, against TensorFlow's recorded gradients and finite
differences."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import specflow as sf
from specflow.errors import GraphError

ROOT = Path(__file__).resolve().parents[2]
TF2 = ROOT / "tests" / "io" / "data" / "tf2"


def central_difference(f, x: np.ndarray, eps: float) -> np.ndarray:
    grad = np.zeros_like(x, dtype=np.float64)
    for idx in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[idx] += eps
        lo[idx] -= eps
        grad[idx] = (f(hi) - f(lo)) / (2 * eps)
    return grad


def test_gradients_through_a_keras_savedmodel_signature():
    rec = np.load(TF2 / "conv_swish.npz")
    (alias,) = [k[3:] for k in rec if k.startswith("in_")]
    m = sf.load(TF2 / "conv_swish")
    sig = m.signatures["serving_default"]
    x = sf.constant(rec[f"in_{alias}"])
    with sf.GradientTape() as tape:
        tape.watch(x)
        out = sig(**{alias: x})
        y = sf.ops.sum(sf.ops.sin(out["output_0"]))
    np.testing.assert_allclose(out["output_0"].numpy(), rec["out_output_0"], rtol=1e-5, atol=1e-6)
    kernel = next(v for n, v in m.named_variables().items() if n.endswith("dense_2/kernel"))
    gx, gk = tape.gradient(y, [x, kernel])
    assert gx is not None and gk is not None  # were None: the signature ran unrecorded

    def loss(value) -> float:
        return float(np.sin(sig(**{alias: value.astype(np.float32)})["output_0"].numpy().astype(np.float64)).sum())

    want = central_difference(loss, rec[f"in_{alias}"].astype(np.float64), 1e-2)
    np.testing.assert_allclose(gx.numpy(), want, rtol=2e-2, atol=2e-4)
    base = kernel.numpy()

    def loss_k(value) -> float:
        kernel.assign(value.astype(np.float32))
        return loss(rec[f"in_{alias}"])

    want_k = central_difference(loss_k, base.astype(np.float64), 1e-2)
    kernel.assign(base)
    np.testing.assert_allclose(gk.numpy(), want_k, rtol=2e-2, atol=2e-4)


def test_gradients_through_a_spec_signature_equal_the_eager_model():
    m = sf.load(ROOT / "models" / "digits_mlp.yaml")
    x = sf.constant(np.random.default_rng(0).normal(size=(3, 64)).astype(np.float32))
    with sf.GradientTape() as tape:
        tape.watch(x)
        probs = m.signatures["serving_default"](images=x)["probabilities"]
        y = sf.ops.sum(probs * probs)
    grads = tape.gradient(y, [x, *m.trainable_variables])
    named = m.named_variables()
    with sf.GradientTape() as ref:  # the same MLP written with eager ops
        ref.watch(x)
        h = sf.ops.relu(sf.ops.mat_mul(x, named["hidden/kernel"]) + named["hidden/bias"])
        logits = sf.ops.mat_mul(h, named["logits/kernel"]) + named["logits/bias"]
        p = sf.ops.softmax(logits)
        y_ref = sf.ops.sum(p * p)
    np.testing.assert_allclose(float(y), float(y_ref), rtol=1e-6)
    want = ref.gradient(y_ref, [x, *m.trainable_variables])
    assert len(grads) == len(want)
    for g, w in zip(grads, want):
        if w is None:
            assert g is None
        else:
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("flag", [True, False])
def test_gradients_through_a_loaded_cond_with_a_loop_match_tensorflow(flag):
    """cond_loop: a tf.cond whose branches hold a while loop and another cond; TensorFlow's
    GradientTape gradients recorded beside it. Variables got None before (the call ran
    unrecorded) and a watched input was refused."""
    saved = np.load(TF2 / "cond_loop.npz")
    m = sf.load(TF2 / "cond_loop")
    (w,) = m.trainable_variables
    x = sf.constant(saved["in_x"])
    with sf.GradientTape() as tape:
        tape.watch(x)
        y = m.signatures["serving_default"](x=x, flag=np.array(flag))["y"]
        loss = sf.ops.sum(y * saved["weights"])
    np.testing.assert_allclose(y.numpy(), saved[f"out_y_{flag}"], rtol=0, atol=1e-5)
    gx, gw = tape.gradient(loss, [x, w])
    np.testing.assert_allclose(gx.numpy(), saved[f"grad_x_{flag}"], rtol=0, atol=1e-5)
    np.testing.assert_allclose(gw.numpy(), saved[f"grad_w_{flag}"], rtol=0, atol=1e-5)

    @sf.function
    def step(x, flag):  # the signature's loop joins the trace
        with sf.GradientTape() as tape:
            tape.watch(x)
            loss = sf.ops.sum(m.signatures["serving_default"](x=x, flag=flag)["y"] * saved["weights"])
        return loss, tape.gradient(loss, [x, w])

    loss_f, (gx, gw) = step(x, np.array(flag))
    np.testing.assert_allclose(float(loss_f), float(loss), rtol=1e-6)
    np.testing.assert_allclose(gx.numpy(), saved[f"grad_x_{flag}"], rtol=0, atol=1e-5)
    np.testing.assert_allclose(gw.numpy(), saved[f"grad_w_{flag}"], rtol=0, atol=1e-5)


def test_gradients_through_a_keras_lstm_signature_match_finite_differences():
    rec = np.load(TF2 / "lstm.npz")
    (alias,) = [k[3:] for k in rec if k.startswith("in_")]
    m = sf.load(TF2 / "lstm")
    sig = m.signatures["serving_default"]
    kernel = next(v for n, v in m.named_variables().items() if n == "lstm/lstm_cell/kernel")
    x0 = rec[f"in_{alias}"]
    x = sf.constant(x0)
    with sf.GradientTape() as tape:
        tape.watch(x)
        out = sig(**{alias: x})
        y = sf.ops.sum(sf.ops.sin(out["output_0"]))
    np.testing.assert_allclose(out["output_0"].numpy(), rec["out_output_0"], rtol=1e-5, atol=1e-6)
    gx, gk = tape.gradient(y, [x, kernel])

    def loss(value) -> float:
        return float(np.sin(sig(**{alias: value.astype(np.float32)})["output_0"].numpy().astype(np.float64)).sum())

    np.testing.assert_allclose(gx.numpy(), central_difference(loss, x0.astype(np.float64), 1e-2), rtol=2e-2, atol=2e-4)
    base = kernel.numpy()

    def loss_k(value) -> float:
        kernel.assign(value.astype(np.float32))
        return loss(x0)

    want_k = central_difference(loss_k, base.astype(np.float64), 1e-2)
    kernel.assign(base)
    np.testing.assert_allclose(gk.numpy(), want_k, rtol=2e-2, atol=2e-4)


def test_a_saved_python_loop_differentiates_as_the_module(tmp_path):
    rng = np.random.default_rng(0)

    class Loop(sf.Module):
        def __init__(self):
            super().__init__()
            self.w = sf.Variable(rng.normal(size=(3, 3)).astype(np.float32))

        @sf.function(input_signature=[sf.TensorSpec([None, 3], sf.float32)])
        def __call__(self, x):
            _, h = sf.while_loop(lambda i, h: i < 3, lambda i, h: (i + 1, sf.ops.tanh(sf.ops.matmul(h, self.w))),
                                 (sf.constant(0), x))
            return h

    mod = Loop()
    sf.save(mod, tmp_path / "loop")
    loaded = sf.load(tmp_path / "loop")
    x = sf.constant(rng.normal(size=(4, 3)).astype(np.float32))
    grads = []
    for call, w in ((mod, mod.w), (loaded.signatures["serving_default"], loaded.variables[0])):
        with sf.GradientTape() as tape:
            tape.watch(x)
            out = call(x)
            y = sf.ops.sum(sf.ops.square(out if isinstance(out, sf.Tensor) else out["output_0"]))
        grads.append(tape.gradient(y, [x, w]))
    for g, want in zip(grads[1], grads[0]):
        np.testing.assert_allclose(g.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_a_second_derivative_through_a_loaded_loop_is_refused_clearly():
    m = sf.load(TF2 / "lstm")
    x = sf.constant(np.zeros((2, 5, 3), np.float32))
    with sf.GradientTape() as outer:
        outer.watch(x)
        with sf.GradientTape() as inner:
            inner.watch(x)
            y = sf.ops.sum(next(iter(m.signatures["serving_default"](x).values())))
        with pytest.raises(GraphError, match="cannot itself be differentiated"):
            inner.gradient(y, x)


def test_a_signature_called_inside_sf_function_joins_its_trace():
    rec = np.load(TF2 / "conv_swish.npz")
    (alias,) = [k[3:] for k in rec if k.startswith("in_")]
    m = sf.load(TF2 / "conv_swish")
    sig = m.signatures["serving_default"]

    @sf.function
    def step(x):
        with sf.GradientTape() as tape:
            tape.watch(x)
            y = sf.ops.sum(sf.ops.sin(sig(**{alias: x})["output_0"]))
        return y, tape.gradient(y, [x, m.trainable_variables])

    x = sf.constant(rec[f"in_{alias}"])
    y, (gx, gv) = step(x)
    with sf.GradientTape() as tape:
        tape.watch(x)
        y_eager = sf.ops.sum(sf.ops.sin(sig(**{alias: x})["output_0"]))
    want = tape.gradient(y_eager, [x, *m.trainable_variables])
    np.testing.assert_allclose(float(y), float(y_eager), rtol=1e-6)
    for g, w in zip([gx, *gv], want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-7)
    rec = np.load(TF2 / "lstm.npz")
    lstm = sf.load(TF2 / "lstm")

    @sf.function
    def loop(x):  # a signature with loops joins the trace too (was refused)
        return lstm.signatures["serving_default"](x)

    (alias,) = [k[3:] for k in rec if k.startswith("in_")]
    np.testing.assert_allclose(loop(rec[f"in_{alias}"])["output_0"].numpy(), rec["out_output_0"], rtol=1e-5, atol=1e-6)


def test_eager_fine_tuning_through_a_loaded_loop_reuses_its_session_and_matches_a_function():
    """Each eager step's gradient graph has the same structure: its Session is built once, the
    step's inputs and variable values fed (a Session per step cost seconds). The curve equals
    the same loop in sf.function."""
    from specflow.api import tape as tape_module

    x = np.random.default_rng(0).normal(size=(2, 5, 3)).astype(np.float32)
    curves = []
    for in_function in (False, True):
        m = sf.load(TF2 / "lstm")
        sig, opt = m.signatures["serving_default"], sf.optimizers.SGD(0.05)

        def step(x, m=m, sig=sig, opt=opt):
            with sf.GradientTape() as tape:
                loss = sf.reduce_sum(sf.square(sig(inputs=x)["output_0"]))
            opt.apply_gradients(zip(tape.gradient(loss, m.trainable_variables), m.trainable_variables))
            return loss

        step = sf.function(step) if in_function else step
        curves.append([float(step(x)) for _ in range(3)])
        if not in_function:
            sessions = list(tape_module._SESSIONS.values())
            step(x)
            assert list(tape_module._SESSIONS.values())[-1] is sessions[-1]
    np.testing.assert_allclose(curves[0], curves[1], rtol=1e-5)
    assert curves[0][-1] < curves[0][0]


def test_an_assign_after_a_loaded_loop_in_a_function_waits_for_its_reads():
    """Inside sf.function the loop's reads sit in frames; an assign after the call must still
    come after them (it did not wait: the loop could read the new value)."""
    saved = np.load(TF2 / "cond_loop.npz")
    m = sf.load(TF2 / "cond_loop")
    (w,) = m.trainable_variables
    base = w.numpy()

    @sf.function
    def call_then_zero(x):
        y = m.signatures["serving_default"](x=x, flag=np.array(True))["y"]
        w.assign(sf.zeros_like(w))
        return y

    for _ in range(5):
        w.assign(base)
        np.testing.assert_allclose(call_then_zero(saved["in_x"]).numpy(), saved["out_y_True"], rtol=0, atol=1e-5)
        assert not w.numpy().any()
