"""Cases for conv3d_ops: Conv3D, its backprop ops, AvgPool3D, MaxPool3D and their gradients.

References loop over every output position and window element of a channels-last input, with
padding as bounds checks (TF's documented SAME / VALID sizes), not the kernels' pad-and-slice.
"""

import itertools

import numpy as np

from tests.ops.cases_conv import pads
from tests.ops.harness import Case, f32, f64

_TOL = {"rtol": 1e-5, "atol": 1e-5}


def _walk(spatial, k, strides, padding, dilations=(1, 1, 1)):
    """(output shape, [(out index, window offset, in index)] for in-bounds window elements)."""
    geo = [pads(spatial[d], k[d], strides[d], padding, dilations[d]) for d in range(3)]
    out = tuple(o for o, _ in geo)
    cells = []
    for o in itertools.product(*map(range, out)):
        for off in itertools.product(*map(range, k)):
            i = tuple(o[d] * strides[d] + off[d] * dilations[d] - geo[d][1] for d in range(3))
            if all(0 <= i[d] < spatial[d] for d in range(3)):
                cells.append((o, off, i))
    return out, cells


def conv3d_ref(x, f, strides, padding, dilations=(1, 1, 1)):
    out_sp, cells = _walk(x.shape[1:4], f.shape[:3], strides, padding, dilations)
    out = np.zeros((x.shape[0], *out_sp, f.shape[4]), x.dtype)
    for o, off, i in cells:
        out[(slice(None), *o)] += x[(slice(None), *i)] @ f[off]
    return out


def conv3d_input_grad_ref(x_shape, f, dy, strides, padding):
    _, cells = _walk(x_shape[1:4], f.shape[:3], strides, padding)
    dx = np.zeros(x_shape, dy.dtype)
    for o, off, i in cells:
        dx[(slice(None), *i)] += dy[(slice(None), *o)] @ f[off].T
    return dx


def conv3d_filter_grad_ref(x, f_shape, dy, strides, padding):
    _, cells = _walk(x.shape[1:4], f_shape[:3], strides, padding)
    df = np.zeros(f_shape, dy.dtype)
    for o, off, i in cells:
        df[off] += x[(slice(None), *i)].T @ dy[(slice(None), *o)]
    return df


def avg_pool3d_ref(x, k, strides, padding):
    out_sp, cells = _walk(x.shape[1:4], k, strides, padding)
    total = np.zeros((x.shape[0], *out_sp, x.shape[4]), x.dtype)
    count = np.zeros(out_sp)
    for o, _, i in cells:
        total[(slice(None), *o)] += x[(slice(None), *i)]
        count[o] += 1
    return total / count[None, ..., None]


def avg_pool3d_grad_ref(x_shape, dy, k, strides, padding):
    _, cells = _walk(x_shape[1:4], k, strides, padding)
    count: dict = {}
    for o, _, _ in cells:
        count[o] = count.get(o, 0) + 1
    dx = np.zeros(x_shape, dy.dtype)
    for o, _, i in cells:
        dx[(slice(None), *i)] += dy[(slice(None), *o)] / count[o]
    return dx


def ncdhw(x):
    return np.ascontiguousarray(x.transpose(0, 4, 1, 2, 3))


def ndhwc(x):
    return np.ascontiguousarray(x.transpose(0, 2, 3, 4, 1))


def _conv_cases(x, f, s, padding, ident, d=(1, 1, 1)):
    attrs = {"strides": [1, *s, 1], "padding": padding, "dilations": [1, *d, 1]}
    y = conv3d_ref(x, f, s, padding, d)
    dy = f32(*y.shape).astype(x.dtype)
    cases = [Case("Conv3D", [x, f], attrs=attrs, id=f"Conv3D-{ident}", ref=lambda xx, ff: conv3d_ref(xx, ff, s, padding, d),
                  **_TOL)]  # fmt: skip
    if d == (1, 1, 1):
        cases += [
            Case("Conv3DBackpropInputV2", [np.array(x.shape, np.int32), f, dy], attrs=attrs, const_inputs=[0],
                 id=f"Conv3DBackpropInputV2-{ident}", ref=lambda sz, ff, g: conv3d_input_grad_ref(tuple(sz), ff, g, s, padding),
                 **_TOL),
            Case("Conv3DBackpropFilterV2", [x, np.array(f.shape, np.int32), dy], attrs=attrs, const_inputs=[1],
                 id=f"Conv3DBackpropFilterV2-{ident}", ref=lambda xx, sz, g: conv3d_filter_grad_ref(xx, tuple(sz), g, s, padding),
                 **_TOL),
        ]  # fmt: skip
    return cases


def _pool_cases(x, k, s, padding, ident):
    attrs = {"ksize": [1, *k, 1], "strides": [1, *s, 1], "padding": padding}
    y = avg_pool3d_ref(x, k, s, padding)
    dy = f32(*y.shape)
    return [
        Case("AvgPool3D", [x], attrs=attrs, id=f"AvgPool3D-{ident}", ref=lambda xx: avg_pool3d_ref(xx, k, s, padding), **_TOL),
        Case("AvgPool3DGrad", [np.array(x.shape, np.int32), dy], attrs=attrs, const_inputs=[0], id=f"AvgPool3DGrad-{ident}",
             ref=lambda sz, g: avg_pool3d_grad_ref(tuple(sz), g, k, s, padding), **_TOL),
    ]  # fmt: skip


