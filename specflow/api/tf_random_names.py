"""TensorFlow's tf.random names beyond normal and uniform (api/tf_names.py), on the registered
ops: truncated_normal, categorical, shuffle, gamma, poisson (stateful ops seeded per op as
tf_names' ``_seeds``), and the stateless_* family (a shape-[2] ``seed`` through
StatelessRandomGetKeyCounter and the V2 ops, TensorFlow's 'auto_select' algorithm). Its names are
added to the one ``sf.random`` namespace (tf_names.random)."""

from __future__ import annotations

import numpy as np

from specflow.api import tf_names
from specflow.api.op_functions import call
from specflow.api.tensor import Tensor
from specflow.api.tf_names import _random_shape, _seeds, _t
from specflow.graph import dtypes
from specflow.graph.dtypes import as_dtype


def _param(v, dt):
    return v if isinstance(v, Tensor) else np.asarray(v, dt.numpy)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name: str | None = None):
    dt = as_dtype(dtype)
    x = call("TruncatedNormal", _random_shape(shape), dtype=dt, **_seeds(seed))
    return call("AddV2", call("Mul", x, _param(stddev, dt)), _param(mean, dt), name=name)


def categorical(logits, num_samples, dtype=None, seed=None, name: str | None = None):
    dt = dtypes.int64 if dtype is None else as_dtype(dtype)
    if dt not in (dtypes.int32, dtypes.int64):
        raise ValueError(f"categorical: dtype must be int32 or int64, got {dt.name}")
    return call("Multinomial", _t(logits), np.int32(num_samples), output_dtype=dt, **_seeds(seed), name=name)


def shuffle(value, seed=None, name: str | None = None):
    return call("RandomShuffle", _t(value), **_seeds(seed), name=name)


def gamma(shape, alpha, beta=None, dtype=dtypes.float32, seed=None, name: str | None = None):
    """RandomGamma(alpha broadcast against beta) / beta, floored at the dtype's tiny."""
    dt = as_dtype(dtype)
    alpha, beta = _param(alpha, dt), _param(1 if beta is None else beta, dt)
    bshape = call("BroadcastArgs", call("Shape", alpha), call("Shape", beta))
    g = call("RandomGamma", _random_shape(shape), call("BroadcastTo", alpha, bshape), **_seeds(seed))
    return call("Maximum", np.asarray(np.finfo(dt.numpy).tiny, dt.numpy), call("RealDiv", g, beta), name=name)


def poisson(shape, lam, dtype=dtypes.float32, seed=None, name: str | None = None):
    return call("RandomPoissonV2", _random_shape(shape), lam, dtype=as_dtype(dtype), **_seeds(seed), name=name)


def _key_counter_alg(seed, alg):
    if alg not in (None, "auto_select", 3):
        raise ValueError(f"only alg='auto_select' is supported, got {alg!r}")
    seed = seed if isinstance(seed, Tensor) else np.asarray(seed, np.int64)
    key, counter = call("StatelessRandomGetKeyCounter", seed)
    return key, counter, call("StatelessRandomGetAlg")


def stateless_uniform(shape, seed, minval=0, maxval=None, dtype=dtypes.float32, name: str | None = None,
                      alg="auto_select"):
    dt = as_dtype(dtype)
    shape = _random_shape(shape)
    if dt.is_integer:
        if (minval is None) != (maxval is None):
            raise ValueError(f"stateless_uniform: for {dt.name} give both minval and maxval, or neither")
        key, counter, a = _key_counter_alg(seed, alg)
        if minval is None:
            return call("StatelessRandomUniformFullIntV2", shape, key, counter, a, dtype=dt, name=name)
        return call("StatelessRandomUniformIntV2", shape, key, counter, a, _param(minval, dt), _param(maxval, dt),
                    name=name)
    minval, maxval = _param(minval, dt), _param(1 if maxval is None else maxval, dt)
    key, counter, a = _key_counter_alg(seed, alg)
    rnd = call("StatelessRandomUniformV2", shape, key, counter, a, dtype=dt)
    return call("AddV2", rnd * call("Sub", maxval, minval), minval, name=name)


def _stateless_scaled(op: str, shape, seed, mean, stddev, dtype, name, alg):
    """A standard draw of ``op`` times ``stddev`` plus ``mean``, as TF's stateless normals compose it."""
    dt = as_dtype(dtype)
    key, counter, a = _key_counter_alg(seed, alg)
    rnd = call(op, _random_shape(shape), key, counter, a, dtype=dt)
    return call("AddV2", call("Mul", rnd, _param(stddev, dt)), _param(mean, dt), name=name)


def stateless_normal(shape, seed, mean=0.0, stddev=1.0, dtype=dtypes.float32, name: str | None = None,
                     alg="auto_select"):
    return _stateless_scaled("StatelessRandomNormalV2", shape, seed, mean, stddev, dtype, name, alg)


def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=dtypes.float32, name: str | None = None,
                               alg="auto_select"):
    return _stateless_scaled("StatelessTruncatedNormalV2", shape, seed, mean, stddev, dtype, name, alg)


def stateless_categorical(logits, num_samples, seed, dtype=dtypes.int64, name: str | None = None):
    dt = as_dtype(dtype)
    if dt not in (dtypes.int32, dtypes.int64):
        raise ValueError(f"stateless_categorical: dtype must be int32 or int64, got {dt.name}")
    seed = seed if isinstance(seed, Tensor) else np.asarray(seed, np.int64)
    return call("StatelessMultinomial", _t(logits), np.int32(num_samples), seed, output_dtype=dt, name=name)


def stateless_gamma(shape, seed, alpha, beta=None, dtype=dtypes.float32, name: str | None = None):
    dt = as_dtype(dtype)
    alpha, beta = _param(alpha, dt), _param(1 if beta is None else beta, dt)
    bshape = call("BroadcastArgs", call("Shape", alpha), call("Shape", beta))
    key, counter, a = _key_counter_alg(seed, "auto_select")
    rnd = call("StatelessRandomGammaV3", _random_shape(shape), key, counter, a, call("BroadcastTo", alpha, bshape))
    return call("Maximum", np.asarray(np.finfo(dt.numpy).tiny, dt.numpy), call("RealDiv", rnd, beta), name=name)


def stateless_poisson(shape, seed, lam, dtype=dtypes.int32, name: str | None = None):
    seed = seed if isinstance(seed, Tensor) else np.asarray(seed, np.int64)
    return call("StatelessRandomPoisson", _random_shape(shape), seed, lam, dtype=as_dtype(dtype), name=name)


def stateless_binomial(shape, seed, counts, probs, output_dtype=dtypes.int32, name: str | None = None):
    seed = seed if isinstance(seed, Tensor) else np.asarray(seed, np.int64)
    probs = _t(probs)
    counts = _param(counts, probs.dtype)
    return call("StatelessRandomBinomial", _random_shape(shape), seed, counts, probs, dtype=as_dtype(output_dtype),
                name=name)


RANDOM_NAMES = sorted("""
    categorical gamma poisson shuffle stateless_binomial stateless_categorical stateless_gamma stateless_normal
    stateless_poisson stateless_truncated_normal stateless_uniform truncated_normal
""".split())
for _name in RANDOM_NAMES:
    setattr(tf_names.random, _name, globals()[_name])
