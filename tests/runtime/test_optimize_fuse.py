"""runtime/optimize_fuse.py: Conv2D times a per-channel vector folded into the filter, and
Conv2D + bias (+ Relu) fused into _FusedConv2D; golden graphs, and values against the
unoptimized graph."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.graph.builder import GraphBuilder
from specflow.runtime.session import Session, SessionConfig
from tests.runtime.golden import assert_golden
from tests.runtime.test_optimize import _optimized

_CONV = {"strides": [1, 1, 1, 1], "padding": "SAME"}


def _conv_bn_relu(scale_shape=(4,), shift_shape=(4,), relu=True, peek=False) -> GraphBuilder:
    """x -> Conv2D(x, f) * scale + shift (-> Relu): batch norm at inference, its scale and shift
    fed (a variable's value, read every step)."""
    b = GraphBuilder()
    for name, shape in (("x", [None, 5, 5, 3]), ("f", [3, 3, 3, 4]), ("s", list(scale_shape)), ("t", list(shift_shape))):
        b.add_op("Placeholder", attrs={"dtype": "float32", "shape": shape}, name=name)
    b.add_op("Conv2D", ["x", "f"], _CONV, name="conv")
    b.add_op("Mul", ["conv", "s"], name="scaled")
    b.add_op("AddV2", ["t", "scaled"], name="shifted")  # the vector first: either order fuses
    if relu:
        b.add_op("Relu", ["shifted"], name="act")
    if peek:
        b.add_op("Identity", ["conv"], name="peek")
    return b


def _feeds(rng, scale_shape=(4,), shift_shape=(4,)):
    return {
        "x": rng.standard_normal((2, 5, 5, 3)).astype(np.float32),
        "f": rng.standard_normal((3, 3, 3, 4)).astype(np.float32),
        "s": rng.uniform(0.5, 2.0, scale_shape).astype(np.float32),
        "t": rng.standard_normal(shift_shape).astype(np.float32),
    }


def test_a_per_channel_scale_folds_into_the_filter_and_the_shift_and_relu_fuse():
    r = _optimized(_conv_bn_relu(), ["act"], ["x", "f", "s", "t"], feed_shapes=[(2, 5, 5, 3), (3, 3, 3, 4), (4,), (4,)])
    assert_golden(
        r.graph_def,
        [
            "_arg_x_0_0 = _Arg()",
            "_arg_f_0_1 = _Arg()",
            "_arg_s_0_2 = _Arg()",
            "_arg_t_0_3 = _Arg()",
            "scaled/scaled_filter = Mul(_arg_f_0_1, _arg_s_0_2)",
            "act = _FusedConv2D(_arg_x_0_0, scaled/scaled_filter, _arg_t_0_3) {fused_ops=[BiasAdd, Relu]}",
            "_retval_act_0_0 = _Retval(act)",
        ],
        ["fused_ops"],
    )
    assert r.folded_scales == ["scaled"] and r.fused == ["act"]


@pytest.mark.parametrize(
    "scale_shape, shift_shape, relu, fused_ops",
    [((4,), (4,), True, ["BiasAdd", "Relu"]), ((1, 1, 1, 4), (4,), False, ["BiasAdd"])],
)
def test_folded_and_fused_convolutions_compute_what_the_unfused_ones_do(scale_shape, shift_shape, relu, fused_ops):
    b = _conv_bn_relu(scale_shape, shift_shape, relu)
    fetch = "act" if relu else "shifted"
    runs = []
    for optimize in (True, False):
        with Session(b.graph_def, SessionConfig(optimize=optimize)) as sess:
            # new scale and shift values every step: nothing is folded into a constant
            runs.append([sess.run(fetch, _feeds(np.random.default_rng(seed), scale_shape, shift_shape)) for seed in (1, 2)])
    for got, want in zip(*runs, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert not np.allclose(runs[0][0], runs[0][1])
    r = _optimized(b, [fetch], ["x", "f", "s", "t"], feed_shapes=[(2, 5, 5, 3), (3, 3, 3, 4), scale_shape, shift_shape])
    (fused,) = [n for n in r.graph_def.nodes if n.op == "_FusedConv2D"]
    assert fused.attrs["fused_ops"] == fused_ops


@pytest.mark.parametrize(
    "scale_shape, shift_shape, peek, folded, fused",
    [
        ((5, 4), (4,), False, False, False),  # a scale over (W, C): not per channel
        ((2, 1, 1, 1), (4,), False, False, False),  # per example
        ((4,), (1, 4), False, True, False),  # a [1, 4] shift widens nothing but is not a bias
        ((4,), (4,), True, False, False),  # the convolution's output read elsewhere too
    ],
)
def test_what_is_not_a_per_channel_scale_or_bias_stays(scale_shape, shift_shape, peek, folded, fused):
    b = _conv_bn_relu(scale_shape, shift_shape, relu=True, peek=peek)
    fetches = ["act", "peek"] if peek else ["act"]
    shapes = [(2, 5, 5, 3), (3, 3, 3, 4), scale_shape, shift_shape]
    r = _optimized(b, fetches, ["x", "f", "s", "t"], feed_shapes=shapes)
    assert bool(r.folded_scales) == folded and bool(r.fused) == fused
    ops = [n.op for n in r.graph_def.nodes]
    assert ("Conv2D" in ops) != fused and ("_FusedConv2D" in ops) == fused


# Training graphs fuse too (mnist_cnn's conv1: test_optimize_flags), and train bit for bit as
# unoptimized (test_optimize.py's test_optimized_training_steps_equal_unoptimized).


def _relu_pool(padding="VALID", peek=False) -> GraphBuilder:
    b = GraphBuilder()
    b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [None, 4, 6, 2]}, name="x")
    b.add_op("Relu", ["x"], name="act")
    attrs = {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": padding}
    if padding == "EXPLICIT":
        attrs["explicit_paddings"] = [0, 0, 2, 0, 0, 0, 0, 0]  # a first row of windows all padding
    b.add_op("MaxPool", ["act"], attrs, name="pool")
    if peek:
        b.add_op("Identity", ["act"], name="peek")
    return b


def test_max_pool_of_a_relu_pools_first_and_computes_the_same():
    r = _optimized(_relu_pool(), ["pool"], ["x"], feed_shapes=[(2, 4, 6, 2)])
    assert_golden(
        r.graph_def,
        [
            "_arg_x_0_0 = _Arg()",
            "pool/before_relu = MaxPool(_arg_x_0_0)",
            "pool = Relu(pool/before_relu)",
            "_retval_pool_0_0 = _Retval(pool)",
        ],
        [],
    )
    x = np.random.default_rng(0).standard_normal((2, 4, 6, 2)).astype(np.float32)
    x[0, :2, :2, 0] = np.nan  # a window of NaNs: the one input the two orders differ on (lowest vs 0)
    x[0, 0, 0, 0] = 0.5  # NaN never wins a window (TF's CPU MaxPool) in either order
    x[0, 1, 1, 1] = np.nan
    x[1, 2:, 2:4, :] = -1.0  # a window all negative: 0
    outs = []
    for optimize in (True, False):
        with Session(_relu_pool().graph_def, SessionConfig(optimize=optimize)) as sess:
            outs.append(sess.run("pool", {"x": x}))
    np.testing.assert_array_equal(outs[0], outs[1])


@pytest.mark.parametrize("padding, peek", [("EXPLICIT", False), ("VALID", True)])
def test_a_relu_read_elsewhere_or_windows_of_padding_keep_their_order(padding, peek):
    r = _optimized(_relu_pool(padding, peek), ["pool", "peek"] if peek else ["pool"], ["x"], feed_shapes=[(2, 4, 6, 2)])
    assert r.pooled_before_relu == []


def _pool_grad_relu_grad(ksize=2, stride=2) -> GraphBuilder:
    b = GraphBuilder()
    for name, shape in (("x", [2, 4, 6, 2]), ("dy", [2, 2, 3, 2])):
        b.add_op("Placeholder", attrs={"dtype": "float32", "shape": shape}, name=name)
    b.add_op("Relu", ["x"], name="act")
    window = {"ksize": [1, ksize, ksize, 1], "strides": [1, stride, stride, 1], "padding": "SAME"}
    b.add_op("MaxPool", ["act"], window, name="pool")
    b.add_op("MaxPoolGrad", ["act", "pool", "dy"], window, name="pool_grad")
    b.add_op("ReluGrad", ["pool_grad", "act"], name="act_grad")
    return b


def test_relu_grad_of_a_max_pool_grad_masks_the_pooled_gradient_bit_for_bit():
    b = _pool_grad_relu_grad()
    r = _optimized(b, ["act_grad"], ["x", "dy"], feed_shapes=[(2, 4, 6, 2), (2, 2, 3, 2)])
    assert_golden(
        r.graph_def,
        [
            "_arg_x_0_0 = _Arg()",
            "_arg_dy_0_1 = _Arg()",
            "act = Relu(_arg_x_0_0)",
            "pool = MaxPool(act)",
            "act_grad/pooled = ReluGrad(_arg_dy_0_1, pool)",
            "act_grad = MaxPoolGrad(act, pool, act_grad/pooled)",
            "_retval_act_grad_0_0 = _Retval(act_grad)",
        ],
        [],
    )
    rng = np.random.default_rng(0)
    x = np.maximum(rng.integers(-2, 3, (2, 4, 6, 2)), -1).astype(np.float32)  # ties, zeros and negatives
    x[0, 0, 0, 0] = np.nan
    dy = rng.standard_normal((2, 2, 3, 2)).astype(np.float32)
    dy[1, 0, 0, 1] = np.inf
    outs = []
    for optimize in (True, False):
        with Session(b.graph_def, SessionConfig(optimize=optimize)) as sess:
            outs.append(sess.run("act_grad", {"x": x, "dy": dy}))
    np.testing.assert_array_equal(outs[0], outs[1])


def test_overlapping_pool_windows_keep_relu_grad_after_the_pool_grad():
    b = _pool_grad_relu_grad(ksize=3, stride=2)
    r = _optimized(b, ["act_grad"], ["x", "dy"], feed_shapes=[(2, 4, 6, 2), (2, 2, 3, 2)])
    assert r.masked_before_pool_grad == []


def _broadcast_then_divide(divisor: np.ndarray) -> GraphBuilder:
    b = GraphBuilder()
    b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [1, 3]}, name="v")
    b.add_op("BroadcastTo", ["v", b.const(np.array([4, 3], np.int32), name="shape")], name="wide")
    b.add_op("RealDiv", ["wide", b.const(divisor, name="n")], name="mean_grad")
    return b


