"""Common subexpression elimination (runtime/optimize_cse.py) against golden graphs: equal
pure nodes merge (commutative inputs in either order, equal Consts); random and other stateful
ops, and nodes on different branches of a cond, never do."""

from __future__ import annotations

import numpy as np

from specflow.graph.builder import GraphBuilder
from specflow.graph.control_flow import cond
from specflow.runtime.optimize import OptimizeOptions, optimize
from specflow.runtime.prune import PruneOptions, prune
from specflow.runtime.session import Session, SessionConfig
from tests.runtime.golden import assert_golden


def _optimized(b: GraphBuilder, fetches, feeds=(), **flags):
    pruned = prune(b.graph_def, PruneOptions(list(fetches), list(feeds)))
    return optimize(pruned.graph_def, OptimizeOptions(**flags))


def _xy(b: GraphBuilder) -> None:
    for name in ("x", "y"):
        b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [2, 3]}, name=name)


def test_equal_pure_nodes_merge_into_the_first():
    b = GraphBuilder()
    _xy(b)
    b.add_op("Mul", ["x", "y"], name="m1")
    b.add_op("Mul", ["y", "x"], name="m2")  # commutative: the same value
    b.add_op("Sub", ["x", "y"], name="s1")
    b.add_op("Sub", ["y", "x"], name="s2")  # not commutative: kept
    b.add_op("AddN", [b.add_op("Sin", ["m1"], name="a").name, b.add_op("Sin", ["m2"], name="b").name, "s1", "s2"],
             name="out")  # fmt: skip
    r = _optimized(b, ["out"], ["x", "y"])
    assert_golden(
        r.graph_def,
        [
            "_arg_x_0_0 = _Arg()",
            "_arg_y_0_1 = _Arg()",
            "m1 = Mul(_arg_x_0_0, _arg_y_0_1)",
            "s1 = Sub(_arg_x_0_0, _arg_y_0_1)",
            "s2 = Sub(_arg_y_0_1, _arg_x_0_0)",
            "a = Sin(m1)",
            "out = AddN(a, a, s1, s2)",
            "_retval_out_0_0 = _Retval(out)",
        ],
    )
    assert r.merged == ["m2", "b"]
    assert "m2" in r.removed and "b" in r.removed


def test_equal_consts_merge_but_random_ops_never_do():
    b = GraphBuilder()
    dims = [b.const(np.array([2, 3], np.int32), name=f"dims{i}") for i in range(2)]
    b.const(np.array([2, 4], np.int32), name="other")
    for i in range(2):
        b.add_op("RandomUniform", [dims[i]], {"dtype": "float32", "seed": 1, "seed2": 2}, name=f"r{i}")
    b.add_op("Sub", ["r0", "r1"], name="d")
    r = _optimized(b, ["d"], fold_constants=False)
    assert_golden(
        r.graph_def,
        [
            "dims0 = Const()",
            "r0 = RandomUniform(dims0)",
            "r1 = RandomUniform(dims0)",
            "d = Sub(r0, r1)",
            "_retval_d_0_0 = _Retval(d)",
        ],
    )
    assert r.merged == ["dims1"]


def test_equal_nodes_on_different_branches_stay_apart():
    b = GraphBuilder()
    _xy(b)
    b.add_op("Placeholder", attrs={"dtype": "bool", "shape": []}, name="flag")
    out = cond(b, "flag", lambda b, a: b.add_op("Sin", [a]).name, lambda b, a: b.add_op("Sin", [a]).name, ["x"])
    b.add_op("Identity", [out.outputs[0]], name="z")
    r = _optimized(b, ["z"], ["x", "flag"])
    assert r.merged == []
    assert sum(n.op == "Sin" for n in r.graph_def.nodes) == 2
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    with Session(b.graph_def, SessionConfig(devices="cpu:1")) as sess:
        for flag in (True, False):
            np.testing.assert_allclose(sess.run("z", {"x": x, "flag": np.array(flag)}), np.sin(x), rtol=1e-6)
