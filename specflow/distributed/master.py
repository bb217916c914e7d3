"""The master (TensorFlow's MasterSession), in the client process: a Session on a cluster.

``Session(graph_def, cluster=...)`` returns a :class:`ClusterSession`: the same ``run``,
``extend`` and ``close``, and the same call resolution and feed checks (inherited). What differs
is the plan and the step:

- plan (once per signature): prune -> optimize -> place on every device of the cluster ->
  partition by task (``placement.py``, ``task_partition.py``); each involved task gets its piece,
  one GraphDef, once (RegisterGraph) under a handle, and partitions it by device itself;
- step: RunGraph on every involved task with one step id and the feeds its ``_Arg``s read, all
  submitted at once; the master gathers each task's ``_Retval`` values. Cross-task tensors go
  by the dataflow protocol when the tasks' transfers form no cycle (each task's held outbox is
  returned and passed by reference to the tasks downstream, so no task calls another: the
  fewest messages Ray allows, as a plain-Ray parameter server), else by the push protocol (the
  tasks deliver to each other, ``remote_rendezvous.py``; the master watches a slow step for a
  deadlock across tasks, ``deadlock_watch.py``). A task's step state is freed when its RunGraph
  ends (CleanupGraph is sent only for a step the master gave up on: a timeout);
- close: DeregisterGraph on every task; a cluster the session started is shut down.
"""

from __future__ import annotations

import itertools
import random
import time
from dataclasses import dataclass, field
from typing import Any

from specflow.errors import RuntimeFailure, SpecflowError
from specflow.graph.graph_def import GraphDef
from specflow.runtime.executor import CallFrame
from specflow.runtime.feeds import feed_specs
from specflow.runtime.session import Session, SessionConfig, _fetched, _Plan

from .deadlock_watch import WATCH_AFTER_S, WATCH_EVERY_S, DeadlockWatch
from .engine import Cluster, ensure_ray
from .placement import ClusterStep, TaskAssignment, compile_cluster_step
from .remote_rendezvous import pack_error, unpack_error
from .stages import MAX_STAGES, step_calls
from .task_partition import flow_group, piece_args, pure_read, split_virtual
from .wire import unwire, wire


@dataclass
class _ClusterPlan(_Plan):
    handle: str = ""
    step: ClusterStep | None = None
    tasks: list[str] = field(default_factory=list)
    args_of: dict[str, list[int]] = field(default_factory=dict)  # task -> the _Arg indices it reads
    # The dataflow protocol, when no cycle joins the tasks' transfers: (task, its run_graph_flow
    # with one return per downstream task + 1, [(upstream task, index of its outbox)], the
    # downstream tasks) in topological order; None: the push protocol.
    # A step cut into stages (``stages.py``) has one entry per stage's call ``TASK#s``, run as
    # handle ``HANDLE#s`` with step id ``step_id + s``.
    flow: list[tuple[str, Any, list[tuple[str, int]], list[str]]] | None = None
    calls: dict[str, tuple[str, int]] = field(default_factory=dict)  # flow entry -> (handle, step id offset)
    # Dataflow: tasks whose result the master waits for (they set fetches or send to no task;
    # the others' success shows in their downstream tasks' results), and the pairs of tasks
    # that exchange a batch each step.
    awaited: set[str] = field(default_factory=set)
    flow_batches: int = 0
    # Tasks whose piece may change their state (all but pure reads), and for each pure-read
    # task its last outboxes with the task's write epoch then (``_submit_flow``).
    writers: list[str] = field(default_factory=list)
    reads: dict[str, tuple[int, list]] = field(default_factory=dict)
    # Stages: a task's last call (its updates, sending to no task) -> its first (a pure read of
    # its variables, no inbox), which async replicas prefetch in the same call for the next
    # step (``prefetch_reads``); the prefetched outboxes: (the task's other-writes count, refs).
    prefetch: dict[str, str] = field(default_factory=dict)
    prefetched: dict[str, tuple[int, Any, list]] = field(default_factory=dict)  # (.., its result ref, outboxes)
    # Per prefetched first call: its piece as JSON when it reads no feed. Two plans of a session
    # whose first calls there are the same piece read the same values: one may take the other's
    # prefetched reads (an epoch's short last batch has a plan of its own).
    read_piece: dict[str, str] = field(default_factory=dict)
    down_of: dict[str, list[str]] = field(default_factory=dict)
    # Per flow entry: Ray call options putting it in its task's serial "flow" group, when its
    # piece never waits on another call (``flow_group``); {} leaves it in the default group.
    group_of: dict[str, dict] = field(default_factory=dict)


