"""optimize(): each rewrite against a golden graph, and whole models against the unoptimized graph."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

from specflow.graph.builder import GraphBuilder
from specflow.runtime.optimize import OptimizeOptions, optimize
from specflow.runtime.prune import PruneOptions, prune
from specflow.runtime.session import Session, SessionConfig
from specflow.schema.loader import load_spec
from specflow.train.graph import build_training_graph
from tests.runtime.golden import assert_golden

MODELS = Path(__file__).resolve().parents[2] / "models"


def _optimized(b: GraphBuilder, fetches, feeds=(), targets=(), feed_shapes=None, **flags):
    pruned = prune(b.graph_def, PruneOptions(list(fetches), list(feeds), list(targets)))
    shapes = dict(zip(pruned.feed_args, feed_shapes or ()))
    return optimize(pruned.graph_def, OptimizeOptions(feed_shapes=shapes, keep=set(targets), **flags))


def _mean_grad_plumbing() -> GraphBuilder:
    """x / size(x) written the way gradients are: Shape, Prod, Cast, RealDiv."""
    b = GraphBuilder()
    b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [None, 3]}, name="x")
    b.add_op("Shape", ["x"], {"out_type": "int32"}, name="shape")
    b.add_op("Prod", ["shape", b.const(np.array([0], np.int32), name="axis")], name="size")
    b.add_op("Cast", ["size"], {"DstT": "float32"}, name="n")
    b.add_op("RealDiv", ["x", "n"], name="y")
    return b


def test_fed_shapes_fold_the_shape_plumbing_into_one_const():
    r = _optimized(_mean_grad_plumbing(), ["y"], ["x"], feed_shapes=[(4, 3)])
    assert_golden(
        r.graph_def,
        [
            "_arg_x_0_0 = _Arg()",
            "n = Const(^_arg_x_0_0) {value=12.0}",  # keeps the edge to the producer it stopped reading
            "y = RealDiv(_arg_x_0_0, n)",
            "_retval_y_0_0 = _Retval(y)",
        ],
        ["value"],
    )
    assert r.folded == ["shape", "size", "n"]
    assert set(r.removed) == {"axis", "shape", "size"}


def test_without_fed_shapes_an_unknown_dim_is_not_folded():
    r = _optimized(_mean_grad_plumbing(), ["y"], ["x"])
    assert r.folded == []
    assert [n.op for n in r.graph_def.nodes] == ["_Arg", "Const", "Shape", "Prod", "Cast", "RealDiv", "_Retval"]


def test_ones_like_of_a_static_shape_folds_but_stateful_ops_never_do():
    b = GraphBuilder()
    b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [2]}, name="x")
    b.add_op("OnesLike", ["x"], name="ones")
    b.add_op("RandomUniform", [b.const(np.array([2], np.int32), name="dims")], {"dtype": "float32"}, name="u")
    b.add_op("AddV2", ["ones", "u"], name="y")
    r = _optimized(b, ["y"], ["x"])
    assert_golden(
        r.graph_def,
        [
            "_arg_x_0_0 = _Arg()",
            "dims = Const() {value=[2]}",
            # folded, then made a scalar operand (it has one value), keeping the control edge
            "ones/scalar = Const(^_arg_x_0_0) {value=1.0}",
            "u = RandomUniform(dims)",
            "y = AddV2(ones/scalar, u)",
            "_retval_y_0_0 = _Retval(y)",
        ],
        ["value"],
    )


def test_each_known_output_of_a_multi_output_node_becomes_its_own_const():
    b = GraphBuilder()
    b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [4, 1]}, name="a")
    b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [4, 5]}, name="c")
    b.add_op("BroadcastGradientArgs", [b.add_op("Shape", ["a"], name="sa").name,
                                       b.add_op("Shape", ["c"], name="sc").name], name="bga")  # fmt: skip
    b.add_op("Sum", ["c", "bga:1"], {"keep_dims": True}, name="y")
    r = _optimized(b, ["y"], ["a", "c"], simplify=False)  # a Sum over no axes would go: kept here
    assert_golden(
        r.graph_def,
        [
            "_arg_a_0_0 = _Arg()",
            "_arg_c_0_1 = _Arg()",
            "ConstantFolding/bga-folded-1 = Const(^_arg_a_0_0, ^_arg_c_0_1) {value=[]}",
            "y = Sum(_arg_c_0_1, ConstantFolding/bga-folded-1)",
            "_retval_y_0_0 = _Retval(y)",
        ],
        ["value"],
    )
    assert r.folded == ["sa", "sc", "bga:1"]


def test_exact_simplifications_forward_their_input():
    b = GraphBuilder()
    b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [2, 3]}, name="x")
    b.add_op("Identity", [b.add_op("Identity", ["x"], name="i1").name], name="i2")
    b.add_op("Reshape", ["i2", b.const(np.array([2, 3], np.int32), name="same")], name="r")
    b.add_op("Mul", [b.const(np.ones((1, 3), np.float32), name="ones"), "r"], name="m")
    b.add_op("AddN", ["m"], name="s")
    b.add_op("EnsureShape", ["s"], {"shape": [2, -1]}, name="e")
    b.add_op("Sum", ["e", b.const(np.zeros(0, np.int32), name="no_axes")], name="z")
    b.add_op("Neg", ["z"], name="y")
    b.add_op("Identity", ["x"], name="pivot")
    b.add_op("NoOp", control_inputs=["pivot"], name="after")
    r = _optimized(b, ["y"], ["x"], targets=["after"])
    assert_golden(
        r.graph_def,
        [
            "_arg_x_0_0 = _Arg()",
            "pivot = Identity(_arg_x_0_0)",  # a control edge leaves it: kept
            "y = Neg(_arg_x_0_0)",
            "after = NoOp(^pivot)",
            "_retval_y_0_0 = _Retval(y)",
        ],
    )
    assert r.forwarded == ["i1", "i2", "r", "m", "s", "e", "z"]


def test_ensure_shape_of_an_unknown_shape_and_sums_over_axes_are_kept():
    b = GraphBuilder()
    b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [None, 3]}, name="x")
    b.add_op("EnsureShape", ["x"], {"shape": [2, 3]}, name="e")  # checks the fed batch at run time
    b.add_op("Sum", ["e", b.const(np.array([1], np.int32))], name="y")
    assert _optimized(b, ["y"], ["x"]).forwarded == []


def test_mul_by_ones_that_broadcasts_is_kept():
    b = GraphBuilder()
    b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [3]}, name="x")
    b.add_op("Mul", ["x", b.const(np.ones((2, 3), np.float32), name="ones")], name="y")
    assert _optimized(b, ["y"], ["x"]).forwarded == []


def _dense(b, x, units, name, relu):
    w = b.const(np.ones((3, units), np.float32), name=f"{name}/w")
    bias = b.const(np.ones(units, np.float32), name=f"{name}/b")
    out = b.add_op("BiasAdd", [b.add_op("MatMul", [x, w], name=f"{name}/MatMul").name, bias], name=f"{name}/BiasAdd").name
    return b.add_op("Relu", [out], name=name).name if relu else out


def test_matmul_bias_add_relu_fuse_under_the_last_name():
    b = GraphBuilder()
    b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [None, 3]}, name="x")
    _dense(b, "x", 3, "h", relu=True)
    _dense(b, "h", 2, "out", relu=False)
    b.add_op("Identity", ["h/MatMul"], name="peek")  # a second consumer: this MatMul stays unfused
    _dense(b, "x", 2, "other", relu=False)
    # cse=False: "other"'s weights equal "out"'s, and would be merged.
    r = _optimized(b, ["out/BiasAdd", "peek", "other/BiasAdd"], ["x"], simplify=False, cse=False)
    assert_golden(
        r.graph_def,
        [
            "_arg_x_0_0 = _Arg()",
            "h/w = Const()",
            "h/b = Const()",
            "out/w = Const()",
            "out/b = Const()",
            "other/w = Const()",
            "other/b = Const()",
            "h/MatMul = MatMul(_arg_x_0_0, h/w)",
            "other/BiasAdd = _FusedMatMul(_arg_x_0_0, other/w, other/b) {fused_ops=[BiasAdd], num_args=1}",
            "h/BiasAdd = BiasAdd(h/MatMul, h/b)",
            "peek = Identity(h/MatMul)",
            "_retval_other/BiasAdd_0_2 = _Retval(other/BiasAdd)",
            "h = Relu(h/BiasAdd)",
            "_retval_peek_0_1 = _Retval(peek)",
            "out/BiasAdd = _FusedMatMul(h, out/w, out/b) {fused_ops=[BiasAdd], num_args=1}",
            "_retval_out/BiasAdd_0_0 = _Retval(out/BiasAdd)",
        ],
        ["fused_ops", "num_args"],
    )


def test_a_fused_relu_chain_computes_what_the_unfused_one_does():
    b = GraphBuilder()
    b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [None, 3]}, name="x")
    _dense(b, "x", 3, "h", relu=True)
    x = np.array([[1.0, -2.0, 0.5], [-3.0, 0.0, 1.0]], np.float32)
    r = _optimized(b, ["h"], ["x"])
    assert r.fused == ["h"]
    with Session(b.graph_def) as sess:
        np.testing.assert_array_equal(sess.run("h", {"x": x}), np.maximum(x @ np.ones((3, 3)) + 1, 0))


# --- Session: plans per fed shape, and optimized == unoptimized on the models -----------------------


def test_session_specialises_per_fed_shape_and_stays_correct():
    b = _mean_grad_plumbing()
    with Session(b.graph_def) as sess:
        for rows in [1, 4, 4, 7, *range(10, 20)]:  # more shapes than the per-call plan cache holds
            x = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3)
            np.testing.assert_allclose(sess.run("y", {"x": x}), x / x.size, rtol=1e-6)


def _feeds(spec, rng, batch=6):
    out = {}
    for name, inp in spec.model.inputs.items():
        if inp.has_default:
            continue
        shape = [batch if d is None else d for d in inp.shape]
        # ints in [0, 2): a valid class label and token id for every model, 2-class ones included
        out[name] = (rng.integers(0, 2, shape) if inp.dtype.startswith("int") else rng.standard_normal(shape)).astype(inp.dtype)
    return out


@pytest.mark.parametrize("path", sorted(p.name for p in MODELS.glob("*.yaml")))
def test_optimized_training_steps_equal_unoptimized(path):
    spec = load_spec(MODELS / path)
    if spec.train is None:
        pytest.skip("no train section")
    tg = build_training_graph(spec, spec.train, None)
    feeds = _feeds(spec, np.random.default_rng(0))
    devices = "cpu:2" if "/cpu:1" in (MODELS / path).read_text() else "cpu:1"
    runs, fused = [], False
    for flag in (True, False):
        with Session(tg.graph_def, SessionConfig(devices=devices, graph_seed=0, optimize=flag)) as sess:
            sess.run([], targets=[tg.init_op])
            losses = [sess.run(tg.loss, feeds, targets=[tg.train_op]) for _ in range(3)]
            runs.append((losses, sess.run([v.read for v in tg.trainable])))
            fused |= any(n.op == "_FusedConv2DMaxPoolTrainGrad" for n in _step_nodes(sess))
    (opt_losses, opt_vars), (ref_losses, ref_vars) = runs
    # Bit for bit, but where training's conv + pool fusion (optimize_fuse.fuse_conv_pool_training)
    # sums the filter and bias gradients over the same rows in another order (rounding only).
    check = functools.partial(np.testing.assert_allclose, rtol=1e-5, atol=1e-7) if fused else np.testing.assert_array_equal
    check(opt_losses, ref_losses)
    for got, want in zip(opt_vars, ref_vars, strict=True):
        check(got, want)


def _step_nodes(sess: Session) -> list:
    """The nodes of every partition of the session's plans so far."""
    plans = [p for c in sess._calls.values() for p in ([c.plan] if c.by_shape is None else c.by_shape.values())]
    return [n for p in plans if p is not None for gd in p.partitions.values() for n in gd.nodes]


