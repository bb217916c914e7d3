"""Connectionist temporal classification: CTCLoss (tf.compat.v1.nn.ctc_loss, TF's CPU kernel and
ctc_loss_calculator.h), with its gradient (TF's ctc_ops.py: the op's own second output scaled
by the loss gradient, behind PreventGradient), and PreventGradient itself.

Per batch entry b: y = softmax(inputs[:, b]) over classes (the last class is the blank); the
label sequence l (labels_values of the entries whose labels_indices start with b, which must be
in order as TF requires; with
``preprocess_collapse_repeated`` runs of one label count once) becomes l' = blank, l1, blank, ...,
blank; forward and backward variables in log space (Graves 2012, ch. 7) over the first
sequence_length[b] steps give log p(l | x). With ``ctc_merge_repeated`` (the default) a label may
last several steps and two equal labels need a blank between them; without it every step of a
label is a new label. loss = -log p; gradient = y - (sum of alpha beta over l' positions holding
each class) / p, 0 after sequence_length[b]. A label sequence longer than the time it has is an
error, or with ``ignore_longer_outputs_than_inputs`` a loss and gradient of 0.
"""

from __future__ import annotations

import numpy as np

from specflow.errors import GraphError
from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext, unchanged_shape
from specflow.ops.registry import gradient, kernel, not_differentiable, register_op

_NEG_INF = -np.inf


def _ctc_shape(ic: InferenceContext) -> list[Shape]:
    x = ic.shape(0)
    if x.rank not in (None, 3):
        raise ic.fail(f"inputs must be 3-D [max_time, batch, num_classes], got shape {x}")
    if ic.shape(3).rank not in (None, 1):
        raise ic.fail(f"sequence_length must be a vector [batch], got shape {ic.shape(3)}")
    batch = x.dims[1] if x.rank == 3 else None
    return [Shape([batch]), x]


register_op(
    "CTCLoss",
    inputs=["inputs: T", "labels_indices: int64", "labels_values: int32", "sequence_length: int32"],
    outputs=["loss: T", "gradient: T"],
    attrs=["preprocess_collapse_repeated: bool = false", "ctc_merge_repeated: bool = true",
           "ignore_longer_outputs_than_inputs: bool = false", "T: {float32, float64} = float32"],
    shape=_ctc_shape,
    doc="The CTC loss of each batch entry of the logits [max_time, batch, num_classes] (the last "
    "class is the blank) against the sparse labels (indices [N, 2] of (batch, position), values "
    "[N]), over its first sequence_length steps; and the loss's gradient with respect to the logits.",
)  # fmt: skip


def _logsumexp(*terms):
    stacked = np.stack(terms)
    top = np.max(stacked, axis=0)
    safe = np.where(np.isfinite(top), top, 0)
    with np.errstate(divide="ignore"):
        return np.where(np.isfinite(top), safe + np.log(np.sum(np.exp(stacked - safe), axis=0)), top)


def _label_sequences(ctx, indices, values, steps: int, batch: int, blank: int, collapse: bool) -> list[list[int]]:
    idx, vals = np.asarray(indices, np.int64), np.asarray(values, np.int64)
    if idx.ndim != 2 or idx.shape[1] != 2 or vals.shape != (idx.shape[0],):
        raise ctx.fail(f"labels_indices must be [N, 2] and labels_values [N], got {list(idx.shape)} and {list(vals.shape)}")
    # TF's check of the label SparseTensor [batch, max_time]: in bounds, in order, no repeats.
    for i, (b, pos) in enumerate(idx.tolist()):
        why = ("is out of bounds" if not (0 <= b < batch and 0 <= pos < steps) else
               "is out of order" if i and (b, pos) < tuple(idx[i - 1]) else
               "is repeated" if i and (b, pos) == tuple(idx[i - 1]) else None)  # fmt: skip
        if why:
            raise ctx.fail(f"label SparseTensor is not valid: indices[{i}] = [{b},{pos}] {why}")
    seqs: list[list[int]] = [[] for _ in range(batch)]
    for b, v in zip(idx[:, 0].tolist(), vals.tolist()):
        seq = seqs[b]
        if collapse and seq and seq[-1] == v:
            continue
        if not 0 <= v < blank:
            raise ctx.fail(f"label values must be in [0, num_classes - 1) = [0, {blank}) (the last class is "
                           f"the blank), got {v} in batch entry {b}")  # fmt: skip
        seq.append(v)
    return seqs