def max_pool3d_ref(x, k, strides, padding):
    out_sp, cells = _walk(x.shape[1:4], k, strides, padding)
    out = np.full((x.shape[0], *out_sp, x.shape[4]), -np.inf, x.dtype)
    for o, _, i in cells:
        out[(slice(None), *o)] = np.maximum(out[(slice(None), *o)], x[(slice(None), *i)])
    return out


def max_pool3d_grad_ref(x, dy, k, strides, padding):
    """Each window's dy to its first maximum (cells come in depth, row, column order): TF's
    MaxPool3DGrad as its graphs run it, by oneDNN (eager TF's Eigen kernel gives it to every
    element within 1e-5 of the maximum)."""
    y = max_pool3d_ref(x, k, strides, padding)
    _, cells = _walk(x.shape[1:4], k, strides, padding)
    dx = np.zeros(x.shape, dy.dtype)
    done = np.zeros(y.shape, bool)
    for o, _, i in cells:
        hit = x[(slice(None), *i)] == y[(slice(None), *o)]
        hit &= ~done[(slice(None), *o)]
        done[(slice(None), *o)] |= hit
        dx[(slice(None), *i)] += np.where(hit, dy[(slice(None), *o)], 0)
    return dx


def _max_pool_cases(x, k, s, padding, ident):
    attrs = {"ksize": [1, *k, 1], "strides": [1, *s, 1], "padding": padding}
    y = max_pool3d_ref(x, k, s, padding)
    dy, g = f32(*y.shape), f32(*x.shape)
    return [
        Case("MaxPool3D", [x], attrs=attrs, id=f"MaxPool3D-{ident}", ref=lambda xx: max_pool3d_ref(xx, k, s, padding)),
        Case("MaxPool3DGrad", [x, y, dy], attrs=attrs, id=f"MaxPool3DGrad-{ident}",
             ref=lambda xx, yy, gg: max_pool3d_grad_ref(xx, gg, k, s, padding), **_TOL),
        # grad read at each window's first maximum: the adjoint of the first-maximum gradient
        Case("MaxPool3DGradGrad", [x, y, g], attrs=attrs, id=f"MaxPool3DGradGrad-{ident}", **_TOL,
             ref=lambda xx, yy, gg: np.array([[np.vdot(max_pool3d_grad_ref(xx, np.eye(yy.size, dtype=np.float32)[j].reshape(yy.shape),
                                                                          k, s, padding), gg) for j in range(yy.size)]],
                                            np.float32).reshape(yy.shape)),
    ]  # fmt: skip


_x, _f = f32(2, 4, 5, 3, 2), f32(2, 3, 2, 2, 3)
CASES = [
    *_conv_cases(_x, _f, (1, 1, 1), "SAME", "SAME"),
    *_conv_cases(_x, _f, (2, 2, 1), "VALID", "VALID-strided"),
    *_conv_cases(_x, _f, (1, 2, 2), "SAME", "SAME-strided"),
    *_conv_cases(_x, f32(2, 2, 2, 2, 1), (1, 1, 1), "SAME", "SAME-dilated", d=(2, 1, 2)),
    *_conv_cases(f64(1, 3, 3, 4, 2), f64(1, 2, 3, 2, 2), (1, 1, 2), "VALID", "float64"),
    Case("Conv3D", [ncdhw(_x), _f], attrs={"strides": [1, 1, 1, 2, 2], "padding": "SAME", "data_format": "NCDHW"},
         id="Conv3D-NCDHW", ref=lambda x, f: ncdhw(conv3d_ref(ndhwc(x), f, (1, 2, 2), "SAME")), **_TOL),
    Case("Conv3D", [f32(1, 2, 2, 2, 2), f32(3, 3, 3, 2, 1)], attrs={"strides": [1] * 5, "padding": "VALID"},
         id="Conv3D-empty", ref=lambda x, f: np.zeros((1, 0, 0, 0, 1), np.float32)),  # issue 14 item 5
    *_pool_cases(_x, (2, 2, 2), (2, 2, 2), "VALID", "VALID"),
    *_pool_cases(_x, (3, 2, 3), (2, 1, 2), "SAME", "SAME"),
    Case("AvgPool3D", [ncdhw(_x)], attrs={"ksize": [1, 1, 2, 3, 2], "strides": [1, 1, 1, 2, 1], "padding": "SAME",
                                          "data_format": "NCDHW"},
         id="AvgPool3D-NCDHW", ref=lambda x: ncdhw(avg_pool3d_ref(ndhwc(x), (2, 3, 2), (1, 2, 1), "SAME")), **_TOL),
    *_max_pool_cases(_x, (2, 2, 2), (2, 2, 2), "VALID", "VALID"),
    *_max_pool_cases(np.round(f32(1, 3, 4, 3, 2) * 2), (2, 3, 2), (1, 2, 1), "SAME", "SAME-ties"),
    Case("MaxPool3D", [ncdhw(_x)], attrs={"ksize": [1, 1, 2, 3, 2], "strides": [1, 1, 1, 2, 1], "padding": "SAME",
                                          "data_format": "NCDHW"},
         id="MaxPool3D-NCDHW", ref=lambda x: ncdhw(max_pool3d_ref(ndhwc(x), (2, 3, 2), (1, 2, 1), "SAME"))),
]  # fmt: skip
