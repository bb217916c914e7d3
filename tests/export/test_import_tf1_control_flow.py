"""``specflow import`` of TF1-style control flow (export/import_tf1_loops.py, import_tf1_conds.py):
a frozen TF1 graph's loops and conds, a frozen TF2 model's (freezing lowers its Whiles to the
primitives) and specflow's own exports of `while:`/`cond:` nodes and RNN layers come back as
`while:`/`cond:` nodes that compute the same."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from specflow.export.exporter import export_model
from specflow.export.importer import import_model, verify_import
from specflow.io.graph_loader import graph_io, inside_control_flow, read_graph_def
from specflow.schema.loader import load_spec_text

from .test_import import TF2, recorded, run_spec

PRIMITIVES = {"Enter", "Exit", "Merge", "Switch", "NextIteration", "LoopCond"}


def _constructs(nodes: dict, kind: str) -> list[dict]:
    """Every ``kind`` (while or cond) node in a spec's nodes, nested ones included."""
    found = []
    for v in nodes.values():
        if isinstance(v, dict) and "while" in v:
            found += [v["while"]] if kind == "while" else []
            found += _constructs(v["while"]["body"], kind) + _constructs(v["while"]["cond"]["nodes"], kind)
        elif isinstance(v, dict) and "cond" in v:
            found += [v["cond"]] if kind == "cond" else []
            found += _constructs(v["cond"]["then"]["nodes"], kind) + _constructs(v["cond"]["else"]["nodes"], kind)
    return found


def _whiles(nodes: dict) -> list[dict]:
    return _constructs(nodes, "while")


def _ops(nodes: dict) -> set[str]:
    ops = set()
    for v in nodes.values():
        if isinstance(v, dict) and "while" in v:
            ops |= _ops(v["while"]["body"]) | _ops(v["while"]["cond"]["nodes"])
        elif isinstance(v, dict) and "cond" in v:
            ops |= _ops(v["cond"]["then"]["nodes"]) | _ops(v["cond"]["else"]["nodes"])
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
    saved = np.load(TF2 / "tf1_loops.npz")
    got = run_spec(out, "serving_default", {"x": saved["in_x"]})
    np.testing.assert_allclose(got["y"], saved["out_y_0"], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got["z"], saved["out_z_0"], rtol=1e-6, atol=1e-6)
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


def test_a_tf1_graphs_conds_import_as_cond_nodes_with_loops_and_conds_inside(tmp_path):
    """tf1_cond.pb: a cond; a cond with a loop in one branch and a cond in the other; a loop whose
    body holds a cond. TF's outputs for x and -x (each cond takes both branches)."""
    out = tmp_path / "c.yaml"
    result = import_model(TF2 / "tf1_cond.pb", out)
    nodes = yaml.safe_load(out.read_text())["nodes"]
    assert not _ops(nodes) & PRIMITIVES
    assert len(_constructs(nodes, "cond")) == 4 and len(_whiles(nodes)) == 2
    assert _whiles(nodes["cond_1"]["cond"]["then"]["nodes"]) and _constructs(nodes["cond_1"]["cond"]["else"]["nodes"], "cond")
    assert _constructs(nodes["halving"]["while"]["body"], "cond")
    saved = np.load(TF2 / "tf1_cond.npz")
    for key, x in (("out", saved["in_x"]), ("outneg", saved["in_neg_x"])):
        got = run_spec(out, "serving_default", {"x": x})
        assert set(got) == {"y", "z", "w", "halving/Exit"}  # no branch pivot or inner Exit among them
        for name in ("y", "z", "w"):
            np.testing.assert_allclose(got[name], saved[f"{key}_{name}_0"], rtol=1e-6, atol=1e-6)
    assert max(verify_import(TF2 / "tf1_cond.pb", result).values()) == 0