class ClusterSession(Session):
    def __init__(self, graph_def: GraphDef, config: SessionConfig | None = None, cluster: Any = None):
        if isinstance(cluster, Cluster):
            self.cluster, self._owns_cluster = cluster, False
        else:
            self.cluster, self._owns_cluster = Cluster(cluster), True
        spec = self.cluster.spec
        super().__init__(spec.constrained(graph_def), config)
        self.assignment = TaskAssignment(spec)
        rng = random.Random()
        self.cluster_incarnations = {d: rng.getrandbits(63) or 1 for d in spec.all_devices}
        # Step ids unique across the sessions sharing the tasks.
        self._step_ids = itertools.count(rng.getrandbits(40) << 20, MAX_STAGES)  # a stage adds its index
        self._handles = itertools.count()
        self._session_id = f"{rng.getrandbits(48):x}"
        self.cross_task_batches = 0  # batches of tensors sent between tasks, over all steps
        self.reads_reused = 0  # pure-read tasks' outboxes passed on again instead of a call
        self.notices = list(spec.notices)
        # The dataflow protocol for plans whose tasks' transfers form no cycle; False forces the
        # push protocol everywhere (benchmarks compare the two).
        self.dataflow = True
        # False: call a pure-read task every step (benchmarks measure the transfer itself).
        self.reuse_reads = True
        # A step whose tasks send both ways (training on a ps) cut into stages run as dataflow;
        # False keeps such steps on the push protocol (benchmarks compare the two).
        self.stages = True
        # An async training replica's (Hogwild): a ps's updates of one step and its reads for the
        # next run in one call, the reads made right after the updates instead of at the next
        # step's start; a write by anything else in between (a restore, a reset) voids them.
        self.prefetch_reads = False
        self.reads_prefetched = 0  # steps whose first reads came from the step before
        # (task, its TaskWorker) when this session runs inside that task's process (an async
        # replica's own loop, ``replica_loop.py``): its calls there run in-process, not via Ray.
        self.local: tuple[str, Any] | None = None

    @property
    def device_names(self) -> list[str]:
        return self.cluster.spec.all_devices

    def extend(self, graph_def: GraphDef) -> None:
        super().extend(self.cluster.spec.constrained(graph_def))

    # --- plans -------------------------------------------------------------------------------

    def compile(self, feeds, fetches, targets, shapes=None) -> ClusterStep:
        """The signature placed and partitioned by task (no Ray needed: inspect uses it)."""
        return compile_cluster_step(
            self.graph_def, self.cluster.spec, self.assignment,
            feeds=feeds, fetches=fetches, targets=targets,
            soft_placement=self.config.soft_placement, cost_model=self.config.cost_model,
            measured_costs=dict(self.measured_costs), incarnations=dict(self.cluster_incarnations),
            optimize_graph=self.config.optimize, feed_shapes=shapes, unroll_limit=self.config.unroll_limit,
            lossy_transfers=self.config.lossy_transfers,
        )  # fmt: skip

    def _build_plan(self, feeds, fetches, targets, shapes) -> _ClusterPlan:
        step = self.compile(feeds, fetches, targets, shapes)
        ray = ensure_ray(self.cluster.address)
        self.cluster.connect()
        handle = f"{self._session_id}/{next(self._handles)}"
        actors = self.cluster.actors
        seed = self.config.graph_seed
        incarnations = self.cluster_incarnations
        _, graphs, order = step_calls(step.graphs, self.dataflow, self.stages)
        calls = {t: (handle, 0) if s is None else (f"{handle}#{s}", s) for t in graphs for _, s in [split_virtual(t)]}
        here = self.local[0] if self.local is not None else None
        try:
            ray.get([actors[split_virtual(t)[0]].register_graph.remote(calls[t][0], g, seed, incarnations)
                     for t, g in graphs.items() if split_virtual(t)[0] != here])  # fmt: skip
        except ray.exceptions.RayError as e:  # a task died before its first step (a checkpoint's first save)
            raise RuntimeFailure(f"a task of the cluster failed: {ray_error_line(e)}") from None
        for t, g in graphs.items():
            if split_virtual(t)[0] == here:  # this process's task: registered in-process
                self.local[1].register_graph(calls[t][0], g, seed, incarnations)
        args_of = {t: piece_args(g) for t, g in graphs.items()}
        plan = _ClusterPlan(feeds, feed_specs(self.graph_def, feeds), fetches, [], step.graphs, handle=handle,
                            step=step, tasks=step.tasks, args_of=args_of, calls=calls)  # fmt: skip
        plan.writers = sorted({split_virtual(t)[0] for t, g in graphs.items() if not pure_read(g)})
        if order is not None:
            plan.flow = []
            for t, down, up in order:
                method = actors[split_virtual(t)[0]].run_graph_flow
                group = plan.group_of[t] = flow_group(graphs[t])
                plan.flow.append((t, method.options(**group, **({"num_returns": 1 + len(down)} if down else {})), up, down))
                if not down or any(n.op == "_Retval" for n in graphs[t].nodes):
                    plan.awaited.add(t)
                plan.flow_batches += len(up)
                plan.down_of[t] = down
            plan.prefetch = _prefetch_pairs(order, graphs)
            plan.read_piece = {t: graphs[t].to_json(None) for t in plan.prefetch.values() if not args_of[t]}
        return plan

    # --- a step ------------------------------------------------------------------------------

    def _run_step(self, plan: _ClusterPlan, args: list, timeout_s: float | None, stats) -> list:
        if stats is not None:
            raise SpecflowError("tracing a step (--trace, options={'trace': True}) is not supported on a cluster yet")
        import ray

        step_id = next(self._step_ids)
        n_ret = len(plan.fetches)
        epochs = self.cluster.write_epochs
        hogwild = self.prefetch_reads
        if plan.writers:  # a pure read cached before this step is stale once it starts
            epochs.bump(plan.writers, hogwild)
        refs, unawaited, every, prefetched = [], [], [], []  # every: all the step's result and outbox refs
        try:
            if plan.flow is not None:
                refs, unawaited, reads = self._submit_flow(plan, step_id, args, every, prefetched)
            else:
                refs, unawaited, reads = self._submit_push(plan, step_id, args), [], []
            results = self._wait(plan, step_id, refs, timeout_s)
            if unawaited and any(r[1] is not None for r in results):  # an upstream failure's root cause
                results += _values(unawaited)
        except KeyboardInterrupt:  # Ctrl-C in the client stops the step on every task too
            self._abort(plan, step_id, RuntimeFailure("the step was interrupted"))
            raise
        except ray.exceptions.RayError as e:  # a task died
            _settle(refs + unawaited + every)
            raise RuntimeFailure(f"a task of the cluster failed: {ray_error_line(e)}") from None
        except SpecflowError:  # a timeout or a deadlock the watch found: the calls still out fail later
            _settle(refs + unawaited + every, wait_s=0.2)
            raise
        finally:
            if plan.writers:  # and so is one made while it ran
                epochs.bump(plan.writers, hogwild)
        frame = CallFrame((), n_ret)
        root = None
        self.cross_task_batches += plan.flow_batches if plan.flow is not None else sum(sum(r[2].values()) for r in results)
        for values, packed, _, from_peer in results:
            if packed is not None and (root is None or (root[1] and not from_peer)):
                root = (packed, from_peer)  # the task where the error began is the root cause
            for i, v in values.items():
                frame.retvals[i] = v
        if root is not None:
            raise unpack_error(root[0])
        for t, epoch, boxes in reads:
            if epochs.get(split_virtual(t)[0]) == epoch:  # no step that may write the task ran meanwhile
                plan.reads[t] = (epoch, boxes)
        for t, other, result, boxes in prefetched:
            plan.prefetched[t] = (other, result, boxes)
        if plan.writers and len(self._plans) > 1:  # this step wrote there after the others' prefetched reads
            self._forget_prefetched(plan.writers, but=plan)
        return _fetched(plan, frame)

    def _submit_push(self, plan: _ClusterPlan, step_id: int, args: list) -> list:
        """The push protocol: every task's RunGraph at once; tasks push tensors to each other."""
        actors, n_args, n_ret = self.cluster.actors, len(args), len(plan.fetches)
        return [
            actors[t].run_graph.remote(plan.handle, step_id, {i: args[i] for i in plan.args_of[t]}, n_args, n_ret,
                                       plan.tasks)  # fmt: skip
            for t in plan.tasks
        ]

    def _wait(self, plan: _ClusterPlan, step_id: int, refs: list, timeout_s: float | None) -> list:
        """The tasks' results; a step still running after WATCH_AFTER_S is watched for a
        deadlock across tasks (pushing only: a dataflow task's own watch sees every value it
        will get)."""
        import ray

        watch = DeadlockWatch(plan.tasks) if plan.flow is None else None
        if watch is None and timeout_s is None:
            return _values(refs)
        values, refs = refs, _refs_of(refs)
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        wait_s = WATCH_AFTER_S
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            slice_s = left if watch is None else (wait_s if left is None else min(wait_s, left))
            pending = ray.wait(refs, num_returns=len(refs), timeout=slice_s)[1] if slice_s is None or slice_s > 0 \
                else refs  # fmt: skip
            if not pending:
                return _values(values)
            if deadline is not None and time.monotonic() >= deadline:
                raise self._abort(plan, step_id, RuntimeFailure(f"step timed out after {timeout_s}s"))
            error = None if watch is None else watch.check(self.cluster.actors, step_id, refs, pending)
            if error is not None:
                raise self._abort(plan, step_id, error)
            wait_s = WATCH_EVERY_S

    def _submit_flow(self, plan: _ClusterPlan, step_id: int, args: list, every: list,
                     prefetched: list) -> tuple[list, list, list]:  # fmt: skip
        """The dataflow protocol: every task's RunGraph submitted at once, in topological order,
        each given its upstream tasks' outboxes as object refs. Ray starts a call when its
        arguments are ready, as its plain-Ray parameter server's ``worker.step.remote(
        ps.weights.remote())`` does, and the driver only waits for the results it needs: no
        task calls another, and large outboxes stay in the object store (zero-copy on the node).

        A task whose piece only reads its variables (``pure_read``: a ps serving weights) is not
        called again while no step that may write to it has run since its last outboxes: they
        are passed on as they are (the plain parameter server's weights ref, kept), which saves
        the step a round trip. Returns (the refs to wait for, the others' result refs, the pure
        reads made: (task, write epoch, outbox refs))."""
        n_args, n_ret = len(args), len(plan.fetches)
        epochs = self.cluster.write_epochs
        outs: dict[str, list] = {}
        refs, unawaited, reads = [], [], []
        for t, method, up, down in plan.flow:
            task = split_virtual(t)[0]
            ahead = self._take_prefetched(plan, t) if self.prefetch_reads else None
            if ahead is not None:
                other, result, boxes = ahead
                if other == epochs.other(task):  # read at the end of the last step, nothing else wrote since
                    outs[t] = boxes
                    every.extend([result, *boxes])
                    refs.append(result)  # its fetches (a global step read there) are this step's
                    self.reads_prefetched += 1
                    continue
                _settle([result], wait_s=0)  # void: read (and drop) its result, failed or not
            cached = plan.reads.get(t)
            if cached is not None and cached[0] == epochs.get(task):
                outs[t] = cached[1]
                self.reads_reused += 1
                continue
            boxes = [outs[u][k] for u, k in up]
            if self.local is not None and any(isinstance(b, _Part) for b in boxes):
                boxes = _values(boxes)  # parts of one object: sent on as values
            handle, off = plan.calls[t]
            call = (handle, step_id + off, {i: args[i] for i in plan.args_of[t]}, n_args, n_ret, down)
            then = plan.prefetch.get(t) if self.prefetch_reads else None
            if then is not None:  # this task's updates, then its reads for the next step
                then_handle, then_off = plan.calls[then]
                then_down = plan.down_of[then]
                then_call = (then_handle, next(self._step_ids) + then_off, {i: args[i] for i in plan.args_of[then]},
                             n_args, n_ret, then_down)  # fmt: skip
                method = self.cluster.actors[task].run_graph_flow_then
                group = plan.group_of[t] if plan.group_of[t] == plan.group_of[then] else {}
                if self.local is not None:  # every value comes to and from this process: one
                    # argument and one return object (Ray serializes each on its own), not 2 + n
                    if _refs_of(boxes):  # Ray resolves them as arguments
                        cell = _Cell(method.options(**group).remote(call, then_call, *boxes))
                    else:
                        packed = self.cluster.actors[task].run_graph_flow_then_packed
                        cell = _Cell(packed.options(**group).remote(wire((call, then_call, boxes))))
                    got = [_Part(cell, i) for i in range(2 + len(then_down))]
                    every.append(cell.ref)
                else:
                    got = method.options(num_returns=2 + len(then_down), **group).remote(call, then_call, *boxes)
                    every.extend(got)
                prefetched.append((then, epochs.other(task), got[1], got[2:]))  # awaited by the next step
                (refs if t in plan.awaited else unawaited).append(got[0])
                continue
            if self.local is not None and task == self.local[0]:
                got = self._run_here(call, boxes)
            else:
                got = method.remote(call, *boxes)
                every.extend(got if down else [got])
            result = got[0] if down else got
            if down:
                outs[t] = got[1:]
                if task not in plan.writers and self.reuse_reads:
                    reads.append((t, epochs.get(task), outs[t]))
            (refs if t in plan.awaited else unawaited).append(result)
        return refs, unawaited, reads

    def _take_prefetched(self, plan: _ClusterPlan, t: str):
        """``t``'s reads prefetched by the last step: by this plan's, or by another plan's
        whose first call on the task is the same piece (what each plan's would read)."""
        ahead = plan.prefetched.pop(t, None)
        piece = plan.read_piece.get(t)
        if ahead is not None or piece is None:
            return ahead
        task = split_virtual(t)[0]
        for other in self._plans.values():
            if other is plan or not getattr(other, "prefetched", None):
                continue
            for u in list(other.prefetched):
                same = other.read_piece.get(u) == piece and other.down_of.get(u) == plan.down_of.get(t)
                if split_virtual(u)[0] == task and same:
                    return other.prefetched.pop(u)
        return None

    def forget_prefetched(self) -> None:
        """Drop the reads prefetched by the last step (a replica's loop resuming after a pause:
        the next step reads the variables afresh rather than as they were then)."""
        self._forget_prefetched(None)

    def _forget_prefetched(self, tasks: list[str] | None, but: _ClusterPlan | None = None) -> None:
        """Drop the prefetched reads of ``tasks`` (None: all) in every plan but ``but``."""
        for plan in self._plans.values():
            ahead = getattr(plan, "prefetched", None)
            if not ahead or plan is but:
                continue
            gone = [t for t in ahead if tasks is None or split_virtual(t)[0] in tasks]
            _settle([ahead.pop(t)[1] for t in gone], wait_s=0)

    def _run_here(self, call: tuple, boxes: list):
        """This process's own task's call, run in-process: its upstream outboxes fetched here
        (Ray resolves them for a remote call), its result and outboxes returned as values,
        which Ray sends inline to the tasks downstream."""
        got = self.local[1].run_graph_flow(call, *_values(boxes), blob=False)
        return (_here(got[0]), *got[1:]) if call[5] else _here(got)

    def _abort(self, plan: _ClusterPlan, step_id: int, error: RuntimeFailure) -> RuntimeFailure:
        """Abort the step on every task (each aborts its rendezvous: pending receives fail at
        once) and forget its state there."""
        packed = pack_error(error)
        for t, (_, off) in plan.calls.items():  # a task cut into stages: each stage's step id
            self.cluster.actors[split_virtual(t)[0]].cleanup_graph.remote(step_id + off, packed)
        return error

    def _run_single(self, plan, args, stats):  # a cluster plan has no local executor
        return self._run_step(plan, args, None, stats)

    # --- lifetime ------------------------------------------------------------------------------

    def close(self) -> None:
        if self.closed:
            return
        handles = [h for p in self._plans.values() if isinstance(p, _ClusterPlan) for h, _ in p.calls.values()]
        if self.cluster.connected:
            import ray

            try:
                ray.get([a.deregister_graph.remote(handles) for a in self.cluster.actors.values()], timeout=10)
            except Exception:  # a task already gone: nothing left to deregister there
                pass
            if self._owns_cluster:
                self.cluster.shutdown()
        super().close()

    def __del__(self):
        try:
            if not self.closed and self._owns_cluster:
                self.cluster.shutdown()  # a session never closed: its tasks go with it
        except Exception:  # interpreter shutdown, Ray gone: nothing left to stop
            pass
        super().__del__()


