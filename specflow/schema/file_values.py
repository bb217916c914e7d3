"""Values a spec keeps in files beside it (what ``specflow import`` writes): a Const's
``value: {npy: name.npy}`` and a variable's ``initializer: {checkpoint: prefix}``. Paths are
relative to the spec file."""

from __future__ import annotations

import os
from typing import Any

from specflow.errors import SpecError
from specflow.io.npy import NpyError, load_array_file


def spec_dir(filename: str) -> str:
    return os.path.dirname(os.path.abspath(filename)) if filename else os.getcwd()


def resolve(filename: str, path: str) -> str:
    return path if os.path.isabs(path) else os.path.join(spec_dir(filename), path)


def read_file_value(filename: str, attrs: dict[str, Any]) -> None:
    """Replace a Const's ``{npy: file}`` value by the array it names (in place); lowering then
    casts it to the Const's dtype like an inline value."""
    value = attrs.get("value")
    if isinstance(value, dict):
        if set(value) != {"npy"} or not isinstance(value["npy"], str):
            raise SpecError(f"a Const's value is a literal or {{npy: file.npy}}, got {value!r}")
        path = resolve(filename, value["npy"])
        try:
            value = load_array_file(path)  # the header is checked before anything is allocated
        except (OSError, NpyError) as e:
            raise SpecError(f"value file {path}: not a readable .npy file ({e})") from None
        if isinstance(value, dict):
            raise SpecError(f"value file {path}: an .npz archive; a Const's value is one .npy file")
        attrs["value"] = value


def checkpoint_initializer(filename: str, init, name: str):
    """A variable's ``{checkpoint: ...}`` initializer with its prefix made absolute and its key
    defaulted to the variable's name."""
    params = dict(init.params)
    params["prefix"] = resolve(filename, params["prefix"])
    params["key"] = params["key"] or name
    return type(init)(kind=init.kind, params=params)
