"""``sf.keras.random`` and ``sf.keras.utils.set_random_seed``: Keras 3's random numbers, the same
bits as Keras with the TensorFlow backend for the same seed.

As Keras's (keras/src/random/seed_generator.py, backend/tensorflow/random.py): every draw is a
stateless one (tf.random.stateless_*, Philox) from a [2] seed: an int ``seed`` is [seed, 0] (the
same values on every call); a ``SeedGenerator`` holds its state [seed, counter] in a variable
and hands out its state then adds 1 to the counter (a traced function's draws change per call);
``seed=None`` takes the global generator's state, which moves by (s + 1) * 5387 % 933199. The
seed is taken modulo 2^31 - 2 into int32. A ``SeedGenerator()`` or initializer made without a
seed takes ``random.randint(1, 1e9)`` from Python's ``random`` when made, so
``set_random_seed(s)`` (which seeds Python's ``random``, numpy's global generator and
``sf.random``, and drops the global generator) makes everything built after it reproducible;
without it, Python seeds ``random`` afresh in each process.
"""

from __future__ import annotations

import random as _python_random

import numpy as np

from specflow.api import tf_names
from specflow.api import tf_random_names as _tf_random  # noqa: F401 (adds stateless_* to tf_names.random)
from specflow.api.tensor import Tensor
from specflow.api.tf_array_names import argsort
from specflow.api.tf_control_names import init_scope
from specflow.api.variables import Variable
from specflow.graph.dtypes import as_dtype

_STATE: dict = {"seed": None, "global": None}  # set_random_seed's seed, the global SeedGenerator
_INT32_SEED_MOD = 2**31 - 2  # Keras's _cast_seed: floormod(seed, int32.max - 1)


def make_default_seed() -> int:
    """An unseeded generator's or initializer's seed, as Keras's: from Python's ``random``."""
    return _python_random.randint(1, int(1e9))


def set_random_seed(seed: int) -> None:
    """Keras's ``keras.utils.set_random_seed``: seeds Python's ``random``, numpy's global
    generator and ``sf.random`` (TF's global seed), and drops the global SeedGenerator (made again
    from Python's ``random`` on the next unseeded draw)."""
    if not isinstance(seed, int):
        raise ValueError(f"Expected `seed` argument to be an integer. Received: seed={seed} (of type {type(seed)})")
    _STATE["seed"], _STATE["global"] = seed, None
    _python_random.seed(seed)
    np.random.seed(seed)
    tf_names.random.set_seed(seed)


def get_random_seed():
    """The seed ``set_random_seed`` was last given, or None."""
    return _STATE["seed"]