def test_a_frozen_tf2_graphs_lowered_conds_import_as_cond_nodes(tmp_path):
    """lowered_conds.pb: TF2 conds lowered by convert_variables_to_constants_v2 (TF's If-lowering
    names: <if>/switch_pred/_N, <if>/<input node>/_N with slashes in the input's name): two
    outputs, a cond nested in a branch, a cond in a while body. TF's outputs for x and -x."""
    out = tmp_path / "c.yaml"
    result = import_model(TF2 / "lowered_conds.pb", out)
    nodes = yaml.safe_load(out.read_text())["nodes"]
    assert not _ops(nodes) & PRIMITIVES
    assert len(_constructs(nodes, "cond")) == 4 and len(_whiles(nodes)) == 1
    assert _constructs(nodes["cond_1"]["cond"]["then"]["nodes"], "cond")
    saved = np.load(TF2 / "lowered_conds.npz")
    for key, x in (("out", saved["in_x"]), ("outneg", saved["in_neg_x"])):
        got = run_spec(out, "serving_default", {"x": x})
        for name in ["Identity", "Identity_1", "Identity_2", "Identity_3"]:
            np.testing.assert_allclose(got[name], saved[f"{key}_{name}_0"], rtol=1e-6, atol=1e-6, err_msg=name)
    assert max(verify_import(TF2 / "lowered_conds.pb", result).values()) == 0


def test_values_inside_loops_and_branches_are_not_a_frozen_graphs_outputs():
    """An inner loop's unused Exit, a loop's Exit inside a branch and an unused branch pivot are
    sinks no one outside can fetch: no signature output."""
    graph = read_graph_def(str(TF2 / "tf1_loops.pb"))
    inside = inside_control_flow(graph)
    assert "outer/inner/Exit" in inside and "outer/Exit_1" not in inside and "y" not in inside
    _, outputs = graph_io(graph)
    assert {"y", "z"} <= set(outputs) and not set(outputs) & inside
    graph = read_graph_def(str(TF2 / "tf1_cond.pb"))
    inside = inside_control_flow(graph)
    assert {"cond_1/while/Exit", "cond/switch_f", "cond/mul"} <= inside and not {"y", "cond/Merge"} & inside
    assert set(graph_io(graph)[1]) == {"y", "z", "w", "halving/Exit"}


@pytest.mark.parametrize("model", ["rnn_sequence_sum", "gru_classifier", "lstm_language_model"])
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



CONDS = """
specflow: 1
name: conds
inputs:
  x: {dtype: float32, shape: [null, 3]}
  flag: {dtype: bool, shape: []}
nodes:
  pick:
    cond: {pred: flag, inputs: {v: x}, then: {op: Exp, inputs: [v]}, else: {op: Neg, inputs: [v]}}
  loop:
    while:
      vars: {i: 0, acc: pick}
      cond: {op: Less, inputs: [i], y: 3}
      body:
        big: {op: Greater, inputs: [{op: Sum, inputs: [acc, {op: Const, dtype: int32, value: [0, 1]}]}], y: 0.0}
        step:
          cond: {pred: big, inputs: {a: acc}, then: {op: Mul, inputs: [a], y: 0.5},
                 else: {op: AddV2, inputs: [a], y: 1.0}}
      next:
        i: {op: AddV2, inputs: [i], y: 1}
        acc: step
  y: {op: Identity, inputs: ["loop:1"]}
signatures:
  serving_default: {inputs: {x: x, flag: flag}, outputs: {y: y}}
"""


def test_a_spec_cond_round_trips_through_export_and_import(tmp_path):
    """A spec's cond: node (and one in a loop body), exported as TF1 Switch/Merge, imports back
    as cond: nodes; both branches give what the spec gives."""
    from specflow.io.checkpoint import CheckpointManager
    from specflow.runtime.session import Session

    spec = load_spec_text(CONDS, str(tmp_path / "conds.yaml"))
    CheckpointManager(str(tmp_path / "run")).save({}, 0)  # no variables: an export still reads one
    export_model(spec, tmp_path / "run", tmp_path / "export")
    out = tmp_path / "back.yaml"
    import_model(tmp_path / "export", out)
    nodes = yaml.safe_load(out.read_text())["nodes"]
    assert len(_constructs(nodes, "cond")) == 2 and len(_whiles(nodes)) == 1 and not _ops(nodes) & PRIMITIVES
    x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    for flag in (True, False):
        with Session(spec.graph_def) as s:
            want = s.run("y:0", {"x:0": x, "flag:0": np.array(flag)})
        got = run_spec(out, "serving_default", {"x": x, "flag": np.array(flag)})
        np.testing.assert_allclose(got["y"], want, rtol=1e-6, atol=1e-6)
