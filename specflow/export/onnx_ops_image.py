"""ONNX mappings of the image ops: ResizeBilinear and ResizeNearestNeighbor as ONNX Resize over
the two spatial axes of an NHWC image (no transposes: Resize takes ``axes``); SpaceToBatchND and
BatchToSpaceND as TF defines them (pad or crop, reshape, transpose, reshape), which ONNX lacks.

TF's sampling rules map onto Resize's coordinate modes: align_corners -> ``align_corners``,
neither flag -> ``asymmetric`` (source = o * in / out). For nearest, TF rounds half away from
zero with align_corners (``round_prefer_ceil``) and floors otherwise; its half-pixel nearest
source, floor((o + 0.5) * in / out), is ``half_pixel`` (which subtracts 0.5) rounded with
``round_prefer_ceil`` (which adds it back before flooring).
"""

from __future__ import annotations

import numpy as np

from specflow.export.onnx_ops import maps


def _coordinates(cx) -> str:
    if cx.attr("align_corners"):
        return "align_corners"
    return "half_pixel" if cx.attr("half_pixel_centers") else "asymmetric"


@maps("ResizeBilinear")
def _resize_bilinear(cx):
    x = cx.inp(0)
    if cx.dtype(0).name != "float32":  # TF interpolates (and returns) float32 whatever the input
        x = cx.op("Cast", [x], to=cx.onnx_type("float32"))
    cx.op("Resize", [x, "", "", cx.int64_1d(1)], out=cx.out(), axes=[1, 2], mode="linear",
          coordinate_transformation_mode=_coordinates(cx))  # fmt: skip


@maps("ResizeNearestNeighbor")
def _resize_nearest(cx):
    coords = _coordinates(cx)
    rounding = "floor" if coords == "asymmetric" else "round_prefer_ceil"
    cx.op("Resize", [cx.inp(0), "", "", cx.int64_1d(1)], out=cx.out(), axes=[1, 2], mode="nearest",
          coordinate_transformation_mode=coords, nearest_mode=rounding)  # fmt: skip


def _block_geometry(cx) -> tuple[list[int], list[list[int]], list[int]]:
    """block_shape, paddings / crops, and the input's dims after batch (which must be static)."""
    block = [int(v) for v in np.ravel(cx.const(1))]
    pads = [[int(a), int(z)] for a, z in np.reshape(cx.const(2), (-1, 2))]
    spec = cx.spec(0)
    dims = spec.shape.as_list() if spec is not None and spec.shape.rank is not None else None
    if dims is None or None in dims[1:]:
        raise cx.fail(f"{cx.node.op} needs an input of static shape (but the batch) for ONNX export")
    return block, pads, dims[1:]


def _i64(cx, values) -> str:
    return cx.tensor(np.array(values, np.int64))


@maps("SpaceToBatchND", consts=(1, 2))
def _space_to_batch_nd(cx):
    block, pads, dims = _block_geometry(cx)
    m, rest = len(block), dims[len(block) :]
    padded = [d + a + z for d, (a, z) in zip(dims, pads)]
    flat_pads = [0, *(a for a, _ in pads), *[0] * len(rest), 0, *(z for _, z in pads), *[0] * len(rest)]
    x = cx.op("Pad", [cx.inp(0), _i64(cx, flat_pads)])
    split = [s for d, k in zip(padded, block) for s in (d // k, k)]
    x = cx.op("Reshape", [x, _i64(cx, [0, *split, *rest])])
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)]
    x = cx.op("Transpose", [x], perm=[*perm, *range(2 * m + 1, 2 * m + 1 + len(rest))])
    cx.op("Reshape", [x, _i64(cx, [-1, *split[::2], *rest])], out=cx.out())


@maps("BatchToSpaceND", consts=(1, 2))
def _batch_to_space_nd(cx):
    block, crops, dims = _block_geometry(cx)
    m = len(block)
    inner, rest = dims[:m], dims[m:]
    x = cx.op("Reshape", [cx.inp(0), _i64(cx, [*block, -1, *inner, *rest])])
    perm = [m] + [i for j in range(m) for i in (m + 1 + j, j)]
    x = cx.op("Transpose", [x], perm=[*perm, *range(2 * m + 1, 2 * m + 1 + len(rest))])
    full = [d * k for d, k in zip(inner, block)]
    x = cx.op("Reshape", [x, _i64(cx, [-1, *full, *rest])])
    starts, ends = [a for a, _ in crops], [d - z for d, (_, z) in zip(full, crops)]
    cx.op("Slice", [x, _i64(cx, starts), _i64(cx, ends), _i64(cx, list(range(1, m + 1)))], out=cx.out())
