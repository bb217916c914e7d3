"""The names a file may give a node, function or checkpoint tensor: checked once, on load.

A name read from a GraphDef, a function library or a checkpoint index ends up in error messages,
rendezvous keys, traces and tables; it must never be able to carry a newline, a quote or any
other character with a meaning there. TensorFlow's own rule for node names is the reference
(``[A-Za-z0-9.][A-Za-z0-9_.\\-/>]*``); function names, function arguments and checkpoint keys
follow TensorFlow's practice of also starting with ``_`` (``__inference_f_12``,
``_CHECKPOINTABLE_OBJECT_GRAPH``) and may hold ``<`` (a ``tf.function`` of a lambda is
``__inference_<lambda>_41``). The spec's stricter rule lives in ``schema/models.py``.
"""

from __future__ import annotations

import re

from specflow.errors import GraphError

# TensorFlow's node-name rule (core/graph: IsValidNodeName), matched whole with fullmatch.
NODE_NAME_RE = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_.\-/>]*")
# Function names and arguments, checkpoint keys: the same characters, a leading "_" and "<" allowed.
LOOSE_NAME_RE = re.compile(r"[A-Za-z0-9._][A-Za-z0-9_.\-/<>]*")
# A tensor reference as a graph writes it: "node", "node:3", "^node", or a function body's
# "node:out_arg:3".
_REF_RE = re.compile(r"\^?[A-Za-z0-9._][A-Za-z0-9_.\-/>]*(:[A-Za-z0-9_]+)?(:\d+)?")

MAX_NAME_LENGTH = 4096  # far beyond any real name; keeps a hostile one out of every message


def _shown(name: str) -> str:
    """A hostile name as it may appear in a one-line message: escaped and shortened."""
    text = repr(name)
    return text if len(text) <= 80 else text[:77] + "..."


def _check(name: object, pattern: re.Pattern, what: str, where: str) -> str:
    if not isinstance(name, str) or len(name) > MAX_NAME_LENGTH or not pattern.fullmatch(name):
        shown = _shown(name) if isinstance(name, str) else type(name).__name__
        raise GraphError(f"{where}invalid {what} {shown}: names must match {pattern.pattern}")
    return name


def check_node_name(name: object, where: str = "") -> str:
    """``name`` if it follows TensorFlow's node-name rule, else GraphError (``where``: a prefix)."""
    return _check(name, NODE_NAME_RE, "node name", where)


def check_function_name(name: object, where: str = "", what: str = "function name") -> str:
    """A function library name, or a function's argument/output name (``what`` says which)."""
    return _check(name, LOOSE_NAME_RE, what, where)


def check_checkpoint_key(name: object, where: str = "") -> str:
    """A tensor name read from a checkpoint index."""
    return _check(name, LOOSE_NAME_RE, "checkpoint tensor name", where)


def check_reference(ref: object, where: str = "") -> str:
    """An input or tensor reference (``n``, ``n:1``, ``^n``, ``n:out:0``)."""
    return _check(ref, _REF_RE, "tensor reference", where)


def check_graph_proto_names(proto) -> None:
    """Every node name, op name and input reference of a TensorFlow ``GraphDef`` message (its
    function library: :func:`check_library_names`)."""
    for node in proto.node:
        check_node_name(node.name)
        check_function_name(node.op, f"node '{node.name}': ", "op name")
        for ref in node.input:
            check_reference(ref, f"node '{node.name}': ")


def check_library_names(library) -> None:
    """Every name of a ``FunctionDefLibrary`` message: functions, their arguments, body nodes,
    ops, inputs and return mappings."""
    for fdef in library.function:
        sig = fdef.signature
        fname = check_function_name(sig.name)
        where = f"function '{fname}': "
        for arg in (*sig.input_arg, *sig.output_arg):
            check_function_name(arg.name, where, "argument name")
        for control in sig.control_output:
            check_function_name(control, where, "control output name")
        for node in fdef.node_def:
            check_function_name(node.name, where, "node name")
            check_function_name(node.op, f"{where}node '{node.name}': ", "op name")
            for ref in node.input:
                check_reference(ref, f"{where}node '{node.name}': ")
        for key, ref in fdef.ret.items():
            check_function_name(key, where, "output name")
            check_reference(ref, where)
        for key, ref in fdef.control_ret.items():
            check_function_name(key, where, "control output name")
            check_function_name(ref, where, "node name")
    for grad in library.gradient:
        check_function_name(grad.function_name)
        check_function_name(grad.gradient_func)


def unique_name(base: str, taken: set[str]) -> str:
    """``base``, or ``base_1``, ``base_2``, ... : the first not in ``taken``, which it joins."""
    name, k = base, 1
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    taken.add(name)
    return name
