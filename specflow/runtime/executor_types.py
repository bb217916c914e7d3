"""What the executor's three ways of running a step share (``executor.py``: the dataflow loop,
``straight_line.py``: a plain loop in topological order, ``frames.py``: loops with frames and
iterations): the op classes that steer them, the cost threshold, the call frame, the per-node
record built once per partition and the step handle.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from specflow.errors import RuntimeFailure

# Ops that run even when an input is dead: _Send must tell its receiver the value is dead, and
# Merge forwards whichever of its inputs is live.
RUNS_ON_DEAD_INPUT: set[str] = {"_Send", "Merge", "ControlTrigger"}  # ControlTrigger: live even so (TF)

# Ops that create or route dead tensors, or move values between loop frames, outside the plain
# "a dead input kills the node" rule (control_flow_ops): a partition holding one always runs on
# the dataflow loop (or, with loop ops, on frames), never on the straight line.
DEAD_TENSOR_OPS: set[str] = {"Switch", "Merge", "Enter", "Exit", "NextIteration"}

# Ops that move values between frames and iterations: a partition holding one runs on frames.
LOOP_OPS: set[str] = {"Enter", "Exit", "NextIteration"}

# Ops whose kernels take microseconds (no copies, no math): never worth a thread hop, so they
# always run on the thread that made them ready (TensorFlow's OpKernel::IsExpensive() == false).
INEXPENSIVE_OPS: set[str] = {
    "_Arg", "_Retval", "_Send", "Const", "Identity", "StopGradient", "NoOp", "VarHandleOp", "ReadVariableOp",
    "VarIsInitializedOp", "Rank", "Reshape", "ExpandDims", "Squeeze",
    "Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond",
}  # fmt: skip

# A kernel whose measured average is below this runs inline, never through the thread pool.
# A pool round trip (submit, wake a worker, hand the GIL over and back) costs 25-35 µs on the
# 2-core machine of benchmarks/README.md, and only the part of a kernel that releases the GIL
# runs in parallel, so a kernel must take several hops' worth to gain anything from the pool.
# The small training step's kernels measure 1-55 µs there (a busy machine inflates them), a
# 256x1024 MatMul milliseconds. Read as ``executor_types.INLINE_COST_NS`` (tests change it).
INLINE_COST_NS = 100_000

# A kernel's cost is a moving average: each run moves it 1/2**COST_SHIFT of the way to the new
# time, and a run counts as at most 4x the average plus INLINE_COST_NS, so one slow run (the
# thread preempted on a busy machine) does not reclassify a node, while a kernel that really
# got slower (a bigger batch fed to the same signature) crosses over within a few steps.
COST_SHIFT = 2

UNSET = object()
NO_OUTPUTS = object()  # the straight line's expected type for a node with no outputs


class CallFrame:
    """A step's arguments (feeds, read by ``_Arg``) and return values (fetches, set by ``_Retval``)."""

    __slots__ = ("args", "retvals", "_lock")

    def __init__(self, args=(), num_retvals: int = 0):
        self.args = list(args)
        self.retvals: list[Any] = [UNSET] * num_retvals
        self._lock = threading.Lock()

    def get_arg(self, index: int) -> Any:
        if not 0 <= index < len(self.args):
            raise RuntimeFailure(f"_Arg index {index} out of range: the step has {len(self.args)} feed(s)")
        return self.args[index]

    def set_retval(self, index: int, value: Any) -> None:
        with self._lock:
            if not 0 <= index < len(self.retvals):
                raise RuntimeFailure(
                    f"_Retval index {index} out of range: the step has {len(self.retvals)} fetch(es)"
                )
            if self.retvals[index] is not UNSET:
                raise RuntimeFailure(f"_Retval {index} set twice")
            self.retvals[index] = value

    def has_retval(self, index: int) -> bool:
        return self.retvals[index] is not UNSET


class NodeItem:
    """Everything a step needs about one node, resolved at build time (``cost`` is measured).

    The ``loop_*``/``enter_*`` fields are set only in partitions that run on frames (frames.py)."""

    __slots__ = (
        "id", "node", "name", "op", "fn", "is_async", "run_dead", "inexpensive", "static_cheap", "cost",
        "in_start", "n_in", "in_srcs", "nones", "n_out", "outputs", "out_flat", "frees", "ctrl_out",
        "checks", "check0", "ctx_template", "state", "dead_outs",
        "loop_kind", "loop_run_dead", "stays_live", "is_merge", "frame_io", "enter_frame", "enter_const", "enter_par",
        "loop_edges", "loop_ctrl", "to_merge", "merge_dead_at",
    )  # fmt: skip