def _settle(refs: list, wait_s: float = 1.0) -> None:
    """Read the results of a step that failed with a dead task, so Ray does not print each
    failed one as an "unhandled error" with its traceback when it is dropped (a call downstream
    of the dead task fails too, and its result would otherwise never be read)."""
    import ray

    refs = list(dict.fromkeys(_refs_of(refs)))
    try:
        done = ray.wait(refs, num_returns=len(refs), timeout=wait_s)[0] if refs else []
    except Exception:  # Ray itself gone (the client shutting down): nothing left to print either
        return
    for ref in done:
        try:
            ray.get(ref)
        except Exception:  # the failure already reported, or its consequence
            pass


class _Cell:
    """One object holding a call's several returns (``_Part``), fetched once; or, with no
    ref, a result made in this process (``_here``)."""

    __slots__ = ("ref", "value", "done")

    def __init__(self, ref, value=None, done: bool = False) -> None:
        self.ref, self.value, self.done = ref, value, done


class _Part:
    """Return ``index`` of a call whose returns came back as one object (a ``_Cell``)."""

    __slots__ = ("cell", "index")

    def __init__(self, cell: _Cell, index: int) -> None:
        self.cell, self.index = cell, index


def _here(result) -> _Part:
    """A call's result made in this process, among the refs a step waits for."""
    return _Part(_Cell(None, (result,), True), 0)