def test_a_division_by_a_scalar_runs_before_the_broadcast_and_computes_the_same():
    b = _broadcast_then_divide(np.float32(3.0))
    r = _optimized(b, ["mean_grad"], ["v"], feed_shapes=[(1, 3)])
    assert_golden(
        r.graph_def,
        [
            "_arg_v_0_0 = _Arg()",
            "shape = Const()",
            "n = Const()",
            "wide/divided = RealDiv(_arg_v_0_0, n)",
            "mean_grad = BroadcastTo(wide/divided, shape)",
            "_retval_mean_grad_0_0 = _Retval(mean_grad)",
        ],
        [],
    )
    v = np.array([[1.0, -7.0, 1e-30]], np.float32)
    outs = []
    for optimize in (True, False):
        with Session(b.graph_def, SessionConfig(optimize=optimize)) as sess:
            outs.append(sess.run("mean_grad", {"v": v}))
    np.testing.assert_array_equal(outs[0], outs[1])
    assert outs[0].shape == (4, 3)


def test_a_division_by_more_than_a_scalar_stays_after_the_broadcast():
    r = _optimized(_broadcast_then_divide(np.full((4, 1), 3.0, np.float32)), ["mean_grad"], ["v"], feed_shapes=[(1, 3)],
                   simplify=False)  # fmt: skip
    assert r.reordered == []


