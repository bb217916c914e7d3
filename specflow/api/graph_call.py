"""A loaded signature whose graph holds loops or conds (frames: Enter, Switch, Merge, ...),
differentiated as a whole: its nodes are copied into another graph, where ``train/gradients``
builds the loop's backward loop exactly as it does for a spec's loop.

Such a graph cannot run op by op through the eager kernels (a frame is the executor's), so:

- inside ``sf.function`` the signature's nodes join the trace (its variables read by reference
  through the trace's handles), and a tape in the function differentiates them like any node;
- eagerly, under a recording ``GradientTape``, the call runs through the model's Session and is
  recorded as one entry; ``GradientTape.gradient`` copies the signature's nodes into its replay
  graph, reading the recorded inputs and variable reads, and runs the gradient through a Session
  (the forward loop runs again there: its backward loop pops what the forward pushed).
"""

from __future__ import annotations

from specflow.errors import ExportError
from specflow.graph.graph_def import GraphDef, NodeDef, parse_input, tensor_name
from specflow.graph.topo import LOOP_BACK_EDGES, MERGE_OPS, topological_order

# The tape's record op for an eager call (its attrs hold the GraphCall).
RECORD_OP = "_LoadedSignatureCall"
_HANDLE_READERS = {"ReadVariableOp", "ResourceGather"}
_HANDLE_PASSERS = {"Enter", "Exit", "Identity", "IdentityN", "Switch", "Merge", "NextIteration"}


