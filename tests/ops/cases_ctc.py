"""Cases for ctc_ops against brute force: every alignment (one class per step) of each batch
entry is enumerated, collapsed as CTC reads it (runs merged with ctc_merge_repeated, then blanks
dropped) and kept if it spells the labels; p is the sum of their softmax probabilities, the loss
-log p, and the gradient with respect to the logits y - P(step t shows class k | labels)."""

import itertools

import numpy as np

from tests.ops.harness import RNG, Case


def _spell(path, blank, merge):
    if merge:
        path = [k for i, k in enumerate(path) if i == 0 or k != path[i - 1]]
    return [k for k in path if k != blank]


def _brute(x, idx, vals, lengths, collapse=False, merge=True):
    steps, batch, classes = x.shape
    blank = classes - 1
    loss, grad = np.zeros(batch), np.zeros(x.shape)
    for b in range(batch):
        labels = [int(v) for (bb, _), v in sorted(zip(idx.tolist(), vals.tolist())) if bb == b]
        if collapse:
            labels = [v for i, v in enumerate(labels) if i == 0 or v != labels[i - 1]]
        n = int(lengths[b])
        z = x[:n, b].astype(np.float64)
        y = np.exp(z - z.max(axis=1, keepdims=True))
        y /= y.sum(axis=1, keepdims=True)
        total, shows = 0.0, np.zeros((n, classes))
        for path in itertools.product(range(classes), repeat=n):
            if _spell(list(path), blank, merge) == labels:
                p = float(np.prod(y[np.arange(n), list(path)]))
                total += p
                shows[np.arange(n), list(path)] += p
        loss[b] = -np.log(total)
        grad[:n, b] = y - shows / total
    return loss.astype(x.dtype), grad.astype(x.dtype)


def _first_only(x, idx, vals, lengths):
    """Batch entry 0 by brute force, the others 0."""
    keep = idx[:, 0] == 0
    loss0, grad0 = _brute(x[:, :1], idx[keep], vals[keep], lengths[:1])
    loss, grad = np.zeros(x.shape[1], x.dtype), np.zeros(x.shape, x.dtype)
    loss[0], grad[:, :1] = loss0[0], grad0
    return loss, grad


_X = RNG.standard_normal((5, 3, 4))
_IDX = np.array([[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [2, 0]], np.int64)
_VALS = np.array([1, 1, 0, 2, 0, 2], np.int32)
_LEN = np.array([5, 4, 3], np.int32)

# CTCGreedyDecoder: [max_time 4, batch 2, classes 3]; batch 0's best path is 1 1 2(blank) 1, batch 1's
# (length 3) 0 0 1, with a tie at t = 2 (first class wins).
_GREEDY = np.array([[[0.1, 0.7, 0.2], [0.5, 0.2, 0.3]],
                    [[0.0, 0.9, 0.1], [0.6, 0.3, 0.1]],
                    [[0.2, 0.1, 0.8], [0.4, 0.4, 0.2]],
                    [[0.1, 0.6, 0.3], [0.9, 0.05, 0.05]]], np.float32)

CASES = [
    Case("CTCGreedyDecoder", [_GREEDY, np.array([4, 3], np.int32)], attrs={"merge_repeated": True}, exact_shape=False,
         ref=lambda x, n: [np.array([[0, 0], [0, 1], [1, 0]], np.int64), np.array([1, 1, 0], np.int64), np.array([2, 2], np.int64),
                           np.array([[-(0.7 + 0.9 + 0.8 + 0.6)], [-(0.5 + 0.6 + 0.4)]], np.float32)]),
    Case("CTCGreedyDecoder", [_GREEDY, np.array([4, 3], np.int32)], attrs={"blank_index": 0}, exact_shape=False,
         id="CTCGreedyDecoder-blank-0-no-merge",
         ref=lambda x, n: [np.array([[0, 0], [0, 1], [0, 2], [0, 3]], np.int64), np.array([1, 1, 2, 1], np.int64),
                           np.array([2, 4], np.int64), np.array([[-(0.7 + 0.9 + 0.8 + 0.6)], [-(0.5 + 0.6 + 0.4)]], np.float32)]),
    Case("CTCGreedyDecoder", [_GREEDY[:, :1], np.array([0], np.int32)], exact_shape=False, id="CTCGreedyDecoder-empty",
         ref=lambda x, n: [np.zeros((0, 2), np.int64), np.zeros(0, np.int64), np.array([1, 0], np.int64),
                           np.zeros((1, 1), np.float32)]),
    Case("CTCLoss", [_X, _IDX, _VALS, _LEN], ref=lambda *a: _brute(*a), rtol=1e-10, atol=1e-12),
    Case("CTCLoss", [_X.astype(np.float32), _IDX, _VALS, _LEN], attrs={"preprocess_collapse_repeated": True},
         ref=lambda *a: _brute(*a, collapse=True), rtol=1e-5, atol=1e-6, id="CTCLoss-collapse-float32"),
    Case("CTCLoss", [_X, _IDX, _VALS, _LEN], attrs={"ctc_merge_repeated": False},
         ref=lambda *a: _brute(*a, merge=False), rtol=1e-10, atol=1e-12, id="CTCLoss-no-merge"),
    # Entries 1 and 2 have more labels than steps: ignored, a loss and gradient of 0.
    Case("CTCLoss", [_X, _IDX, _VALS, np.array([5, 1, 0], np.int32)], attrs={"ignore_longer_outputs_than_inputs": True},
         ref=_first_only, rtol=1e-10, atol=1e-12, id="CTCLoss-ignore-longer"),
    Case("PreventGradient", [RNG.standard_normal((2, 3))], attrs={"message": "no"}, ref=lambda x: x),
]  # fmt: skip
