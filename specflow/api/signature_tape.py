"""A loaded model's signature under a recording GradientTape: its graph run op by op through the
eager kernels, so the tape records every op and gradients reach the inputs and the model's
variables (TensorFlow's loaded functions are differentiable too); inside sf.function, the same
ops join the trace. Otherwise signatures run through the model's Session as before.

The graph is the signature's closure, in dependency order: Placeholders take the fed tensors
(the tape's own objects, so a watched input stays watched), a VarHandleOp the model's
sf.Variable (its ReadVariableOps are the variable's reads, which the tape records), every other
op its eager kernel (or a node of the trace). Loops and conds lowered to frames (Enter, Switch,
Merge, ...) cannot run op by op: such a signature is differentiated as a whole
(``api/graph_call.py``): its nodes join an sf.function's trace, or, eagerly, the call runs
through the Session and the tape records it as one entry whose gradient is the loop's backward
loop, as ``train/gradients`` builds it for any graph.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from specflow.api.tensor import EagerTensor, GraphTensor, Tensor
from specflow.errors import ExportError
from specflow.graph.graph_def import GraphDef, parse_input
from specflow.graph.topo import needed
from specflow.io.tf_graph import GRADIENT_OP_TYPE

_CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"  # where a Session's fetched values are
FRAME_OPS = {"Enter", "RefEnter", "Exit", "RefExit", "Merge", "RefMerge", "Switch", "RefSwitch",
             "NextIteration", "RefNextIteration", "LoopCond"}


class TapedSignature:
    """Runs one signature of ``graph`` eagerly; ``variables``: shared_name -> sf.Variable."""

    def __init__(self, name: str, graph: GraphDef, inputs: dict, outputs: dict, variables: dict,
                 extra_feeds: dict | None = None, targets: tuple[str, ...] = ()):
        self.name = name
        self.targets = list(targets)  # nodes run for their effects too (a restored function's call)
        self.inputs = inputs
        self.outputs = outputs
        self.variables = variables
        self.extra = {parse_input(k).node: v for k, v in (extra_feeds or {}).items()}
        self._graph = graph
        self._nodes: list | None = None  # found on first use: loading pays nothing for it
        self._graph_call = None

    @property
    def nodes(self) -> list:
        if self._nodes is None:
            fed = {parse_input(t).node for t, _ in self.inputs.values()} | set(self.extra)
            wanted = [t for t, _ in self.outputs.values()] + self.targets
            self._nodes = _in_order(_closure(self._graph, wanted, fed), fed)
            self.loops = [f"'{n.name}' ({n.op})" for n in self._nodes if n.op in FRAME_OPS]
        return self._nodes

    def applies(self, feeds: dict) -> bool:
        """Whether to run this way: a tape is recording, or the call is inside sf.function."""
        from specflow.api.context import STATE

        if STATE.trace is None and not any(t._recording for t in STATE.tapes):
            return False
        self.nodes  # noqa: B018 (sets self.loops)
        if STATE.trace is not None and self.loops and STATE.trace.depth:
            raise ExportError(f"signature '{self.name}' holds loops or conds ({self.loops[0]}), which cannot be "
                              "called inside an sf.cond branch or sf.while_loop body; call it outside them")
        return True

    @property
    def graph_call(self):
        from specflow.api.graph_call import GraphCall

        if self._graph_call is None:
            fed = {parse_input(t).node for t, _ in self.inputs.values()} | set(self.extra)
            closure = _closure(self._graph, [t for t, _ in self.outputs.values()] + self.targets, fed)
            self._graph_call = GraphCall(
                self.name, closure.nodes, {a: parse_input(t).node for a, (t, _) in self.inputs.items()},
                {a: t for a, (t, _) in self.outputs.items()}, self.extra, self.variables)
        return self._graph_call

    def _input(self, alias: str, v, spec, trace):
        """Fed value ``v`` as a tensor (of the trace, or eager), checked against its spec."""
        from specflow.api.op_functions import to_tensor
        from specflow.export.loader import check_input

        if _is_variable(v):
            v = v._read()
        if not isinstance(v, Tensor):
            v = to_tensor(check_input(alias, np.asarray(v), spec))
            v = trace.capture(v) if trace is not None else v
        elif isinstance(v, GraphTensor) and trace is not None and v.trace is not trace:
            v = trace.capture_outer(v)
        elif isinstance(v, EagerTensor) and trace is not None:
            v = trace.capture(v)
        if v.dtype != spec.dtype or not spec.shape.is_compatible_with(v.shape):
            raise ExportError(f"input '{alias}' must be {spec.dtype.name}{spec.shape}, got {v.dtype.name}{v.shape}")
        return v

    def _call_graph(self, feeds: dict, run) -> dict:
        """A signature with loops, as a whole (see ``api/graph_call.py``)."""
        from specflow.api.context import STATE
        from specflow.api.graph_call import RECORD_OP
        from specflow.api.op_functions import to_tensor

        gc, trace = self.graph_call, STATE.trace
        ins = {a: self._input(a, feeds[a], spec, trace) for a, (_, spec) in self.inputs.items()}
        for node, value in self.extra.items():
            t = to_tensor(np.asarray(value))
            ins[node] = trace.capture(t) if trace is not None else t
        if trace is not None:
            handles = {node: trace.variable_handle(var).name for node, var in gc.handles.items()}
            outs = gc.inline(trace.builder, {k: t.name for k, t in ins.items()}, handles=handles,
                             control=trace.last_effect)
            # Later effects (an optimizer's assigns) wait for the outputs, so for every read the
            # loops made (their reads are inside frames, which a control edge cannot name).
            done = trace.builder.add_op("NoOp", [], name=trace.builder.unique_name(f"{self.name}_done"),
                                        exact_name=True, control_inputs=sorted(set(outs.values())))
            trace.last_effect = done.name
            return {a: trace._tensor(t) for a, t in outs.items()}
        reads = {node: var._read() for node, var in gc.handles.items()}  # the tape sees these reads
        values = run({a: np.asarray(ins[a]) for a in self.inputs})
        out = {a: EagerTensor(np.asarray(v), self.outputs[a][1].dtype, _CPU0) for a, v in values.items()}
        attrs = {"call": gc, "inputs": list(ins), "reads": list(reads), "outputs": list(out)}
        for tape in STATE.tapes:
            if tape._recording:
                tape._record(RECORD_OP, attrs, list(ins.values()) + list(reads.values()), list(out.values()))
        return out

    def __call__(self, feeds: dict, run=None) -> dict:
        """The outputs by alias; ``run`` (feeds of numpy arrays -> output arrays) is the
        Session's run, for a signature with loops called eagerly."""
        from specflow.api import eager
        from specflow.api.context import STATE
        from specflow.api.op_functions import call, to_tensor
        from specflow.ops.registry import get_op

        if self.loops:
            return self._call_graph(feeds, run)
        trace = STATE.trace
        values: dict[str, Tensor] = {}
        by_node = {parse_input(t).node: (alias, spec) for alias, (t, spec) in self.inputs.items()}
        for node in self.nodes:
            if node.name in by_node:
                alias, spec = by_node[node.name]
                values[node.name] = self._input(alias, feeds[alias], spec, trace)
                continue
            if node.name in self.extra:
                v = to_tensor(np.asarray(self.extra[node.name]))
                values[node.name] = trace.capture(v) if trace is not None else v
                continue
            ins = [values[_canon(i)] for i in node.inputs if not i.startswith("^")]
            if node.op == "NoOp":
                continue
            if node.op == "VarHandleOp":
                name = node.attrs.get("shared_name") or node.name
                var = self.variables.get(name)
                if var is None:
                    raise ExportError(f"signature '{self.name}' reads variable '{name}', which the model lacks")
                values[node.name] = var
                continue
            if node.op == "ReadVariableOp" and _is_variable(ins[0]):
                values[node.name] = ins[0]._read()
                continue
            if node.op == "ResourceGather" and _is_variable(ins[0]):  # a read the tape sees, then a gather
                axis = int(node.attrs.get("batch_dims", 0))
                values[node.name] = call("GatherV2", ins[0]._read(), ins[1], np.int32(axis), batch_dims=axis)
                continue
            if node.op == "PlaceholderWithDefault":
                values[node.name] = ins[0]
                continue
            if node.op == "Placeholder":
                raise ExportError(f"signature '{self.name}' needs '{node.name}', which is not one of its inputs")
            # (a saved custom gradient's key stays: export/saved_gradients.py)
            attrs = {k: v for k, v in node.attrs.items() if not k.startswith("_") or k == GRADIENT_OP_TYPE}
            if trace is None:
                outs = eager.execute(get_op(node.op), [v._handle if _is_variable(v) else v for v in ins], attrs)
            else:
                flat = [trace.variable_handle(v) if _is_variable(v) else
                        trace.capture(v) if isinstance(v, EagerTensor) else v for v in ins]
                outs = trace.add_op(get_op(node.op), flat, attrs, None)
            for k, t in enumerate(outs):
                values[node.name if k == 0 else f"{node.name}:{k}"] = t
        out = {}
        for alias, (t, _) in self.outputs.items():
            v = values[_canon(t)]
            out[alias] = v._read() if _is_variable(v) else v
        return out


