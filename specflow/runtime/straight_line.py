"""The straight line: a step of a partition run as a plain loop in topological order.

When every node of a partition is inexpensive, none is asynchronous (``_Recv``, queue ops) and
none routes dead tensors specially, a step needs no ready queue: it runs the nodes in the
precomputed order with the same output checks, errors, step stats, freeing and abort checks as
the dataflow loop (``StraightLine._pick_line`` decides when).

Two loops do it. The generic one (``_line_loop``) keeps values in one list indexed by flat
output number, times every kernel (the measured costs that decide inline vs pool), records step
stats and propagates dead values. Once the costs are settled, most steps run the partition's
generated function instead (``line_codegen.py``: values in local variables, no timers), and only
a sample of steps is timed: the first ``TIME_FIRST``, every ``TIME_EVERY``-th, every traced
one, and the step after an untimed one that took clearly longer than usual (a kernel may have
become expensive: a bigger batch fed to the same signature). On a device with one inter-op
thread the costs decide nothing (its steps always take the line, see ``_pick_line``): after the
first ``TIME_FIRST`` only traced steps are timed (a timed step took ~1.8x an untimed one, and
on a loaded machine slow steps timed the next one: 11 % of a batch-1 inference's steps).
"""

from __future__ import annotations

import time
from typing import Any

from specflow.ops.registry import KernelContext
from specflow.runtime import executor_types as xt
from specflow.runtime import line_codegen
from specflow.runtime.executor_types import NO_OUTPUTS, NodeItem, StepHandle
from specflow.runtime.line_codegen import Resume
from specflow.runtime.rendezvous import DEAD
from specflow.runtime.resources import ResourceHandle

# A partition with expensive nodes runs on the dataflow loop (parallel) or, when that measured
# slower, on the straight line anyway; every PROBE_EVERY steps the slower way runs once more,
# in case the machine or the inputs changed (see StraightLine._pick_line).
PROBE_EVERY = 32

# Cost sampling (see the module docstring). The first TIME_FIRST steps measure every kernel
# many times (the average moves a quarter of the way per run), then one step in TIME_EVERY keeps
# them fresh. Generating the function costs about 0.1 ms a node (Python's compiler), what ~200
# steps on it save, so only a partition still running after TIME_FIRST steps gets one.
TIME_FIRST = 32
TIME_EVERY = 16


class _Line:
    """One reusable set of per-node kernel contexts (``entries``: the generic loop's tuples) and
    the generated function bound to them (``run``, made on the first untimed step)."""

    __slots__ = ("entries", "extras", "run")


