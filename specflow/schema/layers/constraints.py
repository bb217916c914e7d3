"""Keras's weight constraints (``kernel_constraint: max_norm``): a function a variable's value is
passed through after every optimizer update (see ``Optimizer.apply_gradients``), with Keras 3's
formulas. Spelled as a name (``non_neg``) or ``{max_norm: {max_value: 2, axis: 0}}``."""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np
from pydantic import BeforeValidator

from specflow.errors import did_you_mean
from specflow.graph.dtypes import int32

EPSILON = 1e-7  # keras.backend.epsilon()

# Each constraint's parameters and defaults (Keras's).
CONSTRAINTS: dict[str, dict[str, Any]] = {
    "max_norm": {"max_value": 2.0, "axis": 0},
    "min_max_norm": {"min_value": 0.0, "max_value": 1.0, "rate": 1.0, "axis": 0},
    "unit_norm": {"axis": 0},
    "non_neg": {},
}
_KERAS_NAMES = {"maxnorm": "max_norm", "minmaxnorm": "min_max_norm", "unitnorm": "unit_norm", "nonneg": "non_neg"}


def parse_constraint(v: Any) -> dict[str, Any] | None:
    """``"max_norm"`` or ``{max_norm: {max_value: 3}}`` -> ``{"kind": "max_norm", "max_value": 3.0,
    "axis": 0}``; ValueError (a one-line message) for anything else."""
    if v is None:
        return None
    if isinstance(v, dict) and set(v) == {"kind"} | set(CONSTRAINTS.get(v.get("kind"), {"?": 0})):
        return v  # already parsed (a model re-validated)
    if isinstance(v, str):
        kind, params = v, {}
    elif isinstance(v, dict) and len(v) == 1:
        kind, params = next(iter(v.items()))
        params = {} if params is None else params
    else:
        raise ValueError(f"a constraint is a name ({', '.join(CONSTRAINTS)}) or {{name: {{param: value}}}}, got {v!r}")
    kind = _KERAS_NAMES.get(str(kind).replace("_", "").lower(), kind)
    if kind not in CONSTRAINTS:
        raise ValueError(f"unknown constraint {kind!r}" + did_you_mean(str(kind), CONSTRAINTS)
                         + f"; known: {', '.join(CONSTRAINTS)}")
    if not isinstance(params, dict):
        raise ValueError(f"{kind}'s parameters are a mapping ({', '.join(CONSTRAINTS[kind]) or 'none'}), got {params!r}")
    out: dict[str, Any] = {"kind": kind, **CONSTRAINTS[kind]}
    for key, value in params.items():
        if key not in CONSTRAINTS[kind]:
            raise ValueError(f"{kind} has no parameter {key!r}" + did_you_mean(str(key), CONSTRAINTS[kind])
                             + f"; allowed: {', '.join(CONSTRAINTS[kind]) or 'none'}")
        if key == "axis":
            axes = value if isinstance(value, list) else [value]
            if not axes or not all(isinstance(a, int) and not isinstance(a, bool) for a in axes):
                raise ValueError(f"{kind}.axis is an integer or a list of them, got {value!r}")
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"{kind}.{key} is a number >= 0, got {value!r}")
        out[key] = value if key == "axis" else float(value)
    if kind == "min_max_norm" and out["min_value"] > out["max_value"]:
        raise ValueError(f"min_max_norm: min_value {out['min_value']} is above max_value {out['max_value']}")
    return out


# The pydantic field type: ``kernel_constraint: Constraint = None``.
Constraint = Annotated[dict | str | None, BeforeValidator(parse_constraint)]


def emit_constraint(builder, constraint: dict[str, Any], value: str, rank: int, dtype) -> str:
    """The constrained ``value`` (a tensor of ``rank``), as Keras 3 computes it."""

    def op(kind, *inputs, **attrs):
        return builder.add_op(kind, list(inputs), attrs, name=builder.unique_name(kind), exact_name=True).name

    def const(x, dt=dtype):
        return builder.const(np.asarray(x, dt.numpy), dt)

    kind = constraint["kind"]
    if kind == "non_neg":  # w * (w >= 0)
        return op("Mul", value, op("Cast", op("GreaterEqual", value, const(0.0)), DstT=dtype))
    axes = constraint["axis"] if isinstance(constraint["axis"], list) else [constraint["axis"]]
    axes = sorted({a % rank for a in axes}) if rank else []
    norms = op("Sqrt", op("Sum", op("Square", value), const(axes, int32), keep_dims=True))
    scale = op("AddV2", const(EPSILON), norms)
    if kind == "unit_norm":
        return op("RealDiv", value, scale)
    if kind == "max_norm":
        desired = op("ClipByValue", norms, const(0.0), const(constraint["max_value"]))
    else:  # min_max_norm
        clipped = op("ClipByValue", norms, const(constraint["min_value"]), const(constraint["max_value"]))
        rate = constraint["rate"]
        desired = op("AddV2", op("Mul", const(rate), clipped), op("Mul", const(1.0 - rate), norms))
    return op("Mul", value, op("RealDiv", desired, scale))
