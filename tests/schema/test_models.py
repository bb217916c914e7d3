"""The pydantic models: node kinds, op/layer extra keys, functions, errors with positions."""

import pytest

from specflow.errors import Location, SpecError
from specflow.schema.json_schema import DRAFT, spec_json_schema
from specflow.schema.models import (
    CallNodeSpec,
    LayerNodeSpec,
    OpNodeSpec,
    parse_model,
    parse_node,
    substitute_attrs,
)
from specflow.schema.yaml_loader import load_yaml
from tests.schema.spec_errors import error_lines

GOOD = """\
specflow: 1
name: digits_mlp
seed: 0
inputs:
  images: {dtype: float32, shape: [null, 64]}
  training: {dtype: bool, shape: [], default: false}
variables:
  w: {shape: [64, 10], initializer: glorot_uniform, device: /cpu:0}
  s: {shape: [], dtype: float64, initializer: {constant: 0.5}, trainable: false}
nodes:
  z: {op: MatMul, inputs: [images, w], transpose_b: false, device: /cpu:0, after: [hidden]}
  hidden: {layer: dense, inputs: [images], units: 16, activation: relu}
  am: {op: ArgMax, inputs: [{op: Identity, inputs: [hidden]}], axis: 1, output_type: int64}
  e: {op: Identity, inputs: ["z:0"], colocate_with: w}
  blk: {call: residual, inputs: {x: hidden}, attrs: {units: 16}}
functions:
  residual:
    attrs: {units: {type: int, default: 64}, act: {type: string}}
    inputs: {x: {dtype: float32, shape: [null, D]}}
    nodes:
      d: {layer: dense, inputs: [x], units: $units, activation: $act}
      out: {op: AddV2, inputs: [x, d]}
    outputs: {y: out}
signatures:
  serving_default: {inputs: {images: images}, outputs: {argmax: am}}
train: {loss: e, optimizer: {sgd: {}}, data: {source: {builtin: digits}, feeds: {images: x}}}
"""


def parse(text):
    tree, src = load_yaml(text, "m.yaml")
    return parse_model(tree, src)


def errors_of(text) -> list[str]:
    return error_lines(parse, text)


def test_good_spec():
    m = parse(GOOD)
    assert list(m.nodes) == ["z", "hidden", "am", "e", "blk"]
    z, hidden, am, e, blk = m.nodes.values()
    assert isinstance(z, OpNodeSpec) and z.params == {"transpose_b": False} and z.after == ["hidden"]
    assert isinstance(hidden, LayerNodeSpec) and hidden.config.units == 16 and hidden.config.activation == "relu"
    assert isinstance(am.inputs[0], OpNodeSpec) and am.params == {"axis": 1, "output_type": "int64"}
    assert e.colocate_with == ["w"]
    assert isinstance(blk, CallNodeSpec) and blk.inputs == {"x": "hidden"} and blk.attrs == {"units": 16}
    assert m.inputs["training"].has_default and not m.inputs["images"].has_default
    assert m.variables["w"].dtype == "float32" and m.variables["w"].trainable
    assert m.variables["s"].initializer.kind == "constant"
    assert m.functions["residual"].nodes["d"]["units"] == "$units"  # bodies stay raw
    assert m.signatures["serving_default"].outputs == {"argmax": "am"}
    assert m.train.loss == "e" and m.train.optimizer.name == "sgd" and m.train.data.feeds == {"images": "x"}


def test_parse_node_after_substitution():
    m = parse(GOOD)
    raw = substitute_attrs(m.functions["residual"].nodes["d"], {"units": 8, "act": "tanh"})
    node = parse_node(raw, ("functions", "residual", "nodes", "d"), load_yaml(GOOD, "m.yaml")[1])
    assert node.config.units == 8 and node.config.activation == "tanh"
    _, src = load_yaml(GOOD, "m.yaml")
    with pytest.raises(SpecError) as e:
        parse_node(substitute_attrs(m.functions["residual"].nodes["d"], {"units": 8, "act": "tanhh"}), ("functions", "residual", "nodes", "d"), src)
    assert e.value.format().startswith("m.yaml:21:65: functions.residual.nodes.d.activation: expected one of 'relu'")


