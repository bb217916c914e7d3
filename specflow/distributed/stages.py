"""Stages: a step whose tasks send to each other both ways, cut into calls that do not.

A training step on a parameter server sends weights ps -> worker and gradients worker -> ps: the
tasks' transfers form a cycle, so no order of whole-task calls lets each call start with all it
receives (the dataflow protocol, ``master._submit_flow``); the tasks must run at once and push
to each other, two calls from inside actors per step. But the nodes never form a cycle. Giving
every node a *stage* (the number of cross-task hops on the longest path reaching it) cuts each
task's piece into sub-pieces, one per stage it has: the ps's reads (stage 0), the worker's
forward and backward pass (stage 1), the ps's updates (stage 2). Each sub-piece is a *virtual
task* ``TASK#s`` run by one call of its task's actor, and those calls form a DAG the master
submits as dataflow: no task calls another, and the driver's ``ps#0 -> worker#1 -> ps#2`` is the
plain-Ray parameter server's message pattern.

Stages are assigned as late as the graph allows (a source is pulled to its first consumer's
stage), so a worker's feeds and constants do not make a stage of their own. An edge between two
stages of one task becomes a ``_Send``/``_Recv`` pair like a cross-task one (the value rides in
the earlier call's outbox, an object-store reference on the same node); a source that is free to
repeat (a variable handle, a constant, a feed) is copied into each stage that reads it instead.
A receiving end's ``recv_device`` carries the stage (``DEVICE#s``): that is how the sending
task's rendezvous routes the value to the right call's outbox (``worker.register_graph``).

Steps with loop frames keep the push protocol (a frame spanning tasks iterates across them).
"""

from __future__ import annotations

import numpy as np

from specflow.graph.dtypes import float32
from specflow.graph.graph_def import GraphDef, NodeDef, parse_input, tensor_name
from specflow.runtime.partition import DEFAULT_INCARNATION
from specflow.runtime.prune import infer_runtime_graph

from .placement import task_order

MAX_STAGES = 8  # a step's stages use step ids step_id .. step_id + MAX_STAGES - 1
LOOP_NODE_OPS = frozenset({"Enter", "Exit", "NextIteration", "LoopCond"})
_REPEATABLE = frozenset({"VarHandleOp", "Const", "_Arg"})  # copied into each stage that reads them


def step_calls(graphs: dict[str, GraphDef], dataflow: bool = True, stages: bool = True):
    """How the master runs a step of these pieces: (protocol, the pieces it runs, their order
    for the dataflow protocol or None). ``dataflow``: the tasks' transfers form no cycle, one
    call per task; ``stages``: cut into stages first (``stage_split``), one call per stage;
    ``push``: every task at once, pushing to each other (a loop spanning tasks)."""
    order = task_order(graphs) if dataflow else None
    if order is not None:
        return "dataflow", graphs, order
    staged = stage_split(graphs) if dataflow and stages else None
    order = None if staged is None else task_order(staged)
    if order is not None:
        return "stages", staged, order
    return "push", graphs, None


def stage_split(graphs: dict[str, GraphDef]) -> dict[str, GraphDef] | None:
    """The step's pieces cut by stage, keyed ``TASK#s`` (tasks in their order, stages rising),
    or None when that does not apply (a loop frame, a cycle, too many stages, one stage)."""
    if any(n.op in LOOP_NODE_OPS for g in graphs.values() for n in g.nodes):
        return None
    fed = _feeds_where_read(graphs)
    stage = _stages(fed)
    if stage is None:
        return None
    if max(stage.values(), default=0) >= MAX_STAGES:
        return None
    if fed is graphs and all(len({stage[(t, n.name)] for n in g.nodes}) <= 1 for t, g in graphs.items()):
        return None  # nothing to cut (a feed read where it is used may have been all it took)
    return _Splitter(fed, stage).run()


