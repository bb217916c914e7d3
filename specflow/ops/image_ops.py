"""Image resizing: ResizeBilinear, ResizeNearestNeighbor, ResizeBicubic and their gradient ops, and
ResizeArea (no gradient, as in TF).

Names, inputs, attrs and the sampling arithmetic are TensorFlow's (resize_bilinear_op.cc,
resize_nearest_neighbor_op.cc, image_resizer_state.h), computed in float32 as TF does so that
sample positions (and so results) match it exactly:

- scale = (in - 1) / (out - 1) with ``align_corners`` (and out > 1), else in / out;
- bilinear: source = (o + 0.5) * scale - 0.5 with ``half_pixel_centers``, else o * scale; rows
  floor(source) and ceil(source) clamped to the image, weight source - floor(source);
  top + (bottom - top) * y_lerp of the two rows' left + (right - left) * x_lerp;
- nearest: source = (o + 0.5) * scale with ``half_pixel_centers``, else o * scale; then
  round (half away from zero) with ``align_corners``, else floor; clamped to the image.

Images are [batch, height, width, channels]. Each kernel gathers whole rows and columns
(no loop per pixel); the gradients are the transposed sampling as two matrix products.
"""

from __future__ import annotations

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import gradient, kernel, not_differentiable, register_op

_FLAGS = ["align_corners: bool = false", "half_pixel_centers: bool = false"]
_IMAGE_TYPES = "{int8, uint8, int16, uint16, int32, int64, float16, bfloat16, float32, float64}"


def _image_dims(c, shape, what: str) -> tuple:
    s = shape if isinstance(shape, Shape) else Shape(shape)
    if s.rank is None:
        return (None,) * 4
    if s.rank != 4:
        raise c.fail(f"{what} must be 4-D [batch, height, width, channels], got shape {s}")
    return s.dims


def _check_flags(c) -> tuple[bool, bool]:
    """(align_corners, half_pixel_centers), checked."""
    align, half = c.attrs["align_corners"], c.attrs.get("half_pixel_centers", False)  # (ResizeArea has none)
    if align and half:
        raise c.fail("half_pixel_centers and align_corners cannot both be true (as in TensorFlow)")
    return align, half


def _size_value(c, size) -> tuple[int, int]:
    size = np.asarray(size)
    if size.shape != (2,) or (size < 0).any():
        raise c.fail(f"size must be a 1-D tensor of 2 non-negative sizes (height, width), got {size.tolist()}")
    return int(size[0]), int(size[1])


def _flag_attrs(node) -> dict:
    """The sampling flags a gradient op passes on unchanged."""
    return {k: node.attrs[k] for k in ("align_corners", "half_pixel_centers")}


def _sized_shape(what: str):
    """The shape function of an op whose input 0 (``what``) is resized to the size in input 1."""

    def fn(ic: InferenceContext) -> list[Shape]:
        _check_flags(ic)
        n, _, _, ch = _image_dims(ic, ic.shape(0), what)
        size = ic.value(1)
        oh, ow = (None, None) if size is None else _size_value(ic, size)
        return [Shape([n, oh, ow, ch])]

    return fn


def _resize_args(ctx, images, size):
    """A resize kernel's checked arguments: the input dims, the output size and the flags."""
    align, half = _check_flags(ctx)
    _image_dims(ctx, images.shape, "images")
    oh, ow = _size_value(ctx, ctx.host(size))
    n, h, w, c = images.shape
    if (h == 0 or w == 0) and oh * ow:
        raise ctx.fail(f"cannot resize an empty image (shape {list(images.shape)}) to {oh}x{ow}")
    return (n, h, w, c), (oh, ow), align, half


def _scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    if align_corners and out_size > 1:
        return np.float32(in_size - 1) / np.float32(out_size - 1)
    return np.float32(in_size) / np.float32(max(out_size, 1))


def _bilinear_taps(in_size: int, out_size: int, align: bool, half: bool):
    """Per output position: the lower and upper source index and the upper one's weight."""
    scale = _scale(in_size, out_size, align)
    o = np.arange(out_size, dtype=np.float32)
    src = (o + np.float32(0.5)) * scale - np.float32(0.5) if half else o * scale
    floor = np.floor(src)
    lower = np.maximum(floor.astype(np.int64), 0)
    upper = np.minimum(np.ceil(src).astype(np.int64), in_size - 1)
    return lower, upper, (src - floor).astype(np.float32)


