"""Functions that declare their own variables: one copy per call site under the call's scope,
tied across calls with `share:`, and the errors when sharing is misused."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from specflow.errors import SpecflowError
from specflow.runtime.session import Session
from specflow.schema.loader import load_spec_text
from specflow.train.gradients import gradients
from tests.schema.spec_errors import error_lines

HEAD = """\
specflow: 1
name: f
inputs:
  x: {dtype: float32, shape: [null, 4]}
functions:
  norm:
    attrs: {width: {type: int, default: 4}}
    inputs: {x: {dtype: float32, shape: [null, D]}}
    variables:
      gamma: {shape: [$width], initializer: {constant: 2.0}}
      beta: {shape: [$width], initializer: zeros, trainable: false}
    nodes:
      h: {layer: dense, inputs: [x], units: $width, kernel_initializer: ones}
      y: {op: AddV2, inputs: [{op: Mul, inputs: [h, gamma]}, beta]}
    outputs: {y: y}
  other:
    inputs: {x: {dtype: float32}}
    variables:
      gamma: {shape: [4], initializer: ones}
    nodes:
      y: {op: Mul, inputs: [x, gamma]}
    outputs: {y: y}
"""


def lower(nodes: str):
    return load_spec_text(HEAD + "nodes:\n" + textwrap.indent(textwrap.dedent(nodes), "  "), "f.yaml")


def errors_of(nodes: str) -> list[str]:
    return error_lines(lower, nodes)


def test_each_call_gets_its_own_variables_under_its_scope():
    spec = lower("""\
        a: {call: norm, inputs: [x]}
        b: {call: norm, inputs: [a]}
    """)
    names = [v.name for v in spec.variables]
    assert names == ["a/gamma", "a/beta", "a/h/kernel", "a/h/bias", "b/gamma", "b/beta", "b/h/kernel", "b/h/bias"]
    assert not next(v for v in spec.variables if v.name == "a/beta").trainable
    with Session(spec.graph_def) as s:
        s.run([], targets=["init"])
        x = np.ones((2, 4), np.float32)
        # h = x @ ones = 4; y = 2 h; then again: 4 * 8 = 32, times 2.
        np.testing.assert_allclose(s.run("b/y", {"x": x}), np.full((2, 4), 64.0))


def test_share_ties_every_variable_of_the_call():
    spec = lower("""\
        a: {call: norm, inputs: [x]}
        b: {call: norm, inputs: [a], share: a}
        loss: {op: Sum, inputs: [b], axis: [0, 1]}
    """)
    assert [v.name for v in spec.variables] == ["a/gamma", "a/beta", "a/h/kernel", "a/h/bias"]
    g = spec.graph_def
    assert g.node("b/h/MatMul").inputs[1] == "a/h/kernel/Read/ReadVariableOp"
    # The tied gamma's gradient sums both uses: d/dgamma of sum(((x K) g) K g) by finite differences.
    b = spec.lowered.builder
    read = "a/gamma/Read/ReadVariableOp"
    (grad,) = gradients(b, ["loss"], [read])
    with Session(b.graph_def) as s:
        s.run([], targets=["init"])
        x = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
        gamma = s.run(read)
        got = s.run(grad, {"x": x})
        num = np.zeros(4)
        for j in range(4):
            d = np.zeros(4, np.float32)
            d[j] = 1e-2
            num[j] = (s.run("loss", {"x": x, read: gamma + d}) - s.run("loss", {"x": x, read: gamma - d})) / 2e-2
        np.testing.assert_allclose(got, num, rtol=1e-3)


def test_checkpoint_names_do_not_move_when_other_nodes_change():
    before = [v.name for v in lower("a: {call: norm, inputs: [x]}\n").variables]
    after = lower("""\
        pre: {layer: dense, inputs: [x], units: 4}
        a: {call: norm, inputs: [x]}
        z: {call: norm, inputs: [pre]}
    """).variables
    assert [v.name for v in after if v.name.startswith("a/")] == before


def test_attr_sized_variables():
    spec = lower("a: {call: norm, inputs: [x], attrs: {width: 3}}\n")
    assert {v.name: v.shape.as_list() for v in spec.variables}["a/gamma"] == [3]


def test_share_of_a_call_that_shares_ties_to_the_first():
    """One encoder on three inputs written as a chain (`c` shares `b`, which shares `a`) failed:
    "variable 'c/h/kernel' shares with 'b', which has no variable 'b/h/kernel'"."""
    spec = lower("""\
        a: {call: norm, inputs: [x]}
        b: {call: norm, inputs: [x], share: a}
        c: {call: norm, inputs: [x], share: b}
    """)
    assert [v.name for v in spec.variables] == ["a/gamma", "a/beta", "a/h/kernel", "a/h/bias"]
    assert spec.graph_def.node("c/h/MatMul").inputs[1] == "a/h/kernel/Read/ReadVariableOp"


def test_share_errors():
    assert errors_of("""\
        a: {call: norm, inputs: [x]}
        b: {call: norm, inputs: [a], share: aa}
    """) == ["f.yaml:25:39: nodes.b.share: share: 'aa' names no call of a function (did you mean 'a'?)"]
    errs = errors_of("""\
        a: {call: norm, inputs: [x]}
        c: {call: other, inputs: [a], share: a}
    """)
    assert errs == ["f.yaml:25:40: nodes.c.share: share: 'a' calls 'norm', not 'other'; only calls of one "
                    "function share variables"]
    errs = errors_of("""\
        a: {call: norm, inputs: [x]}
        w: {call: norm, inputs: [a], attrs: {width: 3}, share: a}
    """)
    assert len(errs) == 1 and "variable 'w/gamma' shares 'a/gamma' but is float32[3], not float32[4]" in errs[0]
    errs = errors_of("""\
        d: {layer: dense, inputs: [x], units: 4}
        b: {call: norm, inputs: [x], share: d}
    """)
    assert errs == ["f.yaml:25:39: nodes.b.share: share: 'd' names no call of a function"]


def test_bad_variable_in_function_is_located():
    text = HEAD.replace("initializer: zeros, trainable: false", "initializer: zeroes") + "nodes: {}\n"
    with pytest.raises(SpecflowError) as e:
        load_spec_text(text, "f.yaml")
    assert "functions.norm.variables.beta.initializer" in e.value.format()
    assert "did you mean 'zeros'" in e.value.format()


def test_share_ties_layers_nested_scopes_too():
    """An encoder with attention (query/kernel, ...) and a GRU, applied to two inputs with one set
    of weights (a siamese network): the second call creates no variable."""
    spec = load_spec_text("""\
