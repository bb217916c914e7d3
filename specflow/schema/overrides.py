"""``--set nodes.hidden.units=64``: edit the loaded YAML tree before validation.

Values are parsed as the spec's YAML is (``64`` is an int, ``true`` a bool, ``[1, 2]`` a list)
and typed by the schema afterwards like any other value; their location is the override itself
(``--set nodes.hidden.units=64``), so a bad value is reported against the command line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from specflow.errors import Location, SpecError, did_you_mean
from specflow.schema.source import SourceMap, dotted
from specflow.schema.yaml_loader import SafeLoader12

# The spec's sections keyed by names the user chose: a path through a name missing there.
_NAMED = {"nodes": "node", "variables": "variable", "inputs": "input", "functions": "function"}


def parse_override(text: str) -> tuple[tuple, Any]:
    """``"a.b.0=1"`` -> (("a", "b", 0), 1)."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise SpecError(f"bad override '{text}': expected PATH=VALUE (e.g. nodes.hidden.units=64)", location=Location(f"--set {text}"))
    try:
        value = yaml.load(raw, Loader=SafeLoader12) if raw.strip() else ""
    except yaml.YAMLError as e:
        raise SpecError(f"bad override value '{raw}': {getattr(e, 'problem', e)}", location=Location(f"--set {text}")) from None
    return split_path(key.strip(), text), value


def split_path(key: str, text: str) -> tuple:
    parts = key.split(".")
    if any(p == "" for p in parts):
        raise SpecError(f"bad override path '{key}'", location=Location(f"--set {text}"))
    return tuple(int(p) if p.lstrip("-").isdigit() else p for p in parts)


def apply_overrides(tree: Any, source: SourceMap, overrides: Iterable[str] | Mapping[str, Any] | None) -> Any:
    """Apply overrides to ``tree`` in place (returned too); missing mapping keys are created.

    ``overrides`` is a list of ``"path=value"`` strings or a mapping ``{path: value}`` (values
    already parsed). A path through a scalar, or a bad list index, is a SpecError.
    """
    if not overrides:
        return tree
    if isinstance(overrides, Mapping):
        items = [(split_path(k, f"{k}={v}"), v, f"{k}={v}") for k, v in overrides.items()]
    else:
        items = [(*parse_override(t), t) for t in overrides]
    if tree is None:
        tree = {}
    for path, value, text in items:
        path = _set(tree, path, value, Location(f"--set {text}"))
        source.replace_subtree(path, Location(f"--set {text}"))
    return tree


def _set(tree: Any, path: tuple, value: Any, loc: Location) -> tuple:
    """Set the value; returns the path with negative list indices made positive."""
    cur, done, i = tree, [], -1
    while i + 1 < len(path):
        i += 1
        part = path[i]
        here = dotted(path[:i]) or "the spec"
        if isinstance(cur, dict):
            key = str(part)
            dotted_name = _dotted_key(cur, path, i)
            if dotted_name is not None:  # a name holding dots (`h.1`): the longest that is a key
                key, i = dotted_name
            last = i == len(path) - 1
            done.append(key)
            if last:
                cur[key] = value
            else:
                if key not in cur and i == 1 and path[0] in _NAMED:  # a typo far more often than a new entry
                    what = _NAMED[path[0]]
                    raise SpecError(f"no {what} '{key}' to set '{dotted(path[2:])}' on" + did_you_mean(key, list(cur))
                                    + f"; to add one, set it whole: --set {path[0]}.{key}='{{...}}'",
                                    location=loc, path=dotted(path))  # fmt: skip
                cur = cur.setdefault(key, {})
        elif isinstance(cur, list):
            last = i == len(path) - 1
            if not isinstance(part, int):
                raise SpecError(f"'{here}' is a list: '{part}' is not an index", location=loc, path=dotted(path))
            if not -len(cur) <= part < len(cur):
                raise SpecError(f"index {part} is out of range: '{here}' has {len(cur)} item(s)", location=loc, path=dotted(path))
            part %= len(cur)
            done.append(part)
            if last:
                cur[part] = value
            else:
                cur = cur[part]
        else:
            raise SpecError(f"cannot set '{dotted(path)}': '{here}' is a {_kind(cur)}, not a mapping or list", location=loc, path=dotted(path))
    return tuple(done)


def _dotted_key(cur: dict, path: tuple, i: int) -> tuple[str, int] | None:
    """(key, index of its last part) when parts ``i``.. joined by '.' name a key of ``cur``."""
    for j in range(len(path), i + 1, -1):
        key = ".".join(str(p) for p in path[i:j])
        if key in cur:
            return key, j - 1
    return None


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    return {bool: "bool", int: "integer", float: "number", str: "string"}.get(type(v), type(v).__name__)
