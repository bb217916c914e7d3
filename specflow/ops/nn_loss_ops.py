"""Loss ops: softmax cross-entropy (dense and sparse labels) and L2Loss, with their gradients.

Names, inputs, attrs and semantics are TensorFlow's (nn_ops.cc); split from ``nn_ops``, whose
softmax and shape helpers they use.
"""

from __future__ import annotations

import numpy as np

from specflow.graph.graph_def import parse_input
from specflow.graph.shapes import Shape, broadcast_shapes
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext, scalar_shape
from specflow.ops.nn_ops import _log_softmax, _merge_dim, _softmax_backprop, _with_rank
from specflow.ops.registry import gradient, kernel, register_op

# --- softmax cross-entropy losses ---------------------------------------------------------------


def _xent_shape(ic: InferenceContext) -> list[Shape]:
    a, b = ic.shape(0), ic.shape(1)
    if a.rank is None or b.rank is None:
        return [Shape.unknown_of_rank(1), Shape.unknown_of_rank(2)]
    # Labels broadcast against features, and the result must be a [batch, classes] matrix.
    try:
        both = broadcast_shapes(a, b)
    except ValueError:
        raise ic.fail(f"features {a} and labels {b} cannot be broadcast together") from None
    if both.rank != 2:
        raise ic.fail(f"features {a} and labels {b} must broadcast to a [batch, classes] matrix, got {both}")
    return [Shape([both[0]]), both]


register_op(
    "SoftmaxCrossEntropyWithLogits",
    inputs=["features: T", "labels: T"],
    outputs=["loss: T", "backprop: T"],
    attrs=["T: {float}"],
    shape=_xent_shape,
    doc="Per-row cross entropy between softmax(features) and the label distributions (labels "
    "broadcast against features), and its gradient softmax(features) - labels.",
)


@kernel("SoftmaxCrossEntropyWithLogits")
def _xent(ctx, features, labels):
    xp = ctx.xp
    try:
        shape = np.broadcast_shapes(features.shape, labels.shape)
    except ValueError:
        raise ctx.fail(
            f"features {list(features.shape)} and labels {list(labels.shape)} cannot be broadcast together"
        ) from None
    if len(shape) != 2:
        raise ctx.fail(f"features and labels must broadcast to a [batch, classes] matrix, got {list(shape)}")
    labels = xp.broadcast_to(labels, shape)
    logp = _log_softmax(xp, xp.broadcast_to(features, shape))
    return -xp.sum(labels * logp, axis=-1), xp.exp(logp) - labels


def _is_zeros(b, t: str) -> bool:
    """Whether ``t`` is the ZerosLike that stands in for an unused output's gradient."""
    name = parse_input(t).node
    return next(n.op for n in reversed(b.graph_def.nodes) if n.name == name) == "ZerosLike"


def _rows_times(b, per_row: str, matrix: str) -> str:
    """[batch] * [batch, classes], each row scaled by its entry (TF's _BroadcastMul)."""
    return gu.emit(b, "Mul", gu.emit(b, "ExpandDims", per_row, gu.const(b, -1, "int32")), matrix)


def _xent_logits_grad(b, node, dys) -> str:
    """Gradient for the logits of both cross-entropy ops: the loss's gradient is the op's own
    backprop output; backprop = softmax - labels passes its gradient back through softmax."""
    features = node.data_inputs[0]
    dloss, dbackprop = dys
    grad = _rows_times(b, dloss, f"{node.name}:1")
    if not _is_zeros(b, dbackprop):
        softmax = gu.emit(b, "Softmax", features)
        grad = gu.emit(b, "AddV2", grad, _softmax_backprop(b, dbackprop, softmax))
    return grad


@gradient("SoftmaxCrossEntropyWithLogits")
def _xent_grad(b, node, dys):
    features, labels = node.data_inputs
    dlabels = _rows_times(b, dys[0], gu.emit(b, "Neg", gu.emit(b, "LogSoftmax", features)))
    if not _is_zeros(b, dys[1]):
        dlabels = gu.emit(b, "Sub", dlabels, dys[1])
    # Either input may have been broadcast against the other (e.g. one label row for all).
    return [gu.sum_to(b, _xent_logits_grad(b, node, dys), features), gu.sum_to(b, dlabels, labels)]


def _sparse_xent_shape(ic: InferenceContext) -> list[Shape]:
    f = _with_rank(ic, 0, 2, "features")
    lab = _with_rank(ic, 1, 1, "labels")
    batch = _merge_dim(ic, f[0], lab[0], f"features {f} and labels {lab} disagree on the batch size")
    return [Shape([batch]), Shape([batch, f[1]])]


