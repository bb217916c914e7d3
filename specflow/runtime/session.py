"""The local Session (TensorFlow's DirectSession): run fetches given feeds, on this process's devices.

For each new (feeds, fetches, targets) signature the graph goes through the pipeline once:
prune -> place -> partition -> one :class:`Executor` per partition. The executors are cached, so a
repeated ``run`` does no graph work: it converts the feeds, starts every partition's executor
with one shared Rendezvous and call frame, and collects the ``_Retval`` values.

Resources (variables, queues) live in the Session's devices, so they persist across ``run`` calls
and executor rebuilds.
"""

from __future__ import annotations

import itertools
import operator
import random
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from specflow.errors import GraphError, RuntimeFailure, SpecflowError, StepAborted, did_you_mean
from specflow.graph import dtypes
from specflow.graph.device_spec import DeviceSpec
from specflow.graph.graph_def import GraphDef, NodeDef, canonical_tensor, parse_input
from specflow.graph.topo import LOOP_BACK_EDGES, topological_order
from specflow.ops.registry import TensorSpec, get_op, output_dtypes
from specflow.runtime.abort import interrupted, raise_step_error
from specflow.runtime.devices import Device, local_devices
from specflow.runtime.executor import CallFrame, Executor
from specflow.runtime.executor_types import FINISHED, UNSET
from specflow.runtime.feeds import convert_feed, feed_specs
from specflow.runtime.pipeline import compile_step
from specflow.runtime.rendezvous import Rendezvous
from specflow.runtime.resource_homes import ResourceHomes
from specflow.runtime.step_stats import StepStats

_RUN_OPTIONS = ("trace",)
_MAX_SHAPE_PLANS = 8  # plans specialised to fed shapes, per call shape


@dataclass
class SessionConfig:
    devices: str | None = None  # "cpu:2,gpu:1"; None: one CPU plus every GPU
    soft_placement: bool = False
    cost_model: str = "estimated"  # or "measured": place with costs from traced steps
    graph_seed: int | None = None
    inter_op_threads: int | None = None  # per device; None: one per CPU core
    optimize: bool = True  # runtime/optimize.py; feeds of unknown shape get plans per fed shape
    unroll_limit: int = 2000  # unroll counted loops when trips x body nodes <= this; 0: keep loops
    compile_loops: bool = True  # other simple loops run as one generated function (runtime/loop_plan.py)
    lossy_transfers: bool = False  # float32 crossing devices or tasks as 16 bits (whitepaper 5.5)
    alap_recv: bool = True  # start each _Recv when its consumer is nearly ready (runtime/alap.py)


@dataclass
class _Plan:
    """Everything a signature needs, built once."""

    feeds: list[str]  # canonical tensor names, in _Arg index order
    feed_specs: list[TensorSpec]
    fetches: list[str]  # canonical, unique, in _Retval index order
    executors: list[Executor]
    partitions: dict[str, GraphDef]
    single: Executor | None = None  # the executor of a one-partition plan (Session._run_single)

    def __post_init__(self) -> None:
        if len(self.executors) == 1:
            self.single = self.executors[0]


@dataclass
class _Call:
    """A run call's shape resolved once: its plan, and how the caller's names map onto it."""

    plan: _Plan
    # per _Arg: (caller's key, TensorSpec, numpy dtype or None, rank or -1 (unknown), and the
    # (axis, size) of each known dim)
    feeds: list[tuple]
    fetch_pos: list[int | None]  # per flat fetch: its _Retval index (None: an op fetch)
    rebuild: Callable[[list], Any]
    # With feeds of unknown static shape: plans specialised to the fed shapes (plan is None),
    # at most _MAX_SHAPE_PLANS of them; the signature builds the generic plan past that.
    signature: tuple = ()
    by_shape: dict | None = None
    # A call fetching one tensor by name: its _Retval index (the result is that value).
    single_fetch: int | None = None