def _conv_relu_pool(size=6, pool_padding="VALID", peek=False) -> GraphBuilder:
    """x -> Relu(BiasAdd(Conv2D(x, f), b)) -> MaxPool 2x2: the zoo CNN's conv1 and pool1."""
    b = GraphBuilder()
    for name, shape in (("x", [None, size, size, 2]), ("f", [3, 3, 2, 4]), ("b", [4])):
        b.add_op("Placeholder", attrs={"dtype": "float32", "shape": shape}, name=name)
    b.add_op("Conv2D", ["x", "f"], _CONV, name="conv")
    b.add_op("BiasAdd", ["conv", "b"], name="biased")
    b.add_op("Relu", ["biased"], name="act")
    b.add_op("MaxPool", ["act"], {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": pool_padding},
             name="pool")  # fmt: skip
    if peek:
        b.add_op("Identity", ["biased"], name="peek")
    return b


def test_a_max_pool_of_a_fused_convolution_fuses_with_its_relu():
    r = _optimized(_conv_relu_pool(), ["pool"], ["x", "f", "b"], feed_shapes=[(2, 6, 6, 2), (3, 3, 2, 4), (4,)])
    assert_golden(
        r.graph_def,
        [
            "_arg_x_0_0 = _Arg()",
            "_arg_f_0_1 = _Arg()",
            "_arg_b_0_2 = _Arg()",
            "pool = _FusedConv2DMaxPool(_arg_x_0_0, _arg_f_0_1, _arg_b_0_2) {fused_ops=[BiasAdd, Relu]}",
            "_retval_pool_0_0 = _Retval(pool)",
        ],
        ["fused_ops"],
    )
    assert r.pooled_convolutions == ["pool"] and r.pooled_before_relu == ["pool"]


@pytest.mark.parametrize("size, pool_padding", [(6, "VALID"), (5, "SAME"), (7, "VALID")])
def test_fused_convolution_and_pool_compute_what_the_unfused_ones_do(size, pool_padding):
    # 6: the windows tile the output (the gathered way); 5 SAME and 7 VALID: they do not
    b = _conv_relu_pool(size, pool_padding)
    rng = np.random.default_rng(0)
    feeds = {"x": rng.standard_normal((3, size, size, 2)).astype(np.float32),
             "f": rng.standard_normal((3, 3, 2, 4)).astype(np.float32),
             "b": rng.standard_normal(4).astype(np.float32)}  # fmt: skip
    feeds["x"][0, :2, :2, 0] = np.nan  # NaN never wins a window either way (TF's CPU MaxPool)
    outs = []
    for optimize in (True, False):
        with Session(b.graph_def, SessionConfig(devices="cpu:1", optimize=optimize)) as sess:
            outs.append([sess.run("pool", feeds) for _ in range(2)])  # the second from kept buffers
    want = outs[1][0]
    # A window of NaNs only: MaxPool's float lowest, which the pooled-first Relu makes 0 (the
    # rewrite's one inexact input, as pool_before_relu's; optimize_fuse.py).
    lowest = want == np.finfo(np.float32).min
    for got in outs[0]:
        np.testing.assert_allclose(got[~lowest], want[~lowest], rtol=1e-6, atol=1e-6)
        assert (got[lowest] == 0).all()
    assert not np.isnan(outs[0][0]).any() and (outs[0][0] == 0).any()
    assert not np.isnan(want).any()


def test_a_convolution_read_elsewhere_keeps_its_pool():
    r = _optimized(_conv_relu_pool(peek=True), ["pool", "peek"], ["x", "f", "b"],
                   feed_shapes=[(2, 6, 6, 2), (3, 3, 2, 4), (4,)])  # fmt: skip
    assert r.pooled_convolutions == [] and "MaxPool" in [n.op for n in r.graph_def.nodes]


def _conv_pool_training(peek: bool = False) -> GraphBuilder:
    """conv + bias + relu + 2x2 max pool and the gradients training builds for them (as
    train/gradients.py emits them): the pool's MaxPoolGrad, ReluGrad, BiasAddGrad and the
    filter's Conv2DBackpropFilter."""
    b = GraphBuilder()
    for name, shape in (("x", [None, 6, 4, 2]), ("f", [3, 3, 2, 4]), ("b", [4]), ("dy", [None, 3, 2, 4])):
        b.add_op("Placeholder", attrs={"dtype": "float32", "shape": shape}, name=name)
    b.add_op("Conv2D", ["x", "f"], _CONV, name="conv")
    b.add_op("BiasAdd", ["conv", "b"], name="biased")
    b.add_op("Relu", ["biased"], name="act")
    window = {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "VALID"}
    b.add_op("MaxPool", ["act"], window, name="pool")
    b.add_op("MaxPoolGrad", ["act", "pool", "dy"], window, name="pool_grad")
    b.add_op("ReluGrad", ["pool_grad", "act"], name="act_grad")
    b.add_op("BiasAddGrad", ["act_grad"], name="db")
    sizes = b.const(np.array([3, 3, 2, 4], np.int32), name="sizes")
    b.add_op("Conv2DBackpropFilter", ["x", sizes, "act_grad"], _CONV, name="df")
    if peek:
        b.add_op("Identity", ["act_grad"], name="peek")
    return b


def test_training_conv_and_pool_fuse_with_their_gradients_and_compute_the_same():
    b = _conv_pool_training()
    fetches, feeds = ["pool", "db", "df"], ["x", "f", "b", "dy"]
    shapes = [(3, 6, 4, 2), (3, 3, 2, 4), (4,), (3, 3, 2, 4)]
    r = _optimized(b, fetches, feeds, feed_shapes=shapes, cpu_only=True)
    ops = {n.name: n.op for n in r.graph_def.nodes}
    assert ops["pool"] == "_FusedConv2DMaxPoolTrain" and ops["df"] == "_FusedConv2DMaxPoolTrainGrad"
    assert not {"Conv2D", "MaxPool", "MaxPoolGrad", "BiasAddGrad", "Conv2DBackpropFilter"} & set(ops.values())
    assert "pool" in r.pooled_convolutions
    # Without cpu_only (a GPU may run it) the chain stays as it was.
    assert "_FusedConv2DMaxPoolTrain" not in {n.op for n in _optimized(b, fetches, feeds, feed_shapes=shapes).graph_def.nodes}
    rng = np.random.default_rng(0)
    vals = {"x": rng.integers(-2, 3, (3, 6, 4, 2)).astype(np.float32),  # ties, zeros and negatives
            "f": rng.integers(-1, 2, (3, 3, 2, 4)).astype(np.float32),
            "b": np.array([0, 1, -1, 0.5], np.float32), "dy": rng.standard_normal((3, 3, 2, 4)).astype(np.float32)}
    vals["x"][1, 0, 0, 0] = np.nan  # NaN never wins a window (TF's CPU MaxPool), fused or not
    outs = []
    for optimize in (True, False):
        with Session(b.graph_def, SessionConfig(devices="cpu:1", optimize=optimize)) as sess:
            outs.append([sess.run(fetches, vals) for _ in range(2)])  # the second from kept buffers
    for got in outs[0]:
        for g, w in zip(got, outs[1][0], strict=True):
            # the same values; the gradients summed over the rows in another order (rounding)
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-5)
    assert outs[0][0][0].tobytes() == outs[1][0][0].tobytes()  # the pooled output bit for bit


