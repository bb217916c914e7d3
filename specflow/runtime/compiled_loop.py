"""A compiled loop's kernel: the ``_CompiledLoop`` node ``loop_plan.py`` puts in place of a while
loop runs the loop's own nodes in one generated function (``loop_codegen.py``), one pass per
iteration, instead of scheduling each node of each iteration on frames.

What it keeps of a loop on frames: each node runs its own kernel with its own context and
kernel state (a random op keeps its stream, a stack push and its pop meet as before), outputs
get the executor's checks, an abort (another device failed, the step's timeout) is seen before
every kernel and at the top of every iteration, and an error names the loop's node that failed
(``LoopNodeError``, unwrapped by ``Executor._fail``). A traced step runs a variant of the
function that records every node run of every iteration, as frames would (but no spans for the
Enter/Merge/Switch/NextIteration/Exit bookkeeping, nor for the body's dead last pass), inside the
loop node's own span.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from specflow.errors import RuntimeFailure
from specflow.graph.graph_def import GraphDef, NodeDef, parse_input
from specflow.ops.registry import KernelContext
from specflow.runtime import loop_codegen
from specflow.runtime.executor_types import NodeItem
from specflow.runtime.line_codegen import line_dtypes
from specflow.runtime.loop_plan import LOOP_OP, LoopShape, plan_loops
from specflow.runtime.rendezvous import DEAD
from specflow.runtime.resources import ResourceHandle
from specflow.runtime.step_stats import NodeStats, output_bytes


class NotCompiled(Exception):
    """A loop's node the compiled loop cannot run (an asynchronous kernel): the executor is built
    again with that loop left on frames."""

    def __init__(self, frame: str):
        super().__init__(frame)
        self.frame = frame


class LoopNodeError(Exception):
    """``error`` raised by the loop's node ``item``: reported as that node's failure."""

    def __init__(self, item: NodeItem, error: BaseException):
        super().__init__(str(error))
        self.item, self.error = item, error


class _Bound:
    """One set of the loop's kernel contexts and the generated function bound to them; a call
    takes a set nobody else holds (steps may overlap), as the straight line's lines."""

    __slots__ = ("extras", "run", "traced")