class Session:
    def __new__(cls, graph_def: GraphDef | None = None, config: SessionConfig | None = None, cluster: Any = None):
        # Session(graph, cluster=...) is the distributed master (specflow/distributed/master.py).
        if cluster is not None and cls is Session:
            from specflow.distributed.master import ClusterSession

            return super().__new__(ClusterSession)
        return super().__new__(cls)

    def __init__(self, graph_def: GraphDef, config: SessionConfig | None = None, cluster: Any = None):
        self.config = config or SessionConfig()
        self.graph_def = GraphDef(versions=dict(graph_def.versions), library=dict(graph_def.library))
        self._node_map: dict[str, NodeDef] = {}
        self._append(graph_def.nodes)
        self.devices: list[Device] = local_devices(self.config.devices, threads=self.config.inter_op_threads)
        self._by_name = {d.name: d for d in self.devices}
        self._homes = ResourceHomes(self.device_names, self.config.soft_placement)  # one device per variable
        rng = random.Random()
        self.incarnations = {d.name: rng.getrandbits(63) or 1 for d in self.devices}
        self._plans: dict[tuple, _Plan] = {}
        self._calls: dict[tuple, _Call] = {}  # see run(): call shape -> resolved call
        self._lock = threading.Lock()
        self._step_ids = itertools.count(1)
        self.measured_costs: dict[str, float] = {}
        # Kernel state by node name (random generators), shared by all executors; the trainer
        # saves and restores it so a resumed run draws the same numbers.
        self.kernel_state: dict[str, dict] = {}
        self.closed = False
        # Rendezvous of the steps running now (what abort() stops).
        self._running: set = set()

    @classmethod
    def from_spec(cls, path, overrides=None, config: SessionConfig | None = None) -> Session:
        """A Session on the graph of the YAML spec at ``path`` (``overrides`` as ``--set`` takes)."""
        import specflow

        return cls(specflow.load_spec(path, overrides).graph_def, config)

    # --- the graph -------------------------------------------------------------------------------

    def _append(self, nodes) -> None:
        seen = set(self._node_map)
        for n in nodes:
            if n.name in seen:
                raise GraphError(f"duplicate node name '{n.name}'", node=n.name, location=n.location)
            seen.add(n.name)
        added = [n.copy() for n in nodes]
        candidate = GraphDef(self.graph_def.nodes + added, self.graph_def.versions)
        # Every input names a node; no cycle but a loop's (through NextIteration -> Merge).
        topological_order(candidate, allow_back_edges=LOOP_BACK_EDGES)
        self.graph_def.nodes = candidate.nodes
        self._node_map.update((n.name, n) for n in added)

    def extend(self, graph_def: GraphDef) -> None:
        """Append nodes (TF's Session.Extend). Existing nodes never change, so cached executors
        stay valid. A name already in the graph is a GraphError."""
        self._check_open()
        with self._lock:
            self._append(graph_def.nodes)
            self.graph_def.library.update(graph_def.library)

    @property
    def device_names(self) -> list[str]:
        return [d.name for d in self.devices]

    # --- running -----------------------------------------------------------------------------------

    def run(
        self,
        fetches: Any,
        feeds: dict[str, Any] | None = None,
        targets: str | list[str] | None = None,
        options: dict | None = None,
        timeout_s: float | None = None,
        run_metadata: dict | StepStats | None = None,
    ) -> Any:
        """Run one step. ``fetches`` is a tensor name, a list/tuple or a dict of them (nested
        freely); the result has the same structure with numpy arrays (None for an op fetched
        for its side effect). ``feeds`` maps tensor names ("x" or "x:0") to values."""
        if self.closed:
            self._check_open()
        trace = options is not None and self._read_options(options)
        if feeds is None:
            feeds = {}
        # A call shaped like an earlier one (same fetches, feed keys in the same order, same
        # targets) reuses everything resolved from the names: the hot path of a training loop.
        key = _call_key(fetches, feeds, targets)
        call = self._calls.get(key) if key is not None else None
        if call is None:
            call = self._prepare_call(fetches, feeds, targets)
            if key is not None:
                self._calls[key] = call
        args = []
        for name, spec, want, ndim, fixed in call.feeds:
            v = feeds[name]
            # Already the right dtype and shape: no conversion, no copy (the dims checked inline:
            # this runs per feed per step).
            if type(v) is np.ndarray and v.dtype is want:
                shape = v.shape
                if ndim < 0 or len(shape) == ndim:
                    for axis, size in fixed:
                        if shape[axis] != size:
                            break
                    else:
                        args.append(v)
                        continue
            args.append(convert_feed(canonical_tensor(name), v, spec))
        plan = call.plan
        if plan is None:
            shapes = tuple(map(_shape_of, args))
            plan = call.by_shape.get(shapes) or self._shape_plan(call, shapes)
        stats = StepStats() if trace else None
        if timeout_s is None and plan.single is not None:
            values = self._run_single(plan, args, stats)
        else:
            values = self._run_step(plan, args, timeout_s, stats)
        if stats is not None:
            if self.config.cost_model == "measured":
                self.measured_costs.update(stats.measured_costs())
            if isinstance(run_metadata, StepStats):
                run_metadata.extend(stats)
            elif isinstance(run_metadata, dict):
                run_metadata["step_stats"] = stats
        if call.single_fetch is not None:  # one tensor name: its value, nothing to rebuild
            return values[call.single_fetch]
        return call.rebuild([None if p is None else values[p] for p in call.fetch_pos])

    def _prepare_call(self, fetches: Any, feeds: dict[str, Any], targets: Any) -> _Call:
        """Resolve a call's names once: op fetches become targets, tensors are canonicalised
        and deduplicated, feed keys checked; then the signature's plan."""
        names, rebuild = _flatten(fetches)
        targets = [targets] if isinstance(targets, str) else list(targets or [])
        fetch_list, fetch_pos = [], []  # unique tensors; where each flat fetch reads from
        for name in names:
            if self._is_op_fetch(name):
                targets.append(name)
                fetch_pos.append(None)
                continue
            t = canonical_tensor(name)
            if t not in fetch_list:
                fetch_list.append(t)
            fetch_pos.append(fetch_list.index(t))
        fed: dict[str, str] = {}  # canonical tensor -> the caller's key
        for key in feeds:
            if not isinstance(key, str):
                raise GraphError(f"feed keys are tensor names, got {key!r}")
            t = canonical_tensor(key)
            if t in fed:
                raise GraphError(f"tensor '{t}' is fed twice ('{key}')", node=parse_input(t).node)
            fed[t] = key
        signature = (sorted(fed), fetch_list, sorted(set(parse_input(t).node for t in targets)))
        try:
            specs = feed_specs(self.graph_def, signature[0])
        except (KeyError, SpecflowError):
            self._plan(*signature)  # pruning names the unknown feed or output
            raise
        specialise = self.config.optimize and any(not s.shape.is_fully_defined for s in specs)
        plan = None if specialise else self._plan(*signature)
        checks = []
        for t, spec in zip(signature[0], specs, strict=True):
            # The fast feed check needs a plain numpy dtype: strings and handles always convert.
            plain = spec.dtype.np_type is not None and spec.dtype != dtypes.string
            dims = spec.shape.dims
            ndim = -1 if dims is None else len(dims)
            fixed = () if dims is None else tuple((a, d) for a, d in enumerate(dims) if d is not None)
            checks.append((fed[t], spec, spec.dtype.numpy if plain else None, ndim, fixed))
        single = fetch_pos[0] if isinstance(fetches, str) and fetch_pos[0] is not None else None
        return _Call(plan, checks, fetch_pos, rebuild, signature, {} if specialise else None, single)

    def _shape_plan(self, call: _Call, shapes: tuple) -> _Plan:
        """The plan of ``call`` specialised to fed ``shapes`` (the generic one once enough
        shapes have been seen)."""
        if len(call.by_shape) >= _MAX_SHAPE_PLANS:
            return self._plan(*call.signature)
        plan = self._plan(*call.signature, shapes=shapes)
        call.by_shape[shapes] = plan
        return plan

    def _read_options(self, options: dict | None) -> bool:
        options = options or {}
        for k in options:
            if k not in _RUN_OPTIONS:
                raise SpecflowError(f"unknown run option '{k}'" + did_you_mean(k, _RUN_OPTIONS))
        return bool(options.get("trace", False))

    def _is_op_fetch(self, name: str) -> bool:
        """A bare node name whose op has no outputs (NoOp, an init group): run it, return None."""
        node = self._node_map.get(name)
        if node is None:
            return False
        try:
            return not output_dtypes(get_op(node.op), node.attrs)
        except (SpecflowError, KeyError):
            return False

    def _run_single(self, plan: _Plan, args: list, stats: StepStats | None) -> list:
        """``_run_step`` for one partition and no timeout (the common local case): this thread
        runs the step, and with no second partition the rendezvous needs no deadlock watch
        (no _Recv can wait for another device)."""
        step_id = next(self._step_ids)
        if stats is not None:
            stats.step_id = step_id
        frame = CallFrame(args, len(plan.fetches))
        rendezvous = Rendezvous()
        self._running.add(rendezvous)
        h = None
        try:
            h = plan.single.run_async(rendezvous=rendezvous, frame=frame, step_id=step_id, stats=stats, caller_runs=True)
            if h.done_event is not FINISHED and not h.done:  # it could not all run on this thread
                h.wait()  # (an async kernel, a loop)
        except KeyboardInterrupt:  # (one inside a kernel on this thread is the step's error instead)
            interrupted(rendezvous, [h] if h is not None else [])
        finally:
            self._running.discard(rendezvous)
        if h.error is not None:
            raise_step_error(h.rendezvous.error or h.error)
        return _fetched(plan, frame)

    def _run_step(self, plan: _Plan, args: list, timeout_s: float | None, stats: StepStats | None) -> list:
        step_id = next(self._step_ids)
        if stats is not None:
            stats.step_id = step_id
        rendezvous = Rendezvous(partitions=len(plan.executors))  # with its deadlock watch
        frame = CallFrame(args, len(plan.fetches))
        # Without a timeout this thread runs the last partition's first chain itself (a thread
        # hop less per step; all of it on the straight line); with one it must stay free to
        # notice the deadline.
        last = len(plan.executors) - 1
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        handles: list = []
        self._running.add(rendezvous)
        try:
            for i, ex in enumerate(plan.executors):
                handles.append(ex.run_async(rendezvous=rendezvous, frame=frame, step_id=step_id, stats=stats,
                                            caller_runs=timeout_s is None and i == last))
            for h in handles:
                if not h.done and not h.wait(None if deadline is None else max(0.0, deadline - time.monotonic())):
                    # Pending receives fail now, every executor stops before its next kernel; a
                    # kernel already running finishes in the background (the caller hears at once).
                    rendezvous.abort(StepAborted(f"step timed out after {timeout_s}s"))
                    raise rendezvous.error
        except KeyboardInterrupt:
            interrupted(rendezvous, handles)
        finally:
            self._running.discard(rendezvous)
        errors = [h.error for h in handles if h.error is not None]
        if errors:
            raise_step_error(rendezvous.error or errors[0])  # the first failure is the root cause
        return _fetched(plan, frame)

    def abort(self, error: BaseException | None = None) -> None:
        """Abort every step of this session running now, with ``error`` (default: StepAborted):
        each step's ``Rendezvous.abort``, which all its executors observe (runtime/abort.py).
        Safe from any thread or a signal handler; a step started later is not affected."""
        error = error if error is not None else StepAborted("step aborted")
        for rendezvous in list(self._running):
            rendezvous.abort(error)

    # --- plans -------------------------------------------------------------------------------------

    def _plan(
        self, feeds: list[str], fetches: list[str], targets: list[str], shapes: tuple | None = None
    ) -> _Plan:
        key = (tuple(feeds), tuple(fetches), tuple(targets), shapes)
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        with self._lock:
            plan = self._plans.get(key)
            if plan is None:
                plan = self._build_plan(feeds, fetches, targets, shapes)
                self._plans[key] = plan
        return plan

    def _build_plan(
        self, feeds: list[str], fetches: list[str], targets: list[str], shapes: tuple | None
    ) -> _Plan:
        graph = self.graph_def
        self._homes.update(graph)
        parts = compile_step(
            graph,
            self.device_names,
            constrain=self._homes.pin,
            feeds=feeds,
            fetches=fetches,
            targets=targets,
            soft_placement=self.config.soft_placement,
            cost_model=self.config.cost_model,
            measured_costs=dict(self.measured_costs),
            incarnations=dict(self.incarnations),
            optimize_graph=self.config.optimize,
            feed_shapes=shapes,
            unroll_limit=self.config.unroll_limit,
            lossy_transfers=self.config.lossy_transfers,
            alap_recv=self.config.alap_recv,
        ).partitioned.partitions
        executors = [
            Executor(
                g,
                self._by_name[DeviceSpec.parse(dev).to_string()],
                graph_seed=self.config.graph_seed,
                kernel_state=self.kernel_state,
                compile_loops=self.config.compile_loops,
            )
            for dev, g in parts.items()
        ]
        return _Plan(feeds, feed_specs(graph, feeds), fetches, executors, parts)

    def plan_for(
        self, fetches: Any, feeds: list[str] | None = None, targets: list[str] | None = None
    ) -> _Plan:
        """The cached (or new) plan of a signature: its partitions, for inspection."""
        names, _ = _flatten(fetches)
        return self._plan(
            sorted(canonical_tensor(f) for f in feeds or []),
            list(dict.fromkeys(canonical_tensor(n) for n in names)),
            sorted(set(targets or [])),
        )

    # --- lifetime ------------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeFailure("this session is closed")

    def close(self) -> None:
        """Release executors, thread pools and resources; later calls to run are errors."""
        if self.closed:
            return
        self.closed = True
        self._plans.clear()
        self._calls.clear()
        for d in self.devices:
            d.shutdown()
            d.resource_mgr.clear()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            if not self.closed:
                for d in self.devices:
                    d.shutdown()
        except Exception:  # interpreter shutdown: nothing left to release
            pass


