"""The spec's ``while`` and ``cond`` nodes: lowering to the primitives, every branch/body form,
name shadowing, values through the Session, and ``specflow validate`` / ``inspect`` on them
(broken specs with their exact messages are in tests/schema/broken/34-40)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from specflow.cli import app
from specflow.graph.shapes import Shape
from specflow.runtime.session import Session
from specflow.schema.loader import load_spec_text
from tests.graph.test_control_flow import needs_loops

SPEC = """\
specflow: 1
name: loops
inputs:
  n: {dtype: int32, shape: []}
  x: {dtype: float32, shape: [3]}
  flag: {dtype: bool, shape: []}
functions:
  square:
    inputs: {v: {dtype: float32}}
    nodes: {sq: {op: Mul, inputs: [v, v]}}
    outputs: {y: sq}
  step:                                   # a loop body as a function: the vars in order
    inputs: {a: {dtype: int64}, b: {dtype: int64}}
    nodes: {s: {op: AddV2, inputs: [a, b]}}
    outputs: {a: b, b: s}
nodes:
  result: {op: Identity, inputs: ["fact:1"]}   # forward reference to the loop
  fact:
    while:
      vars: {i: 1, acc: {value: 1, dtype: int64}}
      cond: {op: LessEqual, inputs: [i, n]}
      body:
        wide: {op: Cast, inputs: [i], DstT: int64}   # `i` is the current value, in body and next alike
      next:
        i: {op: AddV2, inputs: [i], y: 1}
        acc: {op: Mul, inputs: [acc, wide]}
      max_iterations: 100
  fib:
    while:
      vars: {k: 0, a: {value: 0, dtype: int64}, b: {value: 1, dtype: int64}}
      cond: {nodes: {more: {op: Less, inputs: [k, n]}}, outputs: more}
      body: {b_next: {call: step, inputs: [a, b]}}
      next: {k: {op: AddV2, inputs: [k], y: 1}, a: {call: step, inputs: [a, b]}, b: "b_next:1"}
  choose:
    cond: {pred: flag, inputs: [x], then: square, else: {op: Neg, inputs: [x]}}
  mapped:
    cond:
      pred: {op: Greater, inputs: [n], y: 2}
      inputs: {v: x}
      then: {nodes: {t: {op: AddV2, inputs: [v, v]}}, outputs: [t, v]}
      else: {nodes: {e: {op: Sub, inputs: [v, v]}}, outputs: [e, x]}
  i: {op: Identity, inputs: [n]}        # same name as a loop var: the loop's `i` shadows it
  out: {op: Identity, inputs: [choose]}
"""


@pytest.fixture(scope="module")
def spec():
    return load_spec_text(SPEC, "loops.yaml")


def test_lowering_uses_the_five_primitives_under_the_node_scopes(spec):
    g = spec.graph_def
    ops = {n.name: n.op for n in g.nodes}
    for var in ("i", "acc"):
        assert ops[f"fact/{var}/Enter"] == "Enter" and ops[f"fact/{var}/Merge"] == "Merge"
        assert ops[f"fact/{var}/Switch"] == "Switch" and ops[f"fact/{var}/NextIteration"] == "NextIteration"
        assert ops[f"fact/{var}"] == "Exit"
    assert ops["fact/LoopCond"] == "LoopCond" and ops["fact/max_iterations/Assert"] == "Assert"
    assert g.node("fact/body/acc").inputs == ["fact/acc/Identity", "fact/body/wide"]
    assert g.node("fact/body/wide").inputs == ["fact/i/Identity"]  # the var, not node `i`
    assert g.node("fact/capture/n").attrs["is_constant"]
    assert g.node("result").inputs == ["fact/acc"]
    assert g.node("choose/then/square/sq").inputs == ["choose/Switch:1", "choose/Switch:1"]
    assert g.node("choose/Merge").inputs == ["choose/else/Neg", "choose/then/square/sq"]
    assert g.node("fib/b").inputs == ["fib/b/Switch"]
    assert spec.resolve("fact/acc") == spec.resolve("fact:1") == "fact/acc:0"


def test_shapes_and_dtypes_infer_through_the_constructs(spec):
    assert str(spec.tensor_spec("result")) == "int64[]"
    assert str(spec.tensor_spec("out")) == "float32[3]"
    assert str(spec.tensor_spec(spec.resolve("mapped:1"))) == "float32[3]"
    assert str(spec.tensor_spec(spec.resolve("fib:1"))) == "int64[]"


def test_a_var_whose_shape_changes_is_relaxed_and_a_declared_shape_kept():
    s = load_spec_text("""\
specflow: 1
name: grow
nodes:
  g:
    while:
      vars: {v: [1.0], w: {value: [[1.0, 2.0]], shape: [null, 2]}}
      cond: {op: Less, inputs: [{op: Size, inputs: [v]}], y: 8}
      body: {v: {op: ConcatV2, inputs: [v, v], axis: 0}, w: w}
