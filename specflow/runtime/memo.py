"""Arithmetic on variable values, computed again only when a variable changed.

At inference the optimize stage folds batch norm into the convolution: its scale and shift
(``gamma * rsqrt(var + eps)``, ``beta - mean * scale``) and the scaled filter are computed
every step from the variables (they may change between steps, so nothing is folded into a
constant). A ReadVariableOp hands out the variable's stored array itself, which is never
updated in place while anyone else holds it (``state_ops.writable_value`` copies instead), and
a Const's value is the same read-only array every step. So a pure arithmetic node whose inputs
are all such values (or the outputs of such nodes) gets the very same input objects every step
until a variable changes: its kernel can return last step's output again.

``memoize`` wraps those nodes' kernels in a partition that changes no state (no variable
writes, queues, random streams: every stateful op in it is a variable read or handle, or a
step argument or result): the
wrapper keeps the last inputs (which keeps them alive, so identity means equality, and makes a
writer copy the variable rather than change it under the memo) and the last output, handed out
read-only (the project's sign of a value that never changes; a fetch of it is copied). CPU only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from specflow.errors import SpecflowError
from specflow.graph.graph_def import parse_input
from specflow.ops.registry import get_op
from specflow.runtime.executor_types import NodeItem

# Pure, deterministic kernels of their inputs alone (no attrs read at run time that change).
MEMO_OPS = frozenset({
    "Add", "AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "Neg", "Square", "Sqrt",
    "Rsqrt", "Reciprocal", "Exp", "Log", "Cast", "Reshape",
})  # fmt: skip
# Stateful ops a partition may hold and still change no state (the step's arguments and
# results are its frame's).
_READS = frozenset({"VarHandleOp", "ReadVariableOp", "_Arg", "_Retval"})
# Sources whose outputs are the same objects every step until a variable changes.
_STABLE_SOURCES = frozenset({"ReadVariableOp", "Const"})


def memoizable(nodes: Sequence[NodeItem]) -> list[NodeItem]:
    """The nodes whose kernels ``memoize`` wraps (none if the partition changes state)."""
    for item in nodes:
        if item.op not in _READS and _stateful(item.op):
            return []
    stable: set[str] = set()
    picked = []
    for item in nodes:  # topological order: inputs first
        node = item.node
        if item.op in _STABLE_SOURCES and not node.control_inputs:
            stable.add(node.name)
            continue
        if item.op not in MEMO_OPS or node.control_inputs or item.n_out != 1 or not node.data_inputs:
            continue
        if all(parse_input(i).node in stable for i in node.data_inputs):
            stable.add(node.name)
            picked.append(item)
    return picked


def _stateful(op: str) -> bool:
    """Whether ``op`` may change state (an op with no registration, a compiled loop: yes)."""
    try:
        return get_op(op).is_stateful
    except SpecflowError:
        return True


def memoize(nodes: Sequence[NodeItem], device_type: str) -> int:
    """Wrap the kernels of ``memoizable(nodes)`` (CPU partitions only); returns how many."""
    if device_type != "CPU":
        return 0
    picked = memoizable(nodes)
    for item in picked:
        item.fn = memoized(item.fn, item.n_in)
    return len(picked)


def memoized(fn: Callable, n_in: int = -1) -> Callable:
    """``fn(ctx, *inputs)``, run again only when an input is not the very object of last time
    (``n_in``: how many inputs every call passes, when known: a faster check for one or two)."""
    cell: list = [None]  # (inputs, output), replaced as one (steps may overlap on threads)

    def again(ctx, inputs):
        out = fn(ctx, *inputs)
        if type(out) is np.ndarray:
            out.flags.writeable = False
        cell[0] = (inputs, out)
        return out

    def run1(ctx, a):
        last = cell[0]
        if last is not None and last[0][0] is a:
            return last[1]
        return again(ctx, (a,))

    def run2(ctx, a, b):
        last = cell[0]
        if last is not None and last[0][0] is a and last[0][1] is b:
            return last[1]
        return again(ctx, (a, b))

    def run(ctx, *inputs):
        last = cell[0]
        if last is not None and len(inputs) == len(last[0]) and all(x is y for x, y in zip(inputs, last[0])):
            return last[1]
        return again(ctx, inputs)

    wrapper = {1: run1, 2: run2}.get(n_in, run)
    wrapper.is_async = getattr(fn, "is_async", False)
    wrapper.__wrapped__ = fn
    return wrapper
