"""The new layers run for real against numpy references of the same math, with gradients
against finite differences: normalization, activations, attention, merges, pooling, padding,
upsampling, conv1d and conv2d_transpose."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specflow.errors import SpecError
from specflow.ops.registry import has_op
from tests.schema.layer_harness import LayerRun

RNG = np.random.default_rng(3)


def normal(*shape):
    return RNG.normal(size=shape)


def perturbed(run: LayerRun) -> dict[str, np.ndarray]:
    """Random values for every variable (fed for their reads), so gamma/beta/biases matter."""
    values = {k: normal(*v.shape) for k, v in run.weights().items()}
    run.set_weights(values)
    return values


# --- normalization ----------------------------------------------------------------------------


def np_layer_norm(x, axes, gamma, beta, eps):
    mean = x.mean(axis=tuple(axes), keepdims=True)
    var = ((x - mean) ** 2).mean(axis=tuple(axes), keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


@pytest.mark.parametrize("axis", [-1, [1, 2], 1])
def test_layer_norm(axis):
    x = normal(3, 4, 5) * 3 + 1
    run = LayerRun("layer_norm", {"x": x}, axis=axis, epsilon=1e-3)
    w = perturbed(run)
    axes = [a % 3 for a in (axis if isinstance(axis, list) else [axis])]
    bshape = [x.shape[i] if i in axes else 1 for i in range(3)]
    want = np_layer_norm(x, axes, w["gamma"].reshape(bshape), w["beta"].reshape(bshape), 1e-3)
    np.testing.assert_allclose(run.run()[0], want, rtol=1e-10)
    run.check_gradients(["x", "gamma", "beta"])


def test_layer_norm_without_center_and_scale():
    x = normal(2, 6)
    run = LayerRun("layer_norm", {"x": x}, center=False, scale=False)
    assert run.variables == {}
    np.testing.assert_allclose(run.run()[0], np_layer_norm(x, [1], 1, 0, 1e-3), rtol=1e-10)


def test_group_norm():
    x = normal(2, 3, 3, 6) * 2 - 1
    run = LayerRun("group_norm", {"x": x}, groups=3, epsilon=1e-5)
    w = perturbed(run)
    g = x.reshape(2, 3, 3, 3, 2)
    mean = g.mean(axis=(1, 2, 4), keepdims=True)
    var = g.var(axis=(1, 2, 4), keepdims=True)
    want = ((g - mean) / np.sqrt(var + 1e-5)).reshape(x.shape) * w["gamma"] + w["beta"]
    np.testing.assert_allclose(run.run()[0], want, rtol=1e-10)
    run.check_gradients(["x", "gamma"])


@pytest.mark.parametrize("axis", [1, -3, 2])
def test_group_norm_on_another_axis(axis):
    """Channels first (NCHW, axis 1) and a middle axis: gamma and beta broadcast along it."""
    x = normal(2, 6, 4, 4) * 2 - 1
    run = LayerRun("group_norm", {"x": x}, groups=2, axis=axis, epsilon=1e-5)
    w = perturbed(run)
    a = axis % 4
    c = x.shape[a]
    g = x.reshape(x.shape[:a] + (2, c // 2) + x.shape[a + 1:])
    axes = tuple(i for i in range(1, 5) if i != a)
    norm = ((g - g.mean(axis=axes, keepdims=True)) / np.sqrt(g.var(axis=axes, keepdims=True) + 1e-5)).reshape(x.shape)
    bshape = [c if i == a else 1 for i in range(4)]
    want = norm * w["gamma"].reshape(bshape) + w["beta"].reshape(bshape)
    np.testing.assert_allclose(run.run()[0], want, rtol=1e-10)
    run.check_gradients(["x", "gamma", "beta"])


@pytest.mark.parametrize("axis, why", [(0, "axis 0 is the batch"), (4, "not a channel axis"), (-5, "not a channel")])
def test_group_norm_axis_errors(axis, why):
    with pytest.raises(SpecError, match=why):
        LayerRun("group_norm", {"x": normal(2, 6, 3, 4)}, groups=2, axis=axis)


# --- activations ------------------------------------------------------------------------------


def np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


ACTIVATIONS = {
    "gelu_tanh": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
    "silu": lambda x: x * np_sigmoid(x),
    "swish": lambda x: x * np_sigmoid(x),
    "hard_sigmoid": lambda x: np.clip(x + 3, 0, 6) / 6,
    "softplus": lambda x: np.log1p(np.exp(x)),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_layers_and_dense_activations(name):
    x = np.linspace(-5, 5, 21).reshape(3, 7) + 0.013  # away from hard_sigmoid's kinks
    if name == "gelu_tanh":
        run = LayerRun("gelu", {"x": x}, approximate=True)
    else:
        run = LayerRun(name, {"x": x})
    np.testing.assert_allclose(run.run()[0], ACTIVATIONS[name](x), rtol=1e-10, atol=1e-12)
    run.check_gradients(["x"])
    dense = LayerRun("dense", {"x": x}, units=2, activation=name)
    w = dense.weights()
    np.testing.assert_allclose(dense.run()[0], ACTIVATIONS[name](x @ w["kernel"] + w["bias"]), rtol=1e-10, atol=1e-12)
    assert dense.b.graph_def.node("layer").op == ("Softplus" if name == "softplus" else "Mul")


def test_exact_gelu_needs_erf():
    x = normal(2, 3)
    if not has_op("Erf"):
        with pytest.raises(SpecError, match="needs the Erf op"):
            LayerRun("gelu", {"x": x})
        return
    from math import erf

    run = LayerRun("gelu", {"x": x})
    want = 0.5 * x * (1 + np.vectorize(erf)(x / math.sqrt(2)))
    np.testing.assert_allclose(run.run()[0], want, rtol=1e-10)
    run.check_gradients(["x"])


# --- attention --------------------------------------------------------------------------------


def np_softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_mha(q_in, v_in, k_in, w, heads, kd, allowed=None):
    """Keras MultiHeadAttention with einsum, as Keras writes it."""
    q = np.einsum("abc,cde->abde", q_in, w["query/kernel"]) + w["query/bias"]
    k = np.einsum("abc,cde->abde", k_in, w["key/kernel"]) + w["key/bias"]
    v = np.einsum("abc,cde->abde", v_in, w["value/kernel"]) + w["value/bias"]
    scores = np.einsum("aecd,abcd->acbe", k, q / math.sqrt(kd))
    probs = np_softmax(scores)
    if allowed is not None:  # Keras's masked softmax: -1e9 on the masked scores, zeros after
        probs = np.where(allowed, np_softmax(scores + (1 - allowed) * -1e9), 0.0)
    ctx = np.einsum("acbe,aecd->abcd", probs, v)
    return np.einsum("abcd,cde->abe", ctx, w["attention_output/kernel"]) + w["attention_output/bias"]


def test_self_attention_matches_numpy_and_differentiates():
    x = normal(2, 4, 3)
    run = LayerRun("multi_head_attention", {"x": x}, num_heads=2, key_dim=2)
    w = perturbed(run)
    assert w["query/kernel"].shape == (3, 2, 2) and w["attention_output/kernel"].shape == (2, 2, 3)
    np.testing.assert_allclose(run.run()[0], np_mha(x, x, x, w, 2, 2), rtol=1e-9)
    run.check_gradients(["x", "query/kernel", "value/bias", "attention_output/kernel"])


def test_cross_attention_with_padding_and_causal_masks():
    q, v = normal(2, 3, 4), normal(2, 5, 6)
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    run = LayerRun("multi_head_attention", {"q": q, "v": v, "m": mask}, roles={"query": "q", "value": "v", "mask": "m"},
                   num_heads=3, key_dim=2, value_dim=3, output_dim=5)
    w = perturbed(run)
    got = run.run()[0]
    assert got.shape == (2, 3, 5)
    np.testing.assert_allclose(got, np_mha(q, v, v, w, 3, 2, mask[:, None, None, :]), rtol=1e-9)
    # Causal (T == S) and a [batch, T, S] mask together.
    x = normal(2, 4, 3)
    full = RNG.random((2, 4, 4)) > 0.3
    full[:, :, 0] = True  # every query sees at least one key
    run = LayerRun("multi_head_attention", {"x": x, "m": full}, roles={"query": "x", "mask": "m"},
                   num_heads=1, key_dim=4, causal=True)
    w = perturbed(run)
    allowed = (full & np.tril(np.ones((4, 4), bool)))[:, None]
    np.testing.assert_allclose(run.run()[0], np_mha(x, x, x, w, 1, 4, allowed), rtol=1e-9)
    run.check_gradients(["x", "key/kernel"])


def test_attention_rows_with_every_key_masked_attend_to_nothing():
    """A query row whose keys are all masked gets zero weights (Keras 3's masked softmax), not a
    uniform average of every value: a [batch, T, S] mask's empty row, a padded query
    (``query_mask``, Keras's propagated mask), and a padded sequence under ``causal``."""
    x = normal(2, 4, 3)
    full = RNG.random((2, 4, 4)) > 0.4
    full[0, 1] = False  # query 1 of example 0 sees no key
    run = LayerRun("multi_head_attention", {"x": x, "m": full}, roles={"query": "x", "mask": "m"},
                   num_heads=2, key_dim=2, return_attention_scores=True)
    w = perturbed(run)
    out, scores = run.run()
    np.testing.assert_array_equal(scores[0, :, 1], 0.0)
    np.testing.assert_allclose(out[0, 1], w["attention_output/bias"], rtol=1e-12)
    np.testing.assert_allclose(out, np_mha(x, x, x, w, 2, 2, full[:, None]), rtol=1e-9)
    run.check_gradients(["x", "query/kernel", "value/kernel"])
    pad = np.array([[1, 1, 1, 0], [1, 1, 1, 1]], bool)
    run = LayerRun("multi_head_attention", {"x": x, "m": pad}, roles={"query": "x", "mask": "m", "query_mask": "m"},
                   num_heads=2, key_dim=2, causal=True)
    w = perturbed(run)
    allowed = (pad[:, None, :, None] & pad[:, None, None, :] & np.tril(np.ones((4, 4), bool)))
    got = run.run()[0]
    np.testing.assert_allclose(got, np_mha(x, x, x, w, 2, 2, allowed), rtol=1e-9)
    np.testing.assert_allclose(got[0, 3], w["attention_output/bias"], rtol=1e-12)
    run.check_gradients(["x", "key/kernel"])


def test_attention_numeric_masks_mean_nonzero():
    """An int mask (token ids) or a float one masks where it is zero, as Keras casts it to bool,
    rather than scaling the -1e9 adder by the values."""
    x = normal(2, 4, 3)
    ids = np.array([[5, 2, 7, 0], [3, 0, 0, 0]], np.int32)
    w, want = None, None
    for m in (ids != 0, ids, (ids * 0.5).astype(np.float32)):
        run = LayerRun("multi_head_attention", {"x": x, "m": m}, roles={"query": "x", "mask": "m", "query_mask": "m"},
                       num_heads=1, key_dim=2)
        if w is None:
            w = run.weights()
            want = np_mha(x, x, x, w, 1, 2, (ids != 0)[:, None, :, None] & (ids != 0)[:, None, None, :])
        run.set_weights(w)
        np.testing.assert_allclose(run.run()[0], want, rtol=1e-9)


def test_attention_query_mask_must_be_batch_by_steps():
    x = normal(2, 4, 3)
    with pytest.raises(SpecError, match=r"query_mask must be \[batch, T\]"):
        LayerRun("multi_head_attention", {"x": x, "m": np.ones((2, 4, 4), bool)},
                 roles={"query": "x", "query_mask": "m"}, num_heads=1, key_dim=2)


def test_attention_returns_its_scores_before_dropout():
    x = normal(2, 4, 3)
    run = LayerRun("multi_head_attention", {"x": x}, num_heads=2, key_dim=2, return_attention_scores=True,
                   dropout=0.5, seed=1, causal=True)
    w = perturbed(run)
    out, scores = run.run()
    allowed = np.tril(np.ones((4, 4), bool))[None, None]
    np.testing.assert_allclose(out, np_mha(x, x, x, w, 2, 2, allowed), rtol=1e-9)
    q = np.einsum("abc,cde->abde", x, w["query/kernel"]) + w["query/bias"]
    k = np.einsum("abc,cde->abde", x, w["key/kernel"]) + w["key/bias"]
    want = np_softmax(np.einsum("aecd,abcd->acbe", k, q / math.sqrt(2)) + (1 - allowed) * -1e9)
    assert scores.shape == (2, 2, 4, 4)
    np.testing.assert_allclose(scores, want, rtol=1e-9)
    # in training the output sees dropout, the scores do not (Keras returns them before dropout)
    out_t, scores_t = run.run({"training": np.array(True)})
    np.testing.assert_allclose(scores_t, want, rtol=1e-9)
    assert not np.allclose(out_t, out)


def test_attention_dropout_in_training_only():
    x = normal(2, 4, 3)
    run = LayerRun("multi_head_attention", {"x": x}, num_heads=2, key_dim=2, dropout=0.5, seed=1)
    w = run.weights()
    np.testing.assert_allclose(run.run()[0], np_mha(x, x, x, w, 2, 2), rtol=1e-9)
    assert not np.allclose(run.run({"training": np.array(True)})[0], run.run()[0])


# --- merges, pooling, padding, upsampling -------------------------------------------------------


def test_merges():
    a, b, c = normal(2, 3), normal(2, 3), normal(1, 3)
    feeds = {"a": a, "b": b, "c": c}
    np.testing.assert_allclose(LayerRun("add", feeds).run()[0], a + b + c)
    np.testing.assert_allclose(LayerRun("multiply", feeds).run()[0], a * b * c)
    run = LayerRun("concat", {"a": a, "b": b})
    np.testing.assert_allclose(run.run()[0], np.concatenate([a, b], -1))
    run.check_gradients(["a", "b"])
    np.testing.assert_allclose(LayerRun("concat", {"a": a, "b": b}, axis=0).run()[0], np.concatenate([a, b], 0))


@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 4, 3, 2)])
def test_global_pools(shape):
    x = normal(*shape)
    axes = tuple(range(1, len(shape) - 1))
    np.testing.assert_allclose(LayerRun("global_avg_pool", {"x": x}).run()[0], x.mean(axes))
    np.testing.assert_allclose(LayerRun("global_max_pool", {"x": x}, keepdims=True).run()[0], x.max(axes, keepdims=True))