def _feeds_where_read(graphs: dict[str, GraphDef]) -> dict[str, GraphDef]:
    """The pieces with each feed sent from one task to another read where it is used: the
    receiving ``_Recv`` becomes a copy of the ``_Arg`` (the master hands every call the args its
    piece reads), the ``_Send`` goes, and so does an ``_Arg`` left with no reader. Else a feed
    placed on one ps and read on another would cost a stage and a call of its own."""
    args = {}
    for g in graphs.values():
        nodes = g.node_map()
        for n in g.nodes:
            if n.op == "_Send" and nodes.get(n.inputs[0].split(":")[0], n).op == "_Arg" and ":" not in n.inputs[0]:
                args[_pair(n)] = (n.name, nodes[n.inputs[0]])
    if not args:
        return graphs
    sends = {name for name, _ in args.values()}
    out = {}
    for t, g in graphs.items():
        nodes = []
        for n in g.nodes:
            if n.name in sends and n.op == "_Send":
                continue
            src = args.get(_pair(n)) if n.op == "_Recv" and not n.inputs else None
            if src is not None:
                arg = src[1]
                n = NodeDef(n.name, "_Arg", [], n.device, {"T": arg.attrs["T"], "index": arg.attrs["index"]}, n.location)
            nodes.append(n)
        read = {parse_input(i).node for n in nodes for i in n.inputs}
        nodes = [n for n in nodes if n.op != "_Arg" or n.name in read]
        if nodes:
            out[t] = GraphDef(nodes=nodes, versions=dict(g.versions), library=g.library)
    return out


def _pair(node: NodeDef) -> tuple[str, str, str]:
    """What joins a _Send to its _Recv (a tensor sent to two tasks has two pairs of one name)."""
    a = node.attrs
    return a["tensor_name"], a["send_device"], a["recv_device"]


def _stages(graphs: dict[str, GraphDef]) -> dict[tuple[str, str], int] | None:
    """Each node's stage: ASAP (longest path, a cross-task edge counting 1), then pulled as
    late as its consumers allow (a node no one reads keeps its ASAP stage)."""
    sends = {_pair(n): (t, n.name) for t, g in graphs.items() for n in g.nodes if n.op == "_Send"}
    preds: dict[tuple[str, str], list[tuple[tuple[str, str], int]]] = {}
    for t, g in graphs.items():
        for n in g.nodes:
            ps = [((t, parse_input(i).node), 0) for i in n.inputs]
            if n.op == "_Recv":
                src = sends.get(_pair(n))
                if src is None or src[0] == t:
                    return None  # a pair within one task (not the master's level): leave it
                ps.append((src, 1))
            preds[(t, n.name)] = ps
    succs: dict[tuple[str, str], list[tuple[tuple[str, str], int]]] = {k: [] for k in preds}
    indegree = {k: 0 for k in preds}
    for k, ps in preds.items():
        for p, w in ps:
            if p not in succs:
                return None  # an input from outside the step's pieces
            succs[p].append((k, w))
            indegree[k] += 1
    order, ready = [], [k for k, d in indegree.items() if d == 0]
    while ready:
        k = ready.pop()
        order.append(k)
        for s, _ in succs[k]:
            indegree[s] -= 1
            if indegree[s] == 0:
                ready.append(s)
    if len(order) < len(preds):
        return None
    asap: dict[tuple[str, str], int] = {}
    for k in order:
        asap[k] = max((asap[p] + w for p, w in preds[k]), default=0)
    late: dict[tuple[str, str], int] = {}
    for k in reversed(order):
        late[k] = min((late[s] - w for s, w in succs[k]), default=asap[k])
    return late


