"""Async replicas' own step loops: each worker task its own client, as in TF's between-graph
replication.

In async training the driver takes no part in a step. It hands worker ``k`` a chunk of steps
(its shard's batches ``j .. j + count - 1``) and the worker runs them itself, with a
``ClusterSession`` of its own over the same tasks: its own piece runs in-process
(``ClusterSession.local``) and each ps is called through Ray once a step, its updates together
with its reads for the next step (``prefetch_reads``), as the worker loop of a plain-Ray
parameter server. The driver claims steps, runs the chief's hooks on each chunk's reports and,
on a stop request, tells every loop to stop after its current step (``stop``). The chief's
loop fetches the summaries in its own steps when due (``summaries_fetched_here``), as TF's
chief runs the summary op with its train op, and reports their values for the driver to write.

A loop is keyed by the trainer's run and its recovery generation: after a recovery the driver
sends a new key and the worker rebuilds its session over the tasks as they are now.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .remote_rendezvous import pack_error

CHUNK_S = 0.05  # a chunk's target length: the driver's share of a step stays small, its view fresh
CHUNK_MAX = 32
# A gap between chunks longer than this is a pause (the driver throttling the worker, a
# recovery elsewhere): the reads prefetched before it are dropped. The ordinary gap, the
# driver's turn between two chunks (~1-3 ms), is no pause: dropping there cost an extra
# round trip to the ps on one step in eight (digits MLP, 1 worker: 256 chunks in 2000 steps).
PAUSE_S = CHUNK_S
NEED_RECIPE = "need-recipe"


@dataclass
class LoopRecipe:
    """What a worker needs to run its replica's steps (sent once per key, by reference)."""

    run: str  # the trainer's run: ``stop`` names it
    key: str  # run + recovery generation
    task: str
    cluster_spec: Any
    graph_def: Any
    graph_seed: int | None
    strategy: str
    lossy_transfers: bool
    fetches: list[str]  # the loss and the global step's read
    targets: list[str]
    shard: Any  # ShardBatches: this worker's batches
    training_flag: str | None
    # The chief's summaries (key -> tensor, SummarySaverHook.fetches), fetched in its own step
    # as TF's chief does, at least every ``summary_every`` global steps; none on the others.
    summaries: dict[str, str] = field(default_factory=dict)
    summary_every: int = 0


class ReplicaLoop:
    def __init__(self, worker, recipe: LoopRecipe, stopped: bool) -> None:
        from .engine import Cluster
        from .replicas import replica_session

        cluster = Cluster(recipe.cluster_spec)
        cluster.actors = dict(worker.peers)  # the driver's tasks: this session starts none
        self.recipe = recipe
        self.session = replica_session(recipe.graph_def, cluster, recipe.graph_seed, recipe.strategy, recipe.task,
                                       recipe.lossy_transfers)  # fmt: skip
        self.session.prefetch_reads = True
        self.session.local = (recipe.task, worker)
        self.stopped = stopped
        self.steps = 0
        self.pauses = 0  # chunks begun after a pause (their first step reads afresh)
        self.last_end, self.last_step_s = 0.0, 0.0  # when the last chunk ended, its time a step
        self.last_gs: int | None = None  # the global step after this loop's last step
        self.summarized: int | None = None  # ... after its last step that fetched the summaries

    def _summaries_due(self) -> bool:
        """TF's step timer: the first step, then one whose global step may reach the next
        multiple of ``summary_every`` past the last summarized one (the global step moves on
        between this loop's steps when other workers train too)."""
        if not self.recipe.summaries:
            return False
        if self.summarized is None or self.last_gs is None:
            return True
        every = self.recipe.summary_every
        return (self.last_gs + 1) // every > self.summarized // every

    def run(self, j: int, count: int) -> tuple[list[tuple[float, int, dict]], tuple | None]:
        """Steps on batches ``j ..``: per step done (loss, the global step it made, the
        summaries' values it fetched, if any), and the packed error that ended the chunk early,
        if one did."""
        r = self.recipe
        done: list[tuple[float, int, dict]] = []
        if time.perf_counter() - self.last_end > max(PAUSE_S, 4 * self.last_step_s):  # paused: the others went on
            self.session.forget_prefetched()
            self.pauses += 1
        t0 = time.perf_counter()
        for i in range(count):
            if self.stopped:
                break
            due = self._summaries_due()
            fetches = r.fetches + list(r.summaries.values()) if due else r.fetches
            try:
                loss, gs, *more = self.session.run(fetches, replica_feeds(r.shard, j + i, r.training_flag),
                                                   targets=r.targets)  # fmt: skip
            except Exception as e:  # noqa: BLE001 - reported to the driver, which recovers or raises
                return done, pack_error(e)
            self.last_gs = int(gs) + 1  # read before its update (as TF's hooks' is): the step it made
            if due:
                self.summarized = self.last_gs
            done.append((float(loss), self.last_gs, dict(zip(r.summaries, more)) if due else {}))
        self.steps += len(done)
        if done:
            self.last_end = time.perf_counter()
            self.last_step_s = (self.last_end - t0) / len(done)
        return done, None

    def close(self) -> None:
        try:
            self.session.close()
        except Exception:  # a task already gone: nothing left to deregister there
            pass


