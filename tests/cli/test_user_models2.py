"""Thirteen models users wrote as specs (tests/cli/data/user_models2: a BiGRU text classifier over
a masked embedding, a transformer encoder block, a MobileNet block, a ResNet block, Conv1D with
1-D pooling, two inputs and two weighted losses, a conv autoencoder, a normalized Huber regression
on a decayed rate, L1/L2 penalties, sample and class weights, a warmed-up cosine rate with
Nesterov momentum, a stacked-LSTM tagger on AMSGrad), each against the same model in Keras 3:
from the same initial weights, on the same batches, the loss of every step, the final weights,
the held-out loss and the exported model's predictions. Keras's numbers are fixtures written by
scripts/make_user_models2_fixture.py (which also checks the SavedModels in TensorFlow)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from .cli_helpers import cli, ok, one_error
from .user_models2_run import DATA, train

MODELS = sorted(p.name.removesuffix("_keras.npz") for p in DATA.glob("*_keras.npz"))
# Adam-family steps divide by sqrt(v): a gradient near zero (the attention's key bias, whose
# exact gradient is 0) turns float32 rounding into step-sized differences.
LOOSE = {"transformer_block": 5e-4, "class_weighted": 5e-5}


def fixture(name: str) -> dict[str, np.ndarray]:
    return dict(np.load(DATA / f"{name}_keras.npz"))


def dropouts_off(keras: dict) -> list[str]:
    return [f"nodes.{d}.rate=0.0" for d in keras["no_dropout"].tolist()]


def test_every_model_has_its_fixture():
    assert len(MODELS) >= 12
    assert sorted(p.stem for p in DATA.glob("*.yaml")) == MODELS


@pytest.mark.parametrize("name", MODELS)
def test_trains_as_keras_does(name, tmp_path):
    keras = fixture(name)
    init, losses, final, metrics = train(name, tmp_path / "run", dropouts_off(keras))
    tol = LOOSE.get(name, 1e-5)
    for var, value in init.items():  # the start Keras was given: specflow's initializers
        np.testing.assert_allclose(value, keras[f"init/{var}"], rtol=1e-6, atol=1e-7, err_msg=var)
    np.testing.assert_allclose(losses, keras["losses"], rtol=tol, atol=tol)
    assert sorted(final) == sorted(k.removeprefix("final/") for k in keras if k.startswith("final/"))
    for var, value in final.items():
        want = keras[f"final/{var}"]
        np.testing.assert_allclose(value, want, rtol=tol, atol=tol * max(1.0, np.abs(want).max()), err_msg=var)
    np.testing.assert_allclose(metrics["loss"], keras["test_loss"], rtol=max(tol, 2e-6))


def inputs_args(tmp_path: Path, keras: dict) -> list[str]:
    args = []
    for key, value in keras.items():
        if key.startswith("probe/"):
            name = key.removeprefix("probe/")
            np.save(tmp_path / f"{name}.npy", value)
            args += ["--input", f"{name}={tmp_path / (name + '.npy')}"]
    return args


def check_predictions(preds: dict, keras: dict, name: str) -> None:
    tol = LOOSE.get(name, 1e-5)
    outputs = [k.removeprefix("pred/") for k in keras if k.startswith("pred/")]
    assert sorted(preds) == sorted(outputs)
    for out in outputs:
        np.testing.assert_allclose(preds[out], keras[f"pred/{out}"], rtol=tol * 10, atol=tol * 10, err_msg=out)


@pytest.mark.parametrize("name", MODELS)
def test_the_cli_trains_evaluates_exports_and_predicts_it(name, tmp_path):
    keras = fixture(name)
    spec, run, export = DATA / f"{name}.yaml", tmp_path / "run", tmp_path / "export"
    sets = [a for s in dropouts_off(keras) for a in ("--set", s)]
    assert "ok" in ok("validate", spec).lower()
    out = ok("train", spec, "--logdir", run, *sets)
    steps = len(keras["losses"])
    assert f"0 → {steps} (steps)" in out and f"model.ckpt-{steps}" in out, out
    last = float(re.search(r"last loss\s*│\s*([-\d.e]+)", out).group(1))  # 4 significant digits
    np.testing.assert_allclose(last, keras["losses"][-1], rtol=1e-3)
    shown = json.loads(ok("eval", spec, "--logdir", run, "--format", "json"))
    np.testing.assert_allclose(shown["metrics"]["loss"], keras["test_loss"], rtol=max(LOOSE.get(name, 0), 2e-6))
    ok("export", spec, "--logdir", run, "--out", export)
    ok("predict", export, *inputs_args(tmp_path, keras), "--out", tmp_path / "preds.npz")
    check_predictions(dict(np.load(tmp_path / "preds.npz")), keras, name)


def test_a_user_runs_it_from_a_shell(tmp_path):
    """The same as a user types it: `python -m specflow ...` in a subprocess, exit codes 0 and
    no traceback; the transformer's dropouts train as written (not compared: random)."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    spec = DATA / "transformer_block.yaml"

    def sh(*args):
        r = subprocess.run([sys.executable, "-m", "specflow", *map(str, args)], capture_output=True, text=True,
                           env=env, cwd=tmp_path, timeout=300)
        assert r.returncode == 0 and "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
        return r.stdout

    sh("validate", spec)
    sh("train", spec, "--logdir", "run")
    sh("eval", spec, "--logdir", "run")
    sh("export", spec, "--logdir", "run", "--out", "export")
    keras = fixture("transformer_block")
    sh("predict", "export", *inputs_args(tmp_path, keras), "--out", "p.npz")
    probs = np.load(tmp_path / "p.npz")["probs"]
    assert probs.shape == keras["pred/probs"].shape
    np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=1e-5)


