"""The optimize stage keeps dead tensors dead: values folded from one branch of a ``cond`` stay
on that branch (runtime/optimize.py ``_control_source``), so Merge never forwards them.

Before the fix, the gradient of a cond input that only one branch reads (a ZerosLike for the
other branch) was folded into a Const with a control edge to the Switch. A control edge from a
Switch is live whichever branch runs, so Merge could forward those zeros: training through a
cond learned nothing for that input with ``optimize=True`` (the default) and was not told.
"""

from __future__ import annotations

import numpy as np
import pytest

from specflow.graph import dtypes
from specflow.graph.builder import GraphBuilder
from specflow.graph.control_flow import cond, while_loop
from specflow.runtime.optimize import OptimizeOptions, optimize
from specflow.runtime.prune import PruneOptions, prune
from specflow.runtime.session import Session, SessionConfig
from specflow.schema.loader import load_spec
from specflow.train.gradients import gradients
from specflow.train.graph import build_training_graph

F32, F64 = dtypes.float32, dtypes.float64

# Literal inputs, so the expected gradients below are plain arithmetic on them.
X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float32)
Y = np.array([[2.0, 3.0, -1.0], [0.5, -2.0, 4.0]], np.float32)
W = np.array([[1.0, -0.5, 0.25], [2.0, 1.0, -1.5]], np.float32)


def _issue_graph() -> tuple[GraphBuilder, list[str]]:
    """out = cond(flag, a*c, sin(a)) with a=x, c=y; loss = sum(out * w); d loss / d(x, y, w)."""
    b = GraphBuilder()
    for name, dtype in (("flag", dtypes.bool_), ("x", F32), ("y", F32), ("w", F32)):
        b.add_op("Placeholder", attrs={"dtype": dtype, "shape": [] if name == "flag" else [2, 3]}, name=name)
    r = cond(
        b, "flag",
        lambda b, a, c: b.add_op("Mul", [a, c]).name,
        lambda b, a, c: b.add_op("Sin", [a]).name,
        ["x", "y"],
    )  # fmt: skip
    prod = b.add_op("Mul", [r.outputs[0], "w"]).name
    loss = b.add_op("Sum", [prod, b.const(np.array([0, 1], np.int32))], name="loss").name
    return b, gradients(b, [loss], ["x", "y", "w"])


@pytest.mark.parametrize("optimized", [True, False])
@pytest.mark.parametrize("flag", [True, False])
def test_gradient_of_an_input_one_branch_reads(optimized, flag):
    b, grads = _issue_graph()
    with Session(b.graph_def, SessionConfig(optimize=optimized)) as sess:
        dx, dy, dw = sess.run(grads, {"flag": np.array(flag), "x": X, "y": Y, "w": W})
    if flag:  # out = x * y
        np.testing.assert_allclose(dy, X * W, rtol=1e-6)
        np.testing.assert_allclose(dx, Y * W, rtol=1e-6)
        np.testing.assert_allclose(dw, X * Y, rtol=1e-6)
    else:  # out = sin(x): y gets exactly zero
        np.testing.assert_array_equal(dy, np.zeros((2, 3), np.float32))
        np.testing.assert_allclose(dx, np.cos(X) * W, rtol=1e-6)
        np.testing.assert_allclose(dw, np.sin(X), rtol=1e-6)


def test_a_const_folded_from_a_branch_waits_on_that_branch_output():
    b, grads = _issue_graph()
    pruned = prune(b.graph_def, PruneOptions(feeds=["flag", "x", "y", "w"], fetches=grads))
    g = optimize(pruned.graph_def, OptimizeOptions()).graph_def
    ctrl = [n for n in g.nodes if n.name.startswith("ConstantFoldingCtrl/")]
    assert ctrl, "no branch-output identity was made for the folded zeros"
    switches = {n.name: n for n in g.nodes if n.op == "Switch"}
    for n in g.nodes:
        if n.op != "Const":
            continue
        for c in n.control_inputs:
            assert c not in switches, f"{n.name} has a control edge from Switch {c}: it would never be dead"
    for ident in ctrl:
        assert ident.op == "Identity" and ident.data_inputs[0].split(":")[0] in switches


# --- training through a cond, optimize on and off -----------------------------------------------

COND_MODEL = """
specflow: 1
name: cond_train
seed: 0
inputs:
  x: {dtype: float32, shape: [null, 3]}
  target: {dtype: float32, shape: [null, 3]}
  flag: {dtype: bool, shape: [], default: true}
variables:
  u: {shape: [3, 3], initializer: {random_normal: {stddev: 0.5}}}
  v: {shape: [3, 3], initializer: {random_normal: {stddev: 0.5}}}
  s: {shape: [3], initializer: ones}
nodes:
  h: {op: MatMul, inputs: [x, u]}
  out:
    cond:
      pred: flag
      inputs: {a: h, c: v, k: s}
      then: {nodes: {m: {op: MatMul, inputs: [a, c]}, t: {op: Mul, inputs: [m, k]}}, outputs: t}
      else: {op: Tanh, inputs: [a]}
  err: {op: SquaredDifference, inputs: [out, target]}
  loss: {op: Mean, inputs: [err]}
train:
  loss: loss
  optimizer: {sgd: {learning_rate: 0.1}}
  data: {source: {npy: {x: x.npy, target: t.npy}}, feeds: {x: x, target: target}, batch_size: 4}
  steps: 5
"""


