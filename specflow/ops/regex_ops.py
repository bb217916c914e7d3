"""tf.strings' regular expressions (RegexReplace, StaticRegexReplace, RegexFullMatch; StaticRegexFullMatch in
io_ops) are RE2's, run by Python's ``re`` on the UTF-8-decoded text (``.`` is one character,
invalid bytes one character each) with ``re.ASCII`` (RE2's ``\\d \\w \\s \\b`` are ASCII). The
translation keeps RE2's meaning where the syntaxes differ: ``$`` (without ``(?m)``) and ``\\z``
match only at the end of the text; ``[[:alpha:]]``-style classes are expanded; RE2's rejections of
lookarounds and backreferences are errors here too. Not supported, with a clear error: Unicode
classes (``\\pL``, ``\\p{Greek}``), ``\\C``, ``\\Q...\\E``. Rewrites are RE2's (``\\0``-``\\9``,
``\\\\``), global replacement skips an empty match right after the previous match as RE2 does.
"""

from __future__ import annotations

import re

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops.inference import InferenceContext, unchanged_shape
from specflow.ops.registry import kernel, not_differentiable, register_op
from specflow.ops.string_more_ops import _CPU, _b, _map

_POSIX = {
    "alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": "\\x00-\\x7f", "blank": "\\t ", "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9", "graph": "!-~", "lower": "a-z", "print": " -~", "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ", "upper": "A-Z", "word": "0-9A-Za-z_", "xdigit": "0-9A-Fa-f",
}


class RegexError(ValueError):
    pass


def translate_re2(pattern: str) -> str:
    """An RE2 pattern as a Python ``re`` pattern with RE2's meaning (see the module doc)."""
    out: list[str] = []
    i, n = 0, len(pattern)
    multiline = bool(re.match(r"\(\?[a-zA-Z]*m", pattern))
    in_class = False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            d = pattern[i + 1]
            if d in "pP":
                raise RegexError(f"Unicode classes (\\{d}) are not supported here")
            if d in "CQE":
                raise RegexError(f"\\{d} is not supported here")
            if d.isdigit() and d != "0" and not in_class:
                raise RegexError(f"invalid escape sequence: \\{d}")
            if d == "z" and not in_class:
                out.append(r"\Z")
            elif d == "Z":
                raise RegexError("invalid escape sequence: \\Z")
            else:
                out.append(c + d)
            i += 2
            continue
        if in_class:
            m = re.match(r"\[:(\^?)([a-z]+):\]", pattern[i:])
            if m:
                if m.group(2) not in _POSIX:
                    raise RegexError(f"invalid character class range: {m.group(0)}")
                if m.group(1):
                    raise RegexError(f"negated POSIX classes are not supported here: {m.group(0)}")
                out.append(_POSIX[m.group(2)])
                i += len(m.group(0))
                continue
            if c == "[":
                out.append("\\[")  # a literal [ inside a class (Python would warn of a nested set)
                i += 1
                continue
            if c == "]" and not (out and out[-1] in ("[", "[^")):
                in_class = False
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            if pattern.startswith("[^", i):
                out.append("[^")
                i += 2
            else:
                out.append("[")
                i += 1
            if i < n and pattern[i] == "]":  # a leading ] is literal
                out.append("\\]")
                i += 1
            continue
        if c == "(" and pattern.startswith(("(?=", "(?!", "(?<=", "(?<!"), i):
            raise RegexError(f"invalid perl operator: {pattern[i:i + 3]}")
        if c == "$" and not multiline:
            out.append(r"(?!(?s:.))")  # end of text only, not before a final newline
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def compile_re2(ctx, pattern) -> re.Pattern:
    text = _b(pattern).decode("utf-8", "surrogateescape")
    try:
        return re.compile(translate_re2(text), re.ASCII)
    except (re.error, RegexError) as e:
        raise ctx.fail(f"Invalid pattern: {text}, error: {e}") from None


def _max_submatch(rewrite: str) -> int:
    top, i = 0, 0
    while i < len(rewrite):
        if rewrite[i] == "\\":
            i += 1
            if i < len(rewrite) and rewrite[i].isdigit():
                top = max(top, int(rewrite[i]))
        i += 1
    return top


