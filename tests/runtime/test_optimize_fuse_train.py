"""runtime/optimize_fuse_train.py: dropout's mask as one _RandomUniformMask (ops/random_ops.py);
golden graphs, and values and generator states against the unoptimized graph."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.graph.builder import GraphBuilder
from specflow.ops.random_ops import _threshold_bits
from specflow.runtime.session import Session, SessionConfig
from specflow.train.state import rng_states
from tests.runtime.golden import assert_golden
from tests.runtime.test_optimize import _optimized


def _step_ops(sess: Session) -> set[str]:
    """The ops of every partition of the session's plans so far."""
    plans = [p for c in sess._calls.values() for p in ([c.plan] if c.by_shape is None else c.by_shape.values())]
    return {n.op for p in plans if p is not None for gd in p.partitions.values() for n in gd.nodes}


def _dropout(rate=0.25, dtype="float32", cast_to=None, shape=(4, 6), peek=None, fed_rate=False) -> GraphBuilder:
    """x * scale * Cast(RandomUniform(shape(x)) >= rate): the dropout layer's training branch."""
    b = GraphBuilder()
    b.add_op("Placeholder", attrs={"dtype": dtype, "shape": [None, shape[1]]}, name="x")
    b.add_op("Shape", ["x"], {"out_type": "int32"}, name="shape")
    b.add_op("RandomUniform", ["shape"], {"dtype": dtype, "seed": 3, "seed2": 7}, name="rnd")
    if fed_rate:
        b.add_op("Placeholder", attrs={"dtype": dtype, "shape": []}, name="rate")
    else:
        b.const(np.asarray(rate, dtype), name="rate")
    b.add_op("GreaterEqual", ["rnd", "rate"], name="keep")
    b.add_op("Cast", ["keep"], {"DstT": cast_to or dtype}, name="mask")
    if (cast_to or dtype) == dtype:
        b.add_op("Mul", ["x", "mask"], name="dropped")
    if peek:
        b.add_op("Identity", [peek], name="peek")
    return b


def test_dropouts_mask_becomes_one_random_uniform_mask_named_like_the_random_op():
    r = _optimized(_dropout(), ["dropped"], ["x"], feed_shapes=[(4, 6)], cpu_only=True)
    assert_golden(
        r.graph_def,
        [
            "_arg_x_0_0 = _Arg()",
            "shape = Const(^_arg_x_0_0)",
            "rnd = _RandomUniformMask(shape) {threshold=0.25}",
            "dropped = Mul(_arg_x_0_0, rnd)",
            "_retval_dropped_0_0 = _Retval(dropped)",
        ],
        ["threshold"],
    )
    assert r.fused == ["rnd"]
    # Without cpu_only (a GPU may run it) the chain stays.
    plain = _optimized(_dropout(), ["dropped"], ["x"], feed_shapes=[(4, 6)])
    assert "_RandomUniformMask" not in {n.op for n in plain.graph_def.nodes}


@pytest.mark.parametrize("peek", ["rnd", "keep"])
def test_a_mask_intermediate_read_elsewhere_keeps_the_chain(peek):
    r = _optimized(_dropout(peek=peek), ["dropped", "peek"], ["x"], feed_shapes=[(4, 6)], cpu_only=True)
    assert "_RandomUniformMask" not in {n.op for n in r.graph_def.nodes}


def test_a_fetched_intermediate_or_a_fed_rate_keeps_the_chain():
    for fetches in (["dropped", "keep"], ["dropped", "rnd"]):
        r = _optimized(_dropout(), fetches, ["x"], feed_shapes=[(4, 6)], cpu_only=True)
        assert "_RandomUniformMask" not in {n.op for n in r.graph_def.nodes}
    r = _optimized(_dropout(fed_rate=True), ["dropped"], ["x", "rate"], feed_shapes=[(4, 6), ()], cpu_only=True)
    assert "_RandomUniformMask" not in {n.op for n in r.graph_def.nodes}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("rate", [0.25, 0.5, 0.0, 1.0, -0.5, 1.5, float("nan"), 1e-30, 1 - 2**-24])
@pytest.mark.parametrize("shape", [(4, 6), (3, 5), (1, 1)])
def test_the_fused_mask_and_generator_state_equal_the_unfused_ones(dtype, rate, shape):
    """Odd element counts leave numpy's buffered 32-bit half in the generator between steps."""
    b = _dropout(rate, dtype, shape=shape)
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    runs = []
    for optimize in (True, False):
        with Session(b.graph_def, SessionConfig(devices="cpu:1", graph_seed=0, optimize=optimize)) as sess:
            # The unfused RandomUniform's own draws between the masks: the streams interleave.
            masks = [sess.run(["mask", "dropped"], {"x": x}) for _ in range(3)]
            runs.append((masks, rng_states(sess)))
            assert ("_RandomUniformMask" in _step_ops(sess)) == optimize
    (fused, fused_rng), (plain, plain_rng) = runs
    for got, want in zip(fused, plain, strict=True):
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and g.tobytes() == w.tobytes()
    assert fused_rng.keys() == plain_rng.keys()
    for k in fused_rng:
        np.testing.assert_array_equal(fused_rng[k], plain_rng[k])


