"""StringFormat and PrintV2: what ``tf.print`` builds (and ``sf.print`` inside sf.function), so a
TensorFlow graph or SavedModel that prints loads and runs here.

``format_tensor`` writes a tensor as TensorFlow's print does: at most ``summarize`` items from
each end of every dimension (``...`` between), rows on new lines indented under their bracket,
floats as the shortest of 6 (float64: 15) significant digits that reads back to the same value,
else 9 (17); bools as 1/0; strings quoted with C escapes. The same function formats eager
``sf.print``'s tensors.

PrintV2 writes to stderr or stdout (TensorFlow's ``log(...)`` streams go to stderr). A graph
asking to print into a file (``file://...``) prints to stderr instead, with a warning: running a
model never writes a file it names.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops.inference import InferenceContext, no_outputs
from specflow.ops.registry import kernel, not_differentiable, register_op

_CPU = ("CPU",)


def _float_text(x: float, double: bool) -> str:
    short, long = (15, 17) if double else (6, 9)
    text = f"{x:.{short}g}"
    same = float(text) == x if double else np.float32(text) == np.float32(x)
    return text if same or np.isnan(x) else f"{x:.{long}g}"


def _escape(b: bytes) -> str:
    out = []
    for c in b:
        ch = chr(c)
        if ch in "\"'\\":
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif 32 <= c < 127:
            out.append(ch)
        else:
            out.append(f"\\{c:03o}")
    return "".join(out)


def _item_text(x, kind: str, double: bool) -> str:
    if kind == "f":
        return _float_text(float(x), double)
    if kind == "b":
        return "1" if x else "0"
    if kind in "OSU":
        return '"' + _escape(x if isinstance(x, bytes) else str(x).encode("utf-8")) + '"'
    if kind == "c":
        return "?"  # as TensorFlow prints complex elements
    return str(int(x))


def format_tensor(value, summarize: int = 3) -> str:
    """``value`` (an array) as TensorFlow's print writes it; ``summarize`` < 0: every item."""
    a = np.asarray(value)
    kind = "f" if a.dtype.kind == "f" or a.dtype.name == "bfloat16" else a.dtype.kind
    double = a.dtype == np.float64
    if kind == "f" and not double:
        a = a.astype(np.float32)
    if a.ndim == 0:
        return _item_text(a.item(), kind, double)
    if a.size == 0:
        return "[]" if a.shape[0] == 0 else "[" + "\n" * (a.ndim - 1) + " ...]"

    def picks(n: int) -> list[int | None]:
        if 0 <= summarize < n and n > 2 * summarize:
            return [*range(summarize), None, *range(n - summarize, n)]
        return list(range(n))

    def dim(x, depth: int) -> str:
        if x.ndim == 1:
            return "[" + " ".join("..." if i is None else _item_text(x[i], kind, double) for i in picks(len(x))) + "]"
        sep = "\n" * (x.ndim - 1) + " " * (depth + 1)
        return "[" + sep.join("..." if i is None else dim(x[i], depth + 1) for i in picks(len(x))) + "]"

    return dim(a, 0)


# --- StringFormat ---------------------------------------------------------------------------------


def _scalar(ic: InferenceContext) -> list[Shape]:
    return [Shape([])]


register_op(
    "StringFormat",
    inputs=["inputs: T"],
    outputs=["output: string"],
    attrs=["T: list(type) >= 0", "template: string = '%s'", "placeholder: string = '%s'", "summarize: int = 3"],
    shape=_scalar,
    doc="`template` with each `placeholder` replaced by the next input, formatted as tf.print does.",
)


def _text(s) -> str:
    return s.decode("utf-8") if isinstance(s, bytes) else str(s)


@kernel("StringFormat", devices=_CPU)
def _string_format(ctx, *inputs):
    template, placeholder = _text(ctx.attrs["template"]), _text(ctx.attrs["placeholder"])
    pieces = template.split(placeholder) if placeholder else [template]
    if len(pieces) - 1 != len(inputs):
        raise ctx.fail(f"the template has {len(pieces) - 1} placeholder(s) '{placeholder}' but there are "
                       f"{len(inputs)} input(s)")
    summarize = int(ctx.attrs["summarize"])
    out = [pieces[0]]
    for x, rest in zip(inputs, pieces[1:]):
        out += [format_tensor(ctx.host(x), summarize), rest]
    return np.array("".join(out).encode("utf-8"), dtype=object)


not_differentiable("StringFormat")


# --- PrintV2 --------------------------------------------------------------------------------------


register_op(
    "PrintV2",
    inputs=["input: string"],
    attrs=["output_stream: string = 'stderr'", "end: string = '\\n'"],
    stateful=True,
    shape=no_outputs,
    doc="Prints the string scalar `input` (then `end`) to `output_stream`: stderr, stdout or log(...).",
)


@kernel("PrintV2", devices=_CPU)
def _print_v2(ctx, text):
    where = _text(ctx.attrs["output_stream"])
    value = np.asarray(ctx.host(text), dtype=object)
    if value.ndim:
        raise ctx.fail(f"input must be a string scalar, got shape {list(value.shape)}")
    stream = sys.stdout if where == "stdout" else sys.stderr
    if where not in ("stdout", "stderr") and not where.startswith("log("):
        warnings.warn(f"node '{ctx.node.name}': PrintV2 to '{where}' printed to stderr instead (a model never "
                      "writes files)", RuntimeWarning, stacklevel=2)
    stream.write(_text(value.item()) + _text(ctx.attrs["end"]))
    stream.flush()
    return ()


not_differentiable("PrintV2")
