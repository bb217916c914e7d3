"""sf.keras's random numbers against Keras 3's (TensorFlow backend) for the same seeds: the
``sf.keras.random`` functions (int seeds, SeedGenerators, the global generator after
``set_random_seed``), every initializer seeded and unseeded, the dropout/noise layers' masks in
training, layers' and models' initial weights after ``set_random_seed`` and a few ``fit`` steps
with dropout. ``run_cases(K)`` runs the same code on ``keras`` and on ``sf.keras``; Keras's
results are stored in data/keras_random.npz (scripts/make_keras_random_fixture.py). Also the
stateless ops' float Box-Muller against glibc's logf/sincosf (what TF's CPU kernels call)."""

from __future__ import annotations

import ctypes
import ctypes.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

DATA = Path(__file__).parent / "data" / "keras_random.npz"
X = np.arange(1, 25, dtype=np.float32).reshape(4, 6) / 10


def _np(t) -> np.ndarray:
    return np.asarray(t.numpy() if hasattr(t, "numpy") else t)


INITIALIZERS = {
    "random_normal": ("RandomNormal", {"mean": 0.1, "stddev": 0.3}),
    "random_uniform": ("RandomUniform", {"minval": -0.2, "maxval": 0.4}),
    "truncated_normal": ("TruncatedNormal", {"stddev": 0.5}),
    "vs_untruncated": ("VarianceScaling", {"scale": 0.7, "mode": "fan_out", "distribution": "untruncated_normal"}),
    "vs_uniform": ("VarianceScaling", {"scale": 2.0, "mode": "fan_avg", "distribution": "uniform"}),
    "vs_normal": ("VarianceScaling", {"scale": 1.5, "mode": "fan_in", "distribution": "normal"}),
    "glorot_uniform": ("GlorotUniform", {}), "glorot_normal": ("GlorotNormal", {}),
    "he_uniform": ("HeUniform", {}), "he_normal": ("HeNormal", {}),
    "lecun_uniform": ("LecunUniform", {}), "lecun_normal": ("LecunNormal", {}),
    "orthogonal": ("Orthogonal", {"gain": 1.5}),
}


def _random_cases(K, out: dict) -> None:
    R = K.random
    out["uniform"] = R.uniform((3, 4), minval=-2.0, maxval=3.0, seed=1234)
    out["uniform_f64"] = R.uniform((5,), dtype="float64", seed=1234)
    out["normal"] = R.normal((5, 7), mean=0.5, stddev=2.0, seed=99)
    out["normal_f16"] = R.normal((6,), dtype="float16", seed=99)
    out["normal_f64"] = R.normal((64,), dtype="float64", seed=99)
    out["truncated_normal_f64"] = R.truncated_normal((64,), dtype="float64", seed=7)
    out["truncated_normal"] = R.truncated_normal((6, 9), stddev=0.3, seed=7)
    out["randint"] = R.randint((10,), 3, 17, seed=5)
    out["randint64"] = R.randint((10,), -5, 5, dtype="int64", seed=5)
    out["categorical"] = R.categorical(np.log([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]]).astype(np.float32), 12, seed=11)
    out["dropout"] = R.dropout(X, 0.4, seed=3)
    out["dropout_noise_shape"] = R.dropout(X.reshape(2, 3, 4), 0.5, noise_shape=(None, 1, 4), seed=3)
    out["shuffle"] = R.shuffle(np.arange(20), seed=8)
    out["shuffle_axis1"] = R.shuffle(np.arange(12).reshape(3, 4), axis=1, seed=8)
    out["gamma"] = R.gamma((4,), alpha=2.5, seed=4)
    out["binomial"] = R.binomial((5,), counts=10.0, probabilities=0.3, seed=4)
    out["beta"] = R.beta((5,), alpha=2.0, beta=3.0, seed=4)
    out["big_seed"] = R.uniform((3,), seed=2**40 + 17)  # taken modulo 2^31 - 2
    g = R.SeedGenerator(42)
    out["generator"] = np.stack([_np(R.normal((4,), seed=g)) for _ in range(3)])
    out["generator_state"] = g.state
    K.utils.set_random_seed(1337)
    out["global"] = np.stack([_np(R.uniform((3,))) for _ in range(3)])  # the global generator, made now
    out["default_generator"] = R.uniform((3,), seed=R.SeedGenerator())


