"""``specflow import`` of TF1-style while loops (export/import_tf1_loops.py): a frozen TF1 graph's
loops, a frozen TF2 model's (freezing lowers its Whiles to the primitives) and specflow's own
exports of `while:` nodes and RNN layers come back as `while:` nodes that compute the same."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from specflow.export.exporter import export_model
from specflow.export.importer import import_model, verify_import
from specflow.io.graph_loader import graph_io, in_loop_frames, read_graph_def
from specflow.schema.loader import load_spec_text

from .test_import import TF2, recorded, run_spec

PRIMITIVES = {"Enter", "Exit", "Merge", "Switch", "NextIteration", "LoopCond"}


def _whiles(nodes: dict) -> list[dict]:
    """Every while: node in a spec's nodes, nested ones included (depth first)."""
    found = []
    for v in nodes.values():
        if isinstance(v, dict) and "while" in v:
            w = v["while"]
            found.append(w)
            found += _whiles(w["body"])
    return found


def _ops(nodes: dict) -> set[str]:
    ops = set()
    for v in nodes.values():
        if isinstance(v, dict) and "while" in v:
            w = v["while"]
            ops |= _ops(w["body"]) | _ops(w["cond"]["nodes"])
        elif isinstance(v, dict):
            ops.add(v.get("op"))
    return ops


def test_a_tf1_graphs_nested_and_capped_loops_import_as_while_nodes(tmp_path):
    """tf1_loops.pb (tf.compat.v1.while_loop, control flow v1): an outer loop whose body holds a
    loop reading the outer var and an outer constant, and a loop with maximum_iterations."""
    out = tmp_path / "t1.yaml"
    result = import_model(TF2 / "tf1_loops.pb", out)
    nodes = yaml.safe_load(out.read_text())["nodes"]
    assert {"outer", "capped"} <= set(nodes) and "inner" in nodes["outer"]["while"]["body"]
    assert len(_whiles(nodes)) == 3 and not _ops(nodes) & PRIMITIVES
    inner = nodes["outer"]["while"]["body"]["inner"]["while"]
    assert not set(inner["vars"]) & set(nodes["outer"]["while"]["vars"])  # the outer var stays readable inside
    inputs, want = recorded(TF2 / "tf1_loops.npz")
    got = run_spec(out, "serving_default", inputs)
    np.testing.assert_allclose(got["y"], want["y_0"], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got["z"], want["z_0"], rtol=1e-6, atol=1e-6)
    assert max(verify_import(TF2 / "tf1_loops.pb", result).values()) == 0


def test_a_frozen_tf2_lstm_imports_its_lowered_loop(tmp_path):
    """Freezing two stacked Keras LSTMs lowers their Whiles (TensorList vars) to TF1 primitives with its own
    names; the loop is found by its structure."""
    out = tmp_path / "lstm.yaml"
    import_model(TF2 / "frozen_lstm.pb", out)
    nodes = yaml.safe_load(out.read_text())["nodes"]
    assert len(_whiles(nodes)) == 2 and not _ops(nodes) & PRIMITIVES  # two LSTM layers
    inputs, want = recorded(TF2 / "frozen_lstm.npz")
    got = run_spec(out, "serving_default", {k.split(":")[0]: v for k, v in inputs.items()})
    (key,) = want
    np.testing.assert_allclose(next(iter(got.values())), want[key], rtol=0, atol=1e-5)


def test_inner_loop_values_are_not_a_frozen_graphs_outputs():
    """An inner loop's unused Exit reads nothing outside its frame: no signature output."""
    graph = read_graph_def(str(TF2 / "tf1_loops.pb"))
    inside = in_loop_frames(graph)
    assert "outer/inner/Exit" in inside and "outer/Exit_1" not in inside and "y" not in inside
    _, outputs = graph_io(graph)
    assert {"y", "z"} <= set(outputs) and not set(outputs) & inside


@pytest.mark.parametrize("model", ["rnn_sequence_sum", "gru_classifier"])
def test_our_exports_of_loop_models_import_back(model, trained, tmp_path):
    spec, logdir = trained(model)
    export_model(spec, logdir, tmp_path / "export")
    out = tmp_path / "back.yaml"
    result = import_model(tmp_path / "export", out)
    nodes = yaml.safe_load(out.read_text())["nodes"]
    assert _whiles(nodes) and not _ops(nodes) & PRIMITIVES
    assert max(verify_import(tmp_path / "export", result).values()) <= 1e-6


NESTED = """
specflow: 1
name: nested
inputs:
  x: {dtype: float32, shape: [null, 3]}
variables:
  w: {shape: [3], initializer: {constant: 0.5}}
nodes:
  outer:
    while:
      vars: {i: 0, acc: x}
      cond: {op: Less, inputs: [i], y: 3}
      body:
        inner:
          while:
            vars: {j: 0, a: acc}
            cond: {op: LessEqual, inputs: [j, i]}
            next:
              j: {op: AddV2, inputs: [j], y: 1}
              a: {op: Tanh, inputs: [{op: AddV2, inputs: [{op: Mul, inputs: [a, w]}, x]}]}
      next:
        i: {op: AddV2, inputs: [i], y: 1}
        acc: inner:1
  y: {op: Identity, inputs: ["outer:1"]}
signatures:
  serving_default: {inputs: {x: x}, outputs: {y: y}}
"""


def test_a_nested_spec_loop_round_trips_through_export_and_import(tmp_path):
    from specflow.io.checkpoint import CheckpointManager

    spec = load_spec_text(NESTED, str(tmp_path / "nested.yaml"))
    CheckpointManager(str(tmp_path / "run")).save({"w": np.full(3, 0.5, np.float32)}, 0)
    export_model(spec, tmp_path / "run", tmp_path / "export")
    out = tmp_path / "back.yaml"
    import_model(tmp_path / "export", out)
    nodes = yaml.safe_load(out.read_text())["nodes"]
    assert len(_whiles(nodes)) == 2 and not _ops(nodes) & PRIMITIVES
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    want = x
    for i in range(3):
        for _ in range(i + 1):
            want = np.tanh(want * 0.5 + x)
    got = run_spec(out, "serving_default", {"x": x})
    np.testing.assert_allclose(got["y"], want, rtol=1e-6, atol=1e-6)

