"""Between-graph replication: one replica of the training graph per worker task.

Every replica is a ``ClusterSession`` over the same tasks (one ``Cluster``), placing the same
graph with its own :class:`ReplicaAssignment`: variables (and optimizer slots) on the ps tasks,
decided identically in every replica (a pure function of the graph), and everything else on the
replica's own worker (``replica_device_setter(worker_device=...)``). The variables therefore live
once, on the ps, and each worker's gradients are computed where its batch is.
"""

from __future__ import annotations

import dataclasses

from specflow.errors import SpecflowError
from specflow.runtime.place import PlacementOptions, place

from .cluster_spec import ClusterSpec
from .placement import TaskAssignment, _unrequested, _variable_bytes


class ReplicaAssignment(TaskAssignment):
    """Variables on ps tasks (``greedy``: the least loaded by bytes, in graph order;
    ``round_robin``: in turn), the rest on ``worker``. A variable colocated with another
    (``_class``, e.g. sync_replicas' gradient slots) follows it instead."""

    def __init__(self, cluster: ClusterSpec, worker: str, strategy: str = "greedy"):
        super().__init__(cluster)
        self.worker = worker
        self.strategy = strategy
        self._turn = 0

    @property
    def default_device(self) -> str | None:
        return self.worker

    def update(self, graph) -> None:
        if len(graph.nodes) == self.seen:
            return
        # Colocation groups (a slot shares its variable's through the update op's resource edges):
        # a group's variables all go where its first one went.
        self._groups = place(graph, PlacementOptions(devices=self.cluster.all_devices)).groups
        self._ps(graph.nodes[self.seen :])
        self.seen = len(graph.nodes)

    def _ps(self, nodes) -> None:
        tasks = [f"/job:ps/replica:0/task:{t}" for t in range(self.cluster.jobs.get("ps", 0))]
        for t in tasks:
            self.ps_load.setdefault(t, 0)
        group_task = {self._groups.get(n): t for n, t in self.by_node.items()}
        for n in nodes:
            if n.op != "VarHandleOp" or not _unrequested(n):
                continue
            if n.attrs.get("_class"):  # with its variable even in a step that lacks it (sync's init)
                target = n.attrs["_class"][0].removeprefix("loc:@")
                if target in self.by_node:
                    self.by_node[n.name] = self.by_node[target]
                continue
            group = self._groups.get(n.name)
            if group in group_task:
                task = group_task[group]
            elif self.strategy == "round_robin":
                task = tasks[self._turn % len(tasks)]
                self._turn += 1
            else:
                task = min(self.ps_load, key=lambda k: (self.ps_load[k], k))
            self.ps_load[task] += _variable_bytes(n)
            self.by_node[n.name] = group_task[group] = task


def replica_tasks(spec: ClusterSpec) -> list[str]:
    """The tasks that run a replica, the chief first: a ``chief`` job's task, then the workers."""
    if not spec.jobs.get("ps"):
        raise SpecflowError(f"training on a cluster needs a ps job for the variables, got {spec.describe()} "
                            "(e.g. --cluster local:ps=1,worker=2)")  # fmt: skip
    tasks = [f"/job:chief/replica:0/task:{t}" for t in range(spec.jobs.get("chief", 0))]
    tasks += [f"/job:worker/replica:0/task:{t}" for t in range(spec.jobs.get("worker", 0))]
    if not tasks:
        raise SpecflowError(f"training on a cluster needs a worker job, got {spec.describe()}")
    return tasks


def training_cluster(spec: ClusterSpec) -> ClusterSpec:
    """The spec with ps placement (the replicas' assignments place; round_robin over every task
    would put variables on workers, where other replicas cannot share them)."""
    return dataclasses.replace(spec, placement="ps")


DRIVER_TASK = "/job:ps/replica:0/task:0"


def replica_session(graph_def, cluster, seed: int | None, strategy: str, task: str):
    """A ClusterSession over the connected ``cluster`` whose compute runs on ``task``."""
    from specflow.runtime.session import SessionConfig

    from .master import ClusterSession

    sess = ClusterSession(graph_def, SessionConfig(graph_seed=seed), cluster=cluster)
    sess.assignment = ReplicaAssignment(cluster.spec, task, strategy)
    return sess


def replica_sessions(graph_def, cluster, seed: int | None, strategy: str) -> list:
    """A driver session for the chief's own work (init, restore, sync's apply, checkpoints,
    summaries, evaluation), then one session per replica task (chief first). The driver computes
    on ps 0, so losing a worker never takes the chief's session with it."""
    tasks = replica_tasks(cluster.spec)
    return [replica_session(graph_def, cluster, seed, strategy, t) for t in [DRIVER_TASK, *tasks]]
