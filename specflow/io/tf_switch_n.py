"""TF's ``_SwitchN``, which its own lowering of ``Case`` leaves in a graph frozen with
``convert_variables_to_constants_v2`` (lower_control_flow=True, its default): ``data`` routed to
output ``output_index`` (out of range: the last, N - 1), every other output dead. specflow has no
such op; at load time each becomes a ``Switch`` per output (common_runtime/lower_case_op.cc's
shape, with specflow's primitives)::

    S/index    = Identity(output_index)
    S/index_k  = Const(k) after ^S/index (so it lives in output_index's frame)
    S/pred_k   = Equal(output_index, S/index_k)                       k < N - 1
    S/pred_N-1 = LogicalOr(Less(output_index, 0), GreaterEqual(output_index, N - 1))
    S/switch_k = Switch(data, S/pred_k);  S:k -> S/switch_k:1
    S          = NoOp after S/index (what ^S waits for)
"""

from __future__ import annotations

import numpy as np
from tensorboard.compat.proto import graph_pb2, node_def_pb2, types_pb2

from specflow.errors import GraphError
from specflow.graph.names import unique_name


def expand_switch_n(proto: graph_pb2.GraphDef) -> graph_pb2.GraphDef:
    """``proto`` with its top-level ``_SwitchN`` nodes expanded (``proto`` itself when it has none)."""
    if not any(n.op == "_SwitchN" for n in proto.node):
        return proto
    taken = {n.name for n in proto.node}
    out = graph_pb2.GraphDef()
    out.CopyFrom(proto)
    del out.node[:]
    ports: dict[str, list[str]] = {}
    for node in proto.node:
        if node.op != "_SwitchN":
            out.node.append(node)
            continue
        data = [i for i in node.input if not i.startswith("^")]
        if len(data) != 2:
            raise GraphError(f"_SwitchN '{node.name}' needs 2 inputs (data, output_index), got {len(data)}")
        n = int(node.attr["num_outs"].i)
        if n < 1:
            raise GraphError(f"_SwitchN '{node.name}' has num_outs {n}; it must be >= 1")
        controls = [i for i in node.input if i.startswith("^")]
        value, index = data

        def add(base, op, inputs, node=node, **attrs):
            name = unique_name(f"{node.name}/{base}", taken)
            new = node_def_pb2.NodeDef(name=name, op=op, input=inputs, device=node.device)
            for key, v in attrs.items():
                new.attr[key].CopyFrom(v)
            out.node.append(new)
            return name

        int_t = node_def_pb2.NodeDef()
        int_t.attr["T"].type = types_pb2.DT_INT32
        # the constants wait on an Identity of the index (not on its node: that may be a fed Placeholder)
        after = "^" + add("index", "Identity", [index], T=int_t.attr["T"])

        def const(k, after=after):
            c = node_def_pb2.NodeDef()
            c.attr["dtype"].type = types_pb2.DT_INT32
            c.attr["value"].tensor.dtype = types_pb2.DT_INT32
            c.attr["value"].tensor.int_val.append(int(np.int32(k)))
            return add(f"index_{k}", "Const", [after], dtype=c.attr["dtype"], value=c.attr["value"])

        outs = []
        for k in range(n):
            if k < n - 1:
                pred = add(f"pred_{k}", "Equal", [index, const(k)], T=int_t.attr["T"])
            else:
                below = add("below", "Less", [index, const(0)], T=int_t.attr["T"])
                above = add("above", "GreaterEqual", [index, const(n - 1)], T=int_t.attr["T"])
                pred = add(f"pred_{k}", "LogicalOr", [below, above])
            outs.append(add(f"switch_{k}", "Switch", [value, pred, *controls], T=node.attr["T"]) + ":1")
        out.node.append(node_def_pb2.NodeDef(name=node.name, op="NoOp", device=node.device,
                                             input=[after, *controls]))
        ports[node.name] = outs
    for node in out.node:
        for k, ref in enumerate(node.input):
            src, _, port = ref.partition(":")
            if src in ports:
                if int(port or 0) >= len(ports[src]):
                    raise GraphError(f"'{node.name}' reads output {port} of _SwitchN '{src}', which has {len(ports[src])}")
                node.input[k] = ports[src][int(port or 0)]
    return out
