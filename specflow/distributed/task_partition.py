"""Two-level partitioning, as TensorFlow's master and workers do it.

- The master partitions a placed graph **by task** (``partition_by_task``): an edge between two
  tasks becomes a ``_Send``/``_Recv`` pair, a loop frame spanning tasks gets a control loop on
  each of them, and each task's piece is one GraphDef whose nodes keep their full device names.
- Each worker partitions its piece **by device** (``partition_piece``), the local pipeline's
  step: the edges between its own devices become ``_Send``/``_Recv`` pairs in the in-process
  rendezvous, and a frame spanning its devices gets per-device control loops, as locally.

Both levels are ``runtime/partition.py``'s partitioner. The task level runs it on a copy of the
graph whose devices are each task's *home* device (its first one in device order), so the
partitioner cuts exactly the edges between tasks; the nodes then get their devices back, what
the partitioner added is placed as TensorFlow does (a ``_Send`` next to the tensor it sends, a
``_Recv`` with its first consumer, a control loop on the home device: ``_restore_devices``), and
each pair's ``send_device``/``recv_device`` name the devices the two ends really sit on (the
rendezvous key both ends build).

Applied twice, the loop handling needs one thing more: a task that holds part of a loop but not
its ``LoopCond`` follows the iterations through the LoopCond value it receives (the task-level
control loop's ``Switch`` predicate); when that frame also spans the task's devices, that
received value drives the device-level control loops (``_PiecePartitioner``).
"""

from __future__ import annotations

from specflow.graph.device_spec import DeviceSpec
from specflow.graph.graph_def import GraphDef, parse_input
from specflow.runtime.partition import (
    DEFAULT_INCARNATION,
    PartitionOptions,
    PartitionResult,
    _Partitioner,
)
from specflow.runtime.place import device_sort_key


def task_of(device: str) -> str:
    """``/job:worker/replica:0/task:1/device:CPU:0`` -> ``/job:worker/replica:0/task:1``."""
    s = DeviceSpec.parse(device)
    return DeviceSpec(s.job, s.replica or 0, s.task).to_string()


def partition_by_task(graph_def: GraphDef, options: PartitionOptions | None = None) -> PartitionResult:
    """The master's level: one GraphDef per task (keyed by task, in device order), joined by
    cross-task ``_Send``/``_Recv``; ``transfers`` are the cross-task ones. Every node must have a
    full device name. With ``options.lossy_transfers`` every node without its own ``_transfer``
    attr gets "bfloat16", so the worker's level sends the same edges as 16 bits."""
    options = options or PartitionOptions()
    incarnations = {DeviceSpec.parse(k).to_string(): v for k, v in (options.incarnations or {}).items()}
    devices = {n.name: DeviceSpec.parse(n.device).to_string() if n.device else "" for n in graph_def.nodes}
    home: dict[str, str] = {}
    for dev in sorted({d for d in devices.values() if d}, key=lambda d: device_sort_key(DeviceSpec.parse(d))):
        home.setdefault(task_of(dev), dev)
    by_task = graph_def.copy()
    for n in by_task.nodes:
        if devices[n.name]:  # else the partitioner names the node that lacks a device
            n.device = home[task_of(devices[n.name])]
    if options.lossy_transfers:
        for n in by_task.nodes:
            n.attrs.setdefault("_transfer", "bfloat16")
    partitioner = _Partitioner(by_task, PartitionOptions(incarnations=incarnations, copy_consts=True,
                                                         lossy_transfers=options.lossy_transfers))
    partitioner.short = {dev: _short_task(task) for task, dev in home.items()}  # a/_send_0_to_ps_0
    result = partitioner.run()
    for g in result.partitions.values():
        _restore_devices(g, devices, partitioner.copies)
    nodes = {n.name: n for g in result.partitions.values() for n in g.nodes}
    for t in result.transfers:
        send, recv = nodes[t.send_node], nodes[t.recv_node]
        t.src_device, t.dst_device = send.device, recv.device
        for n in (send, recv):
            n.attrs["send_device"] = send.device
            n.attrs["send_device_incarnation"] = incarnations.get(send.device, DEFAULT_INCARNATION)
            n.attrs["recv_device"] = recv.device
    pieces = {task_of(dev): g for dev, g in result.partitions.items()}
    return PartitionResult(pieces, result.transfers)


def _short_task(task: str) -> str:
    s = DeviceSpec.parse(task)
    return f"{s.job}_{s.task}"