class StraightLine:
    """The straight-line half of :class:`specflow.runtime.executor.Executor` (a mixin: it uses
    the executor's nodes, device and shared helpers)."""

    # Class defaults, so the executor's constructor needs nothing for them: straight-line steps
    # started, the running average wall time (ns) of an untimed step, whether the next step is
    # timed, and the generated line's ``make`` (line_codegen), compiled once per executor.
    _line_steps = 0
    _line_wall = -1
    _time_next = False
    _line_make = None

    def _pick_line(self) -> bool:
        """For a partition with expensive nodes: whether this step takes the straight line.

        The dataflow loop runs expensive nodes in parallel, which pays only with idle cores: a
        multi-threaded BLAS already keeps every core busy on one MatMul, and two MatMuls at once
        then contend (the 784-1024-1024-10 training step on 2 cores: 27-30 ms on the dataflow
        loop, 18-21 ms on the line). So both ways are timed, each once at first, then the faster
        one runs and every PROBE_EVERY steps the slower one again. With one inter-op thread
        there is nothing to run in parallel: the line, always (the dataflow loop would only add
        a hand-off between threads per node, each a wait for the scheduler on a busy machine)."""
        if self.device.threads <= 1:
            return True
        self._mode_steps += 1
        line, flow = self._mode_ns
        if flow < 0:
            return False
        if line < 0:
            return True
        line_wins = line < flow
        return line_wins is not (self._mode_steps % PROBE_EVERY == 0)

    def _note_mode(self, mode: int, ns: int) -> None:
        old = self._mode_ns[mode]
        self._mode_ns[mode] = ns if old < 0 else (old + ns) >> 1

    def _straight_task(self, step: StepHandle) -> None:
        """A pool task running a whole straight-line step (no caller thread to run it)."""
        self._straight(step)
        step._finish()

    def _straight(self, step: StepHandle) -> None:
        """Run every node in topological order on this thread: the generated function, or the
        generic loop on timed and traced steps (see the module docstring)."""
        # A line nobody else holds (see _new_line), reused with its contexts: only the step's
        # extras change (its rendezvous, frame and device).
        try:
            line = self._lines_free.pop()  # atomic: steps may overlap on other threads
        except IndexError:
            line = self._new_line()
        extras = line.extras
        extras.clear()
        extras.update(step.extras)
        step.extras = extras
        n = self._line_steps = self._line_steps + 1
        if (
            step.stats is not None
            or n <= TIME_FIRST
            or ((n % TIME_EVERY == 0 or self._time_next) and self.device.threads > 1)
            or len(self._nodes) > line_codegen.MAX_GENERATED_NODES
        ):
            self._time_next = False
            ran = self._line_loop(step, line.entries, 0, [None] * self._out_count, 0)
        else:  # an untimed step on the generated function
            run = line.run or self._bind_generated(line)
            t0 = time.perf_counter_ns()
            res = run(step.rendezvous)
            if res is None:
                # A step clearly slower than usual times the next one (capped average, as costs).
                wall, avg = time.perf_counter_ns() - t0, self._line_wall
                limit = xt.INLINE_COST_NS
                if avg >= 0:  # (a long step, a loop's, varies by more than half a kernel's limit)
                    self._time_next = wall > avg + max(limit >> 1, avg >> 3)
                    wall = avg + ((min(wall, 4 * avg + limit) - avg) >> xt.COST_SHIFT)
                self._line_wall = wall
                ran = len(self._nodes)
            else:
                ran = self._generated_stopped(step, line, res)
        self._lines_free.append(line)
        step.nodes_run = ran
        step.peak_live = self._straight_peak
        if step.t0:
            self._note_mode(0, time.perf_counter_ns() - step.t0)

    def _generated_stopped(self, step: StepHandle, line: _Line, res: tuple) -> int:
        """The generated function stopped at node ``k``: on a dead value the generic loop runs
        the rest of the step, on an error the step fails. Returns how many nodes ran."""
        k, error, env = res
        vals = line_codegen.values_from(env, self._out_count)
        del env
        if type(error) is Resume:  # node k returned a dead value: the generic loop goes on
            item = self._nodes[k]
            for f in item.frees:
                vals[f] = None
            self._store(step, item, error.outs, vals, False)
            return self._line_loop(step, line.entries, k + 1, vals, k + 1)
        self._fail(step, self._nodes[k] if k >= 0 else None, error)
        return k + 1

    def _bind_generated(self, line: _Line) -> Any:
        """The generated function for ``line``'s contexts (the source is compiled once)."""
        nodes = self._nodes
        if self._line_make is None:
            self._line_make = line_codegen.compile_line(nodes, self.device.name)

        def fix1(i: int, out: Any) -> Any:
            outs = self._check_outputs(nodes[i], out)
            if outs[0] is DEAD:
                raise Resume(outs)
            return outs[0]

        def fixn(i: int, out: Any) -> Any:
            outs = self._check_outputs(nodes[i], out)
            if any(o is DEAD for o in outs):
                raise Resume(outs)
            return outs

        line.run = self._line_make(
            [n.fn for n in nodes],
            [e[0] for e in line.entries],
            line_codegen.line_dtypes(nodes),
            self.device.array_type,
            ResourceHandle,
            fix1,
            fixn,
        )
        return line.run

    def _line_loop(self, step: StepHandle, entries: list[tuple], start: int, vals: list, ran: int) -> int:
        """The generic loop, from node ``start`` with live values ``vals``; returns how many
        nodes ran (``ran`` before ``start``). Same contract as the dataflow loop: output checks,
        the first error aborts the rendezvous, dead inputs skip kernels, each value is dropped
        after its last consumer, every kernel timed, stats when tracing."""
        rv = step.rendezvous
        stats = step.stats
        dead = step.dead
        array_type = self.device.array_type
        now = time.perf_counter_ns
        inline_ns, shift = xt.INLINE_COST_NS, xt.COST_SHIFT
        item = None
        mem = step.mem
        if mem is not None:
            mem_frees = self._memory_plan()[0]
        try:
            for ctx, item, fn, n, srcs, frees, check0, out_flat in entries[start:] if start else entries:
                if rv.error is not None:  # aborted: a timeout, or another device failed
                    raise rv.error
                ran += 1
                if dead and item.id in dead and not item.run_dead:
                    if mem is not None:
                        mem.node_ran(0, sum(getattr(vals[f], "nbytes", 0) for f in mem_frees[item.id]))
                    for f in frees:
                        vals[f] = None
                    self._store(step, item, item.dead_outs, vals, True)
                    continue
                t0 = now()
                if n == 1:
                    out = fn(ctx, vals[srcs[0]])
                elif n == 0:
                    out = fn(ctx)
                else:
                    out = fn(ctx, *[vals[i] for i in srcs])
                t1 = now()
                if mem is not None:  # a traced step: bytes allocated and released (runtime/memory.py)
                    self._account_line(mem, item, out, vals, mem_frees[item.id])
                for f in frees:
                    vals[f] = None
                # The cost average, inlined from _observe (this loop is the hot path).
                c, d = item.cost, t1 - t0
                if c >= 0:
                    if d > 4 * c + inline_ns:
                        d = 4 * c + inline_ns
                    d = c + ((d - c) >> shift)
                item.cost = d
                if (d < inline_ns) is not item.inexpensive and not item.static_cheap:
                    self._reclassify(item, d < inline_ns)
                if type(out) is array_type and out.dtype is check0:
                    if out_flat >= 0:
                        vals[out_flat] = out
                    if stats is not None:
                        self._record(stats, item, (out,), t0, t1)
                elif out is None and check0 is NO_OUTPUTS:
                    if stats is not None:
                        self._record(stats, item, (), t0, t1)
                else:
                    outs = self._check_outputs(item, out)
                    self._store(step, item, outs, vals, False)
                    if stats is not None:
                        self._record(stats, item, outs, t0, t1)
        except BaseException as e:
            self._fail(step, item, e)
        return ran

    def _new_line(self) -> _Line:
        """A line of kernel contexts (the first step, or more steps at once than ever before):
        per node, in topological order, its KernelContext and the fields the generic loop reads,
        unpacked in one go. Lines are reused across steps with their contexts: a step takes a
        line nobody else holds (so overlapping steps stay independent), and only
        the line's shared ``extras`` dict (with the step id) changes per step."""
        line = _Line()
        line.extras = {}
        line.run = None
        line.entries = []
        for item in self._nodes:
            ctx = KernelContext.__new__(KernelContext)
            ctx.__dict__ = {**item.ctx_template, "extras": line.extras}
            check0 = NO_OUTPUTS if item.n_out == 0 else item.check0
            line.entries.append((ctx, item, item.fn, item.n_in, item.in_srcs, item.frees, check0, item.out_flat))
        return line

    def _store(self, step: StepHandle, item: NodeItem, outs, vals: list, is_dead: bool) -> None:
        """The straight line's general case: several outputs, or dead values to propagate."""
        dead = step.dead
        for k, flat, edges in item.outputs:
            v = outs[k]
            vals[flat] = v
            if v is DEAD:
                dead.update(dst for _, dst in edges)
        if is_dead:
            dead.update(item.ctrl_out)
