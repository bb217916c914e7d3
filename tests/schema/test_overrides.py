"""--set overrides: paths, YAML-typed values, created keys, errors, and their location."""

import pytest

from specflow.errors import Location, SpecError
from specflow.schema.models import parse_model
from specflow.schema.overrides import apply_overrides, parse_override
from specflow.schema.yaml_loader import load_yaml

TEXT = """\
specflow: 1
name: m
inputs:
  x: {dtype: float32, shape: [null, 4]}
nodes:
  hidden: {layer: dense, inputs: [x], units: 8}
"""


def load(overrides):
    tree, src = load_yaml(TEXT, "m.yaml")
    return apply_overrides(tree, src, overrides), src


def test_parse_values_with_yaml():
    assert parse_override("a.b=64") == (("a", "b"), 64)
    assert parse_override("a=true") == (("a",), True)
    assert parse_override("a=[1, 2]") == (("a",), [1, 2])
    assert parse_override("a.0.b=relu") == (("a", 0, "b"), "relu")
    assert parse_override("a=") == (("a",), "")


def test_set_existing_created_and_list_index():
    tree, src = load(["nodes.hidden.units=64", "nodes.hidden.activation=relu", "inputs.x.shape.1=5", "seed=3"])
    assert tree["nodes"]["hidden"]["units"] == 64
    assert tree["nodes"]["hidden"]["activation"] == "relu"
    assert tree["inputs"]["x"]["shape"] == [None, 5]
    assert tree["seed"] == 3
    assert src.location(("nodes", "hidden", "units")) == Location("--set nodes.hidden.units=64")
    assert src.location(("inputs", "x", "shape", 1)) == Location("--set inputs.x.shape.1=5")
    assert src.location(("nodes", "hidden", "inputs")) == Location("m.yaml", 6, 34)
    assert parse_model(tree, src).nodes["hidden"].config.units == 64


def test_dict_form_and_subtree_location():
    tree, src = load({"nodes.hidden": {"layer": "dense", "inputs": ["x"], "units": 2}})
    assert tree["nodes"]["hidden"]["units"] == 2
    assert src.location(("nodes", "hidden", "units")) == Location("--set nodes.hidden={'layer': 'dense', 'inputs': ['x'], 'units': 2}")


def test_bad_value_reported_at_the_override():
    tree, src = load(["nodes.hidden.units=abc"])
    with pytest.raises(SpecError) as e:
        parse_model(tree, src)
    assert e.value.format() == "--set nodes.hidden.units=abc: nodes.hidden.units: expected an integer, got 'abc'"


@pytest.mark.parametrize(
    "override, message",
    [
        ("name.x=1", "--set name.x=1: name.x: cannot set 'name.x': 'name' is a string, not a mapping or list"),
        ("inputs.x.shape.7=1", "--set inputs.x.shape.7=1: inputs.x.shape.7: index 7 is out of range: 'inputs.x.shape' has 2 item(s)"),
        ("inputs.x.shape.a=1", "--set inputs.x.shape.a=1: inputs.x.shape.a: 'inputs.x.shape' is a list: 'a' is not an index"),
        ("units", "--set units: bad override 'units': expected PATH=VALUE (e.g. nodes.hidden.units=64)"),
        ("a..b=1", "--set a..b=1: bad override path 'a..b'"),
        # a field of a node that is not there: a typo, not a new node (a new one is set whole)
        ("nodes.hiden.units=64", "--set nodes.hiden.units=64: nodes.hiden.units: no node 'hiden' to set 'units' on "
                                 "(did you mean 'hidden'?); to add one, set it whole: --set nodes.hiden='{...}'"),
    ],
)
def test_errors(override, message):
    with pytest.raises(SpecError) as e:
        load([override])
    assert e.value.format() == message


def test_names_holding_dots_can_be_set():
    """Names may hold '.' (`h.1`, and `import` writes TF's `/` as `.`), but `--set
    nodes.h.1.units=4` said "no node 'h' to set '1.units' on"."""
    tree, src = load_yaml(TEXT.replace("hidden:", "h.1:") + "  h.1.b: {layer: dense, inputs: [h.1], units: 2}\n",
                          "m.yaml")
    apply_overrides(tree, src, ["nodes.h.1.units=4", "nodes.h.1.b.units=3", "nodes.h.1.inputs.0=x"])
    assert tree["nodes"]["h.1"] == {"layer": "dense", "inputs": ["x"], "units": 4}
    assert tree["nodes"]["h.1.b"] == {"layer": "dense", "inputs": ["h.1"], "units": 3}
    assert src.location(("nodes", "h.1", "units")) == Location("--set nodes.h.1.units=4")
    with pytest.raises(SpecError, match="no node 'h' to set '2.units' on"):
        apply_overrides(tree, src, ["nodes.h.2.units=4"])
