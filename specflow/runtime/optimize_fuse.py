"""The remapping step's rewrites beside ``_FusedMatMul`` (optimize.py's step 4), run in this
order by ``remap``; the first two as TF's Grappler remapper and ``fold_batch_norms`` do them:

- ``fold_scales``: Conv2D followed by a Mul with a per-channel vector ``s`` (its sole consumer)
  becomes Conv2D with the filter ``f * s`` (a new Mul of the [KH, KW, C, O] filter by the [O]
  vector, computed every step: variables may change between steps, so nothing is folded into
  a constant). Batch norm at inference, ``x * (gamma * rsqrt(var + eps)) + (beta - mean * ...)``,
  thus leaves a Conv2D and an add of a vector.
- ``fuse_convolutions``: Conv2D followed by BiasAdd, or by an AddV2 of a per-channel vector (its
  sole consumer), and then optionally Relu becomes ``_FusedConv2D`` (ops/fused_ops.py), named like
  the last node it replaces: the bias and the activation are applied in place to the product.
- ``pool_before_relu``: MaxPool(Relu(x)) becomes Relu(MaxPool(x)) when the pool alone reads
  the Relu (inference: training reads it for the gradients) and no window is all padding
  (VALID or SAME): max and Relu commute exactly (NaN included, but for a window of NaNs only,
  which TF's CPU MaxPool turns into float's lowest and the Relu after it into 0), and Relu then
  runs on the pooled tensor, a quarter of the elements for 2x2 pooling. The Relu takes the pool's name.
- ``relu_grad_before_pool_grad``: ReluGrad(MaxPoolGrad(x, y, dy), x) becomes
  MaxPoolGrad(x, y, ReluGrad(dy, y)) for disjoint windows (training: a Relu before a max pool):
  each input element gets the gradient of the one window whose first maximum it is, where it
  equals that window's y, so masking by y > 0 before routing is masking by x > 0 after, on a
  quarter of the elements for 2x2 pooling.
- ``fuse_conv_pool``: MaxPool (VALID or SAME, NHWC) of a ``_FusedConv2D`` with fused_ops
  [BiasAdd] (+ a Relu after the pool, which ``pool_before_relu`` put there) or [BiasAdd, Relu]
  that the pool alone reads becomes ``_FusedConv2DMaxPool`` (ops/fused_ops.py), named like the
  last node it replaces: the bias and Relu commute with the max, so they run on the pooled
  tensor, and im2col orders its rows so that the pool reduces contiguous blocks.
- ``fuse_conv_pool_training`` (only when every device is a CPU: its kernels are numpy's): the
  same MaxPool(_FusedConv2D) in a training graph, where the pool's MaxPoolGrad reads the
  convolution too and its gradient goes only to the bias's BiasAddGrad and the filter's
  Conv2DBackpropFilter, becomes ``_FusedConv2DMaxPoolTrain`` (named like the pool) and
  ``_FusedConv2DMaxPoolTrainGrad`` (named like the filter gradient; the bias gradient is its
  output 1): the activations stay in the gathered row order from the convolution to the
  filter gradient (ops/fused_ops.py), so neither the pool nor its gradient walks NHWC windows.
- ``broadcast_in_consumer``: Mul(BroadcastTo(v), y), and AddN(a, ..., BroadcastTo(v)) as
  AddV2(AddN(a, ...), v), where y (a) already has the broadcast shape (both fully known): the
  operation broadcasts v itself (batch norm's moment gradients), the full-size copy is never made.
- ``negate_after_sum``: Sum(Neg(x)) becomes Neg(Sum(x)) (the gradient of a Sub summed to a
  broadcast operand's shape): the negation on the reduced tensor, the same values.
- ``divide_before_broadcast``: RealDiv(BroadcastTo(v), scalar) becomes
  BroadcastTo(RealDiv(v, scalar)) (the gradient of a Mean, batch norm's moments): the division
  on the small tensor, the same values.
- On CPU-only devices, ``optimize_fuse_train``'s rewrites of training's elementwise chains
  (dropout's mask, batch norm's scale and shift and its input gradient).

Only NHWC convolutions of floats on one device are rewritten, and only when no other node (nor
control edge) reads the intermediate results, so training graphs fuse too: a convolution's
gradients read its input, filter and the incoming gradient, never its output. Shapes come from
one inference over the graph before the rewrites: each rewrite asks only about tensors that
existed then (a folded Conv2D takes the name, shape and dtype of the Mul it replaces).
"""

