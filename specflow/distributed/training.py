"""``specflow train --cluster``: between-graph replicated training on Ray tasks.

The client is the chief's driver: it builds the training graph once (inputs stay Placeholders:
each worker's batches are fed from its own shard, ``train/sharding.py``), opens one replica per
worker (``replicas.py``), initializes or restores the variables on the ps tasks (each replica
waits until the model is ready, ``readiness.py``), then trains:

- ``async``: one thread per worker runs its replica's train op on its shard's next batch; the
  update is applied on the ps as soon as that worker's gradients arrive (Hogwild-style, as TF's
  between-graph async training). The global step counts every worker's updates.
- ``sync``: per global step ``s`` each worker pushes its gradients for its shard's batch ``s``
  into its slots on the ps (``sync_replicas.py``); once ``replicas_to_aggregate`` pushes of
  step ``s`` arrived the chief applies their average (one optimizer update, ``s`` -> ``s + 1``)
  and the workers start step ``s + 1`` from the new values. A straggler's push for an older
  step is dropped by its tag.

The chief alone (this process) holds the logdir's lock and writes checkpoints, summaries and
evaluations; a checkpoint is sharded by ps task (``sharded_checkpoint.py``) and restores in
either kind of run; it also holds each worker's generator states and input position (keys
``_specflow/replica_<k>/...``, which a local run ignores). Hooks see the global step.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

import numpy as np

from specflow.errors import OutOfRangeError, RuntimeFailure, StepLimitReached
from specflow.io.checkpoint import CheckpointManager
from specflow.io.summaries import SummaryWriter
from specflow.io.tensor_bundle import read_bundle
from specflow.train import state
from specflow.train.data import select
from specflow.train.evaluate import load_split
from specflow.train.graph import build_training_graph
from specflow.train.hooks import CheckpointSaverHook, SummarySaverHook
from specflow.train.loop import Trainer, TrainingError, TrainResult, has_run
from specflow.train.sharding import FILE_INDEX, ShardBatches

from .engine import Cluster
from .master import ray_error_line
from .readiness import Readiness
from .recovery import Recovery
from .remote_rendezvous import unpack_error
from .replica_loop import NEED_RECIPE, LoopRecipe, chunk_size, replica_feeds, summaries_fetched_here
from .replicas import (
    ReplicaAssignment,
    replica_random_streams,
    replica_sessions,
    replica_tasks,
    replicas_to_aggregate,
    training_cluster,
)
from .sharded_checkpoint import STATE_PREFIX, ShardedSaver
from .sync_replicas import SyncReplicas
from .training_plan import step_ends

# The steps/s shown and logged span at least this long: async workers report chunks of steps
# (about CHUNK_S each, replica_loop.py), so a shorter window reads one chunk's arrival.
RATE_WINDOW_S = 1.0


class DistributedTrainer(Recovery, Trainer):
    """A Trainer whose steps run on ``cluster`` (a ClusterSpec, or a connected Cluster to share)."""

    def __init__(self, spec, options, listener=None, *, cluster, address: str | None = None):
        super().__init__(spec, options, listener)
        dist = self.cfg.distributed
        self.mode = dist.mode if dist else "async"
        self.strategy = dist.placement if dist else "greedy"
        self.health_timeout_s = dist.health_timeout_s if dist else None
        self.last_restored: str | None = None
        if isinstance(cluster, Cluster):
            self.cluster, self._owns_cluster = cluster, False
        else:
            self.cluster, self._owns_cluster = Cluster(training_cluster(cluster), address=address), True
        self.tasks = replica_tasks(self.cluster.spec, spec)
        n = len(self.tasks)
        self.replicas_to_aggregate = replicas_to_aggregate(dist, n)
        self.worker_steps = [0] * n
        self.group_targets = False  # True: replicas target the train op's group itself (benchmarks A/B)
        # async: each worker runs its replica's steps itself (replica_loop.py); False: the driver
        # runs every step (benchmarks A/B)
        self.worker_loops = True
        self._run_id = f"{os.getpid()}-{id(self):x}-{time.monotonic_ns()}"
        self._recipes: dict[int, tuple[list, str]] = {}
        self._loops_over = threading.Event()
        self.worker_rates: dict[str, float] = {}

    # --- setup ------------------------------------------------------------------------------------

    def _setup(self) -> None:
        cfg = self.cfg
        if has_run(self.logdir) and not self.options.resume:
            raise TrainingError(f"{self.logdir} already holds a training run; pass --resume to continue it, or "
                             "choose another --logdir")  # fmt: skip
        self.checkpoints = CheckpointManager(self.logdir, keep=cfg.checkpoints.keep,
                                             keep_every_hours=cfg.checkpoints.keep_every_hours)  # fmt: skip
        latest = self.checkpoints.latest() if self.options.resume else None
        if self.options.resume and latest is None:
            raise TrainingError(f"--resume: {self.logdir} has no checkpoint to resume from")
        self.train_arrays, self.test_arrays = load_split(self.spec, cfg)
        n = len(self.tasks)
        self.sync = SyncReplicas(n) if self.mode == "sync" else None
        # async: the ps refuses an update past the last step (one in flight from a worker whose
        # reply was lost, its steps handed out again), so the run ends exactly there
        limit = self.total_steps if self.sync is None else None
        self.graph = build_training_graph(self.spec, cfg, None, replicas=self.sync, step_limit=limit)
        self.save_restore = state.add_save_restore(self.graph.builder, self.graph.variables)
        self.saver = ShardedSaver(self.graph.builder, self.save_restore, self._variable_tasks(),
                                  [_replica_key(k, "next_batch") for k in range(n)])  # fmt: skip
        local = self.sync.slots if self.sync is not None else []
        self.readiness = Readiness(self.graph.builder, list(self.save_restore.variables.values()) + local, local)
        self.ready_waits: list[tuple[int, float]] = []  # (worker, seconds it waited for the model)
        self._ready_gen = [-1] * n
        self.positions: list[int | None] = [None] * n  # async: each worker's next batch of its shard
        inputs = select(self.train_arrays, cfg.data.feeds)
        d = cfg.data
        files = self.train_arrays.get(FILE_INDEX)  # a tfrecord source: each worker takes its own files
        self.shards = [ShardBatches(inputs, k, n, batch_size=d.batch_size, shuffle=d.shuffle, seed=d.seed, files=files)
                       for k in range(n)]  # fmt: skip
        self.cluster.connect()
        sessions = replica_sessions(self.graph.graph_def, self.cluster, self.spec.model.seed, self.strategy,
                                    lossy_transfers=self.options.lossy(self.spec))
        self.session, self.replicas = sessions[0], sessions[1:]
        if self.mode == "async":  # Hogwild: a ps's updates and its reads for the replica's next step in one call
            for sess in self.replicas:
                sess.prefetch_reads = True
        self._start_health(self.health_timeout_s)
        self.prepare(latest)  # the chief's half of readiness; each replica waits for it (_wait_ready)
        self.logdir.mkdir(parents=True, exist_ok=True)
        self.writer = SummaryWriter(self.logdir)
        self.eval_writer = SummaryWriter(self.logdir / "eval")
        self.hooks = self._hooks()
        self.step_counter.min_secs = RATE_WINDOW_S

    def prepare(self, latest: str | None) -> None:
        """Initialize, or restore ``latest`` (on the ps tasks, shard by shard, after each
        worker's generators and input position), as the chief."""
        restore = None if latest is None else (lambda sess: self.saver.restore(sess, latest, self._set_replica_state))
        self.readiness.prepare(self.session, self.graph.init_op, restore)
        # The step restored, from the checkpoint itself: async replicas waiting for the model
        # resume as soon as it is ready, so a read here would count their first steps too.
        gs = self.graph.global_step
        saved = read_bundle(latest, [gs.name]).get(gs.name) if latest is not None else np.int64(0)
        self.step = int(saved) if saved is not None else int(self.session.run(gs.read))

    def _positions(self, step: int) -> dict[str, int]:
        """Each worker's next batch of its shard (sync: the global step's, for every worker)."""
        return {_replica_key(k, "next_batch"): step if j is None or self.sync is not None else j
                for k, j in enumerate(self.positions)}  # fmt: skip

    def _replica_rngs(self) -> dict:
        """Each worker's random ops' generator states."""
        import ray

        refs = [self.cluster.actors[t].rng_states.remote(_replica_key(k, "rng/")) for k, t in enumerate(self.tasks)]
        try:
            out = {key: v for got in ray.get(refs) for key, v in got.items()}
        except ray.exceptions.RayError as e:
            raise RuntimeFailure(f"a worker was lost while its state was read: {ray_error_line(e)}") from None
        return {**out, **_as_local_rngs(out)}

    def _set_replica_state(self, tensors: dict) -> None:
        import ray

        refs = []
        for k, t in enumerate(self.tasks):
            rng = _replica_key(k, "rng/")
            mine = {key: v for key, v in tensors.items() if key.startswith(rng)}
            if k == 0 and not mine:  # a local run's checkpoint: worker 0 goes on with its random stream
                mine = {rng + key[len(state.RNG_PREFIX):]: v for key, v in tensors.items()
                        if key.startswith(state.RNG_PREFIX)}  # fmt: skip
            refs.append(self.cluster.actors[t].set_rng_states.remote(mine, rng))
            if self.sync is None and _replica_key(k, "next_batch") in tensors:
                self.positions[k] = int(tensors[_replica_key(k, "next_batch")])
        try:
            ray.get(refs)
        except ray.exceptions.RayError as e:
            raise RuntimeFailure(f"a worker was lost while its state was restored: {ray_error_line(e)}") from None

    def _wait_ready(self, k: int) -> bool:
        """Replica ``k`` waits (once per recovery generation) until the chief's model is ready;
        False when the run was stopped meanwhile."""
        gen = self.gen
        if self._ready_gen[k] == gen:
            return True
        waited = self.readiness.wait(lambda: self.replicas[k], self._stop)
        if self._stop.is_set():
            return False
        self.ready_waits.append((k, waited))
        self._ready_gen[k] = gen
        return True

    def _ends(self, target: str) -> list[str]:
        """What a replica's step targets instead of ``target``, a group (NoOp) of updates on the
        ps tasks: the updates themselves. The group would sit on the worker and wait for a
        control message back from every ps after its updates; without it each task's part of
        the step ends with its own work (one message fewer per ps per step)."""
        return [target] if self.group_targets else step_ends(self.graph.graph_def, target)

    def _variable_tasks(self) -> dict[str, str]:
        """Checkpointed variable -> its ps task, as every replica's assignment decides it."""
        a = ReplicaAssignment(self.cluster.spec, self.tasks[0], self.strategy)
        a.update(self.graph.builder.graph_def)
        return {name: a.by_node[v.handle] for name, v in self.save_restore.variables.items()}

    def save(self, step: int) -> str:
        """A sharded checkpoint: each ps task writes its variables (``sharded_checkpoint.py``).
        Async: named by the global step read as it starts (TF's saver reads it too), which the
        workers' loops may have taken past the chief's view ``step``, and saved as that step
        (the variables, read a little later, may hold the updates of a few more)."""
        gen = self.gen
        try:
            if self.sync is None:
                step = max(step, int(self.session.run(self.graph.global_step.read)))
            path = self.checkpoints.save({}, step, write=lambda prefix: self.saver.write(
                self.session, prefix, step, self._positions(step), self._replica_rngs(),
                pinned={self.graph.global_step.name: step}))
        except RuntimeFailure as e:  # a task lost mid-save: no checkpoint was written (the index comes last)
            self.recover(gen, e)
            return self.last_checkpoint
        self.last_checkpoint = path
        self.listener.on_checkpoint(step, path)
        return path

    def eval_step(self, step: int) -> int:
        """Async: the global step read as the evaluation starts, as ``save`` names a checkpoint.
        The workers' loops run on while the chief's hooks run, so the model evaluated is that
        step's or a little later's, not the chief's view ``step`` (1 ps + 1 worker, a BN model:
        0.81 labelled step 200 was the model of step ~220)."""
        return step if self.sync is not None else max(step, self._global_step())

    def evaluate(self) -> dict[str, float]:
        """The held-out metrics. A task lost meanwhile (the run's last evaluation comes after its
        final save: a task killed then failed the run) is brought back, a ps from the latest
        checkpoint, and the evaluation runs again on the model as restored."""
        return self._after_recovery(super().evaluate)

    def _after_recovery(self, run):
        """``run()``; if a task was lost meanwhile, it again once the task is brought back."""
        gen = self.gen
        try:
            return run()
        except RuntimeFailure as e:
            self.recover(gen, e)
        return run()

    def _feeds(self, k: int, j: int) -> dict:
        return replica_feeds(self.shards[k], j, self.graph.training_flag)

    # --- the loop ---------------------------------------------------------------------------------

    def _run(self) -> TrainResult:
        try:
            self._setup()
            self.last_checkpoint = self.checkpoints.latest()
            start_step = self.step
            t0 = time.perf_counter()
            self._t0 = t0
            for h in self.hooks:
                h.begin(self)
            self.listener.on_start(self.step, self.total_steps)
            loss = None
            while True:
                loss = (self._train_sync() if self.sync is not None else self._train_async()) or loss
                at = self.step
                for h in self.hooks:
                    h.end(self)
                self._rewind_saver(at)
                if self._stop.is_set() or self.stopped_by == "end_of_data" or self.step >= self.total_steps:
                    break
                # A ps lost during the final save: its variables went back to the latest
                # checkpoint, so the steps since it are trained again, then saved again.
                self._notice(f"global step {self.step} after the restore: training on to {self.total_steps}")
            if self.stopped_by == "interrupt" and self.last_checkpoint is None:
                # Stopped before its first step (Ctrl-C while the tasks started): the hooks saw no
                # step to save, yet the run promised a final checkpoint; TF's saver hook writes
                # step 0 as the session starts.
                self.save(self.step)
        finally:
            self._close()
        return TrainResult(start_step=start_step, step=self.step, seconds=time.perf_counter() - t0,
                           stopped_by=self.stopped_by, last_loss=loss,
                           eval_metrics=dict(self.eval_hook.last_metrics) if self.eval_hook else {},
                           checkpoint=self.last_checkpoint)  # fmt: skip

    def _close(self) -> None:
        self._stop_health()
        for w in ("writer", "eval_writer"):
            if hasattr(self, w):
                getattr(self, w).close()
        for s in [getattr(self, "session", None), *getattr(self, "replicas", [])]:
            if s is not None:
                s.close()
        if self._owns_cluster:
            self.cluster.shutdown()

    def _after_step(self, step: int, loss: float, k: int, j: int, fetched: dict | None = None) -> None:
        """The chief's hooks for global step ``step``. ``fetched``: what the step itself fetched
        for them (an async worker's own loop; the chief's summaries); None: the hooks' fetches
        are evaluated here, on the batch worker ``k`` just used, ``j``."""
        self.step = max(self.step, step)
        got = {"loss": loss}
        extra: dict[str, str] = {}
        if fetched is not None:
            got.update(fetched)
        else:
            for h in self.hooks:
                extra.update(h.before_step(self, self.step - 1))
        if extra:
            gen = self.gen
            try:
                values = self.session.run(list(extra.values()), self._feeds(k, j))
                got.update(zip(extra, values))
            except RuntimeFailure as e:  # summaries of this step are skipped
                self.recover(gen, e)
        at = self.step
        for h in self.hooks:
            h.after_step(self, self.step, got)
        self._rewind_saver(at)
        elapsed = time.perf_counter() - self._t0
        self.worker_rates = {t: c / elapsed for t, c in zip(self.tasks, self.worker_steps)} if elapsed > 0 else {}
        self.listener.on_step(self.step, loss, self.step_counter.rate)
        on_workers = getattr(self.listener, "on_workers", None)
        if on_workers is not None:
            on_workers(self.worker_rates)

    def _rewind_saver(self, step: int) -> None:
        """The save of ``step`` failed and a lost ps set the run back to its latest checkpoint
        (``self.step < step``): the saver hook, which took ``step`` as saved, begins again at
        the restored step, so it saves when the run is back there (the run ended at the
        requested step with its final checkpoint an older one)."""
        if self.step < step:
            for h in self.hooks:
                if isinstance(h, CheckpointSaverHook):
                    h.begin(self)

    def _done(self) -> bool:
        return self._stop.is_set() or self.step >= self.total_steps

    def _train_async(self) -> float | None:
        reports: queue.SimpleQueue = queue.SimpleQueue()
        n = len(self.tasks)
        start = self.step // n  # each worker's next batch of its shard (the steps split evenly)
        self._claimed = self._seen = self.step  # steps handed out / reported to the chief
        # Workers run at most two chunks each past what the chief has seen: the progress bar and
        # the hooks stay the run's own.
        sizes = [1] * n  # each worker's chunk of steps (replica_loop.chunk_size)
        turn = threading.Condition()
        # The ps refused an update: the global step is at the last step (more updates reached
        # it than reports came back, a lost worker's in flight), so nothing more is handed out.
        at_limit = threading.Event()

        def claim(n: int = 1) -> int:
            """Hand out up to ``n`` steps (exactly total_steps updates, whoever runs them), or
            give back ``-n``; returns how many were handed out."""
            with turn:
                while n > 0 and self._claimed - self._seen >= 2 * sum(sizes) and not self._stop.is_set():
                    turn.wait(0.05)
                if n > 0:
                    n = 0 if self._stop.is_set() or at_limit.is_set() else min(n, self.total_steps - self._claimed)
                self._claimed += n
                turn.notify_all()
                return max(n, 0)

        def seen() -> None:
            with turn:
                self._seen += 1
                turn.notify_all()

        def work(k: int) -> None:
            if self.positions[k] is None:
                self.positions[k] = start
            try:
                while got := claim(sizes[k]):
                    gen = self.gen
                    j = self.positions[k]  # a restore may set it back
                    try:
                        if not self._wait_ready(k):
                            claim(-got)
                            break
                        done, error, seconds = self._replica_chunk(k, j, got)
                    except StepLimitReached:
                        claim(-got)
                        at_limit.set()
                        break
                    except RuntimeFailure as e:  # a lost task: recover (or re-raise), then go on
                        claim(-got)
                        self.recover(gen, e)
                        continue
                    for i, (loss, gs, fetched) in enumerate(done):
                        self.worker_steps[k] += 1
                        reports.put((k, j + i, loss, gs, gen, fetched))
                    if gen == self.gen:
                        self.positions[k] = j + len(done)
                    if len(done) < got:  # stopped, or failed part-way
                        claim(len(done) - got)
                    if error is not None:
                        failure = unpack_error(error)
                        if isinstance(failure, StepLimitReached):
                            at_limit.set()
                            break
                        self.recover(gen, failure)
                        continue
                    if self.worker_loops:
                        sizes[k] = chunk_size(seconds, len(done))
            except BaseException as e:  # noqa: BLE001 - re-raised in the chief's thread
                reports.put(e)
            finally:
                reports.put(None)

        self._loops_over.clear()  # a second pass, after a ps lost in the final save
        stopper = threading.Thread(target=self._stop_loops_on_request, name="stop-loops", daemon=True)
        stopper.start()
        threads = [threading.Thread(target=work, args=(k,), name=f"replica-{k}", daemon=True) for k in range(n)]
        for t in threads:
            t.start()
        loss, running, error = None, n, None
        try:
            while running:
                r = reports.get()
                if r is None:
                    running -= 1
                elif isinstance(r, BaseException):
                    error = error or r
                    self._stop.set()
                elif error is None and r[4] == self.gen and not self.restoring:  # one from before a restore is void
                    k, j, loss, gs, _, fetched = r
                    self._after_step(gs, loss, k, j, fetched)
                    seen()
                else:
                    seen()
        except BaseException:
            self._stop.set()
            raise
        finally:
            for t in threads:
                t.join()
            self._close_loops(stopper)
        if error is not None:
            if isinstance(error, OutOfRangeError):
                self.stopped_by = "end_of_data"
            else:
                raise error
        self.step = self._global_step()
        return loss

    def _global_step(self) -> int:
        """The global step as the ps holds it. A task lost meanwhile (killed after the loops'
        last step, during the final save) is brought back first, a ps from the latest checkpoint."""
        return int(self._after_recovery(lambda: self.session.run(self.graph.global_step.read)))

    def _replica_chunk(self, k: int, j: int, count: int) -> tuple[list[tuple[float, int]], tuple | None, float]:
        """Steps of replica ``k`` on its batches ``j ..``: run by the worker's own loop
        (``replica_loop.py``), or one step from here when ``worker_loops`` is off."""
        import ray

        t0 = time.perf_counter()
        if not self.worker_loops:
            g = self.graph
            loss, gs = self.replicas[k].run([g.loss, g.global_step.read], self._feeds(k, j),
                                            targets=self._ends(g.train_op))  # fmt: skip
            # as ReplicaLoop.run; None: the hooks' fetches are evaluated by the driver (_after_step)
            return [(float(loss), int(gs) + 1, None)], None, time.perf_counter() - t0
        box, key = self._loop_recipe(k)
        actor = self.cluster.actors[self.tasks[k]]
        try:
            got = ray.get(actor.replica_steps.remote(None, key, j, count))  # the recipe only when asked
            if got == NEED_RECIPE:
                got = ray.get(actor.replica_steps.remote(box, key, j, count))
            return got
        except ray.exceptions.RayError as e:
            raise RuntimeFailure(f"a task of the cluster failed: {ray_error_line(e)}") from None

    def _loop_recipe(self, k: int) -> tuple[list, str]:
        """Replica ``k``'s recipe for its worker's loop ([its ref], key), made once per
        recovery generation (a new key rebuilds the loop over the tasks as they are)."""
        import ray

        key = f"{self._run_id}#{self.gen}"
        made = self._recipes.get(k)
        if made is None or made[1] != key:
            g = self.graph
            graph, seed = replica_random_streams(g.graph_def, self.spec.model.seed, k)
            hook = next((h for h in self.hooks if isinstance(h, SummarySaverHook)), None)
            summaries: dict[str, str] = {}
            if k == 0 and hook is not None:  # the chief's loop fetches them in its own steps, as TF's chief does
                graph, summaries = summaries_fetched_here(graph, hook.fetches(self), self.tasks[k])
            recipe = LoopRecipe(run=self._run_id, key=key, task=self.tasks[k], cluster_spec=self.cluster.spec,
                                graph_def=graph, graph_seed=seed, strategy=self.strategy,
                                lossy_transfers=self.options.lossy(self.spec), fetches=[g.loss, g.global_step.read],
                                targets=self._ends(g.train_op), shard=self.shards[k],
                                training_flag=g.training_flag, summaries=summaries,
                                summary_every=hook.every if hook is not None else 0)  # fmt: skip
            made = self._recipes[k] = ([ray.put(recipe)], key)
        return made

    def _stop_loops_on_request(self) -> None:
        """On a stop request (Ctrl-C, a hook, an error), every worker's loop stops after its
        current step."""
        while not self._loops_over.is_set():
            if self._stop.wait(0.01):
                for t in self.tasks:
                    self.cluster.actors[t].stop_replica.remote(self._run_id)
                return

    def _close_loops(self, stopper: threading.Thread) -> None:
        import ray

        self._loops_over.set()
        stopper.join()
        if not self.worker_loops:
            return
        try:
            ray.get([self.cluster.actors[t].close_replica.remote(self._run_id) for t in self.tasks], timeout=10)
        except Exception:  # a task gone: its loop went with it
            pass

    def on_restored(self) -> None:
        self._claimed = self._seen = self.step

    def _push(self, k: int, s: int) -> tuple[int | None, float]:
        feeds = self._feeds(k, s)
        feeds[self.sync.local_step] = s
        while True:
            gen = self.gen
            try:
                if not self._wait_ready(k):
                    return None, float("nan")  # stopped before the model was ready
                (loss,) = self.replicas[k].run([self.graph.loss], feeds, targets=self._ends(self.sync.push_ops[k]))
                break
            except RuntimeFailure as e:  # the step is retried once the lost task is back
                self.recover(gen, e)
                if self._stop.is_set():
                    raise
        self.worker_steps[k] += 1
        return s, float(loss)

    def _train_sync(self) -> float | None:
        n, r = len(self.tasks), self.replicas_to_aggregate
        g = self.graph
        loss = None
        inflight: dict = {}  # future -> worker
        with ThreadPoolExecutor(n, thread_name_prefix="replica") as pool:
            try:
                while not self._done():
                    s = self.step
                    busy = set(inflight.values())
                    for k in range(n):
                        if k not in busy:
                            inflight[pool.submit(self._push, k, s)] = k
                    fresh: list[tuple[int, float]] = []
                    while len(fresh) < r:
                        done, _ = wait(list(inflight), return_when=FIRST_COMPLETED)
                        for f in done:
                            k = inflight.pop(f)
                            tag, value = f.result()
                            if tag is None:  # the run was stopped while a worker waited for the model
                                return loss
                            if tag == s:
                                fresh.append((k, value))
                            else:  # a straggler's push for an older step: dropped; it starts step s
                                inflight[pool.submit(self._push, k, s)] = k
                    if self.step != s:  # a ps was restored meanwhile: these pushes are for a step gone
                        continue
                    gen = self.gen
                    try:
                        self.session.run([], targets=[g.train_op])
                    except RuntimeFailure as e:  # a ps lost: restored; go on from its step
                        self.recover(gen, e)
                        continue
                    loss = sum(v for _, v in fresh) / len(fresh)
                    self._after_step(s + 1, loss, fresh[0][0], s)
            finally:
                for f in inflight:
                    f.cancel()
                wait(list(inflight))
        return loss


def _as_local_rngs(replica_rngs: dict) -> dict:
    """Worker 0's generator states under a local run's keys as well: worker 0 draws what a local
    run draws, so a local run resumed from this checkpoint goes on with its stream (it restarted
    its dropout masks from the seed's, 4e-2 off one that never left a single process)."""
    r0 = _replica_key(0, "rng/")
    return {state.RNG_PREFIX + key[len(r0):]: v for key, v in replica_rngs.items() if key.startswith(r0)}


def _replica_key(k: int, what: str) -> str:
    """Checkpoint key of worker ``k``'s own state (a local run ignores these)."""
    return f"{STATE_PREFIX}replica_{k}/{what}"
