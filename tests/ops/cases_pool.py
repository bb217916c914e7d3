"""Cases for pool_ops: MaxPoolV2 / MaxPoolGradV2 and MaxPoolWithArgmax / MaxPoolGradWithArgmax.

The argmax reference walks each window's in-bounds elements in row-major order (cases_conv's
bounds-checked window walk) and keeps the first strict maximum, with TF's flattened index.
"""

import itertools

import numpy as np

from tests.ops.cases_conv import _pool_elements, max_pool_grad_ref, nchw, nhwc, pool_ref
from tests.ops.harness import Case, f32, i32


def argmax_ref(x, k, strides, padding, include_batch=False, targmax=np.int64):
    n, h, w, c = x.shape
    cells = _pool_elements(x.shape, k, strides, padding)
    oh = 1 + max(o for o, _ in cells) if cells else 0
    ow = 1 + max(o for _, o in cells) if cells else 0
    out, arg = np.zeros((n, oh, ow, c), x.dtype), np.zeros((n, oh, ow, c), targmax)
    for (i, j), where in cells.items():
        for b, ch in itertools.product(range(n), range(c)):
            best = None
            for ih, iw in where:
                if best is None or x[b, ih, iw, ch] > best:
                    best, pos = x[b, ih, iw, ch], (ih * w + iw) * c + ch
            out[b, i, j, ch] = best
            arg[b, i, j, ch] = pos + (b * h * w * c if include_batch else 0)
    return out, arg


def argmax_grad_ref(x, dy, argmax, include_batch=False):
    dx = np.zeros(x.size, x.dtype)
    per = x.size // x.shape[0]
    for b in range(x.shape[0]):
        for g, a in zip(dy[b].ravel(), argmax[b].ravel()):
            dx[a if include_batch else b * per + a] += g
    return dx.reshape(x.shape)


_x = np.random.default_rng(5).permutation(2 * 5 * 6 * 3).reshape(2, 5, 6, 3).astype(np.float32)
_ties = np.array([[1, 3, 3], [3, 0, 2], [2, 3, 1]], np.float32).reshape(1, 3, 3, 1)


def grad_grad_ref(x, g, k, strides, padding):
    """g read at each window's first maximum (what MaxPoolGradGrad / V2 compute), by walking."""
    cells = _pool_elements(x.shape, k, strides, padding)
    y = pool_ref(x, k, strides, padding, "max")
    out = np.zeros(y.shape, g.dtype)
    for (i, j), where in cells.items():
        for b, ch in itertools.product(range(x.shape[0]), range(x.shape[3])):
            ih, iw = max(where, key=lambda p: x[b, p[0], p[1], ch])  # the first maximum
            out[b, i, j, ch] = g[b, ih, iw, ch]
    return out


def _v2(k, s, padding, x=_x, fmt="NHWC", ident=""):
    ksize, strides = [1, k, k, 1], [1, s, s, 1]
    tx, back = (lambda a: a), (lambda a: a)
    if fmt == "NCHW":
        ksize, strides, tx, back = [1, 1, k, k], [1, 1, s, s], nchw, nhwc
    y = pool_ref(x, (k, k), (s, s), padding, "max")
    dy = f32(*y.shape).astype(x.dtype)
    attrs = {"padding": padding, "data_format": fmt}
    vec = [np.array(ksize, np.int32), np.array(strides, np.int32)]
    return [
        Case("MaxPoolV2", [tx(x), *vec], attrs=attrs, const_inputs=[1, 2], id=f"MaxPoolV2-{ident}",
             ref=lambda xx, *_: tx(pool_ref(back(xx), (k, k), (s, s), padding, "max"))),
        Case("MaxPoolGradV2", [tx(x), tx(y), tx(dy), *vec], attrs=attrs, const_inputs=[3, 4], id=f"MaxPoolGradV2-{ident}",
             ref=lambda xx, yy, g, *_: tx(max_pool_grad_ref(back(xx), back(g), (k, k), (s, s), padding)), rtol=1e-5),
        Case("MaxPoolGradGradV2", [tx(x), tx(y), tx(f32(*x.shape)), *vec], attrs=attrs, const_inputs=[3, 4],
             id=f"MaxPoolGradGradV2-{ident}", ref=lambda xx, yy, g, *_: tx(grad_grad_ref(back(xx), back(g), (k, k), (s, s), padding))),
    ]  # fmt: skip


def _argmax(x, k, s, padding, include_batch=False, targmax=np.int64, ident=""):
    attrs = {"ksize": [1, k, k, 1], "strides": [1, s, s, 1], "padding": padding,
             "include_batch_in_index": include_batch, "Targmax": targmax}
    y, arg = argmax_ref(x, (k, k), (s, s), padding, include_batch, targmax)
    dy = f32(*y.shape).astype(x.dtype)
    return [
        Case("MaxPoolWithArgmax", [x], attrs=attrs, id=f"MaxPoolWithArgmax-{ident}",
             ref=lambda xx: argmax_ref(xx, (k, k), (s, s), padding, include_batch, targmax)),
        Case("MaxPoolGradWithArgmax", [x, dy, arg], attrs=attrs, id=f"MaxPoolGradWithArgmax-{ident}",
             ref=lambda xx, g, a: argmax_grad_ref(xx, g, a, include_batch), rtol=1e-5),
        Case("MaxPoolGradGradWithArgmax", [x, f32(*x.shape).astype(x.dtype), arg], attrs=attrs,
             id=f"MaxPoolGradGradWithArgmax-{ident}", ref=lambda xx, g, a: grad_grad_ref(xx, g, (k, k), (s, s), padding)),
    ]  # fmt: skip


CASES = [
    *_v2(2, 2, "VALID", ident="VALID"),
    *_v2(3, 2, "SAME", ident="SAME-stride2"),
    *_v2(3, 1, "SAME", fmt="NCHW", ident="NCHW"),
    *_argmax(_x, 2, 2, "VALID", ident="VALID"),
    *_argmax(_x, 3, 2, "SAME", include_batch=True, ident="SAME-batch-index"),
    *_argmax(_x, 3, 1, "SAME", targmax=np.int32, ident="SAME-int32"),
    *_argmax(i32(2, 4, 3, 2, low=-9, high=-1), 2, 1, "SAME", ident="int32-negative-ties"),
    *_argmax(_ties, 2, 1, "VALID", ident="ties"),
    # TF's documented convention, literally: 2x2 image, 2 channels, one 2x2 window.
    Case("MaxPoolWithArgmax", [np.array([[[[1, 8], [5, 2]], [[7, 3], [4, 6]]]], np.float32)],
         attrs={"ksize": [1, 2, 2, 1], "strides": [1, 1, 1, 1], "padding": "VALID"}, id="MaxPoolWithArgmax-literal",
         ref=lambda x: (np.array([7, 8], np.float32).reshape(1, 1, 1, 2), np.array([4, 1]).reshape(1, 1, 1, 2))),
]  # fmt: skip
