"""What ``validate`` can say of a loss before any gradient is built: whether a gradient can reach
a trainable variable at all. ``train`` finds out when it builds the gradients (``graph.py``);
a loss that only reads the model through ArgMax, a comparison or a cast to an integer (an
accuracy) passed ``validate``'s structural check and then failed there."""

from __future__ import annotations

from specflow.errors import GraphError
from specflow.graph.graph_def import canonical_tensor, parse_input
from specflow.ops.registry import NOT_DIFFERENTIABLE, get_op
from specflow.train.gradients import _carries_gradient, _out_dtypes, _tensor


def check_loss_reaches_a_variable(spec) -> None:
    """GraphError at ``train.loss`` when no path of gradient-carrying edges (float, complex,
    resource or variant tensors, through ops that pass a gradient) leads from a trainable
    variable to the loss: the walk ``gradients`` makes, so it never refuses a loss that trains."""
    cfg = spec.train
    if cfg is None:
        return
    handles = [v.handle for v in spec.lowered.variables if v.trainable]
    if not handles:
        return  # validate's own check says so
    consumers: dict[str, list] = {}
    for n in spec.graph_def.nodes:
        for inp in n.data_inputs:
            consumers.setdefault(canonical_tensor(inp), []).append(n)
    loss = parse_input(spec.resolve(cfg.loss)).node
    stack, seen = [canonical_tensor(h) for h in handles], set()
    while stack:
        t = stack.pop()
        if t in seen:
            continue
        seen.add(t)
        for n in consumers.get(t, ()):
            if n.name == loss:
                return
            op = get_op(n.op)
            if n.op == "StopGradient" or op.gradient is NOT_DIFFERENTIABLE:
                continue
            stack.extend(_tensor(n.name, k) for k, dt in enumerate(_out_dtypes(n)) if _carries_gradient(dt))
    raise GraphError(f"the loss '{cfg.loss}' does not depend on any trainable variable (no gradient reaches one)",
                     node=cfg.loss, path="train.loss")