def _is_variable(v) -> bool:
    from specflow.api.variables import Variable

    return isinstance(v, Variable)


def _canon(name: str) -> str:
    ref = parse_input(name)
    return ref.node if ref.index == 0 else f"{ref.node}:{ref.index}"


def _closure(graph: GraphDef, tensors: list[str], fed: set[str]) -> GraphDef:
    """The nodes ``tensors`` depend on (data and control inputs), not looking past fed nodes."""
    keep = needed(graph, tensors, fed)
    return GraphDef([n for n in graph.nodes if n.name in keep])


def _in_order(graph: GraphDef, fed: set[str]) -> list:
    """The nodes in dependency order (inputs first); a fed node's inputs do not count."""
    nodes = graph.node_map()
    deps = {n.name: {parse_input(i).node for i in n.inputs} & nodes.keys() if n.name not in fed else set()
            for n in graph.nodes}
    users: dict[str, list[str]] = {}
    for name, ds in deps.items():
        for d in ds:
            users.setdefault(d, []).append(name)
    ready = deque(name for name, ds in deps.items() if not ds)
    left = {name: len(ds) for name, ds in deps.items()}
    order = []
    while ready:
        name = ready.popleft()
        order.append(nodes[name])
        for u in users.get(name, ()):
            left[u] -= 1
            if left[u] == 0:
                ready.append(u)
    return order
