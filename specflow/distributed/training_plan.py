"""The training step as ``train --cluster`` places it, for ``inspect --cluster --placed`` on a
spec with a ``train:`` section (no Ray: the placement and partitioning are pure functions).

The same graph the trainer builds (``build_training_graph``, with sync's slots when the mode is
``sync``), placed once per worker replica with that replica's ``ReplicaAssignment``: which
variable and optimizer slot sits on which ps task, and per worker the bytes its step pulls from
the ps tasks (variable values) and pushes to them (gradients), at the data's batch size.
Sync adds the chief's apply step (each average and update on its variable's ps: only scalars cross).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specflow.graph.shapes import Shape

from .cluster_spec import ClusterSpec
from .placement import ClusterStep, compile_cluster_step, task_of
from .replicas import DRIVER_TASK, ReplicaAssignment, replica_tasks, replicas_to_aggregate, training_cluster
from .sync_replicas import SyncReplicas


@dataclass
class TrainingPlan:
    mode: str
    strategy: str
    cluster: ClusterSpec
    variables: dict[str, tuple[str, int]]  # variable or slot -> (ps task, bytes)
    steps: dict[str, ClusterStep]  # worker task -> its replica's step
    apply: ClusterStep | None = None  # sync: the chief's apply step
    batch_size: int = 0
    traffic: dict[str, dict[str, int | None]] = field(default_factory=dict)  # worker -> pulled/pushed bytes

    @property
    def first(self) -> ClusterStep:
        return next(iter(self.steps.values()))


def training_plan(s, cluster: ClusterSpec, lossy_transfers: bool = False) -> TrainingPlan:
    """Place spec ``s``'s training step on ``cluster`` as every worker replica runs it
    (``lossy_transfers``: float32 crossing tasks as 16 bits, as ``train --lossy-transfers``)."""
    from specflow.train.graph import build_training_graph

    cfg = s.train
    dist = cfg.distributed
    mode, strategy = (dist.mode, dist.placement) if dist else ("async", "greedy")
    cluster = training_cluster(cluster)
    tasks = replica_tasks(cluster, s)
    replicas_to_aggregate(dist, len(tasks))
    sync = SyncReplicas(len(tasks)) if mode == "sync" else None
    g = build_training_graph(s, cfg, None, replicas=sync, step_limit=cfg.steps if sync is None else None)
    graph = _batched(cluster.constrained(g.graph_def), list(cfg.data.feeds), cfg.data.batch_size)
    feeds = list(cfg.data.feeds) + ([g.training_flag] if g.training_flag else [])
    plan = TrainingPlan(mode, strategy, cluster, {}, {}, batch_size=cfg.data.batch_size)
    for k, task in enumerate(tasks):
        a = ReplicaAssignment(cluster, task, strategy)
        step_feeds, target = (feeds, g.train_op) if sync is None else ([*feeds, sync.local_step], sync.push_ops[k])
        targets = step_ends(graph, target)
        step = compile_cluster_step(graph, cluster, a, feeds=step_feeds, fetches=[g.loss], targets=targets,
                                    lossy_transfers=lossy_transfers)
        plan.steps[task] = step
        plan.traffic[task] = {
            "pulled": _bytes(t for t in step.cross if task_of(t.dst_device) == task),
            "pushed": _bytes(t for t in step.cross if task_of(t.src_device) == task),
        }
        if k == 0:
            nodes = graph.node_map()
            for node, where in sorted(a.by_node.items()):
                shape, dtype = nodes[node].attrs["shape"], nodes[node].attrs["dtype"]
                plan.variables[node] = (where, (shape.num_elements() or 0) * dtype.itemsize)
    if sync is not None:
        plan.apply = compile_cluster_step(graph, cluster, ReplicaAssignment(cluster, DRIVER_TASK, strategy),
                                          targets=[g.train_op], lossy_transfers=lossy_transfers)  # fmt: skip
    return plan


def step_ends(graph, target: str) -> list[str]:
    """A replica step's targets for ``target``: a group (NoOp of control inputs only) is replaced
    by its members, the updates on the ps tasks (``DistributedTrainer._ends`` says why)."""
    node = graph.node(target)
    ends = [i[1:] for i in node.inputs if i.startswith("^")]
    return ends if node.op == "NoOp" and ends and len(ends) == len(node.inputs) else [target]


def _batched(graph, inputs: list[str], batch_size: int):
    """A copy whose fed inputs' unknown leading dim is the batch size (for bytes per step)."""
    g = graph.copy()
    for n in g.nodes:
        shape = n.attrs.get("shape")
        if n.name in inputs and n.op == "Placeholder" and shape is not None and shape.rank and shape[0] is None:
            n.attrs["shape"] = Shape((batch_size,) + tuple(shape.dims[1:]))
    return g


def _task_key(task: str) -> tuple:
    return tuple(int(x) if x.isdigit() else x for x in task.replace(":", "/").split("/"))


def _bytes(transfers) -> int | None:
    sizes = [t.bytes_per_step for t in transfers]
    return None if any(b is None for b in sizes) else sum(sizes)


def plan_json(plan: TrainingPlan) -> dict:
    ps: dict[str, dict] = {}
    for name, (task, nbytes) in sorted(plan.variables.items(), key=lambda kv: (_task_key(kv[1][0]), kv[0])):
        p = ps.setdefault(task, {"variables": [], "bytes": 0})
        p["variables"].append(name)
        p["bytes"] += nbytes
    return {
        "mode": plan.mode, "placement": plan.strategy, "batch_size": plan.batch_size,
        "variables": {n: {"task": t, "bytes": b} for n, (t, b) in plan.variables.items()},
        "ps_tasks": ps,
        "workers": [{"task": t, "bytes_pulled_per_step": v["pulled"], "bytes_pushed_per_step": v["pushed"]}
                    for t, v in plan.traffic.items()],
        "apply_step_cross_task_bytes": None if plan.apply is None else _bytes(plan.apply.cross),
    }  # fmt: skip
