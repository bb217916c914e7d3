"""Cases for fused_ops: _FusedMatMul against the unfused numpy chain."""

import numpy as np

from tests.ops.harness import Case, f32, f64

_a, _b, _bias = f32(4, 3), f32(3, 5), f32(5)

CASES = [
    Case("_FusedMatMul", [_a, _b, _bias], attrs={"fused_ops": ["BiasAdd"], "num_args": 1},
         ref=lambda a, b, c: a @ b + c, rtol=1e-5, atol=1e-5),
    Case("_FusedMatMul", [_a, _b, _bias], attrs={"fused_ops": ["BiasAdd", "Relu"], "num_args": 1},
         ref=lambda a, b, c: np.maximum(a @ b + c, 0), rtol=1e-5, atol=1e-5, id="_FusedMatMul-relu"),
    Case("_FusedMatMul", [f64(3, 4), f64(5, 3), f64(5)],
         attrs={"fused_ops": ["BiasAdd", "Relu"], "num_args": 1, "transpose_a": True, "transpose_b": True},
         ref=lambda a, b, c: np.maximum(a.T @ b.T + c, 0), id="_FusedMatMul-transposed"),
]

# _FusedConv2D against the naive convolution loops of cases_conv, then the bias (and Relu).
from tests.ops.cases_conv import conv_ref, nchw, nhwc  # noqa: E402

_x, _f, _cb = f32(2, 5, 6, 3), f32(3, 3, 3, 4), f32(4)
_CONV = {"strides": [1, 1, 1, 1], "padding": "SAME", "num_args": 1, "num_host_args": 0}

CASES += [
    Case("_FusedConv2D", [_x, _f, _cb], attrs={**_CONV, "fused_ops": ["BiasAdd"]},
         ref=lambda x, f, b: conv_ref(x, f, (1, 1), "SAME") + b, rtol=1e-5, atol=1e-5, id="_FusedConv2D"),
    Case("_FusedConv2D", [_x, _f, _cb],
         attrs={**_CONV, "fused_ops": ["BiasAdd", "Relu"], "strides": [1, 2, 2, 1], "padding": "VALID"},
         ref=lambda x, f, b: np.maximum(conv_ref(x, f, (2, 2), "VALID") + b, 0), rtol=1e-5, atol=1e-5,
         id="_FusedConv2D-relu-strided"),
    Case("_FusedConv2D", [nchw(f64(2, 4, 4, 3)), f64(2, 2, 3, 5), f64(5)],
         attrs={**_CONV, "fused_ops": ["BiasAdd", "Relu"], "data_format": "NCHW"},
         ref=lambda x, f, b: nchw(np.maximum(conv_ref(nhwc(x), f, (1, 1), "SAME") + b, 0)), rtol=1e-9, atol=1e-9,
         id="_FusedConv2D-nchw"),
]