def test_zero_padding_and_upsampling():
    x = normal(2, 3, 4, 2)
    got = LayerRun("zero_padding", {"x": x}, padding=[[1, 0], [2, 1]]).run()[0]
    np.testing.assert_array_equal(got, np.pad(x, [(0, 0), (1, 0), (2, 1), (0, 0)]))
    np.testing.assert_array_equal(LayerRun("zero_padding", {"x": x[:, 0]}, padding=2).run()[0],
                                  np.pad(x[:, 0], [(0, 0), (2, 2), (0, 0)]))
    run = LayerRun("upsampling2d", {"x": x}, size=[2, 3])
    np.testing.assert_array_equal(run.run()[0], x.repeat(2, axis=1).repeat(3, axis=2))
    run.check_gradients(["x"])


# --- conv1d, conv2d_transpose ------------------------------------------------------------------


def np_conv1d(x, k, stride, dilation, padding):
    kw = k.shape[0]
    span = (kw - 1) * dilation + 1
    if padding == "causal":
        x = np.pad(x, [(0, 0), (span - 1, 0), (0, 0)])
    elif padding == "same":
        out = -(-x.shape[1] // stride)
        total = max((out - 1) * stride + span - x.shape[1], 0)
        x = np.pad(x, [(0, 0), (total // 2, total - total // 2), (0, 0)])
    n = (x.shape[1] - span) // stride + 1
    return np.stack([sum(x[:, t * stride + j * dilation] @ k[j] for j in range(kw)) for t in range(n)], 1)


@pytest.mark.parametrize("padding, stride, dilation", [("valid", 1, 1), ("same", 2, 1), ("causal", 1, 2)])
def test_conv1d(padding, stride, dilation):
    x = normal(2, 7, 3)
    run = LayerRun("conv1d", {"x": x}, filters=4, kernel_size=3, strides=stride, padding=padding,
                   dilation_rate=dilation, activation="tanh")
    w = perturbed(run)
    assert w["kernel"].shape == (3, 3, 4)
    want = np.tanh(np_conv1d(x, w["kernel"], stride, dilation, padding) + w["bias"])
    np.testing.assert_allclose(run.run()[0], want, rtol=1e-10)
    if padding == "causal":
        run.check_gradients(["x", "kernel"])


def np_conv2d_transpose(x, k, stride, padding):
    """Scatter each input pixel times the kernel into the output (kernel [kh, kw, out, in])."""
    n, h, w, _ = x.shape
    kh, kw, f, _ = k.shape
    sh, sw = stride
    full = np.zeros((n, (h - 1) * sh + kh, (w - 1) * sw + kw, f))
    for i in range(h):
        for j in range(w):
            full[:, i * sh:i * sh + kh, j * sw:j * sw + kw] += np.einsum("nc,abfc->nabf", x[:, i, j], k)
    if padding == "valid":
        return full
    oh, ow = h * sh, w * sw
    top, left = (full.shape[1] - oh) // 2, (full.shape[2] - ow) // 2
    return full[:, top:top + oh, left:left + ow]


@pytest.mark.parametrize("padding, strides", [("valid", 2), ("same", 2), ("same", [1, 2])])
def test_conv2d_transpose(padding, strides):
    x = normal(2, 3, 3, 2)
    run = LayerRun("conv2d_transpose", {"x": x}, filters=3, kernel_size=3, strides=strides, padding=padding)
    w = perturbed(run)
    assert w["kernel"].shape == (3, 3, 3, 2)
    s = strides if isinstance(strides, list) else [strides] * 2
    want = np_conv2d_transpose(x, w["kernel"], s, padding) + w["bias"]
    np.testing.assert_allclose(run.run()[0], want, rtol=1e-10)
    if padding == "valid":
        run.check_gradients(["x", "kernel"])


def np_depthwise(x, k, stride, padding):
    kh, kw, c, m = k.shape
    if padding == "same":
        pads = []
        for size, kk in zip(x.shape[1:3], (kh, kw)):
            out = -(-size // stride)
            total = max((out - 1) * stride + kk - size, 0)
            pads.append((total // 2, total - total // 2))
        x = np.pad(x, [(0, 0), *pads, (0, 0)])
    oh, ow = (x.shape[1] - kh) // stride + 1, (x.shape[2] - kw) // stride + 1
    out = np.zeros((x.shape[0], oh, ow, c, m))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride:i * stride + kh, j * stride:j * stride + kw]  # n, kh, kw, c
            out[:, i, j] = np.einsum("nabc,abcm->ncm", patch, k)
    return out.reshape(x.shape[0], oh, ow, c * m)


@pytest.mark.parametrize("padding, stride", [("valid", 1), ("same", 2)])
def test_depthwise_and_separable_conv2d(padding, stride):
    if not has_op("DepthwiseConv2dNative"):
        pytest.skip("DepthwiseConv2dNative is not in this build")
    x = normal(2, 5, 5, 3)
    run = LayerRun("depthwise_conv2d", {"x": x}, kernel_size=3, depth_multiplier=2, strides=stride, padding=padding)
    w = perturbed(run)
    assert w["depthwise_kernel"].shape == (3, 3, 3, 2)
    want = np_depthwise(x, w["depthwise_kernel"], stride, padding) + w["bias"]
    np.testing.assert_allclose(run.run()[0], want, rtol=1e-10)
    run = LayerRun("separable_conv2d", {"x": x}, filters=4, kernel_size=3, strides=stride, padding=padding,
                   activation="relu")
    w = perturbed(run)
    assert w["pointwise_kernel"].shape == (1, 1, 3, 4)
    deep = np_depthwise(x, w["depthwise_kernel"], stride, padding)
    want = np.maximum(deep @ w["pointwise_kernel"][0, 0] + w["bias"], 0)
    np.testing.assert_allclose(run.run()[0], want, rtol=1e-10)
    if padding == "valid":
        run.check_gradients(["x", "depthwise_kernel", "pointwise_kernel"])
