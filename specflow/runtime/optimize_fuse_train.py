"""Rewrites of a training step's elementwise chains into CPU-only kernels (optimize.py's step 4,
run by ``optimize_fuse.remap`` when every device is a CPU):

- ``fuse_dropout_masks``: Cast(GreaterEqual(RandomUniform(shape), rate)) -- dropout's mask --
  becomes ``_RandomUniformMask`` (ops/random_ops.py) named like the RandomUniform, so its
  generator (seeded by the node name), its kernel state and its checkpointed stream stay the
  same: it draws the raw bits numpy's uniform floats are made of and compares them with the
  rate's bit pattern, with no float array, comparison or cast pass in between (the mask equals
  the unfused one element for element, and the generator ends in the same state).
- ``fuse_scale_shift``: AddV2(Mul(x, scale), shift) (+ Relu) with per-channel vectors -- batch
  norm's normalization in training -- becomes ``_FusedScaleShift``, in place in one buffer.
- ``fuse_scaled_sum``: AddV2(AddN(Mul(g, scale), addend), shift) -- batch norm's input gradient
  -- becomes ``_FusedScaledSum``, in place in one buffer (ops/fused_elementwise_ops.py).

Each fires only when the intermediate results have no other reader (no fetch, no control edge)
and every node sits on one device.
"""

from __future__ import annotations

import numpy as np

from specflow.graph.graph_def import NodeDef, parse_input
from specflow.runtime.optimize import _FUSABLE_T, OptimizeResult, _dedupe, _Graph, _rewire, _sole_consumer


def producer(g: _Graph, node: NodeDef, k: int, op: str) -> NodeDef | None:
    """The node whose output 0 is ``node``'s data input ``k`` when it is an ``op`` on ``node``'s
    device (what a rewrite may fuse into ``node``), else None."""
    src = parse_input(node.data_inputs[k])
    found = g.nodes.get(src.node)
    if found is None or found.op != op or src.index or found.device != node.device:
        return None
    return found

_MASK_DRAWS = frozenset({"float32", "float64"})
_MASK_OUT = frozenset({"float16", "float32", "float64"})


def _dropout_group(g: _Graph, consumers, rnd: NodeDef):
    """(GreaterEqual, rate Const, Cast) that ``fuse_dropout_masks`` fuses with ``rnd``, or None."""
    ge = _sole_consumer(consumers, rnd.name)
    if ge is None or ge.op != "GreaterEqual" or ge.device != rnd.device:
        return None
    x, rate = (parse_input(t) for t in ge.data_inputs)
    const = g.nodes.get(rate.node)
    if x.node != rnd.name or x.index or const is None or const.op != "Const" or rate.index:
        return None
    if np.ndim(const.attrs.get("value")) != 0:
        return None
    cast = _sole_consumer(consumers, ge.name)
    if cast is None or cast.op != "Cast" or cast.device != rnd.device or str(cast.attrs.get("DstT")) not in _MASK_OUT:
        return None
    return ge, const, cast


def fuse_dropout_masks(g: _Graph, result: OptimizeResult) -> None:
    consumers = g.consumers()
    for rnd in [n for n in g.live() if n.op == "RandomUniform" and str(n.attrs.get("dtype")) in _MASK_DRAWS]:
        group = _dropout_group(g, consumers, rnd)
        if group is None:
            continue
        ge, const, cast = group
        # The rate Const's control inputs too: inside a loop they put it in the frame.
        controls = _dedupe([c for n in (rnd, ge, cast, const) for c in n.control_inputs])
        attrs = {k: rnd.attrs[k] for k in ("dtype", "T", "seed", "seed2") if k in rnd.attrs}
        attrs.update(threshold=float(np.asarray(const.attrs["value"])), DstT=cast.attrs["DstT"])
        fused = NodeDef(rnd.name, "_RandomUniformMask", [rnd.data_inputs[0], *("^" + c for c in controls)],
                        rnd.device, attrs, rnd.location)  # fmt: skip
        if "_transfer" in cast.attrs:
            fused.attrs["_transfer"] = cast.attrs["_transfer"]
        consumers[rnd.name] = [(c, i) for c, i in consumers[rnd.name] if c is not ge]
        for c, i in consumers.get(cast.name, []):
            c.inputs[i] = f"^{rnd.name}" if c.inputs[i].startswith("^") else rnd.name
            consumers[rnd.name].append((c, i))
        del g.nodes[ge.name], g.nodes[cast.name]
        consumers[const.name] = [(c, i) for c, i in consumers.get(const.name, []) if c is not ge]
        if not consumers[const.name] and const.name in g.nodes:
            del g.nodes[const.name]
        g.replace(rnd.name, fused)
        for i, inp in enumerate(fused.inputs):
            consumers[parse_input(inp).node].append((fused, i))
        result.fused.append(fused.name)


