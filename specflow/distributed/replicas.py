"""Between-graph replication: one replica of the training graph per worker task.

Every replica is a ``ClusterSession`` over the same tasks (one ``Cluster``), placing the same
graph with its own :class:`ReplicaAssignment`: variables (and optimizer slots) on the ps tasks,
decided identically in every replica (a pure function of the graph), and everything else on the
replica's own worker (``replica_device_setter(worker_device=...)``). The variables therefore live
once, on the ps, and each worker's gradients are computed where its batch is.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from specflow.errors import SpecflowError, did_you_mean

from .cluster_spec import ClusterSpec, check_singletons, cluster_from_section
from .placement import TaskAssignment


class ReplicaAssignment(TaskAssignment):
    """Variables on ps tasks (``greedy``: the least loaded by bytes, in graph order;
    ``round_robin``: in turn), the rest on ``worker``. A variable colocated with another
    (``_class``, e.g. sync_replicas' gradient slots) follows it instead."""

    def __init__(self, cluster: ClusterSpec, worker: str, strategy: str = "greedy"):
        super().__init__(cluster, strategy)
        self.worker = worker

    @property
    def default_device(self) -> str | None:
        return self.worker


TRAINING_JOBS = ("ps", "worker", "chief")


def replica_tasks(spec: ClusterSpec, model_spec=None) -> list[str]:
    """The tasks that run a replica, the chief first: a ``chief`` job's task, then the workers.
    A job no part of training runs on (a typo of ``worker``, TF's separate ``evaluator``) is an
    error, at its line when ``model_spec``'s ``cluster:`` section names it, not idle tasks; so
    is a cluster without a ps or a worker, at the section's jobs when they are these."""
    source = getattr(model_spec, "source", None)
    for job in spec.jobs:
        if job in TRAINING_JOBS:
            continue
        key = next((k for k in (("cluster", "jobs", job), ("cluster", job)) if source is not None and source.has(k)), None)
        if key is not None:
            raise SpecflowError("a job no part of training runs on: training uses the jobs ps, worker and chief"
                                + did_you_mean(job, TRAINING_JOBS), path=".".join(key),
                                location=source.key_location(key))  # fmt: skip
        raise SpecflowError(f"--cluster: job '{job}' runs no part of training: training uses the jobs ps, worker "
                            "and chief" + did_you_mean(job, TRAINING_JOBS))  # fmt: skip
    check_singletons(spec.jobs, "cluster", lambda job: None)
    where = _jobs_location(spec, model_spec)
    if not spec.jobs.get("ps"):
        raise SpecflowError(f"training on a cluster needs a ps job for the variables, got {spec.describe()} "
                            "(e.g. --cluster local:ps=1,worker=2)", **where)  # fmt: skip
    tasks = [f"/job:chief/replica:0/task:{t}" for t in range(spec.jobs.get("chief", 0))]
    tasks += [f"/job:worker/replica:0/task:{t}" for t in range(spec.jobs.get("worker", 0))]
    if not tasks:
        raise SpecflowError(f"training on a cluster needs a worker job, got {spec.describe()} "
                            "(e.g. --cluster local:ps=1,worker=2)", **where)  # fmt: skip
    return tasks


def _jobs_location(spec: ClusterSpec, model_spec) -> dict:
    """path and location of the spec's ``cluster:`` jobs when ``spec`` has exactly those jobs
    (``--cluster local``, or validate), else nothing (the jobs came from the command line)."""
    section = getattr(getattr(model_spec, "model", None), "cluster", None)
    if section is None:
        return {}
    path = ("cluster", "jobs") if isinstance(section, dict) and "jobs" in section else ("cluster",)
    jobs = section.get("jobs") if path == ("cluster", "jobs") else section
    if not isinstance(jobs, dict) or set(jobs) != set(spec.jobs):
        return {}
    return {"path": ".".join(path), "location": model_spec.source.location(path)}


def check_spec_cluster(model_spec) -> None:
    """``validate`` (and a local ``train``) of a spec with ``train:`` and ``cluster:``: the
    section must be one ``train --cluster local`` can train on (jobs, replicas_to_aggregate)."""
    section = model_spec.model.cluster
    if section is None or model_spec.train is None:
        return
    spec = cluster_from_section(section, model_spec.source)
    tasks = replica_tasks(spec, model_spec)
    try:
        replicas_to_aggregate(model_spec.train.distributed, len(tasks))
    except SpecflowError as e:
        e.message += f" (the spec's cluster: {spec.describe()})"
        raise


def replicas_to_aggregate(dist, n: int) -> int:
    """Sync: how many of the ``n`` replicas' gradients each step averages (``train.distributed``'s
    ``replicas_to_aggregate``, default all); more than ``n`` is an error at the setting."""
    wanted = (dist.replicas_to_aggregate if dist else None) or n
    if wanted > n:
        raise SpecflowError(f"{wanted}, but the cluster has {n} worker replica{'s' if n > 1 else ''}",
                            path="train.distributed.replicas_to_aggregate")
    return wanted


def training_cluster(spec: ClusterSpec) -> ClusterSpec:
    """The spec with ps placement (the replicas' assignments place; round_robin over every task
    would put variables on workers, where other replicas cannot share them)."""
    return dataclasses.replace(spec, placement="ps")


DRIVER_TASK = "/job:ps/replica:0/task:0"


def replica_session(graph_def, cluster, seed: int | None, strategy: str, task: str, lossy_transfers: bool = False):
    """A ClusterSession over the connected ``cluster`` whose compute runs on ``task``."""
    from specflow.runtime.session import SessionConfig

    from .master import ClusterSession

    config = SessionConfig(graph_seed=seed, lossy_transfers=lossy_transfers)
    sess = ClusterSession(graph_def, config, cluster=cluster)
    sess.assignment = ReplicaAssignment(cluster.spec, task, strategy)
    return sess


def replica_sessions(graph_def, cluster, seed: int | None, strategy: str, lossy_transfers: bool = False) -> list:
    """A driver session for the chief's own work (init, restore, sync's apply, checkpoints,
    summaries, evaluation), then one session per replica task (chief first). The driver computes
    on ps 0, so losing a worker never takes the chief's session with it."""
    tasks = replica_tasks(cluster.spec)
    sessions = [replica_session(graph_def, cluster, seed, strategy, DRIVER_TASK, lossy_transfers)]
    for k, t in enumerate(tasks):
        graph, graph_seed = replica_random_streams(graph_def, seed, k)
        sessions.append(replica_session(graph, cluster, graph_seed, strategy, t, lossy_transfers))
    return sessions


def replica_random_streams(graph_def, seed: int | None, k: int):
    """Replica ``k``'s graph and graph seed, so that each worker's random ops (dropout masks,
    noise) draw their own stream instead of repeating the chief's, as they would if every
    replica built the graph with one seed (TF's between-graph replicas do): an op seeded by the
    graph gets a graph seed derived from ``seed`` and ``k``; an op with its own seed gets a
    ``seed2`` derived from its seeds and ``k``. Replica 0 (the chief) keeps the graph as it
    is, so a one-worker run draws what a local run draws; all of it is reproducible."""
    if k == 0:
        return graph_def, seed

    def mix(*words: int) -> int:
        return int(np.random.SeedSequence([w & 0xFFFFFFFFFFFFFFFF for w in words]).generate_state(1, np.uint64)[0] >> 1)

    nodes = []
    for node in graph_def.nodes:
        s1, s2 = node.attrs.get("seed"), node.attrs.get("seed2")
        if isinstance(s2, int) and isinstance(s1, int) and (s1 or s2):
            node = dataclasses.replace(node, attrs={**node.attrs, "seed2": mix(s1, s2, k)})
        nodes.append(node)
    graph = dataclasses.replace(graph_def, nodes=nodes)
    return graph, None if seed is None else mix(seed, k)