def _scaled(c: np.ndarray, x_shape=(4, 3), op="Mul") -> GraphBuilder:
    b = GraphBuilder()
    b.add_op("Placeholder", attrs={"dtype": "float32", "shape": list(x_shape)}, name="x")
    b.add_op(op, [b.const(c, name="c"), "x"], name="y")
    return b


def test_a_uniform_constant_operand_becomes_a_scalar_const():
    r = _optimized(_scaled(np.full((4, 1), 1 / 64, np.float32)), ["y"], ["x"])
    assert_golden(
        r.graph_def,
        [
            "_arg_x_0_0 = _Arg()",
            "c/scalar = Const() {value=0.015625}",
            "y = Mul(c/scalar, _arg_x_0_0)",
            "_retval_y_0_0 = _Retval(y)",
        ],
        ["value"],
    )
    assert r.scalarized == ["y:0"] and "c" in r.removed


@pytest.mark.parametrize("op", ["Mul", "RealDiv", "AddV2", "Sub"])
def test_scalar_operands_give_the_same_bits(op):
    x = (np.random.default_rng(3).standard_normal((4, 3)) * 1e3).astype(np.float32)
    x[0, 0], x[1, 1] = np.inf, -0.0
    c = np.full((4, 3), np.float32(0.1), np.float32)
    outs = []
    for optimize_graph in (False, True):
        with Session(_scaled(c, op=op).graph_def, SessionConfig(devices="cpu:1", optimize=optimize_graph)) as sess:
            outs.append(sess.run("y", {"x": x}))
    assert outs[0].tobytes() == outs[1].tobytes()