""", "grow.yaml")
    assert s.tensor_spec(s.resolve("g:0")).shape == Shape([None])
    assert s.tensor_spec(s.resolve("g:1")).shape == Shape([None, 2])
    assert s.graph_def.node("g/v/shape_invariant").op == "PlaceholderWithDefault"


@needs_loops
def test_values_through_the_session(spec):
    with Session(spec.graph_def) as s:
        for n, fact, fib in [(0, 1, 0), (5, 120, 5), (12, 479001600, 144)]:
            feeds = {"n": np.array(n, np.int32)}
            got = s.run(["result", spec.resolve("fib:1")], feeds, timeout_s=30)
            assert [int(v) for v in got] == [fact, fib]
        x = np.array([1.0, -2.0, 3.0], np.float32)
        np.testing.assert_array_equal(s.run("out", {"x": x, "flag": np.array(True)}), x * x)
        np.testing.assert_array_equal(s.run("out", {"x": x, "flag": np.array(False)}), -x)
        m = s.run([spec.resolve("mapped:0"), spec.resolve("mapped:1")], {"x": x, "n": np.array(1, np.int32)})
        np.testing.assert_array_equal(m[0], np.zeros(3))
        np.testing.assert_array_equal(m[1], x)


@needs_loops
def test_a_nested_loop_and_a_cond_in_a_body_from_the_spec():
    s = load_spec_text("""\
specflow: 1
name: nested
inputs:
  n: {dtype: int32, shape: []}
nodes:
  outer:
    while:
      vars: {i: 0, total: 0}
      cond: {op: Less, inputs: [i, n]}
      body:
        inner:
          while:
            vars: {j: 0, s: 0}
            cond: {op: Less, inputs: [j, i]}
            next: {j: {op: AddV2, inputs: [j], y: 1}, s: {op: AddV2, inputs: [s, j]}}
        signed:
          cond:
            pred: {op: Equal, inputs: [{op: FloorMod, inputs: [i], y: 2}], y: 1}
            then: {op: Neg, inputs: ["inner:1"]}
            else: {op: Identity, inputs: ["inner:1"]}
      next:
        i: {op: AddV2, inputs: [i], y: 1}
        total: {op: AddV2, inputs: [total, signed]}
      max_iterations: 50
""", "nested.yaml")
    with Session(s.graph_def) as sess:
        got = int(sess.run(s.resolve("outer:1"), {"n": np.array(7, np.int32)}, timeout_s=30))
    assert got == sum((-1 if i % 2 else 1) * sum(range(i)) for i in range(7))


@needs_loops
def test_max_iterations_error_names_the_loop_and_its_spec_line(spec):
    with Session(spec.graph_def) as s:
        with pytest.raises(Exception, match=r"loops.yaml:18:3: .*assertion failed: \[loop 'fact' exceeded maximum_iterations=100\]"):
            s.run("result", {"n": np.array(101, np.int32)}, timeout_s=30)  # 101 iterations


runner = CliRunner()


def test_validate_and_inspect_show_the_primitives(tmp_path):
    path = tmp_path / "loops.yaml"
    path.write_text(SPEC)
    r = runner.invoke(app, ["validate", str(path)], env={"COLUMNS": "220"})
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["inspect", str(path), "--format", "json"], env={"COLUMNS": "220"})
    assert r.exit_code == 0, r.output
    ops = {n["name"]: n["op"] for n in json.loads(r.output)["nodes"]}
    assert {ops[k] for k in ("fact/i/Enter", "fact/i/Merge", "fact/i/Switch", "fact/i", "fact/i/NextIteration")} == {
        "Enter", "Merge", "Switch", "Exit", "NextIteration"}
    assert ops["choose/Merge"] == "Merge"
    broken = tmp_path / "broken.yaml"
    broken.write_text(SPEC.replace("cond: {op: LessEqual, inputs: [i, n]}", "cond: {op: Sub, inputs: [i, n]}"))
    r = runner.invoke(app, ["validate", str(broken)], env={"COLUMNS": "220"})
    assert r.exit_code == 1
    assert "broken.yaml:19:5: nodes.fact.while: loop 'fact': the condition must be a bool scalar, got int32 []" in r.output


@needs_loops
def test_next_block_reads_current_values_and_named_new_values():
    """An LSTM-style update written naturally: the new c gets its own name, and h's next value
    reads it; `c` alone is the current value everywhere."""
    s = load_spec_text("""\
specflow: 1
name: cell
inputs:
  x: {dtype: float32, shape: [3]}
nodes:
  cell:
    while:
      vars: {t: 0, c: x, h: x, prev: x}
      cond: {op: Less, inputs: [t], y: 4}
      body:
        c_next: {op: AddV2, inputs: [{op: Mul, inputs: [c], y: 0.5}], y: 1.0}
      next:
        t: {op: AddV2, inputs: [t], y: 1}
        c: c_next
        h: {op: Tanh, inputs: [c_next]}
        prev: c
""", "cell.yaml")
    x = np.array([0.5, -1.0, 2.0], np.float32)
    c = h = prev = x
    for _ in range(4):
        c, h, prev = c * 0.5 + 1, np.tanh(c * 0.5 + 1), c
    with Session(s.graph_def) as sess:
        got = sess.run([s.resolve(f"cell:{k}") for k in (1, 2, 3)], {"x": x}, timeout_s=30)
    for g, w in zip(got, (c, h, prev)):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_the_legacy_body_form_stays_valid_when_unambiguous():
    s = load_spec_text("""\
specflow: 1
name: legacy
nodes:
  count:
    while:
      vars: {i: 0, acc: 1.0}
      cond: {op: Less, inputs: [i], y: 3}
      body: {i: {op: AddV2, inputs: [i], y: 1}, acc: {op: Mul, inputs: [acc], y: 2.0}}
""", "legacy.yaml")
    assert s.graph_def.node("count/body/acc").inputs[0] == "count/acc/Identity"