def _initializer_cases(K, out: dict) -> None:
    for shape in [(5, 7), (3, 3, 2, 4)]:
        tag = "x".join(map(str, shape))
        for name, (cls, kwargs) in INITIALIZERS.items():
            out[f"init/{name}/{tag}/seeded"] = getattr(K.initializers, cls)(seed=21, **kwargs)(shape)
        K.utils.set_random_seed(5)
        for name, (cls, kwargs) in INITIALIZERS.items():
            init = getattr(K.initializers, cls)(**kwargs)  # the default seed, from Python's random
            out[f"init/{name}/{tag}/unseeded"] = init(shape)
            out[f"init/{name}/{tag}/again"] = init(shape)  # the same values on every call
    gen = K.initializers.RandomNormal(seed=K.random.SeedGenerator(3))
    out["init/generator_seeded"] = np.stack([_np(gen((4,))) for _ in range(2)])
    out["init/identity"] = K.initializers.Identity(gain=2.0)((3, 4))
    K.utils.set_random_seed(8)
    out["init/get_by_name"] = K.initializers.get("he_uniform")((4, 3))


def _layer_cases(K, out: dict) -> None:
    L = K.layers
    x3 = X.reshape(2, 3, 4)
    x4 = np.arange(2 * 3 * 3 * 4, dtype=np.float32).reshape(2, 3, 3, 4) / 10
    for name, layer, x in [("dropout", L.Dropout(0.3, seed=17), X),
                           ("dropout_noise_shape", L.Dropout(0.5, noise_shape=(None, 1, 4), seed=17), x3),
                           ("spatial1d", L.SpatialDropout1D(0.4, seed=5), x3),
                           ("spatial2d", L.SpatialDropout2D(0.4, seed=5), x4),
                           ("gaussian_noise", L.GaussianNoise(0.2, seed=9), X),
                           ("gaussian_dropout", L.GaussianDropout(0.3, seed=9), X),
                           ("alpha_dropout", L.AlphaDropout(0.3, seed=9), X),
                           ("alpha_dropout_noise_shape", L.AlphaDropout(0.4, noise_shape=(None, 1, 4), seed=2), x3)]:
        out[f"layer/{name}"] = np.stack([_np(layer(x, training=True)) for _ in range(3)])
        out[f"layer/{name}/inference"] = layer(x, training=False)
    K.utils.set_random_seed(77)
    layer = L.Dropout(0.5)
    out["layer/dropout_unseeded"] = np.stack([_np(layer(X, training=True)) for _ in range(2)])
    att = L.Attention(dropout=0.4, seed=4)
    q = X.reshape(2, 3, 4)
    out["layer/attention_dropout~"] = att([q, q[:, ::-1]], training=True)


def _built_layer_cases(K, out: dict) -> None:
    L = K.layers
    seq = np.arange(2 * 5 * 4, dtype=np.float32).reshape(2, 5, 4) / 40
    img = np.arange(2 * 6 * 6 * 3, dtype=np.float32).reshape(2, 6, 6, 3) / 200
    vol = np.arange(2 * 4 * 4 * 4 * 2, dtype=np.float32).reshape(2, 4, 4, 4, 2) / 200
    K.utils.set_random_seed(11)
    for name, layer, x in [("dense", L.Dense(5), X),
                           ("dense_he", L.Dense(4, kernel_initializer="he_normal", bias_initializer="random_normal"), X),
                           ("embedding", L.Embedding(10, 3), np.array([[1, 2], [3, 9]])),
                           ("conv1d", L.Conv1D(3, 2), seq),
                           ("conv2d", L.Conv2D(4, 3), img),
                           ("depthwise", L.DepthwiseConv2D(3, depth_multiplier=2), img),
                           ("separable", L.SeparableConv2D(4, 3, depth_multiplier=2), img),
                           ("conv2d_transpose", L.Conv2DTranspose(2, 3), img),
                           ("conv3d", L.Conv3D(2, 2), vol),
                           ("depthwise1d", L.DepthwiseConv1D(2, depth_multiplier=2), seq),
                           ("separable1d", L.SeparableConv1D(3, 2), seq),
                           ("simple_rnn", L.SimpleRNN(3), seq),
                           ("lstm", L.LSTM(3), seq),
                           ("gru", L.GRU(3), seq),
                           ("bidirectional", L.Bidirectional(L.LSTM(2)), seq),
                           ("additive_attention", L.AdditiveAttention(), [seq, seq]),
                           ("mha", L.MultiHeadAttention(2, 3, dropout=0.3, seed=6), seq)]:
        if name == "mha":
            layer(seq, seq)
            out["layer/mha/out~"] = layer(seq, seq, training=True)
        else:
            layer(x)
        for i, w in enumerate(layer.get_weights()):
            out[f"weights/{name}/{i}"] = w


