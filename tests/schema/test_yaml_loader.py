"""YAML loading: positions of keys and values, and refusal of malformed or hostile input."""


import pytest

from specflow.errors import Location, SpecError
from specflow.schema.source import SourceMap
from specflow.schema.yaml_loader import MAX_BYTES, load_yaml

TEXT = """\
name: m
nodes:
  hidden: {layer: dense, units: 3}
  list:
    - a
    - [1, 2.5, true, null]
"""


def test_plain_data_and_positions():
    tree, src = load_yaml(TEXT, "m.yaml")
    assert tree == {"name": "m", "nodes": {"hidden": {"layer": "dense", "units": 3}, "list": ["a", [1, 2.5, True, None]]}}
    assert src.file == "m.yaml"
    assert src.key_location(("nodes",)) == Location("m.yaml", 2, 1)
    assert src.location(("nodes", "hidden")) == Location("m.yaml", 3, 11)
    assert src.key_location(("nodes", "hidden", "units")) == Location("m.yaml", 3, 26)
    assert src.location(("nodes", "hidden", "units")) == Location("m.yaml", 3, 33)
    assert src.location(("nodes", "list", 1, 2)) == Location("m.yaml", 6, 16)


def test_location_falls_back_to_nearest_ancestor():
    _, src = load_yaml(TEXT, "m.yaml")
    assert src.location(("nodes", "hidden", "missing", 3)) == Location("m.yaml", 3, 11)
    assert src.key_location(("nodes", "list", 0)) == Location("m.yaml", 5, 7)
    assert SourceMap("x.yaml").location(("a",)) == Location("x.yaml")


def test_empty_document_is_none():
    tree, _ = load_yaml("# nothing\n", "m.yaml")
    assert tree is None


def test_dates_stay_strings_and_merge_keys_work():
    tree, src = load_yaml("d: 2024-01-01\nbase: &b {u: 1, v: 2}\nder: {<<: *b, v: 3}\n", "m.yaml")
    assert tree["d"] == "2024-01-01"
    assert tree["der"] == {"v": 3, "u": 1}
    assert src.location(("der", "u")) == Location("m.yaml", 2, 14)


@pytest.mark.parametrize(
    "text, message",
    [
        ("a: 1\nb: 2\na: 3\n", "m.yaml:3:1: a: duplicate key 'a' (first at m.yaml:1:1)"),
        ("a: [1, 2\n", "m.yaml:2:1: YAML syntax error: expected ',' or ']', but got '<stream end>'"),
        ("1: x\n", "m.yaml:1:1: keys must be strings, got int 1 (quote it: '1')"),
        ("a:\n  true: x\n", "m.yaml:2:3: a: keys must be strings, got bool true (quote it: 'true')"),
        ("a: !!python/object:os.system x\n", "m.yaml:1:4: unsupported YAML value: could not determine a constructor for the tag 'tag:yaml.org,2002:python/object:os.system'"),
        ("a: !custom {b: 1}\n", "m.yaml:1:4: unsupported YAML tag '!custom'"),
        ("a: 1\n---\nb: 2\n", "m.yaml:2:1: YAML syntax error: but found another document"),
    ],
)
def test_errors(text, message):
    with pytest.raises(SpecError) as e:
        load_yaml(text, "m.yaml")
    assert e.value.format() == message


def test_too_deep():
    with pytest.raises(SpecError, match="m.yaml:1:101: nesting deeper than 100 levels"):
        load_yaml("[" * 5000 + "]" * 5000, "m.yaml")
    load_yaml("[" * 99 + "]" * 99, "m.yaml")  # the limit itself is fine


def test_billion_laughs_refused():
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        prev, cur = chr(96 + i), chr(97 + i)
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    # 9**10 nodes if expanded: the loader must stop counting long before (no timing here: the
    # test would hang or exhaust memory if it expanded).
    with pytest.raises(SpecError, match="too many YAML nodes"):
        load_yaml("\n".join(lines), "m.yaml")


def test_too_large():
    with pytest.raises(SpecError, match="file is too large"):
        load_yaml("a: " + "x" * (MAX_BYTES + 1), "m.yaml")


def test_a_nul_or_control_character_is_an_error_at_its_line_and_column():
    """spec_mutation_fuzz: a NUL byte in a spec was `internal error, ReaderError` (PyYAML's
    reader refuses it before parsing, outside the syntax errors' handler)."""
    for char in ("\x00", "\x07", "\x1b"):
        with pytest.raises(SpecError) as e:
            load_yaml(f"specflow: 1\nname: ab{char}c\n", "m.yaml")
        assert e.value.format() == (f"m.yaml:2:9: character {ord(char):#06x} is not allowed in YAML "
                                    "(special characters are not allowed)")


def test_yaml_1_2_floats_are_floats_not_strings():
    """PyYAML reads YAML 1.1, where `1e-3` and `-1.0e9` (no dot, or no exponent sign) are
    strings: `learning_rate: 1e-3` was a string, and a literal input `e: -1.0e9` named a node."""
    tree, _ = load_yaml("a: 1e-3\nb: -1.0e9\nc: 1E5\nd: .5e2\ne: '1e9'\nf: e9\ng: 2.5\nh: 1e\n", "m.yaml")
    assert tree == {"a": 0.001, "b": -1e9, "c": 1e5, "d": 50.0, "e": "1e9", "f": "e9", "g": 2.5, "h": "1e"}


def test_a_set_value_in_scientific_notation_is_a_float():
    from specflow.schema.overrides import parse_override

    assert parse_override("train.optimizer.adam.learning_rate=1e-4") == (("train", "optimizer", "adam", "learning_rate"), 1e-4)
    assert parse_override("nodes.x.y='1e-4'")[1] == "1e-4"
