"""``sf.keras.initializers``: Keras 3's initializers, called as ``init(shape, dtype="float32")``
and returning a numpy array (what ``Layer._own_weight`` takes). The formulas are Keras 3's
(``VarianceScaling``'s fans: a dense kernel's (in, out), a conv kernel's receptive field times
its in/out channels; its truncated normal's stddev divided by 0.87962566103423978, the stddev of
a standard normal truncated to [-2, 2]); the draws come from numpy, not TensorFlow: from
``sf.keras.utils.set_random_seed``'s generator, or, with ``seed=``, from a generator made from
that seed on each call (the same values on every call, as a seeded Keras initializer)."""

from __future__ import annotations

import math
import re

import numpy as np

from specflow.errors import GraphError
from specflow.schema.initializers import compute_fans


def _fans(shape) -> tuple[float, float]:
    """Keras's ``compute_fans`` (the spec's initializers use the same rule)."""
    return compute_fans([int(s) for s in shape])


class Initializer:
    def __call__(self, shape, dtype="float32"):  # pragma: no cover - abstract
        raise NotImplementedError

    def get_config(self) -> dict:
        return {}

    def _out(self, values, dtype):
        return np.asarray(values).astype(np.dtype(getattr(dtype, "numpy", dtype) or "float32"))


class _Random(Initializer):
    def __init__(self, seed=None):
        self.seed = seed

    def _rng(self):
        if self.seed is None:
            from specflow.api.keras import _RNG

            return _RNG[0]
        return np.random.default_rng(self.seed)

    def _truncated(self, rng, mean, stddev, shape):
        """A normal truncated to mean +- 2 stddev (values outside redrawn)."""
        out = rng.normal(0.0, 1.0, shape)
        bad = np.abs(out) > 2
        while bad.any():
            out[bad] = rng.normal(0.0, 1.0, int(bad.sum()))
            bad = np.abs(out) > 2
        return mean + stddev * out


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
        return self._out(self._rng().normal(self.mean, self.stddev, tuple(shape)), dtype)


class RandomUniform(_Random):
    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        super().__init__(seed)
        self.minval, self.maxval = minval, maxval

    def __call__(self, shape, dtype="float32"):
        return self._out(self._rng().uniform(self.minval, self.maxval, tuple(shape)), dtype)


class TruncatedNormal(_Random):
    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__(seed)
        self.mean, self.stddev = mean, stddev

    def __call__(self, shape, dtype="float32"):
        return self._out(self._truncated(self._rng(), self.mean, self.stddev, tuple(shape)), dtype)


class VarianceScaling(_Random):
    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None):
        super().__init__(seed)
        if scale <= 0.0:
            raise ValueError(f"Argument `scale` must be positive float. Received: scale={scale}")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"Invalid `mode` argument: {mode!r} (fan_in, fan_out, fan_avg)")
        distribution = distribution.lower()
        if distribution == "normal":
            distribution = "truncated_normal"
        if distribution not in ("uniform", "truncated_normal", "untruncated_normal"):
            raise ValueError(f"Invalid `distribution` argument: {distribution!r}")
        self.scale, self.mode, self.distribution = float(scale), mode, distribution

    def __call__(self, shape, dtype="float32"):
        shape = tuple(int(s) for s in shape)
        fan_in, fan_out = _fans(shape)
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, fan)
        rng = self._rng()
        if self.distribution == "truncated_normal":
            values = self._truncated(rng, 0.0, math.sqrt(scale) / 0.87962566103423978, shape)
        elif self.distribution == "untruncated_normal":
            values = rng.normal(0.0, math.sqrt(scale), shape)
        else:
            limit = math.sqrt(3.0 * scale)
            values = rng.uniform(-limit, limit, shape)
        return self._out(values, dtype)


class GlorotUniform(VarianceScaling):
    def __init__(self, seed=None):
        super().__init__(1.0, "fan_avg", "uniform", seed)


class GlorotNormal(VarianceScaling):
    def __init__(self, seed=None):
        super().__init__(1.0, "fan_avg", "truncated_normal", seed)


class LecunNormal(VarianceScaling):
    def __init__(self, seed=None):
        super().__init__(1.0, "fan_in", "truncated_normal", seed)


class LecunUniform(VarianceScaling):
    def __init__(self, seed=None):
        super().__init__(1.0, "fan_in", "uniform", seed)


class HeNormal(VarianceScaling):
    def __init__(self, seed=None):
        super().__init__(2.0, "fan_in", "truncated_normal", seed)


class HeUniform(VarianceScaling):
    def __init__(self, seed=None):
        super().__init__(2.0, "fan_in", "uniform", seed)


class Orthogonal(_Random):
    """Keras's: QR of a normal draw of shape (prod(shape[:-1]), shape[-1]) (transposed when it
    has fewer rows than columns), q's columns signed by r's diagonal, times ``gain``."""

    def __init__(self, gain=1.0, seed=None):
        super().__init__(seed)
        self.gain = gain

    def __call__(self, shape, dtype="float32"):
        shape = tuple(int(s) for s in shape)
        if len(shape) < 2:
            raise ValueError(f"The tensor to initialize must be at least two-dimensional. Received: shape={shape}")
        rows, cols = math.prod(shape[:-1]), shape[-1]
        flat = (max(rows, cols), min(rows, cols))
        a = self._rng().normal(0.0, 1.0, flat)
        q, r = np.linalg.qr(a)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        return self._out(self.gain * q.reshape(shape), dtype)


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
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value, np.float32)
