"""What a Session does with a fed value: the fed tensors' static specs (inferred over their
ancestors only) and the one cast rule (a value converts to the tensor's dtype only when no
information is lost; its shape is checked against the tensor's static shape)."""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from specflow.errors import ShapeError
from specflow.graph import dtypes
from specflow.graph.graph_def import GraphDef, parse_input
from specflow.graph.shapes import Shape
from specflow.ops.registry import TensorSpec
from specflow.runtime.prune import infer_runtime_graph


def feed_specs(graph: GraphDef, feeds: list[str]) -> list[TensorSpec]:
    """Static dtype and shape of each fed tensor, inferred over the feeds' ancestors only."""
    if not feeds:
        return []
    nodes = graph.node_map()
    seen: set[str] = set()
    todo = deque(parse_input(t).node for t in feeds)
    while todo:
        name = todo.popleft()
        if name not in seen:
            seen.add(name)
            todo.extend(parse_input(i).node for i in nodes[name].inputs)
    specs = infer_runtime_graph(GraphDef([n for n in graph.nodes if n.name in seen]))
    return [specs.spec(t) for t in feeds]


def convert_feed(tensor: str, value: Any, spec: TensorSpec) -> np.ndarray:
    """``value`` as the tensor's dtype, converting only when no information is lost; checks the
    shape against the tensor's static shape."""
    if not isinstance(value, np.ndarray) and hasattr(value, "__cuda_array_interface__"):
        value = value.get()  # a cupy array (an eager value on a GPU): fed through the host
    arr = value if isinstance(value, np.ndarray) else np.asarray(value)
    want = spec.dtype
    node = parse_input(tensor).node
    if want == dtypes.string:
        if arr.dtype.kind not in "OSU":
            raise ShapeError(f"cannot feed {arr.dtype} to '{tensor}' of dtype string", node=node)
        if arr.dtype.kind != "O" or any(isinstance(x, str) for x in arr.ravel().tolist()):  # str -> UTF-8
            arr = np.array([x.encode() if isinstance(x, str) else x for x in arr.ravel().tolist()],
                           dtype=object).reshape(arr.shape)  # fmt: skip
    elif want.np_type is None:
        raise ShapeError(f"cannot feed '{tensor}': a {want.name} tensor cannot be fed", node=node)
    elif arr.dtype != want.numpy:
        if not safe_cast(arr, want.numpy):
            raise ShapeError(
                f"cannot feed {arr.dtype} to '{tensor}' of dtype {want.name} without losing information",
                node=node,
            )
        arr = arr.astype(want.numpy)
    if not spec.shape.is_compatible_with(Shape(arr.shape)):
        raise ShapeError(
            f"cannot feed shape {list(arr.shape)} to '{tensor}' of shape {spec.shape}", node=node
        )
    return arr


def safe_cast(arr: np.ndarray, want: np.dtype) -> bool:
    """bool only to bool; ints to floats, complex, or ints the values fit; floats to any float or
    complex width (Python floats are float64); complex to complex."""
    src, dst = arr.dtype.kind, want.kind
    if src == "b" or dst == "b":
        return src == dst
    if src in "iu":
        if dst in "fc":
            return True
        if dst in "iu":
            if arr.size == 0:
                return True
            info = np.iinfo(want)
            return bool(arr.min() >= info.min and arr.max() <= info.max)
        return False
    if src == "f":
        return dst in "fc"
    if src == "c":
        return dst == "c"
    return False
