"""Loops on the executor: frames and iterations (whitepaper 4.4; TensorFlow's executor,
``propagator_state.cc``'s FrameState and IterationState, rewritten here).

A partition holding ``Enter``, ``Exit`` or ``NextIteration`` runs every step on frames. Each
ready node is tagged ``(node, frame, iteration, is_dead)``, and each (frame, iteration) has its
own input slots and pending counts, so the same node runs once per iteration:

- a step starts in iteration 0 of the root frame;
- ``Enter`` moves its value into iteration 0 of the child frame ``frame_name``; a child frame is
  one instance per (parent frame, parent iteration, frame name). A constant Enter
  (``is_constant``) gives its value to every iteration of the child frame, later ones included;
- ``NextIteration`` moves its value to the next iteration of the same frame, starting it; at
  most ``parallel_iterations`` (the Enter's attr) iterations are under way at once, and a value
  for one more waits until the oldest finishes. A dead value stops there;
- ``Exit`` moves its value to the parent frame and iteration. A dead Exit is remembered only if
  it belongs to the newest iteration: when the frame finishes, those dead values go to the
  parent, which is how the exits of a loop that never ran (on an untaken branch) stay dead;
- a ``Merge`` fires on its first live input (once its control inputs are in), or dead once all
  its data inputs are dead; a loop's Merge (one with a ``NextIteration`` input) gets one input
  per iteration, its entry in iteration 0 and its back edge later (a dead back edge stops at
  the NextIteration), so one dead input fires it dead at once: that is how a loop entered with
  dead values (on an untaken branch) ends, also when its entry comes from another device
  through a ``_Recv``. A dead input from an Enter fires any Merge at once, for the same reason.
  So a loop's Merge fires on its Enter in iteration 0 and on its back edge in later ones;
- an iteration is done when none of its nodes is ready or running, no child frame it started
  is running, and the iteration before it is done (for iteration 0: every Enter of the frame has
  arrived). A frame is done, and dropped, when all its Enters arrived and all its iterations
  are done.

``_Send``/``_Recv`` inside a loop put the value's frame and iteration into their rendezvous key
(``ctx.extras["frame_iter"]``): a frame's id is the path of (parent iteration, frame name) pairs
from the root, the same on every device, so both sides of a loop split across devices agree.

All frame bookkeeping happens under the step's lock; kernels run outside it, inline or on the
device's pool exactly as on the dataflow loop (``executor.py``).
"""

from __future__ import annotations

import threading
import time

from specflow.errors import GraphError, RuntimeFailure
from specflow.graph.graph_def import parse_input
from specflow.graph.topo import LOOP_BACK_EDGES, MERGE_OPS
from specflow.ops.registry import KernelContext
from specflow.runtime.executor_types import NodeItem, StepHandle
from specflow.runtime.rendezvous import DEAD

# NodeItem.loop_kind
NORMAL, ENTER, EXIT, NEXT_ITERATION = 0, 1, 2, 3
_KINDS = {"Enter": ENTER, "Exit": EXIT, "NextIteration": NEXT_ITERATION}

# Transfers run even when tagged dead: a _Send tells its receiver the value is dead, and a _Recv
# must still take its key (its sender sends a dead value) so the rendezvous stays in step.
_TRANSFER_OPS = ("_Send", "_Recv")

ROOT_FRAME_ID = "0"  # the root frame's id in rendezvous keys ("0:0", as outside any loop)


class _Iteration:
    """One iteration of one frame: its nodes' input slots and pending counts."""

    __slots__ = ("n", "slots", "pending", "dead", "merge_dead", "outstanding", "frames")

    def __init__(self, n: int, slot_count: int, pending: list[int]):
        self.n = n
        self.slots: list = [None] * slot_count
        self.pending = pending.copy()
        self.dead: set[int] = set()  # nodes (not Merges) with a dead input: they produce dead outputs
        self.merge_dead: dict[int, int] = {}  # Merge -> its dead data inputs so far
        self.outstanding = 0  # nodes of this iteration ready or running
        self.frames = 0  # child frames started in this iteration and not done