class GraphCall:
    """One signature's closure (``nodes``, with frames), its inputs by alias -> Placeholder node,
    its outputs by alias -> tensor, the extra Placeholders fed constants (a spec's training flag)
    and the variables it reads (VarHandleOp node -> sf.Variable)."""

    def __init__(self, name: str, nodes: list[NodeDef], inputs: dict[str, str], outputs: dict[str, str],
                 extra: dict, variables: dict):
        self.name = name
        self.graph = GraphDef([n for n in nodes])
        self.inputs = inputs
        self.outputs = outputs
        self.extra = extra
        self.handles = {}
        for n in nodes:
            if n.op == "VarHandleOp":
                shared = n.attrs.get("shared_name") or n.name
                var = variables.get(shared)
                if var is None:
                    raise ExportError(f"signature '{name}' reads variable '{shared}', which the model lacks")
                self.handles[n.name] = var
        # Tensors passing a handle on (an Enter into a loop, a Switch in a cond, the IdentityN of a
        # lowered While), with the variable's dtype: with the reads given as values, each carries
        # the value instead.
        self.carried: dict[str, object] = {}
        for n in topological_order(self.graph, allow_back_edges=LOOP_BACK_EDGES):
            for k, i in enumerate(n.data_inputs):
                dtype = self._handle_dtype(i)
                if dtype is None:
                    continue
                if n.op in _HANDLE_PASSERS:
                    outs = [k] if n.op == "IdentityN" else [0, 1] if n.op == "Switch" else [0]
                    for o in outs:
                        self.carried[tensor_name(n.name, o)] = dtype
                elif n.op not in _HANDLE_READERS or k != 0:
                    raise ExportError(f"signature '{name}' updates or passes on a variable's handle "
                                      f"({n.op} '{n.name}'): only reads can be differentiated")
        self._calls = 0

    def _handle_dtype(self, tensor: str):
        """The dtype of the variable whose handle ``tensor`` is (or passes on); None if none."""
        ref = parse_input(tensor)
        var = self.handles.get(ref.node)
        if var is not None:
            return var.dtype
        return self.carried.get(tensor_name(ref.node, ref.index))

    def inline(self, b, inputs: dict[str, str], reads: dict[str, str] | None = None,
               handles: dict[str, str] | None = None, control: str | None = None) -> dict[str, str]:
        """Copy the nodes into builder ``b`` under a fresh scope; return alias -> output tensor.

        ``inputs``: alias (and each extra Placeholder's node name) -> the tensor of ``b`` it
        reads. Variables: either ``reads`` (VarHandleOp node -> a tensor of ``b`` holding the
        value read: each read of the handle becomes that tensor, a gather of it a GatherV2) or
        ``handles`` (VarHandleOp node -> a handle of ``b``, read by the copied ReadVariableOps,
        which wait for ``control``, the trace's last effect)."""
        self._calls += 1
        prefix = b.unique_name(f"{self.name}_call")
        subst: dict[str, str] = {}  # node of the signature -> the tensor of b standing for output 0
        for alias, node in self.inputs.items():
            subst[node] = inputs[alias]
        for node in self.extra:
            subst[node] = inputs[node]
        nodes = self.graph.node_map()
        renamed: dict[str, str] = {}

        def src(inp: str) -> str:
            ref = parse_input(inp)
            if ref.node in subst:
                return subst[ref.node]
            return tensor_name(renamed[ref.node], ref.index)

        for node in topological_order(self.graph, allow_back_edges=LOOP_BACK_EDGES):
            if node.name in subst:
                continue
            if node.op == "VarHandleOp":
                subst[node.name] = handles[node.name] if handles is not None else reads[node.name]
                continue
            data = node.data_inputs
            if reads is not None and node.op in _HANDLE_READERS and self._handle_dtype(data[0]) is not None:
                value = src(data[0])  # the read (or the value an Enter carries into the loop)
                if node.op == "ReadVariableOp":
                    new = b.add_op("Identity", [value], name=f"{prefix}/{node.name}", exact_name=True)
                else:
                    axis = int(node.attrs.get("batch_dims", 0))
                    new = b.add_op("GatherV2", [value, src(data[1]), b.const(axis, "int32", f"{prefix}/axis")],
                                   {"batch_dims": axis}, name=f"{prefix}/{node.name}", exact_name=True)
                renamed[node.name] = new.name
                continue
            copy = node.copy()
            copy.name = f"{prefix}/{node.name}"
            renamed[node.name] = copy.name
            copy.attrs = {k: v for k, v in copy.attrs.items() if k != "_class"}
            if reads is not None:
                _carry_values(copy, node, self._handle_dtype)
            if "frame_name" in copy.attrs:  # each copy of a loop is a frame of its own
                copy.attrs["frame_name"] = f"{prefix}/{copy.attrs['frame_name']}"
            ins = []
            for i in node.inputs:
                ref = parse_input(i)
                if i.startswith("^"):
                    if ref.node in renamed:
                        ins.append(f"^{renamed[ref.node]}")
                    elif ref.node in subst:
                        ins.append(f"^{parse_input(subst[ref.node]).node}")
                elif ref.node in renamed or ref.node in subst:
                    ins.append(src(i))
                else:  # a back edge (NextIteration -> Merge), renamed once its source is copied
                    ins.append(f"{prefix}/{i}")
            if node.op == "ReadVariableOp" and control is not None:
                ins.append(f"^{control}")
            copy.inputs = [i for i in ins if not i.startswith("^")] + [i for i in ins if i.startswith("^")]
            b._append(copy, _back_edges(copy, nodes, prefix) if copy.op in MERGE_OPS else None)
        return {alias: src(t) for alias, t in self.outputs.items()}


def _carry_values(copy: NodeDef, node: NodeDef, handle_dtype) -> None:
    """A node passing a handle on passes the read value on instead: its type attr (for IdentityN
    the entry of that input) becomes the variable's dtype."""
    for k, i in enumerate(node.data_inputs):
        dtype = handle_dtype(i)
        if dtype is None:
            continue
        if node.op == "IdentityN":
            types = list(copy.attrs["T"])
            types[k] = dtype
            copy.attrs["T"] = types
        else:
            copy.attrs["T"] = dtype


def _back_edges(copy: NodeDef, nodes: dict, prefix: str) -> dict:
    """For a copied Merge, its back edges' sources (not copied yet) as ``_append`` needs them to
    infer the Merge from its forward input: the signature's own NextIteration nodes, renamed."""
    view = {}
    for i in copy.data_inputs:
        name = parse_input(i).node
        original = nodes.get(name[len(prefix) + 1:]) if name.startswith(prefix + "/") else None
        if original is not None and original.op in LOOP_BACK_EDGES:
            stub = original.copy()
            stub.name = name
            view[name] = stub
    return view
