"""runtime/optimize_flags.py: inference without feeding ``training`` (the flag folded to its
default, the training branch's dropout masks and batch statistics not computed, the same values
as before), and Conv2D's im2col shared with its filter gradient."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from specflow.graph.builder import GraphBuilder
from specflow.runtime import optimize as opt
from specflow.runtime.pipeline import compile_step
from specflow.runtime.session import Session, SessionConfig
from specflow.schema.loader import load_spec
from specflow.train.graph import build_training_graph

MODELS = Path(__file__).resolve().parents[2] / "models"
_CPU = ["/job:localhost/replica:0/task:0/device:CPU:0"]


def _ops(graph_def) -> list[str]:
    return [n.op for n in graph_def.nodes]


def test_an_unfed_training_flag_prunes_dropout_and_batch_statistics():
    spec = load_spec(MODELS / "mnist_cnn.yaml")
    tg = build_training_graph(spec, spec.train, None)
    x = np.random.default_rng(0).standard_normal((5, 64)).astype(np.float32)
    step = compile_step(tg.graph_def, _CPU, feeds=["images"], fetches=["probs"], feed_shapes=[x.shape])
    ops = _ops(step.optimized.graph_def)
    assert "training" in step.optimized.unfed
    assert "RandomUniform" not in ops and "SelectV2" not in ops
    assert "Mean" not in ops  # batch norm's batch moments
    fed = compile_step(tg.graph_def, _CPU, feeds=["images", "training"], fetches=["probs"],
                       feed_shapes=[x.shape, ()])  # fmt: skip
    # fed: both branches stay (dropout's mask fused on CPUs, optimize_fuse_train.py)
    assert "_RandomUniformMask" in _ops(fed.optimized.graph_def)
    results = []
    for optimize in (True, False):
        with Session(tg.graph_def, SessionConfig(devices="cpu:1", graph_seed=0, optimize=optimize)) as sess:
            sess.run([], targets=[tg.init_op])
            sess.run(tg.loss, {"images": x, "labels": np.arange(5)}, targets=[tg.train_op])  # moving stats move
            results.append((sess.run("probs", {"images": x}), sess.run("probs", {"images": x, "training": False})))
    (opt, opt_fed), (ref, ref_fed) = results
    # Unfed, batch norm's scale is folded into conv2's filter (optimize_fuse.py): the same
    # products summed in another order, so equal to float32 rounding, not bit for bit.
    assert "bn2/mul_2" in step.optimized.folded_scales
    np.testing.assert_allclose(opt, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(opt, opt_fed, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(ref, ref_fed)


def _select(default: bool, cond_shape=()) -> GraphBuilder:
    b = GraphBuilder()
    b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [2, 3]}, name="x")
    flag = b.const(np.full(cond_shape, default), name="flag/default")
    b.add_op("PlaceholderWithDefault", [flag], {"dtype": "bool", "shape": list(cond_shape)}, name="flag")
    b.add_op("RandomUniform", [b.const(np.array([2, 3], np.int32), name="dims")], {"dtype": "float32"}, name="noise")
    b.add_op("SelectV2", ["flag", "noise", "x"], name="y")
    return b


def test_select_on_a_folded_flag_forwards_the_taken_operand():
    for default, kept in ((False, False), (True, True)):
        step = compile_step(_select(default).graph_def, _CPU, feeds=["x"], fetches=["y"], feed_shapes=[(2, 3)])
        assert ("RandomUniform" in _ops(step.optimized.graph_def)) is kept
        assert "SelectV2" not in _ops(step.optimized.graph_def)
    # Only scalar bool flags are folded: a [2, 3] condition stays a run-time choice.
    step = compile_step(_select(False, (2, 3)).graph_def, _CPU, feeds=["x"], fetches=["y"], feed_shapes=[(2, 3)])
    assert step.optimized.unfed == [] and "SelectV2" in _ops(step.optimized.graph_def)


def test_a_cond_on_an_unfed_flag_keeps_only_the_taken_branch():
    from specflow.graph.control_flow import cond

    b = GraphBuilder()
    b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [2, 3]}, name="x")
    b.add_op("PlaceholderWithDefault", [b.const(np.array(False), name="flag/default")],
             {"dtype": "bool", "shape": []}, name="flag")  # fmt: skip

    def noisy(b, a):
        dims = b.const(np.array([2, 3], np.int32))
        return b.add_op("Mul", [a, b.add_op("RandomUniform", [dims], {"dtype": "float32"}).name]).name

    out = cond(b, "flag", noisy, lambda b, a: b.add_op("Neg", [a]).name, ["x"]).outputs[0]
    b.add_op("Identity", [out], name="y")
    step = compile_step(b.graph_def, _CPU, feeds=["x"], fetches=["y"], feed_shapes=[(2, 3)])
    ops = _ops(step.optimized.graph_def)
    assert step.optimized.decided and "Switch" not in ops and "Merge" not in ops
    assert "RandomUniform" not in ops and "Neg" in ops
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for optimize in (True, False):
        with Session(b.graph_def, SessionConfig(devices="cpu:1", optimize=optimize)) as sess:
            np.testing.assert_array_equal(sess.run("y", {"x": x}), -x)
            assert np.all(sess.run("y", {"x": x, "flag": True}) <= x)


def test_each_filter_gradient_is_paired_with_its_forward_conv():
    spec = load_spec(MODELS / "mnist_cnn.yaml")
    tg = build_training_graph(spec, spec.train, None)
    step = compile_step(tg.graph_def, _CPU, feeds=["images", "labels"], fetches=[tg.loss], targets=[tg.train_op],
                        feed_shapes=[(4, 64), (4,)])  # fmt: skip
    # Without the CPU-only training fusion of conv1 and its pool (a GPU among the devices):
    # both filter gradients take their forward's im2col.
    unfused = opt.optimize(step.pruned.graph_def, opt.OptimizeOptions(
        feed_shapes=dict(zip(step.pruned.feed_args, [(4, 64), (4,)])), keep={tg.train_op}))  # fmt: skip
    for result, pairs in ((unfused, 2), (step.optimized, 1)):
        nodes = {n.name: n for n in result.graph_def.nodes}
        filters = [n for n in nodes.values() if n.op == "Conv2DBackpropFilter"]
        assert len(filters) == pairs and sorted(result.shared_im2col) == sorted(n.name for n in filters)
        for n in filters:
            conv = nodes[n.attrs["_im2col_from"]]
            assert conv.op in ("Conv2D", "_FusedConv2D") and conv.attrs["_im2col_keep"] and conv.inputs[0] == n.inputs[0]
    assert {n.name: n.op for n in unfused.graph_def.nodes}["conv1"] == "_FusedConv2D"  # bias and relu fused
    # On CPUs conv1, its pool and their gradients fuse (the im2col handed from one to the other).
    ops = {n.name: n.op for n in step.optimized.graph_def.nodes}
    assert "conv1" not in ops and ops["pool1"] == "_FusedConv2DMaxPoolTrain"
    assert ops["gradients/conv1/Conv2D_grad/Conv2DBackpropFilter"] == "_FusedConv2DMaxPoolTrainGrad"