# --- helpers ---------------------------------------------------------------------------------------


_shape_of = operator.attrgetter("shape")


def _call_key(fetches: Any, feeds: dict, targets: Any) -> tuple | None:
    """A hashable key for a call's shape, or None for fetch structures not worth caching
    (dicts, nesting): those resolve their names every call."""
    if isinstance(fetches, str):
        f: Any = fetches
    elif type(fetches) in (list, tuple):
        for x in fetches:  # loops, not all() over a generator: this runs every step
            if type(x) is not str:
                return None
        f = (type(fetches), *fetches)
    else:
        return None
    if targets is not None and not isinstance(targets, str):
        for x in targets:
            if type(x) is not str:
                return None
        targets = tuple(targets)
    return f, tuple(feeds), targets


# A fresh output's references at the fetch check (the list, the loop variable, getrefcount's
# argument); more: something else holds it. A fetch is the caller's to change, as in TF.
_FRESH_REFS = 3


def _fetched(plan: _Plan, frame: CallFrame) -> list:
    """The step's fetched values on the host; a fetch no _Retval set (dead) is an error."""
    out = frame.retvals
    for i in range(len(out)):  # (not enumerate: its reused tuple would hold one more reference)
        v = out[i]
        if type(v) is not np.ndarray:
            if v is UNSET:
                raise _dead_fetch(plan.fetches[i])
            v = out[i] = _to_host(v)
        if type(v) is np.ndarray and (sys.getrefcount(v) > _FRESH_REFS or not v.flags.writeable):
            out[i] = v.copy()  # held elsewhere too (a variable's value, a Const, a feed): the caller's own
    return out