def test_the_fused_mask_after_the_unfused_random_op_drew_from_the_same_generator():
    """A step plan with the chain unfused (the random op fetched) and one with it fused share the
    node's generator: the fused draws continue the stream, buffered half included."""
    b = _dropout(shape=(3, 5))
    x = np.ones((3, 5), np.float32)
    got, want = [], []
    with Session(b.graph_def, SessionConfig(devices="cpu:1", graph_seed=0)) as sess:
        for fetches in (["rnd", "mask"], ["mask"], ["rnd", "mask"], ["mask"]):
            got.append(sess.run(fetches, {"x": x})[-1])
    with Session(b.graph_def, SessionConfig(devices="cpu:1", graph_seed=0, optimize=False)) as sess:
        want = [sess.run("mask", {"x": x}) for _ in range(4)]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_a_mask_cast_to_another_float_type():
    b = _dropout(cast_to="float16", shape=(3, 5))
    outs = []
    for optimize in (True, False):
        with Session(b.graph_def, SessionConfig(devices="cpu:1", graph_seed=0, optimize=optimize)) as sess:
            outs.append([sess.run("mask", {"x": np.ones((3, 5), np.float32)}) for _ in range(2)])
    for g, w in zip(*outs, strict=True):
        assert g.dtype == w.dtype == np.float16
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("t", [0.25, 0.5, 2**-24, 3 * 2**-25, 0.1, 0.9999999])
def test_threshold_bits_split_draws_where_the_float_comparison_does(t):
    for dtype, shift, mant in ((np.float32, 8, 24), (np.float64, 11, 53)):
        t_d = float(np.asarray(t, dtype))
        limit = _threshold_bits(t_d, dtype)
        for v in (limit - (1 << shift), limit - 1, limit, limit + (1 << shift)):
            u = dtype((v >> shift) * 2.0**-mant)
            assert (u >= dtype(t_d)) == (v >= limit), (dtype, t, v)


def _scale_shift(x_shape=(2, 4, 4, 8), s_shape=(8,), t_shape=(8,), relu=True, peek=None, dtype="float32"):
    """x * s + t (-> Relu), the vectors fed: batch norm's normalization in training."""
    b = GraphBuilder()
    for name, shape in (("x", [None, *x_shape[1:]]), ("s", list(s_shape)), ("t", list(t_shape))):
        b.add_op("Placeholder", attrs={"dtype": dtype, "shape": shape}, name=name)
    b.add_op("Mul", ["x", "s"], name="scaled")
    b.add_op("AddV2", ["t", "scaled"], name="shifted")  # the vector first: either order fuses
    if relu:
        b.add_op("Relu", ["shifted"], name="act")
    if peek:
        b.add_op("Identity", [peek], name="peek")
    return b


def test_scale_shift_and_relu_become_one_fused_scale_shift():
    r = _optimized(_scale_shift(), ["act"], ["x", "s", "t"], feed_shapes=[(2, 4, 4, 8), (8,), (8,)], cpu_only=True)
    assert_golden(
        r.graph_def,
        [
            "_arg_x_0_0 = _Arg()",
            "_arg_s_0_1 = _Arg()",
            "_arg_t_0_2 = _Arg()",
            "act = _FusedScaleShift(_arg_x_0_0, _arg_s_0_1, _arg_t_0_2) {fused_ops=[Relu]}",
            "_retval_act_0_0 = _Retval(act)",
        ],
        ["fused_ops"],
    )
    r = _optimized(_scale_shift(relu=False), ["shifted"], ["x", "s", "t"], feed_shapes=[(2, 4, 4, 8), (8,), (8,)],
                   cpu_only=True)  # fmt: skip
    assert [n.op for n in r.graph_def.nodes if n.name == "shifted"] == ["_FusedScaleShift"]
    plain = _optimized(_scale_shift(), ["act"], ["x", "s", "t"], feed_shapes=[(2, 4, 4, 8), (8,), (8,)])
    assert "_FusedScaleShift" not in {n.op for n in plain.graph_def.nodes}


@pytest.mark.parametrize(
    "peek, s_shape, t_shape",
    [("scaled", (8,), (8,)), (None, (4, 4, 8), (8,)), (None, (8,), (2, 4, 4, 8)), (None, (1,), (8,))],
)
def test_an_intermediate_read_elsewhere_or_no_channel_vector_keeps_the_chain(peek, s_shape, t_shape):
    fetches = ["act", "peek"] if peek else ["act"]
    r = _optimized(_scale_shift(s_shape=s_shape, t_shape=t_shape, peek=peek), fetches, ["x", "s", "t"],
                   feed_shapes=[(2, 4, 4, 8), s_shape, t_shape], cpu_only=True)  # fmt: skip
    assert "_FusedScaleShift" not in {n.op for n in r.graph_def.nodes}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("x_shape, v_shape", [((2, 4, 4, 8), (8,)), ((64, 8, 8, 32), (1, 1, 1, 32)), ((300, 7), (7,))])