from __future__ import annotations

from specflow.errors import SpecflowError
from specflow.graph.graph_def import GraphDef, NodeDef, parse_input
from specflow.ops.fused_ops import PARAMS_KEPT
from specflow.runtime import optimize_fuse_train as fuse_train
from specflow.runtime.optimize import (
    _FUSABLE_T,
    OptimizeResult,
    _dedupe,
    _fuse,
    _Graph,
    _rewire,
    _sole_consumer,
    _unique,
)
from specflow.runtime.prune import infer_runtime_graph

_CONV_ATTRS = ("strides", "padding", "explicit_paddings", "data_format", "dilations", "use_cudnn_on_gpu")


def _convs(g: _Graph) -> list[NodeDef]:
    return [
        n
        for n in g.live()
        if n.op == "Conv2D"
        and str(n.attrs.get("T")) in _FUSABLE_T
        and n.attrs.get("data_format", "NHWC") == "NHWC"
    ]


def _other_operand(node: NodeDef, conv: NodeDef) -> str | None:
    """The operand of a binary ``node`` that is not ``conv``'s output (None if both are)."""
    ins = node.data_inputs
    mine = (conv.name, f"{conv.name}:0")
    if len(ins) != 2 or (ins[0] in mine) == (ins[1] in mine):
        return None
    return ins[1] if ins[0] in mine else ins[0]


def _channel_vector(specs, tensor: str, channels, rank_max: int) -> bool:
    """Whether ``tensor`` is statically a vector over ``channels`` (shape [O], or [1, ..., 1, O]
    up to ``rank_max`` dims): broadcast against an NHWC output, it scales or shifts channels."""
    return fuse_train.is_channel_vector(specs.spec(tensor).shape, channels, rank_max)


def _known(specs, *tensors: str) -> bool:
    """Whether the inference before the rewrites saw every one of ``tensors``' nodes."""
    return all(parse_input(t).node in specs.attrs for t in tensors)


_CANDIDATES = frozenset({"Conv2D", "Relu", "ReluGrad", "RealDiv", "Neg", "RandomUniform", "Mul"})


def remap(g: _Graph, result: OptimizeResult, cpu_only: bool = False) -> None:
    if not any(n.op in _CANDIDATES for n in g.live()):
        return
    try:
        specs = infer_runtime_graph(GraphDef(g.live()))
    except SpecflowError:  # an inconsistent graph: the step reports it, unoptimized
        specs = None
    pool_before_relu(g, result)
    relu_grad_before_pool_grad(g, result)
    if specs is not None:
        divide_before_broadcast(g, specs, result)
        broadcast_in_consumer(g, specs, result)
        negate_after_sum(g, result)
        fold_scales(g, specs, result)
    fuse_convolutions(g, specs, result)
    fuse_conv_pool(g, result)
    if cpu_only and specs is not None:
        fuse_conv_pool_training(g, specs, result)
    if cpu_only:
        fuse_train.fuse_dropout_masks(g, result)
        if specs is not None:
            fuse_train.fuse_scale_shift(g, specs, result)
            fuse_train.fuse_scaled_sum(g, specs, result)


def fold_scales(g: _Graph, specs, result: OptimizeResult) -> None:
    consumers = g.consumers()
    for conv in _convs(g):
        mul = _sole_consumer(consumers, conv.name)
        if mul is None or mul.op != "Mul" or mul.device != conv.device:
            continue
        scale = _other_operand(mul, conv)
        if scale is None or not _known(specs, conv.name, scale):
            continue
        out = specs.outputs(conv.name)[0]
        if specs.spec(scale).dtype != out.dtype:
            continue
        if out.shape.rank != 4 or not _channel_vector(specs, scale, out.shape[3], 4):
            continue
        x, f = conv.data_inputs
        scaled = NodeDef(
            _unique(g, f"{mul.name}/scaled_filter"),
            "Mul",
            [f, scale],
            conv.device,
            {"T": mul.attrs["T"]},
            mul.location,
        )
        controls = _dedupe([c for n in (conv, mul) for c in n.control_inputs])
        folded = NodeDef(
            mul.name,
            "Conv2D",
            [x, scaled.name, *("^" + c for c in controls)],
            conv.device,
            {**{k: v for k, v in conv.attrs.items() if not k.startswith("_")}},
            mul.location,
        )
        if "_transfer" in mul.attrs:  # how its output crosses devices (runtime/partition.py)
            folded.attrs["_transfer"] = mul.attrs["_transfer"]
        g.order.append(scaled)
        g.nodes[scaled.name] = scaled
        del g.nodes[conv.name]
        g.replace(mul.name, folded)
        for node in (scaled, folded):
            for i, inp in enumerate(node.inputs):
                consumers[parse_input(inp).node].append((node, i))
        result.folded_scales.append(mul.name)