def _nearest_index(in_size: int, out_size: int, align: bool, half: bool) -> np.ndarray:
    scale = _scale(in_size, out_size, align)
    o = np.arange(out_size, dtype=np.float32)
    src = (o + np.float32(0.5)) * scale if half else o * scale
    floor = np.floor(src)
    # roundf (half away from zero; src >= 0 here), without the float32 rounding of src + 0.5.
    idx = (floor + (src - floor >= np.float32(0.5)) if align else floor).astype(np.int64)
    return np.clip(idx, 0, max(in_size - 1, 0))


def _tap_matrix(xp, lower, upper, lerp, in_size: int, dtype):
    """[out, in]: each output position's weights over the input positions (their sum is 1)."""
    m = np.zeros((len(lower), in_size), dtype=np.float64)
    rows = np.arange(len(lower))
    np.add.at(m, (rows, lower), 1 - lerp.astype(np.float64))
    np.add.at(m, (rows, upper), lerp.astype(np.float64))
    return xp.asarray(m.astype(dtype))


def _one_hot(xp, index, in_size: int, dtype):
    m = np.zeros((len(index), in_size), dtype=dtype)
    m[np.arange(len(index)), index] = 1
    return xp.asarray(m)


def _scatter_taps(grads, taps, size: int, axis: int):
    """TF's CPU resize gradients along one spatial axis of ``grads``: each position's value, times
    each tap's weight (None: 1), added at that tap's source index (an inf or NaN grad reaches its
    own taps only, zero-weight ones included, as TF's loops; a matrix product would spread it
    over the whole axis)."""
    shape = list(grads.shape)
    shape[axis] = size
    out = np.zeros(shape, grads.dtype)
    bcast = (slice(None),) + (None,) * (grads.ndim - 1 - axis)
    at = (slice(None),) * axis
    with np.errstate(invalid="ignore"):
        for index, weight in taps:
            np.add.at(out, (*at, index), grads if weight is None else grads * weight.astype(grads.dtype)[bcast])
    return out


def _transposed_sampling(xp, rows, cols, grads):
    """sum over (oh, ow) of rows[oh, h] * grads[n, oh, ow, c] * cols[ow, w]: [N, H, W, C]."""
    # Two tensordots: each one large matrix product (a batched matmul of small ones is slow).
    by_rows = xp.tensordot(rows, grads, axes=([0], [1]))  # [H, N, OW, C]
    out = xp.tensordot(by_rows, cols, axes=([2], [0]))  # [H, N, C, W]
    return xp.ascontiguousarray(out.transpose(1, 0, 3, 2))


# --- ResizeBilinear ---------------------------------------------------------------------------

register_op(
    "ResizeBilinear",
    inputs=["images: T", "size: int32"],
    outputs=["resized_images: float32"],
    attrs=[f"T: {_IMAGE_TYPES}", *_FLAGS],
    shape=_sized_shape("images"),
    doc="Resizes images [batch, height, width, channels] to size (new_height, new_width) by "
    "bilinear interpolation, in float32; sample positions as TF's align_corners / half_pixel_centers.",
)


@kernel("ResizeBilinear", host_inputs=[1])
def _resize_bilinear(ctx, images, size):
    xp = ctx.xp
    (n, h, w, c), (oh, ow), align, half = _resize_args(ctx, images, size)
    if oh * ow == 0 or n * c == 0:
        return xp.zeros((n, oh, ow, c), dtype=np.float32)
    ylo, yhi, ylerp = _bilinear_taps(h, oh, align, half)
    xlo, xhi, xlerp = _bilinear_taps(w, ow, align, half)
    x = images.astype(np.float32, copy=False)
    top, bottom = x[:, xp.asarray(ylo)], x[:, xp.asarray(yhi)]  # [N, OH, W, C]
    xl, xh = xp.asarray(xlo), xp.asarray(xhi)
    xlerp = xp.asarray(xlerp)[:, None]
    top = top[:, :, xl] + (top[:, :, xh] - top[:, :, xl]) * xlerp
    bottom = bottom[:, :, xl] + (bottom[:, :, xh] - bottom[:, :, xl]) * xlerp
    return top + (bottom - top) * xp.asarray(ylerp)[:, None, None]