def _refs_of(items: list) -> list:
    """The Ray object refs behind a step's results: refs, and unfetched cells' refs."""
    import ray

    out = []
    for r in items:
        if isinstance(r, ray.ObjectRef):
            out.append(r)
        elif isinstance(r, _Part) and not r.cell.done:
            out.append(r.cell.ref)
    return out


def _values(items: list) -> list:
    """The values of a step's results (refs, ``_Part``s, plain values), with one ``ray.get``
    for every ref among them."""
    import ray

    refs = list(dict.fromkeys(_refs_of(items)))
    got = dict(zip(refs, ray.get(refs))) if refs else {}
    out = []
    for r in items:
        if isinstance(r, _Part):
            cell = r.cell
            if not cell.done:
                cell.value, cell.done = unwire(got[cell.ref]), True
            out.append(cell.value[r.index])
        elif isinstance(r, ray.ObjectRef):
            out.append(got[r])
        else:
            out.append(r)
    return out


def _prefetch_pairs(order, graphs: dict[str, GraphDef]) -> dict[str, str]:
    """Per task cut into stages: its last call (sending to no task) -> its first (a pure read
    of its variables that waits on nothing), when it has both: the pair an async replica runs
    as one call (``prefetch_reads``)."""
    by_task: dict[str, list[tuple[str, list, list]]] = {}
    for t, down, up in order:
        task, stage = split_virtual(t)
        if stage is not None:
            by_task.setdefault(task, []).append((t, down, up))
    pairs = {}
    for calls in by_task.values():
        calls.sort(key=lambda c: split_virtual(c[0])[1])
        (first, first_down, first_up), (last, last_down, _) = calls[0], calls[-1]
        if len(calls) >= 2 and not first_up and first_down and pure_read(graphs[first], fetches=True) and not last_down:
            pairs[last] = first
    return pairs


def ray_error_line(e: BaseException) -> str:
    """One line for a Ray error: a dead actor's first ("The actor died unexpectedly..."; a
    paragraph on why processes die follows), a task's exception its last (the message)."""
    import ray

    lines = str(e).strip().splitlines() or [type(e).__name__]
    return lines[0] if isinstance(e, ray.exceptions.RayActorError) else lines[-1]