def test_training_through_a_cond_gives_the_same_gradients_optimized_or_not(tmp_path):
    path = tmp_path / "cond_train.yaml"
    path.write_text(COND_MODEL)
    for name in ("x", "t"):
        np.save(tmp_path / f"{name}.npy", np.zeros((8, 3), np.float32))
    spec = load_spec(path)
    tg = build_training_graph(spec, spec.train, None)
    names = sorted(tg.gradients)
    grads = [tg.gradients[n] for n in names]
    rng = np.random.default_rng(3)
    batches = [
        {"x": rng.standard_normal((4, 3)).astype(np.float32),
         "target": rng.standard_normal((4, 3)).astype(np.float32),
         "flag": np.array(k % 3 != 2)}
        for k in range(6)
    ]  # fmt: skip
    runs = []
    for optimized in (True, False):
        with Session(tg.graph_def, SessionConfig(graph_seed=0, optimize=optimized)) as sess:
            sess.run([], targets=[tg.init_op])
            steps = []
            for feeds in batches:
                *g, loss = sess.run([*grads, tg.loss], feeds)
                sess.run([], feeds, targets=[tg.train_op])
                steps.append((g, loss))
            runs.append(steps)
    for k, ((g_opt, l_opt), (g_ref, l_ref)) in enumerate(zip(*runs, strict=True)):
        np.testing.assert_array_equal(l_opt, l_ref, err_msg=f"loss at step {k}")
        for name, a, r in zip(names, g_opt, g_ref, strict=True):
            np.testing.assert_array_equal(a, r, err_msg=f"gradient of {name} at step {k}")
    # The taken branch really trained v and s (the bug gave them zero gradients).
    taken = [g for (g, _), f in zip(runs[0], batches, strict=True) if f["flag"]]
    for name in ("v", "s"):
        assert any(np.any(g[names.index(name)] != 0) for g in taken), name


# --- property: random graphs with conds and loops -------------------------------------------------


class _RandomGraph:
    """A random differentiable graph over three [2, 3] float64 inputs: elementwise ops, constants
    (which the optimize stage folds), ZerosLike/OnesLike, nested conds whose branches read random
    subsets of the inputs, and counted while loops."""

    UNARY = ("Sin", "Tanh", "Square", "Neg", "ZerosLike", "OnesLike")
    BINARY = ("AddV2", "Sub", "Mul")

    def __init__(self, seed: int, defaults: tuple[bool, ...] | None = None):
        self.rng = np.random.default_rng(seed)
        self.b = GraphBuilder()
        self.flags = []
        for i in range(2):
            attrs = {"dtype": dtypes.bool_, "shape": []}
            if defaults is None:
                flag = self.b.add_op("Placeholder", attrs=attrs, name=f"p{i}")
            else:  # unfed, the optimize stage decides the conds on it (_dead_branches)
                flag = self.b.add_op("PlaceholderWithDefault", [self.b.const(np.array(defaults[i]))], attrs, name=f"p{i}")
            self.flags.append(flag.name)
        self.inputs = [
            self.b.add_op("Placeholder", attrs={"dtype": F64, "shape": [2, 3]}, name=f"x{i}").name
            for i in range(3)
        ]

    def const(self, b) -> str:
        value = (
            self.rng.choice([0.0, 1.0, 0.5, -2.0]) * np.ones((2, 3))
            if self.rng.random() < 0.7
            else self.rng.standard_normal((2, 3))
        )
        return b.const(value.astype(np.float64))

    def expr(self, b, pool: list[str], depth: int) -> str:
        r = self.rng.random()
        if depth > 0 and r < 0.2:
            return self.cond(b, pool, depth - 1)
        if depth > 0 and r < 0.3:
            return self.loop(b, pool, depth - 1)
        if r < 0.55:
            op = self.rng.choice(self.UNARY)
            return b.add_op(op, [self.pick(b, pool, depth)]).name
        op = self.rng.choice(self.BINARY)
        return b.add_op(op, [self.pick(b, pool, depth), self.pick(b, pool, depth)]).name

    def pick(self, b, pool, depth) -> str:
        r = self.rng.random()
        if r < 0.2:
            return self.const(b)
        if r < 0.4 and depth > 0:
            return self.expr(b, pool, depth - 1)
        return pool[self.rng.integers(len(pool))]

    def cond(self, b, pool, depth) -> str:
        k = int(self.rng.integers(1, len(pool) + 1))
        ins = list(self.rng.choice(pool, size=k, replace=False))
        pred = self.flags[self.rng.integers(len(self.flags))]

        def branch(b, *args):
            return self.expr(b, list(args), depth)

        return cond(b, pred, branch, branch, ins).outputs[0]

    def loop(self, b, pool, depth) -> str:
        trips = int(self.rng.integers(1, 4))
        start = self.pick(b, pool, depth)

        def body(b, i, h):
            h2 = b.add_op("Mul", [h, b.const(0.5, F64)]).name
            h3 = b.add_op("Sin", [b.add_op("AddV2", [h2, self.expr(b, [h], 0)]).name]).name
            return [b.add_op("AddV2", [i, b.const(np.int32(1))]).name, h3]

        out = while_loop(
            b, lambda b, i, h: b.add_op("Less", [i, b.const(np.int32(trips))]).name, body,
            [b.const(np.int32(0)), start],
        )  # fmt: skip
        return out.outputs[1]

    def build(self) -> tuple[str, list[str], list[str]]:
        outs = [self.expr(self.b, self.inputs, 2) for _ in range(2)]
        total = self.b.add_op("AddN", outs).name
        weight = self.b.const(self.rng.standard_normal((2, 3)))
        prod = self.b.add_op("Mul", [total, weight]).name
        loss = self.b.add_op("Sum", [prod, self.b.const(np.array([0, 1], np.int32))], name="loss").name
        grads = gradients(self.b, [loss], self.inputs)
        fetches = [loss] + [g for g in grads if g is not None]
        return loss, fetches, grads