# The done event of a step that finished before run_async returned (the straight line on the
# caller's thread): waiting on it returns at once, and no Event is built per step.
FINISHED = threading.Event()
FINISHED.set()


class StepHandle:
    """One running step of one executor: wait on it, read its error and memory high-water mark
    (``peak_live``: values held at once, tracked by the dataflow loop and the straight line; a
    step on frames keeps values per iteration and does not track it).

    Deadlock watch (``Rendezvous(partitions=n)``): ``parked`` holds this step's ``_Recv`` nodes
    waiting in the rendezvous (token -> (item, frame tag or None)). The step is *quiet* when
    every node it has under way is parked there (or it ended): only another partition's _Send
    can wake it. When every partition of the step is quiet and receivers still wait, no value
    can ever come, and the step fails naming them instead of hanging (``_went_quiet``)."""

    __slots__ = (
        "slots", "pending", "refs", "lock", "outstanding", "error", "dead", "stats", "extras",
        "step_id", "rendezvous", "live", "peak_live", "done_event", "callback", "nodes_run", "t0", "root",
        "parked", "quiet", "mem", "sizes",
    )  # fmt: skip

    def wait(self, timeout: float | None = None) -> bool:
        return self.done_event.wait(timeout)

    @property
    def done(self) -> bool:
        return self.done_event.is_set()

    def _finish(self) -> None:
        self._settle()
        if self.done_event.is_set():
            return
        self.done_event.set()
        if self.callback is not None:
            self.callback(self.error)

    def _went_quiet(self) -> bool:
        """Under ``lock``, after ``outstanding`` or ``parked`` changed: report a change between
        quiet and busy to the rendezvous; True when that left the whole step deadlocked (then
        call ``_deadlocked`` once the lock is released)."""
        quiet = self.outstanding == len(self.parked)
        if quiet is self.quiet:
            return False
        self.quiet = quiet
        return self.rendezvous.set_quiet(quiet)

    def _settle(self) -> None:
        """The step ran to its end (or failed): quiet for good."""
        with self.lock:
            found = not self.quiet and self.rendezvous.set_quiet(True)
            self.quiet = True
        if found:
            self._deadlocked()

    def _deadlocked(self) -> None:
        """Fail the step: every partition waits, and its parked receives can never complete."""
        rv = self.rendezvous
        stuck: dict[tuple, list[int]] = {}  # (device, _Recv, frame instance) -> iterations
        for h in list(rv.watched):
            for item, tag in list(h.parked.values()):
                frame = _frame_path(tag[1]) if tag is not None and tag[1].parent is not None else ""
                stuck.setdefault((h.extras["device"].name, item, frame), []).append(tag[2].n if tag else 0)
        where = []
        for (device, item, frame), iters in sorted(stuck.items(), key=lambda kv: kv[0][1].name)[:4]:
            attrs = item.ctx_template["attrs"]
            word = "iteration" if len(iters) == 1 else "iterations"
            at = f" in loop frame {frame} {word} {_spans(sorted(iters))}" if frame else ""
            where.append(
                f"'{item.name}' on {device}{at} (waits for {attrs['tensor_name']} from {attrs['send_device']})"
            )
        more = f" and {len(stuck) - 4} more" if len(stuck) > 4 else ""
        rv.abort(RuntimeFailure(
            "step deadlocked: every device is idle, and these receives wait for values no device "
            f"will send: {'; '.join(where)}{more}",
            node=min(item.name for _, item, _ in stuck) if stuck else None,
        ))  # fmt: skip


def _frame_path(frame) -> str:
    """A frame instance (frames.py's _Frame) as the user reads it: ``'outer'`` for a top-level
    loop, ``'inner' (in 'outer' iteration 3)`` for a nested one."""
    out = f"'{frame.name}'"
    while frame.parent is not None and frame.parent.parent is not None:
        out += f" (in '{frame.parent.name}' iteration {frame.parent_iter.n})"
        frame = frame.parent
    return out


def _spans(ns: list[int]) -> str:
    """``[1, 2, 3, 5]`` as ``1-3, 5``."""
    out: list[str] = []
    start = prev = ns[0]
    for n in [*ns[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ", ".join(out)


def describe(o: Any) -> str:
    if hasattr(o, "dtype") and hasattr(o, "shape"):
        return f"a {type(o).__module__.split('.')[0]}.{type(o).__name__} of {o.dtype}"
    return f"a {type(o).__name__}"


def declared(want: np.dtype | None) -> str:
    if want is None:
        return "a resource handle"
    return "string" if want.kind == "O" else str(want)