def test_many_errors_collected_in_order():
    text = GOOD.replace("units: 16, activation: relu", "unit: 16, activation: relux").replace("transpose_b", "transpose_c")
    text = text.replace("shape: [], default: false", "shape: [], default: 3").replace("/cpu:0}", "/cpu:x}")
    assert errors_of(text) == [
        "m.yaml:6:13: inputs.training: default of a bool input must be true or false, got 3",
        "m.yaml:8:61: variables.w.device: malformed device '/cpu:x': cannot parse 'cpu:x' (expected /job:NAME/replica:N/task:N/device:TYPE:N, e.g. /device:GPU:0 or /cpu:0)",
        "m.yaml:11:40: nodes.z.transpose_c: unknown field 'transpose_c' for op MatMul (did you mean 'transpose_b'?)",
        "m.yaml:12:11: nodes.hidden: missing required field 'units'",
        "m.yaml:12:44: nodes.hidden.unit: unknown field (did you mean 'units'?)",
        "m.yaml:12:66: nodes.hidden.activation: expected one of 'relu', 'relu6', 'elu', 'selu', 'sigmoid', 'tanh', "
        "'softmax', 'softplus', 'softsign', 'leaky_relu', 'linear', 'gelu', 'gelu_tanh', 'silu', 'swish' or "
        "'hard_sigmoid', got 'relux' (did you mean 'relu'?)",
    ]


def test_tf_python_keyword_for_an_output_type_points_to_the_ops_attr():
    text = GOOD.replace("transpose_b: false", "to: float32")
    assert errors_of(text.replace("op: MatMul", "op: Cast")) == [
        "m.yaml:11:38: nodes.z.to: unknown field 'to' for op Cast (the op's output type is its attr 'DstT')"]


def test_function_body_checked_with_defaults():
    text = GOOD.replace("units: $units", "units: $unitz").replace("default: 64", "default: sixty")
    assert errors_of(text) == [
        "m.yaml:18:20: functions.residual.attrs.units: expected a value of type int, got 'sixty'",
        "m.yaml:21:45: functions.residual.nodes.d.units: unknown function attr '$unitz' (did you mean '$units'?)",
    ]
    bad_default = GOOD.replace("default: 64", "default: 0")
    assert errors_of(bad_default) == ["m.yaml:21:45: functions.residual.nodes.d.units: must be >= 1, got 0"]


def test_a_function_variables_unknown_attr_is_named():
    text = """specflow: 1
name: f
inputs: {x: {dtype: float32, shape: [null, 4]}}
functions:
  block:
    attrs: {units: {type: int, default: 4}}
    inputs: {h: {dtype: float32, shape: [null, 4]}}
    variables: {gamma: {shape: [$unit], initializer: {constant: 1.0}}}
    nodes: {out: {op: Mul, inputs: [h, gamma]}}
    outputs: {y: out}
nodes: {b: {call: block, inputs: [x]}}
"""
    assert errors_of(text) == [
        "m.yaml:8:33: functions.block.variables.gamma.shape.0: unknown function attr '$unit' (did you mean '$units'?)"]