specflow: 1
name: siamese
inputs:
  a: {dtype: float32, shape: [null, 5, 4]}
  b: {dtype: float32, shape: [null, 5, 4]}
functions:
  encode:
    inputs: {x: {dtype: float32, shape: [null, T, 4]}}
    nodes:
      att: {layer: multi_head_attention, inputs: [x], num_heads: 2, key_dim: 2}
      rnn: {layer: gru, inputs: [att], units: 3}
    outputs: {y: rnn}
nodes:
  left: {call: encode, inputs: [a]}
  right: {call: encode, inputs: [b], share: left}
  distance: {op: Sum, inputs: [{op: SquaredDifference, inputs: [left, right]}], axis: 1}
""", "s.yaml")
    names = [v.name for v in spec.variables]
    assert names and all(n.startswith("left/") for n in names)
    x = np.random.default_rng(1).normal(size=(2, 5, 4)).astype(np.float32)
    with Session(spec.graph_def) as s:
        s.run([], targets=["init"])
        np.testing.assert_allclose(s.run("distance", {"a": x, "b": x}), 0, atol=1e-10)
        assert s.run("distance", {"a": x, "b": x + 1}).min() > 0


LOOPED = """\
specflow: 1
name: looped
inputs:
  x: {dtype: float32, shape: [null, 3]}
  flag: {dtype: bool, shape: []}
functions:
  step:
    inputs: {h: {dtype: float32, shape: [null, 3]}}
    variables:
      scale: {shape: [3], initializer: {constant: 0.5}}
    nodes:
      d: {layer: dense, inputs: [h], units: 3, activation: tanh}
      y: {op: Mul, inputs: [d, scale]}
    outputs: {y: y}
nodes:
  loop:
    while:
      vars: {i: 0, h: x}
      cond: {op: Less, inputs: [i], y: 3}
      body:
        i: {op: AddV2, inputs: [i], y: 1}
        h: {call: step, inputs: [h]}
  branch:
    cond:
      pred: flag
      inputs: {a: "loop:1"}
      then: {call: step, inputs: [a]}
      else: {op: Identity, inputs: [a]}
  loss: {op: Sum, inputs: [{op: Square, inputs: [branch]}], axis: [0, 1]}
"""


def test_a_function_with_variables_inside_a_loop_and_a_cond():
    """Its variables are lifted out (TF's init_scope): one copy per call site, shared by every
    iteration; the values and gradients are those of the unrolled math."""
    spec = load_spec_text(LOOPED, "looped.yaml")
    names = [v.name for v in spec.variables]
    assert names == ["loop/body/h/scale", "loop/body/h/d/kernel", "loop/body/h/d/bias",
                     "branch/then/step/scale", "branch/then/step/d/kernel", "branch/then/step/d/bias"]
    b = spec.lowered.builder
    reads = [f"{n}/Read/ReadVariableOp" for n in names]
    grads = gradients(b, ["loss"], reads)
    x = np.random.default_rng(1).normal(size=(2, 3)).astype(np.float32)
    with Session(b.graph_def) as s:
        s.run([], targets=["init"])
        w = dict(zip(names, s.run(reads)))

        def numpy_loss(w, flag):
            h = x.astype(np.float64)
            for _ in range(3):
                h = np.tanh(h @ w["loop/body/h/d/kernel"] + w["loop/body/h/d/bias"]) * w["loop/body/h/scale"]
            if flag:
                h = np.tanh(h @ w["branch/then/step/d/kernel"] + w["branch/then/step/d/bias"]) * w["branch/then/step/scale"]
            return (h**2).sum()

        for flag in (True, False):
            feeds = {"x": x, "flag": np.array(flag)}
            np.testing.assert_allclose(s.run("loss", feeds), numpy_loss(w, flag), rtol=1e-5)
            got = s.run(grads, feeds)
            for name, g in zip(names, got):
                if not flag and name.startswith("branch/"):
                    assert g is None or not np.any(g)
                    continue
                num = np.zeros(w[name].shape)
                for j in range(w[name].size):
                    hi, lo = dict(w), dict(w)
                    hi[name] = w[name].astype(np.float64).copy()
                    lo[name] = w[name].astype(np.float64).copy()
                    hi[name].flat[j] += 1e-6
                    lo[name].flat[j] -= 1e-6
                    num.flat[j] = (numpy_loss(hi, flag) - numpy_loss(lo, flag)) / 2e-6
                np.testing.assert_allclose(g, num, rtol=2e-3, atol=1e-5)