def test_a_pool_gradient_read_elsewhere_keeps_the_training_chain():
    r = _optimized(_conv_pool_training(peek=True), ["pool", "db", "df", "peek"], ["x", "f", "b", "dy"],
                   feed_shapes=[(3, 6, 4, 2), (3, 3, 2, 4), (4,), (3, 3, 2, 4)], cpu_only=True)  # fmt: skip
    assert "_FusedConv2DMaxPoolTrain" not in {n.op for n in r.graph_def.nodes}


def _broadcast_users() -> GraphBuilder:
    """Batch norm's moment gradients in small: a [1, 1, 3] vector broadcast to [2, 2, 3] and
    multiplied by y, added last to an AddN, and a Neg summed over the broadcast axes."""
    b = GraphBuilder()
    for name, shape in (("v", [1, 1, 3]), ("y", [None, 2, 3]), ("z", [None, 2, 3])):
        b.add_op("Placeholder", attrs={"dtype": "float32", "shape": shape}, name=name)
    shape = b.const(np.array([2, 2, 3], np.int32), name="shape")
    b.add_op("BroadcastTo", ["v", shape], name="wide")
    b.add_op("Mul", ["wide", "y"], name="scaled")
    b.add_op("BroadcastTo", ["v", shape], name="wide2")
    b.add_op("AddN", ["y", "z", "wide2"], name="total")
    b.add_op("Neg", ["scaled"], name="neg")
    b.add_op("Sum", ["neg", b.const(np.array([0, 1], np.int32), name="axes")], {"keep_dims": True}, name="summed")
    return b