def _model_cases(K, out: dict) -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 6)).astype(np.float32)
    y = rng.normal(size=(32, 3)).astype(np.float32)
    K.utils.set_random_seed(2024)
    model = K.Sequential([K.Input((6,)), K.layers.Dense(8, activation="relu"), K.layers.Dropout(0.3),
                          K.layers.Dense(3)])
    for i, w in enumerate(model.get_weights()):
        out[f"seq/initial/{i}"] = w
    model.compile(optimizer=K.optimizers.SGD(0.1), loss="mse")
    hist = model.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0)
    out["seq/loss~"] = np.asarray(hist.history["loss"], np.float64)
    for i, w in enumerate(model.get_weights()):
        out[f"seq/trained/{i}~"] = w

    K.utils.set_random_seed(7)
    inp = K.Input((6,))
    h = K.layers.Dense(5, activation="tanh", kernel_initializer="he_normal")(inp)
    h = K.layers.GaussianNoise(0.1)(h)
    h = K.layers.Dropout(0.2)(h)
    outp = K.layers.Dense(3, kernel_initializer="lecun_normal", bias_initializer="random_uniform")(h)
    fmodel = K.Model(inp, outp)
    for i, w in enumerate(fmodel.get_weights()):
        out[f"functional/initial/{i}"] = w
    fmodel.compile(optimizer=K.optimizers.SGD(0.05), loss="mse")
    hist = fmodel.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    out["functional/loss~"] = np.asarray(hist.history["loss"], np.float64)


def run_cases(K) -> dict[str, np.ndarray]:
    """The same calls on ``keras`` or ``sf.keras``; a key ending in "~" holds values that go
    through float arithmetic beyond the draws (compared to 1e-6), the others are compared exactly."""
    out: dict = {}
    for part in (_random_cases, _initializer_cases, _layer_cases, _built_layer_cases, _model_cases):
        part(K, out)
    return {k: _np(v) for k, v in out.items()}


@pytest.fixture(scope="module")
def results():
    import specflow as sf

    return run_cases(sf.keras), dict(np.load(DATA))


def test_same_cases_as_the_fixture(results):
    got, want = results
    assert sorted(got) == sorted(want)


@pytest.mark.parametrize("prefix", ["uniform", "normal", "truncated", "randint", "categorical", "dropout", "shuffle",
                                    "gamma", "binomial", "beta", "big_seed", "generator", "global", "default_"])
def test_keras_random_functions_equal_keras(results, prefix):
    got, want = results
    keys = [k for k in want if k.startswith(prefix)]
    assert keys
    for k in keys:
        assert got[k].dtype == want[k].dtype, k
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)


def _compare(got, want, k):
    assert got[k].shape == want[k].shape, k
    if k.endswith("~") or "orthogonal" in k or any(f"{rnn}/1" in k for rnn in ("lstm", "gru", "simple_rnn")) \
            or "bidirectional/1" in k or "bidirectional/4" in k:
        # (Orthogonal's QR, the models' matmuls: float rounding, not the draws)
        np.testing.assert_allclose(got[k], want[k], rtol=0, atol=1e-6, err_msg=k)
    else:
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)


@pytest.mark.parametrize("prefix", ["init/", "layer/", "weights/", "seq/", "functional/"])
def test_initializers_layers_and_models_equal_keras(results, prefix):
    got, want = results
    keys = [k for k in want if k.startswith(prefix)]
    assert keys
    for k in keys:
        _compare(got, want, k)


def test_seeds_behave_as_keras():
    import specflow as sf

    K = sf.keras
    a, b = K.random.normal((4,), seed=3), K.random.normal((4,), seed=3)
    np.testing.assert_array_equal(_np(a), _np(b))  # an int seed: the same values
    g = K.random.SeedGenerator(3)
    first, second = _np(K.random.normal((4,), seed=g)), _np(K.random.normal((4,), seed=g))
    np.testing.assert_array_equal(first, _np(a))  # a generator's first draw is the int seed's
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(g.state.numpy(), [3, 2])
    assert not np.array_equal(_np(K.random.uniform((4,))), _np(K.random.uniform((4,))))  # the global generator moves
    with pytest.raises(ValueError, match="seed"):
        K.random.normal((2,), seed="x")
    with pytest.raises(ValueError, match="integer"):
        K.utils.set_random_seed(1.5)
    with pytest.raises(ValueError, match="floating"):
        K.random.uniform((2,), dtype="int32", seed=1)


def test_unseeded_runs_differ_between_processes():
    """Without set_random_seed each process draws afresh (Python seeds ``random`` per process)."""
    code = ("import specflow as sf\nd = sf.keras.layers.Dense(3)\nd(sf.ones((1, 4)))\n"
            "print(sf.keras.random.uniform((2,)).numpy().tolist(), d.kernel.numpy().ravel().tolist())")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
            for _ in range(2)]
    assert runs[0] != runs[1]
    seeded = code.replace("import specflow as sf\n", "import specflow as sf\nsf.keras.utils.set_random_seed(4)\n")
    again = [subprocess.run([sys.executable, "-c", seeded], capture_output=True, text=True, check=True).stdout
             for _ in range(2)]
    assert again[0] == again[1]