def fuse_convolutions(g: _Graph, specs, result: OptimizeResult) -> None:
    consumers = g.consumers()
    for conv in _convs(g):
        add = _sole_consumer(consumers, conv.name)
        if add is None or add.device != conv.device:
            continue
        if add.op == "BiasAdd":
            if add.data_inputs[0] not in (conv.name, f"{conv.name}:0") or add.attrs.get("data_format", "NHWC") != "NHWC":
                continue
            bias = add.data_inputs[1]
        elif add.op == "AddV2" and specs is not None:
            bias = _other_operand(add, conv)
            if bias is None or not _known(specs, conv.name, bias):
                continue
            out = specs.outputs(conv.name)[0]
            if out.shape.rank != 4 or specs.spec(bias).dtype != out.dtype:
                continue
            if not _channel_vector(specs, bias, out.shape[3], 1):
                continue
        else:
            continue
        attrs = {k: conv.attrs[k] for k in _CONV_ATTRS if k in conv.attrs}
        _fuse(g, consumers, result, [conv, add], "_FusedConv2D", [*conv.data_inputs, bias],
              {"T": conv.attrs["T"], "TArgs": [conv.attrs["T"]], "num_args": 1, "num_host_args": 0, **attrs})  # fmt: skip


def fuse_conv_pool(g: _Graph, result: OptimizeResult) -> None:
    """MaxPool(_FusedConv2D(x, f, bias)) (+ Relu) -> _FusedConv2DMaxPool (ops/fused_ops.py) when
    the pool alone reads the convolution (inference: training's MaxPoolGrad reads it too)."""
    consumers = g.consumers()
    for pool in [n for n in g.live() if n.op == "MaxPool" and str(n.attrs.get("T")) in _FUSABLE_T]:
        conv = fuse_train.producer(g, pool, 0, "_FusedConv2D")
        if conv is None:
            continue
        ops = list(conv.attrs.get("fused_ops") or [])
        if _sole_consumer(consumers, conv.name) is not pool or ops not in (["BiasAdd"], ["BiasAdd", "Relu"]):
            continue
        if pool.attrs.get("padding") not in ("VALID", "SAME") or pool.attrs.get("data_format", "NHWC") != "NHWC":
            continue
        if conv.attrs.get("data_format", "NHWC") != "NHWC" or str(conv.attrs["T"]) != str(pool.attrs["T"]):
            continue
        group = [conv, pool]
        relu = _sole_consumer(consumers, pool.name)
        if ops == ["BiasAdd"] and relu is not None and relu.op == "Relu" and relu.device == pool.device:
            group, ops = [*group, relu], ["BiasAdd", "Relu"]
        last = group[-1]
        controls = _dedupe([c for n in group for c in n.control_inputs])
        attrs = {k: conv.attrs[k] for k in _CONV_ATTRS if k in conv.attrs}
        attrs.update(T=conv.attrs["T"], pool_ksize=list(pool.attrs["ksize"]), pool_strides=list(pool.attrs["strides"]),
                     pool_padding=pool.attrs["padding"], fused_ops=ops)  # fmt: skip
        if all(getattr(g.nodes.get(parse_input(t).node), "op", None) in ("ReadVariableOp", "Const")
               for t in conv.data_inputs[1:]):  # fmt: skip
            attrs[PARAMS_KEPT] = True  # the kernel may keep what it derives from filter and bias
        fused = NodeDef(last.name, "_FusedConv2DMaxPool", [*conv.data_inputs, *("^" + c for c in controls)],
                        pool.device, attrs, last.location)  # fmt: skip
        _rewire(g, consumers, [], [n.name for n in group[:-1]], fused, last)
        result.pooled_convolutions.append(fused.name)


_POOL_WINDOW = ("ksize", "strides", "padding", "explicit_paddings", "data_format")


def _consumers_of(consumers, name: str) -> list[tuple[NodeDef, int]]:
    return consumers.get(name, [])