def _rewrite(rewrite: str, m: re.Match) -> tuple[str, bool]:
    """RE2::Rewrite: the text and whether the rewrite was valid (output stops where it was not)."""
    out, i = [], 0
    while i < len(rewrite):
        c = rewrite[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        i += 1
        d = rewrite[i] if i < len(rewrite) else ""
        if d.isdigit() and d.isascii():
            out.append(m.group(int(d)) or "")
        elif d == "\\":
            out.append("\\")
        else:
            return "".join(out), False
        i += 1
    return "".join(out), True


def regex_replace(regex: re.Pattern, text: str, rewrite: str, replace_global: bool) -> str:
    """RE2::GlobalReplace / RE2::Replace on decoded text."""
    if _max_submatch(rewrite) > regex.groups:
        return text
    if not replace_global:
        m = regex.search(text)
        if m is None:
            return text
        piece, ok = _rewrite(rewrite, m)
        return text[:m.start()] + piece + text[m.end():] if ok else text
    out, p, lastend, count = [], 0, -1, 0
    while p <= len(text):
        m = regex.search(text, p)
        if m is None:
            break
        if p < m.start():
            out.append(text[p:m.start()])
        if m.start() == lastend and m.start() == m.end():
            if p < len(text):  # an empty match where the last one ended: step over one character
                out.append(text[p])
            p += 1
            continue
        out.append(_rewrite(rewrite, m)[0])
        p = lastend = m.end()
        count += 1
    if count == 0:
        return text
    if p < len(text):
        out.append(text[p:])
    return "".join(out)


def _decode(s: bytes) -> str:
    return s.decode("utf-8", "surrogateescape")


def _encode(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


def _scalar_string(ctx, x, what: str) -> bytes:
    a = np.asarray(x, dtype=object)
    if a.ndim != 0:
        raise ctx.fail(f"{what} must be scalar, but received {Shape(a.shape)}")
    return _b(a.item())


def _replace_all(ctx, input, pattern, rewrite) -> np.ndarray:
    regex = compile_re2(ctx, pattern)
    rw = _decode(_b(rewrite))
    g = ctx.attrs["replace_global"]
    return _map(input, lambda s: _encode(regex_replace(regex, _decode(s), rw, g)))


def _scalar_input_shape(first_scalar: int):
    def fn(ic: InferenceContext) -> list[Shape]:
        for i in range(first_scalar, ic.num_inputs):
            if ic.shape(i).rank not in (None, 0):
                raise ic.fail(f"{'Pattern' if i == 1 else 'Rewrite'} must be scalar, but received {ic.shape(i)}")
        return [ic.shape(0)]

    return fn


register_op(
    "RegexReplace",
    inputs=["input: string", "pattern: string", "rewrite: string"],
    outputs=["output: string"],
    attrs=["replace_global: bool = true"],
    shape=_scalar_input_shape(1),
    doc="Replaces the matches of the RE2 `pattern` (the first, or every one) with `rewrite` "
        "(\\0-\\9 name groups).",
)


@kernel("RegexReplace", devices=_CPU)
def _regex_replace(ctx, input, pattern, rewrite):
    return _replace_all(ctx, input, _scalar_string(ctx, pattern, "Pattern"), _scalar_string(ctx, rewrite, "Rewrite"))


register_op(
    "StaticRegexReplace",
    inputs=["input: string"],
    outputs=["output: string"],
    attrs=["pattern: string", "rewrite: string", "replace_global: bool = true"],
    shape=unchanged_shape,
    doc="RegexReplace with the pattern and rewrite as attrs.",
)


@kernel("StaticRegexReplace", devices=_CPU)
def _static_regex_replace(ctx, input):
    return _replace_all(ctx, input, ctx.attrs["pattern"], ctx.attrs["rewrite"])


register_op(
    "RegexFullMatch",
    inputs=["input: string", "pattern: string"],
    outputs=["output: bool"],
    shape=_scalar_input_shape(1),
    doc="Whether each string matches the RE2 `pattern` in full.",
)


@kernel("RegexFullMatch", devices=_CPU)
def _regex_full_match(ctx, input, pattern):
    return full_match(ctx, input, _scalar_string(ctx, pattern, "Pattern"))


def full_match(ctx, input, pattern) -> np.ndarray:
    """RegexFullMatch's and StaticRegexFullMatch's (io_ops) kernel."""
    regex = compile_re2(ctx, pattern)
    return _map(input, lambda s: regex.fullmatch(_decode(s)) is not None, bool)


not_differentiable("RegexReplace", "StaticRegexReplace", "RegexFullMatch")
