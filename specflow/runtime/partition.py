"""Partitioning (whitepaper 3.2.2, Figure 4): one GraphDef per device, joined by _Send/_Recv.

Each cross-device data edge ``x:k -> y`` becomes ``x:k -> _Send`` on x's device and
``_Recv -> y`` on y's device. A tensor is sent once per destination device: all its consumers
there share one ``_Recv``. A cross-device control edge ``x -> ^y`` sends a dummy scalar: on x's
device ``Const(0.0, ^x) -> _Send``, on y's device ``_Recv -> Identity`` and y waits on
``^Identity`` -- unless an output of x goes to y's device anyway: y then waits on that output's
``_Recv``, done once x has run and dead exactly when x is (not for a Switch, whose untaken output
is dead while the Switch is live). With ``copy_consts`` (the master's level, between tasks) a
Const is copied to each device that uses it rather than sent every step, and one used only on
other devices leaves its own. The executor builds rendezvous keys from the _Send/_Recv attrs:
``{send_device};{incarnation:x};{recv_device};{tensor_name};{frame_id}:{iter_id}``.

Loops (TF's AddControlFlow): an edge inside a loop frame that crosses devices becomes a
_Send/_Recv pair like any other, and the executor puts the value's frame and iteration into the
key at run time. But a device only has the iterations something on it starts: a _Recv has no
inputs, so on its own it would run once, in the root frame, and a device holding only part of a
loop's body (or only its invariants) has no NextIteration to start iteration 1. So each device
of a frame that spans devices gets a *control loop* for it, a skeleton that iterates in step with
the real loop, driven by the frame's LoopCond (received each iteration):

    start (Const) -> Enter(F) -> Merge -> Switch(Merge, LoopCond) -> NextIteration:1 -> Merge
                                  (named <F>/_cloop_on_<DEV>/...)

and each _Recv inside the frame waits on ``^Merge`` of its device's control loop, so it runs once
per iteration, in the right frame. A value that exists only in iteration 0 (a non-constant
Enter's, and what is computed from it alone: ``ControlFlowInfo.first_only``) is sent once, so
its _Recv waits on ``^Enter`` of the control loop instead, which runs in iteration 0 only; on
``^Merge`` it would wait in iteration 1 for a value never sent, and the step would hang. A
nested frame's control loop enters from its parent frame's control loop on the same device
(from its Enter, if the nested frame is entered only in the parent's iteration 0). (TF adds
control loops only on receiving devices, which leaves a device that only sends inside the loop
with one iteration.) A loop's back edge (NextIteration -> Merge) never crosses devices: the
placer colocates them.

16-bit transfers (whitepaper 5.5, opt-in: ``PartitionOptions.lossy_transfers``, or the producer's
``_transfer`` attr, which wins): a float32 tensor crosses as its top 16 bits,
``x -> _TruncateToBfloat16 -> _Send(T=uint16)`` on the sending device and
``_Recv(uint16) -> _ExpandFromBfloat16`` on the receiving one, whose consumers all read the
expansion. A rewrite here, so the local and the remote rendezvous carry it unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from specflow.errors import DeviceError, GraphError
from specflow.graph.device_spec import DeviceSpec
from specflow.graph.dtypes import DType, float32, uint16
from specflow.graph.graph_def import GraphDef, NodeDef, parse_input, tensor_name
from specflow.graph.shapes import Shape
from specflow.graph.topo import LOOP_BACK_EDGES, topological_order
from specflow.runtime.frame_info import ROOT, ControlFlowInfo
from specflow.runtime.place import device_sort_key
from specflow.runtime.prune import infer_runtime_graph

DEFAULT_INCARNATION = 1

# Ops that leave an output dead while they themselves are live: a control edge from one is not
# the same as an edge from one of its outputs.
_SELECTIVE_OUTPUTS = frozenset({"Switch", "RefSwitch", "_SwitchN"})

# A control loop's nodes, in the order they are named.
_CONTROL_LOOP_OPS = ("Enter", "Merge", "Switch", "NextIteration")


@dataclass
class PartitionOptions:
    incarnations: dict[str, int] | None = None  # device -> incarnation (DEFAULT_INCARNATION if absent)
    # Send every float32 tensor crossing devices as its top 16 bits (whitepaper 5.5; a node's
    # ``_transfer`` attr, "bfloat16" or "float32", decides for its own outputs either way).
    lossy_transfers: bool = False
    # A Const feeding another device is copied there instead of sent every step (the master's
    # level: a worker's hyperparameters used by the ps's update ops).
    copy_consts: bool = False


@dataclass
class Transfer:
    """One tensor sent from one device to another each step."""

    tensor: str  # "x:k" on the source device (for a control edge: the dummy's "x/..:0")
    src_device: str
    dst_device: str
    dtype: DType
    shape: Shape
    bytes_per_step: int | None  # None when the shape is not fully known statically
    send_node: str
    recv_node: str
    lossy: bool = False  # sent as bfloat16 bits (uint16): half the bytes, see lossy_transfer()


@dataclass
class PartitionResult:
    partitions: dict[str, GraphDef]  # device -> its subgraph, devices in device order
    transfers: list[Transfer] = field(default_factory=list)


def short_device_names(devices: list[DeviceSpec]) -> dict[DeviceSpec, str]:
    """``CPU_0``-style names for node names; job/task are added only when they disambiguate."""
    short = {d: f"{d.device_type}_{d.device_index}" for d in devices}
    if len(set(short.values())) < len(short):
        short = {d: f"{d.job}_{d.replica}_{d.task}_{d.device_type}_{d.device_index}" for d in devices}
    return short


class _Partitioner:
    def __init__(self, graph_def: GraphDef, opts: PartitionOptions):
        self.graph_def = graph_def
        self.specs = infer_runtime_graph(graph_def)
        self.incarnations = {DeviceSpec.parse(k).to_string(): v for k, v in (opts.incarnations or {}).items()}
        self.lossy_default = opts.lossy_transfers
        self.node_attrs = {n.name: n.attrs for n in graph_def.nodes}
        self.node_ops = {n.name: n.op for n in graph_def.nodes}
        self.device: dict[str, str] = {}
        for n in graph_def.nodes:
            spec = DeviceSpec.parse(n.device)
            if not spec.is_fully_specified:
                what = f"device '{n.device}' is not a full device name" if n.device else "has no device"
                raise DeviceError(
                    f"cannot partition: '{n.name}' ({n.op}) {what} (run place() first)",
                    node=n.name,
                    location=n.location,
                )
            self.device[n.name] = spec.to_string()
        specs = sorted({DeviceSpec.parse(d) for d in self.device.values()}, key=device_sort_key)
        self.short = {d.to_string(): s for d, s in short_device_names(specs).items()}
        self.nodes: dict[str, list[NodeDef]] = {d.to_string(): [] for d in specs}
        self.taken = {n.name for n in graph_def.nodes}
        self.recvs: dict[tuple[str, str], str] = {}  # (tensor, dst device) -> the node to read
        self.transfers: list[Transfer] = []
        # Loops: each node's frame, and the control loops made so far
        # ((frame, device) -> (Enter, Merge)).
        self.frames = ControlFlowInfo(graph_def) if any(n.op == "Enter" for n in graph_def.nodes) else None
        self.control_loops: dict[tuple[str, str], tuple[str, str]] = {}
        self.consts = {n.name: n for n in graph_def.nodes if n.op == "Const" and not n.inputs} if opts.copy_consts else {}
        self.copies: set[str] = set()  # the Consts' copies made (a copy is not a transfer)
        # (source, device) -> an output of the source consumed on the device: a control edge
        # between them waits on that output's _Recv instead of a dummy of its own.
        self.data_out: dict[tuple[str, str], int] = {}
        used_on: dict[str, set[str]] = {}  # Const -> the devices using it
        for n in graph_def.nodes:
            dst = self.device[n.name]
            for inp in n.inputs:
                ref = parse_input(inp)
                if ref.node in self.consts:
                    used_on.setdefault(ref.node, set()).add(dst)
                if not ref.is_control and self.device[ref.node] != dst:
                    key = (ref.node, dst)
                    self.data_out[key] = min(ref.index, self.data_out.get(key, ref.index))
        # A Const used only on other devices: its copies serve every use, the original goes.
        self.moved = {c for c, devs in used_on.items() if self.device[c] not in devs}

    def unique(self, base: str) -> str:
        name, i = base, 1
        while name in self.taken:
            name, i = f"{base}_{i}", i + 1
        self.taken.add(name)
        return name

    def add(self, device: str, node: NodeDef) -> NodeDef:
        node.device = device
        self.device[node.name] = device
        self.nodes[device].append(node)
        return node

    def transfer(self, src_node: str, index: int, dst: str, owner: str = "", label: str = "") -> str:
        """Send ``src_node:index`` to ``dst`` (once) and return the name of its _Recv there.

        The _Send/_Recv are named ``<owner>/_send_<label>_to_<DST>`` / ``.._recv_<label>_on_..``
        (owner: src_node, label: the output index, unless given). Inside a loop frame the _Recv
        waits on the control loop of ``dst``: on its Merge (every iteration) or, for a value
        that exists only in iteration 0, on its Enter (see the module docstring)."""
        owner, label = owner or src_node, label or str(index)
        tensor = tensor_name(src_node, index)
        if (tensor, dst) in self.recvs:
            return self.recvs[(tensor, dst)]
        if src_node in self.consts:  # the same value, made where it is used
            const = self.consts[src_node]
            copy = self.add(dst, NodeDef(self.unique(f"{src_node}/_copy_on_{self.short[dst]}"), "Const", [],
                                         attrs=dict(const.attrs), location=const.location))  # fmt: skip
            if self.frames:
                self.frames.add(copy.name, ROOT)
            self.copies.add(copy.name)
            self.recvs[(tensor, dst)] = copy.name
            return copy.name
        src = self.device[src_node]
        spec = self.specs.spec(tensor)
        common = {
            "tensor_name": tensor,
            "send_device": src,
            "send_device_incarnation": self.incarnations.get(src, DEFAULT_INCARNATION),
            "recv_device": dst,
            "client_terminated": False,
        }
        inp = src_node if index == 0 else tensor
        lossy = label != "ctrl" and lossy_transfer(spec.dtype, self.node_attrs.get(src_node, {}), self.lossy_default)
        frame = self.frames.out_frame(src_node) if self.frames else ROOT
        wire = spec.dtype
        if lossy:  # truncate on the sending device: only the top 16 bits travel
            trunc = self.add(src, NodeDef(
                self.unique(f"{owner}/_to_bfloat16_{label}_for_{self.short[dst]}"), "_TruncateToBfloat16", [inp],
            ))  # fmt: skip
            if self.frames:
                self.frames.add(trunc.name, frame, self.frames.first_only(src_node))
            inp, wire = trunc.name, uint16
        send = self.add(src, NodeDef(
            self.unique(f"{owner}/_send_{label}_to_{self.short[dst]}"), "_Send", [inp],
            attrs={"T": wire, **common},
        ))  # fmt: skip
        gate = []
        if frame != ROOT:
            enter, merge = self.control_loops[(frame, dst)]
            gate = [f"^{enter if self.frames.first_only(src_node) else merge}"]
        recv = self.add(dst, NodeDef(
            self.unique(f"{owner}/_recv_{label}_on_{self.short[dst]}"), "_Recv", gate,
            attrs={"tensor_type": wire, **common},
        ))  # fmt: skip
        out = recv.name
        if lossy:  # zeros into the low 16 bits on the receiving device
            out = self.add(dst, NodeDef(
                self.unique(f"{owner}/_from_bfloat16_{label}_on_{self.short[dst]}"), "_ExpandFromBfloat16", [recv.name],
            )).name  # fmt: skip
            if self.frames:
                self.frames.add(out, frame, self.frames.first_only(src_node))
        n = spec.shape.num_elements()
        self.transfers.append(Transfer(
            tensor, src, dst, spec.dtype, spec.shape,
            None if n is None else n * wire.itemsize, send.name, recv.name, lossy,
        ))  # fmt: skip
        self.recvs[(tensor, dst)] = out
        return out

    def control_transfer(self, src_node: str, dst: str) -> str:
        """Carry ``^src_node`` to ``dst``: returns the Identity there that stands for it."""
        key = ("^" + src_node, dst)
        if key in self.recvs:
            return self.recvs[key]
        if src_node in self.consts:  # its copy there: ready at once, as the Const is
            return self.transfer(src_node, 0, dst)
        index = self.data_out.get((src_node, dst))
        if index is not None and self.node_ops[src_node] not in _SELECTIVE_OUTPUTS:
            # One of its outputs is sent there anyway: its _Recv completes once the source has
            # run and is dead exactly when the source is (a Switch's untaken output is dead on
            # a live Switch, so a Switch keeps its dummy).
            self.recvs[key] = self.transfer(src_node, index, dst)
            return self.recvs[key]
        src = self.device[src_node]
        dummy = self.add(src, NodeDef(
            self.unique(f"{src_node}/_ctrl_to_{self.short[dst]}"), "_HostConst", [f"^{src_node}"],
            attrs={"value": np.array(0.0, np.float32), "dtype": float32},
        ))  # fmt: skip
        self.specs.inferencer.add(dummy)
        if self.frames:
            self.frames.add(dummy.name, self.frames.out_frame(src_node), self.frames.first_only(src_node))
        recv = self.transfer(dummy.name, 0, dst, owner=src_node, label="ctrl")
        ident = self.add(dst, NodeDef(
            self.unique(f"{src_node}/_ctrl_on_{self.short[dst]}"), "Identity", [recv],
            attrs={"T": float32},
        ))  # fmt: skip
        self.recvs[key] = ident.name
        return ident.name

    def add_control_loops(self) -> list[NodeDef]:
        """A control loop for each device of every frame that spans devices (holds nodes on
        several, or sends or receives inside the frame), and for the frames around it on that
        device; returns their nodes, to partition."""
        spans: dict[str, set[str]] = {}
        for node in self.graph_def.nodes:
            dst = self.device[node.name]
            frame = self.frames.frame_of[node.name]
            if frame != ROOT:
                spans.setdefault(frame, set()).add(dst)
            for inp in node.inputs:
                src = parse_input(inp).node
                frame = self.frames.out_frame(src)
                if frame != ROOT and self.device[src] != dst:
                    spans.setdefault(frame, set()).update((self.device[src], dst))
        added: list[NodeDef] = []
        for frame, devices in spans.items():
            if len(devices) > 1:
                for device in sorted(devices):
                    self.control_loop(frame, device, added)
        return added

    def control_loop(self, frame: str, device: str, added: list[NodeDef]) -> tuple[str, str]:
        """The Enter and Merge of ``frame``'s control loop on ``device``, built (into ``added``)
        if new."""
        key = (frame, device)
        if key in self.control_loops:
            return self.control_loops[key]
        info = self.frames.frames[frame]
        if info.loop_cond is None:
            raise GraphError(
                f"loop frame '{frame}' spans devices but has no LoopCond: the other devices "
                "follow the loop's iterations by receiving its LoopCond value"
            )
        scope = f"{frame}/_cloop_on_{self.short[device]}"
        enter, merge, switch, nxt = (self.unique(f"{scope}/{op}") for op in _CONTROL_LOOP_OPS)
        if info.parent == ROOT:
            start = self.unique(f"{scope}/start")
            const = {"value": np.array(0.0, np.float32), "dtype": float32}
            added.append(NodeDef(start, "Const", device=device, attrs=const))
            self.frames.add(start, ROOT)
        else:  # entered in every parent iteration, or only in the parent's iteration 0
            parent_enter, parent_merge = self.control_loop(info.parent, device, added)
            start = parent_enter if info.first_only else parent_merge
        t = {"T": float32}
        enter_attrs = {
            **t,
            "frame_name": frame,
            "is_constant": False,
            "parallel_iterations": info.parallel_iterations,
        }
        for name, op, inputs, attrs in (
            (enter, "Enter", [start], enter_attrs),
            (merge, "Merge", [enter, nxt], {**t, "N": 2}),
            (switch, "Switch", [merge, info.loop_cond], t),
            (nxt, "NextIteration", [f"{switch}:1"], t),
        ):
            added.append(NodeDef(name, op, inputs, device, attrs))
            self.frames.add(name, frame)
        for n in added:
            self.device[n.name] = n.device
        self.control_loops[key] = (enter, merge)
        return enter, merge

    def run(self) -> PartitionResult:
        extra = self.add_control_loops() if self.frames else []
        for node in self.graph_def.nodes + extra:
            if node.name in self.moved:
                continue
            dst = self.device[node.name]
            copy = node.copy()
            data, ctrl = [], []
            for inp in node.inputs:
                ref = parse_input(inp)
                if self.device[ref.node] == dst:
                    (ctrl if ref.is_control else data).append(inp)
                elif ref.is_control:
                    ctrl.append("^" + self.control_transfer(ref.node, dst))
                else:
                    data.append(self.transfer(ref.node, ref.index, dst))
            copy.inputs = data + list(dict.fromkeys(ctrl))
            self.add(dst, copy)
        partitions = {}
        for dev, nodes in self.nodes.items():
            g = GraphDef(nodes, dict(self.graph_def.versions), dict(self.graph_def.library))
            g.nodes = topological_order(g, allow_back_edges=LOOP_BACK_EDGES)
            partitions[dev] = g
        return PartitionResult(partitions, self.transfers)


def lossy_transfer(dtype: DType, attrs: dict, default: bool) -> bool:
    """Whether a tensor of ``dtype`` made by a node with ``attrs`` crosses devices as 16 bits:
    float32 only; the node's ``_transfer`` attr ("bfloat16" or "float32") wins over the
    session's ``default``."""
    if dtype != float32:
        return False
    own = attrs.get("_transfer")
    return default if own is None else own == "bfloat16"


def partition(graph_def: GraphDef, opts: PartitionOptions | None = None) -> PartitionResult:
    """Split a placed graph into one GraphDef per device (see the module docstring).

    Every node must have a full device name (DeviceError otherwise); names are normalized.
    _Send/_Recv names are ``<x>/_send_<k>_to_<DST>`` and ``<x>/_recv_<k>_on_<DST>`` (``DST`` as
    ``CPU_1``), unique and deterministic. Each partition is closed: its inputs name its nodes.
    """
    return _Partitioner(graph_def, opts or PartitionOptions()).run()
