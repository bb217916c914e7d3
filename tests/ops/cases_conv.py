"""Cases for conv_ops: Conv2D, MaxPool, AvgPool and their gradient kernels.

References are naive loops over every output position and window element, with padding
handled by bounds checks (an element outside the input is skipped), not by the kernels'
pad-and-slice scheme. Padding sizes follow TF's documented formulas.
"""

import itertools

import numpy as np

from tests.ops.harness import RNG, Case, f32, f64, i32


def pads(size, k, stride, padding, dilation=1):
    """(output size, padding before) for one spatial dim, per TF's documentation."""
    span = (k - 1) * dilation + 1
    if padding == "VALID":
        return (size - span) // stride + 1, 0
    out = -(-size // stride)
    return out, max((out - 1) * stride + span - size, 0) // 2


def _geometry(x_shape, k, strides, padding, dilations=(1, 1)):
    """Per spatial dim: (output size, padding before), for NHWC x_shape and window k."""
    return [pads(x_shape[1 + d], k[d], strides[d], padding, dilations[d]) for d in (0, 1)]


def _window(x_shape, k, strides, padding, dilations=(1, 1)):
    """Yields (oh, ow, i, j, ih, iw) for every window element that lies inside the input."""
    (oh_n, top), (ow_n, left) = _geometry(x_shape, k, strides, padding, dilations)
    for oh, ow, i, j in itertools.product(range(oh_n), range(ow_n), range(k[0]), range(k[1])):
        ih = oh * strides[0] + i * dilations[0] - top
        iw = ow * strides[1] + j * dilations[1] - left
        if 0 <= ih < x_shape[1] and 0 <= iw < x_shape[2]:
            yield oh, ow, i, j, ih, iw


def _out_shape(x_shape, k, strides, padding, channels, dilations=(1, 1)):
    (oh, _), (ow, _) = _geometry(x_shape, k, strides, padding, dilations)
    return (x_shape[0], oh, ow, channels)


# --- reference implementations (NHWC) ------------------------------------------------------------


def conv_ref(x, f, strides, padding, dilations=(1, 1)):
    out = np.zeros(_out_shape(x.shape, f.shape[:2], strides, padding, f.shape[3], dilations), x.dtype)
    for n in range(x.shape[0]):
        for oh, ow, i, j, ih, iw in _window(x.shape, f.shape[:2], strides, padding, dilations):
            for c, o in itertools.product(range(f.shape[2]), range(f.shape[3])):
                out[n, oh, ow, o] += x[n, ih, iw, c] * f[i, j, c, o]
    return out


def conv_input_grad_ref(x_shape, f, dy, strides, padding):
    dx = np.zeros(x_shape, dy.dtype)
    for n in range(x_shape[0]):
        for oh, ow, i, j, ih, iw in _window(x_shape, f.shape[:2], strides, padding):
            for c, o in itertools.product(range(f.shape[2]), range(f.shape[3])):
                dx[n, ih, iw, c] += dy[n, oh, ow, o] * f[i, j, c, o]
    return dx


def conv_filter_grad_ref(x, f_shape, dy, strides, padding):
    df = np.zeros(f_shape, dy.dtype)
    for n in range(x.shape[0]):
        for oh, ow, i, j, ih, iw in _window(x.shape, f_shape[:2], strides, padding):
            for c, o in itertools.product(range(f_shape[2]), range(f_shape[3])):
                df[i, j, c, o] += x[n, ih, iw, c] * dy[n, oh, ow, o]
    return df


def _pool_elements(x_shape, k, strides, padding):
    """{(oh, ow): [(ih, iw), ...]} in row-major window order."""
    cells: dict = {}
    for oh, ow, _i, _j, ih, iw in _window(x_shape, k, strides, padding):
        cells.setdefault((oh, ow), []).append((ih, iw))
    return cells


def pool_ref(x, k, strides, padding, kind):
    out = np.zeros(_out_shape(x.shape, k, strides, padding, x.shape[3]), x.dtype)
    for (oh, ow), cells in _pool_elements(x.shape, k, strides, padding).items():
        vals = np.stack([x[:, ih, iw, :] for ih, iw in cells])
        out[:, oh, ow, :] = vals.max(axis=0) if kind == "max" else vals.mean(axis=0)
    return out


def max_pool_grad_ref(x, dy, k, strides, padding):
    dx = np.zeros_like(x)
    for (oh, ow), cells in _pool_elements(x.shape, k, strides, padding).items():
        for n, c in itertools.product(range(x.shape[0]), range(x.shape[3])):
            ih, iw = max(cells, key=lambda p: x[n, p[0], p[1], c])  # first maximum on ties
            dx[n, ih, iw, c] += dy[n, oh, ow, c]
    return dx


def avg_pool_grad_ref(x_shape, dy, k, strides, padding):
    dx = np.zeros(x_shape, dy.dtype)
    for (oh, ow), cells in _pool_elements(x_shape, k, strides, padding).items():
        for ih, iw in cells:
            dx[:, ih, iw, :] += dy[:, oh, ow, :] / len(cells)
    return dx


def nchw(x):
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def nhwc(x):
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1))


