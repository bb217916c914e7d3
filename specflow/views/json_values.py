"""Values for ``--format json``: strict JSON (RFC 8259) has no NaN or infinity, so they are
written as protobuf's JSON mapping writes them, the strings "NaN", "Infinity", "-Infinity"."""

from __future__ import annotations

import json
import math
from typing import Any


def finite_or_named(value: Any) -> Any:
    """``value`` (nested lists, dicts, numbers) with each non-finite float as its name."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, list):
        return [finite_or_named(v) for v in value]
    if isinstance(value, dict):
        return {k: finite_or_named(v) for k, v in value.items()}
    return value


def dumps(value: Any, indent: int | None = 2) -> str:
    """Strict JSON of ``value`` (no bare NaN / Infinity)."""
    return json.dumps(finite_or_named(value), indent=indent, allow_nan=False)
