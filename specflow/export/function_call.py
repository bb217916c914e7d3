"""Calling one function of a loaded TF2 SavedModel's library by itself: what a restored
``tf.function`` that no signature serves runs (``sf.load(d).f(x)``; api/restored_functions.py).

A :class:`FunctionCall` extends the model's Session, once, with a small graph: a Placeholder per
tensor argument and a ``StatefulPartitionedCall`` of the FunctionDef whose trailing (captured)
arguments are the graph's own ``VarHandleOp`` (or Const) nodes. The call is converted exactly as
the loader converts the SavedModel's graph (``from_tf_graph_def``: inlined, If/While lowered), so
a function runs as its signatures do, and an assignment inside it changes the variable the
signatures and ``m.w`` read: they share the handle's resource.
"""

from __future__ import annotations

import re
import threading

import numpy as np
from tensorboard.compat.proto import graph_pb2

from specflow.errors import ExportError
from specflow.graph.graph_def import GraphDef
from specflow.graph.shapes import Shape
from specflow.io.tf_functions import check_supported
from specflow.io.tf_graph import from_tf_graph_def, node_to_proto, shape_to_proto

SCOPE = "sf_restored_functions"  # name scope of the call graphs added to the session (a node name
# starts with no underscore)


class FunctionCall:
    """Library function ``name`` of ``model`` (a LoadedModel) with its captures bound to the graph
    nodes ``captures`` (node names, in the order of the function's trailing arguments). Called
    with the tensor arguments' values, flat, in the function's argument order; returns its
    outputs as arrays."""

    def __init__(self, model, name: str, captures: list[str], shapes: list[Shape] | None = None):
        self.model = model
        self.name = name
        self.captures = captures
        self.shapes = shapes  # of the tensor arguments, for the placeholders (None: unknown)
        self._built: tuple[list[str], list[str], str, GraphDef] | None = None  # feeds, fetches, target, graph
        self._lock = threading.Lock()

    def __call__(self, values: list[np.ndarray]) -> list[np.ndarray]:
        feeds, fetches, target, _ = self.build()
        if len(values) != len(feeds):
            raise ExportError(f"function '{self.name}' takes {len(feeds)} tensor(s), got {len(values)}")
        out = self.model.session.run(fetches, dict(zip(feeds, values)), targets=[target])
        return [np.asarray(v) for v in out]

    def build(self) -> tuple[list[str], list[str], str, GraphDef]:
        """The session extended (once): the feeds, fetches and target of a call, and the nodes
        added (what a recording GradientTape runs op by op, api/restored_functions.py)."""
        with self._lock:  # once per function, however many threads call it first
            if self._built is None:
                self._built = self._extend()
            return self._built

    def _extend(self) -> tuple[list[str], list[str], str, GraphDef]:
        meta_graph, session = self.model.meta_graph, self.model.session
        library = {f.signature.name: f for f in meta_graph.graph_def.library.function}
        if self.name not in library:
            raise ExportError(f"the SavedModel's function library has no '{self.name}' (corrupted SavedModel?)")
        sig = library[self.name].signature
        n_args = len(sig.input_arg) - len(self.captures)
        if n_args < 0 or any(a.type == 0 for a in sig.input_arg) or any(a.type == 0 for a in sig.output_arg):
            raise ExportError(f"function '{self.name}' is not a concrete function with {len(self.captures)} "
                              "captured input(s)")
        # (a Python lambda's function is ``__inference_<lambda>_34``: '<' is no node-name character)
        scope = f"{SCOPE}/{re.sub(r'[^A-Za-z0-9_.-]', '_', self.name)}"
        proto = graph_pb2.GraphDef()
        proto.versions.CopyFrom(meta_graph.graph_def.versions)
        proto.library.CopyFrom(meta_graph.graph_def.library)
        # The captured nodes, copied so the small graph converts on its own; the copies are
        # dropped below and the call reads the session's nodes of those names.
        nodes = self.model.graph_def.node_map()
        for name in dict.fromkeys(self.captures):
            proto.node.append(node_to_proto(nodes[name]))
        feeds = []
        for i, arg in enumerate(sig.input_arg[:n_args]):
            node = proto.node.add(name=f"{scope}/input_{i}", op="Placeholder")
            node.attr["dtype"].type = arg.type
            if self.shapes is not None:
                node.attr["shape"].shape.CopyFrom(shape_to_proto(self.shapes[i]))
            feeds.append(f"{node.name}:0")
        call = proto.node.add(name=f"{scope}/call", op="StatefulPartitionedCall",
                              input=[f[:-2] for f in feeds] + list(self.captures))
        call.attr["f"].func.name = self.name
        call.attr["Tin"].list.type.extend(a.type for a in sig.input_arg)
        call.attr["Tout"].list.type.extend(a.type for a in sig.output_arg)
        converted = from_tf_graph_def(proto)
        added = GraphDef([n for n in converted.nodes if n.name not in self.captures], converted.versions)
        fetches = [f"{call.name}:{k}" for k in range(len(sig.output_arg))]
        check_supported(GraphDef(list(nodes.values()) + added.nodes), fetches + [call.name], feeds)
        session.extend(added)
        return feeds, fetches, call.name, added