class _Splitter:
    def __init__(self, graphs: dict[str, GraphDef], stage: dict[tuple[str, str], int]):
        self.graphs, self.stage = graphs, stage
        self.out: dict[tuple[str, int], list[NodeDef]] = {}
        self.carried: dict[tuple[str, int], str] = {}  # (source tensor or ^node, dest stage) -> its stand-in
        self.specs: dict[str, object] = {}
        self.incarnation: dict[str, int] = {}
        for g in graphs.values():
            for n in g.nodes:
                if n.op == "_Send":
                    self.incarnation[n.attrs["send_device"]] = n.attrs["send_device_incarnation"]

    def run(self) -> dict[str, GraphDef]:
        recv_stage = {_pair(n): self.stage[(t, n.name)] for t, g in self.graphs.items() for n in g.nodes
                      if n.op == "_Recv"}  # fmt: skip
        for t, g in self.graphs.items():
            self.task, self.nodes = t, g.node_map()
            self.taken = set(self.nodes)
            for n in g.nodes:
                s = self.stage[(t, n.name)]
                node = NodeDef(n.name, n.op, [self._input(i, s) for i in n.inputs], n.device, dict(n.attrs), n.location)
                if n.op in ("_Send", "_Recv"):  # the receiving call's stage rides on its device name
                    node.attrs["recv_device"] = f"{n.attrs['recv_device']}#{recv_stage[_pair(n)]}"
                self.out.setdefault((t, s), []).append(node)
        order = sorted(self.out, key=lambda ts: (list(self.graphs).index(ts[0]), ts[1]))
        pieces = {}
        for t, s in order:
            g = GraphDef(versions=dict(self.graphs[t].versions), library=self.graphs[t].library)
            g.nodes = self.out[(t, s)]
            pieces[f"{t}#{s}"] = g
        return pieces

    def _input(self, ref: str, s: int) -> str:
        """``ref`` as read by a node in stage ``s``: as it is when its source is in that stage
        (or repeatable: then copied there), else through a transfer from the source's stage."""
        r = parse_input(ref)
        src = self.nodes[r.node]
        sp = self.stage[(self.task, src.name)]
        if sp == s:
            return ref
        if src.op in _REPEATABLE and not src.inputs:
            key = (src.name, s)
            if key not in self.carried:
                self.carried[key] = src.name
                self.out.setdefault((self.task, s), []).insert(0, NodeDef(src.name, src.op, [], src.device,
                                                                           dict(src.attrs), src.location))  # fmt: skip
            return ref
        if r.is_control:
            return "^" + self._carry(src, None, sp, s)
        return self._carry(src, r.index, sp, s)

    def _carry(self, src: NodeDef, index: int | None, sp: int, s: int) -> str:
        """A _Send in stage ``sp`` and its _Recv in stage ``s`` for ``src:index`` (a control
        edge: for a dummy constant that runs after ``src``)."""
        key = (f"^{src.name}" if index is None else tensor_name(src.name, index), s)
        if key in self.carried:
            return self.carried[key]
        base = f"{src.name}/_stage_{sp}_to_{s}" + ("_ctrl" if index is None else f"_{index}")
        if index is None:
            dummy = NodeDef(self._unique(base + "/dummy"), "Const", [f"^{src.name}"], src.device,
                            {"value": np.array(0.0, np.float32), "dtype": float32})  # fmt: skip
            self.out.setdefault((self.task, sp), []).append(dummy)
            sent, dtype = dummy.name, float32
        else:
            sent = src.name if index == 0 else f"{src.name}:{index}"
            dtype = self._dtype(tensor_name(src.name, index))
        name = self._unique(base)
        common = {"tensor_name": f"{self.task}/{name}", "send_device": src.device,
                  "send_device_incarnation": self.incarnation.get(src.device, DEFAULT_INCARNATION),
                  "recv_device": f"{src.device}#{s}", "client_terminated": False}  # fmt: skip
        self.out.setdefault((self.task, sp), []).append(NodeDef(name + "/_send", "_Send", [sent], src.device, {"T": dtype, **common}))
        self.out.setdefault((self.task, s), []).append(NodeDef(name + "/_recv", "_Recv", [], src.device,
                                                               {"tensor_type": dtype, **common}))  # fmt: skip
        self.carried[key] = name + "/_recv"
        return name + "/_recv"

    def _dtype(self, tensor: str):
        if self.task not in self.specs:
            self.specs[self.task] = infer_runtime_graph(self.graphs[self.task])
        return self.specs[self.task].spec(tensor).dtype

    def _unique(self, base: str) -> str:
        name, i = base, 1
        while name in self.taken or f"{name}/_send" in self.taken:
            name, i = f"{base}_{i}", i + 1
        self.taken.update({name, f"{name}/_send", f"{name}/_recv"})
        return name
