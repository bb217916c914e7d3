"""Graph optimization between prune and place: the parts of TensorFlow's Grappler that pay here.

``optimize(graph_def, opts)`` rewrites a pruned step graph (``_Arg``/``_Retval`` in place) so it
computes the same values with fewer, cheaper nodes:

0. **Unfed flags**: a bool scalar ``PlaceholderWithDefault`` still in the step graph was not fed
   (feeds are ``_Arg``s by now), so it is its default: an Identity of it, which folding turns
   into a Const. A ``SelectV2``/``Select`` on such a constant scalar then forwards the operand it
   picks, and a ``Switch`` on one makes its other branch dead at plan time (``_dead_branches``):
   inference of a model with a ``training`` flag runs no dropout masks or batch statistics.
1. **Shape specialisation**: ``opts.feed_shapes`` gives the exact shape of some feeds (the Session
   compiles one plan per fed shape), recorded in the ``_Arg``'s ``_output_shapes``.
2. **Constant folding**: a node whose outputs shape inference can compute (all inputs constant, or
   Shape/Size/Rank of a statically shaped tensor, ...) becomes a ``Const``. Stateful ops, control
   flow and values over the inferencer's folding limit are never folded. As TF's folding does,
   the ``Const`` keeps control edges to the non-constant producers it no longer reads, so side
   effects, loop frames and dead branches behave as before (a value read from one output of a
   ``Switch`` waits on an Identity of that output: a control edge from the Switch itself is
   live on both branches).
3. **Arithmetic simplification** (exact only): ``Identity``, ``Reshape`` to the shape it already
   has, ``EnsureShape`` of a statically known compatible shape, ``Sum`` over no axes, ``Mul`` by
   a ones constant that does not broadcast, and one-input ``AddN`` forward their input to their
   consumers; an ``AddV2``/``Sub``/``Mul``/``RealDiv`` operand that is a constant
   of one repeated value, and does not widen the result, becomes a scalar ``Const`` (the
   gradient of ``Mean`` scales by a [batch, 1] block of 1/n: the same products, without
   numpy's slower broadcast loop).
4. **Remapping**: ``MatMul`` + ``BiasAdd`` (+ ``Relu``) becomes ``_FusedMatMul``
   (``specflow/ops/fused_ops.py``), named like the last node it replaces; ``Conv2D`` times a
   per-channel vector becomes a ``Conv2D`` of the scaled filter (batch norm at inference), and
   ``Conv2D`` + ``BiasAdd`` or an add of a per-channel vector (+ ``Relu``) ``_FusedConv2D``;
   a ``MaxPool`` of a ``Relu`` nothing else reads pools first, and a ``ReluGrad`` of a
   ``MaxPoolGrad`` masks the pooled gradient before routing it, and a ``RealDiv`` by a scalar
   after a ``BroadcastTo`` runs before it; a ``MaxPool`` that alone reads a ``_FusedConv2D``
   (+ its ``Relu``) becomes ``_FusedConv2DMaxPool`` (``optimize_fuse.py``).
2b. **Loop unrolling** (``optimize_unroll.py``): a simple while loop whose trip count is known
   after folding becomes one copy of its body per iteration (trips x body nodes <= 2,000).
4b. **Common subexpressions** (``optimize_cse.py``): a node equal to an earlier one (op, attrs,
   device, inputs) is replaced by it; stateful and control-flow ops never are.
5. **Dead nodes**: what no ``_Retval``, target or stateful op needs any more is dropped (random
   ops, whose only effect is their own stream, count as stateless here: a dropout mask nobody
   reads is not drawn).

Nothing here changes a value a step computes, but for the scale folded into a filter (the same
products summed in another order: equal to float32 rounding); ``tests/runtime/test_optimize*.py`` checks each
rewrite against a golden graph and whole models against the unoptimized graph.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from specflow.errors import SpecflowError
from specflow.graph.graph_def import GraphDef, NodeDef, parse_input, tensor_name
from specflow.graph.shapes import Shape, as_shape, broadcast_shapes
from specflow.graph.topo import LOOP_BACK_EDGES, topological_order
from specflow.ops.registry import get_op
from specflow.runtime.prune import infer_runtime_graph

# Never folded nor forwarded through: frames, dead tensors and call boundaries live in these.
CONTROL_FLOW_OPS = frozenset({
    "Switch", "RefSwitch", "Merge", "RefMerge", "Enter", "RefEnter", "Exit", "RefExit",
    "NextIteration", "RefNextIteration", "LoopCond", "ControlTrigger",
})  # fmt: skip
_RUNTIME_OPS = frozenset({"_Arg", "_Retval", "_Send", "_Recv"})
_FUSABLE_T = frozenset({"float16", "float32", "float64"})
FOLD_LIMIT = 1 << 16  # elements: larger values stay computed (TF caps folded constants too)


@dataclass
class OptimizeOptions:
    feed_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)  # _Arg name -> exact shape
    keep: set[str] = field(default_factory=set)  # node names that must survive (the step's targets)
    fold_constants: bool = True
    simplify: bool = True
    fuse: bool = True
    cse: bool = True
    unroll_limit: int = 2000  # unroll a counted loop when trips x body nodes <= this; 0: never
    cpu_only: bool = False  # every device a CPU: rewrites to CPU-only kernels may run


@dataclass
class OptimizeResult:
    graph_def: GraphDef
    folded: list[str] = field(default_factory=list)  # nodes (or "node:k" outputs) that became Consts
    forwarded: list[str] = field(default_factory=list)  # nodes replaced by their input
    fused: list[str] = field(default_factory=list)  # _FusedMatMul / _FusedConv2D nodes created
    folded_scales: list[str] = field(default_factory=list)  # Conv2D * vector -> Conv2D of a scaled filter
    pooled_before_relu: list[str] = field(default_factory=list)  # MaxPool(Relu) -> Relu(MaxPool)
    pooled_convolutions: list[str] = field(default_factory=list)  # MaxPool(_FusedConv2D) fused
    masked_before_pool_grad: list[str] = field(default_factory=list)  # ReluGrad(MaxPoolGrad) swapped
    reordered: list[str] = field(default_factory=list)  # RealDiv(BroadcastTo) -> BroadcastTo(RealDiv)
    removed: list[str] = field(default_factory=list)  # nodes dropped as no longer needed
    scalarized: list[str] = field(default_factory=list)  # "node:input" operands made scalar Consts
    unfed: list[str] = field(default_factory=list)  # bool PlaceholderWithDefaults taken at their default
    decided: list[str] = field(default_factory=list)  # Switches on a constant predicate (-> Identity)
    unrolled: list[str] = field(default_factory=list)  # "frame xN": loops replaced by N body copies
    merged: list[str] = field(default_factory=list)  # duplicates replaced by an equal node (CSE)
    shared_im2col: list[str] = field(default_factory=list)  # Conv2DBackpropFilters reusing a Conv2D's


def optimize(graph_def: GraphDef, opts: OptimizeOptions) -> OptimizeResult:
    """The optimized copy of a pruned step graph (see the module docstring); ``graph_def`` is
    not modified. Node names of everything still computed are kept, so fetches, targets and
    measured costs still find their nodes."""
    # When inference fails (fed shapes that contradict the graph, a broken target), the step
    # itself reports the error, from the kernel that fails, as it would unoptimized.
    for shapes in [opts.feed_shapes, {}] if opts.feed_shapes else [{}]:
        try:
            g, result = _rewrite(graph_def, opts, shapes)
            break
        except SpecflowError:
            continue
    else:
        g, result = _Graph(graph_def), OptimizeResult(graph_def)
    if opts.fuse:
        fuse.remap(g, result, opts.cpu_only)
        _fuse_matmul(g, result)
        flags.share_im2col(g, result)
    result.graph_def = g.to_graph_def(graph_def)
    return result


def _rewrite(graph_def: GraphDef, opts: OptimizeOptions, feed_shapes: dict) -> tuple[_Graph, OptimizeResult]:
    """The rewrites that need shape inference (it raises SpecflowError on an inconsistent graph)."""
    g = _Graph(graph_def)
    result = OptimizeResult(graph_def)
    for name, shape in feed_shapes.items():
        node = g.nodes[name]
        node.attrs = {**node.attrs, "_output_shapes": [Shape(tuple(shape))]}
    if opts.fold_constants:
        flags.unfed_flags(g, result)
        _fold(g, result)
        for _ in range(3):  # a decided cond's value_index may decide its gradient's Switch
            decided = len(result.decided)
            flags.dead_branches(g, opts.keep, result)
            if len(result.decided) == decided:
                break
            _fold(g, result)
        if opts.unroll_limit:
            unroll.unroll_loops(g, opts.unroll_limit, result)
            if result.unrolled:
                _fold(g, result)  # the copies' counters
    if opts.simplify:
        _simplify(g, result)
    if opts.cse:
        cse.eliminate_common_subexpressions(g, opts.keep, result)
    _drop_dead(g, opts.keep, result)
    return g, result


class _Graph:
    """Nodes by name (copies) plus edits; the order is recomputed at the end."""

    def __init__(self, graph_def: GraphDef):
        self.order = [n.copy() for n in topological_order(graph_def, allow_back_edges=LOOP_BACK_EDGES)]
        self.nodes = {n.name: n for n in self.order}
        self._pos: dict[str, int] = {}  # name -> index in order; checked on use (order is edited freely)

    def live(self) -> list[NodeDef]:
        return [n for n in self.order if n.name in self.nodes]

    def consumers(self) -> dict[str, list[tuple[NodeDef, int]]]:
        """node name -> (consumer, input position) for every data and control edge."""
        out: dict[str, list[tuple[NodeDef, int]]] = defaultdict(list)
        for n in self.live():
            for i, inp in enumerate(n.inputs):
                out[parse_input(inp).node].append((n, i))
        return out

    def replace(self, old: str, new: NodeDef) -> None:
        # O(1) per call while the order is unchanged (folding an unrolled loop replaces thousands).
        i = self._pos.get(old)
        if i is None or i >= len(self.order) or self.order[i].name != old:
            self._pos = {n.name: k for k, n in enumerate(self.order)}
            i = self._pos[old]
        self.order[i] = new
        self.nodes[old] = new

    def to_graph_def(self, like: GraphDef) -> GraphDef:
        out = GraphDef(self.live(), dict(like.versions), dict(like.library))
        out.nodes = topological_order(out, allow_back_edges=LOOP_BACK_EDGES)
        return out


def _dedupe(inputs: list[str]) -> list[str]:
    return list(dict.fromkeys(inputs))


# --- constant folding -----------------------------------------------------------------------------


def _foldable(node: NodeDef) -> bool:
    if node.op in CONTROL_FLOW_OPS or node.op in _RUNTIME_OPS or node.op == "Const":
        return False
    return not get_op(node.op).is_stateful


def _const_node(name: str, value: np.ndarray, like: NodeDef, controls: list[str]) -> NodeDef:
    attrs = {"value": value, "dtype": _dtype_of(value)}
    if "_class" in like.attrs:  # keep colocation requests
        attrs["_class"] = list(like.attrs["_class"])
    if "_transfer" in like.attrs:  # and how the value crosses devices
        attrs["_transfer"] = like.attrs["_transfer"]
    return NodeDef(name, "Const", ["^" + c for c in _dedupe(controls)], like.device, attrs, like.location)


def _dtype_of(value: np.ndarray):
    from specflow.graph.dtypes import as_dtype

    return as_dtype(value.dtype)


def _known_values(g: _Graph, specs) -> dict[str, list]:
    """Each node's output values where they are compile-time constants.

    Starts from shape inference's folding (constants, Shape/Size/Rank of static shapes, small
    constant subgraphs) and adds what it leaves out: OnesLike/ZerosLike of a statically shaped
    tensor, and anything computed from such values, up to ``FOLD_LIMIT`` elements."""
    from specflow.ops.eval import run_kernel

    known: dict[str, list] = {}
    for node in g.live():
        vals = list(specs.inferencer.values.get(node.name) or [])
        known[node.name] = vals
        if not _foldable(node) or not vals or any(v is not None for v in vals):
            continue
        outs = specs.outputs(node.name)
        if any(s.dtype.np_type is None or not s.shape.is_fully_defined for s in outs):
            continue
        if any(s.shape.num_elements() > FOLD_LIMIT for s in outs):
            continue
        if node.op in ("OnesLike", "ZerosLike"):  # the value depends on the shape only
            fill = np.ones if node.op == "OnesLike" else np.zeros
            known[node.name] = [fill(outs[0].shape.dims, outs[0].dtype.numpy)]
            continue
        ins = []
        for inp in node.data_inputs:
            # (g.live() is not in dependency order: a Const an earlier pass folded sits after
            # its consumers; not known yet here, it is left for the next fold)
            ref = parse_input(inp)
            src = known.get(ref.node)
            ins.append(src[ref.index] if src is not None and ref.index < len(src) else None)
        if not ins or any(v is None for v in ins) or sum(np.size(v) for v in ins) > FOLD_LIMIT:
            continue
        try:
            known[node.name] = run_kernel(node, ins, specs.attrs[node.name])
        except Exception:  # folding is an optimisation; the step reports real errors
            continue
    return known


def _fold(g: _Graph, result: OptimizeResult) -> None:
    """Replace every foldable node whose outputs are compile-time constants by Consts."""
    specs = infer_runtime_graph(GraphDef(g.live()))
    known = _known_values(g, specs)
    consumers = g.consumers()
    for node in list(g.live()):
        vals = known.get(node.name) or []
        if not _foldable(node) or all(v is None for v in vals):
            continue
        # Control edges the Const must keep: the node's own, the folded inputs' (already Consts
        # here, carrying theirs), and one to every other producer it stops reading.
        controls = list(node.control_inputs)
        for inp in node.data_inputs:
            src = g.nodes[parse_input(inp).node]
            controls += src.control_inputs if src.op == "Const" else [_control_source(g, inp)]
        out_dtypes = [s.dtype.numpy for s in specs.outputs(node.name)]
        if len(vals) == 1:  # the Const takes the node's name: consumers stay as they are
            g.replace(node.name, _const_node(node.name, np.asarray(vals[0], out_dtypes[0]), node, controls))
            result.folded.append(node.name)
            continue
        # Several outputs: each known one that is read becomes its own Const.
        for k, v in enumerate(vals):
            users = [
                (c, i) for c, i in consumers.get(node.name, ())
                if not c.inputs[i].startswith("^") and parse_input(c.inputs[i]).index == k
            ]  # fmt: skip
            if v is None or not users:
                continue
            name = _unique(g, f"ConstantFolding/{node.name}-folded-{k}")
            const = _const_node(name, np.asarray(v, out_dtypes[k]), node, controls)
            g.order.append(const)
            g.nodes[name] = const
            for c, i in users:
                c.inputs[i] = name
            result.folded.append(tensor_name(node.name, k))


def _control_source(g: _Graph, tensor: str) -> str:
    """The node a control edge must come from to stand in for reading ``tensor``.

    A control edge from a Switch is live whenever the Switch ran, whichever branch it took; only
    its data outputs carry deadness. So a value folded from one output of a Switch waits on an
    Identity of that output (as Grappler's constant folding does): it is dead when that branch
    is not taken, and the Merge below still sees only the taken branch."""
    ref = parse_input(tensor)
    src = g.nodes[ref.node]
    if src.op not in ("Switch", "RefSwitch"):
        return src.name
    name = f"ConstantFoldingCtrl/{src.name}_{ref.index}"
    if name not in g.nodes:
        ident = NodeDef(name, "Identity", [tensor_name(src.name, ref.index)], src.device,
                        {"T": src.attrs["T"]}, src.location)  # fmt: skip
        g.order.insert(g.order.index(src) + 1, ident)
        g.nodes[name] = ident
    return name


def _unique(g: _Graph, base: str) -> str:
    name, i = base, 1
    while name in g.nodes:
        name, i = f"{base}_{i}", i + 1
    return name


# --- arithmetic simplification ----------------------------------------------------------------------


def _simplify(g: _Graph, result: OptimizeResult) -> None:
    """Forward the input of nodes that return it unchanged (exact rewrites only)."""
    specs = infer_runtime_graph(GraphDef(g.live()))
    consumers = g.consumers()
    for node in list(g.order):
        src = _forwarded_input(g, node, specs)
        if src is None or node.control_inputs:
            continue
        users = consumers.get(node.name, [])
        if any(c.inputs[i].startswith("^") for c, i in users):
            continue  # a control edge from it would have to move: leave it
        producer = g.nodes[parse_input(src).node]
        if producer.op in CONTROL_FLOW_OPS or producer.device != node.device:
            continue  # a deliberate copy to another device, or a frame boundary
        for c, i in users:
            c.inputs[i] = src
        consumers[parse_input(src).node].extend(users)
        consumers[node.name] = []
        result.forwarded.append(node.name)
    _scalar_operands(g, specs, result)


# Elementwise ops whose result does not change when a constant operand holding one value
# everywhere is replaced by that value as a scalar (as long as the other operand alone has the
# result's shape): each element meets the same operand value either way.
_SCALAR_OPERAND_OPS = frozenset({"AddV2", "Sub", "Mul", "RealDiv"})


def _scalar_operands(g: _Graph, specs, result: OptimizeResult) -> None:
    made: dict[str, str] = {}  # uniform Const -> its scalar Const
    for node in list(g.live()):
        if node.op not in _SCALAR_OPERAND_OPS or len(node.data_inputs) != 2:
            continue
        out = specs.outputs(node.name)[0].shape
        for k, (inp, other) in enumerate(((node.inputs[0], node.inputs[1]), (node.inputs[1], node.inputs[0]))):
            c = g.nodes[parse_input(inp).node]
            if c.op != "Const" or parse_input(inp).index != 0:
                continue
            value = np.asarray(c.attrs["value"])
            if value.ndim == 0 or not _one_value(value):
                continue
            other_shape = specs.spec(other).shape
            if not out.is_fully_defined or not other_shape.is_fully_defined or other_shape != out:
                continue  # the constant widens the result (or the shape is unknown): keep it
            if c.name not in made:
                name = _unique(g, f"{c.name}/scalar")
                # The same control edges: a folded Const still waits for what it was computed after.
                const = _const_node(name, np.asarray(value.reshape(-1)[0]), c, c.control_inputs)
                g.order.append(const)
                g.nodes[name] = const
                made[c.name] = name
            node.inputs[k] = made[c.name]
            result.scalarized.append(f"{node.name}:{k}")


def _one_value(value: np.ndarray) -> bool:
    """Whether every element has the same bits as the first (so -0.0 and 0.0 differ, and a
    NaN constant counts as repeated only with the same payload)."""
    if value.size == 0 or value.dtype.kind not in "biufc":
        return False
    flat = np.ascontiguousarray(value).reshape(-1)
    return flat.tobytes() == flat[:1].tobytes() * flat.size


def _forwarded_input(g: _Graph, node: NodeDef, specs) -> str | None:
    """The input tensor ``node`` returns unchanged, or None."""
    ins = node.data_inputs
    if node.op == "Identity" or (node.op == "AddN" and len(ins) == 1):
        return ins[0]
    if node.op in ("SelectV2", "Select"):
        return flags.selected_input(g, node, specs)
    if node.op == "Reshape":
        before, after = specs.spec(ins[0]).shape, specs.outputs(node.name)[0].shape
        return ins[0] if before.is_fully_defined and before == after else None
    if node.op == "EnsureShape":  # a shape known statically passes the check at run time
        before = specs.spec(ins[0]).shape
        return ins[0] if before.is_fully_defined and before.is_compatible_with(as_shape(node.attrs["shape"])) else None
    if node.op == "Sum":  # over no axes (a gradient's broadcast reduction where none broadcast)
        axes = g.nodes[parse_input(ins[1]).node]
        if axes.op == "Const" and not parse_input(ins[1]).index and np.size(axes.attrs["value"]) == 0:
            return ins[0]
        return None
    if node.op == "Mul":
        out = specs.outputs(node.name)[0]
        for x, one in ((ins[0], ins[1]), (ins[1], ins[0])):
            c = g.nodes[parse_input(one).node]
            x_spec = specs.spec(x)
            if (
                c.op == "Const"
                and not c.control_inputs
                and x_spec.dtype == out.dtype
                and x_spec.shape.is_fully_defined
                and np.all(np.asarray(c.attrs["value"]) == 1)
                and broadcast_shapes(x_spec.shape, Shape(np.shape(c.attrs["value"]))) == x_spec.shape
            ):
                return x
    return None


# --- dead nodes ----------------------------------------------------------------------------------


# Stateful only through their own random stream (seeded per node): nothing else sees a draw
# nobody reads, so one left without consumers by a rewrite here is not drawn.
RANDOM_OPS = frozenset({
    "RandomUniform", "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt", "RandomShuffle", "Multinomial",
})  # fmt: skip


def _drop_dead(g: _Graph, keep: set[str], result: OptimizeResult) -> None:
    """Drop what no _Retval/_Send, kept node or stateful op reaches any more."""
    roots = [
        n.name for n in g.live()
        if n.op in ("_Retval", "_Send") or n.name in keep or (get_op(n.op).is_stateful and n.op not in RANDOM_OPS)
    ]  # fmt: skip
    seen: set[str] = set()
    todo = roots
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(parse_input(i).node for i in g.nodes[name].inputs)
    for n in g.live():
        if n.name not in seen:
            del g.nodes[n.name]
            result.removed.append(n.name)


# --- remapping: MatMul + BiasAdd (+ Relu) -> _FusedMatMul; the helpers optimize_fuse shares ---------


def _sole_consumer(consumers, name: str) -> NodeDef | None:
    """The one node reading ``name:0`` when that is its only use (no control edges either)."""
    users = consumers.get(name, [])
    if len(users) != 1:
        return None
    c, i = users[0]
    return c if c.inputs[i] in (name, f"{name}:0") else None


def _fuse(g: _Graph, consumers, result: OptimizeResult, group: list[NodeDef], op: str, inputs: list[str],
          attrs: dict) -> None:  # fmt: skip
    """TF's remapper: ``group`` (a product and its BiasAdd), with a Relu that is the last one's
    sole consumer on the same device, becomes one ``op`` node on ``inputs`` named like the last,
    its ``fused_ops`` listing what it absorbed."""
    ops = ["BiasAdd"]
    relu = _sole_consumer(consumers, group[-1].name)
    if relu is not None and relu.op == "Relu" and relu.device == group[0].device:
        group, ops = [*group, relu], [*ops, "Relu"]
    last = group[-1]
    controls = _dedupe([c for n in group for c in n.control_inputs])
    fused = NodeDef(last.name, op, [*inputs, *("^" + c for c in controls)], group[0].device,
                    {**attrs, "fused_ops": ops, "epsilon": 0.0001, "leakyrelu_alpha": 0.2}, last.location)  # fmt: skip
    _rewire(g, consumers, [], [n.name for n in group[:-1]], fused, last)
    result.fused.append(fused.name)


def _rewire(g: _Graph, consumers, added: list[NodeDef], removed: list[str], replacement: NodeDef,
            replaced: NodeDef) -> None:  # fmt: skip
    """A rewrite's graph surgery: ``added`` go in, ``removed`` go, ``replacement`` takes the
    place (and name, and lossy-transfer mark) of ``replaced``; ``consumers`` learns the inputs
    of the new nodes."""
    if "_transfer" in replaced.attrs:
        replacement.attrs["_transfer"] = replaced.attrs["_transfer"]
    for node in added:
        g.order.append(node)
        g.nodes[node.name] = node
    for name in removed:
        del g.nodes[name]
    g.replace(replaced.name, replacement)
    for node in (*added, replacement):
        for i, inp in enumerate(node.inputs):
            consumers[parse_input(inp).node].append((node, i))


def _fuse_matmul(g: _Graph, result: OptimizeResult) -> None:
    consumers = g.consumers()
    for mm in list(g.live()):
        if mm.op != "MatMul" or mm.name not in g.nodes or str(mm.attrs.get("T")) not in _FUSABLE_T:
            continue
        bias_add = _sole_consumer(consumers, mm.name)
        if (
            bias_add is None
            or bias_add.op != "BiasAdd"
            or bias_add.data_inputs[0] not in (mm.name, f"{mm.name}:0")
            or bias_add.attrs.get("data_format", "NHWC") != "NHWC"
            or bias_add.device != mm.device
        ):
            continue
        _fuse(g, consumers, result, [mm, bias_add], "_FusedMatMul", [*mm.data_inputs, bias_add.data_inputs[1]],
              {"T": mm.attrs["T"], "transpose_a": mm.attrs.get("transpose_a", False),
               "transpose_b": mm.attrs.get("transpose_b", False), "num_args": 1})  # fmt: skip


# Last: optimize_flags builds on the graph helpers above (an import cycle, resolved by order).
from specflow.runtime import optimize_cse as cse  # noqa: E402
from specflow.runtime import optimize_flags as flags  # noqa: E402
from specflow.runtime import optimize_fuse as fuse  # noqa: E402
from specflow.runtime import optimize_unroll as unroll  # noqa: E402