@pytest.mark.parametrize("relu", [True, False])
def test_the_fused_scale_shift_equals_the_unfused_ops_bit_for_bit(dtype, x_shape, v_shape, relu):
    """(64, 8, 8, 32): above wide_rows.MIN_SIZE, the whole-row lines; NaN, infinities, -0."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal(x_shape).astype(dtype)
    x.reshape(-1)[:4] = [np.nan, np.inf, -np.inf, -0.0]
    feeds = {"x": x, "s": rng.uniform(-2, 2, v_shape).astype(dtype), "t": rng.standard_normal(v_shape).astype(dtype)}
    b = _scale_shift(x_shape, v_shape, v_shape, relu=relu, dtype=dtype)
    out = "act" if relu else "shifted"
    runs = []
    for optimize in (True, False):
        with Session(b.graph_def, SessionConfig(devices="cpu:1", optimize=optimize)) as sess:
            runs.append([sess.run(out, feeds) for _ in range(3)])  # the later ones from the arena
            assert ("_FusedScaleShift" in _step_ops(sess)) == optimize
    for g, w in zip(*runs, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape and g.tobytes() == w.tobytes()


def _scaled_sum(x_shape=(2, 4, 4, 8), m_shape=None, peek=None, dtype="float32", swap=False):
    """(g * s + b) + m: AddN of a per-channel product and another tensor, then a per-channel
    shift (batch norm's input gradient)."""
    b = GraphBuilder()
    shapes = (("g", [None, *x_shape[1:]]), ("s", [x_shape[-1]]), ("b", [None, *x_shape[1:]]),
              ("m", list(m_shape or [1, 1, 1, x_shape[-1]][-len(x_shape):])))  # fmt: skip
    for name, shape in shapes:
        b.add_op("Placeholder", attrs={"dtype": dtype, "shape": shape}, name=name)
    b.add_op("Mul", ["s", "g"], name="prod")
    b.add_op("AddN", ["b", "prod"] if swap else ["prod", "b"], name="rest")
    b.add_op("AddV2", ["rest", "m"], name="out")
    if peek:
        b.add_op("Identity", [peek], name="peek")
    return b


def _scaled_sum_shapes(x_shape=(2, 4, 4, 8), m_shape=None):
    return [x_shape, (x_shape[-1],), x_shape, m_shape or (1, 1, 1, x_shape[-1])[-len(x_shape):]]


def test_a_product_plus_an_addend_plus_a_shift_becomes_one_fused_scaled_sum():
    r = _optimized(_scaled_sum(), ["out"], ["g", "s", "b", "m"], feed_shapes=_scaled_sum_shapes(), cpu_only=True)
    assert_golden(
        r.graph_def,
        [
            "_arg_g_0_0 = _Arg()",
            "_arg_s_0_1 = _Arg()",
            "_arg_b_0_2 = _Arg()",
            "_arg_m_0_3 = _Arg()",
            "out = _FusedScaledSum(_arg_g_0_0, _arg_s_0_1, _arg_b_0_2, _arg_m_0_3)",
            "_retval_out_0_0 = _Retval(out)",
        ],
    )
    plain = _optimized(_scaled_sum(), ["out"], ["g", "s", "b", "m"], feed_shapes=_scaled_sum_shapes())
    assert "_FusedScaledSum" not in {n.op for n in plain.graph_def.nodes}


@pytest.mark.parametrize("peek, m_shape", [("prod", None), ("rest", None), (None, (2, 4, 4, 8))])
def test_a_product_read_elsewhere_or_a_full_size_shift_keeps_the_sum(peek, m_shape):
    fetches = ["out", "peek"] if peek else ["out"]
    r = _optimized(_scaled_sum(m_shape=m_shape, peek=peek), fetches, ["g", "s", "b", "m"],
                   feed_shapes=_scaled_sum_shapes(m_shape=m_shape), cpu_only=True)  # fmt: skip
    assert "_FusedScaledSum" not in {n.op for n in r.graph_def.nodes}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("x_shape", [(2, 4, 4, 8), (64, 8, 8, 32), (300, 7)])
@pytest.mark.parametrize("swap", [False, True])
def test_the_fused_scaled_sum_equals_the_unfused_ops_bit_for_bit(dtype, x_shape, swap):
    rng = np.random.default_rng(2)
    feeds = {k: rng.standard_normal(s).astype(dtype) for k, s in zip("gsbm", _scaled_sum_shapes(x_shape), strict=True)}
    feeds["g"].reshape(-1)[:4] = [np.nan, np.inf, -np.inf, -0.0]
    b = _scaled_sum(x_shape, dtype=dtype, swap=swap)
    runs = []
    for optimize in (True, False):
        with Session(b.graph_def, SessionConfig(devices="cpu:1", optimize=optimize)) as sess:
            runs.append([sess.run("out", feeds) for _ in range(3)])
            assert ("_FusedScaledSum" in _step_ops(sess)) == optimize
    for g, w in zip(*runs, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape and g.tobytes() == w.tobytes()
