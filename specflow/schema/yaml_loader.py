"""Safe YAML loading that keeps the position of every key and value.

PyYAML composes the text into a node tree (no Python objects are ever built from tags); we turn
that tree into plain dicts, lists and scalars while filling a :class:`SourceMap`. Hostile input
is refused early: files over 10 MiB, nesting deeper than 100 levels, and more than 200,000 nodes
counting alias expansions (a "billion laughs" file stops at the limit instead of exploding).
"""

from __future__ import annotations

import datetime
import re

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from specflow.errors import Location, SpecError
from specflow.schema.source import SourceMap, dotted

MAX_BYTES = 10 * 1024 * 1024
MAX_DEPTH = 100
MAX_NODES = 200_000

_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MERGE_TAG = "tag:yaml.org,2002:merge"


def _loc(filename: str, mark) -> Location:
    return Location(filename, mark.line + 1, mark.column + 1) if mark is not None else Location(filename)


class SafeLoader12(yaml.SafeLoader):
    """SafeLoader that also reads YAML 1.2's floats: PyYAML (YAML 1.1) takes ``1e-3``, ``1e9``
    and ``-1.0e9`` (no dot or no exponent sign) for strings, so ``learning_rate: 1e-3`` or a
    literal ``e: -1.0e9`` became a string, and a string literal input names a node."""


SafeLoader12.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


