"""TF's CPU pooling kernels at their edges, where they differ from the plain window math of
window.py: a NaN never wins a max-pooling window (and no output is below float's lowest), and
AvgPoolGrad's spans for windows longer than the input (avgpooling_op.cc's GetBroadcastSize).
A GPU gives the same numbers as the CPU (one rule per op on every device)."""

from __future__ import annotations

import numpy as np


def tf_cpu_max_pool(xp, x, pool):
    """``pool(x)`` as TF's CPU MaxPool gives it: a NaN never wins, and every output is at least the
    dtype's lowest finite value (TF starts each window there: a window of -inf or NaN only gives
    it). The NaN pass runs only when the plain pooling let one through. On a GPU, where that check
    would wait for the device, the input goes through ``fmax(x, lowest)`` first (NaN and -inf
    become the lowest value): one elementwise launch, the same numbers."""
    if xp is not np and x.dtype.kind == "f":
        return pool(xp.fmax(x, x.dtype.type(np.finfo(x.dtype).min)))
    out = pool(x)
    if out.dtype.kind != "f":
        return out
    if np.isnan(out).any():
        out = pool(np.where(np.isnan(x), out.dtype.type(-np.inf), x))
    return np.maximum(out, np.finfo(out.dtype).min, out=out)


def broadcast_spans(out_size: int, in_size: int, k: int, stride: int, pad: int):
    """TF's GetBroadcastSize (avgpooling_op.cc) per output index: the input span its gradient is
    spread over. Where a window is clipped by the leading padding and is also longer than the
    input, TF's span runs to the input's end from 0 (its right-edge check reads the unclipped
    ksize), so it is longer than the window the forward AvgPool averaged."""
    spans = []
    for i in range(out_size):
        start, size = i * stride, k
        if start < pad:
            start, size = 0, k + start - pad
        else:
            start -= pad
        if start + k > in_size:
            size = min(in_size - start, k)
        spans.append((start, size))
    return spans


def tf_cpu_avg_pool_grad(xp, dy, hw, win):
    """AvgPoolGrad as TF's CPU kernel computes it (each grad divided by its span's size and added
    over the span), for the windows longer than the input where that differs from the transposed
    AvgPool (the ordinary path)."""
    spans, sizes = [], []
    for d, (in_size, k, stride, pad) in enumerate(zip(hw, win.ksize, win.strides, win.pads)):
        spans.append(broadcast_spans(dy.shape[1 + d], in_size, k, stride, pad[0]))
        sizes.append(np.array([size for _, size in spans[-1]], dy.dtype))
    share = dy * xp.asarray(dy.dtype.type(1) / (sizes[0][:, None] * sizes[1][None, :]))[None, :, :, None]
    # added span by span, as TF's loops: an inf or NaN grad reaches its own span only (a product
    # by 0/1 span matrices would add inf * 0 = NaN everywhere else)
    out = xp.zeros((dy.shape[0], *hw, dy.shape[3]), dy.dtype)
    for r, (rs, rn) in enumerate(spans[0]):
        for q, (cs, cn) in enumerate(spans[1]):
            out[:, rs:rs + rn, cs:cs + cn] += share[:, r, q][:, None, None]
    return out
