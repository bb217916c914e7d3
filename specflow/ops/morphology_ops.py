"""Grayscale morphological dilation (tf.nn.dilation2d): Dilation2D and the two gradient ops TF's
gradient emits, Dilation2DBackpropInput and Dilation2DBackpropFilter.

Each output is max over the window's taps of input + filter (NHWC input, [rows, cols, depth]
filter, per channel), the taps spaced by ``rates`` and the windows by ``strides``, SAME or VALID
padding as a convolution with the dilated filter. As TF's CPU kernels (dilation_ops.cc): a tap
wins only if strictly greater than the best so far, scanning rows then columns from the type's
lowest value, so ties go to the first tap, NaN never wins, and a window with no winner (every tap
in the padding) outputs the lowest value. The gradients send each output's gradient to its
winning tap's input element or filter element; a window with no winner sends it to the input
element at the window's clamped top-left corner (if inside) and to filter element (0, 0).
The window geometry (tap rectangles on the unpadded input) is window.py's.
"""

from __future__ import annotations

import numpy as np

from specflow.graph import dtypes
from specflow.graph.shapes import Shape
from specflow.ops import conv_ops as cv
from specflow.ops import grad_util as gu
from specflow.ops import window as wn
from specflow.ops.inference import InferenceContext
from specflow.ops.math_ops import quiet_fp
from specflow.ops.registry import bfloat16_native, gradient, kernel, register_op

_ATTRS = ["T: {real}", "strides: list(int)", "rates: list(int)", "padding: {'SAME', 'VALID'}"]


def _pair(c, name: str) -> tuple[int, int]:
    vals = [int(v) for v in c.attrs[name]]
    what = "strides" if name == "strides" else "rates"
    if len(vals) != 4:
        raise c.fail(f"{what} must have 4 entries (NHWC), got {vals}")
    if vals[0] != 1 or vals[3] != 1:
        raise c.fail(f"{what} {vals}: only the spatial dimensions (rows, cols) may differ from 1")
    if min(vals) < 1:
        raise c.fail(f"{what} must be positive, got {vals}")
    return vals[1], vals[2]


def _geometry(c, x_shape, f_shape) -> tuple[wn._Window, tuple]:
    """The window over the input and the output shape [batch, rows, cols, depth] (None where
    unknown), both checked."""
    strides, rates = _pair(c, "strides"), _pair(c, "rates")
    n, h, w, d = cv._rank4(c, x_shape, "input")
    f = Shape(f_shape)
    if f.rank not in (None, 3):
        raise c.fail(f"filter must be 3-D [rows, cols, depth], got shape {f}")
    fr, fc, fd = (None,) * 3 if f.rank is None else f.dims
    if None not in (d, fd) and d != fd:
        raise c.fail(f"input and filter must have the same depth: {d} vs {fd}")
    rows = cv._out_size(c, h, fr, strides[0], rates[0], None)
    cols = cv._out_size(c, w, fc, strides[1], rates[1], None)
    win = wn._Window((fr, fc), strides, rates, (rows[0], cols[0]), (rows[1], cols[1]))
    return win, (n, rows[0], cols[0], d if d is not None else fd)


def _lowest(dtype: np.dtype):
    """Eigen's NumTraits<T>::lowest(): the most negative finite value, not -inf."""
    if dtype.kind == "f" or dtype == dtypes.bfloat16.numpy:
        import ml_dtypes

        return ml_dtypes.finfo(dtype).min
    return np.iinfo(dtype).min


def _winners(ctx, x, f):
    """(output, winning tap per output element: row-major filter offset, -1 for none)."""
    xp = ctx.xp
    win, (n, oh, ow, d) = _geometry(ctx, x.shape, f.shape)
    out = xp.full((n, oh, ow, d), _lowest(x.dtype), x.dtype)
    best = xp.full((n, oh, ow, d), -1, np.int32)
    with quiet_fp():  # integer sums wrap, as TF's
        for t in wn.taps(win, x.shape[1:3]):
            if t.empty:
                continue
            at = (slice(None), *t.out)
            cur = out[at]
            val = x[(slice(None), *t.inp)] + f[divmod(t.index, f.shape[1])]
            won = val > cur
            out[at] = xp.where(won, val, cur)
            best[at] = xp.where(won, np.int32(t.index), best[at])
    return win, out, best