def _training_pool_group(g: _Graph, consumers, specs, pool: NodeDef):
    """(conv, MaxPoolGrad, BiasAddGrad, Conv2DBackpropFilter) that ``fuse_conv_pool_training``
    fuses with ``pool``, or None."""
    conv = fuse_train.producer(g, pool, 0, "_FusedConv2D")
    if conv is None:
        return None
    if list(conv.attrs.get("fused_ops") or []) not in (["BiasAdd"], ["BiasAdd", "Relu"]):
        return None
    if conv.attrs.get("data_format", "NHWC") != "NHWC" or str(conv.attrs["T"]) != str(pool.attrs.get("T")):
        return None
    if pool.attrs.get("padding") not in ("VALID", "SAME") or pool.attrs.get("data_format", "NHWC") != "NHWC":
        return None
    outs = (conv.name, f"{conv.name}:0")
    users = _consumers_of(consumers, conv.name)
    grads = [c for c, i in users if c is not pool and c.op == "MaxPoolGrad" and i == 0]
    if len(users) != 2 or len(grads) != 1 or any(c.inputs[i] not in outs for c, i in users):
        return None
    mpg = grads[0]
    if mpg.device != pool.device or parse_input(mpg.data_inputs[1]) != parse_input(pool.name):
        return None
    if any(str(mpg.attrs.get(a)) != str(pool.attrs.get(a)) for a in _POOL_WINDOW):
        return None
    readers = _consumers_of(consumers, mpg.name)
    by_op = {c.op: (c, i) for c, i in readers}
    if len(readers) != 2 or set(by_op) != {"BiasAddGrad", "Conv2DBackpropFilter"}:
        return None
    (bag, bi), (cbf, ci) = by_op["BiasAddGrad"], by_op["Conv2DBackpropFilter"]
    if bi != 0 or ci != 2 or bag.attrs.get("data_format", "NHWC") != "NHWC" or mpg.control_inputs:
        return None
    if parse_input(cbf.data_inputs[0]) != parse_input(conv.data_inputs[0]) or {bag.device, cbf.device} != {pool.device}:
        return None
    if any(str(cbf.attrs.get(a)) != str(conv.attrs.get(a)) for a in ("strides", "padding", "explicit_paddings", "dilations")):
        return None
    # Static shapes: the pool's windows tile the convolution's output, the filter reads every channel.
    if not _known(specs, pool.name, conv.data_inputs[0], conv.data_inputs[1]):
        return None
    x, f = specs.spec(conv.data_inputs[0]).shape, specs.spec(conv.data_inputs[1]).shape
    y = specs.outputs(pool.name)[0].shape
    if x.rank != 4 or f.rank != 4 or y.rank != 4 or None in (*x.dims[1:], *f.dims, *y.dims[1:]) or f[2] != x[3]:
        return None
    ks, st = [int(v) for v in pool.attrs["ksize"]], [int(v) for v in pool.attrs["strides"]]
    conv_out = specs.spec(pool.data_inputs[0]).shape if _known(specs, pool.data_inputs[0]) else None
    if conv_out is None or conv_out.rank != 4 or None in conv_out.dims[1:3] or ks != st:
        return None
    if any(y[d] * ks[d] != conv_out[d] for d in (1, 2)):
        return None
    return conv, mpg, bag, cbf


def fuse_conv_pool_training(g: _Graph, specs, result: OptimizeResult) -> None:
    consumers = g.consumers()
    for pool in [n for n in g.live() if n.op == "MaxPool" and str(n.attrs.get("T")) in _FUSABLE_T]:
        group = _training_pool_group(g, consumers, specs, pool)
        if group is None:
            continue
        conv, mpg, bag, cbf = group
        attrs = {k: conv.attrs[k] for k in _CONV_ATTRS if k in conv.attrs}
        attrs.update(T=conv.attrs["T"], pool_ksize=list(pool.attrs["ksize"]), pool_strides=list(pool.attrs["strides"]),
                     pool_padding=pool.attrs["padding"], fused_ops=list(conv.attrs["fused_ops"]))  # fmt: skip
        controls = _dedupe([c for n in (conv, pool) for c in n.control_inputs])
        fwd = NodeDef(pool.name, "_FusedConv2DMaxPoolTrain", [*conv.data_inputs, *("^" + c for c in controls)],
                      pool.device, attrs, pool.location)  # fmt: skip
        _rewire(g, consumers, [], [conv.name], fwd, pool)
        controls = _dedupe([c for n in (mpg, bag, cbf) for c in n.control_inputs])
        bwd = NodeDef(cbf.name, "_FusedConv2DMaxPoolTrainGrad",
                      [f"{fwd.name}:1", fwd.name, mpg.data_inputs[2], f"{fwd.name}:2", cbf.data_inputs[1],
                       *("^" + c for c in controls)],
                      cbf.device, {"T": conv.attrs["T"]}, cbf.location)  # fmt: skip
        for c, i in _consumers_of(consumers, bag.name):  # the bias gradient is output 1
            c.inputs[i] = f"^{bwd.name}" if c.inputs[i].startswith("^") else f"{bwd.name}:1"
            consumers[bwd.name].append((c, i))
        _rewire(g, consumers, [], [mpg.name, bag.name], bwd, cbf)
        result.pooled_convolutions.append(fwd.name)


