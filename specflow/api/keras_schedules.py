"""``sf.keras.optimizers.schedules``: Keras 3's learning-rate schedules, callables of the step
computed with sf ops in float32 (Keras's arithmetic, op for op), so an optimizer given one as
``learning_rate`` evaluates it at its ``iterations`` variable on each step, eagerly or inside
``sf.function``. ``schedule(step)`` also takes a Python number (and returns an sf tensor)."""

from __future__ import annotations

import math

import numpy as np

from specflow.api import tf_names


def _f32(x):
    if hasattr(x, "dtype") and hasattr(x, "shape") and not isinstance(x, np.ndarray):
        return tf_names.cast(x if not hasattr(x, "read_value") else x.read_value(), "float32")
    return tf_names._t(np.asarray(x, np.float32))


class LearningRateSchedule:
    """Base class: subclasses define ``__call__(self, step)``."""

    def __call__(self, step):  # pragma: no cover - abstract
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must override `__call__(self, step)`.")

    def get_config(self) -> dict:
        return {}


class ExponentialDecay(LearningRateSchedule):
    """lr0 * decay_rate ^ (step / decay_steps) (the exponent floored with ``staircase``)."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase: bool = False, name=None):
        if decay_steps <= 0:
            raise ValueError(f"Argument `decay_steps` must be > 0. Received: decay_steps={decay_steps}")
        self.initial_learning_rate, self.decay_steps, self.decay_rate = initial_learning_rate, decay_steps, decay_rate
        self.staircase, self.name = staircase, name

    def __call__(self, step):
        return np.float32(self.initial_learning_rate) * tf_names.pow(np.float32(self.decay_rate), _progress(self, step))


class PiecewiseConstantDecay(LearningRateSchedule):
    """values[0] while step <= boundaries[0], values[i] while boundaries[i-1] < step <=
    boundaries[i], values[-1] after the last boundary."""

    def __init__(self, boundaries, values, name=None):
        if len(boundaries) != len(values) - 1:
            raise ValueError("The length of boundaries should be 1 less than the length of values. Received: "
                             f"boundaries={boundaries} of length {len(boundaries)}, and values={values} of length "
                             f"{len(values)}.")
        self.boundaries, self.values, self.name = list(boundaries), list(values), name

    def __call__(self, step):
        s = _f32(step)
        out = tf_names._t(np.asarray(self.values[-1], np.float32))
        for b, v in zip(reversed(self.boundaries), reversed(self.values[:-1])):
            out = tf_names.where(tf_names.less_equal(s, np.float32(b)), np.float32(v), out)
        return out


class PolynomialDecay(LearningRateSchedule):
    """(lr0 - end) (1 - min(step, decay_steps) / decay_steps)^power + end (``cycle``: the decay
    steps stretched to the next multiple above the step)."""

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0, cycle=False, name=None):
        self.initial_learning_rate, self.decay_steps = initial_learning_rate, decay_steps
        self.end_learning_rate, self.power, self.cycle, self.name = end_learning_rate, power, cycle, name

    def __call__(self, step):
        s = _f32(step)
        decay_steps = tf_names._t(np.float32(self.decay_steps))
        if self.cycle:
            multiplier = tf_names.where(tf_names.equal(s, np.float32(0)), np.float32(1),
                                        tf_names.ceil(s / decay_steps))
            decay_steps = decay_steps * multiplier
        else:
            s = tf_names.minimum(s, decay_steps)
        p = s / decay_steps
        lr0, end = np.float32(self.initial_learning_rate), np.float32(self.end_learning_rate)
        return (lr0 - end) * tf_names.pow(np.float32(1) - p, np.float32(self.power)) + end


def _progress(schedule, step):
    """step / decay_steps, floored with ``staircase`` (the exponential and inverse-time decays)."""
    p = _f32(step) / np.float32(schedule.decay_steps)
    return tf_names.floor(p) if schedule.staircase else p


class InverseTimeDecay(LearningRateSchedule):
    """lr0 / (1 + decay_rate * step / decay_steps) (the ratio floored with ``staircase``)."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase: bool = False, name=None):
        self.initial_learning_rate, self.decay_steps, self.decay_rate = initial_learning_rate, decay_steps, decay_rate
        self.staircase, self.name = staircase, name

    def __call__(self, step):
        denom = np.float32(1) + np.float32(self.decay_rate) * _progress(self, step)
        return np.float32(self.initial_learning_rate) / denom


class CosineDecay(LearningRateSchedule):
    """Keras 3's: without ``warmup_target``, lr0 ((1 - alpha) (1 + cos(pi min(step, decay_steps) /
    decay_steps)) / 2 + alpha); with it, a linear warmup from lr0 to warmup_target over
    ``warmup_steps``, then the cosine decay from warmup_target over ``decay_steps``."""

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name=None, warmup_target=None, warmup_steps=0):
        if decay_steps <= 0:
            raise ValueError(f"Argument `decay_steps` must be > 0. Received: decay_steps={decay_steps}")
        self.initial_learning_rate, self.decay_steps, self.alpha = initial_learning_rate, decay_steps, alpha
        self.name, self.warmup_target, self.warmup_steps = name, warmup_target, warmup_steps

    def _decay(self, step, decay_steps, decay_from_lr):
        fraction = step / decay_steps
        cosine = np.float32(0.5) * (np.float32(1.0) + tf_names.cos(np.float32(math.pi) * fraction))
        decayed = np.float32(1 - self.alpha) * cosine + np.float32(self.alpha)
        return decay_from_lr * decayed

    def __call__(self, step):
        lr0 = np.float32(self.initial_learning_rate)
        decay_steps = tf_names._t(np.float32(self.decay_steps))
        s = _f32(step)
        if self.warmup_target is None:
            return self._decay(tf_names.minimum(s, decay_steps), decay_steps, lr0)
        target, warmup_steps = np.float32(self.warmup_target), np.float32(self.warmup_steps)
        s = tf_names.minimum(s, decay_steps + warmup_steps)
        warm = (target - lr0) * (s / warmup_steps) + lr0 if self.warmup_steps else s * np.float32(0) + lr0
        return tf_names.where(tf_names.less(s, warmup_steps), warm, self._decay(s - warmup_steps, decay_steps, target))


CLASSES = (LearningRateSchedule, ExponentialDecay, PiecewiseConstantDecay, PolynomialDecay, InverseTimeDecay,
           CosineDecay)
