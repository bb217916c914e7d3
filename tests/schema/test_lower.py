"""Lowering spec -> GraphDef: golden structures and error messages with locations."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from specflow.graph.shapes import Shape
from specflow.schema.loader import load_spec_text
from tests.schema.spec_errors import error_lines

HEAD = """\
specflow: 1
name: t
inputs:
  x: {dtype: float32, shape: [null, 4]}
  labels: {dtype: int64, shape: [null]}
"""


def lower(body: str, head: str = HEAD):
    return load_spec_text(head + textwrap.dedent(body), "m.yaml")


def errors_of(body: str, head: str = HEAD) -> list[str]:
    return error_lines(lower, body, head)


def structure(spec, names):
    g = spec.graph_def
    return [(g.node(n).op, g.node(n).inputs) for n in names]


def test_placeholders_and_variable_golden():
    spec = lower("""\
        variables:
          w: {shape: [4, 2], initializer: {constant: 0.5}, device: /cpu:0}
        nodes:
          y: {op: MatMul, inputs: [x, w]}
        """)
    g = spec.graph_def
    assert [n.name for n in g] == [
        "x", "labels", "w", "w/Initializer/shape", "w/Initializer/value", "w/Initializer/Fill",
        "w/Assign", "w/Read/ReadVariableOp", "y", "init",
    ]
    assert g.node("x").op == "Placeholder" and g.node("x").attrs["shape"] == Shape([None, 4])
    assert g.node("w").op == "VarHandleOp" and g.node("w").attrs["shared_name"] == "w"
    assert g.node("w").device == "/cpu:0"
    assert structure(spec, ["w/Assign", "w/Read/ReadVariableOp", "y", "init"]) == [
        ("AssignVariableOp", ["w", "w/Initializer/Fill"]),
        ("ReadVariableOp", ["w"]),
        ("MatMul", ["x", "w/Read/ReadVariableOp"]),
        ("NoOp", ["^w/Assign"]),
    ]
    (var,) = spec.variables
    assert (var.name, var.read, var.assign, var.trainable) == ("w", "w/Read/ReadVariableOp", "w/Assign", True)
    assert spec.lowered.init_op == "init" and spec.lowered.collections["init_ops"] == ["w/Assign"]
    assert str(g.node("y").location) == "m.yaml:9:3"


def test_keyword_inputs_become_consts():
    spec = lower("""\
        nodes:
          r: {op: Reshape, inputs: [x], shape: [-1, 2, 2]}
          am: {op: ArgMax, inputs: [x], axis: 1, output_type: int32}
          m: {op: Mean, inputs: [x]}
          s: {op: Sum, inputs: [x], axis: [1], keep_dims: true}
          sp: {op: Split, inputs: [x], axis: 1, num_split: 2}
        """)
    g = spec.graph_def
    assert structure(spec, ["r", "am", "m", "s", "sp"]) == [
        ("Reshape", ["x", "r/shape"]),
        ("ArgMax", ["x", "am/dimension"]),
        ("Mean", ["x", "m/reduction_indices"]),
        ("Sum", ["x", "s/reduction_indices"]),
        ("Split", ["sp/split_dim", "x"]),
    ]
    np.testing.assert_array_equal(g.node("r/shape").attrs["value"], [-1, 2, 2])
    assert g.node("r/shape").attrs["dtype"].name == "int32"
    np.testing.assert_array_equal(g.node("m/reduction_indices").attrs["value"], [0, 1])  # spec default
    assert spec.tensor_spec("m").shape == Shape([])
    assert spec.tensor_spec("s").shape == Shape([None, 1])
    assert spec.tensor_spec("am").dtype.name == "int32"
    assert spec.tensor_spec("sp:1").shape == Shape([None, 2])


def test_literal_takes_dtype_of_sibling_input():
    spec = lower("""\
        nodes:
          y: {op: AddV2, inputs: [x], y: 1}
          z: {op: ConcatV2, inputs: [x, y], axis: -1}
        """)
    assert spec.graph_def.node("y/y").attrs["dtype"].name == "float32"
    assert structure(spec, ["z"]) == [("ConcatV2", ["x", "y", "z/axis"])]
    assert spec.tensor_spec("z").shape == Shape([None, 8])


def test_inline_nodes_and_control_deps():
    spec = lower("""\
        nodes:
          c: {op: Equal, inputs: [{op: ArgMax, inputs: [x], axis: 1}, labels]}
          d: {op: AddN, inputs: [{op: Relu, inputs: [x]}, {op: Relu, inputs: [x]}], after: [c]}
          e: {op: Identity, inputs: [d], colocate_with: c, device: /cpu:0}
        """)
    assert structure(spec, ["c/ArgMax", "c", "d/Relu", "d/Relu_1", "d"]) == [
        ("ArgMax", ["x", "c/ArgMax/dimension"]),
        ("Equal", ["c/ArgMax", "labels"]),
        ("Relu", ["x"]),
        ("Relu", ["x"]),
        ("AddN", ["d/Relu", "d/Relu_1", "^c"]),
    ]
    e = spec.graph_def.node("e")
    assert e.attrs["_class"] == ["loc:@c"] and e.device == "/cpu:0"
    assert str(spec.graph_def.node("c/ArgMax").location) == "m.yaml:7:27"


def test_forward_references_and_multi_output():
    spec = lower("""\
        nodes:
          loss: {op: Mean, inputs: ["xent:0"]}
          xent: {op: SparseSoftmaxCrossEntropyWithLogits, inputs: [logits, labels]}
          logits: {layer: dense, inputs: [x], units: 3}
          k: {op: Identity, inputs: [logits/kernel]}
        """)
    names = [n.name for n in spec.graph_def]
    assert names.index("logits") < names.index("xent") < names.index("loss")
    assert spec.graph_def.node("k").inputs == ["logits/kernel/Read/ReadVariableOp"]
    assert spec.tensor_spec("xent:1").shape == Shape([None, 3])


def test_training_flag_and_signatures():
    spec = lower("""\
        nodes:
          h: {layer: dropout, inputs: [x], rate: 0.5}
          probs: {op: Softmax, inputs: [h]}
        signatures:
          serving_default: {inputs: {images: x}, outputs: {probabilities: probs}}
        """)
    assert spec.lowered.training_flag == "training"
    sig = spec.signatures["serving_default"]
    assert sig["inputs"]["images"][0] == "x:0"
    tensor, tspec = sig["outputs"]["probabilities"]
    assert tensor == "probs:0" and tspec.shape == Shape([None, 4])
    head = HEAD + "  training: {dtype: bool, shape: [], default: true}\n"
    spec = lower("nodes:\n  h: {layer: dropout, inputs: [x], rate: 0.5}\n", head)
    assert spec.graph_def.node("training").op == "PlaceholderWithDefault"
    assert spec.graph_def.node("training/input").attrs["value"] == np.array(True)


@pytest.mark.parametrize(
    "body, expected",
    [
        ("nodes:\n  y: {op: Relu, inputs: [xx]}\n",
         "m.yaml:7:26: nodes.y.inputs.0: input 'xx' names no node (did you mean 'x'?)"),
        ("nodes:\n  y: {op: Relu, inputs: [x], after: [z]}\n",
         "m.yaml:7:37: nodes.y.after: 'z' names no node"),
        ("nodes:\n  y: {op: Relu, inputs: [x, x]}\n",
         "m.yaml:7:25: nodes.y.inputs: Relu takes 1 input(s) (features), got 2"),
        ("nodes:\n  y: {op: MatMul, inputs: [x]}\n",
         "m.yaml:7:27: nodes.y.inputs: MatMul is missing input 'b'; it takes (a, b)"),
        ("nodes:\n  y: {op: AddV2, inputs: [x, labels]}\n",
         "m.yaml:7:3: nodes.y: dtype mismatch in AddV2: input 'y' is int64 but input 'x' is float32"),
        ("nodes:\n  y: {op: Relu, inputs: [x], device: /gpu:0:1}\n", "m.yaml:7:38: nodes.y.device: malformed device '/gpu:0:1'"),
        ("nodes:\n  a: {op: Relu, inputs: [b]}\n  b: {op: Relu, inputs: [c]}\n  c: {op: Relu, inputs: [a]}\n",
         "m.yaml:7:3: nodes.a: cycle among nodes: a -> c -> b -> a"),
        ("nodes:\n  y: {op: Relu, inputs: [x]}\nsignatures:\n  s: {outputs: {p: yy}}\n",
         "m.yaml:9:20: signatures.s.outputs.p: signature 's' names a missing tensor 'yy' (did you mean 'y'?)"),
    ],
)
def test_errors(body, expected):
    errs = errors_of(body)
    assert any(e.startswith(expected) for e in errs), errs


def test_independent_errors_are_collected():
    errs = errors_of("nodes:\n  a: {op: Relu, inputs: [q]}\n  b: {op: Relu, inputs: [a]}\n  c: {op: Relu, inputs: [r]}\n")
    # b depends on the failed a: skipped, not reported.
    assert [e.split(": ")[1] for e in errs] == ["nodes.a.inputs.0", "nodes.c.inputs.0"]


def test_training_input_must_be_bool_scalar():
    head = HEAD + "  training: {dtype: float32, shape: []}\n"
    errs = errors_of("nodes:\n  y: {op: Relu, inputs: [x]}\n", head)
    assert errs == ["m.yaml:6:3: inputs.training: input 'training' is the training-mode flag and must be a bool "
                    "scalar (dtype: bool, shape: [])"]


def test_incompatible_shapes_name_both():
    errs = errors_of("variables:\n  w: {shape: [3, 2], initializer: zeros}\nnodes:\n  y: {op: MatMul, inputs: [x, w]}\n")
    assert len(errs) == 1 and errs[0].startswith("m.yaml:9:3: nodes.y: MatMul: ")
    assert "[?, 4]" in errs[0] and "[3, 2]" in errs[0]


def test_empty_axis_list_is_an_int32_const_and_reduces_nothing():
    spec = lower("""\
        nodes:
          s: {op: Sum, inputs: [x], axis: []}
          m: {op: Max, inputs: [x], axis: [], keep_dims: true}
        """)
    g = spec.graph_def
    assert g.node("s/reduction_indices").attrs["dtype"].name == "int32"
    assert g.node("s/reduction_indices").attrs["value"].shape == (0,)
    assert spec.tensor_spec("s").shape == Shape([None, 4])
    from specflow.runtime.session import Session

    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    with Session(g) as sess:
        s, m = sess.run(["s", "m"], {"x": x})
    np.testing.assert_array_equal(s, x)
    np.testing.assert_array_equal(m, x)


def test_const_value_is_cast_to_its_dtype_at_validation():
    spec = lower("""\
        nodes:
          k: {op: Const, value: 32, dtype: int32}
          f: {op: Const, value: [1, 2.5], dtype: float64}
          h: {op: Const, value: 65504, dtype: float16}
        """)
    g = spec.graph_def
    assert g.node("k").attrs["value"].dtype == np.int32 and g.node("k").attrs["value"] == 32
    assert g.node("f").attrs["value"].dtype == np.float64
    assert g.node("h").attrs["value"].dtype == np.float16
    from specflow.runtime.session import Session

    with Session(g) as sess:
        k = sess.run("k")
    assert k.dtype == np.int32 and k == 32


@pytest.mark.parametrize(
    "value, expected",
    [
        ("3000000000, dtype: int32", "3000000000 is out of range for int32 [-2147483648, 2147483647]"),
        ("[0, -1], dtype: uint8", "-1 is out of range for uint8 [0, 255]"),
        ("70000, dtype: float16", "70000 is out of range for float16"),
        ("1.5, dtype: int64", "expected integers for dtype int64, got 1.5"),
        ("1, dtype: bool", "expected booleans for dtype bool, got 1"),
        ("[true], dtype: float32", "expected numbers for dtype float32, got [True]"),
    ],
)
def test_const_value_out_of_range_or_wrong_kind_is_a_located_error(value, expected):
    errs = errors_of(f"nodes:\n  k: {{op: Const, value: {value}}}\n")
    assert errs == [f"m.yaml:7:25: nodes.k.value: Const value: {expected}"], errs


def test_const_whose_value_does_not_match_its_dtype_fails_in_the_builder():
    from specflow.errors import SpecflowError as Err
    from specflow.graph.builder import GraphBuilder

    b = GraphBuilder()
    with pytest.raises(Err, match="value has dtype int64, but dtype is int32"):
        b.add_op("Const", [], {"value": np.array(32, np.int64), "dtype": "int32"}, name="k")


def test_a_signature_output_needing_an_input_it_does_not_take_is_refused():
    """`outputs: {y: pred, mae: mae}` beside `inputs: {x: x}`, where `mae` needs the labels,
    validated; `export` then failed with "node 'y': Placeholder ... must be fed", no line."""
    body = """\
        nodes:
          y: {op: Relu, inputs: [x]}
          err: {op: Mean, inputs: [{op: Cast, inputs: [labels], DstT: float32}]}
          both: {op: AddV2, inputs: [{op: Mean, inputs: [y]}, err]}
        signatures:
          s: {inputs: {x: x}, outputs: {y: y, e: both}}
          whole: {inputs: {x: x, labels: labels}, outputs: {e: both}}
          cut: {inputs: {err: err, x: x}, outputs: {e: both}}
        """
    assert errors_of(body) == [
        "m.yaml:11:42: signatures.s.outputs.e: signature 's' output 'e' needs input 'labels', which the signature "
        "does not take (its inputs: x)"]
    assert lower(body.replace(", e: both}", "}")).signatures["cut"]["inputs"]["err"][0] == "err:0"


@pytest.mark.parametrize(
    "body, expected",
    [
        ("nodes:\n  y: {op: Relu, inputs: [x]}\n", None),  # the head below adds the input
        ("variables:\n  v: {shape: [2], dtype: uint8, initializer: {constant: 300}}\nnodes: {}\n",
         "m.yaml:7:3: variables.v: constant initializer: 300 is out of range for uint8 [0, 255]"),
        ("variables:\n  v: {shape: [2], dtype: int32, initializer: {constant: 1.5}}\nnodes: {}\n",
         "m.yaml:7:3: variables.v: constant initializer: expected integers for dtype int32, got 1.5"),
        ("nodes:\n  c: {op: AddV2, inputs: [labels], y: 1.5}\n",
         "m.yaml:7:39: nodes.c.y: input 'y' of AddV2: expected integers for dtype int64, got 1.5"),
    ],
)
def test_a_value_that_does_not_fit_its_dtype_is_refused(body, expected):
    """`default: 300` on a uint8 input and `{constant: 300}` on a uint8 variable were internal
    errors (OverflowError); `default: 1.5` on an int32 input, `{constant: 1.5}` on an int32
    variable and a literal `y: 1.5` added to int64 labels were truncated to 1, silently. A Const
    node already said what was wrong; these say it the same way."""
    if expected is None:
        for default, message in (("300", "default: 300 is out of range for uint8 [0, 255]"),
                                 ("1.5", "default: expected integers for dtype uint8, got 1.5")):
            head = HEAD + f"  k: {{dtype: uint8, shape: [], default: {default}}}\n"
            assert errors_of(body, head) == [f"m.yaml:6:6: inputs.k: {message}"]
        return
    assert errors_of(body) == [expected]


def test_a_node_named_init_is_refused():
    """`init` is the NoOp running every initializer (`targets=["init"]`): a user's node of that
    name took it silently (the NoOp became init_1, and running "init" ran the user's node)."""
    assert errors_of("""\
        nodes:
          init: {op: Identity, inputs: [x]}
        """) == ["m.yaml:7:3: nodes.init: 'init' is the name of the op that runs every initializer; "
                 "name the node otherwise"]