def pool_before_relu(g: _Graph, result: OptimizeResult) -> None:
    consumers = g.consumers()
    for relu in [n for n in g.live() if n.op == "Relu" and str(n.attrs.get("T")) in _FUSABLE_T]:
        pool = _sole_consumer(consumers, relu.name)
        if pool is None or pool.op != "MaxPool" or pool.device != relu.device or pool.control_inputs:
            continue
        if pool.attrs.get("padding") not in ("VALID", "SAME") or str(pool.attrs.get("T")) != str(relu.attrs["T"]):
            continue
        inner = NodeDef(
            _unique(g, f"{pool.name}/before_relu"),
            "MaxPool",
            [relu.data_inputs[0], *("^" + c for c in relu.control_inputs)],
            pool.device,
            {k: v for k, v in pool.attrs.items() if k != "_transfer"},
            pool.location,
        )
        outer = NodeDef(pool.name, "Relu", [inner.name], pool.device, dict(relu.attrs), relu.location)
        _rewire(g, consumers, [inner], [relu.name], outer, pool)
        result.pooled_before_relu.append(pool.name)


def _disjoint_pool(node: NodeDef) -> bool:
    ksize, strides = node.attrs.get("ksize") or [], node.attrs.get("strides") or []
    return len(ksize) == len(strides) == 4 and all(int(k) <= int(s) for k, s in zip(ksize, strides))


def relu_grad_before_pool_grad(g: _Graph, result: OptimizeResult) -> None:
    consumers = g.consumers()
    for rg in [n for n in g.live() if n.op == "ReluGrad" and str(n.attrs.get("T")) in _FUSABLE_T]:
        grad, features = rg.data_inputs
        mpg = g.nodes.get(parse_input(grad).node)
        if mpg is None or mpg.op != "MaxPoolGrad" or parse_input(grad).index != 0 or mpg.device != rg.device:
            continue
        x, y, dy = mpg.data_inputs
        if _sole_consumer(consumers, mpg.name) is not rg or not _disjoint_pool(mpg):
            continue
        if parse_input(x) != parse_input(features) or str(mpg.attrs.get("T")) != str(rg.attrs["T"]):
            continue
        masked = NodeDef(_unique(g, f"{rg.name}/pooled"), "ReluGrad", [dy, y], rg.device, dict(rg.attrs), rg.location)
        masked.attrs.pop("_transfer", None)
        controls = _dedupe([c for n in (mpg, rg) for c in n.control_inputs])
        routed = NodeDef(
            rg.name,
            "MaxPoolGrad",
            [x, y, masked.name, *("^" + c for c in controls)],
            mpg.device,
            {k: v for k, v in mpg.attrs.items() if k != "_transfer"},
            mpg.location,
        )
        _rewire(g, consumers, [masked], [mpg.name], routed, rg)
        result.masked_before_pool_grad.append(rg.name)


def _swap(g: _Graph, consumers, outer: NodeDef, inner: NodeDef, inner_ins: list[str], outer_attrs: dict,
          inner_attrs: dict, suffix: str) -> None:
    """``outer(inner(...))`` -> ``inner'(outer'(...))``: the node named like ``outer`` now runs
    ``inner``'s op on a new node running ``outer``'s op on ``inner_ins``."""
    first = NodeDef(_unique(g, f"{inner.name}/{suffix}"), outer.op, inner_ins, outer.device, outer_attrs,
                    outer.location)  # fmt: skip
    controls = _dedupe([c for n in (inner, outer) for c in n.control_inputs])
    rest = inner.data_inputs[1:]
    second = NodeDef(outer.name, inner.op, [first.name, *rest, *("^" + c for c in controls)], outer.device,
                     inner_attrs, inner.location)  # fmt: skip
    _rewire(g, consumers, [first], [inner.name], second, outer)



