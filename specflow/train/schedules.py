"""Learning-rate schedules as graph ops on the global step (Keras' formulas).

A learning rate in the spec is a number, or a mapping naming a schedule::

    {schedule: constant, value: 0.1}
    {schedule: exponential, initial: 0.1, decay_steps: 100, decay_rate: 0.96, staircase: false}
    {schedule: cosine, initial: 0.1, decay_steps: 1000, alpha: 0.0}
    {schedule: piecewise, boundaries: [100, 200], values: [0.1, 0.01, 0.001]}
    {schedule: polynomial, initial: 0.1, decay_steps: 1000, end: 0.0001, power: 1.0, cycle: false}
    {schedule: inverse_time, initial: 0.1, decay_steps: 100, decay_rate: 0.5, staircase: false}

Any schedule may add ``warmup_steps: N``: the rate rises linearly from 0 to the schedule's
first value at step N, and the schedule's own steps count from N. The cosine schedule also takes
Keras's ``warmup_target: T`` (``CosineDecay(initial, ..., warmup_target=T, warmup_steps=N)``):
the rate rises linearly from ``initial`` to T over N steps, then decays from T. :func:`learning_rate` emits
the ops (the step cast to float32, so the rate is float32) and returns the rate tensor, named
``learning_rate``.
"""

from __future__ import annotations

import math
from typing import Any

from specflow.errors import SpecError, did_you_mean
from specflow.graph.dtypes import float32

_REQUIRED = object()

# Parameters of each schedule with their defaults (_REQUIRED: no default).
_PARAMS: dict[str, dict[str, Any]] = {
    "constant": {"value": _REQUIRED},
    "exponential": {"initial": _REQUIRED, "decay_steps": _REQUIRED, "decay_rate": _REQUIRED, "staircase": False},
    "cosine": {"initial": _REQUIRED, "decay_steps": _REQUIRED, "alpha": 0.0, "warmup_target": None},
    "piecewise": {"boundaries": _REQUIRED, "values": _REQUIRED},
    "polynomial": {"initial": _REQUIRED, "decay_steps": _REQUIRED, "end": 0.0001, "power": 1.0, "cycle": False},
    "inverse_time": {"initial": _REQUIRED, "decay_steps": _REQUIRED, "decay_rate": _REQUIRED, "staircase": False},
}
SCHEDULE_NAMES = tuple(_PARAMS)


# --- validation ---------------------------------------------------------------------------------


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _rate(v: Any, path: str) -> float:
    if not is_number(v) or v < 0:
        raise SpecError(f"a learning rate must be a finite number >= 0, got {v!r}", path=path)
    return float(v)