def _shape(ic: InferenceContext) -> list[Shape]:
    return [Shape(list(_geometry(ic, ic.shape(0), ic.shape(1))[1]))]


register_op(
    "Dilation2D",
    inputs=["input: T", "filter: T"],
    outputs=["output: T"],
    attrs=_ATTRS,
    shape=_shape,
    doc="Grayscale dilation of an NHWC input by a [rows, cols, depth] filter: the max over each "
    "window (strides, tap spacing rates, SAME or VALID padding) of input + filter, per channel.",
)


@kernel("Dilation2D")
@bfloat16_native  # sums compared in the input's type, as TF's
def _dilation2d(ctx, x, f):
    return _winners(ctx, x, f)[1]


def _backprop_shape(which: int):
    def shape(ic: InferenceContext) -> list[Shape]:
        want = _geometry(ic, ic.shape(0), ic.shape(1))[1]
        if not ic.shape(2).is_compatible_with(Shape(list(want))):
            raise ic.fail(f"out_backprop has shape {ic.shape(2)}, but the dilation's output is {Shape(list(want))}")
        return [ic.shape(which)]

    return shape


def _checked_winners(ctx, x, f, dy):
    win, out, best = _winners(ctx, x, f)
    if dy.shape != out.shape:
        raise ctx.fail(f"out_backprop has shape {list(dy.shape)}, but the dilation's output is {list(out.shape)}")
    return win, best


for _name, _out, _which, _what in (
    ("Dilation2DBackpropInput", "in_backprop", 0, "input element"),
    ("Dilation2DBackpropFilter", "filter_backprop", 1, "filter element"),
):
    register_op(
        _name,
        inputs=["input: T", "filter: T", "out_backprop: T"],
        outputs=[f"{_out}: T"],
        attrs=_ATTRS,
        shape=_backprop_shape(_which),
        doc=f"Dilation2D's gradient for its {'input' if _which == 0 else 'filter'}: each output's "
        f"gradient added to the {_what} its window's maximum came from (the first on ties).",
    )


@kernel("Dilation2DBackpropInput")
@bfloat16_native
def _dilation2d_backprop_input(ctx, x, f, dy):
    xp = ctx.xp
    win, best = _checked_winners(ctx, x, f, dy)
    n, h, w, d = x.shape
    oh, ow = best.shape[1:3]
    hb = xp.arange(oh, dtype=np.int64).reshape(1, -1, 1, 1) * win.strides[0] - win.pads[0][0]
    wb = xp.arange(ow, dtype=np.int64).reshape(1, 1, -1, 1) * win.strides[1] - win.pads[1][0]
    kh, kw = best // f.shape[1], best % f.shape[1]
    none = best < 0  # no winner: the window's top-left corner, clamped to the input
    rows = xp.where(none, xp.maximum(hb, 0), hb + kh * win.dilations[0])
    cols = xp.where(none, xp.maximum(wb, 0), wb + kw * win.dilations[1])
    flat = ((xp.arange(n).reshape(-1, 1, 1, 1) * h + rows) * w + cols) * d + xp.arange(d)
    grad = xp.zeros(x.size, x.dtype)
    keep = (rows < h) & (cols < w)
    # in output order, one addition at a time, as TF's loop (the same rounding)
    xp.add.at(grad, flat[keep], dy[keep])
    return grad.reshape(x.shape)


@kernel("Dilation2DBackpropFilter")
@bfloat16_native
def _dilation2d_backprop_filter(ctx, x, f, dy):
    xp = ctx.xp
    _, best = _checked_winners(ctx, x, f, dy)
    grad = xp.zeros(f.size, f.dtype)
    if f.size:
        d = f.shape[2]
        flat = xp.maximum(best, 0).astype(np.int64) * d + xp.arange(d)  # no winner: element (0, 0)
        xp.add.at(grad, flat.reshape(-1), dy.reshape(-1))
    return grad.reshape(f.shape)


@gradient("Dilation2D")
def _dilation2d_grad(b, node, dys):
    attrs = {k: node.attrs[k] for k in ("strides", "rates", "padding")}
    x, f = node.data_inputs
    return [gu.emit(b, op, x, f, dys[0], **attrs) for op in ("Dilation2DBackpropInput", "Dilation2DBackpropFilter")]