@pytest.mark.parametrize(
    "replace, expected",
    [
        (("name: digits_mlp", "name: 3"), "m.yaml:2:7: name: expected a string, got 3"),
        (("seed: 0", "seed: 1.5"), "m.yaml:3:7: seed: expected an integer, got 1.5"),
        (("seed: 0", "seed: 99999999999999999999"), "m.yaml:3:7: seed: must be <= 9223372036854775807, got "
         "99999999999999999999"),  # an int64, as TF's; it failed at the first random op, its line
        (("dtype: float32, shape: [null, 64]", "dtype: float32, shape: 64"), "m.yaml:5:35: inputs.images.shape: expected a list, got 64"),
        (("shape: [64, 10]", "shape: [64, null]"), "m.yaml:8:19: variables.w.shape.1: a dimension must be an integer >= 0, got null"),
        (("inputs: [images, w]", "inputs: [images, 'w x']"), "m.yaml:11:36: nodes.z.inputs.1: bad tensor reference 'w x' (expected 'name' or 'name:k')"),
        (("inputs: [images, w]", "inputs: [images, 3]"), "m.yaml:11:36: nodes.z.inputs.1: a literal is not a tensor reference; give it under the input's name (here `b: 3`): MatMul takes a, b"),
        (("  e: {op", "  e e: {op"), "m.yaml:14:3: nodes.e e: bad name 'e e': use letters, digits, '_', '.', '-' (not starting with a digit; '/' is for scopes)"),
        (("{x: hidden}", "7"), "m.yaml:15:33: nodes.blk.inputs: expected a list or a mapping of inputs, got 7"),
        (("{type: string}", "{type: str}"), "m.yaml:18:58: functions.residual.attrs.act.type: expected one of 'int', 'float', 'bool', 'string' or 'dtype', got 'str' (did you mean 'string'?)"),
        (("dtype: float32, shape: [null, D]", "dtype: t32, shape: [null, D]"), "m.yaml:19:25: functions.residual.inputs.x.dtype: unknown dtype 't32' (did you mean 'int32'?)"),
        (("outputs: {y: out}", "outputs: {y: out}\n    bad: 1"), "m.yaml:24:5: functions.residual.bad: unknown field"),
        (("outputs: {argmax: am}", "outputs: {argmax: am}, extra: 1"), "m.yaml:25:70: signatures.serving_default.extra: unknown field"),
        (("train: {loss: e, optimizer: {sgd: {}}, data: {source: {builtin: digits}, feeds: {images: x}}}", "train: 5"), "m.yaml:26:8: train: expected a mapping, got 5"),
        (("  e: {op", "  w: {op"), "m.yaml:14:3: nodes.w: name 'w' is already used in variables (inputs, variables and nodes share one namespace)"),
        (("  e: {op: Identity", "  e: {op: Identity, layer: dense"), "m.yaml:14:6: nodes.e: a node needs exactly one of 'op', 'layer', 'call', 'while', 'cond' (got 'op' and 'layer')"),
        (("  e: {op: Identity", "  e: {doc: x"), "m.yaml:14:6: nodes.e: a node needs exactly one of 'op', 'layer', 'call', 'while', 'cond' (got none)"),
        (("  e: {op: Identity, inputs: [\"z:0\"], colocate_with: w}", "  e: [1]"), "m.yaml:14:6: nodes.e: a node is a mapping with 'op', 'layer', 'call', 'while' or 'cond', got a list"),
    ],
)
def test_single_errors(replace, expected):
    text = GOOD.replace(*replace)
    assert text != GOOD
    assert errors_of(text) == [expected]


def test_top_level_must_be_mapping():
    assert errors_of("- a\n- b\n") == ["m.yaml:1:1: a spec must be a mapping at the top level (specflow: 1, name: ..., nodes: ...), got a list"]
    assert errors_of("") == ["m.yaml: a spec must be a mapping at the top level (specflow: 1, name: ..., nodes: ...), got empty"]


def test_json_schema():
    s = spec_json_schema()
    assert s["$schema"] == DRAFT
    assert set(s["required"]) == {"specflow", "name"}
    op = s["$defs"]["OpNodeSpec"]
    assert "MatMul" in op["properties"]["op"]["enum"]
    matmul = next(b["then"]["properties"] for b in op["allOf"] if b["if"]["properties"]["op"]["const"] == "MatMul")
    assert matmul["transpose_a"]["type"] == "boolean" and "a" in matmul
    argmax = next(b["then"]["properties"] for b in op["allOf"] if b["if"]["properties"]["op"]["const"] == "ArgMax")
    assert "axis" in argmax and "int64" in argmax["output_type"]["enum"]
    layer = s["$defs"]["LayerNodeSpec"]
    assert "dense" in layer["properties"]["layer"]["enum"]
    dense = next(b["then"] for b in layer["allOf"] if b["if"]["properties"]["layer"]["const"] == "dense")
    assert "units" in dense["properties"] and dense["required"] == ["units"]
    assert {"$ref": "#/$defs/CallNodeSpec"} in s["properties"]["nodes"]["additionalProperties"]["anyOf"]
    body = s["$defs"]["FunctionSpec"]["properties"]["nodes"]["additionalProperties"]
    assert "AddV2" in body["properties"]["op"]["enum"] and "dense" in body["properties"]["layer"]["enum"]


def test_location_of_good_nodes_kept():
    _, src = load_yaml(GOOD, "m.yaml")
    assert src.key_location(("nodes", "hidden")) == Location("m.yaml", 12, 3)


def test_json_schema_accepts_good_specs_and_rejects_typos():
    jsonschema = pytest.importorskip("jsonschema")
    from pathlib import Path

    validator = jsonschema.Draft202012Validator(spec_json_schema())
    texts = [GOOD] + [p.read_text() for p in sorted((Path(__file__).parents[2] / "models").glob("*.yaml"))]
    for text in texts:
        tree, _ = load_yaml(text, "m.yaml")
        assert list(validator.iter_errors(tree)) == []
    tree, _ = load_yaml(GOOD.replace("transpose_b", "transpose_c").replace("units: 16, act", "unit: 16, act"), "m.yaml")
    assert len(list(validator.iter_errors(tree))) == 2
