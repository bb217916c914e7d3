"""The formatted messages a failing spec load gives, for the tests that pin them."""

from __future__ import annotations

import pytest

from specflow.errors import MultipleErrors, SpecflowError


def error_lines(fn, *args, **kwargs) -> list[str]:
    """``fn(*args, **kwargs)`` must raise a SpecflowError: each of its errors, formatted."""
    with pytest.raises(SpecflowError) as e:
        fn(*args, **kwargs)
    err = e.value
    return [x.format() for x in (err.errors if isinstance(err, MultipleErrors) else [err])]
