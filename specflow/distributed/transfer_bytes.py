"""Bytes that really cross tasks in one step of a cluster plan, for tensors whose size only the
data decides (a partitioned lookup's ids and rows, a sparse gradient's rows).

The plan (``ClusterStep.cross``) knows each transfer's tensor; its size is known statically only
when its shape is. ``measured_cross_bytes`` runs the same step once in a local Session over the
same graph, fetching every tensor that crosses tasks, and adds up their sizes: what the cluster
run sends (the local and cluster runs compute the same values). Used by the tests and the
benchmark; a cluster run never pays for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from specflow.graph.graph_def import GraphDef, parse_input
from specflow.runtime.session import Session

from .placement import ClusterStep


def measured_cross_bytes(graph: GraphDef, step: ClusterStep, feeds: Mapping[str, np.ndarray], targets: Sequence[str],
                         setup: Sequence[str] = (), before: Sequence[tuple[Sequence[str], Mapping]] = ()
                         ) -> dict[str, int]:  # fmt: skip
    """Tensor -> bytes it sends across tasks in one step of ``step`` with ``feeds`` (each
    transfer counted once per receiving task), after running the ``setup`` targets (init) and
    the ``before`` steps (targets, feeds): e.g. sync's pushes before the apply."""
    names = {n.name for n in graph.nodes}
    wanted = sorted({t.tensor for t in step.cross if parse_input(t.tensor).node in names})
    sess = Session(graph)
    try:
        if setup:
            sess.run([], targets=list(setup))
        for targets_before, feeds_before in before:
            sess.run([], dict(feeds_before), targets=list(targets_before))
        values = sess.run(wanted, dict(feeds), targets=list(targets))
    finally:
        sess.close()
    size = {t: int(np.asarray(v).nbytes) for t, v in zip(wanted, values)}
    for arg in step.compiled.pruned.feed_args:  # a fed tensor crosses as its feed's _Arg
        node, index, _ = arg[len("_arg_"):].rsplit("_", 2)
        for key in (f"{node}:{index}", node if index == "0" else None):
            if key in feeds:
                size[f"{arg}:0"] = int(np.asarray(feeds[key]).nbytes)
    out: dict[str, int] = {}
    for t in step.cross:
        b = size.get(t.tensor, t.bytes_per_step)  # a node the plan made itself: its static size
        if b is None:
            raise ValueError(f"cannot size transfer {t.tensor}: not in the graph and no static shape")
        out[t.tensor] = out.get(t.tensor, 0) + b
    return out
