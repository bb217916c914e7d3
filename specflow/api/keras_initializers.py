"""``sf.keras.initializers``: Keras 3's initializers, called as ``init(shape, dtype="float32")``
and returning a numpy array (what ``Layer._own_weight`` takes). The formulas are Keras 3's
(``VarianceScaling``'s fans: a dense kernel's (in, out), a conv kernel's receptive field times
its in/out channels; its truncated normal's stddev divided by 0.87962566103423978, the stddev of
a standard normal truncated to [-2, 2]) and so are the draws: ``sf.keras.random``'s (TF's
stateless Philox bits), seeded by ``seed=`` (an int: the same values on every call; a
``SeedGenerator``: new values per call) or, made without one, by a seed taken from Python's
``random`` when the initializer is made (so after ``sf.keras.utils.set_random_seed`` a model
gets Keras's initial weights)."""

from __future__ import annotations

import math
import re

import numpy as np

from specflow.api import keras_random as random
from specflow.errors import GraphError
from specflow.schema.initializers import compute_fans


def _fans(shape, input_axes=None, output_axes=None) -> tuple[float, float]:
    """Keras's ``compute_fans`` (the spec's initializers use the same rule), or the products
    of the dimensions at ``input_axes`` and ``output_axes`` when both are given."""
    shape = [int(s) for s in shape]
    if input_axes is not None and output_axes is not None:
        return math.prod(shape[a] for a in input_axes), math.prod(shape[a] for a in output_axes)
    return compute_fans(shape)


def _dtype_name(dtype) -> str:
    dtype = getattr(dtype, "name", dtype)
    return np.dtype(dtype).name if dtype is not None and not isinstance(dtype, str) else (dtype or "float32")


class Initializer:
    def __call__(self, shape, dtype="float32"):  # pragma: no cover - abstract
        raise NotImplementedError

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def _out(self, values, dtype):
        return np.asarray(values).astype(np.dtype(_dtype_name(dtype)))


class _Random(Initializer):
    """Keras's RandomInitializer: ``seed`` an int or a SeedGenerator, or None for a default seed
    drawn from Python's ``random`` now."""

    def __init__(self, seed=None):
        self._init_seed = seed
        if seed is None:
            seed = random.make_default_seed()
        elif not isinstance(seed, (int, random.SeedGenerator)):
            raise ValueError("`seed` argument should be an instance of `keras.random.SeedGenerator()` or an integer. "
                             f"Received: seed={seed}")
        self.seed = seed

    def get_config(self) -> dict:
        return {"seed": self._init_seed}

    def _draw(self, fn, shape, dtype, **kwargs):
        """``fn(shape, ..., seed=self.seed)`` (sf.keras.random's), eagerly, as numpy."""
        shape = tuple(int(s) for s in shape)
        return self._out(random.initial_value(fn, shape, dtype=_dtype_name(dtype), seed=self.seed, **kwargs), dtype)


class Zeros(Initializer):
    def __call__(self, shape, dtype="float32"):
        return self._out(np.zeros(tuple(shape)), dtype)


class Ones(Initializer):
    def __call__(self, shape, dtype="float32"):
        return self._out(np.ones(tuple(shape)), dtype)


class Constant(Initializer):
    def __init__(self, value=0.0):
        self.value = value

    def __call__(self, shape, dtype="float32"):
        return self._out(np.broadcast_to(np.asarray(self.value), tuple(shape)), dtype)


class RandomNormal(_Random):
    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__(seed)
        self.mean, self.stddev = mean, stddev

    def __call__(self, shape, dtype="float32"):
        return self._draw(random.normal, shape, dtype, mean=self.mean, stddev=self.stddev)

    def get_config(self) -> dict:
        return {"mean": self.mean, "stddev": self.stddev, **super().get_config()}


class RandomUniform(_Random):
    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        super().__init__(seed)
        self.minval, self.maxval = minval, maxval

    def __call__(self, shape, dtype="float32"):
        return self._draw(random.uniform, shape, dtype, minval=self.minval, maxval=self.maxval)

    def get_config(self) -> dict:
        return {"minval": self.minval, "maxval": self.maxval, **super().get_config()}


class TruncatedNormal(_Random):
    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__(seed)
        self.mean, self.stddev = mean, stddev

    def __call__(self, shape, dtype="float32"):
        return self._draw(random.truncated_normal, shape, dtype, mean=self.mean, stddev=self.stddev)

    def get_config(self) -> dict:
        return {"mean": self.mean, "stddev": self.stddev, **super().get_config()}


