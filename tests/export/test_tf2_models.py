"""TF2 models written by TensorFlow 2.21 (scripts/make_tf_fixtures.py; tests/io/data/tf2/) load and
compute TensorFlow's recorded outputs to 1e-4: Keras LSTM/GRU/Bidirectional SavedModels (While
loops carrying TensorLists), a conv net whose object graph has ``captured_tensor`` nodes, and
frozen GraphDefs as .pb and .pbtxt, through ``load_model`` and the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from specflow.cli import app
from specflow.errors import ExportError
from specflow.export.loader import load_model
from specflow.graph.control_flow import find_while_loops
from specflow.io.tensor_bundle import read_bundle
from specflow.io.tf_object_graph import object_graph_variables
from specflow.ops.registry import has_op

TF2 = Path(__file__).resolve().parents[1] / "io" / "data" / "tf2"
ATOL = 1e-4

# Ops another change adds; a model needing one runs once they are registered.
NEEDS = {"bidirectional": ["ReverseV2"]}


def _needs(name: str):
    missing = [op for op in NEEDS.get(name, []) if not has_op(op)]
    return pytest.mark.skipif(bool(missing), reason=f"{name} needs op(s) {', '.join(missing)}")


def recorded(name: str) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    saved = np.load(TF2 / f"{name}.npz")
    return ({k[3:]: saved[k] for k in saved.files if k.startswith("in_")},
            {k[4:]: saved[k] for k in saved.files if k.startswith("out_")})


@pytest.mark.parametrize("name", [pytest.param(n, marks=_needs(n)) for n in ("lstm", "gru", "bidirectional")])
def test_keras_rnn_savedmodels_match_tensorflow(name):
    inputs, want = recorded(name)
    with load_model(TF2 / name) as model:
        loops = find_while_loops(model.graph_def)  # each RNN layer's While is now a loop frame
        assert len(loops) == {"lstm": 2, "gru": 1, "bidirectional": 2}[name]
        assert not {n.op for n in model.graph_def} & {"While", "StatelessWhile", "StatefulPartitionedCall"}
        got = model.run("serving_default", inputs)
    assert got.keys() == want.keys()
    for k in want:
        assert got[k].shape == want[k].shape
        np.testing.assert_allclose(got[k], want[k], rtol=0, atol=ATOL)


def test_captured_tensors_do_not_stop_the_variables_restoring():
    """conv_swish's object graph has captured_tensor nodes the checkpoint's lacks (8 objects more):
    variables are matched by walking both from the root, not by position."""
    inputs, want = recorded("conv_swish")
    with load_model(TF2 / "conv_swish") as model:
        kinds = [n.WhichOneof("kind") for n in model.meta_graph.object_graph_def.nodes]
        assert kinds.count("captured_tensor") > 0
        values = object_graph_variables(model.meta_graph, read_bundle(str(TF2 / "conv_swish" / "variables" / "variables")))
        assert len(values) == kinds.count("variable") == 4
        got = model.run("serving_default", inputs)
    np.testing.assert_allclose(got["output_0"], want["output_0"], rtol=0, atol=ATOL)


@pytest.mark.parametrize("file", ["frozen_cnn.pb", "frozen_cnn.pbtxt", "frozen_lstm.pb"])
def test_frozen_graph_defs_load_as_one_signature(file):
    inputs, want = recorded(file.split(".")[0])
    with load_model(TF2 / file) as model:
        sig = model.signatures["serving_default"]
        assert list(sig.inputs) == ["x"] and list(sig.outputs) == ["Identity"]  # unused Placeholders left out
        assert model.meta_graph is None and model.tags == []
        got = model.run("serving_default", {"x": inputs["x:0"]})
    np.testing.assert_allclose(got["Identity"], want["Identity:0"], rtol=0, atol=ATOL)


def test_a_saved_model_pb_path_loads_its_directory():
    inputs, want = recorded("gru")
    with load_model(TF2 / "gru" / "saved_model.pb") as model:
        got = model.run("serving_default", inputs)
    np.testing.assert_allclose(got["output_0"], want["output_0"], rtol=0, atol=ATOL)


def test_bad_graph_files_are_one_clear_error(tmp_path):
    truncated = tmp_path / "cut.pb"
    truncated.write_bytes((TF2 / "frozen_cnn.pb").read_bytes()[:100])
    with pytest.raises(ExportError, match=r"not a TensorFlow GraphDef \(binary protobuf\)") as info:
        load_model(truncated)
    assert str(truncated) in info.value.format()
    text = tmp_path / "bad.pbtxt"
    text.write_text('node { name: "x" op: "Placeholder" \n bogus: 1 }\n')
    with pytest.raises(ExportError, match=r"not a text GraphDef: 2:2 : .*bogus"):
        load_model(text)
    with pytest.raises(ExportError, match="no such directory or GraphDef file"):
        load_model(tmp_path / "missing")
    with pytest.raises(ExportError, match="no such file") as info:
        load_model(tmp_path / "missing.pb")
    assert info.value.format().count("missing.pb") == 1  # the path once, not "missing.pb: missing.pb: ..."
    unknown = tmp_path / "unknown.pbtxt"  # its one sink's op unknown: was "every node's output is read"
    unknown.write_text('node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }\n'
                       'node { name: "y" op: "NoSuchOp" input: "x" }\n')
    with pytest.raises(ExportError, match=r"uses op 'NoSuchOp' \(node 'y'\), which specflow does not support"):
        load_model(unknown)


runner = CliRunner()


def test_cli_predict_inspect_and_run_take_a_graph_def(tmp_path):
    inputs, want = recorded("frozen_cnn")
    np.save(tmp_path / "x.npy", inputs["x:0"])
    out = tmp_path / "out.npz"
    r = runner.invoke(app, ["predict", str(TF2 / "frozen_cnn.pb"), "-i", f"x={tmp_path / 'x.npy'}", "-o", str(out)])
    assert r.exit_code == 0, r.output
    np.testing.assert_allclose(np.load(out)["Identity"], want["Identity:0"], rtol=0, atol=ATOL)
    r = runner.invoke(app, ["run", str(TF2 / "frozen_cnn.pbtxt"), "--fetch", "Identity", "--feed",
                            f"x={tmp_path / 'x.npy'}", "-o", str(out)])
    assert r.exit_code == 0, r.output
    np.testing.assert_allclose(np.load(out)["Identity"], want["Identity:0"], rtol=0, atol=ATOL)
    r = runner.invoke(app, ["inspect", str(TF2 / "frozen_cnn.pb"), "--format", "json"])
    assert r.exit_code == 0, r.output
    assert '"kind": "GraphDef"' in r.output and '"tensor": "x:0"' in r.output
    r = runner.invoke(app, ["validate", str(TF2 / "frozen_cnn.pb")])
    assert r.exit_code == 1 and "is a TensorFlow GraphDef, not a spec" in r.output


def test_cli_run_fetches_any_tensor_of_a_saved_model(tmp_path):
    inputs, want = recorded("lstm")
    np.save(tmp_path / "x.npy", inputs["inputs"])
    r = subprocess.run([sys.executable, "-m", "specflow.cli", "run", str(TF2 / "lstm"), "--fetch",
                        "StatefulPartitionedCall:0", "--feed", f"serving_default_inputs={tmp_path / 'x.npy'}",
                        "-o", str(tmp_path / "out.npz")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["StatefulPartitionedCall:0"], want["output_0"],
                               rtol=0, atol=ATOL)
    r = runner.invoke(app, ["run", str(TF2 / "lstm"), "--fetch", "nope:0"])
    assert r.exit_code == 1 and "has no tensor 'nope:0'" in r.output


def test_gradients_through_a_keras_lstm_match_finite_differences():
    """Training through a loaded TF2 LSTM: d loss / d inputs (TensorLists through two stacked
    loops) and d loss / d each variable (read through resource loop vars, summed over the
    iterations), against central differences in float32."""
    from specflow.export.importer import _closure
    from specflow.graph.builder import GraphBuilder
    from specflow.graph.graph_def import GraphDef, NodeDef
    from specflow.train.gradients import gradients

    inputs, want = recorded("lstm")
    x = inputs["inputs"]
    with load_model(TF2 / "lstm") as model:
        sig = model.signatures["serving_default"]
        xin, out = sig.inputs["inputs"][0], sig.outputs["output_0"][0]
        b = GraphBuilder(_closure(model.graph_def, [out], {xin.split(":")[0]}))
        with b.name_scope("check"):
            w = b.const(np.linspace(0.5, 1.5, want["output_0"].size, dtype=np.float32).reshape(want["output_0"].shape))
            loss = b.add_op("Sum", [b.add_op("Mul", [out, w]).name, b.const(np.array([0, 1], np.int32))]).name
        handles = sorted(n.name for n in b.graph_def.nodes if n.op == "VarHandleOp")
        grads = gradients(b, [loss], [xin, *handles])
        assert all(g is not None for g in grads)
        known = {n.name for n in model.session.graph_def.nodes}
        extra = [n for n in b.graph_def.nodes if n.name not in known]
        for i, h in enumerate(handles):  # to nudge one weight: feed a value, assign it
            dt = b.graph_def.node(h).attrs["dtype"]
            extra += [NodeDef(f"nudge/{i}/value", "Placeholder", [], "", {"dtype": dt}),
                      NodeDef(f"nudge/{i}/assign", "AssignVariableOp", [h, f"nudge/{i}/value"], "", {"dtype": dt}),
                      NodeDef(f"nudge/{i}/read", "ReadVariableOp", [h], "", {"dtype": dt})]
        model.session.extend(GraphDef(extra))
        s = model.session
        values = s.run(grads, {xin: x})
        eps = 1e-2

        def central(nudge) -> float:
            return (nudge(eps) - nudge(-eps)) / (2 * eps)

        for idx in [(0, 0, 0), (1, 4, 2)]:
            def at(d, idx=idx):
                xx = x.copy()
                xx[idx] += d
                return float(s.run(loss, {xin: xx}))
            np.testing.assert_allclose(values[0][idx], central(at), rtol=2e-2, atol=2e-4)
        for i, (h, g) in enumerate(zip(handles, values[1:])):
            v0 = s.run(f"nudge/{i}/read")
            idx = tuple(0 for _ in v0.shape)

            def at(d, i=i, v0=v0, idx=idx):
                v = v0.copy()
                v[idx] += d
                s.run([], {f"nudge/{i}/value": v}, targets=[f"nudge/{i}/assign"])
                return float(s.run(loss, {xin: x}))
            np.testing.assert_allclose(g[idx], central(at), rtol=2e-2, atol=2e-4, err_msg=h)
            s.run([], {f"nudge/{i}/value": v0}, targets=[f"nudge/{i}/assign"])


@pytest.mark.parametrize("flag", [True, False])
def test_if_with_a_loop_inside_matches_tensorflow_values_and_gradients(flag):
    """cond_loop: a tf.cond whose branches hold a while loop and another tf.cond (If, While,
    StatelessIf lowered at load); outputs and GradientTape's gradients recorded by TensorFlow."""
    from specflow.export.importer import _closure
    from specflow.graph.builder import GraphBuilder
    from specflow.graph.graph_def import GraphDef
    from specflow.train.gradients import gradients

    saved = np.load(TF2 / "cond_loop.npz")
    x = saved["in_x"]
    with load_model(TF2 / "cond_loop") as model:
        got = model.run("serving_default", {"x": x, "flag": np.array(flag)})["y"]
        np.testing.assert_allclose(got, saved[f"out_y_{flag}"], rtol=0, atol=ATOL)
        sig = model.signatures["serving_default"]
        xin, fin, out = sig.inputs["x"][0], sig.inputs["flag"][0], sig.outputs["y"][0]
        b = GraphBuilder(_closure(model.graph_def, [out], {xin.split(":")[0], fin.split(":")[0]}))
        with b.name_scope("check"):
            loss = b.add_op("Sum", [b.add_op("Mul", [out, b.const(saved["weights"])]).name,
                                    b.const(np.array([0, 1], np.int32))]).name
        (handle,) = [n.name for n in b.graph_def.nodes if n.op == "VarHandleOp"]
        gx, gw = gradients(b, [loss], [xin, handle])
        known = {n.name for n in model.session.graph_def.nodes}
        model.session.extend(GraphDef([n for n in b.graph_def.nodes if n.name not in known]))
        dx, dw = model.session.run([gx, gw], {xin: x, fin: np.array(flag)})
    np.testing.assert_allclose(dx, saved[f"grad_x_{flag}"], rtol=0, atol=ATOL)
    np.testing.assert_allclose(dw, saved[f"grad_w_{flag}"], rtol=0, atol=ATOL)


def test_ops_explains_the_tf_ops_handled_at_load():
    r = runner.invoke(app, ["ops", "StatelessWhile"])
    assert r.exit_code == 0 and "lowered to Switch/Merge/Enter/Exit/NextIteration" in r.output
    r = runner.invoke(app, ["ops", "PartitionedCall"])
    assert r.exit_code == 0 and "inlined" in r.output
