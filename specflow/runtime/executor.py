"""The dataflow executor: runs one partition (one device's subgraph) per step.

An :class:`Executor` is built once per partition and reused every step. Building resolves
everything a step would otherwise look up: each node's kernel (for its dtypes on this device),
its pending count (data + control inputs), its output -> consumer edges and the flat input slots
its inputs land in. A step then is the whitepaper's loop: nodes whose pending count reaches zero
are ready. As in TensorFlow's executor, inexpensive ready nodes and one expensive one run inline
on the current thread; the other expensive ones go to the device's thread pool, so independent
work runs in parallel (numpy and cupy release the GIL) while cheap nodes cost no thread hop.

Three ways to run a step, chosen per partition at build time (and per step between the first
two):

- the dataflow loop (this module): pending counts and a ready queue, as above;
- the straight line (``straight_line.py``): when every node is inexpensive, none is asynchronous
  (``_Recv``, queue ops) and none handles dead tensors specially (``DEAD_TENSOR_OPS``), a plain
  loop over the topological order. A kernel that turns out expensive sends the next steps back
  to the dataflow loop, unless running its expensive nodes in parallel measures slower than the
  line (cores already busy, e.g. inside a multi-threaded BLAS): both ways are timed and the
  faster one is used (``StraightLine._pick_line``);
- frames (``frames.py``): a partition holding a loop (``Enter``/``Exit``/``NextIteration``) tags
  every value with its frame and iteration, as TensorFlow's executor does.

Before any of these, a simple loop is collapsed into one ``_CompiledLoop`` node whose
kernel runs the loop's nodes in a generated function (``loop_plan.py``, ``compiled_loop.py``):
a partition whose loops all collapse needs no frames.

Cost: a node is inexpensive when its op is in ``INEXPENSIVE_OPS`` or when its kernel's measured
time (a moving average over its runs, like TF's cost model behind ``OpKernel::IsExpensive``) is
below ``executor_types.INLINE_COST_NS``. A node not yet measured counts as inexpensive, so a new
partition's first step runs on one thread and measures every kernel without other threads
skewing the clock.

Memory: a value sits in its consumers' input slots and leaves each slot when that consumer runs,
so it is freed after its last consumer (``peak_live`` on the step handle tracks the live set).
A traced step also counts the live bytes per device (``runtime/memory.py``: ``_account``).

Dead tensors (control flow): a value may be :data:`DEAD`; a node with a dead input produces dead
outputs without running, except the ops in ``RUNS_ON_DEAD_INPUT``.

Errors: the first failure aborts the step's rendezvous (every pending ``_Recv``, on any device,
fails at once) and is reported as RuntimeFailure naming the node, op, device and location.
A step that can never finish fails too: with ``Rendezvous(partitions=n)`` (the Session's steps)
each partition reports when it goes quiet (all it has under way is ``_Recv``s waiting in the
rendezvous) and busy again; when every partition is quiet while receives wait, no value can
come, and the step fails naming those receives, their frames and iterations
(``StepHandle._deadlocked``) instead of hanging.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from specflow.errors import OpError, RuntimeFailure, SpecflowError
from specflow.graph.dtypes import DType
from specflow.graph.graph_def import GraphDef
from specflow.graph.topo import LOOP_BACK_EDGES, topological_order
from specflow.ops.buffers import Arena
from specflow.ops.math_ops import FP_STATE, QUIET_FP
from specflow.ops.registry import KernelContext
from specflow.ops.runtime_ops import CONTROL_TOKEN
from specflow.runtime import executor_types as xt
from specflow.runtime.abort import interrupt_error
from specflow.runtime.async_nodes import AsyncNodes
from specflow.runtime.compiled_loop import CompiledLoops, LoopNodeError, NotCompiled
from specflow.runtime.devices import Device
from specflow.runtime.executor_build import NodeBuilder
from specflow.runtime.executor_types import (
    DEAD_TENSOR_OPS,
    FINISHED,
    LOOP_OPS,
    CallFrame,
    NodeItem,
    StepHandle,
    declared,
    describe,
)
from specflow.runtime.frames import Frames
from specflow.runtime.memo import memoize
from specflow.runtime.memory import MemoryAccounting
from specflow.runtime.rendezvous import DEAD, Rendezvous
from specflow.runtime.resources import ResourceHandle
from specflow.runtime.step_stats import NodeStats, StepStats, output_bytes
from specflow.runtime.straight_line import StraightLine

__all__ = ["CallFrame", "Executor", "StepHandle"]


class Executor(NodeBuilder, StraightLine, Frames, CompiledLoops, AsyncNodes, MemoryAccounting):
    """Runs one partition ``graph_def`` on ``device``. Thread-safe: steps may overlap."""

    def __init__(
        self,
        graph_def: GraphDef,
        device: Device,
        *,
        graph_seed: int | None = None,
        kernel_state: dict[str, dict] | None = None,
        compile_loops: bool = True,
    ):
        self.device = device
        self.graph_seed = graph_seed
        # Per-node kernel state (a random op's generator), shared by every executor of a
        # session so a node keeps one stream across signatures and can be checkpointed.
        self._kernel_state = kernel_state if kernel_state is not None else {}
        self.graph_def = graph_def
        # Large kernel outputs reused across this partition's steps, from its second on (ops/buffers.py).
        self.arena = Arena(device.xp, keeping=False)
        refused: set[str] = set()
        while True:  # a loop whose kernels the compiled loop cannot run goes back to frames
            try:
                self._build(self._collapsed(graph_def, compile_loops, refused))
                break
            except NotCompiled as e:
                refused.add(e.frame)

    def _build(self, graph_def: GraphDef) -> None:
        order = topological_order(graph_def, allow_back_edges=LOOP_BACK_EDGES)
        self._nodes: list[NodeItem] = []
        self._slot_count = 0
        self._out_count = 0
        ids: dict[str, int] = {}
        out_base: dict[str, int] = {}
        dtypes_of: dict[str, list[DType]] = {}
        for node in order:
            item = self._build_node(node, len(self._nodes), dtypes_of)
            ids[node.name] = item.id
            out_base[node.name] = self._out_count
            self._out_count += item.n_out
            self._nodes.append(item)
        self._wire(ids, out_base)
        memoize(self._nodes, self.device.device_type)  # arithmetic on variables: again when they change
        # The straight line needs synchronous kernels and no special dead-tensor routing; it is
        # taken while no node is expensive (_n_expensive, kept under _cost_lock).
        self._straight_ok = not any(n.is_async or n.op in DEAD_TENSOR_OPS for n in self._nodes)
        self._n_expensive = 0
        self._cost_lock = threading.Lock()
        self._lines_free: list = []  # see StraightLine._new_line
        self._mem_frees: list | None = None  # see _memory_plan
        # Step wall time (ns, a moving average) of the two ways to run this partition while it
        # has expensive nodes: [straight line, dataflow loop]; -1 until measured.
        self._mode_ns = [-1, -1]
        self._mode_steps = 0
        # A partition holding a loop runs every step on frames (frames.py).
        self._loops = any(n.op in LOOP_OPS for n in self._nodes)
        if self._loops:
            self._build_frames()

    def __len__(self) -> int:
        return len(self._nodes)

    @property
    def node_names(self) -> list[str]:
        return [n.name for n in self._nodes]

    @property
    def straight_line(self) -> bool:
        """Whether every node is inexpensive, so steps run as a plain loop in topological order
        (a partition with expensive nodes takes the loop only when it measured faster)."""
        return self._straight_ok and self._n_expensive == 0

    def costs(self) -> dict[str, float]:
        """Each measured node's average kernel time in seconds (what decides inline vs pool)."""
        return {n.name: n.cost / 1e9 for n in self._nodes if n.cost >= 0}

    # --- a step --------------------------------------------------------------------------------

    def run_async(
        self,
        *,
        rendezvous: Rendezvous | None = None,
        frame: CallFrame | None = None,
        step_id: int = 0,
        stats: StepStats | None = None,
        done: Callable[[BaseException | None], None] | None = None,
        caller_runs: bool = False,
    ) -> StepHandle:
        """Start a step. ``done(error_or_None)`` is called when it ends.

        Returns at once, unless ``caller_runs``: then the calling thread (idle anyway, waiting
        for the step) runs the roots' inline share itself, saving a thread hop per step; on the
        straight line it runs the whole step."""
        if not self.arena.keeping:
            self.arena.step_started()
        step = StepHandle()
        step.error = None
        step.dead = set()
        step.stats = stats
        step.rendezvous = rendezvous if rendezvous is not None else Rendezvous()
        step.extras = {
            "rendezvous": step.rendezvous, "frame": frame or CallFrame(), "device": self.device, "step_id": step_id,
            "stats": stats,
        }  # fmt: skip
        step.step_id = step_id
        step.live = step.peak_live = step.nodes_run = 0
        step.callback = done
        step.lock = threading.Lock()
        step.parked = {}
        step.quiet = False
        if step.rendezvous.watching:
            step.rendezvous.watched.append(step)
        step.mem = None
        if self._loops:  # (frames keep values per iteration: their bytes are not counted)
            return self._run_frames(step, caller_runs)
        if stats is not None:
            step.mem = stats.memory_for(self.device.name)
        # Timed only while there is a choice to make (see _pick_line).
        step.t0 = time.perf_counter_ns() if self._n_expensive and self._straight_ok else 0
        if self._straight_ok and (self._n_expensive == 0 or self._pick_line()):
            step.slots = ()  # values live in the loop's own list
            if caller_runs:
                if self.device.device_type == "CPU":  # Device.kernel_scope inline: no device to make current
                    token = FP_STATE.set(QUIET_FP)
                    try:
                        self._straight(step)
                    finally:
                        FP_STATE.reset(token)
                else:
                    with self.device.kernel_scope():
                        self._straight(step)
                if step.rendezvous.watching:
                    step._settle()
                else:  # _settle without a deadlock watch to tell
                    step.quiet = True
                step.done_event = FINISHED
                if done is not None:
                    done(step.error)
            else:
                step.done_event = threading.Event()
                self.device.pool.submit(self._straight_task, step)
            return step
        step.slots = [None] * self._slot_count
        step.pending = list(self._pending)
        step.refs = [0] * self._out_count
        if step.mem is not None:
            step.sizes = [0] * self._out_count
        step.outstanding = len(self._roots)
        step.done_event = threading.Event()
        if not self._roots:
            step._finish()
            return step
        todo: list[int] = []
        self._schedule(step, self._roots, todo)
        if caller_runs:
            with self.device.kernel_scope():
                self._task(step, todo)
        elif todo:
            self.device.pool.submit(self._task, step, todo)
        return step

    def run(self, *, timeout: float | None = None, **kw) -> StepHandle:
        """Run a step and wait; raises its RuntimeFailure (for tests and single-device use)."""
        step = self.run_async(caller_runs=timeout is None, **kw)
        if not step.wait(timeout):
            step.rendezvous.abort(RuntimeFailure(f"step timed out after {timeout}s"))
            raise step.rendezvous.error
        if step.error is not None:
            raise step.error
        return step

    # --- the dataflow loop -----------------------------------------------------------------------

    def _task(self, step: StepHandle, todo: list[int]) -> None:
        """A pool task: run the nodes in ``todo`` (a stack) and those they make ready inline."""
        try:
            while todo:
                self._run_node(step, self._nodes[todo.pop()], todo)
        except BaseException as e:  # a bug in the loop itself: never leave the step hanging
            self._fail(step, None, e)
            step._finish()

    def _schedule(self, step: StepHandle, ready: list[int], todo: list[int]) -> None:
        """Split ``ready`` between this thread's stack ``todo`` and the pool (TF's ScheduleReady).

        Inexpensive nodes go on top of ``todo``. ``todo`` holds at most one expensive node, at
        the bottom, so it runs after the cheap ones; any other expensive node goes to the pool."""
        nodes = self._nodes
        for j in ready:
            if nodes[j].inexpensive:
                todo.append(j)
            elif todo and not nodes[todo[0]].inexpensive:
                self.device.pool.submit(self._task, step, [j])
            else:
                todo.insert(0, j)

    def _run_node(self, step: StepHandle, item: NodeItem, todo: list[int]) -> None:
        """Run one node; the nodes it makes ready that stay on this thread land in ``todo``."""
        t0 = t1 = 0
        outs = None
        error = None
        is_dead = False
        s = item.in_start
        ins = step.slots[s : s + item.n_in]
        if item.n_in:
            step.slots[s : s + item.n_in] = item.nones
        if step.error is not None or step.rendezvous.error is not None:
            error = step.error or step.rendezvous.error
        elif step.dead and item.id in step.dead and not item.run_dead:
            outs = item.dead_outs
            is_dead = True
        else:
            ctx = KernelContext.__new__(KernelContext)
            # Copy the node's prebuilt fields instead of running the dataclass __init__: this is
            # the hot path, and a fresh context per run keeps overlapping steps independent.
            d = item.ctx_template.copy()
            d["extras"] = step.extras
            ctx.__dict__ = d
            try:
                if item.is_async:
                    return self._start_async(step, item, ctx, ins, time.perf_counter_ns(), todo)
                t0 = time.perf_counter_ns()
                out = item.fn(ctx, *ins)
                t1 = time.perf_counter_ns()
                self._observe(item, t1 - t0)
                outs = self._check_outputs(item, out)
            except BaseException as e:
                error = e
        del ins
        self._complete(step, item, outs, is_dead, error, t0, t1, todo)

    def _observe(self, item: NodeItem, ns: int) -> None:
        """Fold one kernel time into the node's average; reclassify it when it crosses the line."""
        c = item.cost
        limit = xt.INLINE_COST_NS
        c = ns if c < 0 else c + ((min(ns, 4 * c + limit) - c) >> xt.COST_SHIFT)
        item.cost = c
        cheap = c < limit
        if cheap is not item.inexpensive and not item.static_cheap:
            self._reclassify(item, cheap)

    def _reclassify(self, item: NodeItem, cheap: bool) -> None:
        with self._cost_lock:  # steps on other threads may measure the same nodes
            if item.inexpensive is not cheap:
                item.inexpensive = cheap
                self._n_expensive += -1 if cheap else 1

    def _check_outputs(self, item: NodeItem, out: Any) -> tuple | list:
        """Output count, array type (device) and dtype, checked once per output."""
        if item.n_out == 1 and type(out) is not tuple and type(out) is not list:
            outs: Any = (out,)
        elif out is None and item.n_out == 0:
            return ()
        else:
            outs = out
            if not isinstance(outs, (tuple, list)) or len(outs) != item.n_out:
                got = len(outs) if isinstance(outs, (tuple, list)) else "a single value"
                raise OpError(f"kernel returned {got} output(s), expected {item.n_out}")
        array_type = self.device.array_type
        for k, want in enumerate(item.checks):
            o = outs[k]
            if type(o) is array_type:
                if o.dtype is want or o.dtype == want:
                    continue
            elif o is DEAD:
                continue
            elif want is None:
                if isinstance(o, ResourceHandle):
                    continue
            else:
                fixed = self._coerce(o)
                if fixed is not None and (fixed.dtype == want):
                    outs = list(outs)
                    outs[k] = fixed
                    continue
            raise OpError(
                f"kernel output {k} is {describe(o)}, but the op declares {declared(want)} on {self.device.name}"
            )
        return outs

    def _coerce(self, o: Any) -> Any:
        """Array subclasses and numpy scalars (np.sum's result) as this device's array type; the
        control token (a host scalar) as it is, on any device."""
        if isinstance(o, self.device.array_type) or o is CONTROL_TOKEN:
            return o
        if self.device.device_type == "CPU" and isinstance(o, np.generic):
            return np.asarray(o)
        return None

    def _record(self, stats: StepStats, item: NodeItem, outs, t0: int, t1: int) -> None:
        stats.record(
            NodeStats(
                item.name,
                item.op,
                self.device.name,
                t0,
                t1,
                threading.get_native_id(),
                output_bytes(outs) if outs else 0,
            )
        )

    def _fail_or_record(self, step, item, outs, error, t0, t1) -> None:
        """A finished node's first bookkeeping: its error fails the step, else its stats."""
        if error is not None:
            if error is not step.error:
                self._fail(step, item, error)
        elif step.stats is not None:
            if not t0:  # a dead node: it ran no kernel
                t0 = t1 = time.perf_counter_ns()
            self._record(step.stats, item, outs, t0, t1)

    def _complete(self, step, item, outs, is_dead, error, t0, t1, todo) -> None:
        """Record, propagate outputs to consumers, and schedule the nodes that became ready."""
        self._fail_or_record(step, item, outs, error, t0, t1)
        ready: list[int] = []
        with step.lock:
            step.nodes_run += 1
            refs = step.refs
            for src in item.in_srcs:
                r = refs[src] - 1
                refs[src] = r
                if r == 0:
                    step.live -= 1
            if step.error is None and outs is not None:
                slots, pending = step.slots, step.pending
                for k, flat, edges in item.outputs:
                    v = outs[k]
                    refs[flat] = len(edges)
                    step.live += 1
                    for slot, dst in edges:
                        slots[slot] = v
                        if v is DEAD:
                            step.dead.add(dst)
                        p = pending[dst] - 1
                        pending[dst] = p
                        if p == 0:
                            ready.append(dst)
                for dst in item.ctrl_out:
                    if is_dead:
                        step.dead.add(dst)
                    p = pending[dst] - 1
                    pending[dst] = p
                    if p == 0:
                        ready.append(dst)
                if step.live > step.peak_live:
                    step.peak_live = step.live
            if step.mem is not None:
                self._account(step, item, outs)
            step.outstanding += len(ready) - 1
            finished = step.outstanding == 0
            # (a bool, never the parked dict itself: another thread may park into it before the test below)
            deadlocked = step._went_quiet() if finished or step.parked else False
        if deadlocked:
            step._deadlocked()
        if finished:
            if step.t0:
                self._note_mode(1, time.perf_counter_ns() - step.t0)
            step._finish()
        elif ready:
            self._schedule(step, ready, todo)

    def _fail(self, step: StepHandle, item: NodeItem | None, error: BaseException) -> None:
        """Record the step's first error and abort its rendezvous."""
        rv = step.rendezvous
        if type(error) is LoopNodeError:  # a compiled loop's node failed: name that node
            item, error = error.item, error.error
        if error is rv.error or (item is None and isinstance(error, SpecflowError)):
            wrapped = error  # another device's failure (or the timeout): already explained
        elif isinstance(error, KeyboardInterrupt):  # Ctrl-C on the thread running the step
            wrapped = interrupt_error()
        elif item is None:
            wrapped = RuntimeFailure(
                f"internal executor error on {self.device.name}: {type(error).__name__}: {error}"
            )
            wrapped.__cause__ = error
        else:
            msg = error.message if isinstance(error, SpecflowError) else f"{type(error).__name__}: {error}"
            # Keep RuntimeFailure subclasses (OutOfRangeError: the end of data) so callers can catch them.
            cls = type(error) if isinstance(error, RuntimeFailure) else RuntimeFailure
            wrapped = cls(
                f"{item.op} on {self.device.name}: {msg}", node=item.name, location=item.node.location
            )
            wrapped.__cause__ = error
        with step.lock:
            first = step.error is None
            if first:
                step.error = wrapped
        if first:
            rv.abort(wrapped)
