"""Run one op's kernel outside a session: constant folding, tests and quick checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from specflow.errors import OpError
from specflow.graph.dtypes import dtype_of
from specflow.graph.graph_def import NodeDef
from specflow.ops.registry import (
    KernelContext,
    bind_attrs,
    find_kernel,
    get_op,
    kernel_summary,
    num_outputs,
)


def normalize_outputs(result: Any, n: int, node: NodeDef) -> list:
    """A kernel returns one array or a tuple/list; always give a list of ``n``."""
    if n == 1 and not isinstance(result, (tuple, list)):
        outs = [result]
    elif n == 0 and result is None:
        outs = []
    else:
        outs = list(result)
    if len(outs) != n:
        raise OpError(f"kernel for {node.op} returned {len(outs)} outputs, expected {n}", node=node.name)
    return outs


def run_kernel(
    node: NodeDef,
    inputs: Sequence,
    attrs: dict | None = None,
    device_type: str = "CPU",
    ctx: KernelContext | None = None,
) -> list:
    """Run ``node``'s kernel on ``inputs``; ``attrs`` must already be bound (see bind_attrs)."""
    attrs = node.attrs if attrs is None else attrs
    k = find_kernel(node.op, device_type, attrs)
    if k is None:
        raise OpError(
            f"no {device_type} kernel for {node.op} with {_type_attrs(attrs)}; "
            f"registered: {kernel_summary(node.op)}",
            node=node.name,
        )
    if ctx is None:
        ctx = KernelContext(node=node, attrs=attrs)
    out = k.fn(ctx, *inputs)
    return normalize_outputs(out, num_outputs(get_op(node.op), attrs), node)


def _type_attrs(attrs: dict) -> str:
    parts = [f"{k}={v}" for k, v in attrs.items() if not isinstance(v, (np.ndarray, list)) and hasattr(v, "tf_enum")]
    return ", ".join(parts) or "no type attrs"


def evaluate_op(op: str, inputs: Sequence = (), name: str = "eval", **attrs) -> list[np.ndarray]:
    """Bind attrs from the inputs' dtypes and run the CPU kernel: ``evaluate_op("Add", [a, b])``."""
    opdef = get_op(op)
    arrays = [np.asarray(x) if not isinstance(x, np.ndarray) else x for x in inputs]
    bound = bind_attrs(opdef, [dtype_of(a) for a in arrays], attrs, node=name)
    node = NodeDef(name=name, op=op, inputs=[f"in{i}" for i in range(len(arrays))], attrs=bound)
    return run_kernel(node, arrays, bound)