def _resize_gradient(grad_op: str):
    """A resize's gradient: ``grad_op`` (grads, original_image) with the same flags."""

    def grad(b, node, dys):
        images, _ = node.data_inputs
        return [gu.emit(b, grad_op, dys[0], images, **_flag_attrs(node)), None]

    return grad


gradient("ResizeBilinear")(_resize_gradient("ResizeBilinearGrad"))


def _bilinear_grad_shape(ic: InferenceContext) -> list[Shape]:
    _check_flags(ic)
    g = _image_dims(ic, ic.shape(0), "grads")
    x = _image_dims(ic, ic.shape(1), "original_image")
    for what, a, z in (("batch", g[0], x[0]), ("channels", g[3], x[3])):
        if a is not None and z is not None and a != z:
            raise ic.fail(f"grads has {a} {what} but original_image has {z}")
    return [ic.shape(1)]


register_op(
    "ResizeBilinearGrad",
    inputs=["grads: float32", "original_image: T"],
    outputs=["output: T"],
    attrs=["T: {float16, bfloat16, float32, float64}", *_FLAGS],
    shape=_bilinear_grad_shape,
    doc="The gradient of ResizeBilinear: each grads element spread over the (up to four) pixels "
    "of original_image it was interpolated from, with the same weights.",
)


def _grad_args(ctx, grads, image):
    """A resize gradient kernel's checked (h, w), (oh, ow) and flags."""
    align, half = _check_flags(ctx)
    _image_dims(ctx, grads.shape, "grads")
    n, h, w, c = _image_dims(ctx, image.shape, "original_image")
    if grads.shape[0] != n or grads.shape[3] != c:
        raise ctx.fail(f"grads of shape {list(grads.shape)} does not match original_image {list(image.shape)}")
    return (h, w), grads.shape[1:3], align, half


@kernel("ResizeBilinearGrad")
def _resize_bilinear_grad(ctx, grads, image):
    xp = ctx.xp
    (h, w), (oh, ow), align, half = _grad_args(ctx, grads, image)
    if xp is np:
        g = grads.astype(np.float32, copy=False)
        for axis, size, (lo, hi, lerp) in ((1, h, _bilinear_taps(h, oh, align, half)), (2, w, _bilinear_taps(w, ow, align, half))):
            g = _scatter_taps(g, [(lo, 1 - lerp), (hi, lerp)], size, axis)
        return g.astype(image.dtype)
    rows = _tap_matrix(xp, *_bilinear_taps(h, oh, align, half), h, np.float32)
    cols = _tap_matrix(xp, *_bilinear_taps(w, ow, align, half), w, np.float32)
    return _transposed_sampling(xp, rows, cols, grads.astype(np.float32, copy=False)).astype(image.dtype)


# --- ResizeNearestNeighbor --------------------------------------------------------------------

register_op(
    "ResizeNearestNeighbor",
    inputs=["images: T", "size: int32"],
    outputs=["resized_images: T"],
    attrs=[f"T: {_IMAGE_TYPES}", *_FLAGS],
    shape=_sized_shape("images"),
    doc="Resizes images [batch, height, width, channels] to size (new_height, new_width), each "
    "output pixel a copy of its nearest source pixel (TF's rounding rules).",
)


@kernel("ResizeNearestNeighbor", host_inputs=[1])
def _resize_nearest(ctx, images, size):
    xp = ctx.xp
    (_, h, w, _), (oh, ow), align, half = _resize_args(ctx, images, size)
    rows = xp.asarray(_nearest_index(h, oh, align, half))
    cols = xp.asarray(_nearest_index(w, ow, align, half))
    return xp.ascontiguousarray(images[:, rows][:, :, cols])


@gradient("ResizeNearestNeighbor")
def _resize_nearest_gradient(b, node, dys):
    images, _ = node.data_inputs
    s = b.spec(images).shape
    if s.rank == 4 and s[1] is not None and s[2] is not None:
        size = gu.const(b, np.array([s[1], s[2]], np.int32))
    else:
        begin, length = gu.const(b, np.array([1], np.int32)), gu.const(b, np.array([2], np.int32))
        size = gu.emit(b, "Slice", gu.shape_of(b, images), begin, length)
    return [gu.emit(b, "ResizeNearestNeighborGrad", dys[0], size, **_flag_attrs(node)), None]


