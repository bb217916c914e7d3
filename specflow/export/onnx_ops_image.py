"""ONNX mappings of the image ops: ResizeBilinear and ResizeNearestNeighbor as ONNX Resize over
the two spatial axes of an NHWC image (no transposes: Resize takes ``axes``).

TF's sampling rules map onto Resize's coordinate modes: align_corners -> ``align_corners``,
neither flag -> ``asymmetric`` (source = o * in / out). For nearest, TF rounds half away from
zero with align_corners (``round_prefer_ceil``) and floors otherwise; its half-pixel nearest
source, floor((o + 0.5) * in / out), is ``half_pixel`` (which subtracts 0.5) rounded with
``round_prefer_ceil`` (which adds it back before flooring).
"""

from __future__ import annotations

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
