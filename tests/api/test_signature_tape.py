"""A loaded model's signature under a GradientTape: gradients for its inputs and variables (a
Keras SavedModel, a spec), against finite differences and TensorFlow's recorded outputs; a
signature with loops is refused when its input is watched."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import specflow as sf
from specflow.errors import ExportError

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


def test_a_signature_with_loops_is_refused_for_a_watched_input():
    rec = np.load(TF2 / "lstm.npz")
    (alias,) = [k[3:] for k in rec if k.startswith("in_")]
    m = sf.load(TF2 / "lstm")
    x = sf.constant(rec[f"in_{alias}"])
    with sf.GradientTape() as tape:
        out = m.signatures["serving_default"](**{alias: x})  # not watched: runs as before
        tape.watch(x)
        with pytest.raises(ExportError, match="loops or conds .*Enter"):
            m.signatures["serving_default"](**{alias: x})
    np.testing.assert_allclose(out["output_0"].numpy(), rec["out_output_0"], rtol=1e-5, atol=1e-6)


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
    lstm = sf.load(TF2 / "lstm")

    @sf.function
    def loop(x):
        return lstm.signatures["serving_default"](x)

    with pytest.raises(ExportError, match="cannot join an sf.function"):
        loop(np.zeros((2, 5, 3), np.float32))
