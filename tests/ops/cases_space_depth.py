"""Cases for space_depth_ops. References move one element at a time, by the index formulas of
TF's documentation (not by reshape/transpose, as the kernels do)."""

import itertools

import numpy as np

from tests.ops.cases_conv import nchw, nhwc
from tests.ops.harness import Case, f32, f64, i32


def space_to_depth_ref(x, b):
    n, h, w, c = x.shape
    out = np.zeros((n, h // b, w // b, c * b * b), x.dtype)
    for i, j, k in itertools.product(range(h), range(w), range(c)):
        out[:, i // b, j // b, ((i % b) * b + j % b) * c + k] = x[:, i, j, k]
    return out


def depth_to_space_ref(x, b):
    n, h, w, c = x.shape
    oc = c // (b * b)
    out = np.zeros((n, h * b, w * b, oc), x.dtype)
    for i, j, k in itertools.product(range(h * b), range(w * b), range(oc)):
        out[:, i, j, k] = x[:, i // b, j // b, ((i % b) * b + j % b) * oc + k]
    return out


def space_to_batch_ref(x, block, pads):
    block, pads = list(block), [list(p) for p in pads]
    m = len(block)
    xp = np.pad(x, [(0, 0), *pads, *[(0, 0)] * (x.ndim - m - 1)])
    n = x.shape[0]
    inner = [d // k for d, k in zip(xp.shape[1 : m + 1], block)]
    out = np.zeros((n * int(np.prod(block)), *inner, *x.shape[m + 1 :]), x.dtype)
    for offs in itertools.product(*map(range, block)):
        flat = int(np.ravel_multi_index(offs, block)) if m else 0
        for bi in range(n):
            for pos in itertools.product(*map(range, inner)):
                src = tuple(p * k + o for p, k, o in zip(pos, block, offs))
                out[(flat * n + bi, *pos)] = xp[(bi, *src)]
    return out


def batch_to_space_ref(x, block, crops):
    block, crops = list(block), [list(c) for c in crops]
    m = len(block)
    n = x.shape[0] // int(np.prod(block))
    inner = x.shape[1 : m + 1]
    full = np.zeros((n, *(d * k for d, k in zip(inner, block)), *x.shape[m + 1 :]), x.dtype)
    for offs in itertools.product(*map(range, block)):
        flat = int(np.ravel_multi_index(offs, block))
        for bi in range(n):
            for pos in itertools.product(*map(range, inner)):
                full[(bi, *(p * k + o for p, k, o in zip(pos, block, offs)))] = x[(flat * n + bi, *pos)]
    return full[(slice(None), *(slice(a, full.shape[1 + i] - z) for i, (a, z) in enumerate(crops)))]


def _nd(op, x, block, pads, ident, dtype=np.int32):
    ref = space_to_batch_ref if op == "SpaceToBatchND" else batch_to_space_ref
    block, pads = np.array(block, dtype), np.array(pads, dtype)
    attr = "Tpaddings" if op == "SpaceToBatchND" else "Tcrops"
    return Case(op, [x, block, pads], attrs={"Tblock_shape": dtype, attr: dtype}, const_inputs=[1, 2],
                ref=lambda xx, b, p: ref(xx, b, p), id=f"{op}-{ident}")  # fmt: skip


_x = f32(2, 4, 6, 3)
def _P(k, kc, s, r, padding):  # noqa: N802  (attrs: k x kc windows, stride s, rate r)
    return {"ksizes": [1, k, kc, 1], "strides": [1, s, s, 1], "rates": [1, r, r, 1], "padding": padding}


def _patches_ref(x, k, kc, s, r, padding):
    """Loops: each output position's window taps (rate r apart) in (row, col, channel) order."""
    n, h, w, c = x.shape
    span_h, span_w = (k - 1) * r + 1, (kc - 1) * r + 1
    if padding == "SAME":
        oh, ow = -(-h // s), -(-w // s)
        top, left = max((oh - 1) * s + span_h - h, 0) // 2, max((ow - 1) * s + span_w - w, 0) // 2
    else:
        oh, ow, top, left = (h - span_h) // s + 1, (w - span_w) // s + 1, 0, 0
    out = np.zeros((n, oh, ow, k * kc * c), x.dtype)
    for i in range(oh):
        for j in range(ow):
            for a in range(k):
                for bb in range(kc):
                    y, z = i * s + a * r - top, j * s + bb * r - left
                    if 0 <= y < h and 0 <= z < w:
                        out[:, i, j, (a * kc + bb) * c:(a * kc + bb + 1) * c] = x[:, y, z]
    return out


CASES = [
    Case("SpaceToDepth", [_x], attrs={"block_size": 2}, ref=lambda x: space_to_depth_ref(x, 2)),
    Case("SpaceToDepth", [i32(1, 6, 3, 2)], attrs={"block_size": 3}, ref=lambda x: space_to_depth_ref(x, 3),
         id="SpaceToDepth-int32-block3"),
    Case("SpaceToDepth", [nchw(_x)], attrs={"block_size": 2, "data_format": "NCHW"},
         ref=lambda x: nchw(space_to_depth_ref(nhwc(x), 2)), id="SpaceToDepth-NCHW"),
    Case("DepthToSpace", [f32(2, 2, 3, 8)], attrs={"block_size": 2}, ref=lambda x: depth_to_space_ref(x, 2)),
    Case("DepthToSpace", [nchw(f32(1, 2, 2, 18))], attrs={"block_size": 3, "data_format": "NCHW"},
         ref=lambda x: nchw(depth_to_space_ref(nhwc(x), 3)), id="DepthToSpace-NCHW"),
    _nd("SpaceToBatchND", f32(2, 3, 4, 2), [2, 2], [[1, 0], [0, 2]], "2d-padded"),
    _nd("SpaceToBatchND", f32(1, 6), [3], [[0, 0]], "1d", dtype=np.int64),
    _nd("SpaceToBatchND", i32(2, 2, 4, 2, 3), [1, 2], [[0, 0], [1, 1]], "remaining-dims"),
    _nd("BatchToSpaceND", f32(8, 2, 3, 2), [2, 2], [[1, 0], [0, 2]], "2d-cropped"),
    _nd("BatchToSpaceND", f32(3, 2), [3], [[0, 1]], "1d", dtype=np.int64),
    _nd("BatchToSpaceND", i32(4, 2, 3, 2, 1), [2, 2], [[0, 0], [1, 1]], "remaining-dims"),
    Case("ExtractImagePatches", [f32(2, 5, 4, 3)], attrs=_P(2, 2, 1, 1, "VALID"), ref=lambda x: _patches_ref(x, 2, 2, 1, 1, "VALID")),
    Case("ExtractImagePatches", [f64(1, 5, 6, 2)], attrs=_P(3, 2, 2, 1, "SAME"), ref=lambda x: _patches_ref(x, 3, 2, 2, 1, "SAME"),
         id="ExtractImagePatches-SAME-strided"),
    Case("ExtractImagePatches", [i32(1, 6, 6, 1)], attrs=_P(2, 1, 1, 2, "VALID"), ref=lambda x: _patches_ref(x, 2, 1, 1, 2, "VALID"),
         id="ExtractImagePatches-rates"),
]  # fmt: skip