class SeedGenerator:
    """Keras's ``keras.random.SeedGenerator(seed=None)``: a [seed, 0] int64 state variable; each
    draw seeded by it takes the state and adds 1 to its second element."""

    def __init__(self, seed=None, name=None, **kwargs):
        from specflow.api.keras import auto_name

        if kwargs:
            raise ValueError(f"Unrecognized keyword arguments: {kwargs}")
        self.name = name if name is not None else auto_name(type(self).__name__)
        self._initial_seed = seed
        if seed is None:
            seed = make_default_seed()
        if not isinstance(seed, int):
            raise ValueError(f"Argument `seed` must be an integer. Received: seed={seed}")
        with init_scope():  # made once, even when a traced function makes it
            self.state = Variable(np.array([seed, 0], np.int64), trainable=False,
                                  name=f"{self.name}/seed_generator_state")

    def next(self, ordered: bool = True):
        """The state before this draw; ``ordered=False`` (the global generator's) scrambles it."""
        value = self.state.read_value() * np.int64(1)
        if ordered:
            self.state.assign_add(np.array([0, 1], np.int64))
        else:
            self.state.assign(tf_names.math.floormod((value + np.int64(1)) * np.int64(5387), np.int64(933199)))
        return value

    def get_config(self) -> dict:
        return {"seed": self._initial_seed, "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def global_seed_generator() -> SeedGenerator:
    if _STATE["global"] is None:
        _STATE["global"] = SeedGenerator()
    return _STATE["global"]


def draw_seed(seed):
    """Keras's ``draw_seed``: the int64 [2] seed for one draw (a numpy array for an int seed)."""
    if isinstance(seed, SeedGenerator):
        return seed.next()
    if isinstance(seed, (int, np.integer)):
        return np.array([int(seed), 0], np.int64)
    if seed is None:
        return global_seed_generator().next(ordered=False)
    raise ValueError("Argument `seed` must be either an integer or an instance of `SeedGenerator`. "
                     f"Received: seed={seed} (of type {type(seed)})")


def _seed(seed):
    """The int32 [2] seed the stateless ops get (Keras's ``_cast_seed(draw_seed(seed))``)."""
    s = draw_seed(seed)
    if isinstance(s, Tensor):
        return tf_names.cast(tf_names.math.floormod(s, np.int64(_INT32_SEED_MOD)), "int32")
    return (s % _INT32_SEED_MOD).astype(np.int32)


def _floatx(dtype):
    return as_dtype(dtype if dtype is not None else "float32")


def normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    return tf_names.random.stateless_normal(shape, _seed(seed), mean=mean, stddev=stddev, dtype=_floatx(dtype))


def uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    dt = _floatx(dtype)
    if not dt.is_floating:
        raise ValueError(f"`keras.random.uniform` requires a floating point `dtype`. Received: dtype={dt.name} ")
    return tf_names.random.stateless_uniform(shape, _seed(seed), minval=minval, maxval=maxval, dtype=dt)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    return tf_names.random.stateless_truncated_normal(shape, _seed(seed), mean=mean, stddev=stddev,
                                                      dtype=_floatx(dtype))


def randint(shape, minval, maxval, dtype="int32", seed=None):
    dt = as_dtype(dtype)
    if not dt.is_integer:
        raise ValueError(f"`keras.random.randint` requires an integer `dtype`. Received: dtype={dt.name} ")
    inner = dt if dt.name in ("int32", "int64") else as_dtype("int64")
    out = tf_names.random.stateless_uniform(shape, _seed(seed), minval=minval, maxval=maxval, dtype=inner)
    return out if inner == dt else tf_names.cast(out, dt)


def categorical(logits, num_samples, dtype="int32", seed=None):
    logits = tf_names.convert_to_tensor(logits)
    if logits.shape.rank != 2:
        raise ValueError(f"`logits` should be a 2-D tensor with shape [batch_size, num_classes]. Received: "
                         f"logits={logits}")
    out = tf_names.random.stateless_categorical(logits, num_samples, _seed(seed))
    return tf_names.cast(out, dtype)


def dropout(inputs, rate, noise_shape=None, seed=None):
    """TF's stateless_dropout as Keras calls it: x / (1 - rate) where a uniform draw of the noise
    shape (None entries: the input's) is >= rate, else 0."""
    x = tf_names.convert_to_tensor(inputs)
    if rate == 1.0:
        return tf_names.zeros_like(x)
    if rate == 0.0:
        return x
    s = _seed(seed)
    if noise_shape is None:
        shape = tf_names.shape(x)
    elif isinstance(noise_shape, Tensor):
        shape = noise_shape
    else:
        dyn = tf_names.shape(x)
        shape = tf_names.stack([dyn[i] if d is None else np.int32(d) for i, d in enumerate(noise_shape)])
    scaled = x * np.asarray(1 / (1 - rate), x.dtype.numpy)
    keep = tf_names.random.stateless_uniform(shape, s, dtype=x.dtype) >= np.asarray(rate, x.dtype.numpy)
    return tf_names.where(keep, scaled, np.zeros((), x.dtype.numpy))


def shuffle(x, axis=0, seed=None):
    """The order of a uniform draw (ties: the lower index first, as TF's argsort) along ``axis``."""
    x = tf_names.convert_to_tensor(x)
    keys = tf_names.random.stateless_uniform(tf_names.shape(x)[axis:axis + 1 or None], _seed(seed))  # [n]
    return tf_names.gather(x, argsort(keys, stable=True), axis=axis)


def gamma(shape, alpha, dtype=None, seed=None):
    dt = _floatx(dtype)
    inner = as_dtype("float32") if dt.name == "bfloat16" else dt
    out = tf_names.random.stateless_gamma(shape, _seed(seed), alpha=alpha, dtype=inner)
    return out if inner == dt else tf_names.cast(out, dt)


def binomial(shape, counts, probabilities, dtype=None, seed=None):
    dt = _floatx(dtype)
    inner = as_dtype("float32") if dt.name == "bfloat16" else dt
    out = tf_names.random.stateless_binomial(shape, _seed(seed), counts=counts, probs=probabilities,
                                             output_dtype=inner)
    return out if inner == dt else tf_names.cast(out, dt)


def beta(shape, alpha, beta, dtype=None, seed=None):
    """Keras's: X / (X + Y) for gamma draws X ~ (alpha), Y ~ (beta), Y's seed the first's + 12."""
    dt = _floatx(dtype)
    inner = as_dtype("float32") if dt.name == "bfloat16" else dt
    seed_1 = _seed(seed)
    seed_2 = seed_1 + np.int32(12)
    a = tf_names.broadcast_to(tf_names.convert_to_tensor(np.asarray(alpha, inner.numpy) if not isinstance(
        alpha, Tensor) else alpha), shape)
    b = tf_names.broadcast_to(tf_names.convert_to_tensor(np.asarray(beta, inner.numpy) if not isinstance(
        beta, Tensor) else beta), shape)
    ga = tf_names.cast(tf_names.random.stateless_gamma(shape, seed_1, alpha=a, dtype=inner), dt)
    gb = tf_names.cast(tf_names.random.stateless_gamma(shape, seed_2, alpha=b, dtype=inner), dt)
    return ga / (ga + gb)


def _numpy(value) -> np.ndarray:
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


def initial_value(fn, *args, **kwargs) -> np.ndarray:
    """An initializer's draw, run eagerly (also while a function is being traced) as a numpy array."""
    with init_scope():
        return _numpy(fn(*args, **kwargs))


__all__ = ["SeedGenerator", "normal", "uniform", "truncated_normal", "randint", "categorical", "dropout", "shuffle",
           "gamma", "binomial", "beta"]
