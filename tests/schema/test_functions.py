"""Function calls: inlining, attr substitution, input patterns, automatic control deps."""

from __future__ import annotations

import textwrap

from specflow.graph.shapes import Shape
from specflow.schema.loader import load_spec_text
from tests.schema.spec_errors import error_lines

HEAD = """\
specflow: 1
name: f
inputs:
  x: {dtype: float32, shape: [null, 8]}
  n: {dtype: int32, shape: [null, 8]}
  z: {dtype: float32, shape: [null, 4]}
functions:
  residual:
    attrs: {units: {type: int, default: 8}, act: {type: string, default: relu}}
    inputs: {x: {dtype: T, shape: [null, D]}}
    nodes:
      d: {layer: dense, inputs: [x], units: $units, activation: $act}
      out: {op: AddV2, inputs: [x, d]}
    outputs: {y: out, h: d}
  pair:
    inputs: {a: {dtype: T, shape: [null, D]}, b: {dtype: T, shape: [null, D]}}
    nodes:
      s: {op: AddV2, inputs: [a, b]}
    outputs: {s: s}
  noisy:
    inputs: {x: {dtype: float32}}
    nodes:
      r1: {op: RandomUniform, inputs: [{op: Shape, inputs: [x]}], dtype: float32}
      r2: {op: RandomStandardNormal, inputs: [{op: Shape, inputs: [x]}], dtype: float32}
      bump: {op: AssignAddVariableOp, inputs: [counter, one]}
      one: {op: Identity, inputs: [{op: Const, value: 1.0, dtype: float32}]}
      total: {op: AddV2, inputs: [r1, r2]}
    outputs: {y: total}
variables:
  counter: {shape: [], initializer: zeros}
"""


def lower(nodes: str):
    return load_spec_text(HEAD + "nodes:\n" + textwrap.indent(textwrap.dedent(nodes), "  "), "f.yaml")


def errors_of(nodes: str) -> list[str]:
    return error_lines(lower, nodes)


def test_inlining_names_attrs_and_outputs():
    spec = lower("""\
        blk: {call: residual, inputs: [x], attrs: {act: tanh}}
        h: {op: Identity, inputs: ["blk:1"]}
        y: {op: Identity, inputs: [blk]}
        """)
    g = spec.graph_def
    assert g.node("blk/d").op == "Tanh"
    assert g.node("blk/out").inputs == ["x", "blk/d"]
    assert g.node("y").inputs == ["blk/out"] and g.node("h").inputs == ["blk/d"]
    assert [v.name for v in spec.variables][-2:] == ["blk/d/kernel", "blk/d/bias"]
    assert spec.tensor_spec("y").shape == Shape([None, 8])
    # Body nodes keep the location of their definition in `functions:`.
    assert str(g.node("blk/out").location) == "f.yaml:13:7"


def test_two_calls_get_separate_variables_and_mapping_inputs():
    spec = lower("""\
        a: {call: residual, inputs: {x: x}}
        b: {call: residual, inputs: [a]}
        """)
    names = [v.name for v in spec.variables]
    assert "a/d/kernel" in names and "b/d/kernel" in names
    assert spec.graph_def.node("b/d/MatMul").inputs[0] == "a/out"


def test_pattern_binding():
    spec = lower("s: {call: pair, inputs: [x, x]}\n")
    assert spec.graph_def.node("s/s").inputs == ["x", "x"]
    errs = errors_of("s: {call: pair, inputs: [x, z]}\n")
    assert errs == ["f.yaml:32:27: nodes.s.inputs: input 'b' of function 'pair': expected shape [?, D] with "
                    "D=8 (from a[1]), got [?, 4]"]
    errs = errors_of("s: {call: pair, inputs: [x, n]}\n")
    assert errs == ["f.yaml:32:27: nodes.s.inputs: input 'b' of function 'pair': T is float32 (from input 'a') "
                    "but got int32"]


def test_call_errors():
    errs = errors_of("s: {call: residual, inputs: [x], attrs: {unit: 3}}\n")
    assert errs == ["f.yaml:32:44: nodes.s.attrs.unit: function 'residual' has no attr 'unit' (did you mean 'units'?)"]
    errs = errors_of("s: {call: pair, inputs: [x]}\n")
    assert errs == ["f.yaml:32:27: nodes.s.inputs: call of 'pair' is missing input(s) b"]
    errs = errors_of("s: {call: residual, inputs: [x], attrs: {units: 4}}\n")
    assert len(errs) == 1 and "in call 's'" in errs[0] and errs[0].startswith("f.yaml:13:7: functions.residual.nodes.out")


def test_automatic_control_dependencies():
    spec = lower("r: {call: noisy, inputs: [x]}\n")
    g = spec.graph_def
    assert g.node("r/r1").control_inputs == []
    assert g.node("r/r2").control_inputs == ["r/r1"]
    assert g.node("r/bump").control_inputs == ["r/r2"]
    assert g.node("r/bump").inputs[0] == "counter"  # a resource input takes the handle
    # Stateless ops and variable setup are never chained.
    assert g.node("r/total").control_inputs == []
    assert g.node("counter/Read/ReadVariableOp").control_inputs == []