def test_constraints_hold_after_training(tmp_path):
    """Keras's constraints were refused (`kernel_constraint: unknown field`); they now project
    each variable after every update, as Keras's: the fixture above compares the numbers, this
    that they bind (the initial weights break every one of them)."""
    init, _, final, _ = train("constrained_mlp", tmp_path / "run")
    row_norms = np.linalg.norm(final["emb/embeddings"], axis=1)
    assert np.linalg.norm(init["emb/embeddings"], axis=1).max() > 0.06
    assert row_norms.max() <= 0.06 * (1 + 1e-5)
    np.testing.assert_allclose(np.linalg.norm(final["logits/kernel"], axis=0), 1.0, rtol=1e-5)
    assert (final["h/bias"] >= 0).all() and (final["h/bias"] > 0).any()
    col = np.linalg.norm(final["h/kernel"], axis=0)
    before = np.linalg.norm(init["h/kernel"], axis=0)
    assert not np.allclose(col, before, rtol=1e-2)


BAD = """
specflow: 1
name: bad
inputs:
  x: {dtype: float32, shape: [null, 6, 2]}
  y: {dtype: int64, shape: [null]}
nodes:
  h: {layer: dense, inputs: [x], units: 3, KEY}
  p: {layer: max_pool1d, inputs: [h], POOL}
  logits: {layer: dense, inputs: [{op: Reshape, inputs: [p], shape: [-1, 9]}], units: 2}
  loss: {op: Mean, inputs: [{op: SparseSoftmaxCrossEntropyWithLogits, inputs: [logits, y]}]}
train:
  loss: loss
  optimizer: {OPT}
  data: {source: {npz: d.npz}, feeds: {x: x, y: y}, batch_size: 4}
  steps: 1
"""


@pytest.mark.parametrize("key, pool, opt, fragments", [
    ("kernel_constraint: max_norm", "pool_size: 2", "adam: {amsgrad: true}", None),
    ("kernel_constraint: {max_norm: {max_value: 2, axes: 0}}", "pool_size: 2", "adam: {}",
     ["nodes.h.kernel_constraint", "max_norm has no parameter 'axes'", "did you mean 'axis'"]),
    ("kernel_constraint: MaxNorm", "pool_size: 2", "adam: {}", None),  # Keras's class name
    ("kernel_constraint: max_nrom", "pool_size: 2", "adam: {}", ["unknown constraint 'max_nrom'", "'max_norm'"]),
    ("bias_constraint: {non_neg: {x: 1}}", "pool_size: 2", "adam: {}", ["non_neg has no parameter 'x'"]),
    ("use_bias: true", "pool_size: 7", "adam: {}", ["nodes.p", "max_pool1d", "dimension of 0"]),
    ("use_bias: true", "pool_size: 2", "adam: {amsgrad: 2}", ["train.optimizer.adam.amsgrad", "true or false"]),
    ("use_bias: true", "pool_size: 2", "adam: {clipnorm: 1.0}", ["train.optimizer.adam.clipnorm", "train.clip_norm"]),
    ("use_bias: true", "pool_size: 2", "rmsprop: {global_clipnorm: 1.0}", ["train.clip_global_norm"]),
])
def test_the_new_keys_validate_and_say_what_is_wrong(tmp_path, key, pool, opt, fragments):
    np.savez(tmp_path / "d.npz", x=np.ones((8, 6, 2), np.float32), y=np.zeros(8, np.int64))
    spec = tmp_path / "bad.yaml"
    spec.write_text(BAD.replace("KEY", key).replace("POOL", pool).replace("OPT", opt))
    if fragments is None:
        ok("validate", spec)
        ok("train", spec, "--logdir", tmp_path / "run")
    else:
        one_error(cli("validate", spec), *fragments)