def _strides4(s):
    return [1, s, s, 1]


# --- cases --------------------------------------------------------------------------------------

_x = f32(2, 5, 6, 3)
_f = f32(3, 3, 3, 4)
_x64, _f64 = f64(1, 6, 5, 2), f64(2, 3, 2, 3)
_distinct = np.random.default_rng(7).permutation(2 * 5 * 6 * 3).reshape(2, 5, 6, 3).astype(np.float32)

_TOL = {"rtol": 1e-5, "atol": 1e-5}


def _conv_case(x, f, stride, padding, dilation=1, fmt="NHWC", ident=""):
    strides, dil = [1, stride, stride, 1], [1, dilation, dilation, 1]
    attrs = {"strides": strides, "padding": padding, "dilations": dil}
    if fmt == "NCHW":
        attrs.update(data_format="NCHW", strides=[1, 1, stride, stride], dilations=[1, 1, dilation, dilation])
        return Case(
            "Conv2D",
            [nchw(x), f],
            attrs=attrs,
            id=ident,
            ref=lambda xx, ff: nchw(conv_ref(nhwc(xx), ff, (stride, stride), padding, (dilation,) * 2)),
            **_TOL,
        )
    return Case(
        "Conv2D",
        [x, f],
        attrs=attrs,
        id=ident,
        ref=lambda xx, ff: conv_ref(xx, ff, (stride, stride), padding, (dilation, dilation)),
        **_TOL,
    )


def _grad_cases(x, f, stride, padding, ident):
    """Conv2DBackpropInput/Filter against the loop references, for out_backprop of the right shape."""
    s = (stride, stride)
    dy = f32(*_out_shape(x.shape, f.shape[:2], s, padding, f.shape[3]))
    attrs = {"strides": _strides4(stride), "padding": padding}
    sizes_x, sizes_f = np.array(x.shape, np.int32), np.array(f.shape, np.int32)
    return [
        Case(
            "Conv2DBackpropInput",
            [sizes_x, f, dy],
            attrs=attrs,
            const_inputs=[0],
            id=f"Conv2DBackpropInput-{ident}",
            ref=lambda sz, ff, d: conv_input_grad_ref(tuple(sz), ff, d, s, padding),
            **_TOL,
        ),
        Case(
            "Conv2DBackpropFilter",
            [x, sizes_f, dy],
            attrs=attrs,
            const_inputs=[1],
            id=f"Conv2DBackpropFilter-{ident}",
            ref=lambda xx, sz, d: conv_filter_grad_ref(xx, tuple(sz), d, s, padding),
            **_TOL,
        ),
    ]


def _pool_cases(op, kind, k, stride, padding, ident, x=_distinct):
    attrs = {"ksize": [1, k, k, 1], "strides": _strides4(stride), "padding": padding}
    return Case(
        op,
        [x],
        attrs=attrs,
        id=f"{op}-{ident}",
        ref=lambda xx: pool_ref(xx, (k, k), (stride, stride), padding, kind),
        **_TOL,
    )


def _pool_grad_cases(k, stride, padding, ident):
    kk, ss = (k, k), (stride, stride)
    attrs = {"ksize": [1, k, k, 1], "strides": _strides4(stride), "padding": padding}
    y = pool_ref(_distinct, kk, ss, padding, "max")
    dy = f32(*y.shape)
    shape = np.array(_distinct.shape, np.int32)
    return [
        Case(
            "MaxPoolGrad",
            [_distinct, y, dy],
            attrs=attrs,
            id=f"MaxPoolGrad-{ident}",
            ref=lambda x, _y, d: max_pool_grad_ref(x, d, kk, ss, padding),
            **_TOL,
        ),
        Case(
            "AvgPoolGrad",
            [shape, dy],
            attrs=attrs,
            const_inputs=[0],
            id=f"AvgPoolGrad-{ident}",
            ref=lambda sz, d: avg_pool_grad_ref(tuple(sz), d, kk, ss, padding),
            **_TOL,
        ),
    ]


def _grouped_ref(x, f, stride, padding):
    """A grouped convolution (TF's Conv2D with input channels = groups x filter in_channels): each
    group's channels convolved with its own slice of the output channels."""
    cg, o = f.shape[2], f.shape[3]
    g = x.shape[3] // cg
    og = o // g
    return np.concatenate([conv_ref(x[..., i * cg:(i + 1) * cg], f[..., i * og:(i + 1) * og], (stride, stride), padding)
                           for i in range(g)], axis=3)


