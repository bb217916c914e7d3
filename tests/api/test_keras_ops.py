"""sf.keras.ops against Keras 3.15's keras.ops: 156 calls (elementwise with Keras's dtype
promotion and weak Python numbers, reductions, shapes, products, sorting, nn functions and
losses, control flow), values and dtypes; the fixture holds Keras's results
(scripts/make_keras_ops_fixture.py, run where Keras is installed)."""

from pathlib import Path

import numpy as np
import pytest

import specflow as sf

DATA = Path(__file__).parent / "data" / "keras_ops.npz"


def cases(ops):
    """The calls, each a thunk, for keras.ops or sf.keras.ops."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3, 4)).astype(np.float32)  # noqa: N806 (numpy-style names: X, Y, I, ...)
    Y = rng.standard_normal((3, 4)).astype(np.float32)  # noqa: N806
    I = rng.integers(-5, 5, (3, 4)).astype(np.int32)  # noqa: E741, N806
    B, H, I8 = X > 0, X.astype(np.float16), I.astype(np.int8)  # noqa: N806
    V = rng.standard_normal(4).astype(np.float32)  # noqa: N806
    M = rng.standard_normal((4, 2)).astype(np.float32)  # noqa: N806
    P = np.abs(X) + 0.1  # noqa: N806
    L = rng.integers(0, 4, (3,)).astype(np.int32)  # noqa: N806
    cases = {  # fmt: skip
     "add": lambda: ops.add(X, Y), "add_int_float": lambda: ops.add(I, 1.5), "add_int_scalar": lambda: ops.add(I, 2),
     "mul_half_scalar": lambda: ops.multiply(H, 2.0), "add_half_f32": lambda: ops.add(H, X), "add_i8_i32": lambda: ops.add(I8, I),
     "divide_int": lambda: ops.divide(I, 3), "true_divide": lambda: ops.true_divide(X, Y), "floor_divide": lambda: ops.floor_divide(I, 3),
     "mod": lambda: ops.mod(I, 3), "power": lambda: ops.power(X, 2), "maximum": lambda: ops.maximum(X, 0.0),
     "sum": lambda: ops.sum(X, axis=1), "sum_bool": lambda: ops.sum(B), "sum_i8": lambda: ops.sum(I8, axis=0, keepdims=True),
     "mean": lambda: ops.mean(X, axis=(0, 1)), "mean_int": lambda: ops.mean(I), "max": lambda: ops.max(X, axis=-1),
     "min_keep": lambda: ops.min(X, axis=0, keepdims=True), "prod": lambda: ops.prod(P, axis=1), "std": lambda: ops.std(X),
     "var_axis": lambda: ops.var(X, axis=0), "argmax": lambda: ops.argmax(X, axis=1), "argmax_none": lambda: ops.argmax(X),
     "argmin_keep": lambda: ops.argmin(X, axis=0, keepdims=True), "logsumexp": lambda: ops.logsumexp(X, axis=1),
     "cumsum_none": lambda: ops.cumsum(X), "cumsum": lambda: ops.cumsum(X, axis=1), "cumprod": lambda: ops.cumprod(P, axis=0),
     "norm": lambda: ops.norm(X), "norm_axis": lambda: ops.norm(X, axis=1), "all": lambda: ops.all(B, axis=0), "any": lambda: ops.any(X),
     "sqrt": lambda: ops.sqrt(P), "sqrt_int": lambda: ops.sqrt(np.abs(I)), "exp": lambda: ops.exp(X), "log": lambda: ops.log(P),
     "abs": lambda: ops.abs(I), "sign": lambda: ops.sign(X), "round": lambda: ops.round(X * 10), "round2": lambda: ops.round(X, 2),
     "clip": lambda: ops.clip(X, -0.5, 0.5), "clip_int": lambda: ops.clip(I, -2, 2), "where": lambda: ops.where(B, X, Y),
     "where_scalar": lambda: ops.where(B, X, 0.0), "where1": lambda: ops.where(B), "erf": lambda: ops.erf(X), "tanh": lambda: ops.tanh(X),
     "matmul": lambda: ops.matmul(X, M), "matmul_vec": lambda: ops.matmul(X, V), "dot": lambda: ops.dot(X, M), "dot_vv": lambda: ops.dot(V, V),
     "tensordot": lambda: ops.tensordot(X, M, axes=1), "outer": lambda: ops.outer(V, V), "einsum": lambda: ops.einsum("ij,jk->ik", X, M),
     "reshape": lambda: ops.reshape(X, (4, 3)), "reshape_m1": lambda: ops.reshape(X, (-1,)), "transpose": lambda: ops.transpose(X),
     "transpose_axes": lambda: ops.transpose(X[None], (2, 0, 1)), "expand": lambda: ops.expand_dims(X, 1), "expand_tuple": lambda: ops.expand_dims(X, (0, 3)),
     "squeeze": lambda: ops.squeeze(X[None, :, None]), "squeeze_axis": lambda: ops.squeeze(X[None], 0), "concat": lambda: ops.concatenate([X, Y], axis=1),
     "concat_mixed": lambda: ops.concatenate([X, I], axis=0), "stack": lambda: ops.stack([X, Y], axis=1), "split": lambda: ops.split(X, 2, axis=1),
     "split_idx": lambda: ops.split(X, [1, 3], axis=1), "tile": lambda: ops.tile(V, 2), "tile2": lambda: ops.tile(X, (2, 1)), "repeat": lambda: ops.repeat(X, 2, axis=0),
     "repeat_none": lambda: ops.repeat(V, 2), "broadcast": lambda: ops.broadcast_to(V, (3, 4)), "take": lambda: ops.take(X, [0, 2], axis=0),
     "take_none": lambda: ops.take(X, [1, 5]), "take_neg": lambda: ops.take(V, [-1, 0]), "take_along": lambda: ops.take_along_axis(X, np.argsort(X, axis=1), axis=1),
     "take_along0": lambda: ops.take_along_axis(X, np.argsort(X, axis=0), axis=0), "flip": lambda: ops.flip(X, axis=1), "flip_all": lambda: ops.flip(X),
     "roll": lambda: ops.roll(X, 1, axis=1), "roll_none": lambda: ops.roll(X, 2), "moveaxis": lambda: ops.moveaxis(X[None], 0, -1), "swapaxes": lambda: ops.swapaxes(X, 0, 1),
     "pad": lambda: ops.pad(X, ((1, 0), (0, 2))), "pad_reflect": lambda: ops.pad(X, ((1, 1), (1, 1)), mode="reflect"),
     "zeros": lambda: ops.zeros((2, 3)), "ones_int": lambda: ops.ones((2,), dtype="int32"), "full": lambda: ops.full((2, 2), 3), "full_f": lambda: ops.full((2,), 1.5),
     "zeros_like": lambda: ops.zeros_like(I), "ones_like_dt": lambda: ops.ones_like(X, dtype="float16"), "full_like": lambda: ops.full_like(X, 7),
     "arange": lambda: ops.arange(5), "arange_f": lambda: ops.arange(0.0, 1.0, 0.25), "arange_dt": lambda: ops.arange(3, dtype="float32"),
     "linspace": lambda: ops.linspace(0, 1, 5), "eye": lambda: ops.eye(3, 4, k=1), "identity": lambda: ops.identity(2),
     "tril": lambda: ops.tril(X), "triu1": lambda: ops.triu(X, 1), "diag_v": lambda: ops.diag(V), "diag_m": lambda: ops.diag(X), "trace": lambda: ops.trace(X),
     "sort": lambda: ops.sort(X), "argsort": lambda: ops.argsort(X, axis=0), "top_k": lambda: ops.top_k(V, 2),
     "relu": lambda: ops.relu(X), "gelu": lambda: ops.gelu(X), "gelu_exact": lambda: ops.gelu(X, approximate=False), "silu": lambda: ops.silu(X),
     "elu": lambda: ops.elu(X, 0.5), "selu": lambda: ops.selu(X), "leaky": lambda: ops.leaky_relu(X), "hard_sigmoid": lambda: ops.hard_sigmoid(X),
     "softmax": lambda: ops.softmax(X), "softmax0": lambda: ops.softmax(X, axis=0), "log_softmax": lambda: ops.log_softmax(X), "softplus": lambda: ops.softplus(X),
     "one_hot": lambda: ops.one_hot(L, 4), "multi_hot": lambda: ops.multi_hot(np.array([[0, 2], [1, 1]]), 3), "moments": lambda: ops.moments(X, [0]),
     "normalize": lambda: ops.normalize(X), "bce": lambda: ops.binary_crossentropy(B.astype(np.float32), 1 / (1 + np.exp(-X))),
     "bce_logits": lambda: ops.binary_crossentropy(B.astype(np.float32), X, from_logits=True),
     "cce": lambda: ops.categorical_crossentropy(np.eye(4, dtype=np.float32)[L], np.exp(X) / np.exp(X).sum(1, keepdims=True)),
     "cce_logits": lambda: ops.categorical_crossentropy(np.eye(4, dtype=np.float32)[L], X, from_logits=True),
     "scce": lambda: ops.sparse_categorical_crossentropy(L, np.exp(X) / np.exp(X).sum(1, keepdims=True)),
     "scce_logits": lambda: ops.sparse_categorical_crossentropy(L, X, from_logits=True),
     "nn_relu": lambda: ops.nn.relu(X), "stop_gradient": lambda: ops.stop_gradient(X), "cast": lambda: ops.cast(X, "int32"),
     "convert": lambda: ops.convert_to_tensor([1, 2]), "convert_f": lambda: ops.convert_to_tensor([1.0, 2.0]), "shape": lambda: ops.shape(X),
     "ndim": lambda: ops.ndim(X), "isnan": lambda: ops.isnan(X), "nan_to_num": lambda: ops.nan_to_num(np.array([np.nan, np.inf, -np.inf, 1.0], np.float32)),
     "logical_and": lambda: ops.logical_and(B, X > 0.5), "logical_not": lambda: ops.logical_not(B), "greater": lambda: ops.greater(X, 0),
     "equal_int": lambda: ops.equal(I, 2), "count_nonzero": lambda: ops.count_nonzero(I, axis=1), "arctan2": lambda: ops.arctan2(X, Y),
     "segment_sum": lambda: ops.segment_sum(X, np.array([0, 1, 0]), num_segments=2), "segment_max": lambda: ops.segment_max(X, np.array([0, 1, 1]), num_segments=2),
     "scatter": lambda: ops.scatter(np.array([[0], [2]]), np.ones((2, 4), np.float32), (3, 4)),
     "scatter_update": lambda: ops.scatter_update(X, np.array([[0, 0], [1, 1]]), np.array([9.0, 8.0], np.float32)),
     "slice": lambda: ops.slice(X, (1, 1), (2, 2)), "meshgrid": lambda: ops.meshgrid(V[:2], V[:3]),
     "cond": lambda: ops.cond(True, lambda: X, lambda: Y), "while": lambda: ops.while_loop(lambda i: i < 5, lambda i: i + 1, 0),
     "while_t": lambda: ops.while_loop(lambda a, b: a < 3, lambda a, b: (a + 1, b * 2), (0, 1)), "fori": lambda: ops.fori_loop(0, 4, lambda i, v: v + i, 0),
     "scan": lambda: ops.scan(lambda c, x: (c + x, c * x), 0.0, V), "map": lambda: ops.map(lambda r: r * 2, X),
    }
    return cases


def flat_results(ops) -> dict:
    out = {}
    for key, thunk in cases(ops).items():
        result = thunk()
        for i, value in enumerate(result if isinstance(result, (tuple, list)) else [result]):
            out[f"{key}/{i}"] = np.asarray(value)
    return out


REF = np.load(DATA) if DATA.exists() else {}
OURS = {}


@pytest.mark.parametrize("key", sorted(cases(None)))
def test_keras_ops_match_keras(key):
    if not OURS:
        OURS.update(flat_results(sf.keras.ops))
    ref_keys = sorted(k for k in REF.files if k.rsplit("/", 1)[0] == key)
    ours_keys = sorted(k for k in OURS if k.rsplit("/", 1)[0] == key)
    assert ours_keys == ref_keys
    for k in ref_keys:
        got, want = OURS[k], REF[k]
        assert got.dtype == want.dtype and got.shape == want.shape, (k, got.dtype, want.dtype, got.shape, want.shape)
        np.testing.assert_allclose(got.astype(np.float64) if got.dtype != bool else got,
                                   want.astype(np.float64) if want.dtype != bool else want, rtol=1e-5, atol=1e-6)


def test_keras_ops_in_a_function_and_a_custom_layer():
    ops = sf.keras.ops

    class Norm(sf.keras.layers.Layer):
        def build(self, input_shape):
            self.scale = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="scale")

        def call(self, x):
            m, v = ops.moments(x, axes=[-1], keepdims=True)
            return (x - m) * ops.rsqrt(v + 1e-5) * self.scale

    x = np.random.default_rng(0).standard_normal((2, 5)).astype(np.float32)
    layer = Norm()
    eager = layer(x).numpy()
    traced = sf.function(lambda t: layer(t))(x).numpy()
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(eager, ref, rtol=1e-5)
    np.testing.assert_allclose(traced, ref, rtol=1e-5)