class _Loader(SafeLoader12):
    """SafeLoader that refuses deep nesting while composing (PyYAML's composer recurses)."""

    def __init__(self, stream, filename: str):
        super().__init__(stream)
        self._filename = filename
        self._depth = 0

    def compose_node(self, parent, index):
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise SpecError(
                    f"nesting deeper than {MAX_DEPTH} levels",
                    location=_loc(self._filename, self.peek_event().start_mark),
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _reader_error(e: yaml.reader.ReaderError, text: str | bytes, filename: str) -> SpecError:
    """A character YAML does not allow (NUL, other control characters, bad UTF-8) at its line and
    column: PyYAML's ReaderError has only a character offset."""
    before = text[:e.position]
    if isinstance(before, bytes):
        before = before.decode("utf-8", "replace")
    line = before.count("\n") + 1
    col = len(before) - (before.rfind("\n") + 1) + 1
    char = f"{e.character:#06x}" if isinstance(e.character, int) else repr(e.character)
    return SpecError(f"character {char} is not allowed in YAML ({e.reason})", location=Location(filename, line, col))


def load_yaml(text: str | bytes, filename: str = "<string>") -> tuple[object, SourceMap]:
    """Parse one YAML document into plain Python data and its :class:`SourceMap`.

    Raises SpecError for oversized or too deeply nested input, syntax errors (with PyYAML's
    line/column), duplicate keys, non-string keys and tags other than the standard scalars.
    """
    size = len(text.encode("utf-8") if isinstance(text, str) else text)
    if size > MAX_BYTES:
        raise SpecError(f"file is too large ({size} bytes; the limit is {MAX_BYTES})", location=Location(filename))
    loader = None
    try:
        loader = _Loader(text, filename)  # its reader refuses unprintable characters (NUL) at once
        root = loader.get_single_node()
    except yaml.reader.ReaderError as e:
        raise _reader_error(e, text, filename) from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        what = e.problem or e.context or "invalid YAML"
        if "'\\t'" in what:
            what += " (YAML indents with spaces, not tabs)"
        raise SpecError(f"YAML syntax error: {what}", location=_loc(filename, mark)) from None
    except yaml.YAMLError as e:
        raise SpecError(f"YAML error: {e}", location=Location(filename)) from None
    except RecursionError:
        raise SpecError(f"nesting deeper than {MAX_DEPTH} levels", location=Location(filename)) from None
    finally:
        if loader is not None:
            loader.dispose()
    source = SourceMap(filename)
    if root is None:
        return None, source
    return _Converter(loader, filename, source).convert(root, ()), source


class _Converter:
    def __init__(self, loader: _Loader, filename: str, source: SourceMap):
        self.loader = loader
        self.filename = filename
        self.source = source
        self.count = 0

    def loc(self, node: Node) -> Location:
        return _loc(self.filename, node.start_mark)

    def convert(self, node: Node, path: tuple, depth: int = 0):
        # Aliases share composed nodes, so counting here counts every expansion.
        self.count += 1
        if self.count > MAX_NODES:
            raise SpecError(
                f"too many YAML nodes (more than {MAX_NODES}, counting alias expansions)",
                location=self.loc(node),
            )
        if depth > MAX_DEPTH:
            raise SpecError(f"nesting deeper than {MAX_DEPTH} levels", location=self.loc(node))
        self.source.set_value(path, self.loc(node))
        if isinstance(node, ScalarNode):
            return self.scalar(node, path)
        if isinstance(node, SequenceNode):
            self.check_tag(node, _SEQ_TAG)
            return [self.convert(item, path + (i,), depth + 1) for i, item in enumerate(node.value)]
        if isinstance(node, MappingNode):
            self.check_tag(node, _MAP_TAG)
            return self.mapping(node, path, depth)
        raise SpecError(f"unsupported YAML node {node.id}", location=self.loc(node))

    def check_tag(self, node: Node, expected: str) -> None:
        if node.tag != expected:
            raise SpecError(f"unsupported YAML tag '{node.tag}'", location=self.loc(node))

    def scalar(self, node: ScalarNode, path: tuple):
        try:
            # SafeConstructor only knows the standard tags (str, int, float, bool, null,
            # timestamp, binary); anything else is a ConstructorError, never an object.
            value = self.loader.construct_object(node)
        except yaml.constructor.ConstructorError as e:
            raise SpecError(
                f"unsupported YAML value: {e.problem}", location=_loc(self.filename, e.problem_mark)
            ) from None
        if isinstance(value, (datetime.date, datetime.datetime)):
            return node.value  # a date-looking string stays a string
        return value

    def mapping(self, node: MappingNode, path: tuple, depth: int) -> dict:
        out: dict = {}
        first: dict[str, Location] = {}
        merged: list[MappingNode] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                merged.extend(self.merge_sources(value_node))
                continue
            key = self.key(key_node, path)
            key_loc = self.loc(key_node)
            if key in first:
                raise SpecError(f"duplicate key '{key}' (first at {first[key]})", location=key_loc, path=dotted(path + (key,)))
            first[key] = key_loc
            self.source.set_key(path + (key,), key_loc)
            out[key] = self.convert(value_node, path + (key,), depth + 1)
        # `<<: *base` merge keys: explicit keys win, earlier merged mappings win over later ones.
        for src in merged:
            for key_node, value_node in src.value:
                key = self.key(key_node, path)
                if key not in out:
                    self.source.set_key(path + (key,), self.loc(key_node))
                    out[key] = self.convert(value_node, path + (key,), depth + 1)
        return out

    def merge_sources(self, node: Node) -> list[MappingNode]:
        items = node.value if isinstance(node, SequenceNode) else [node]
        for item in items:
            if not isinstance(item, MappingNode):
                raise SpecError("'<<' merges a mapping or a list of mappings", location=self.loc(item))
        return items

    def key(self, node: Node, path: tuple) -> str:
        if isinstance(node, ScalarNode) and node.tag == "tag:yaml.org,2002:str":
            return node.value
        if isinstance(node, ScalarNode):
            shown = "null" if node.tag.endswith(":null") else node.value
            kind = node.tag.rsplit(":", 1)[-1]
            raise SpecError(
                f"keys must be strings, got {kind} {shown} (quote it: '{node.value}')",
                location=self.loc(node),
                path=dotted(path) or None,
            )
        raise SpecError("keys must be strings, got a " + ("list" if isinstance(node, SequenceNode) else "mapping"), location=self.loc(node), path=dotted(path) or None)
