"""prune → optimize → place → partition for one (feeds, fetches, targets) signature.

The Session runs this once per signature (and per fed shape, see ``feed_shapes``) and builds
executors from the partitions; ``specflow inspect --placed`` runs it to show the placed,
partitioned graph without executing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from specflow.graph.device_spec import DeviceSpec
from specflow.graph.graph_def import GraphDef
from specflow.runtime.alap import AlapResult, schedule_receives_late
from specflow.runtime.optimize import OptimizeOptions, OptimizeResult, optimize
from specflow.runtime.partition import PartitionOptions, PartitionResult, partition
from specflow.runtime.place import PlacementOptions, PlacementResult, place
from specflow.runtime.prune import PruneOptions, PruneResult, prune


@dataclass
class CompiledStep:
    pruned: PruneResult
    optimized: OptimizeResult | None  # None when optimization was off
    placed: PlacementResult
    partitioned: PartitionResult
    alap: AlapResult | None = None  # the control edges that hold receives back (None: pass off)


def compile_step(
    graph_def: GraphDef,
    devices: list[str],
    *,
    feeds: list[str] = (),
    fetches: list[str] = (),
    targets: list[str] = (),
    soft_placement: bool = False,
    cost_model: str = "estimated",
    measured_costs: dict[str, float] | None = None,
    incarnations: dict[str, int] | None = None,
    optimize_graph: bool = True,
    feed_shapes: list[tuple[int, ...] | None] | None = None,
    default_device: str | None = None,
    constrain: Callable[[GraphDef], GraphDef] | None = None,
    unroll_limit: int = 2000,
    lossy_transfers: bool = False,
    alap_recv: bool = True,
    partition_fn: Callable[[GraphDef, PartitionOptions], PartitionResult] | None = None,
) -> CompiledStep:
    """``feed_shapes`` (per feed, None for unknown) specialises the step to those exact shapes:
    the optimizer folds the shape computations they decide, so the plan is only valid for
    feeds of exactly those shapes. ``optimize_graph=False`` places the pruned graph as it is.
    ``constrain`` rewrites the requests of the graph about to be placed, and ``default_device``
    is preferred for what requests nothing, and ``partition_fn(placed, options)`` partitions
    instead of by device (all three for a cluster, which partitions by task: ``distributed/``).
    ``lossy_transfers`` sends float32 tensors crossing devices as 16 bits (``partition.py``);
    ``alap_recv`` starts each ``_Recv`` only when its consumer is nearly ready (``alap.py``; by
    device only: a cluster's tasks run their own pieces)."""
    pruned = prune(graph_def, PruneOptions(fetches=list(fetches), feeds=list(feeds), targets=list(targets)))
    graph, optimized = pruned.graph_def, None
    if optimize_graph:
        shapes = {a: s for a, s in zip(pruned.feed_args, feed_shapes or (), strict=False) if s is not None}
        keep = {n.split(":")[0].lstrip("^") for n in targets}
        cpu_only = all(DeviceSpec.parse(d).device_type == "CPU" for d in devices)
        optimized = optimize(graph, OptimizeOptions(feed_shapes=shapes, keep=keep, unroll_limit=unroll_limit,
                                                    cpu_only=cpu_only))  # fmt: skip
        graph = optimized.graph_def
    if constrain is not None:
        graph = constrain(graph)
    placed = place(
        graph,
        PlacementOptions(
            devices=list(devices),
            soft_placement=soft_placement,
            cost_model=cost_model,
            measured_costs=measured_costs or None,
            default_device=default_device,
        ),
    )
    options = PartitionOptions(incarnations=incarnations, lossy_transfers=lossy_transfers)
    if partition_fn is not None:
        return CompiledStep(pruned, optimized, placed, partition_fn(placed.graph_def, options))
    parts = partition(placed.graph_def, options)
    alap = schedule_receives_late(parts.partitions, placed.graph_def) if alap_recv else None
    return CompiledStep(pruned, optimized, placed, parts, alap)