def _ctc_one(log_y, labels: list[int], blank: int, merge: bool):
    """(log p(labels | x), gradient of -log p w.r.t. the logits) for one entry: log_y [T, C]."""
    steps, classes = log_y.shape
    lp = np.array([blank] + [v for lab in labels for v in (lab, blank)], np.int64)
    u_count = len(lp)
    emit = log_y[:, lp]  # [T, U]
    # Transitions into u from u - 1 (always), u (merge or blank), u - 2 (label differing from u - 2).
    stay = np.array([merge or lp[u] == blank for u in range(u_count)])
    skip = np.array([u > 1 and lp[u] != blank and not (merge and lp[u] == lp[u - 2]) for u in range(u_count)])
    alpha = np.full((steps, u_count), _NEG_INF)
    alpha[0, 0] = emit[0, 0]
    if u_count > 1:
        alpha[0, 1] = emit[0, 1]
    for t in range(1, steps):
        prev = alpha[t - 1]
        from_stay = np.where(stay, prev, _NEG_INF)
        from_one = np.concatenate([[_NEG_INF], prev[:-1]])
        from_two = np.where(skip, np.concatenate([[_NEG_INF, _NEG_INF], prev[:-2]]), _NEG_INF)
        alpha[t] = emit[t] + _logsumexp(from_stay, from_one, from_two)
    beta = np.full((steps, u_count), _NEG_INF)
    beta[steps - 1, max(u_count - 2, 0):] = 0.0
    next_skip = np.concatenate([skip[2:], [False, False]])  # u -> u + 2 allowed when u + 2 may skip
    for t in range(steps - 2, -1, -1):
        nxt = beta[t + 1] + emit[t + 1]
        to_stay = np.where(stay, nxt, _NEG_INF)
        to_one = np.concatenate([nxt[1:], [_NEG_INF]])
        to_two = np.where(next_skip, np.concatenate([nxt[2:], [_NEG_INF, _NEG_INF]]), _NEG_INF)
        beta[t] = _logsumexp(to_stay, to_one, to_two)
    log_p = float(_logsumexp(*(alpha[0] + beta[0])))
    y = np.exp(log_y)
    if not np.isfinite(log_p):  # no path: TF's gradient is y itself
        return log_p, y
    occupancy = np.full((steps, classes), _NEG_INF)
    ab = alpha + beta
    for c in np.unique(lp):
        occupancy[:, c] = _logsumexp(*ab[:, lp == c].T)
    return log_p, y - np.exp(occupancy - log_p)


@kernel("CTCLoss", host_inputs=(0, 1, 2, 3))
def _ctc_loss(ctx, inputs, indices, values, sequence_length):
    x = np.asarray(ctx.host(inputs))
    lengths = np.asarray(ctx.host(sequence_length)).astype(np.int64)
    if x.ndim != 3:
        raise ctx.fail(f"inputs must be 3-D [max_time, batch, num_classes], got shape {list(x.shape)}")
    steps, batch, classes = x.shape
    if lengths.shape != (batch,):
        raise ctx.fail(f"sequence_length must be a vector of the {batch} batch entries' lengths, got shape {list(lengths.shape)}")
    if classes < 1:
        raise ctx.fail("num_classes must be at least 1 (the blank)")
    if (lengths < 0).any() or (lengths > steps).any():
        raise ctx.fail(f"sequence_length must be in [0, max_time = {steps}], got {lengths.tolist()}")
    blank = classes - 1
    seqs = _label_sequences(ctx, ctx.host(indices), ctx.host(values), steps, batch, blank, ctx.attrs["preprocess_collapse_repeated"])
    ignore = ctx.attrs["ignore_longer_outputs_than_inputs"]
    loss = np.zeros(batch, np.float64)
    grad = np.zeros(x.shape, np.float64)
    for b in range(batch):
        n = int(lengths[b])
        if len(seqs[b]) > n:
            if ignore:
                continue
            raise ctx.fail(f"Not enough time for target transition sequence (required: {len(seqs[b])}, "
                           f"available: {n}), batch entry {b}")  # fmt: skip
        if n == 0:
            continue
        logits = x[:n, b].astype(np.float64)
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_y = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        log_p, g = _ctc_one(log_y, seqs[b], blank, ctx.attrs["ctc_merge_repeated"])
        loss[b], grad[:n, b] = -log_p, g
    return ctx.xp.asarray(loss.astype(x.dtype)), ctx.xp.asarray(grad.astype(x.dtype))