def divide_before_broadcast(g: _Graph, specs, result: OptimizeResult) -> None:
    consumers = g.consumers()
    for node in [n for n in g.live() if n.op == "RealDiv" and str(n.attrs.get("T")) in _FUSABLE_T]:
        inner = fuse_train.producer(g, node, 0, "BroadcastTo")
        if inner is None:
            continue
        divisor = node.data_inputs[1]
        if not _known(specs, divisor, inner.data_inputs[0]):
            continue
        d, v = specs.spec(divisor), specs.spec(inner.data_inputs[0])
        if _sole_consumer(consumers, inner.name) is not node or d.shape.rank != 0 or d.dtype != v.dtype:
            continue
        _swap(g, consumers, node, inner, [inner.data_inputs[0], divisor],
              {k: v for k, v in node.attrs.items() if k != "_transfer"},
              {k: v for k, v in inner.attrs.items() if k != "_transfer"}, "divided")  # fmt: skip
        result.reordered.append(node.name)


def _broadcast_source(g: _Graph, consumers, specs, tensor: str, user: NodeDef, shape) -> str | None:
    """The vector a BroadcastTo read only by ``user`` (same device) broadcasts to exactly
    ``shape`` (fully known on both), or None."""
    src = parse_input(tensor)
    bt = g.nodes.get(src.node)
    if bt is None or bt.op != "BroadcastTo" or src.index or bt.device != user.device or bt.control_inputs:
        return None
    if _sole_consumer(consumers, bt.name) is not user or not _known(specs, bt.name):
        return None
    out = specs.outputs(bt.name)[0].shape
    return bt.data_inputs[0] if out.is_fully_defined and shape.is_fully_defined and tuple(out.dims) == tuple(shape.dims) else None


def broadcast_in_consumer(g: _Graph, specs, result: OptimizeResult) -> None:
    consumers = g.consumers()
    for node in [n for n in g.live() if n.op in ("Mul", "AddN") and str(n.attrs.get("T")) in _FUSABLE_T]:
        ins = node.data_inputs
        if node.op == "Mul" and len(ins) == 2:
            for k in (0, 1):
                if not _known(specs, ins[1 - k]):
                    continue
                v = _broadcast_source(g, consumers, specs, ins[k], node, specs.spec(ins[1 - k]).shape)
                if v is not None:
                    bt = parse_input(ins[k]).node
                    node.inputs[k] = v  # (data inputs come first)
                    consumers[parse_input(v).node].append((node, k))
                    del g.nodes[bt]
                    result.reordered.append(node.name)
                    break
        elif node.op == "AddN" and len(ins) >= 3 and _known(specs, ins[0]):
            # AddN sums its inputs in order: the last one added by an AddV2 after the rest's sum.
            v = _broadcast_source(g, consumers, specs, ins[-1], node, specs.spec(ins[0]).shape)
            if v is None:
                continue
            rest = NodeDef(_unique(g, f"{node.name}/rest"), "AddN", ins[:-1], node.device,
                           {**{k: a for k, a in node.attrs.items() if k != "_transfer"}, "N": len(ins) - 1},
                           node.location)  # fmt: skip
            add = NodeDef(node.name, "AddV2", [rest.name, v, *("^" + c for c in node.control_inputs)], node.device,
                          {"T": node.attrs["T"]}, node.location)  # fmt: skip
            _rewire(g, consumers, [rest], [parse_input(ins[-1]).node], add, node)
            result.reordered.append(node.name)


def negate_after_sum(g: _Graph, result: OptimizeResult) -> None:
    consumers = g.consumers()
    for node in [n for n in g.live() if n.op == "Sum" and str(n.attrs.get("T")) in _FUSABLE_T]:
        neg = fuse_train.producer(g, node, 0, "Neg")
        if neg is None:
            continue
        users = consumers.get(neg.name, [])
        data = [(c, i) for c, i in users if not c.inputs[i].startswith("^")]
        if len(data) != 1 or data[0][0] is not node or data[0][1] != 0:
            continue
        before = parse_input(neg.data_inputs[0]).node
        _swap(g, consumers, node, neg, [neg.data_inputs[0], *node.data_inputs[1:]],
              {k: v for k, v in node.attrs.items() if k != "_transfer"},
              {k: v for k, v in neg.attrs.items() if k != "_transfer"}, "summed")  # fmt: skip
        for c, i in users:  # control edges from the Neg (the Sum's folded axes'): from its input's node
            if c.inputs[i].startswith("^"):
                c.inputs[i] = f"^{before}"
                consumers[before].append((c, i))
        result.reordered.append(node.name)