def _grouped_grad_ref(x, f, dy, stride, padding):
    """Input and filter gradients of a grouped convolution, group by group."""
    cg, o = f.shape[2], f.shape[3]
    g = x.shape[3] // cg
    og = o // g
    dx = np.concatenate([conv_input_grad_ref(x[..., :cg].shape, f[..., i * og:(i + 1) * og], dy[..., i * og:(i + 1) * og],
                                             (stride, stride), padding) for i in range(g)], axis=3)
    df = np.concatenate([conv_filter_grad_ref(x[..., i * cg:(i + 1) * cg], f[..., :og].shape, dy[..., i * og:(i + 1) * og],
                                              (stride, stride), padding) for i in range(g)], axis=3)
    return dx, df


_gx, _gf = f32(2, 5, 5, 4), f32(3, 3, 2, 6)  # two groups of 2 input and 3 output channels
_gdy = f32(2, 3, 3, 6)
_GROUPED = [
    Case("Conv2D", [_gx, _gf], attrs={"strides": [1, 1, 1, 1], "padding": "SAME"},
         ref=lambda x, f: _grouped_ref(x, f, 1, "SAME"), id="Conv2D-grouped", **_TOL),
    Case("Conv2D", [_gx, f32(2, 2, 1, 4)], attrs={"strides": [1, 2, 2, 1], "padding": "VALID"},
         ref=lambda x, f: _grouped_ref(x, f, 2, "VALID"), id="Conv2D-grouped-4", **_TOL),
    Case("Conv2DBackpropInput", [np.array(_gx.shape, np.int32), _gf, _gdy], attrs={"strides": [1, 2, 2, 1], "padding": "SAME"},
         const_inputs=[0], ref=lambda sz, f, dy: _grouped_grad_ref(_gx, f, dy, 2, "SAME")[0], id="Conv2DBackpropInput-grouped",
         **_TOL),
    Case("Conv2DBackpropFilter", [_gx, np.array(_gf.shape, np.int32), _gdy], attrs={"strides": [1, 2, 2, 1], "padding": "SAME"},
         const_inputs=[1], ref=lambda x, sz, dy: _grouped_grad_ref(x, _gf, dy, 2, "SAME")[1], id="Conv2DBackpropFilter-grouped",
         **_TOL),
]

_ties = np.array([[1, 3, 3], [3, 0, 2], [2, 3, 1]], np.float32).reshape(1, 3, 3, 1)
_ties_y = np.array([3, 3, 3, 3], np.float32).reshape(1, 2, 2, 1)
_ties_dy = np.array([1, 10, 100, 1000], np.float32).reshape(1, 2, 2, 1)
_tile_ties = np.maximum(RNG.integers(-2, 2, size=(2, 4, 6, 2)), 0).astype(np.float32)