def _same_conv(x, f):
    """A stride-1 SAME convolution by numpy's window view (large cases: the loops are slow)."""
    kh, kw = f.shape[:2]
    xp = np.pad(x, ((0, 0), ((kh - 1) // 2, kh // 2), ((kw - 1) // 2, kw // 2), (0, 0)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(1, 2))  # [N, H, W, C, KH, KW]
    return np.einsum("nhwcij,ijco->nhwo", win, f)


# Large enough (32,768 outputs) for the bias and Relu over whole lines (ops/wide_rows.py).
CASES.append(Case("_FusedConv2D", [f32(8, 16, 16, 2), f32(3, 3, 2, 16), f32(16)],
                  attrs={**_CONV, "fused_ops": ["BiasAdd", "Relu"]},
                  ref=lambda x, f, b: np.maximum(_same_conv(x, f) + b, 0), rtol=1e-5, atol=1e-5,
                  id="_FusedConv2D-lines"))

# _FusedConv2DMaxPool: the naive convolution, the naive max pool, then the bias (and Relu). The
# gathered way (pool windows tiling the output: 2x2 of 6x6, of 4x4 after a stride-2 VALID conv;
# 3x3 of 6x6 with 2 channels in), and the unfused way (2x2 SAME over a 5x5 output: no tiling).
from tests.ops.cases_conv import pool_ref  # noqa: E402


def _conv_pool_case(x, f, b, conv_strides, padding, k, relu, ident, pool_padding="VALID"):
    s = conv_strides
    attrs = {"strides": [1, s, s, 1], "padding": padding, "pool_ksize": [1, k, k, 1], "pool_strides": [1, k, k, 1],
             "pool_padding": pool_padding, "fused_ops": ["BiasAdd", "Relu"] if relu else ["BiasAdd"]}

    def ref(x, f, b):
        y = pool_ref(conv_ref(x, f, (s, s), padding), (k, k), (k, k), pool_padding, "max") + b
        return np.maximum(y, 0) if relu else y

    return Case("_FusedConv2DMaxPool", [x, f, b], attrs=attrs, ref=ref, rtol=1e-5, atol=1e-5, id=ident)


CASES += [
    _conv_pool_case(f32(2, 6, 6, 1), f32(3, 3, 1, 4), f32(4), 1, "SAME", 2, True, "_FusedConv2DMaxPool-relu"),
    _conv_pool_case(f32(3, 9, 9, 3), f32(3, 3, 3, 5), f32(5), 2, "VALID", 2, False, "_FusedConv2DMaxPool-strided"),
    _conv_pool_case(f32(1, 6, 6, 2), f32(2, 2, 2, 3), f32(3), 1, "SAME", 3, True, "_FusedConv2DMaxPool-3x3"),
    _conv_pool_case(f64(2, 5, 5, 2), f64(3, 3, 2, 3), f64(3), 1, "SAME", 2, True, "_FusedConv2DMaxPool-untiled",
                    pool_padding="SAME"),
]

# _FusedConv2DMaxPoolTrain: the pooled output as _FusedConv2DMaxPool's (bias and Relu before the
# pool here), the activations in (window offset, pooled position) order per example and the
# im2col in that row order (each window's rows, then a row of ones: the bias's column); its
# gradient routes each window's grad to the first maximum of its
# activations (a tie: the first offset, row-major), then sums the bias and filter gradients.


def _pool_major(a, k):
    """[N, OH, OW, ...] -> [N, k * k, OH / k * OW / k, ...] (offset-major rows per example)."""
    n, oh, ow, *rest = a.shape
    a = a.reshape(n, oh // k, k, ow // k, k, *rest)
    return np.moveaxis(a, (2, 4), (1, 2)).reshape(n, k * k, (oh // k) * (ow // k), *rest)


def _same_cols(x, kh, kw):
    """The stride-1 SAME im2col [N, H, W, KH * KW, C] by loops over the taps."""
    n, h, w, c = x.shape
    xp = np.pad(x, ((0, 0), ((kh - 1) // 2, kh // 2), ((kw - 1) // 2, kw // 2), (0, 0)))
    return np.stack([xp[:, i:i + h, j:j + w] for i in range(kh) for j in range(kw)], axis=3)


def _conv_pool_train_ref(relu):
    def ref(x, f, b):
        act = conv_ref(x, f, (1, 1), "SAME") + b
        act = np.maximum(act, 0) if relu else act
        pooled = pool_ref(act, (2, 2), (2, 2), "VALID", "max")
        cols = _pool_major(_same_cols(x, *f.shape[:2]), 2)  # [N, taps, cells, KH * KW, C]
        cols = np.concatenate([cols, np.ones_like(cols[:, :, :, :1])], axis=3)  # then the ones row
        return pooled, _pool_major(act, 2).reshape(x.shape[0], 4, -1), cols.reshape(x.shape[0], -1, x.shape[3])
    return ref


def _conv_pool_train_grad_ref(act, y, dy, cols, sizes):
    n, taps, width = act.shape
    dact = np.zeros_like(act)
    for i in range(n):
        for w in range(width):
            t = next((t for t in range(taps) if act[i, t, w] == y.reshape(n, -1)[i, w]), None)
            if t is not None:
                dact[i, t, w] = dy.reshape(n, -1)[i, w]
    rows = dact.reshape(-1, sizes[3])
    k = sizes[0] * sizes[1] * sizes[2]
    return (cols.reshape(rows.shape[0], -1)[:, :k].T @ rows).reshape(sizes), rows.sum(0)


_tx, _tf, _tb = f32(3, 6, 4, 2), f32(3, 3, 2, 5), f32(5)
_tact = np.maximum(_conv_pool_train_ref(True)(_tx, _tf, _tb)[1], 0)
_tact[0, :, :3] = 0  # ties: the first offset takes the gradient
_tcols = _conv_pool_train_ref(True)(_tx, _tf, _tb)[2]
CASES += [
    Case("_FusedConv2DMaxPoolTrain", [_tx, _tf, _tb], ref=_conv_pool_train_ref(True), rtol=1e-5, atol=1e-5,
         attrs={"strides": [1, 1, 1, 1], "padding": "SAME", "pool_ksize": [1, 2, 2, 1], "pool_strides": [1, 2, 2, 1],
                "pool_padding": "VALID", "fused_ops": ["BiasAdd", "Relu"]}),
    Case("_FusedConv2DMaxPoolTrain", [f64(2, 4, 4, 1), f64(3, 3, 1, 3), f64(3)], ref=_conv_pool_train_ref(False),
         attrs={"strides": [1, 1, 1, 1], "padding": "SAME", "pool_ksize": [1, 2, 2, 1], "pool_strides": [1, 2, 2, 1],
                "pool_padding": "SAME", "fused_ops": ["BiasAdd"]}, rtol=1e-9, atol=1e-9,
         id="_FusedConv2DMaxPoolTrain-no-relu"),
    Case("_FusedConv2DMaxPoolTrainGrad",
         [_tact, _tact.max(axis=1).reshape(3, 3, 2, 5), f32(3, 3, 2, 5), _tcols, np.array([3, 3, 2, 5], np.int32)],
         ref=_conv_pool_train_grad_ref, const_inputs=[4], rtol=1e-5, atol=1e-5),
]

# _FusedScaleShift: x * scale + shift (then Relu), per channel; above wide_rows.MIN_SIZE too.
_sx, _ss, _st = f32(2, 3, 3, 4), f32(4), f32(4)
CASES += [
    Case("_FusedScaleShift", [_sx, _ss, _st], attrs={"fused_ops": ["Relu"]},
         ref=lambda x, s, t: np.maximum(x * s + t, 0), rtol=0, atol=0),
    Case("_FusedScaleShift", [f64(64, 16, 32), f64(1, 1, 32), f64(32)], ref=lambda x, s, t: x * s.reshape(32) + t,
         rtol=0, atol=0, id="_FusedScaleShift-wide"),
]
CASES += [
    Case("_FusedScaledSum", [_sx, _ss, f32(2, 3, 3, 4), f32(1, 1, 1, 4)], ref=lambda x, s, b, t: x * s + b + t,
         rtol=0, atol=0),
    Case("_FusedScaledSum", [f64(64, 16, 32), f64(32), f64(64, 16, 32), f64(32)], ref=lambda x, s, b, t: x * s + b + t,
         rtol=0, atol=0, id="_FusedScaledSum-wide"),
]