register_op(
    "ResizeNearestNeighborGrad",
    inputs=["grads: T", "size: int32"],
    outputs=["output: T"],
    attrs=["T: {int8, uint8, int32, float16, bfloat16, float32, float64}", *_FLAGS],
    shape=_sized_shape("grads"),
    doc="The gradient of ResizeNearestNeighbor: grads summed into the source pixel each came "
    "from, in an image of size (height, width).",
)


@kernel("ResizeNearestNeighborGrad", host_inputs=[1])
def _resize_nearest_grad(ctx, grads, size):
    xp = ctx.xp
    align, half = _check_flags(ctx)
    _image_dims(ctx, grads.shape, "grads")
    h, w = _size_value(ctx, ctx.host(size))
    _, oh, ow, _ = grads.shape
    dt = grads.dtype
    acc = np.int64 if dt.kind in "iu" else np.float64  # exact sums, then TF's dtype (bfloat16's kind is V)
    if xp is np:
        g = grads.astype(acc)
        for axis, size, index in ((1, h, _nearest_index(h, oh, align, half)), (2, w, _nearest_index(w, ow, align, half))):
            g = _scatter_taps(g, [(index, None)], size, axis)
        return g.astype(dt)
    rows = _one_hot(xp, _nearest_index(h, oh, align, half), h, acc)
    cols = _one_hot(xp, _nearest_index(w, ow, align, half), w, acc)
    return _transposed_sampling(xp, rows, cols, grads.astype(acc)).astype(dt)


# --- ResizeBicubic and ResizeArea -------------------------------------------------------------
# Both are separable, as the bilinear one: a weight matrix per dim, [out, in], applied to rows
# and columns by two tensordots; the bicubic gradient is the transposed sampling.

_CUBIC_STEPS = 1024  # TF samples its cubic kernel at multiples of 1/1024 of a pixel


def _cubic_taps(in_size: int, out_size: int, align: bool, half: bool) -> list:
    """Bicubic taps as TF's resize_bicubic_op: per output position, four (source index, weight)
    columns: Keys' kernel with a = -0.5 and taps outside the image dropped and the rest
    renormalized (half_pixel_centers), else a = -0.75 with taps clamped to the edge; the
    fractional position rounded to 1/1024."""
    scale = _scale(in_size, out_size, align)
    o = np.arange(out_size, dtype=np.float32)
    src = (o + np.float32(0.5)) * scale - np.float32(0.5) if half else o * scale
    base = np.floor(src)
    t = np.rint((src - base) * _CUBIC_STEPS).astype(np.float64) / _CUBIC_STEPS
    a = -0.5 if half else -0.75

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    weights = np.stack([far(1 + t), near(t), near(1 - t), far(2 - t)], axis=1).astype(np.float32)
    taps = base.astype(np.int64)[:, None] + np.arange(-1, 3)[None, :]
    clamped = np.clip(taps, 0, in_size - 1)
    if half:
        weights = np.where(clamped == taps, weights, np.float32(0))
        total = weights.sum(axis=1, keepdims=True)
        weights = np.where(np.abs(total) >= 1000 * np.finfo(np.float32).tiny, weights / total, weights)
    return [(clamped[:, i], weights[:, i]) for i in range(4)]


def _cubic_matrix(in_size: int, out_size: int, align: bool, half: bool) -> np.ndarray:
    """The bicubic taps as a weight matrix [out, in] (the GPU's two tensordots)."""
    m = np.zeros((out_size, in_size), np.float64)
    for index, weight in _cubic_taps(in_size, out_size, align, half):
        np.add.at(m, (np.arange(out_size), index), weight.astype(np.float64))
    return m


def _gather_taps(x, taps, axis: int):
    """sum over the taps of x read at each tap's index along ``axis`` times its weight: TF's CPU
    loops (a NaN or inf pixel reaches the outputs whose taps read it, zero-weight ones too)."""
    bcast = (slice(None),) + (None,) * (x.ndim - 1 - axis)
    out = None
    with np.errstate(invalid="ignore"):
        for index, weight in taps:
            term = np.take(x, index, axis=axis) * weight[bcast]
            out = term if out is None else out + term
    return out