def _steps(v: Any, path: str, minimum: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise SpecError(f"must be an integer >= {minimum}, got {v!r}", path=path)
    return v


def parse_schedule(spec: dict, path: str = "learning_rate") -> dict[str, Any]:
    """Check a schedule mapping and return its parameters with defaults filled in (and
    ``schedule`` and ``warmup_steps``). Raises SpecError naming the offending key."""
    kind = spec.get("schedule")
    if kind not in _PARAMS:
        raise SpecError(
            f"unknown schedule {kind!r}" + did_you_mean(str(kind), _PARAMS) + f"; one of: {', '.join(_PARAMS)}",
            path=f"{path}.schedule",
        )
    allowed = {"schedule", "warmup_steps", *_PARAMS[kind]}
    for key in spec:
        if key not in allowed:
            raise SpecError(
                f"schedule '{kind}' has no parameter '{key}'" + did_you_mean(str(key), allowed),
                path=f"{path}.{key}",
            )
    p = {"schedule": kind, "warmup_steps": spec.get("warmup_steps", 0)}
    for key, default in _PARAMS[kind].items():
        if key not in spec and default is _REQUIRED:
            raise SpecError(f"schedule '{kind}' needs '{key}'", path=path)
        p[key] = spec.get(key, default)
    _steps(p["warmup_steps"], f"{path}.warmup_steps", 0)
    for key in ("value", "initial"):
        if key in p:
            p[key] = _rate(p[key], f"{path}.{key}")
    if p.get("warmup_target") is not None:
        p["warmup_target"] = _rate(p["warmup_target"], f"{path}.warmup_target")
    if "decay_steps" in p:
        _steps(p["decay_steps"], f"{path}.decay_steps", 1)
    if kind == "polynomial":
        p["end"] = _rate(p["end"], f"{path}.end")
        if not is_number(p["power"]) or p["power"] <= 0:
            raise SpecError(f"must be a number > 0, got {p['power']!r}", path=f"{path}.power")
        if not isinstance(p["cycle"], bool):
            raise SpecError(f"must be true or false, got {p['cycle']!r}", path=f"{path}.cycle")
    if kind in ("exponential", "inverse_time"):
        if not is_number(p["decay_rate"]) or p["decay_rate"] <= 0:
            raise SpecError(f"must be a number > 0, got {p['decay_rate']!r}", path=f"{path}.decay_rate")
        if not isinstance(p["staircase"], bool):
            raise SpecError(f"must be true or false, got {p['staircase']!r}", path=f"{path}.staircase")
    if kind == "cosine" and not (is_number(p["alpha"]) and 0 <= p["alpha"] <= 1):
        raise SpecError(f"must be a number in [0, 1], got {p['alpha']!r}", path=f"{path}.alpha")
    if kind == "piecewise":
        _check_piecewise(p, path)
    return p


def _check_piecewise(p: dict, path: str) -> None:
    bounds, values = p["boundaries"], p["values"]
    if not isinstance(bounds, list):
        raise SpecError(f"must be a list of step numbers, got {bounds!r}", path=f"{path}.boundaries")
    if not isinstance(values, list):
        raise SpecError(f"must be a list of learning rates, got {values!r}", path=f"{path}.values")
    for i, b in enumerate(bounds):
        _steps(b, f"{path}.boundaries[{i}]", 0)
        if i and b <= bounds[i - 1]:
            raise SpecError(
                f"boundaries must be strictly increasing, but {b} follows {bounds[i - 1]}",
                path=f"{path}.boundaries[{i}]",
            )
    if len(values) != len(bounds) + 1:
        raise SpecError(
            f"needs one value more than boundaries ({len(bounds)} boundaries, so {len(bounds) + 1} "
            f"values), got {len(values)}",
            path=f"{path}.values",
        )
    p["values"] = [_rate(v, f"{path}.values[{i}]") for i, v in enumerate(values)]


# --- emitting ops -------------------------------------------------------------------------------


class _Emitter:
    """Small float32 op helpers under the builder's current scope."""

    def __init__(self, builder):
        self.b = builder

    def const(self, value: float, name: str) -> str:
        return self.b.const(float(value), float32, name=name)

    def op(self, op: str, *inputs: str, name: str | None = None) -> str:
        return self.b.add_op(op, list(inputs), name=self.b.unique_name(name or op), exact_name=True).name

    def scalar_op(self, op: str, x: str, value: float, name: str) -> str:
        return self.op(op, x, self.const(value, name), name=op)


def _exponential(e: _Emitter, p: dict, step: str) -> str:
    power = e.scalar_op("RealDiv", step, p["decay_steps"], "decay_steps")
    if p["staircase"]:
        power = e.op("Floor", power)
    factor = e.op("Pow", e.const(p["decay_rate"], "decay_rate"), power)
    return e.op("Mul", e.const(p["initial"], "initial"), factor)


def _cosine(e: _Emitter, p: dict, step: str) -> str:
    done = e.scalar_op("Minimum", step, p["decay_steps"], "decay_steps")
    fraction = e.scalar_op("RealDiv", done, p["decay_steps"], "decay_steps")
    cosine = e.op("Cos", e.scalar_op("Mul", fraction, math.pi, "pi"))
    half = e.scalar_op("Mul", e.scalar_op("AddV2", cosine, 1.0, "one"), 0.5, "half")
    alpha = p["alpha"]
    decayed = e.scalar_op("AddV2", e.scalar_op("Mul", half, 1.0 - alpha, "one_minus_alpha"), alpha, "alpha")
    return e.op("Mul", e.const(p["initial"], "initial"), decayed)


def _cosine_to_target(e: _Emitter, p: dict, step: str) -> str:
    """Keras's CosineDecay with warmup_target: initial + (target - initial) * step / N before
    step N, then the cosine decay from the target on step - N."""
    n, target = p["warmup_steps"], p["warmup_target"]
    decay = _cosine(e, {**p, "initial": target}, e.scalar_op("Maximum", e.scalar_op("Sub", step, n, "warmup_steps"),
                                                              0.0, "zero"))
    if not n:
        return decay
    fraction = e.scalar_op("RealDiv", step, n, "warmup_steps")
    warm = e.scalar_op("AddV2", e.scalar_op("Mul", fraction, target - p["initial"], "rise"), p["initial"], "initial")
    return e.op("SelectV2", e.scalar_op("Less", step, n, "warmup_steps"), warm, decay)


def _piecewise(e: _Emitter, p: dict, step: str) -> str:
    # values[i + 1] once step > boundaries[i]; the boundaries increase, so the last true one wins.
    out = e.const(p["values"][0], "value")
    for bound, value in zip(p["boundaries"], p["values"][1:]):
        past = e.scalar_op("Greater", step, bound, "boundary")
        out = e.op("SelectV2", past, e.const(value, "value"), out)
    return out


def _polynomial(e: _Emitter, p: dict, step: str) -> str:
    # Keras's PolynomialDecay: (initial - end) * (1 - step / decay_steps) ** power + end, the step
    # held at decay_steps (cycle: decay_steps stretched to the next multiple past the step)
    steps = e.const(p["decay_steps"], "decay_steps")
    if p["cycle"]:
        zero = e.scalar_op("Equal", step, 0.0, "zero")
        multiplier = e.op("SelectV2", zero, e.const(1.0, "one"), e.op("Ceil", e.op("RealDiv", step, steps)))
        steps = e.op("Mul", steps, multiplier)
    else:
        step = e.op("Minimum", step, steps)
    fraction = e.op("RealDiv", step, steps)
    left = e.op("Pow", e.op("Sub", e.const(1.0, "one"), fraction), e.const(p["power"], "power"))
    span = e.op("Sub", e.const(p["initial"], "initial"), e.const(p["end"], "end"))  # in float32, as Keras
    return e.scalar_op("AddV2", e.op("Mul", span, left), p["end"], "end")


def _inverse_time(e: _Emitter, p: dict, step: str) -> str:
    # Keras's InverseTimeDecay: initial / (1 + decay_rate * step / decay_steps), floored when staircase
    fraction = e.scalar_op("RealDiv", step, p["decay_steps"], "decay_steps")
    if p["staircase"]:
        fraction = e.op("Floor", fraction)
    denominator = e.scalar_op("AddV2", e.scalar_op("Mul", fraction, p["decay_rate"], "decay_rate"), 1.0, "one")
    return e.op("RealDiv", e.const(p["initial"], "initial"), denominator)


_EMIT = {
    "constant": lambda e, p, step: e.const(p["value"], "value"),
    "exponential": _exponential,
    "cosine": _cosine,
    "piecewise": _piecewise,
    "polynomial": _polynomial,
    "inverse_time": _inverse_time,
}
_SCOPES = {
    "constant": "Constant",
    "exponential": "ExponentialDecay",
    "cosine": "CosineDecay",
    "piecewise": "PiecewiseConstant",
    "polynomial": "PolynomialDecay",
    "inverse_time": "InverseTimeDecay",
}


def learning_rate(builder, spec: Any, global_step, path: str = "learning_rate") -> str:
    """The learning-rate tensor (float32 scalar) for ``spec``: a number, or a schedule mapping
    evaluated on ``global_step`` (a VariableInfo, or an integer scalar tensor name)."""
    name = builder.unique_name("learning_rate")
    if not isinstance(spec, dict):
        return builder.const(_rate(spec, path), float32, name="learning_rate")
    p = parse_schedule(spec, path)
    e = _Emitter(builder)
    local = name[len(builder.scoped("")) :]  # the name without the current scope
    with builder.name_scope(local), builder.name_scope(_SCOPES[p["schedule"]]):
        step_tensor = getattr(global_step, "read", global_step)
        step = builder.add_op("Cast", [step_tensor], {"DstT": float32}, name=builder.unique_name("step"), exact_name=True).name
        warmup = p["warmup_steps"]
        if p.get("warmup_target") is not None:
            rate, warmup = _cosine_to_target(e, p, step), 0
        else:
            if warmup:
                # rate(step) = schedule(max(step - N, 0)) * min(step / N, 1)
                rise = e.scalar_op("Minimum", e.scalar_op("RealDiv", step, warmup, "warmup_steps"), 1.0, "one")
                step = e.scalar_op("Maximum", e.scalar_op("Sub", step, warmup, "warmup_steps"), 0.0, "zero")
            rate = _EMIT[p["schedule"]](e, p, step)
        if warmup:
            rate = e.op("Mul", rate, rise)
    return builder.add_op("Identity", [rate], name=name, exact_name=True).name
