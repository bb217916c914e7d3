"""Eager execution: run one registered op's kernel now, as the executor would.

Attrs are bound with ``ops/registry.bind_attrs`` (the spec's errors), the kernel is found as
``ops/eval.run_kernel`` finds it, and both are cached per (op, device, input dtypes, attrs), so
a repeated call costs a dict lookup and the kernel. A kernel's context is kept with its cache
entry: its ``state`` (a random generator) persists across calls, as a graph node's does
across steps; stateful ops see their device's eager resource manager.
"""

from __future__ import annotations

import numpy as np

from specflow.api.context import _BY_SCOPE, STATE, EagerDevice, eager_device
from specflow.api.tensor import EagerTensor
from specflow.errors import OpError, SpecflowError
from specflow.graph.graph_def import NodeDef
from specflow.ops.eval import normalize_outputs
from specflow.ops.registry import (
    KernelContext,
    OpDef,
    bind_attrs,
    find_kernel,
    kernel_summary,
    output_dtypes,
)
from specflow.runtime.resources import ResourceHandle

_CACHE: dict[tuple, tuple] = {}
_CACHE_LIMIT = 4096  # distinct (op, device, dtypes, attrs) kept; past it, entries are rebuilt


def _attrs_key(attrs: dict) -> tuple | None:
    """A hashable form of ``attrs`` (None: an unhashable value such as an array; not cached)."""
    if not attrs:
        return ()
    items = []
    for k, v in attrs.items():
        if isinstance(v, list):
            v = tuple(v)
        try:
            hash(v)
        except TypeError:
            return None
        items.append((k, v))
    items.sort(key=lambda kv: kv[0])
    return tuple(items)


def _prepare(opdef: OpDef, dev: EagerDevice, dtypes: list, attrs: dict, name: str) -> tuple:
    bound = bind_attrs(opdef, dtypes, attrs, node=name)
    k = find_kernel(opdef.name, dev.device_type, bound)
    if k is None:
        types = ", ".join(f"{a}={bound[a]}" for a, d in opdef.attrs.items() if d.type == "type") or "no type attrs"
        raise OpError(f"no {dev.device_type} kernel for {opdef.name} with {types}; registered: "
                      f"{kernel_summary(opdef.name)}", node=name)
    node = NodeDef(name=name, op=opdef.name, inputs=[f"in{i}" for i in range(len(dtypes))], device=dev.name,
                   attrs=bound)
    ctx = KernelContext(node=node, attrs=bound, xp=dev.xp, device=dev.name, device_type=dev.device_type,
                        resources=dev.resources)
    outs = output_dtypes(opdef, bound)
    return k.fn, ctx, outs, bound


def execute(opdef: OpDef, values: list, attrs: dict, name: str | None = None) -> list[EagerTensor]:
    """Run ``opdef`` on ``values`` (EagerTensors) now, on the
    current ``sf.device``; one EagerTensor per output."""
    dev = _BY_SCOPE.get(STATE.device) or eager_device()
    dname = dev.name
    arrays = []
    dtypes = []
    moved = dev.device_type != "CPU"
    for v in values:  # one loop, no comprehensions: this runs for every eager op
        arrays.append(v.value)
        dtypes.append(v.dtype)
        if v.device != dname:
            moved = True
    if moved:
        arrays = [a if type(a) is ResourceHandle else dev.to_device(a) for a in arrays]
    if name is not None:
        key = None
    elif not attrs:
        key = (opdef.name, dname, *dtypes)
    else:
        akey = _attrs_key(attrs)
        key = None if akey is None else (opdef.name, dname, akey, *dtypes)
    entry = _CACHE.get(key) if key is not None else None
    if entry is None:
        entry = _prepare(opdef, dev, dtypes, attrs, name or opdef.name)
        if key is not None:
            if len(_CACHE) >= _CACHE_LIMIT:
                _CACHE.clear()
            _CACHE[key] = entry
    fn, ctx, out_dtypes, bound = entry
    try:
        result = fn(ctx, *arrays)
    except SpecflowError:
        raise
    except Exception as e:  # a numpy error: the spec's static check names the problem, if it sees it
        _static_check(opdef, arrays, dtypes, bound, ctx.node.name)
        raise OpError(f"{opdef.name} failed: {e}", node=ctx.node.name) from None
    if len(out_dtypes) == 1 and type(result) is not tuple and type(result) is not list:
        tensors = [EagerTensor(result, out_dtypes[0], dname)]
    else:
        outs = normalize_outputs(result, len(out_dtypes), ctx.node)
        tensors = [EagerTensor(v, dt, dname) for v, dt in zip(outs, out_dtypes)]
    if STATE.tapes:
        for tape in STATE.tapes:
            tape._record(opdef.name, bound, values, tensors)
    return tensors


def _static_check(opdef: OpDef, arrays: list, dtypes: list, attrs: dict, name: str) -> None:
    """Run the op's shape function on the inputs (as Consts, so shape arguments are known): the
    error a spec with these inputs would give."""
    from specflow.graph.builder import GraphBuilder

    b = GraphBuilder()
    names = []
    for i, (a, dt) in enumerate(zip(arrays, dtypes)):
        if dt.name == "resource":
            return
        host = a if isinstance(a, np.ndarray) else a.get()
        names.append(b.add_op("Const", [], {"value": host, "dtype": dt}, name=f"in{i}", exact_name=True).name)
    b.add_op(opdef.name, names, dict(attrs), name=name, exact_name=True)