class ReplicaLoops:
    """A TaskWorker's loops, by run (one per run; a new key replaces the run's old loop)."""

    def __init__(self, worker) -> None:
        self.worker = worker
        self.loops: dict[str, ReplicaLoop] = {}
        # Per run, its last loop's (steps, steps whose ps reads the step before prefetched, pauses):
        # how many ps calls its steps took (tests; kept after the loop closes).
        self.counts: dict[str, tuple[int, int, int]] = {}
        self.stopped: set[str] = set()
        self.lock = threading.Lock()

    def steps(self, recipe_box: list | None, key: str, j: int, count: int):
        """``recipe_box``: [the recipe's ref] when the driver sends it (in a list so Ray passes
        the ref itself); None: NEED_RECIPE comes back when this task has no loop of ``key``."""
        run = key.split("#")[0]
        with self.lock:
            loop = self.loops.get(run)
        if loop is None or loop.recipe.key != key:
            if recipe_box is None:
                return NEED_RECIPE
            import ray

            recipe = ray.get(recipe_box[0])
            if loop is not None:
                loop.close()
            loop = ReplicaLoop(self.worker, recipe, run in self.stopped)
            with self.lock:
                self.loops[run] = loop
        t0 = time.perf_counter()
        done, error = loop.run(j, count)
        self.counts[run] = (loop.steps, loop.session.reads_prefetched, loop.pauses)
        return done, error, time.perf_counter() - t0

    def stop(self, run: str) -> None:
        with self.lock:
            self.stopped.add(run)
            loop = self.loops.get(run)
        if loop is not None:
            loop.stopped = True

    def close(self, run: str) -> None:
        with self.lock:
            loop = self.loops.pop(run, None)
            self.stopped.discard(run)
        if loop is not None:
            loop.close()

    def clear(self) -> None:
        with self.lock:
            loops, self.loops = list(self.loops.values()), {}
        for loop in loops:
            loop.close()


def replica_feeds(shard, j: int, training_flag: str | None) -> dict:
    """A replica's feeds for its shard's batch ``j`` (the training flag on, if the model has one)."""
    feeds = dict(shard.batch(j))
    if training_flag:
        feeds[training_flag] = True
    return feeds


def summaries_fetched_here(graph_def, fetches: dict[str, str], task: str):
    """The chief's summary fetches made Identity copies on its ``task`` (the graph with them,
    and key -> copy). A summary step then fetches nothing from a ps: a variable's read the step
    sends the worker anyway is fetched from its copy there, a Const is copied there (the
    partitioner's Const copies), and the ps's first call is the piece every step calls, whose
    reads the step before prefetched (else a summary step and the one after it each cost the
    ps another call). A tensor of unknown dtype is fetched where it is."""
    from specflow.graph.graph_def import NodeDef, parse_input
    from specflow.ops.registry import get_op, output_dtypes

    nodes = graph_def.node_map()
    graph, out = graph_def.copy(), {}
    for i, (key, tensor) in enumerate(fetches.items()):
        ref = parse_input(tensor)
        try:
            dtype = output_dtypes(get_op(nodes[ref.node].op), nodes[ref.node].attrs)[ref.index]
        except Exception:  # noqa: BLE001 - an op whose attrs don't say: fetched where it is
            out[key] = tensor
            continue
        name = f"_chief_summaries/{i}"
        graph.nodes.append(NodeDef(name, "Identity", [tensor], task, {"T": dtype}))
        out[key] = f"{name}:0"
    return graph, out


def chunk_size(seconds: float, done: int) -> int:
    """The next chunk's steps: about CHUNK_S of them at the last chunk's pace."""
    if done <= 0:
        return 1
    return max(1, min(CHUNK_MAX, int(CHUNK_S * done / max(seconds, 1e-6))))
