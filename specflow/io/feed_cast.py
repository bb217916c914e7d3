"""The one rule by which the CLI's ``run --feed`` and ``predict --input`` convert an array read
from a file to the dtype its tensor wants: cast only when no value changes (int64 ones feed
float32, float64 halves feed float32), else one line saying what would be lost. bool feeds only
bool, strings only strings. (Python callers of Session.run keep its own, wider rule: Python floats
are float64, and ``sess.run(x, {p: 0.1})`` into float32 is what they mean.)
"""

from __future__ import annotations

import numpy as np

from specflow.errors import SpecflowError


def cast_exactly(value: np.ndarray, want: np.dtype, what: str, error: type[SpecflowError] = SpecflowError) -> np.ndarray:
    """``value`` as ``want``; ``error`` (naming ``what``, e.g. "input 'images'") when the cast
    would change a value or the kinds cannot meet."""
    want = np.dtype(want)
    if value.dtype == want:
        return value
    src, dst = value.dtype.kind, want.kind
    if src in "OSU" and dst in "OSU":
        return value
    if src in "OSUV" or dst in "OSUV" or (src == "b") != (dst == "b"):
        raise error(f"{what} must be {want.name}, got {value.dtype}")
    with np.errstate(all="ignore"):
        cast = value.astype(want)
        back = cast.astype(value.dtype)
        same = back == value
        if src in "fc":
            same |= np.isnan(value) & np.isnan(back)
    if not same.all():
        i = int(np.flatnonzero(~same)[0])
        n = int(same.size - np.count_nonzero(same))
        raise error(f"{what} must be {want.name}, got {value.dtype}, and casting would change {n} of {same.size} "
                    f"value(s) (e.g. {value.flat[i].item()!r} -> {cast.flat[i].item()!r}); save the array as {want.name}")
    return cast