CASES = [
    _conv_case(_x, _f, 1, "VALID", ident="Conv2D-VALID"),
    _conv_case(_x, _f, 2, "SAME", ident="Conv2D-SAME-stride2"),
    _conv_case(_x, _f, 1, "SAME", ident="Conv2D-SAME"),
    _conv_case(_x, _f, 2, "VALID", ident="Conv2D-VALID-stride2"),
    _conv_case(_x, _f, 1, "SAME", dilation=2, ident="Conv2D-SAME-dilated"),
    _conv_case(_x, _f, 2, "SAME", fmt="NCHW", ident="Conv2D-NCHW"),
    _conv_case(_x64, _f64, 1, "SAME", ident="Conv2D-float64-even-kernel"),
    Case("Conv2D", [i32(1, 4, 4, 2), i32(2, 2, 2, 3)], attrs={"strides": [1, 1, 1, 1], "padding": "VALID"},
         ref=lambda x, f: conv_ref(x, f, (1, 1), "VALID"), id="Conv2D-int32"),
    # EXPLICIT: (top 1, bottom 0, left 0, right 2) equals VALID on the input padded by hand.
    Case("Conv2D", [_x, _f], attrs={"strides": [1, 1, 1, 1], "padding": "EXPLICIT",
                                    "explicit_paddings": [0, 0, 1, 0, 0, 2, 0, 0]},
         ref=lambda x, f: conv_ref(np.pad(x, ((0, 0), (1, 0), (0, 2), (0, 0))), f, (1, 1), "VALID"),
         id="Conv2D-EXPLICIT", **_TOL),
    *_GROUPED,
    *_grad_cases(_x, _f, 1, "SAME", "SAME"),
    *_grad_cases(_x, _f, 2, "SAME", "SAME-stride2"),
    *_grad_cases(_x, _f, 2, "VALID", "VALID-stride2"),
    Case("Conv2DBackpropInput", [np.array(nchw(_x).shape, np.int32), _f, nchw(f32(2, 3, 3, 4))],
         attrs={"strides": [1, 1, 2, 2], "padding": "SAME", "data_format": "NCHW"}, const_inputs=[0],
         ref=lambda sz, f, dy: nchw(conv_input_grad_ref(_x.shape, f, nhwc(dy), (2, 2), "SAME")),
         id="Conv2DBackpropInput-NCHW", **_TOL),
    _pool_cases("MaxPool", "max", 2, 2, "VALID", "VALID"),
    _pool_cases("MaxPool", "max", 3, 2, "SAME", "SAME-stride2"),
    _pool_cases("MaxPool", "max", 2, 2, "SAME", "SAME-int32-negative", x=i32(1, 5, 5, 2, low=-9, high=-1)),
    _pool_cases("AvgPool", "avg", 2, 2, "VALID", "VALID"),
    _pool_cases("AvgPool", "avg", 3, 2, "SAME", "SAME-stride2"),
    _pool_cases("AvgPool", "avg", 3, 1, "SAME", "SAME"),
    Case("MaxPool", [nchw(_distinct)], attrs={"ksize": [1, 1, 3, 3], "strides": [1, 1, 2, 2], "padding": "SAME",
                                              "data_format": "NCHW"},
         ref=lambda x: nchw(pool_ref(nhwc(x), (3, 3), (2, 2), "SAME", "max")), id="MaxPool-NCHW"),
    # TF's CPU MaxPool: NaN never wins; each output is at least float32's lowest (a window of
    # -inf or NaN only gives it), padding included.
    Case("MaxPool", [np.array([[np.nan, 1, 2, 0], [1, np.nan, 0, 3], [0, 1, np.nan, np.nan], [np.nan, np.nan, -np.inf, np.nan]],
                              np.float32).reshape(1, 4, 4, 1)], attrs={"ksize": [1, 2, 2, 1], "strides": _strides4(2), "padding": "VALID"},
         ref=lambda x: np.array([1, 3, 1, np.finfo(np.float32).min], np.float32).reshape(1, 2, 2, 1), id="MaxPool-nan"),
    Case("MaxPool", [np.full((1, 3, 3, 1), -np.inf, np.float64)], attrs={"ksize": [1, 2, 2, 1], "strides": _strides4(2), "padding": "SAME"},
         ref=lambda x: np.full((1, 2, 2, 1), np.finfo(np.float64).min), id="MaxPool-all-minus-inf"),
    # TF's CPU AvgPoolGrad for a window longer than the input (5 > 4 columns, SAME): a column
    # window clipped by the leading padding spreads over the whole row (its GetBroadcastSize), so
    # columns 0-2 divide by 3 x 4 and cover all 4 inputs, column 3 divides by 3 x 3. (TF graphs and
    # TF_ENABLE_ONEDNN_OPTS=0 give this; oneDNN's eager kernel gives the transposed AvgPool.)
    Case("AvgPoolGrad", [np.array([1, 3, 4, 1], np.int32), np.ones((1, 3, 4, 1), np.float32)],
         attrs={"ksize": [1, 5, 5, 1], "strides": [1, 1, 1, 1], "padding": "SAME"}, const_inputs=[0], rtol=1e-6,
         ref=lambda *a: np.tile(np.array([0.75, 0.75 + 1 / 3, 0.75 + 1 / 3, 0.75 + 1 / 3], np.float32), 3).reshape(1, 3, 4, 1),
         id="AvgPoolGrad-window-longer-than-input"),
    *_pool_grad_cases(2, 2, "VALID", "VALID"),
    *_pool_grad_cases(3, 2, "SAME", "SAME-stride2"),
    *_pool_grad_cases(3, 1, "SAME", "SAME"),
    # Ties: each window's gradient goes to its first maximum (row-major).
    Case("MaxPoolGrad", [_ties, _ties_y, _ties_dy], attrs={"ksize": [1, 2, 2, 1], "strides": [1, 1, 1, 1],
                                                           "padding": "VALID"},
         ref=lambda *_: np.array([[0, 11, 0], [100, 0, 0], [0, 1000, 0]], np.float32).reshape(1, 3, 3, 1),
         id="MaxPoolGrad-ties"),
    # Windows that tile the input (2x2, stride 2), ties in every place of a window, as after a Relu.
    Case("MaxPoolGrad", [_tile_ties, pool_ref(_tile_ties, (2, 2), (2, 2), "VALID", "max"), f32(2, 2, 3, 2)],
         attrs={"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "VALID"},
         ref=lambda x, _y, d: max_pool_grad_ref(x, d, (2, 2), (2, 2), "VALID"), id="MaxPoolGrad-tiles-ties"),
]  # fmt: skip