class _Frame:
    """One instance of a loop: a frame name entered from one parent iteration."""

    __slots__ = (
        "id", "name", "parent", "parent_iter", "max_iters", "iters", "count", "n_iters", "pending_inputs",
        "next_roots", "invariants", "dead_exits", "children",
    )  # fmt: skip

    def __init__(self, fid, name, parent, parent_iter, max_iters, pending_inputs, slot_count, pending):
        self.id = fid
        self.name = name
        self.parent: _Frame | None = parent
        self.parent_iter: _Iteration | None = parent_iter
        self.max_iters = max_iters  # parallel_iterations
        self.iters = {0: _Iteration(0, slot_count, pending)}  # n -> iteration, oldest first
        self.count = 0  # the newest iteration
        self.n_iters = 1  # iterations started and not done
        self.pending_inputs = pending_inputs  # Enters of this frame yet to arrive
        self.next_roots: list[tuple[NodeItem, object]] = []  # NextIteration values waiting for room
        self.invariants: list[tuple[NodeItem, tuple]] = []  # constant Enters and their outputs
        self.dead_exits: list[NodeItem] = []  # Exits dead in the newest iteration
        self.children: dict[tuple[int, str], _Frame] = {}  # (iteration, frame name) -> child


class Frames:
    """The frames half of :class:`specflow.runtime.executor.Executor` (a mixin: it uses the
    executor's nodes, device and shared helpers; see the module docstring)."""

    # --- build -------------------------------------------------------------------------------------

    def _build_frames(self) -> None:
        """Per node: how it moves values between frames; the pending counts every iteration
        starts from (a Merge waits for one live input, bit 0, and two per control input, as in
        TF); the roots; and how many Enters each frame name has."""
        pending: list[int] = []
        enters: dict[str, int] = {}
        ops = {item.name: item.op for item in self._nodes}
        for item in self._nodes:
            item.loop_kind = _KINDS.get(item.op, NORMAL)
            item.frame_io = item.op in _TRANSFER_OPS
            item.stays_live = item.op == "ControlTrigger"  # runs, and stays live, on dead inputs (TF's gradient loops)
            item.loop_run_dead = item.frame_io or item.stays_live
            item.is_merge = item.op in MERGE_OPS
            # Dead data inputs that fire a Merge dead: one for a loop's Merge, else all of them.
            back = item.is_merge and any(
                ops[parse_input(i).node] in LOOP_BACK_EDGES for i in item.node.data_inputs
            )
            item.merge_dead_at = 1 if back else item.n_in
            n_ctrl = len(item.node.control_inputs)
            pending.append(1 + 2 * n_ctrl if item.is_merge else item.n_in + n_ctrl)
            if item.loop_kind == ENTER:
                attrs = item.ctx_template["attrs"]
                item.enter_frame = attrs["frame_name"]
                item.enter_const = bool(attrs["is_constant"])
                item.enter_par = attrs["parallel_iterations"]
                if item.enter_par < 1:
                    raise GraphError(
                        f"parallel_iterations must be at least 1, got {item.enter_par}",
                        node=item.name,
                        location=item.node.location,
                    )
                enters[item.enter_frame] = enters.get(item.enter_frame, 0) + 1
        nodes = self._nodes
        for item in nodes:  # consumers as items (a step on frames reads them per delivery)
            item.loop_edges = tuple(
                (k, tuple((slot, nodes[dst]) for slot, dst in e)) for k, _, e in item.outputs
            )
            item.loop_ctrl = tuple(nodes[dst] for dst in item.ctrl_out)
            item.to_merge = any(d.is_merge for _, e in item.loop_edges for _, d in e) or any(
                d.is_merge for d in item.loop_ctrl
            )
        self._frame_pending = pending
        self._frame_enters = enters
        self._frame_roots = [n for n in nodes if n.n_in == 0 and not n.node.control_inputs]

    # --- a step ----------------------------------------------------------------------------------

    def _run_frames(self, step: StepHandle, caller_runs: bool) -> StepHandle:
        root = _Frame(ROOT_FRAME_ID, "", None, None, 1, 0, self._slot_count, self._frame_pending)
        it = root.iters[0]
        step.root = root
        step.slots = ()  # values live in the iterations
        step.t0 = 0
        roots = self._frame_roots
        step.outstanding = it.outstanding = len(roots)
        step.done_event = threading.Event()
        if not roots:
            step._finish()
            return step
        todo: list[tuple] = []
        self._frames_schedule(step, [(item, root, it, False) for item in roots], todo)
        if caller_runs:
            with self.device.kernel_scope():
                self._frames_task(step, todo)
        elif todo:
            self.device.pool.submit(self._frames_task, step, todo)
        return step

    def _frames_task(self, step: StepHandle, todo: list[tuple]) -> None:
        """A pool task: run the tagged nodes in ``todo`` (a stack) and those they make ready."""
        try:
            while todo:
                self._frames_run(step, todo.pop(), todo)
        except BaseException as e:  # a bug in the loop itself: never leave the step hanging
            self._fail(step, None, e)
            step._finish()

    def _frames_schedule(self, step: StepHandle, ready: list[tuple], todo: list[tuple]) -> None:
        """The dataflow loop's policy (``Executor._schedule``) for tagged nodes."""
        for t in ready:
            if t[0].inexpensive:
                todo.append(t)
            elif todo and not todo[0][0].inexpensive:
                self.device.pool.submit(self._frames_task, step, [t])
            else:
                todo.insert(0, t)

    def _frames_run(self, step: StepHandle, tag: tuple, todo: list[tuple]) -> None:
        item, frame, it, is_dead = tag
        t0 = t1 = 0
        outs = error = None
        ins: list | tuple = ()
        n = item.n_in
        if n == 1:
            s = item.in_start
            ins = (it.slots[s],)
            it.slots[s] = None
        elif n:
            s = item.in_start
            ins = it.slots[s : s + n]
            it.slots[s : s + n] = item.nones
        if step.error is not None or step.rendezvous.error is not None:
            error = step.error or step.rendezvous.error
        elif is_dead and not item.loop_run_dead:
            outs = item.dead_outs
        else:
            d = item.ctx_template.copy()
            if item.frame_io and frame.parent is not None:
                d["extras"] = {**step.extras, "frame_iter": (frame.id, it.n)}
            else:
                d["extras"] = step.extras
            ctx = KernelContext.__new__(KernelContext)
            ctx.__dict__ = d
            if is_dead:  # a transfer tagged dead passes the deadness on
                ins = [DEAD] * n
            elif item.is_merge:  # inputs that never came (a back edge in iteration 0) are dead
                ins = [DEAD if x is None else x for x in ins]
            try:
                if item.is_async:
                    return self._start_async(step, item, ctx, ins, time.perf_counter_ns(), todo, tag)
                t0 = time.perf_counter_ns()
                out = item.fn(ctx, *ins)
                t1 = time.perf_counter_ns()
                self._observe(item, t1 - t0)
                if type(out) is self.device.array_type and out.dtype is item.check0:
                    outs = (out,)  # the common case, checked as _check_outputs would
                else:
                    outs = self._check_outputs(item, out)
            except BaseException as e:
                error = e
        del ins
        self._frames_complete(step, tag, item, outs, is_dead, error, t0, t1, todo)

    def _frames_complete(self, step, tag, item, outs, is_dead, error, t0, t1, todo) -> None:
        """Record, propagate outputs by the node's frame rules, schedule what became ready."""
        self._fail_or_record(step, item, outs, error, t0, t1)
        is_dead = (is_dead or tag[3]) and not item.stays_live
        ready: list[tuple] = []
        with step.lock:
            step.nodes_run += 1
            if step.error is None and outs is not None:
                if is_dead:
                    outs = item.dead_outs
                frame, it = tag[1], tag[2]
                if item.loop_kind == NORMAL:  # _propagate's common case, inlined
                    it.outstanding += self._activate(item, outs, is_dead, frame, it, ready) - 1
                    if not it.outstanding and frame.parent is not None and self._cleanup(frame, it, ready):
                        self._delete_frame(frame, ready)
                else:
                    self._propagate(frame, it, item, outs, is_dead, ready)
            step.outstanding += len(ready) - 1
            finished = step.outstanding == 0
            # (a bool, never the parked dict itself: another thread may park into it before the test below)
            deadlocked = step._went_quiet() if finished or step.parked else False
        if deadlocked:
            step._deadlocked()
        if finished:
            self._frames_finish(step)
        elif ready:
            self._frames_schedule(step, ready, todo)

    def _frames_finish(self, step: StepHandle) -> None:
        """End the step; a loop still waiting when nothing can run any more is an error."""
        if step.error is None and step.root.children:
            frame = next(iter(step.root.children.values()))
            while frame.children:
                frame = next(iter(frame.children.values()))
            it = next(iter(frame.iters.values()))
            start = self._frame_pending
            waiting = [self._nodes[i].name for i, p in enumerate(it.pending) if 0 < p < start[i]]
            self._fail(step, None, RuntimeFailure(
                f"loop frame '{frame.name}' on {self.device.name} never finished: iteration {it.n} "
                f"waits for inputs that never arrive" + (f" (at {', '.join(waiting[:3])})" if waiting else ""),
                node=waiting[0] if waiting else None,
            ))  # fmt: skip
        step._finish()

    # --- frame bookkeeping (under step.lock) --------------------------------------------------------

    def _propagate(self, frame: _Frame, it: _Iteration, item: NodeItem, outs, is_dead: bool, ready) -> None:
        kind = item.loop_kind
        if kind == NORMAL:
            self._adjust(frame, it, self._activate(item, outs, is_dead, frame, it, ready) - 1, ready)
            return
        if kind == ENTER:
            self._enter(item, outs, is_dead, frame, it, ready)
        elif kind == EXIT:
            if not is_dead:
                pit = frame.parent_iter
                pit.outstanding += self._activate(item, outs, False, frame.parent, pit, ready)
            elif it.n == frame.count:
                frame.dead_exits.append(item)
        elif not is_dead:  # NextIteration: a dead value goes no further
            self._next_iteration(item, outs[0], frame, it, ready)
        self._adjust(frame, it, -1, ready)

    def _enter(self, item: NodeItem, outs, is_dead: bool, frame: _Frame, it: _Iteration, ready) -> None:
        key = (it.n, item.enter_frame)
        child = frame.children.get(key)
        if child is None:
            child = _Frame(
                f"{frame.id}/{it.n}/{item.enter_frame}", item.enter_frame, frame, it, item.enter_par,
                self._frame_enters[item.enter_frame], self._slot_count, self._frame_pending,
            )  # fmt: skip
            frame.children[key] = child
            it.frames += 1
        child.pending_inputs -= 1
        # Iteration 0 lives until every Enter has arrived, so it is there.
        first = child.iters[0]
        if item.enter_const:
            child.invariants.append((item, outs))
            for i in child.iters.values():
                i.outstanding += self._activate(item, outs, is_dead, child, i, ready)
            self._adjust(child, first, 0, ready)
        else:
            self._adjust(child, first, self._activate(item, outs, is_dead, child, first, ready), ready)

    def _next_iteration(self, item: NodeItem, value, frame: _Frame, it: _Iteration, ready) -> None:
        if it.n == frame.count:
            if frame.n_iters == frame.max_iters:  # parallel_iterations reached: wait for room
                frame.next_roots.append((item, value))
                return
            nxt = self._new_iteration(frame, ready)
        else:
            nxt = frame.iters[it.n + 1]
        self._adjust(frame, nxt, self._activate(item, (value,), False, frame, nxt, ready), ready)

    def _new_iteration(self, frame: _Frame, ready) -> _Iteration:
        """Start the frame's next iteration with the waiting NextIteration values and the loop
        invariants."""
        frame.count += 1
        it = frame.iters[frame.count] = _Iteration(frame.count, self._slot_count, self._frame_pending)
        frame.n_iters += 1
        frame.dead_exits.clear()
        n = 0
        for item, value in frame.next_roots:
            n += self._activate(item, (value,), False, frame, it, ready)
        frame.next_roots.clear()
        for item, outs in frame.invariants:
            n += self._activate(item, outs, outs[0] is DEAD, frame, it, ready)
        it.outstanding += n
        return it

    def _adjust(self, frame: _Frame, it: _Iteration, delta: int, ready) -> None:
        """Count ``delta`` more ready nodes in ``it``; at zero, finish what is done."""
        it.outstanding += delta
        if it.outstanding == 0 and frame.parent is not None and self._cleanup(frame, it, ready):
            self._delete_frame(frame, ready)

    def _cleanup(self, frame: _Frame, it: _Iteration, ready) -> bool:
        """Drop the done iterations from ``it`` on (starting a waiting one for each); returns
        whether the whole frame is done."""
        iters = frame.iters
        if iters.get(it.n) is not it:
            return False
        n = it.n
        while self._iteration_done(frame, it):
            del iters[n]
            frame.n_iters -= 1
            n += 1
            if frame.next_roots:
                self._new_iteration(frame, ready)
            if n > frame.count:
                break
            it = iters[n]
        return frame.pending_inputs == 0 and frame.n_iters == 0

    @staticmethod
    def _iteration_done(frame: _Frame, it: _Iteration) -> bool:
        if it.outstanding or it.frames:
            return False
        return frame.pending_inputs == 0 if it.n == 0 else (it.n - 1) not in frame.iters

    def _delete_frame(self, frame: _Frame, ready) -> None:
        """A finished frame: its dead exits go to the parent iteration, which may finish now."""
        parent, pit = frame.parent, frame.parent_iter
        for item in frame.dead_exits:
            pit.outstanding += self._activate(item, item.dead_outs, True, parent, pit, ready)
        del parent.children[(pit.n, frame.name)]
        pit.frames -= 1
        self._adjust(parent, pit, 0, ready)

    def _activate(self, item: NodeItem, outs, is_dead: bool, frame: _Frame, it: _Iteration, ready) -> int:
        """Deliver ``item``'s outputs to its consumers in (frame, it); append the consumers that
        became ready to ``ready`` and return how many did."""
        if item.to_merge:
            return self._activate_merges(item, outs, is_dead, frame, it, ready)
        # No consumer is a Merge (TF's fast path): each input counts one down.
        slots, pending, dead = it.slots, it.pending, it.dead
        n = 0
        for k, edges in item.loop_edges:
            v = outs[k]
            for slot, dst in edges:
                slots[slot] = v
                i = dst.id
                if v is DEAD:
                    dead.add(i)
                p = pending[i] = pending[i] - 1
                if p == 0:
                    ready.append((dst, frame, it, i in dead))
                    n += 1
        for dst in item.loop_ctrl:
            i = dst.id
            if is_dead:
                dead.add(i)
            p = pending[i] = pending[i] - 1
            if p == 0:
                ready.append((dst, frame, it, i in dead))
                n += 1
        return n

    def _activate_merges(
        self, item: NodeItem, outs, is_dead: bool, frame: _Frame, it: _Iteration, ready
    ) -> int:
        """``_activate`` when a consumer is a Merge: it counts live inputs (bit 0 of its pending
        count), dead ones (fires dead when all are, or on a dead Enter) and controls (2 each)."""
        slots, pending, dead = it.slots, it.pending, it.dead
        n = 0
        for k, edges in item.loop_edges:
            v = outs[k]
            for slot, dst in edges:
                i = dst.id
                if dst.is_merge:
                    if v is DEAD:
                        c = it.merge_dead[i] = it.merge_dead.get(i, 0) + 1
                        if pending[i] == 1 and (c >= dst.merge_dead_at or item.loop_kind == ENTER):
                            pending[i] = 0
                            ready.append((dst, frame, it, True))
                            n += 1
                    elif pending[i] & 1:  # the first live input; any later one is ignored
                        slots[slot] = v
                        p = pending[i] = pending[i] - 1
                        if p == 0:
                            ready.append((dst, frame, it, False))
                            n += 1
                    continue
                slots[slot] = v
                if v is DEAD:
                    dead.add(i)
                p = pending[i] = pending[i] - 1
                if p == 0:
                    ready.append((dst, frame, it, i in dead))
                    n += 1
        for dst in item.loop_ctrl:
            i = dst.id
            if dst.is_merge:
                p = pending[i] = pending[i] - 2
                if p == 0:
                    ready.append((dst, frame, it, False))
                    n += 1
                elif p == 1 and it.merge_dead.get(i, 0) >= dst.merge_dead_at:
                    pending[i] = 0
                    ready.append((dst, frame, it, True))
                    n += 1
                continue
            if is_dead:
                dead.add(i)
            p = pending[i] = pending[i] - 1
            if p == 0:
                ready.append((dst, frame, it, i in dead))
                n += 1
        return n