def test_constants_that_widen_the_result_or_differ_in_bits_are_kept():
    widening = _optimized(_scaled(np.full((4, 1), 2, np.float32), x_shape=(1, 3)), ["y"], ["x"])
    signed_zeros = _optimized(_scaled(np.array([[0.0], [-0.0], [0.0], [0.0]], np.float32)), ["y"], ["x"])
    unknown = _optimized(_scaled(np.full((4, 1), 2, np.float32), x_shape=(None, 3)), ["y"], ["x"])
    for r in (widening, signed_zeros, unknown):
        assert r.scalarized == []
        assert [n.name for n in r.graph_def.nodes if n.op == "Const"] == ["c"]


def test_a_second_fold_reads_consts_an_earlier_fold_appended():
    # Folding a node of several outputs (BroadcastGradientArgs) appends one Const per output at
    # the end of the order, after their consumers; a later fold (after an unroll or a decided
    # cond) met those consumers first and failed with a KeyError (tf_fuzz_parity.py --family 4:
    # Betainc's gradient beside non_max_suppression_padded's loop)
    from specflow.graph.dtypes import float32
    from specflow.runtime.optimize import OptimizeResult, _fold, _Graph

    b = GraphBuilder()
    x = b.add_op("Placeholder", [], {"dtype": float32, "shape": [2, 3]}, name="x").name
    y = b.add_op("Placeholder", [], {"dtype": float32, "shape": [3]}, name="y").name
    sx, sy = b.add_op("Shape", [x], {}, name="sx").name, b.add_op("Shape", [y], {}, name="sy").name
    args = b.add_op("BroadcastGradientArgs", [sx, sy], {}, name="args")
    r1 = b.add_op("Sum", [x, f"{args.name}:1"], {"keep_dims": False}, name="sum1").name
    g = _Graph(b.graph_def)
    result = OptimizeResult(b.graph_def)
    _fold(g, result)
    assert any(n.name.startswith("ConstantFolding/args-folded-") for n in g.live())
    _fold(g, result)  # the appended Consts come after sum1 in the order
    with Session(b.graph_def) as s:
        want = s.run(r1, {"x": np.ones((2, 3), np.float32), "y": np.ones(3, np.float32)})
    assert want.tolist() == [2.0, 2.0, 2.0]