@gradient("CTCLoss")
def _ctc_loss_grad(b, node, dys):
    # TF's: the op's own gradient output, behind PreventGradient (no second derivative), times
    # the loss gradient broadcast over classes.
    own = gu.emit(b, "PreventGradient", f"{node.name}:1", message="Currently there is no way to take the second "
                  "derivative of ctc_loss due to the fused implementation's interaction with tf.gradients()")  # fmt: skip
    scale = gu.emit(b, "ExpandDims", dys[0], gu.const(b, np.int32(-1)))
    return [gu.emit(b, "Mul", scale, own), None, None, None]


# --- PreventGradient --------------------------------------------------------------------------

register_op(
    "PreventGradient",
    inputs=["input: T"],
    outputs=["output: T"],
    attrs=["T: type", "message: string = ''"],
    shape=unchanged_shape,
    doc="input unchanged; asking for its gradient is an error naming `message`.",
)


@kernel("PreventGradient")
def _prevent_gradient(ctx, x):
    return x


@gradient("PreventGradient")
def _prevent_gradient_grad(b, node, dys):
    raise GraphError(f"Gradient explicitly disabled. Reason: {node.attrs['message']}", node=node.name,
                     location=node.location)  # fmt: skip


# --- CTCGreedyDecoder -------------------------------------------------------------------------


def _greedy_shape(ic: InferenceContext) -> list[Shape]:
    x, lengths = ic.shape(0), ic.shape(1)
    if x.rank not in (None, 3):
        raise ic.fail(f"inputs must be [max_time, batch_size, num_classes], got shape {x}")
    if lengths.rank not in (None, 1):
        raise ic.fail(f"sequence_length must be a vector, got shape {lengths}")
    batch = x[1] if x.rank == 3 else (lengths[0] if lengths.rank == 1 else None)
    return [Shape([None, 2]), Shape([None]), Shape([2]), Shape([batch, 1])]


register_op(
    "CTCGreedyDecoder",
    inputs=["inputs: T", "sequence_length: int32"],
    outputs=["decoded_indices: int64", "decoded_values: int64", "decoded_shape: int64", "log_probability: T"],
    attrs=["merge_repeated: bool = false", "blank_index: int = -1", "T: {float32, float64} = float32"],
    shape=_greedy_shape,
    doc="Best-path CTC decoding (tf.nn.ctc_greedy_decoder): each step's most likely class (the first on "
    "ties), repeats merged when merge_repeated, blanks (blank_index, negative from the end) dropped; "
    "a sparse [batch_size, longest] result, and each sequence's -sum of its steps' largest logits.",
)


@kernel("CTCGreedyDecoder", host_inputs=(1,))
def _ctc_greedy_decoder(ctx, inputs, sequence_length):
    xp = ctx.xp
    if inputs.ndim != 3:
        raise ctx.fail(f"inputs must be [max_time, batch_size, num_classes], got shape {list(inputs.shape)}")
    max_time, batch, classes = inputs.shape
    lengths = ctx.host(sequence_length)
    if lengths.shape != (batch,):
        raise ctx.fail(f"sequence_length must have batch_size = {batch} entries, got shape {list(lengths.shape)}")
    blank = ctx.attrs["blank_index"]
    blank = blank + classes if blank < 0 else blank
    if not 0 <= blank < classes:
        raise ctx.fail(f"blank_index {ctx.attrs['blank_index']} is out of range for {classes} classes")
    for b, n in enumerate(lengths.tolist()):
        if not 0 <= n <= max_time:
            raise ctx.fail(f"sequence_length({b}) = {n} is not in [0, max_time = {max_time}]")
    host = inputs if xp is np else ctx.host(inputs)
    best = host.argmax(axis=2)  # [max_time, batch]: the first maximum, as Eigen's maxCoeff
    peak = host.max(axis=2)
    steps = np.arange(max_time)[:, None] < lengths[None, :]
    log_prob = -np.where(steps, peak, 0).sum(axis=0, dtype=host.dtype).reshape(batch, 1)
    merge = ctx.attrs["merge_repeated"]
    sequences = []
    for b in range(batch):
        seq, prev = [], -1
        for t in range(int(lengths[b])):
            k = int(best[t, b])
            if k != blank and not (merge and k == prev):
                seq.append(k)
            prev = k
        sequences.append(seq)
    longest = max((len(s) for s in sequences), default=0)
    indices = np.array([(b, i) for b, s in enumerate(sequences) for i in range(len(s))], np.int64).reshape(-1, 2)
    values = np.array([k for s in sequences for k in s], np.int64)
    shape = np.array([batch, longest], np.int64)
    return xp.asarray(indices), xp.asarray(values), xp.asarray(shape), xp.asarray(log_prob.astype(host.dtype))


not_differentiable("CTCGreedyDecoder")