def _restore_devices(g: GraphDef, devices: dict[str, str], copies: set[str]) -> None:
    """The graph's nodes get their own devices back. What the partitioner added: a ``_Recv``
    with no gate, or a Const's copy, goes where its first consumer is (as TensorFlow places a
    ``_Recv``; through a control dependency's Identity, where that one's consumer is), anything else where its first input is
    (a ``_Send`` with what it sends, a control dependency's dummy with its source, a gated
    ``_Recv`` with its control loop), a node with no input stays on the task's home device (a
    control loop's start)."""
    wanted: dict[str, str] = {}  # node -> its first consumer's device (nodes come in topological order)
    for n in reversed(g.nodes):
        dev = devices.get(n.name) or wanted.get(n.name)
        if dev:
            for inp in n.inputs:
                wanted[parse_input(inp).node] = dev
    placed: dict[str, str] = {}
    for n in g.nodes:
        if n.name in devices:
            n.device = devices[n.name]
        elif (n.op == "_Recv" or n.name in copies) and not n.inputs and n.name in wanted:
            n.device = wanted[n.name]
        elif n.inputs and parse_input(n.inputs[0]).node in placed:
            n.device = placed[parse_input(n.inputs[0]).node]
        placed[n.name] = n.device


def partition_piece(piece: GraphDef, incarnations: dict[str, int] | None = None) -> PartitionResult:
    """A worker's level: its task's piece split by device (the local partition step; the
    cross-task ``_Send``/``_Recv`` are ordinary nodes on their devices here)."""
    return _PiecePartitioner(piece, PartitionOptions(incarnations=incarnations)).run()


class _PiecePartitioner(_Partitioner):
    """The local partitioner, where a frame may lack its ``LoopCond``: the master's control loop
    for the frame receives the LoopCond value, and that value decides the iterations here."""

    def __init__(self, graph_def: GraphDef, opts: PartitionOptions):
        super().__init__(graph_def, opts)
        if self.frames is None:
            return
        missing = {f for f, info in self.frames.frames.items() if info.loop_cond is None}
        if not missing:
            return
        nodes = graph_def.node_map()
        for n in graph_def.nodes:
            frame = self.frames.frame_of[n.name]
            if frame not in missing or n.op != "Switch" or len(n.inputs) < 2:
                continue
            data, pred = (nodes.get(parse_input(i).node) for i in n.inputs[:2])
            if data is not None and data.op == "Merge" and pred is not None and pred.op == "_Recv" \
                    and self.frames.frame_of[pred.name] == frame:  # fmt: skip
                self.frames.frames[frame].loop_cond = pred.name
                missing.discard(frame)


def piece_args(piece: GraphDef) -> list[int]:
    """The ``_Arg`` indices a task's piece reads (the feeds the master sends it)."""
    return sorted(n.attrs["index"] for n in piece.nodes if n.op == "_Arg")


def downstream_tasks(task: str, piece: GraphDef) -> set[str]:
    """The tasks this piece sends to (its cross-task ``_Send``s, control loops' included); for
    a stage's piece (``stages.py``: task ``T#s``, receiving devices ``DEVICE#s``) the stages."""
    return {d for n in piece.nodes if n.op == "_Send" and (d := route_of(n.attrs["recv_device"])) != task}


def route_of(recv_device: str) -> str:
    """Where a value sent to ``recv_device`` goes: its task, or ``TASK#s`` for a stage's call."""
    device, stage = split_virtual(recv_device)
    return task_of(device) if stage is None else f"{task_of(device)}#{stage}"


def split_virtual(name: str) -> tuple[str, int | None]:
    """``TASK#s`` (a stage's call, ``stages.py``) or ``DEVICE#s`` (its receiving end) ->
    (TASK or DEVICE, s); a name without a stage -> (it, None)."""
    base, sep, stage = name.rpartition("#")
    return (base, int(stage)) if sep else (name, None)



# What a piece may hold to be a pure read of its task's variables: its outboxes are then a
# function of those variables alone (no feed, no received value, no kernel with state or
# randomness), so the master may pass on the last ones while nothing wrote to the task.
_PURE_READ_OPS = frozenset({"VarHandleOp", "ReadVariableOp", "Const", "Identity", "NoOp", "_Send"})


def pure_read(piece: GraphDef, fetches: bool = False) -> bool:
    """``fetches``: fetched values (``_Retval``) allowed too (a prefetched read returns them with
    the step it serves)."""
    allowed = _PURE_READ_OPS | {"_Retval"} if fetches else _PURE_READ_OPS
    return any(n.op == "_Send" for n in piece.nodes) and all(n.op in allowed for n in piece.nodes)


# Ray call options of a call that runs in its task's "flow" concurrency group, one at a time
# (``engine._task_worker_class``), rather than on the task's pool of 32 threads.
FLOW_GROUP = {"concurrency_group": "flow"}


def flow_group(piece: GraphDef) -> dict:
    """FLOW_GROUP for a dataflow call whose piece never waits on another call: every value it
    receives comes with the call, and it holds no other kernel that waits (a queue, a reader).
    Two workers' calls to a ps then run one after the other instead of taking turns at the GIL,
    so the first is answered in half the time (digits MLP on 1 ps + 2 workers: 13% more
    steps/s); a piece that may wait keeps the pool, where another call can make it go on."""
    from specflow.ops.registry import kernels_for

    waits = any(n.op != "_Recv" and any(getattr(k.fn, "is_async", False) for k in kernels_for(n.op))
                for n in piece.nodes)  # fmt: skip
    return {} if waits else FLOW_GROUP