def test_broadcasts_move_into_their_consumers_and_a_negation_after_its_sum():
    b = _broadcast_users()
    fetches = ["scaled", "total", "summed"]
    r = _optimized(b, fetches, ["v", "y", "z"], feed_shapes=[(1, 1, 3), (2, 2, 3), (2, 2, 3)], cse=False)
    ops = {n.name: (n.op, [i.split(":")[0] for i in n.inputs]) for n in r.graph_def.nodes}
    assert "BroadcastTo" not in {op for op, _ in ops.values()}
    assert ops["scaled"] == ("Mul", ["_arg_v_0_0", "_arg_y_0_1"])
    assert ops["total"] == ("AddV2", ["total/rest", "_arg_v_0_0"])
    assert ops["total/rest"] == ("AddN", ["_arg_y_0_1", "_arg_z_0_2"])
    assert ops["summed"] == ("Neg", ["neg/summed"]) and ops["neg/summed"][0] == "Sum"
    rng = np.random.default_rng(0)
    feeds = {"v": rng.standard_normal((1, 1, 3)).astype(np.float32),
             "y": rng.standard_normal((2, 2, 3)).astype(np.float32),
             "z": rng.standard_normal((2, 2, 3)).astype(np.float32)}  # fmt: skip
    outs = []
    for optimize in (True, False):
        with Session(b.graph_def, SessionConfig(optimize=optimize)) as sess:
            outs.append(sess.run(fetches, feeds))
    for got, want in zip(*outs, strict=True):
        np.testing.assert_array_equal(got, want)


def test_a_broadcast_wider_than_the_other_operand_stays():
    # y [2, 1, 3] against the [2, 2, 3] broadcast: the Mul's result would lose the broadcast dim.
    r = _optimized(_broadcast_users(), ["scaled"], ["v", "y"], feed_shapes=[(1, 1, 3), (2, 1, 3)])
    assert "BroadcastTo" in {n.op for n in r.graph_def.nodes}
