"""A dataflow call's received tensors as arguments of its step, not rendezvous receives.

Under the master's dataflow protocol (``master._submit_flow``) a task's call starts only once
its upstream calls ended, with their outboxes as arguments: every tensor it receives from
another task (or from another stage of its own task, ``stages.py``) is in hand before the
first kernel runs. Received through ``_Recv`` (an asynchronous kernel), those values keep the
partition off the executor's straight line (synchronous kernels only) and cost a callback
each. So a worker also builds, per registered piece, partitions where each such ``_Recv`` is
an ``_Arg`` reading the value from the step's call frame, past the feeds; ``worker._flow``
runs those when the inboxes hold exactly the expected live values, and the receiving
partitions otherwise (a dead tensor from a ``cond`` across tasks, or a piece this does not
apply to).

A ``_Recv`` between two devices of the same call stays one: its sender runs in the same call.
A partition with a loop keeps its receives too (a receive inside a frame is keyed by
iteration; the protocol never cuts a loop across calls, so none arrives by inbox today).
"""

from __future__ import annotations

from specflow.graph.graph_def import GraphDef, NodeDef
from specflow.runtime.rendezvous import rendezvous_key

from .stages import LOOP_NODE_OPS
from .task_partition import split_virtual, task_of

_MISSING = object()


def arrives_by_inbox(recv: NodeDef) -> bool:
    """Whether ``recv``'s value comes in the call's inboxes: its sender's rendezvous routed it
    away (another task, or a stage's call: ``DEVICE#s``)."""
    a = recv.attrs
    device, stage = split_virtual(a["recv_device"])
    return stage is not None or task_of(a["send_device"]) != task_of(device)


def inbox_as_args(partitions: list[GraphDef], n_feeds: int) -> tuple[list[GraphDef], dict[str, int]] | None:
    """``partitions`` with every inbox-fed ``_Recv`` turned into an ``_Arg`` reading argument
    ``n_feeds + k`` (k counted over all partitions; the step's feeds come first). Returns (the
    rewritten partitions, rendezvous key -> k), or None when no partition has such a receive
    or one with it holds a loop."""
    slots: dict[str, int] = {}
    out = []
    for g in partitions:
        recvs = [n for n in g.nodes if n.op == "_Recv" and arrives_by_inbox(n)]
        if recvs and any(n.op in LOOP_NODE_OPS for n in g.nodes):
            return None
        if not recvs:
            out.append(g)
            continue
        nodes = []
        for n in g.nodes:
            if n.op == "_Recv" and arrives_by_inbox(n):
                a = n.attrs
                key = rendezvous_key(a["send_device"], a["send_device_incarnation"], a["recv_device"],
                                     a["tensor_name"], "0", 0)  # fmt: skip
                slots[key] = len(slots)
                n = NodeDef(n.name, "_Arg", list(n.inputs), n.device,
                            {"T": a["tensor_type"], "index": n_feeds + slots[key]}, n.location)  # fmt: skip
            nodes.append(n)
        out.append(GraphDef(nodes, dict(g.versions), g.library))
    return (out, slots) if slots else None


def inbox_values(slots: dict[str, int], items: list) -> list | None:
    """The received values in argument order, or None unless ``items`` (key, value, is_dead)
    hold exactly one live value for each slot (a dead one must flow as deadness)."""
    if len(items) != len(slots):
        return None
    values: list = [_MISSING] * len(slots)
    for key, value, is_dead in items:
        k = slots.get(key)
        if k is None or is_dead or values[k] is not _MISSING:
            return None
        values[k] = value
    return values
