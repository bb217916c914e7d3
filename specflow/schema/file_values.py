"""Values a spec keeps in files beside it (what ``specflow import`` writes): a Const's
``value: {npy: name.npy}`` and a variable's ``initializer: {checkpoint: prefix}``. Paths are
relative to the spec file. A Const's inline value is cast to its ``dtype`` here as well, so
``{op: Const, value: [[1, 2]], dtype: float32}`` holds float32 values, as TF's attr does."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from specflow.errors import SpecError
from specflow.graph.dtypes import as_dtype


def spec_dir(filename: str) -> str:
    return os.path.dirname(os.path.abspath(filename)) if filename else os.getcwd()


def resolve(filename: str, path: str) -> str:
    return path if os.path.isabs(path) else os.path.join(spec_dir(filename), path)


def const_value(filename: str, attrs: dict[str, Any]) -> None:
    """Read a Const's ``{npy: file}`` value and cast its value to its ``dtype`` (in place)."""
    value = attrs.get("value")
    if isinstance(value, dict):
        if set(value) != {"npy"} or not isinstance(value["npy"], str):
            raise SpecError(f"a Const's value is a literal or {{npy: file.npy}}, got {value!r}")
        path = resolve(filename, value["npy"])
        try:
            value = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError) as e:
            raise SpecError(f"value file {path}: not a readable .npy file ({e})") from None
    if "dtype" in attrs:
        dt, arr = as_dtype(attrs["dtype"]), np.asarray(value)
        if dt.np_type is not object and arr.dtype != object and arr.dtype != dt.numpy:
            if dt.is_integer and arr.size and (
                    (arr.dtype.kind == "f" and not np.all(np.mod(arr, 1) == 0))
                    or (arr.dtype.kind in "iuf" and (arr.min() < np.iinfo(dt.numpy).min
                                                     or arr.max() > np.iinfo(dt.numpy).max))):
                raise SpecError(f"Const value does not fit {dt.name}")
            value = arr.astype(dt.numpy)
    attrs["value"] = value


def checkpoint_initializer(filename: str, init, name: str):
    """A variable's ``{checkpoint: ...}`` initializer with its prefix made absolute and its key
    defaulted to the variable's name."""
    params = dict(init.params)
    params["prefix"] = resolve(filename, params["prefix"])
    params["key"] = params["key"] or name
    return type(init)(kind=init.kind, params=params)