def test_max_pool1d_is_keras_pooling_on_steps():
    """Keras's MaxPooling1D / AveragePooling1D (same padding averages the steps inside only)."""
    from tests.schema.layer_harness import LayerRun

    x = np.random.default_rng(0).normal(size=(2, 7, 3)).astype(np.float32)
    got = LayerRun("max_pool1d", {"x": x}, pool_size=2).run()[0]
    np.testing.assert_array_equal(got, np.maximum(x[:, 0:6:2], x[:, 1:7:2]))
    got = LayerRun("avg_pool1d", {"x": x}, pool_size=3, strides=2, padding="same").run()[0]
    want = np.stack([x[:, max(0, 2 * i - 1):2 * i + 2].mean(1) for i in range(4)], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_normalization_is_keras_normalization_with_given_statistics(tmp_path):
    """`Normalization(mean=..., variance=...)` had no layer (the spec wrote Sub and RealDiv)."""
    from tests.schema.layer_harness import LayerRun

    x = np.random.default_rng(1).normal(size=(3, 2, 4)).astype(np.float32) * 5 + 2
    mean, var = [1.0, 2.0, 3.0, 4.0], [4.0, 0.25, 1.0, 9.0]
    got = LayerRun("normalization", {"x": x}, mean=mean, variance=var).run()[0]
    np.testing.assert_allclose(got, (x - np.array(mean)) / np.sqrt(var), rtol=1e-6)
    got = LayerRun("normalization", {"x": x}, mean=[1.0, 2.0], variance=[4.0, 0.0], axis=1).run()[0]
    want = (x - np.array([1.0, 2.0])[:, None]) / np.maximum(np.sqrt([4.0, 0.0]), 1e-7)[:, None]
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=1e-6)
    got = LayerRun("normalization", {"x": x}, mean=2.0, variance=4.0, invert=True).run()[0]
    np.testing.assert_allclose(got, 2.0 + x * 2.0, rtol=1e-6)
    np.savez(tmp_path / "d.npz", x=np.ones((8, 6, 2), np.float32), y=np.zeros(8, np.int64))
    spec = tmp_path / "bad.yaml"
    for norm, fragments in [("mean: [0.0, 1.0], variance: [1.0]", ["nodes.h", "mean and variance differ in length"]),
                            ("mean: [0.0, 1.0, 2.0], variance: [1.0, 1.0, 1.0]", ["3 means for axis -1 of size 2"]),
                            ("mean: 0.0, variance: -1.0", ["a variance is >= 0"])]:
        spec.write_text(BAD.replace("layer: dense, inputs: [x], units: 3, KEY", f"layer: normalization, inputs: [x], {norm}")
                        .replace("POOL", "pool_size: 2").replace("OPT", "adam: {}")
                        .replace("shape: [-1, 9]", "shape: [-1, 6]"))
        one_error(cli("validate", spec), *fragments)


def test_cosine_warmup_target_is_keras_cosine_decay():
    """Keras's `CosineDecay(initial, decay_steps, alpha, warmup_target, warmup_steps)` warms up
    from `initial` (not 0) to the target: `warmup_target` was refused ("did you mean
    'warmup_steps'")."""
    from specflow.graph.builder import GraphBuilder
    from specflow.runtime.session import Session
    from specflow.train.schedules import learning_rate

    keras = np.load(DATA / "keras_schedules.npz")
    for k, (initial, decay, alpha, target, warm) in enumerate(keras["configs"]):
        spec = {"schedule": "cosine", "initial": float(initial), "decay_steps": int(decay), "alpha": float(alpha),
                "warmup_target": float(target), "warmup_steps": int(warm)}
        b = GraphBuilder()
        step = b.add_op("Placeholder", attrs={"dtype": "int64", "shape": []}, name="step").name
        lr = learning_rate(b, spec, step)
        session = Session(b.graph_def)
        got = [session.run(lr, feeds={step: np.int64(s)}) for s in keras["steps"]]
        np.testing.assert_allclose(got, keras[f"cosine_{k}"], rtol=1e-6, atol=1e-8, err_msg=str(spec))