def _area_matrix(in_size: int, out_size: int, align: bool) -> np.ndarray:
    """Area weights [out, in]: each output cell averages the input cells it covers, partial
    ones by the fraction covered (TF's resize_area_op; indices past the edge clamped)."""
    scale = float(_scale(in_size, out_size, align))
    m = np.zeros((out_size, in_size), np.float64)
    for o in range(out_size):
        lo, hi = o * scale, (o + 1) * scale
        for i in range(int(np.floor(lo)), int(np.ceil(hi))):
            m[o, min(max(i, 0), in_size - 1)] += (min(i + 1, hi) - max(i, lo)) / scale
    return m


def _separable(xp, images, rows: np.ndarray, cols: np.ndarray):
    """out[n, oh, ow, c] = sum of rows[oh, h] * images[n, h, w, c] * cols[ow, w], in float32."""
    x = images.astype(np.float32, copy=False)
    by_rows = xp.tensordot(xp.asarray(rows.astype(np.float32)), x, axes=([1], [1]))  # [OH, N, W, C]
    out = xp.tensordot(by_rows, xp.asarray(cols.astype(np.float32)), axes=([2], [1]))  # [OH, N, C, OW]
    return xp.ascontiguousarray(out.transpose(1, 0, 3, 2))


for _name, _doc in (
    ("ResizeBicubic", "bicubic interpolation (TF's kernel and edge rules)"),
    ("ResizeArea", "area averaging: each output pixel the mean of the input area it covers"),
):
    register_op(
        _name,
        inputs=["images: T", "size: int32"],
        outputs=["resized_images: float32"],
        attrs=[f"T: {_IMAGE_TYPES}", *(_FLAGS if _name == "ResizeBicubic" else _FLAGS[:1])],
        shape=_sized_shape("images"),
        doc=f"Resizes images [batch, height, width, channels] to size (new_height, new_width) by {_doc}, "
        "in float32.",
    )


@kernel("ResizeBicubic", host_inputs=[1])
def _resize_bicubic(ctx, images, size):
    (n, h, w, c), (oh, ow), align, half = _resize_args(ctx, images, size)
    if oh * ow == 0 or n * c == 0:
        return ctx.xp.zeros((n, oh, ow, c), dtype=np.float32)
    if ctx.xp is np:
        x = images.astype(np.float32, copy=False)
        x = _gather_taps(x, _cubic_taps(h, oh, align, half), 1)
        return _gather_taps(x, _cubic_taps(w, ow, align, half), 2)
    return _separable(ctx.xp, images, _cubic_matrix(h, oh, align, half), _cubic_matrix(w, ow, align, half))


@kernel("ResizeArea", host_inputs=[1])
def _resize_area(ctx, images, size):
    (n, h, w, c), (oh, ow), align, _ = _resize_args(ctx, images, size)
    if oh * ow == 0 or n * c == 0:
        return ctx.xp.zeros((n, oh, ow, c), dtype=np.float32)
    return _separable(ctx.xp, images, _area_matrix(h, oh, align), _area_matrix(w, ow, align))


gradient("ResizeBicubic")(_resize_gradient("ResizeBicubicGrad"))


register_op(
    "ResizeBicubicGrad",
    inputs=["grads: float32", "original_image: T"],
    outputs=["output: T"],
    attrs=["T: {float32, float64}", *_FLAGS],
    shape=_bilinear_grad_shape,
    doc="The gradient of ResizeBicubic: each grads element spread over the (up to 16) pixels of "
    "original_image it was interpolated from, with the same weights.",
)


not_differentiable("ResizeArea")


@kernel("ResizeBicubicGrad")
def _resize_bicubic_grad(ctx, grads, image):
    xp = ctx.xp
    (h, w), (oh, ow), align, half = _grad_args(ctx, grads, image)
    if xp is np:
        g = grads.astype(np.float32, copy=False)
        g = _scatter_taps(g, _cubic_taps(h, oh, align, half), h, 1)
        return _scatter_taps(g, _cubic_taps(w, ow, align, half), w, 2).astype(image.dtype)
    rows = xp.asarray(_cubic_matrix(h, oh, align, half).astype(np.float32))
    cols = xp.asarray(_cubic_matrix(w, ow, align, half).astype(np.float32))
    return _transposed_sampling(xp, rows, cols, grads.astype(np.float32, copy=False)).astype(image.dtype)
