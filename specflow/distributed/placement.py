"""Placing a graph on a cluster and partitioning it by task.

Which task a node goes to is decided once for the whole session graph (``TaskAssignment``), not
per signature: a variable must live on the same task in the init step and in every later step.

- ``ps`` (default when the cluster has a ps job): each variable (``VarHandleOp``; what uses its
  handle follows through the placer's resource-edge colocation) goes to the ps task holding the
  fewest bytes so far, in graph order (``replica_device_setter``'s greedy load balancing), and
  the variables of one colocation group (a variable and its optimizer slots) go together; the
  rest prefers the worker job (the placer's ``default_device``), so compute lands on workers.
- ``round_robin``: the colocation groups of the whole graph, in graph order, go to the tasks in
  turn (spreads a graph over every task; tests use it to force cross-task edges).

Either way a node's own request wins: only nodes that name no job and no task are assigned.
The per-signature pipeline (prune, optimize, place) is the local one
(``runtime/pipeline.compile_step``) over every device of the cluster; the master then partitions
by task (``task_partition.py``): the edges between tasks are the cross-task ``_Send``/``_Recv``,
and each worker partitions its task's piece by device.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

from specflow.graph.device_spec import DeviceSpec
from specflow.graph.graph_def import GraphDef
from specflow.runtime.partition import PartitionResult, Transfer
from specflow.runtime.pipeline import CompiledStep, compile_step
from specflow.runtime.place import PlacementOptions, place

from .cluster_spec import ClusterSpec
from .task_partition import downstream_tasks, partition_by_task, partition_piece, task_of  # noqa: F401 (task_of: re-exported)


def _variable_bytes(node) -> int:
    shape, dtype = node.attrs.get("shape"), node.attrs.get("dtype")
    n = shape.num_elements() if shape is not None and hasattr(shape, "num_elements") else None
    return (n or 1) * (dtype.itemsize if dtype is not None and hasattr(dtype, "itemsize") else 4)


def _unrequested(node) -> bool:
    s = DeviceSpec.parse(node.device)
    return s.job is None and s.task is None


class TaskAssignment:
    """Node name -> task constraint (``/job:J/replica:0/task:T``) for the session graph."""

    def __init__(self, cluster: ClusterSpec, strategy: str = "greedy"):
        self.cluster = cluster
        self.strategy = strategy  # how variables spread over the ps tasks: greedy | round_robin
        self.by_node: dict[str, str] = {}
        self.ps_load: dict[str, int] = {}  # ps task -> bytes of variables placed there
        self.seen = 0  # nodes of the session graph already assigned
        self._groups: dict[str, int] = {}
        self._turn = 0

    @property
    def default_device(self) -> str | None:
        # As replica_device_setter's worker_device: this client's compute on one task (spread
        # over a job's tasks, a loop's every iteration would cross processes).
        if self.cluster.placement == "ps":
            for job in ("worker", "chief"):
                if job in self.cluster.jobs:
                    return f"/job:{job}/replica:0/task:0"
        return None

    def update(self, graph: GraphDef) -> None:
        """Assign the nodes the graph gained since the last call (Session.extend keeps the old
        ones where they are)."""
        if len(graph.nodes) == self.seen:
            return
        if self.cluster.placement == "round_robin":
            self._round_robin(graph)
        elif self.cluster.jobs.get("ps", 0):
            # Colocation groups (a slot shares its variable's through the update op's resource
            # edges): a group's variables all go where its first one went.
            self._groups = place(graph, PlacementOptions(devices=self.cluster.all_devices)).groups
            self._ps(graph.nodes[self.seen :])
        self.seen = len(graph.nodes)

    def _ps(self, nodes) -> None:
        """Variables on ps tasks (``greedy``: the least loaded by bytes, in graph order;
        ``round_robin``: in turn). A variable colocated with another (``_class``, e.g.
        sync_replicas' gradient slots) follows it instead."""
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
                task = min(self.ps_load, key=lambda k: (self.ps_load[k], k))  # least loaded, then lowest
            self.ps_load[task] += _variable_bytes(n)
            self.by_node[n.name] = group_task[group] = task

    def _round_robin(self, graph: GraphDef) -> None:
        tasks = [f"/job:{j}/replica:0/task:{t}" for j, t in self.cluster.tasks]
        devices = self.cluster.all_devices
        result = place(graph, PlacementOptions(devices=devices))
        members: dict[int, list] = {}
        for n in graph.nodes:
            members.setdefault(result.groups[n.name], []).append(n)
        turn = len({self.by_node[n] for n in self.by_node})  # continue the rotation after an extend
        for gid in sorted(members):
            group = members[gid]
            if any(n.name in self.by_node for n in group):  # an old group gained a node: keep its task
                task = next(self.by_node[n.name] for n in group if n.name in self.by_node)
            elif all(_unrequested(n) for n in group):
                task = tasks[turn % len(tasks)]
                turn += 1
            else:
                continue
            for n in group:
                if _unrequested(n):
                    self.by_node[n.name] = task

    def constrain(self, graph: GraphDef) -> GraphDef:
        """A copy of the graph about to be placed with each assigned node's task in its request."""
        out = graph.copy()
        for n in out.nodes:
            task = self.by_node.get(n.name)
            if task is not None and _unrequested(n):
                n.device = DeviceSpec.parse(task).merge(DeviceSpec.parse(n.device)).to_string()
        return out


@dataclass
class ClusterStep:
    """One signature placed on a cluster and partitioned by task (the master's level)."""

    by_task: CompiledStep  # its ``partitioned``: the partition by task (keyed by task)
    graphs: dict[str, GraphDef]  # task -> its piece, one GraphDef (tasks in device order)
    cross: list[Transfer]  # the transfers between tasks
    incarnations: dict[str, int] | None = None

    @property
    def tasks(self) -> list[str]:
        return list(self.graphs)

    @cached_property
    def _by_device(self) -> dict[str, PartitionResult]:
        return {t: partition_piece(g, self.incarnations) for t, g in self.graphs.items()}

    @property
    def pieces(self) -> dict[str, dict[str, GraphDef]]:
        """task -> device -> partition: what each worker's own partitioning makes of its piece
        (computed here only to show it: ``inspect --placed``, tests)."""
        return {t: r.partitions for t, r in self._by_device.items()}

    @cached_property
    def compiled(self) -> CompiledStep:
        """Both levels as one partition by device (what ``inspect --placed`` shows): every
        task's device partitions, the cross-task transfers and those within each task."""
        parts = {d: g for r in self._by_device.values() for d, g in r.partitions.items()}
        within = [t for r in self._by_device.values() for t in r.transfers]
        return replace(self.by_task, partitioned=PartitionResult(parts, self.cross + within))


def compile_cluster_step(
    graph: GraphDef,
    cluster: ClusterSpec,
    assignment: TaskAssignment,
    *,
    feeds=(),
    fetches=(),
    targets=(),
    **kw,
) -> ClusterStep:
    """prune -> optimize -> place (over every device of the cluster, the assignment's tasks in
    the requests) -> partition by task (``task_partition.py``); each worker partitions its
    piece by device."""
    assignment.update(graph)
    compiled = compile_step(
        graph,
        cluster.all_devices,
        feeds=feeds,
        fetches=fetches,
        targets=targets,
        default_device=assignment.default_device,
        constrain=assignment.constrain,
        partition_fn=partition_by_task,
        **kw,
    )
    parts = compiled.partitioned
    return ClusterStep(compiled, dict(parts.partitions), list(parts.transfers), kw.get("incarnations"))


def task_order(graphs: dict[str, GraphDef]) -> list[tuple[str, list[str], list[tuple[str, int]]]] | None:
    """The step's tasks in an order where every cross-task transfer goes forward, each with its
    downstream tasks and its upstream (task, index in that task's downstream list); None when
    the transfers between tasks form a cycle (a loop or a training step spanning tasks: tensors
    go both ways within the step, so the tasks must run at once and push to each other)."""
    tasks = list(graphs)
    down: dict[str, set[str]] = {t: set() for t in tasks}
    for src, piece in graphs.items():  # the _Send nodes themselves: control loops' too
        down[src] = downstream_tasks(src, piece)
        if not down[src] <= set(graphs):
            return None  # sends to a task outside the step: keep the push protocol
    indegree = {t: 0 for t in tasks}
    for outs in down.values():
        for d in outs:
            indegree[d] += 1
    ready = [t for t in tasks if indegree[t] == 0]
    order: list[str] = []
    while ready:
        t = ready.pop(0)
        order.append(t)
        for d in sorted(down[t]):
            indegree[d] -= 1
            if indegree[d] == 0:
                ready.append(d)
    if len(order) < len(tasks):
        return None
    lists = {t: sorted(down[t]) for t in order}
    ups: dict[str, list[tuple[str, int]]] = {t: [] for t in order}
    for t in order:
        for k, d in enumerate(lists[t]):
            ups[d].append((t, k))
    return [(t, lists[t], ups[t]) for t in order]