def _spec(g: _Graph, specs, tensor: str):
    """The TensorSpec inference gave ``tensor``, or, for an output of an earlier rewrite of
    optimize_fuse (an AddN of the rest, a RealDiv moved before its broadcast), its first input's
    when that operation keeps it (the others of the same shape, or a scalar divisor); else None."""
    src = parse_input(tensor)
    if src.node in specs.attrs:  # inference saw it
        return specs.spec(tensor)
    node = g.nodes.get(src.node)
    if node is None or src.index or node.op not in ("AddN", "RealDiv") or not node.data_inputs:
        return None
    first = _spec(g, specs, node.data_inputs[0])
    if first is None:
        return None
    for other in node.data_inputs[1:]:
        o = _spec(g, specs, other)
        if o is None or o.dtype != first.dtype:
            return None
        if (o.shape != first.shape) if node.op == "AddN" else (o.shape.rank != 0):
            return None
    return first


def is_channel_vector(shape, channels, rank_max: int) -> bool:
    """Whether ``shape`` is a vector over ``channels`` ([C], or [1, ..., 1, C] up to ``rank_max``
    dims): broadcast against an [..., C] array, it scales or shifts channels."""
    if channels is None or shape.rank is None or not 1 <= shape.rank <= rank_max:
        return False
    return tuple(shape.dims) == (1,) * (shape.rank - 1) + (channels,)


def _channel_operand(g: _Graph, specs, node: NodeDef, big: str | None):
    """(the full-size operand, the per-channel one) of a binary ``node``: the full-size one of a
    fully known shape [..., C] (the result's), the other a vector of C (or [1, ..., 1, C]) of
    its dtype; ``big`` names the full-size one when known. None otherwise."""
    ins = node.data_inputs
    if len(ins) != 2:
        return None
    for k in (0, 1):
        x, v = ins[k], ins[1 - k]
        if big is not None and parse_input(x) != parse_input(big):
            continue
        xs, vs = _spec(g, specs, x), _spec(g, specs, v)
        if xs is None or vs is None or xs.dtype != vs.dtype:
            continue
        shape = xs.shape
        if shape.rank is None or shape.rank < 2 or not shape.is_fully_defined:
            continue
        if is_channel_vector(vs.shape, shape[-1], shape.rank):
            return x, v
    return None


def fuse_scale_shift(g: _Graph, specs, result: OptimizeResult) -> None:
    consumers = g.consumers()
    for mul in [n for n in g.live() if n.op == "Mul" and str(n.attrs.get("T")) in _FUSABLE_T]:
        if mul.name not in g.nodes:
            continue
        add = _sole_consumer(consumers, mul.name)
        if add is None or add.op not in ("AddV2", "Add") or add.device != mul.device:
            continue
        scaled = _channel_operand(g, specs, mul, None)
        shifted = _channel_operand(g, specs, add, mul.name) if scaled is not None else None
        if shifted is None:
            continue
        group, ops = [mul, add], []
        relu = _sole_consumer(consumers, add.name)
        if relu is not None and relu.op == "Relu" and relu.device == mul.device:
            group, ops = [*group, relu], ["Relu"]
        last = group[-1]
        controls = _dedupe([c for n in group for c in n.control_inputs])
        fused = NodeDef(last.name, "_FusedScaleShift", [*scaled, shifted[1], *("^" + c for c in controls)],
                        mul.device, {"T": mul.attrs["T"], "fused_ops": ops}, last.location)  # fmt: skip
        _rewire(g, consumers, [], [n.name for n in group[:-1]], fused, last)
        result.fused.append(fused.name)


def _scaled_addend(g: _Graph, consumers, specs, rest: NodeDef):
    """(Mul, x, scale, addend) of an AddN of a per-channel product read only by it and another
    tensor of the product's shape, or None."""
    if rest.op != "AddN" or len(rest.data_inputs) != 2:
        return None
    for k in (0, 1):
        mul = producer(g, rest, k, "Mul")
        if mul is None:
            continue
        if _sole_consumer(consumers, mul.name) is not rest:
            continue
        pair = _channel_operand(g, specs, mul, None)
        addend = rest.data_inputs[1 - k]
        other = _spec(g, specs, addend)
        if pair is None or other is None or other.shape != _spec(g, specs, pair[0]).shape:
            continue
        if other.dtype != _spec(g, specs, pair[0]).dtype:
            continue
        return mul, *pair, addend
    return None


def fuse_scaled_sum(g: _Graph, specs, result: OptimizeResult) -> None:
    consumers = g.consumers()
    for add in [n for n in g.live() if n.op in ("AddV2", "Add") and str(n.attrs.get("T")) in _FUSABLE_T]:
        for k in (0, 1):
            src = parse_input(add.data_inputs[k]) if len(add.data_inputs) == 2 else None
            rest = g.nodes.get(src.node) if src is not None and not src.index else None
            if rest is None or rest.device != add.device or _sole_consumer(consumers, rest.name) is not add:
                continue
            shifted = _channel_operand(g, specs, add, add.data_inputs[k])
            found = _scaled_addend(g, consumers, specs, rest) if shifted is not None else None
            if found is None:
                continue
            mul, x, scale, addend = found
            group = [mul, rest, add]
            controls = _dedupe([c for n in group for c in n.control_inputs])
            fused = NodeDef(add.name, "_FusedScaledSum", [x, scale, addend, shifted[1], *("^" + c for c in controls)],
                            add.device, {"T": add.attrs["T"]}, add.location)  # fmt: skip
            _rewire(g, consumers, [], [n.name for n in group[:-1]], fused, add)
            result.fused.append(fused.name)
            break
