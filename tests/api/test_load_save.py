"""sf.load of every models/*.yaml (signatures vs Session.run on the spec's own graph, the training
step), save -> load round trips for loaded specs and Python modules, `specflow predict` on a
Python-built model, and sf.wrap_function."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import specflow as sf
from specflow.api.function import devices_needed
from specflow.errors import ExportError, GraphError
from specflow.graph.builder import GraphBuilder
from specflow.runtime.session import Session, SessionConfig

MODELS = sorted(Path(__file__).resolve().parents[2].joinpath("models").glob("*.yaml"))
RNG = np.random.default_rng(3)


def sample(spec, batch=3):
    shape = [batch if d is None else d for d in spec.shape.dims]
    if spec.dtype.is_floating:
        return RNG.normal(size=shape).astype(spec.dtype.numpy)
    return np.zeros(shape, spec.dtype.numpy)


@pytest.mark.parametrize("path", MODELS, ids=[p.stem for p in MODELS])
def test_load_spec_signatures_match_session_run(path):
    m = sf.load(path)
    spec = sf.load_spec(path)
    named = m.named_variables()
    # The reference: the spec's graph in its own Session, its variables assigned the module's
    # values (ops such as ResourceGather read the variable itself, not a fed read).
    b = GraphBuilder(spec.graph_def)
    assigns, values = [], {}
    for v in spec.variables:
        ph = b.add_op("Placeholder", attrs={"dtype": v.dtype, "shape": v.shape}, name=f"ref_value/{v.name}").name
        assigns.append(b.add_op("AssignVariableOp", [v.handle, ph], name=f"ref_assign/{v.name}").name)
        values[ph] = named[v.name].numpy()
    with Session(b.graph_def, SessionConfig(devices=devices_needed(spec.graph_def))) as session:
        if assigns:
            session.run([], values, targets=assigns)
        for name, sig in spec.signatures.items():
            feeds = {alias: sample(s) for alias, (_, s) in sig["inputs"].items()}
            got = m.signatures[name](**feeds)
            want = session.run({a: t for a, (t, _) in sig["outputs"].items()},
                               {t: feeds[a] for a, (t, _) in sig["inputs"].items()})
            assert set(got) == set(want)
            for alias in want:
                np.testing.assert_allclose(got[alias].numpy(), want[alias], rtol=1e-5, atol=1e-6)
    assert all(isinstance(v, sf.Variable) for v in m.variables)
    m.close()


def test_loaded_spec_trains_and_its_variables_are_shared():
    m = sf.load(MODELS[[p.stem for p in MODELS].index("digits_mlp")])
    data = np.load(Path(sf.__file__).parent / "data" / "digits.npz")
    x, y = (data["images"][:256] / 16).astype(np.float32), data["labels"][:256].astype(np.int64)
    losses = [float(m.train_step(images=x[i % 4 * 64:][:64], labels=y[i % 4 * 64:][:64])) for i in range(40)]
    assert losses[-1] < losses[0] * 0.7
    named = m.named_variables()
    assert int(named["global_step"].numpy()) == 40
    kernel = named["hidden/kernel"]
    before = m.serving_default(images=x[:2])["probabilities"].numpy()
    kernel.assign(np.zeros(kernel.shape.as_list(), np.float32))  # an eager update the Session sees
    after = m.serving_default(images=x[:2])["probabilities"].numpy()
    assert not np.allclose(before, after)
    with pytest.raises(ExportError, match="missing labels"):
        m.train_step(images=x[:2])


def test_save_load_round_trip_of_a_loaded_spec(tmp_path):
    m = sf.load(MODELS[[p.stem for p in MODELS].index("digits_mlp")])
    x = RNG.normal(size=(4, 64)).astype(np.float32)
    m.train_step(images=x, labels=np.arange(4, dtype=np.int64))
    sf.save(m, tmp_path / "export")
    back = sf.load(tmp_path / "export")
    np.testing.assert_allclose(back.serving_default(images=x)["probabilities"].numpy(),
                               m.serving_default(images=x)["probabilities"].numpy(), rtol=1e-6)
    np.testing.assert_array_equal(back.named_variables()["hidden/kernel"].numpy(),
                                  m.named_variables()["hidden/kernel"].numpy())


class Regressor(sf.Module):
    def __init__(self):
        super().__init__()
        self.w = sf.Variable(np.zeros((3, 1), np.float32), name="w")
        self.b = sf.Variable(np.zeros(1, np.float32), name="b")

    @sf.function(input_signature=[sf.TensorSpec([None, 3], "float32")])
    def predict(self, x):
        return {"y": sf.ops.mat_mul(x, self.w) + self.b}

    @sf.function
    def train(self, x, y):
        with sf.GradientTape() as tape:
            loss = sf.ops.mean(sf.ops.square(self.predict(x)["y"] - y))
        for v, g in zip((self.w, self.b), tape.gradient(loss, [self.w, self.b])):
            v.assign_sub(0.1 * g)
        return loss


def test_python_module_trains_saves_and_predicts(tmp_path):
    model = Regressor()
    x = RNG.normal(size=(64, 3)).astype(np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.25
    for _ in range(200):
        loss = model.train(x, y)
    assert float(loss) < 1e-3
    sf.save(model, tmp_path / "reg")  # the one sf.function with an input_signature
    back = sf.load(tmp_path / "reg")
    assert sorted(back.named_variables()) == ["b", "w"]
    np.testing.assert_allclose(back.serving_default(x=x[:5])["y"].numpy(), model.predict(x[:5])["y"].numpy(),
                               rtol=1e-6)
    np.save(tmp_path / "x.npy", x[:5])
    run = subprocess.run([sys.executable, "-m", "specflow.cli", "predict", str(tmp_path / "reg"), "-i",
                          f"x={tmp_path / 'x.npy'}", "-o", str(tmp_path / "out.npz")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["y"], model.predict(x[:5])["y"].numpy(), rtol=1e-6)


def test_save_with_named_concrete_signatures_shares_variables(tmp_path):
    model = Regressor()
    model.w.assign(np.ones((3, 1), np.float32))
    double = sf.function(lambda x: {"z": model.predict(x)["y"] * 2})
    sigs = {"serving_default": model.predict,
            "double": double.get_concrete_function(sf.TensorSpec([None, 3], "float32", name="x"))}
    sf.save(model, tmp_path / "two", signatures=sigs)
    back = sf.load(tmp_path / "two")
    x = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(back.signatures["double"](x)["z"].numpy(), [[6.0], [6.0]])
    assert len(back.variables) == 2
    with pytest.raises(ExportError, match="without an input_signature"):
        sf.save(model, tmp_path / "bad", signatures=model.train)


def test_saved_python_module_loads_in_tensorflow(tmp_path):
    tf = pytest.importorskip("tensorflow")
    model = Regressor()
    model.w.assign(np.arange(3, dtype=np.float32).reshape(3, 1))
    sf.save(model, tmp_path / "tf")
    loaded = tf.saved_model.load(str(tmp_path / "tf"))
    x = np.ones((2, 3), np.float32)
    out = loaded.signatures["serving_default"](x=tf.constant(x))
    np.testing.assert_allclose(out["y"].numpy(), model.predict(x)["y"].numpy())


def test_wrap_function():
    b = GraphBuilder()
    x = b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [None]}, name="x").name
    b.add_op("Square", [x], name="y")
    b.add_op("Neg", ["y"], name="z")
    f = sf.wrap_function(b.graph_def, feeds=["x"], fetches=["y", "z"])
    y, z = f(np.array([1.0, 2.0], np.float32))
    np.testing.assert_array_equal(y.numpy(), [1, 4])
    np.testing.assert_array_equal(z.numpy(), [-1, -4])
    g = f.prune(feeds=["y"], fetches="z")  # fed mid-graph: Square does not run
    np.testing.assert_array_equal(g(y=np.array([3.0], np.float32)).numpy(), [-3])
    with pytest.raises(GraphError, match="no input 'w'"):
        g(w=1.0)
    spec = MODELS[[p.stem for p in MODELS].index("digits_mlp")]
    probs = sf.wrap_function(spec, feeds=["images"], fetches="probs")(np.zeros((2, 64), np.float32))
    np.testing.assert_allclose(probs.numpy().sum(1), [1, 1], rtol=1e-5)


def test_spec_function_calls_are_callables_with_the_models_variables():
    m = sf.load(MODELS[[p.stem for p in MODELS].index("residual_mlp")])
    assert sorted(m.functions) == ["block1", "block2"]
    h = RNG.normal(size=(3, 64)).astype(np.float32)
    named = m.named_variables()

    def dense(x, scope):
        return x @ named[f"{scope}/kernel"].numpy() + named[f"{scope}/bias"].numpy()

    want = np.maximum(h + dense(np.maximum(dense(h, "block1/inner"), 0), "block1/proj"), 0)
    np.testing.assert_allclose(m.block1(h).numpy(), want, rtol=1e-5, atol=1e-6)
    # block2 is the same function with activation tanh
    want2 = np.maximum(h + dense(np.tanh(dense(h, "block2/inner")), "block2/proj"), 0)
    np.testing.assert_allclose(m.block2(x=h).numpy(), want2, rtol=1e-5, atol=1e-6)


def test_wrap_function_of_a_tensorflow_graph_file(tmp_path):
    from specflow.io.tf_graph import to_tf_graph_def

    b = GraphBuilder()
    x = b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [None, 2]}, name="x").name
    w = b.const(np.array([[1.0], [2.0]], np.float32), name="w")
    b.add_op("MatMul", [x, w], name="y")
    (tmp_path / "frozen.pb").write_bytes(to_tf_graph_def(b.graph_def).SerializeToString())
    f = sf.wrap_function(tmp_path / "frozen.pb", feeds=["x:0"], fetches="y:0")
    np.testing.assert_allclose(f(np.array([[1.0, 1.0]], np.float32)).numpy(), [[3.0]])


def test_a_saved_signatures_effects_run_when_it_is_called_after_loading(tmp_path):
    """An assignment the outputs do not read still runs, before the outputs, as a call of the
    whole function does in TensorFlow (sf.load, predict and TF1-style servers run the signature's
    tensors, not a call op)."""
    m = sf.Module()
    m.c = sf.Variable(0.0)

    @sf.function(input_signature=[sf.TensorSpec([None], sf.float32)])
    def g(v):
        m.c.assign_add(1.0)
        return v + m.c

    m.g = g
    sf.save(m, tmp_path / "m", signatures={"serving_default": g})
    loaded = sf.load(tmp_path / "m")
    np.testing.assert_allclose(loaded.g(np.ones(2, np.float32)).numpy(), [2.0, 2.0])
    assert loaded.c.numpy() == 1.0
    out = loaded.signatures["serving_default"](v=np.ones(2, np.float32))["output_0"]
    np.testing.assert_allclose(out.numpy(), [3.0, 3.0])
    assert loaded.c.numpy() == 2.0


class TwoMethods(sf.Module):
    def __init__(self):
        super().__init__()
        self.w = sf.Variable(2.0)

    @sf.function(input_signature=[sf.TensorSpec([None], sf.float32)])
    def __call__(self, x):
        return x * self.w

    @sf.function(input_signature=[sf.TensorSpec([None], sf.float32)])
    def double(self, x):
        return x * self.w * 2.0


def test_save_without_signatures_chooses_as_tensorflow(tmp_path):
    """No signatures=: TF 2.21 makes serving_default of the root's one input_signature function
    (``__call__`` or not; a function without input_signature does not count); with two or more
    it saves no signature, and the methods still load (before: sf.save refused)."""
    x = np.array([1.0, 3.0], np.float32)
    sf.save(TwoMethods(), tmp_path / "two")
    back = sf.load(tmp_path / "two")
    assert list(back.signatures) == []
    np.testing.assert_allclose(back(x).numpy(), [2.0, 6.0])
    np.testing.assert_allclose(back.double(x).numpy(), [4.0, 12.0])

    class OnlyDouble(sf.Module):
        def __init__(self):
            super().__init__()
            self.w = sf.Variable(2.0)
            self.plain = sf.function(lambda x: x + self.w)  # no input_signature: not a candidate

        double = TwoMethods.double

    sf.save(OnlyDouble(), tmp_path / "one")
    back = sf.load(tmp_path / "one")
    assert list(back.signatures) == ["serving_default"]
    np.testing.assert_allclose(back.signatures["serving_default"](x=x)["output_0"].numpy(), [4.0, 12.0])
    sf.save(sf.Module(), tmp_path / "none")  # nothing to serve: saved all the same, as TF does
    assert list(sf.load(tmp_path / "none").signatures) == []


def test_saved_module_without_signatures_loads_in_tensorflow(tmp_path):
    tf = pytest.importorskip("tensorflow")
    sf.save(TwoMethods(), tmp_path / "two")
    loaded = tf.saved_model.load(str(tmp_path / "two"))
    np.testing.assert_allclose(loaded(tf.constant([1.0])).numpy(), [2.0])
    np.testing.assert_allclose(loaded.double(tf.constant([1.0])).numpy(), [4.0])