def test_dropout_in_a_traced_function_moves_per_call():
    import specflow as sf

    layer = sf.keras.layers.Dropout(0.5, seed=2)
    f = sf.function(lambda x: layer(x, training=True))
    a, b = _np(f(X)), _np(f(X))
    assert not np.array_equal(a, b)
    g = sf.keras.random.SeedGenerator(2)
    np.testing.assert_array_equal(a, _np(sf.keras.random.dropout(X, 0.5, seed=g)))
    np.testing.assert_array_equal(b, _np(sf.keras.random.dropout(X, 0.5, seed=g)))


def _libm():
    path = ctypes.util.find_library("m")
    if path is None or "libm.so" not in path:
        pytest.skip("needs glibc's libm")
    return ctypes.CDLL(path)


def test_box_muller_functions_are_glibcs():
    """TF's float Box-Muller calls logf and sincosf: ours give glibc's floats on the uniforms a
    Philox word makes (k / 2^23), where numpy's float functions differ by an ulp in ~1%."""
    from specflow.ops.stateless_random_ops import glibc_logf, glibc_sincosf

    libm = _libm()
    libm.logf.restype, libm.logf.argtypes = ctypes.c_float, [ctypes.c_float]
    for fn in ("sinf", "cosf"):
        getattr(libm, fn).restype, getattr(libm, fn).argtypes = ctypes.c_float, [ctypes.c_float]
    k = np.random.default_rng(0).integers(1, 1 << 23, 20000)
    u = (k / 2.0**23).astype(np.float32)
    angle = (2 * np.pi * u.astype(np.float64)).astype(np.float32)
    want_log = np.array([libm.logf(float(v)) for v in u], np.float32)
    want_sin = np.array([libm.sinf(float(v)) for v in angle], np.float32)
    want_cos = np.array([libm.cosf(float(v)) for v in angle], np.float32)
    np.testing.assert_array_equal(glibc_logf(np, u), want_log)
    sin, cos = glibc_sincosf(np, angle)
    np.testing.assert_array_equal(sin, want_sin)
    np.testing.assert_array_equal(cos, want_cos)
    assert (np.log(u.astype(np.float64)).astype(np.float32) != want_log).any()  # the check can fail


def _truncated_reference(seed, n: int, calls: int) -> np.ndarray:
    """TF's truncated normal, each group of 4 taking its first 4 values within (-2, 2) from
    ``calls`` Philox calls at its own counter (counter + 256 g)."""
    from specflow.ops import stateless_random_ops as sro

    class Host:
        def host(self, x):
            return np.asarray(x)

    key, counter = sro.key_counter_from_seed(Host(), np.asarray(seed, np.int64))
    groups = -(-n // 4)
    starts = np.arange(groups, dtype=np.uint64) * np.uint64(256)
    words = sro.philox_words_at(np, key, counter, starts[:, None] + np.arange(calls, dtype=np.uint64)[None, :])
    values = sro.normal_from_words(np, words.reshape(-1), np.dtype(np.float32), words.size).reshape(groups, -1)
    keep = np.abs(values) < 2
    found = keep.sum(axis=1) >= 4
    first = np.stack([row[k][:4] if ok else np.full(4, np.nan, np.float32)
                      for row, k, ok in zip(values, keep, found)])
    return first.reshape(-1)[:n], found


def test_truncated_normal_groups_that_need_more_draws():
    """Seed [6, 0]: one group of 10000 finds fewer than 4 values in its first two Philox calls
    (8 normals), so the kernel draws that group again from its start with more calls."""
    import specflow as sf

    _, found = _truncated_reference([6, 0], 40000, calls=2)
    assert not found.all()  # the slow path is taken
    want, found = _truncated_reference([6, 0], 40000, calls=16)
    assert found.all()
    got = sf.random.stateless_truncated_normal([40000], seed=[6, 0]).numpy()
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_stateless_normals_equal_tensorflows(dtype):
    tf = pytest.importorskip("tensorflow")
    import specflow as sf

    for seed in ([6, 0], [2**31 - 3, 12345]):
        for name in ("stateless_normal", "stateless_truncated_normal"):
            want = getattr(tf.random, name)([40000], seed=seed, dtype=dtype).numpy()
            got = getattr(sf.random, name)([40000], seed=seed, dtype=dtype).numpy()
            np.testing.assert_array_equal(got, want, err_msg=f"{name} {seed}")
