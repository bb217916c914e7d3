"""Peak bytes per device: measured on a traced step, estimated statically for a placed graph.

Both follow one model of a step's memory, TensorFlow's allocator's view of it:

- a node's outputs are allocated while its inputs are still live (the kernel reads them), so the
  candidate peak at each node is the live set plus everything the node produces;
- a value is released when the last node consuming it on its device has run (a value nobody
  consumes is released as soon as it exists); a value handed to ``_Send`` leaves its device
  (the receiving device counts it from its ``_Recv``);
- a fetched value (the input of a ``_Retval``) stays until the step returns it.

Bytes are the values' ``nbytes``: values sharing one buffer (a variable's read, a reshape) count
once per value, so on such graphs the number is an upper bound of the buffers really held.

``DeviceMemory`` is the measured counter: the executor feeds it only on traced steps
(``StepStats.memory_for``), so untraced steps pay nothing. :func:`estimate_peak_bytes` runs the
same model over a partition in the executor's schedule order (its topological order, what the
straight line runs) with the byte sizes shape inference knows.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from specflow.graph.graph_def import GraphDef, parse_input
from specflow.graph.topo import LOOP_BACK_EDGES, topological_order


class DeviceMemory:
    """The live bytes of one device during one step, its peak, and a timeline of both
    (``samples``: (perf_counter_ns, live bytes) after each node, for the trace's counter track).
    Not locked: each device's partition updates its own counter, under its step's lock."""

    __slots__ = ("device", "live", "peak", "samples")

    def __init__(self, device: str):
        self.device = device
        self.live = 0
        self.peak = 0
        self.samples: list[tuple[int, int]] = []

    def node_ran(self, produced: int, released: int) -> None:
        """A node allocated ``produced`` bytes (its inputs still live), then ``released`` left."""
        live = self.live + produced
        if live > self.peak:
            self.peak = live
        now = time.perf_counter_ns()
        if produced:
            self.samples.append((now, live))
        if released or not produced:
            self.samples.append((now, live - released))
        self.live = live - released


def nbytes(value) -> int:
    """A value's bytes (0 for a dead value or a resource handle)."""
    return getattr(value, "nbytes", 0)


def _key(inp: str) -> tuple[str, int]:
    ref = parse_input(inp)
    return ref.node, ref.index


def held_to_end(nodes) -> frozenset[tuple[str, int]]:
    """The (node, output) pairs a partition keeps until the step ends: what its ``_Retval``
    nodes fetch."""
    return frozenset(_key(n.data_inputs[0]) for n in nodes if n.op == "_Retval" and n.data_inputs)


@dataclass
class PeakEstimate:
    """The estimated peak of one partition: ``bytes`` of the values whose size is known,
    ``unknown`` how many values of unknown size (an unknown batch dimension) it leaves out."""

    bytes: int
    unknown: int


def estimate_peak_bytes(graph_def: GraphDef, sizes: Callable[[str], list[int | None]]) -> PeakEstimate:
    """The peak of the module docstring's model over ``graph_def`` run in topological order.

    ``sizes(node)`` gives the byte size of each of the node's outputs (None: unknown)."""
    order = topological_order(graph_def, allow_back_edges=LOOP_BACK_EDGES)
    pos = {n.name: i for i, n in enumerate(order)}
    last: dict[tuple[str, int], int] = {}  # (node, output) -> position of its last consumer
    for i, n in enumerate(order):
        for inp in n.data_inputs:
            if n.op == "Merge" and pos.get(parse_input(inp).node, -1) > i:  # a loop's back edge
                continue
            last[_key(inp)] = i
    held = held_to_end(order)
    frees: dict[int, list[tuple[str, int]]] = {}
    for t, i in last.items():
        if t not in held:
            frees.setdefault(i, []).append(t)
    size_of: dict[tuple[str, int], int] = {}
    live = peak = unknown = 0
    for i, n in enumerate(order):
        produced = dropped = 0
        for k, b in enumerate(sizes(n.name)):
            if b is None:
                unknown += 1
                b = 0
            produced += b
            t = (n.name, k)
            if t in last:
                size_of[t] = b
            else:  # nobody consumes it: released as soon as it exists
                dropped += b
        live += produced
        peak = max(peak, live)
        live -= dropped + sum(size_of.pop(t, 0) for t in frees.get(i, ()))
    return PeakEstimate(peak, unknown)


class MemoryAccounting:
    """The executor's side of the count (a mixin of ``Executor``: its nodes, ``_mem_frees``),
    called only on traced steps: by the dataflow loop under the step's lock (``_account``) and
    by the straight line's generic loop (``_account_line``)."""

    def _memory_plan(self) -> tuple[list[tuple[int, ...]], frozenset[int]]:
        """The flat values a ``_Retval`` fetches (they count until the step returns them) and,
        per node, the values the straight line releases after it (it is their last consumer
        in topological order), those left out."""
        plan = self._mem_frees
        if plan is None:
            held = frozenset(src for n in self._nodes if n.op == "_Retval" for src in n.in_srcs)
            plan = self._mem_frees = ([tuple(f for f in n.frees if f not in held) for n in self._nodes], held)
        return plan

    def _account(self, step, item, outs) -> None:
        """The dataflow loop's bytes for one finished node (under ``step.lock``): its outputs
        allocated, then the inputs whose last consumer it was released, and the outputs nobody
        consumes dropped."""
        produced = consumed = released = 0
        if outs:
            sizes = step.sizes
            produced = sum(getattr(o, "nbytes", 0) for o in outs)
            for k, flat, _ in item.outputs:
                consumed += (b := getattr(outs[k], "nbytes", 0))
                sizes[flat] = b
        if item.in_srcs:
            refs, sizes, held = step.refs, step.sizes, self._memory_plan()[1]
            for src in item.in_srcs:  # (refs at 0: no consumer left, whatever the order they ran in)
                if refs[src] == 0 and sizes[src] and src not in held:
                    released += sizes[src]
                    sizes[src] = 0
        step.mem.node_ran(produced, released + produced - consumed)

    @staticmethod
    def _account_line(mem, item, out: Any, vals: list, releases: tuple[int, ...]) -> None:
        """A traced straight-line node's bytes: ``out`` (the kernel's return, not yet checked)
        allocated, then its inputs' last uses and the outputs nobody consumes released."""
        outs = out if type(out) is tuple or type(out) is list else () if out is None else (out,)
        produced = sum(getattr(o, "nbytes", 0) for o in outs)
        consumed = sum(getattr(outs[k], "nbytes", 0) for k, _, _ in item.outputs if k < len(outs))
        released = sum(getattr(vals[f], "nbytes", 0) for f in releases)
        mem.node_ran(produced, released + produced - consumed)