register_op(
    "SparseSoftmaxCrossEntropyWithLogits",
    inputs=["features: T", "labels: Tlabels"],
    outputs=["loss: T", "backprop: T"],
    attrs=["T: {float}", "Tlabels: {int32, int64} = int64"],
    shape=_sparse_xent_shape,
    doc="Per-row cross entropy of softmax(features) against integer class labels, and its "
    "gradient softmax(features) - one_hot(labels). A label outside [0, classes) is an error.",
)


_UNSIGNED = {4: np.uint32, 8: np.uint64}  # Tlabels' sizes


@kernel("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_xent(ctx, features, labels):
    xp = ctx.xp
    if features.ndim != 2 or labels.ndim != 1 or features.shape[0] != labels.shape[0]:
        raise ctx.fail(
            f"features must be [batch, classes] and labels [batch], got {list(features.shape)} "
            f"and {list(labels.shape)}"
        )
    classes = features.shape[1]
    # One comparison finds negative labels too: as unsigned they are huge.
    unsigned = labels.view(_UNSIGNED[labels.itemsize])
    if labels.size and (np.maximum.reduce(unsigned) if xp is np else unsigned.max()) >= classes:
        host = ctx.host(labels)
        i = int(np.flatnonzero((host < 0) | (host >= classes))[0])
        raise ctx.fail(
            f"received a label value of {int(host[i])} (labels[{i}]), which is outside the valid "
            f"range [0, {classes}) for {classes} classes"
        )
    # TF's kernel: with shifted = features - rowmax, backprop = exp(shifted) / sum and
    # loss = log(sum) - shifted[label]; one exp, the softmax divided in place.
    if classes <= _FEW_CLASSES:
        return _sparse_xent_by_columns(ctx, features, labels)
    rows = xp.arange(features.shape[0])
    shifted = features - features.max(axis=1, keepdims=True)
    backprop = xp.exp(shifted)
    total = backprop.sum(axis=1, keepdims=True)
    backprop /= total
    loss = xp.log(total[:, 0]) - shifted[rows, labels]
    backprop[rows, labels] -= 1
    return loss, backprop


# Up to this many classes the sparse loss works on the transposed logits: numpy reduces a short
# last axis row by row (a [64, 10] row max takes ~6-10 µs, 5x the same max down the columns of
# the transposed copy), and broadcasting a per-row value over short rows is as slow.
_FEW_CLASSES = 64


def _sparse_xent_by_columns(ctx, features, labels):
    """The sparse loss computed on the [classes, batch] copy of the logits: the same values
    (the row sum may round differently in the last bit), with fast column reductions. The
    backprop is returned as the transpose of that copy (a [batch, classes] view in column-major
    order: the same values, without a copy back)."""
    xp = ctx.xp
    n = features.shape[0]
    rows = ctx.state.get("rows")  # arange(batch), kept per kernel instance
    if rows is None or rows.shape[0] != n:
        rows = ctx.state["rows"] = xp.arange(n)
    shifted = features.T.copy()
    if xp is np:  # the ufuncs' reduce, which .max/.sum call through numpy's Python wrappers
        shifted -= np.maximum.reduce(shifted, 0)
        softmax = np.exp(shifted)
        total = np.add.reduce(softmax, 0)
    else:
        shifted -= shifted.max(axis=0)
        softmax = xp.exp(shifted)
        total = softmax.sum(axis=0)
    softmax /= total
    picked = labels * n
    picked += rows  # flat positions of (label, row)
    loss = xp.log(total)
    loss -= shifted.reshape(-1)[picked]
    softmax.reshape(-1)[picked] -= 1
    return loss, softmax.T


@gradient("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_xent_grad(b, node, dys):
    return [_xent_logits_grad(b, node, dys), None]


# --- L2Loss -----------------------------------------------------------------------------------

register_op(
    "L2Loss",
    inputs=["t: T"],
    outputs=["output: T"],
    attrs=["T: {float}"],
    shape=scalar_shape,
    doc="sum(t ** 2) / 2, a scalar.",
)


@kernel("L2Loss")
def _l2_loss(ctx, t):
    return ctx.xp.asarray(ctx.xp.sum(t * t) / 2, dtype=t.dtype)


@gradient("L2Loss")
def _l2_loss_grad(b, node, dys):
    return [gu.emit(b, "Mul", node.data_inputs[0], dys[0])]