def _dead_fetch(tensor: str) -> RuntimeFailure:
    return RuntimeFailure(
        f"fetch '{tensor}' produced no value (it is dead: on an untaken branch)",
        node=parse_input(tensor).node,
    )


def _flatten(fetches: Any) -> tuple[list[str], Callable[[list], Any]]:
    """Tensor names in ``fetches`` (a name, list/tuple or dict, nested) and a function that puts
    a flat list of values back into the same structure."""
    if isinstance(fetches, str):
        return [fetches], lambda vals: vals[0]
    if isinstance(fetches, dict):
        keys = list(fetches)
        parts = [_flatten(fetches[k]) for k in keys]
    elif isinstance(fetches, (list, tuple)):
        keys = None
        parts = [_flatten(f) for f in fetches]
    else:
        raise GraphError(f"fetches must be tensor names (a string, list or dict of them), got {fetches!r}")
    names = [n for p in parts for n in p[0]]
    sizes = [len(p[0]) for p in parts]
    kind = type(fetches)

    def rebuild(vals: list) -> Any:
        out, i = [], 0
        for (_, fn), n in zip(parts, sizes, strict=True):
            out.append(fn(vals[i : i + n]))
            i += n
        if keys is not None:
            return dict(zip(keys, out, strict=True))
        return tuple(out) if kind is tuple else out

    return names, rebuild


def _to_host(value: Any) -> Any:
    """A fetched value as numpy (GPU values are copied; resource handles pass through)."""
    if isinstance(value, np.ndarray) or not hasattr(value, "get"):
        return value
    return value.get()
