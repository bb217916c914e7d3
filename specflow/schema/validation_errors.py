"""Pydantic ValidationErrors -> one short SpecError per problem, at its place in the spec.

Each error prints as ``file:line:col: dotted.path: message``; messages say what was expected and
what was found ("expected an integer, got 'abc'"), never a pydantic URL.
"""

from __future__ import annotations

import re
import typing

from pydantic import ValidationError
from pydantic_core import PydanticCustomError
from pydantic_core.core_schema import ErrorType

from specflow.errors import MultipleErrors, SpecError, did_you_mean
from specflow.schema.source import SourceMap, dotted

_BUILTIN_TYPES = frozenset(typing.get_args(ErrorType))

_EXPECTED = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "finite_number": "a finite number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "a string",
    "list_type": "a list",
    "tuple_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "none_required": "null",
}
_BOUNDS = {
    "greater_than": ">",
    "greater_than_equal": ">=",
    "less_than": "<",
    "less_than_equal": "<=",
}
_KEY_ERRORS = frozenset({"unknown_field", "extra_forbidden"})


def show(value) -> str:
    """A value as the user wrote it in YAML (containers named, not dumped)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return repr(value) if "'" not in value else '"' + value + '"'
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    return str(value)


def line_errors(e: ValidationError) -> list[dict]:
    """The errors of ``e`` as InitErrorDetails, to merge with others into a new ValidationError."""
    out = []
    for err in e.errors(include_url=False):
        if err["type"] in _BUILTIN_TYPES:
            d = {"type": err["type"], "loc": err["loc"], "input": err.get("input")}
            if "ctx" in err:
                d["ctx"] = err["ctx"]
        else:
            d = {"type": PydanticCustomError(err["type"], err["msg"]), "loc": err["loc"], "input": err.get("input")}
        out.append(d)
    return out


def custom_error(kind: str, message: str, loc: tuple, value=None) -> dict:
    """One InitErrorDetails carrying our own message (no context given, so no templating)."""
    return {"type": PydanticCustomError(kind, message), "loc": loc, "input": value}


def raise_errors(title: str, errors: list[dict]) -> None:
    if errors:
        raise ValidationError.from_exception_data(title, errors)


def resolve_path(tree, loc: tuple) -> tuple[tuple, bool]:
    """Map a pydantic ``loc`` onto a path in the raw tree; pydantic adds union-member tags
    (``'int'``, ``'list[int]'``) that name no key: they are dropped. Returns (path, is_key) where
    is_key marks a dict-key error (``'[key]'``)."""
    path: list = []
    cur, found = tree, True
    for part in loc:
        if part == "[key]":
            return tuple(path), True
        if _looks_like_tag(part) or (found and isinstance(part, str) and not isinstance(cur, dict)):
            continue
        if found and isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif found and isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur):
            cur = cur[part]
        else:
            found = False  # a missing field: the rest of loc is below it
        path.append(part)
    return tuple(path), False


def _looks_like_tag(part) -> bool:
    return isinstance(part, str) and ("[" in part or part in ("int", "str", "float", "bool", "none"))


def _message(err: dict) -> str:
    kind, value, ctx = err["type"], err.get("input"), err.get("ctx") or {}
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {show(value)}"
    if kind == "missing":
        return f"missing required field '{err['loc'][-1]}'"
    if kind == "extra_forbidden":
        return "unknown field"
    if kind in ("literal_error", "enum"):
        expected = str(ctx.get("expected", ""))
        hint = did_you_mean(value, re.findall(r"'([^']*)'", expected)) if isinstance(value, str) else ""
        if isinstance(value, str) and value.lower() == "none":
            hint += " (YAML writes None as null)"
        return f"expected one of {expected}, got {show(value)}{hint}"
    if kind in _BOUNDS:
        bound = next(iter(ctx.values()), "")
        return f"must be {_BOUNDS[kind]} {bound}, got {show(value)}"
    if kind in ("too_short", "too_long"):
        return err["msg"].replace("List", "the list").replace("Value", "the value").replace("Dictionary", "the mapping")
    msg = err["msg"]
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            msg = msg[len(prefix):]
    return msg


def spec_errors(e: ValidationError, tree, source: SourceMap, prefix: tuple = ()) -> list[SpecError]:
    """One SpecError per problem in ``e`` (raised validating ``tree``, found at ``prefix``)."""
    by_path: dict[tuple, list[tuple[dict, bool]]] = {}
    for err in e.errors(include_url=False):
        path, is_key = resolve_path(tree, err["loc"])
        if err["type"] == "missing":
            path = path[:-1]
        by_path.setdefault((path, is_key, err["type"] == "missing"), []).append((err, is_key))
    out = []
    for (path, is_key, _), errs in by_path.items():
        full = tuple(prefix) + path
        kinds = {err["type"] for err, _ in errs}
        if len(errs) > 1 and kinds <= set(_EXPECTED):
            # A union field (``int | list[int]``): one line naming every accepted form.
            wanted = " or ".join(dict.fromkeys(_EXPECTED[k] for k in (err["type"] for err, _ in errs)))
            messages = [f"expected {wanted}, got {show(errs[0][0].get('input'))}"]
        else:
            messages = list(dict.fromkeys(_message(err) for err, _ in errs))
        key_like = is_key or kinds & _KEY_ERRORS
        loc = source.key_location(full) if key_like else source.location(full)
        out.extend(SpecError(m, location=loc, path=dotted(full) or None) for m in messages)
    return out


def _sort_key(e: SpecError):
    loc = e.location
    return (loc.line, loc.col) if loc is not None else (0, 0)


def raise_spec_errors(errors: list[SpecError]) -> None:
    """Raise one SpecError, or MultipleErrors ordered by position; nothing if ``errors`` is empty."""
    if not errors:
        return
    errors = sorted(errors, key=_sort_key)
    if len(errors) == 1:
        raise errors[0]
    raise MultipleErrors(errors)


def convert(e: ValidationError, tree, source: SourceMap, prefix: tuple = ()) -> SpecError:
    """The SpecError (or MultipleErrors) to raise for ``e``."""
    errors = sorted(spec_errors(e, tree, source, prefix), key=_sort_key)
    return errors[0] if len(errors) == 1 else MultipleErrors(errors)