class LoopProgram:
    """The kernel of one ``_CompiledLoop`` node: ``fn(ctx, *enter_values)`` -> the Exits' values."""

    def __init__(self, executor: Any, shape: LoopShape, items: dict[str, NodeItem]):
        self.ex = executor
        self.shape = shape
        self.name = shape.name
        prog = (
            [items[n] for n in shape.cond_nodes]
            + [items[shape.loop_cond]]
            + [items[n] for n in shape.body_nodes]
        )
        self.prog = prog
        pos = {item.name: p for p, item in enumerate(prog)}
        enter_ix = {e: j for j, e in enumerate(shape.enters)}
        var = {m: j for j, m in enumerate(shape.merges)} | {s: j for j, s in enumerate(shape.switches) if s}

        def value(inp: str) -> str:
            ref = parse_input(inp)
            if ref.node in enter_ix:
                return f"i{enter_ix[ref.node]}"
            if ref.node in var:  # a Merge's value, or a Switch's true side: the loop variable
                return f"m{var[ref.node]}"
            return f"v{pos[ref.node]}_{ref.index}"

        ins = {id(item): [value(i) for i in item.node.data_inputs] for item in prog}
        nexts = [value(items[nx].node.data_inputs[0]) for nx in shape.nexts]
        used = {v for vs in ins.values() for v in vs} | set(nexts)
        pred = f"v{pos[shape.loop_cond]}_0"
        used.add(pred)
        outs = {id(item): [f"v{p}_{k}" if f"v{p}_{k}" in used else None for k in range(item.n_out)]
                for p, item in enumerate(prog)}  # fmt: skip
        self._source_args = (
            prog, len(shape.cond_nodes) + 1, lambda it: ins[id(it)], lambda it: outs[id(it)], pred,
            [f"i{shape.var_enter[j]}" for j in range(len(shape.merges))], nexts,
            [f"m{j}" for j in shape.exit_var], len(shape.enters),
        )  # fmt: skip
        self.source = loop_codegen.loop_source(*self._source_args)
        self._make = self._make_traced = None
        self._free: list[_Bound] = []
        self._lock = threading.Lock()
        dev = executor.device
        self._truth = (
            bool if dev.device_type == "CPU" else (lambda p: bool(p.get() if hasattr(p, "get") else p))
        )

    def __call__(self, ctx: KernelContext, *ins: Any) -> tuple:
        try:
            bound = self._free.pop()  # atomic: steps may overlap on other threads
        except IndexError:
            bound = self._bind()
        extras = bound.extras
        extras.clear()
        extras.update(ctx.extras)
        if extras.get("stats") is None:
            k, res, _ = bound.run(extras["rendezvous"], *ins)
        else:
            k, res, _ = (bound.traced or self._bind_traced(bound))(extras["rendezvous"], *ins)
        extras.clear()  # the step's rendezvous (and through it its stacks) are not kept past it
        self._free.append(bound)
        if k is None:
            return res
        if k < 0 or type(res) is LoopNodeError:  # an abort, or an inner loop's node: raised as it is
            raise res
        raise LoopNodeError(self.prog[k], res)

    def _bind(self) -> _Bound:
        with self._lock:
            if self._make is None:
                self._make = loop_codegen.compile_loop(self.source, self.name)
        b = _Bound()
        b.extras = {}
        b.traced = None
        b.run = self._make(*self._make_args(b))
        return b

    def _bind_traced(self, b: _Bound) -> Any:
        """The traced variant of ``b``'s function (made on the first traced call)."""
        with self._lock:
            if self._make_traced is None:
                source = loop_codegen.loop_source(*self._source_args, traced=True)
                self._make_traced = loop_codegen.compile_loop(source, self.name)
        b.traced = self._make_traced(*self._make_args(b))
        return b.traced

    def _make_args(self, b: _Bound) -> tuple:
        """``make``'s arguments for the contexts of ``b``."""
        ctxs = []
        for item in self.prog:
            c = KernelContext.__new__(KernelContext)
            c.__dict__ = {**item.ctx_template, "extras": b.extras}
            ctxs.append(c)
        prog, check, device = self.prog, self.ex._check_outputs, self.ex.device.name
        now = time.perf_counter_ns

        def fix1(i: int, out: Any) -> Any:
            return _live(prog[i], check(prog[i], out))[0]

        def fixn(i: int, out: Any) -> Any:
            return _live(prog[i], check(prog[i], out))

        def record(i: int, t0: int, outs: Any) -> None:
            item = prog[i]
            node = NodeStats(
                item.name, item.op, device, t0, now(), threading.get_native_id(), output_bytes(outs)
            )
            b.extras["stats"].record(node)

        return ([it.fn for it in prog], ctxs, line_dtypes(prog), self.ex.device.array_type, ResourceHandle,
                fix1, fixn, self._truth, now, record)  # fmt: skip


def _live(item: NodeItem, outs: Any) -> Any:
    """Outputs of a loop's node: none may be dead (no node that makes dead values is compiled)."""
    if any(o is DEAD for o in outs):
        raise RuntimeFailure(f"{item.op} returned a dead value inside a compiled loop", node=item.name)
    return outs


class CompiledLoops:
    """The compiled-loop half of :class:`specflow.runtime.executor.Executor` (a mixin)."""

    _loop_shapes: dict[str, LoopShape] = {}

    def _collapsed(self, graph_def: GraphDef, compile_loops: bool, refused: set[str]) -> GraphDef:
        """``graph_def`` with its compilable loops as ``_CompiledLoop`` nodes (not those in
        ``refused``: their kernels turned out not to fit)."""
        if not compile_loops:
            return graph_def
        graph_def, shapes = plan_loops(graph_def, frozenset(refused))
        self._loop_shapes = {s.name: s for s in shapes}
        return graph_def

    def _build_loop(self, node: NodeDef, index: int, dtypes_of: dict) -> NodeItem:
        """The loop node's item: its frame's nodes built as the executor builds any (their
        kernels, dtypes and contexts), run by a :class:`LoopProgram`."""
        shape = self._loop_shapes[node.name]
        saved = self._slot_count
        items = {nd.name: self._build_node(nd, j, dtypes_of) for j, nd in enumerate(shape.nodes)}
        self._slot_count = saved  # the frame's nodes have no slots of their own
        if any(it.is_async for it in items.values()):
            raise NotCompiled(shape.frame)
        in_dtypes = [dtypes_of[e][0] for e in shape.enters]
        out_dtypes = [dtypes_of[x][0] for x in shape.exits]
        item = self._make_item(node, index, LoopProgram(self, shape, items), {"frame_name": shape.frame},
                               len(in_dtypes), out_dtypes, {})  # fmt: skip
        dtypes_of[node.name] = out_dtypes
        return item


__all__ = ["LOOP_OP", "CompiledLoops", "LoopNodeError", "LoopProgram", "NotCompiled"]