@pytest.mark.parametrize("seed", range(48))
def test_random_graphs_with_conds_and_loops_optimize_to_the_same_values(seed):
    g = _RandomGraph(seed)
    _, fetches, _ = g.build()
    rng = np.random.default_rng(seed + 100)
    feeds = {x: rng.standard_normal((2, 3)) for x in g.inputs}
    results = {}
    for optimized in (True, False):
        with Session(g.b.graph_def, SessionConfig(optimize=optimized)) as sess:
            results[optimized] = [
                sess.run(fetches, {**feeds, "p0": np.array(p0), "p1": np.array(p1)})
                for p0 in (True, False) for p1 in (True, False)
            ]  # fmt: skip
    for case, (got, want) in enumerate(zip(results[True], results[False], strict=True)):
        for name, a, w in zip(fetches, got, want, strict=True):
            np.testing.assert_allclose(a, w, rtol=1e-12, atol=1e-12, err_msg=f"{name} (flags case {case})")


@pytest.mark.parametrize("seed", range(24))
def test_random_graphs_with_unfed_flags_decide_their_conds_at_plan_time(seed):
    defaults = (bool(seed % 2), bool(seed % 3))
    g = _RandomGraph(seed, defaults)
    _, fetches, _ = g.build()
    rng = np.random.default_rng(seed + 100)
    feeds = {x: rng.standard_normal((2, 3)) for x in g.inputs}
    cases = [{}, {"p0": np.array(not defaults[0])}, {"p1": np.array(defaults[1])}]
    results = {}
    for optimized in (True, False):
        with Session(g.b.graph_def, SessionConfig(optimize=optimized)) as sess:
            results[optimized] = [sess.run(fetches, {**feeds, **flags}) for flags in cases]
    for case, (got, want) in enumerate(zip(results[True], results[False], strict=True)):
        for name, a, w in zip(fetches, got, want, strict=True):
            np.testing.assert_allclose(a, w, rtol=1e-12, atol=1e-12, err_msg=f"{name} (flags case {case})")


def test_random_graphs_with_counted_loops_unroll_to_the_same_values():
    """Fetching the loss alone prunes the gradients' stack pushes: the forward loops are simple,
    and the optimize stage unrolls them (in branches of conds too: deadness through the copies)."""
    unrolled = 0
    for seed in range(48):
        g = _RandomGraph(seed)
        loss, _, _ = g.build()
        pruned = prune(g.b.graph_def, PruneOptions(feeds=[*g.inputs, *g.flags], fetches=[loss]))
        if not any(n.op == "Enter" for n in pruned.graph_def.nodes):
            continue
        unrolled += len(optimize(pruned.graph_def, OptimizeOptions()).unrolled)
        rng = np.random.default_rng(seed + 100)
        feeds = {x: rng.standard_normal((2, 3)) for x in g.inputs}
        results = {}
        for optimized in (True, False):
            with Session(g.b.graph_def, SessionConfig(optimize=optimized)) as sess:
                results[optimized] = [
                    sess.run(loss, {**feeds, "p0": np.array(p0), "p1": np.array(p1)})
                    for p0 in (True, False) for p1 in (True, False)
                ]  # fmt: skip
        np.testing.assert_allclose(results[True], results[False], rtol=1e-12, atol=1e-12, err_msg=f"seed {seed}")
    assert unrolled >= 5