class VarianceScaling(_Random):
    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None, input_axes=None,
                 output_axes=None):
        if scale <= 0.0:
            raise ValueError(f"Argument `scale` must be positive float. Received: scale={scale}")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"Invalid `mode` argument: {mode!r} (fan_in, fan_out, fan_avg)")
        distribution = distribution.lower()
        if distribution == "normal":
            distribution = "truncated_normal"
        if distribution not in ("uniform", "truncated_normal", "untruncated_normal"):
            raise ValueError(f"Invalid `distribution` argument: {distribution!r}")
        self.scale, self.mode, self.distribution = scale, mode, distribution
        self.input_axes, self.output_axes = input_axes, output_axes
        super().__init__(seed)  # last, as Keras's: a bad argument takes no default seed

    def __call__(self, shape, dtype="float32"):
        fan_in, fan_out = _fans(shape, self.input_axes, self.output_axes)
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, fan)
        if self.distribution == "truncated_normal":
            stddev = math.sqrt(scale) / 0.87962566103423978
            return self._draw(random.truncated_normal, shape, dtype, mean=0.0, stddev=stddev)
        if self.distribution == "untruncated_normal":
            return self._draw(random.normal, shape, dtype, mean=0.0, stddev=math.sqrt(scale))
        limit = math.sqrt(3.0 * scale)
        return self._draw(random.uniform, shape, dtype, minval=-limit, maxval=limit)

    def get_config(self) -> dict:
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "input_axes": self.input_axes, "output_axes": self.output_axes, **super().get_config()}


def _preset(name: str, scale: float, mode: str, distribution: str):
    """Keras's named VarianceScaling (GlorotUniform, HeNormal, ...): only ``seed`` and the axes."""

    def __init__(self, seed=None, input_axes=None, output_axes=None):
        VarianceScaling.__init__(self, scale, mode, distribution, seed, input_axes, output_axes)

    def get_config(self) -> dict:
        return {"seed": self._init_seed, "input_axes": self.input_axes, "output_axes": self.output_axes}

    return type(name, (VarianceScaling,), {"__init__": __init__, "get_config": get_config, "__module__": __name__})


GlorotUniform = _preset("GlorotUniform", 1.0, "fan_avg", "uniform")
GlorotNormal = _preset("GlorotNormal", 1.0, "fan_avg", "truncated_normal")
LecunNormal = _preset("LecunNormal", 1.0, "fan_in", "truncated_normal")
LecunUniform = _preset("LecunUniform", 1.0, "fan_in", "uniform")
HeNormal = _preset("HeNormal", 2.0, "fan_in", "truncated_normal")
HeUniform = _preset("HeUniform", 2.0, "fan_in", "uniform")


class Orthogonal(_Random):
    """Keras's: QR of a normal draw of shape (prod(shape[:-1]), shape[-1]) (transposed when it
    has fewer rows than columns), q's columns signed by r's diagonal, times ``gain``. (The draw
    is Keras's bit for bit; the QR is numpy's in the draw's dtype, TF's Householder QR rounds
    differently: the values agree to about 1e-6.)"""

    def __init__(self, gain=1.0, seed=None):
        self.gain = gain
        super().__init__(seed)

    def __call__(self, shape, dtype="float32"):
        shape = tuple(int(s) for s in shape)
        if len(shape) < 2:
            raise ValueError(f"The tensor to initialize must be at least two-dimensional. Received: shape={shape}")
        rows, cols = math.prod(shape[:-1]), shape[-1]
        a = self._draw(random.normal, (max(rows, cols), min(rows, cols)), dtype)
        q, r = np.linalg.qr(a)
        q = q * np.sign(np.diag(r)).astype(q.dtype)
        if rows < cols:
            q = q.T
        return self._out(np.asarray(self.gain, q.dtype) * q.reshape(shape), dtype)

    def get_config(self) -> dict:
        return {"gain": self.gain, **super().get_config()}


class Identity(Initializer):
    def __init__(self, gain=1.0):
        self.gain = gain

    def __call__(self, shape, dtype="float32"):
        shape = tuple(int(s) for s in shape)
        if len(shape) != 2:
            raise ValueError(f"Identity matrix initializer can only be used for 2D matrices. Received: shape={shape}")
        return self._out(self.gain * np.eye(*shape), dtype)


CLASSES = (Zeros, Ones, Constant, RandomNormal, RandomUniform, TruncatedNormal, VarianceScaling, GlorotUniform,
           GlorotNormal, LecunNormal, LecunUniform, HeNormal, HeUniform, Orthogonal, Identity)


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


_ALIASES = {_snake(c.__name__): c for c in CLASSES}
_ALIASES.update({"uniform": RandomUniform, "normal": RandomNormal, "zero": Zeros, "one": Ones})


def get(identifier):
    """An initializer from a name ("glorot_uniform", "GlorotUniform", "zeros", ...), an
    initializer (returned as is), a class (instantiated) or a callable ``(shape, dtype)``."""
    if identifier is None:
        return None
    if isinstance(identifier, str):
        cls = _ALIASES.get(identifier) or _ALIASES.get(_snake(identifier))
        if cls is None:
            raise ValueError(f"Could not interpret initializer identifier: {identifier!r} (known: {', '.join(_ALIASES)})")
        return cls()
    if isinstance(identifier, type) and issubclass(identifier, Initializer):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret initializer identifier: {identifier!r}")


def make(identifier, shape, dtype="float32") -> np.ndarray:
    """A layer's initial value: ``get(identifier)(shape, dtype)`` as a numpy array."""
    init = get(identifier)
    if init is None:
        raise GraphError("no initializer given")
    value = init(tuple(int(s) for s in shape), dtype=dtype)
    return np.asarray(value) if hasattr(value, "numpy") else np.asarray(value, np.float32)
