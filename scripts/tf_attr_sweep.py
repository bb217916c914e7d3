"""Attr and broadcasting corners of the common ops (../shared/tf_common_ops.txt), values and
first- and second-order gradients, against real TensorFlow. Each case is one raw op with fixed
inputs and attrs (every data_format, padding, mask, mode and axis spelling the earlier sweeps do
not reach; zero-size dims; broadcast batch dims). Three specflow paths are compared with TF:

- ``graph``: a ``tf.function`` of the op with TF's tape gradients (first order seeded with
  grad_ys, second order of a weighted sum of those), written as a GraphDef and run by
  specflow's loader and Session (TF's gradient ops on specflow's kernels);
- ``eager``: the same op through ``sf.ops.<Op>`` under nested ``sf.GradientTape``s (specflow's
  own registered gradients, train/gradients.py), with the same seeds;
- None-ness: a gradient TF leaves None (integer inputs, unconnected) must be None in specflow.

Run by hand in a venv with TensorFlow (never a dependency):

    PYTHONPATH=. /work/scratch/tfvenv/bin/python scripts/tf_attr_sweep.py [CASE glob ...]

``--feed-all`` also feeds the integer and bool inputs (axes, sizes, begin/end) as placeholders
of unknown shape, in TF's traced graph and in the sf.function (gradients built with the axes
unknown). Besides, each single-op case runs as a YAML spec node (literals for its int inputs),
``g_*`` cases are small graphs of several ops, and ``api`` checks tf.gradients' options against
sf.gradients. TF's own refusals (NCHW pools/convs on CPU: computed here as their NHWC form
between transposes; dilated or unequal-stride depthwise, dilated conv backprops) are skipped.

First run (TF 2.21, oneDNN on, 2026-11-27): ResizeBilinearGrad / ResizeNearestNeighborGrad
refused bfloat16, OneHot int8 indices, Conv2D's backprops of an empty batch / no out_channels
crashed, GatherV2's batched gradient of an empty axis built Range(step 0), Prod's and GatherV2's
gradients refused axes fed at run time; all fixed (tests/ops/test_attr_corners.py). Left: the
``api`` checks (sf.gradients with a None in grad_ys, and with a single tensor for ys and xs:
specflow/api, not ops). Known TF-side quirks excluded per case: FusedBatchNormV3's
reserve_space_3 (oneDNN's is empty, Eigen's a scalar) and an empty x's reserve spaces (unset);
TF's DepthwiseConv2dNativeBackpropFilter of an empty batch (uninitialized memory).

Prints one line per mismatch and a summary; exit 1 on any mismatch."""

from __future__ import annotations

import fnmatch
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import specflow as sf
from scripts.tf_op_parity import RENAMED
from scripts.tf_parity_common import compare, run_in_specflow, tmp_path
from specflow.ops.registry import get_op

rng = np.random.default_rng(7)
CASES: list = []


def R(*shape, dt="float64", pos=False):
    x = rng.standard_normal(shape)
    if pos:
        x = np.abs(x) + 0.3
    return x.astype(dt)


def I(*vals, dt="int32"):  # noqa: E743 - a literal int tensor
    return np.array(vals, dt)


def case(name, op, inputs, attrs=None, wrt=None, grad=True, order2=True, dyn=True, skip_outs=()):
    """``dyn``: also trace with unknown dims (False where TF's own gradient cannot: an int64
    reduction axis, MatrixDiagV3's diagonal count); ``skip_outs``: outputs left unchecked.
    ``inputs``: arrays in OpDef order (a list for a list input); ``wrt``: indices of the flat
    float inputs to differentiate (default: every float input)."""
    CASES.append(dict(name=name, op=op, inputs=inputs, attrs=attrs or {}, wrt=wrt, grad=grad, order2=order2,
                      dyn=dyn, skip_outs=skip_outs))


# ------------------------------------------------------------------ convolution and pooling
def nchw(x):
    return np.ascontiguousarray(np.transpose(x, (0, 3, 1, 2)))


for fmt in ("NHWC", "NCHW"):
    for pad, extra in [("SAME", {}), ("VALID", {}), ("EXPLICIT", {"explicit_paddings": [0, 0, 1, 2, 2, 0, 0, 0]})]:
        for strides, dil in [((1, 1), (1, 1)), ((2, 1), (1, 1)), ((1, 1), (2, 1)), ((2, 2), (1, 1))]:
            if dil != (1, 1) and strides != (1, 1):
                continue
            x = R(2, 7, 6, 3)
            ex = dict(extra)
            if fmt == "NCHW" and pad == "EXPLICIT":
                ex = {"explicit_paddings": [0, 0, 0, 0, 1, 2, 2, 0]}
            st = [1, *strides, 1] if fmt == "NHWC" else [1, 1, *strides]
            dl = [1, *dil, 1] if fmt == "NHWC" else [1, 1, *dil]
            xin = x if fmt == "NHWC" else nchw(x)
            tag = f"{fmt}_{pad}_s{strides[0]}{strides[1]}_d{dil[0]}{dil[1]}"
            case(f"conv2d_{tag}", "Conv2D", [xin, R(3, 2, 3, 4)],
                 dict(strides=st, padding=pad, data_format=fmt, dilations=dl, **ex))
            if pad != "EXPLICIT":
                case(f"dwconv_{tag}", "DepthwiseConv2dNative", [xin, R(3, 2, 3, 2)],
                     dict(strides=st, padding=pad, data_format=fmt, dilations=dl))
    x = R(2, 5, 6, 3)
    xin = x if fmt == "NHWC" else nchw(x)
    case(f"biasadd_{fmt}", "BiasAdd", [xin, R(3)], dict(data_format=fmt))
    for pool in ("MaxPool", "AvgPool"):
        for pad in ("SAME", "VALID"):
            for k, s in [((2, 2), (2, 2)), ((3, 2), (1, 2)), ((3, 3), (2, 2))]:
                ks = [1, *k, 1] if fmt == "NHWC" else [1, 1, *k]
                ss = [1, *s, 1] if fmt == "NHWC" else [1, 1, *s]
                case(f"{pool.lower()}_{fmt}_{pad}_k{k[0]}{k[1]}_s{s[0]}{s[1]}", pool, [xin],
                     dict(ksize=ks, strides=ss, padding=pad, data_format=fmt))
    x = R(4, 3, 3, 2, dt="float32")
    xin = x if fmt == "NHWC" else nchw(x)
    for train in (True, False):
        mean, var = (np.zeros(2, np.float32), np.zeros(2, np.float32)) if train else (R(2, dt="float32"), R(2, dt="float32", pos=True))
        case(f"fbn3_{fmt}_{'train' if train else 'infer'}", "FusedBatchNormV3",
             [xin, R(2, dt="float32", pos=True), R(2, dt="float32"), mean, var],
             dict(data_format=fmt, is_training=train, epsilon=0.01), wrt=[0, 1, 2], order2=False,
             skip_outs=(5,))  # reserve_space_3: oneDNN's is empty, TF's Eigen kernel's (specflow's) a scalar
    case(f"maxpoolv2_{fmt}", "MaxPoolV2", [xin, I(*([1, 2, 2, 1] if fmt == "NHWC" else [1, 1, 2, 2])),
                                           I(*([1, 1, 2, 1] if fmt == "NHWC" else [1, 1, 1, 2]))],
         dict(padding="SAME", data_format=fmt))

# Conv2DBackpropInput with odd output sizes (several input sizes give the same output)
for osz, pad, s in [((7, 7), "SAME", 2), ((8, 8), "SAME", 2), ((7, 8), "VALID", 2), ((8, 7), "VALID", 2),
                    ((9, 5), "VALID", 3), ((10, 6), "SAME", 3), ((5, 5), "SAME", 1)]:
    y = tf.nn.conv2d(tf.zeros((2, *osz, 3), tf.float64), tf.zeros((3, 3, 3, 4), tf.float64), s, pad)
    case(f"conv2dbi_{osz[0]}x{osz[1]}_{pad}_s{s}", "Conv2DBackpropInput",
         [I(2, *osz, 3), R(3, 3, 3, 4), R(*y.shape)], dict(strides=[1, s, s, 1], padding=pad), wrt=[1, 2])
for osz, pad, s in [((7, 7), "SAME", 2), ((8, 7), "VALID", 2), ((10, 6), "SAME", 3)]:
    y = tf.nn.conv2d(tf.zeros((2, *osz, 3), tf.float64), tf.zeros((3, 3, 3, 4), tf.float64), s, pad)
    case(f"conv2dbi_nchw_{osz[0]}x{osz[1]}_{pad}_s{s}", "Conv2DBackpropInput",
         [I(2, 3, *osz), R(3, 3, 3, 4), nchw(R(*y.shape))], dict(strides=[1, 1, s, s], padding=pad, data_format="NCHW"),
         wrt=[1, 2])
case("conv2dbi_nchw_explicit", "Conv2DBackpropInput", [I(1, 2, 6, 5), R(2, 2, 2, 3), R(1, 3, 3, 3)],
     dict(strides=[1, 1, 2, 2], padding="EXPLICIT", explicit_paddings=[0, 0, 0, 0, 1, 0, 0, 1], data_format="NCHW"), wrt=[1, 2])
case("conv2dbi_explicit", "Conv2DBackpropInput", [I(1, 6, 5, 2), R(2, 2, 2, 3), R(1, 3, 3, 3)],
     dict(strides=[1, 2, 2, 1], padding="EXPLICIT", explicit_paddings=[0, 0, 1, 0, 0, 1, 0, 0]), wrt=[1, 2])
case("conv2dbi_dil", "Conv2DBackpropInput", [I(1, 7, 6, 2), R(2, 3, 2, 3), R(1, 5, 2, 3)],
     dict(strides=[1, 1, 1, 1], padding="VALID", dilations=[1, 1, 2, 1]), wrt=[1, 2])

# ------------------------------------------------------------------ matmul family
for ta in (False, True):
    for tb in (False, True):
        a = R(3, 4) if not ta else R(4, 3)
        b = R(4, 5) if not tb else R(5, 4)
        case(f"matmul_ta{int(ta)}_tb{int(tb)}", "MatMul", [a, b], dict(transpose_a=ta, transpose_b=tb))
        for sa, sb in [((2, 1), (3,)), ((1,), (2, 3)), ((), (2,)), ((2, 3), ()), ((0,), (1,))]:
            a = R(*sa, *((3, 4) if not ta else (4, 3)))
            b = R(*sb, *((4, 5) if not tb else (5, 4)))
            case(f"bmm_ax{int(ta)}_ay{int(tb)}_{len(sa)}{len(sb)}_{'x'.join(map(str, sa))}",
                 "BatchMatMulV2", [a, b], dict(adj_x=ta, adj_y=tb))
case("matmul_k0", "MatMul", [R(3, 0), R(0, 2)])
case("bmm_k0", "BatchMatMulV2", [R(2, 3, 0), R(1, 0, 2)])
case("bmmv3_bc", "BatchMatMulV3", [R(2, 1, 3, 4), R(3, 4, 2)], dict(Tout=tf.float64, adj_x=False, adj_y=False))

# ------------------------------------------------------------------ gathers
p = R(2, 3, 4, 5)
for axis in (0, 1, 2, 3, -1, -2, -4):
    for bd in (0, 1, 2, -1):
        ax = axis if axis >= 0 else axis + 4
        b = bd if bd >= 0 else bd + 2  # indices rank 2
        if b > ax or b > 2:
            continue
        ishape = [2, 3][:b] + [2, 3][b:]
        idx = rng.integers(0, p.shape[ax], ishape).astype(np.int32)
        case(f"gatherv2_ax{axis}_bd{bd}", "GatherV2", [p, idx, np.array(axis, np.int32)], dict(batch_dims=bd))
case("gatherv2_empty_idx", "GatherV2", [p, np.zeros((0, 2), np.int64), I(1, dt="int64").reshape(())])
case("gatherv2_scalar_idx", "GatherV2", [p, np.array(2, np.int32), np.array(-2, np.int32)])
case("gatherv2_dup", "GatherV2", [R(4, 3), I(1, 1, 3, 1), np.array(0, np.int32)])
case("gather_v1", "Gather", [R(5, 2), I(4, 0, 0)])
case("gathernd_slices", "GatherNd", [R(3, 4, 2), I(0, 1, 2, 3, 1, 1).reshape(3, 2)])
case("gathernd_bcast", "GatherNd", [R(3, 4), I(2, 0, 0, 0).reshape(2, 1, 2)])

# ------------------------------------------------------------------ strided slice and friends
x = R(4, 5, 6)
SS = [
    ("basic", [1, 0, 1], [3, 5, 5], [1, 2, 2], {}),
    ("neg_stride", [3, -1, 5], [0, 0, 0], [-1, -2, -3], {}),
    ("begin_end_mask", [1, 2, 3], [3, 4, 5], [1, 1, 1], dict(begin_mask=5, end_mask=2)),
    ("shrink", [1, 2, 0], [2, 3, 6], [1, 1, 1], dict(shrink_axis_mask=3)),
    ("shrink_neg", [-1, -2, 0], [0, 0, 6], [1, 1, 1], dict(shrink_axis_mask=3)),
    ("new_axis", [0, 1, 0], [0, 3, 0], [1, 1, 1], dict(new_axis_mask=1, end_mask=4, begin_mask=4)),
    ("ellipsis", [0, 1], [0, 3], [1, 1], dict(ellipsis_mask=1)),
    ("ellipsis_mid", [1, 0, 2], [3, 0, 4], [1, 1, 1], dict(ellipsis_mask=2)),
    ("ell_new_shrink", [0, 0, 1], [0, 0, 2], [1, 1, 1], dict(ellipsis_mask=1, new_axis_mask=2, shrink_axis_mask=4)),
    ("new_ell_shrink", [0, 0, 2], [0, 0, 3], [1, 1, 1], dict(new_axis_mask=1, ellipsis_mask=2, shrink_axis_mask=4)),
    ("shrink_new_ell", [2, 0, 0], [3, 0, 0], [1, 1, 1], dict(shrink_axis_mask=1, new_axis_mask=2, ellipsis_mask=4)),
    ("new_shrink_same", [0, 1], [0, 2], [1, 1], dict(new_axis_mask=1, shrink_axis_mask=1)),
    ("all_masks", [0, 0, 0, 1], [0, 0, 0, 3], [1, 1, 1, -1], dict(begin_mask=8, end_mask=8, ellipsis_mask=2, new_axis_mask=4, shrink_axis_mask=1)),
    ("empty_range", [3, 0, 0], [1, 5, 6], [1, 1, 1], {}),
    ("oob_clamp", [-10, 2, -100], [10, 100, 100], [1, 1, 2], {}),
    ("neg_stride_masks", [0, 0, 0], [0, 0, 0], [-1, -2, -1], dict(begin_mask=7, end_mask=7)),
    ("two_new", [0, 0, 1], [0, 0, 3], [1, 1, 1], dict(new_axis_mask=3)),
    ("fewer_dims", [1], [3], [1], {}),
    ("ell_only", [0], [0], [1], dict(ellipsis_mask=1)),
]
for n, b, e, s, m in SS:
    case(f"ss_{n}", "StridedSlice", [x, I(*b), I(*e), I(*s)], m)
case("ss_zero_dim", "StridedSlice", [R(0, 3), I(0, 1), I(0, 3), I(1, 1)], dict(begin_mask=1, end_mask=1))
case("ss_int64_idx", "StridedSlice", [x, I(1, 1, dt="int64"), I(3, -1, dt="int64"), I(1, 2, dt="int64")])
for n, b, sz in [("basic", (1, 0, 2), (2, 5, 3)), ("neg1", (1, 2, 0), (-1, -1, 4)), ("zero", (0, 0, 0), (0, 5, 6)),
                 ("full", (0, 0, 0), (-1, -1, -1))]:
    case(f"slice_{n}", "Slice", [x, I(*b), I(*sz)])
for n, m in [("basic", (2, 1, 3)), ("ones", (1, 1, 1)), ("zero", (2, 0, 1))]:
    case(f"tile_{n}", "Tile", [R(2, 3, 1), I(*m)])
case("tile_scalar_rank1", "Tile", [R(3), I(0)])
pads = I(1, 2, 0, 0, 2, 1).reshape(3, 2)
case("pad", "Pad", [x, pads])
case("pad_zero_dim", "Pad", [R(0, 3), I(1, 1, 0, 2).reshape(2, 2)])
case("padv2", "PadV2", [x, pads, np.array(1.5)])
for mode in ("REFLECT", "SYMMETRIC"):
    case(f"mirrorpad_{mode}", "MirrorPad", [x, I(3, 2, 0, 4, 1, 1).reshape(3, 2) if mode == "REFLECT" else I(4, 3, 1, 5, 2, 0).reshape(3, 2)], dict(mode=mode))
    case(f"mirrorpad_{mode}_0", "MirrorPad", [R(3, 1), I(0, 0, 0, 0).reshape(2, 2) if mode == "REFLECT" else I(2, 1, 1, 0).reshape(2, 2)], dict(mode=mode))

# ------------------------------------------------------------------ resize
img = R(2, 4, 5, 3, dt="float32")
for op in ("ResizeBilinear", "ResizeNearestNeighbor"):
    for ac, hp in [(False, False), (True, False), (False, True)]:
        for size in [(7, 9), (3, 2), (4, 5), (8, 10), (1, 1)]:
            case(f"{op}_{int(ac)}{int(hp)}_{size[0]}x{size[1]}", op, [img, I(*size)],
                 dict(align_corners=ac, half_pixel_centers=hp), order2=False)
case("resize_bilinear_f64", "ResizeBilinear", [R(1, 3, 3, 1), I(5, 4)], dict(half_pixel_centers=True), order2=False)

# ------------------------------------------------------------------ scans, arg reductions, top-k
for ex in (False, True):
    for rev in (False, True):
        for ax in (0, 1, -1, -2):
            case(f"cumsum_e{int(ex)}_r{int(rev)}_ax{ax}", "Cumsum", [R(3, 4), np.array(ax, np.int32)], dict(exclusive=ex, reverse=rev))
            case(f"cumprod_e{int(ex)}_r{int(rev)}_ax{ax}", "Cumprod", [R(3, 4), np.array(ax, np.int32)], dict(exclusive=ex, reverse=rev))
        case(f"cumlse_e{int(ex)}_r{int(rev)}", "CumulativeLogsumexp", [R(3, 4), np.array(1, np.int32)], dict(exclusive=ex, reverse=rev))
case("cumsum_zero", "Cumsum", [R(0, 3), np.array(0, np.int32)], dict(exclusive=True))
case("cumprod_zeros_in", "Cumprod", [np.array([[2.0, 0.0, 3.0, 0.0, 4.0]]), np.array(1, np.int32)])
case("cumprod_zeros_ex_rev", "Cumprod", [np.array([[2.0, 0.0, 3.0, 1.5, 4.0]]), np.array(1, np.int32)], dict(exclusive=True, reverse=True))
for op in ("ArgMax", "ArgMin"):
    for ot in (tf.int32, tf.int64):
        for ax in (0, -1, 2):
            case(f"{op.lower()}_{ot.name}_ax{ax}", op, [R(3, 4, 5), np.array(ax, np.int64)], dict(output_type=ot), grad=False)
    case(f"{op.lower()}_ties", op, [np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 1.0]]), np.array(1, np.int32)], grad=False)
    case(f"{op.lower()}_int", op, [I(3, 1, 3, 5, 5, 0).reshape(2, 3), np.array(0, np.int32)], grad=False)
for k in (0, 1, 3, 5):
    case(f"topk_ties_k{k}", "TopKV2", [np.array([[1.0, 3.0, 3.0, 2.0, 3.0], [0.0, 0.0, 0.0, 0.0, 0.0]]), np.array(k, np.int32)], dict(sorted=True))
case("topk_3d", "TopKV2", [R(2, 3, 6), np.array(2, np.int32)])
case("topk_int", "TopKV2", [I(4, 1, 4, 2, 2), np.array(3, np.int32)])
case("intopk", "InTopKV2", [np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]], np.float32), I(1, 0), np.array(1, np.int32)], grad=False)

# ------------------------------------------------------------------ losses
case("sparse_sce", "SparseSoftmaxCrossEntropyWithLogits", [R(4, 5), I(0, 4, 2, 2)])
case("sparse_sce_i64", "SparseSoftmaxCrossEntropyWithLogits", [R(3, 2), I(1, 0, 1, dt="int64")])
case("sparse_sce_big", "SparseSoftmaxCrossEntropyWithLogits", [R(2, 4) * 50, I(3, 0)])
case("sce", "SoftmaxCrossEntropyWithLogits", [R(4, 5), np.abs(R(4, 5))], wrt=[0])
case("sce_bc", "SoftmaxCrossEntropyWithLogits", [R(4, 5), np.abs(R(1, 5))], wrt=[0])

# ------------------------------------------------------------------ einsum
for eq, shapes in [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("...ij,...jk->...ik", [(2, 1, 2, 3), (5, 3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]), ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("ij->", [(2, 3)]),
    ("ij->ji", [(2, 3)]), ("i,j->ij", [(3,), (4,)]), ("i,i->", [(3,), (3,)]), ("bii->bi", [(2, 3, 3)]),
    ("...i,...i->...", [(2, 1, 3), (4, 3)]), ("ij,j->i", [(2, 3), (3,)]), ("iij->j", [(3, 3, 2)]),
    ("ab...,b->a...", [(2, 3, 4, 5), (3,)]), ("...ab,...b->...a", [(3, 4), (2, 4)]),
    ("ijk,kji->", [(2, 3, 4), (4, 3, 2)]), ("i->", [(0,)]), ("ij,jk->ik", [(2, 0), (0, 3)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]), ("a...a->...a", [(3, 2, 3)]),
    ("ij,ij->ij", [(2, 3), (1, 3)]), ("iji->j", [(2, 3, 2)]),
]:
    case("einsum_" + eq.replace("...", "E").replace(",", "_").replace("->", "_to_"), "Einsum",
         [[R(*s) for s in shapes]], dict(equation=eq))

# ------------------------------------------------------------------ split, pack, onehot, range
for ax in (0, 1, -1, -3):
    case(f"split_ax{ax}", "Split", [np.array(ax, np.int32), R(6, 6, 6)], dict(num_split=3))
    case(f"splitv_ax{ax}", "SplitV", [R(6, 6, 6), I(1, -1, 2), np.array(ax, np.int32)], dict(num_split=3))
case("splitv_zero", "SplitV", [R(4, 3), I(0, 4, 0), np.array(0, np.int32)], dict(num_split=3))
case("splitv_neg_only", "SplitV", [R(4, 3), I(-1), np.array(1, np.int32)], dict(num_split=1))
for ax in (0, 1, 2, -1, -3):
    case(f"pack_ax{ax}", "Pack", [[R(2, 3), R(2, 3)]], dict(axis=ax))
for ax in (0, 1, -1, -2):
    case(f"unpack_ax{ax}", "Unpack", [R(2, 3, 2)], dict(num=R(2, 3, 2).shape[ax], axis=ax))
case("unpack_zero", "Unpack", [R(2, 0)], dict(num=2, axis=0))
for ax in (-1, 0, 1):
    case(f"onehot_ax{ax}", "OneHot", [I(0, 2, -1, 3, 1, 5).reshape(2, 3), np.array(4, np.int32), np.array(1.5), np.array(-0.5)],
         dict(axis=ax), wrt=[2, 3])
case("onehot_scalar", "OneHot", [np.array(2, np.int64), np.array(3, np.int32), np.array(1.0), np.array(0.0)], wrt=[2, 3])
for st, lim, d in [(10, 2, -3), (5, 5, -1), (0, -7, -2), (1, 10, 4), (3.5, -1.0, -0.75)]:
    dt = "float64" if isinstance(st, float) else "int32"
    case(f"range_{st}_{lim}_{d}", "Range", [np.array(st, dt), np.array(lim, dt), np.array(d, dt)], grad=False)
case("linspace", "LinSpace", [np.array(-1.0), np.array(2.0), np.array(7, np.int32)])
case("linspace_1", "LinSpace", [np.array(-1.0), np.array(2.0), np.array(1, np.int32)])

# ------------------------------------------------------------------ reductions
for op in ("Sum", "Mean", "Max", "Min", "Prod", "EuclideanNorm"):
    for axes in [(-1,), (-3, 1), (), (0, 1, 2), (-2,), (1, 1)]:
        for kd in (False, True):
            if axes == (1, 1) and op not in ("Sum", "Max"):
                continue
            case(f"{op.lower()}_{'_'.join(map(str, axes)) or 'none'}_k{int(kd)}", op,
                 [R(2, 3, 4), np.array(axes, np.int32).reshape(-1)], dict(keep_dims=kd))
    case(f"{op.lower()}_zero", op, [R(2, 0, 3), I(1)], dict(keep_dims=True), grad=op in ("Sum", "Mean", "Prod"))
    case(f"{op.lower()}_scalar_axis", op, [R(3, 4), np.array(-1, np.int64)], dyn=False)
case("max_ties", "Max", [np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]), I(1)])
case("min_ties_k", "Min", [np.array([[1.0, 1.0, 3.0], [2.0, 0.0, 2.0]]), I(0)], dict(keep_dims=True))
case("prod_zeros", "Prod", [np.array([[1.0, 0.0, 3.0], [0.0, 0.0, 2.0], [1.0, 2.0, 3.0]]), I(1)])
for op in ("All", "Any"):
    case(f"{op.lower()}_neg_kd", op, [rng.random((3, 4)) > 0.3, I(-1)], dict(keep_dims=True), grad=False)
    case(f"{op.lower()}_empty_axes", op, [rng.random((3, 4)) > 0.3, np.zeros(0, np.int32)], grad=False)
case("sum_int_kd", "Sum", [I(*range(12)).reshape(3, 4), I(-2)], dict(keep_dims=True))

# ------------------------------------------------------------------ select, squeeze, expand dims
c = rng.random((3, 4)) > 0.5
case("select_same", "Select", [c, R(3, 4), R(3, 4)])
case("select_vec_cond", "Select", [rng.random(3) > 0.5, R(3, 4), R(3, 4)])
case("select_scalar", "Select", [np.array(False), R(3, 4), R(3, 4)])
for cs, ts, es in [((3, 4), (4,), (3, 1)), ((1, 4), (3, 1), ()), ((), (2, 3), (3,)), ((2, 1, 3), (4, 1), (1,)),
                   ((3,), (2, 3), (2, 1)), ((0, 3), (1, 3), (3,))]:
    case(f"selectv2_{len(cs)}{len(ts)}{len(es)}_{'x'.join(map(str, cs))}", "SelectV2",
         [rng.random(cs) > 0.5, R(*ts), R(*es)])
for dims in [(), (-1,), (0, -2), (2,)]:
    case(f"squeeze_{'_'.join(map(str, dims)) or 'all'}", "Squeeze", [R(1, 3, 1, 1)], dict(squeeze_dims=list(dims)))
case("squeeze_zero", "Squeeze", [R(1, 0, 1)], dict(squeeze_dims=[0]))
for d in (0, 1, 2, -1, -3):
    case(f"expanddims_{d}", "ExpandDims", [R(2, 3), np.array(d, np.int64)])
case("expanddims_vec_dim", "ExpandDims", [R(2, 3), I(-1)])

# ------------------------------------------------------------------ binary broadcasting incl. zero-size
for op in ("AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "Pow", "SquaredDifference", "DivNoNan",
           "MulNoNan", "Xdivy", "Xlogy", "Atan2", "FloorDiv", "FloorMod", "TruncateDiv"):
    pos = op in ("Pow", "RealDiv", "Xdivy", "Xlogy", "FloorDiv", "FloorMod", "TruncateDiv")
    for sa, sb in [((2, 1, 3), (4, 1)), ((0, 3), (1, 3)), ((), (2, 0)), ((3, 1), (1, 0))]:
        case(f"{op.lower()}_{'x'.join(map(str, sa))}_{'x'.join(map(str, sb))}", op,
             [R(*sa, pos=pos), R(*sb, pos=pos)], grad=op not in ("FloorDiv", "TruncateDiv"))
for op in ("Maximum", "Minimum"):
    case(f"{op.lower()}_ties", op, [np.array([1.0, 2.0, 3.0]), np.array([[1.0], [2.0]])])
case("divnonan_zero", "DivNoNan", [R(2, 3), np.array([0.0, 1.5, 0.0])])
case("mulnonan_zero", "MulNoNan", [np.array([np.inf, 1.0, np.nan]), np.array([0.0, 2.0, 0.0])], grad=False)
case("xlogy_zero", "Xlogy", [np.array([0.0, 1.0, 0.0]), np.array([0.0, 2.0, 3.0])])
case("xdivy_zero", "Xdivy", [np.array([0.0, 1.0, 0.0]), np.array([0.0, 2.0, 3.0])])
case("pow_zero_base", "Pow", [np.array([0.0, 0.0, 2.0, -2.0]), np.array([2.0, 0.0, 0.5, 3.0])])
case("addn_bc", "AddN", [[R(2, 3), R(2, 3), R(2, 3)]])
case("clipbyvalue_bc", "ClipByValue", [R(3, 4), R(1, 4) - 0.5, np.array(0.4)])
case("clipbyvalue_ties", "ClipByValue", [np.array([-1.0, 0.0, 1.0, 2.0]), np.array(0.0), np.array(1.0)])
case("broadcastto", "BroadcastTo", [R(3, 1), I(2, 3, 4)])
case("broadcastto_zero", "BroadcastTo", [R(1, 3), I(0, 3)])
case("biasadd_5d", "BiasAdd", [R(2, 2, 3, 2, 4), R(4)])
case("biasadd_NCHW_5d", "BiasAdd", [R(2, 4, 3, 2, 2), R(4)], dict(data_format="NCHW"))
case("biasadd_NCHW_3d", "BiasAdd", [R(2, 4, 3), R(4)], dict(data_format="NCHW"))
case("biasadd_2d", "BiasAdd", [R(5, 4), R(4)])

# ------------------------------------------------------------------ misc reshapes and reorderings
case("transpose_neg", "Transpose", [R(2, 3, 4), I(2, 0, 1)])
case("transpose_zero", "Transpose", [R(2, 0, 4), I(1, 2, 0)])
case("reversev2_neg", "ReverseV2", [R(2, 3, 4), I(-1, 0)])
case("reversev2_none", "ReverseV2", [R(2, 3), np.zeros(0, np.int32)])
case("roll_multi", "Roll", [R(3, 4, 5), I(1, -2, 7), I(0, -1, 1)])
case("roll_same_axis", "Roll", [R(3, 4), I(1, 2), I(1, 1)])
case("revseq", "ReverseSequence", [R(3, 5, 2), I(0, 5, 2, dt="int64")], dict(seq_dim=1, batch_dim=0))
case("revseq_batch2", "ReverseSequence", [R(4, 2, 3), I(1, 3, 2)], dict(seq_dim=0, batch_dim=2))
case("concat_neg", "ConcatV2", [[R(2, 3), R(2, 0), R(2, 1)], np.array(-1, np.int32)])
case("concat_axis0", "ConcatV2", [[R(0, 3), R(2, 3)], np.array(0, np.int32)])  # (TF's graph gradient fails on int64)
case("reshape_neg", "Reshape", [R(2, 3, 4), I(-1, 6)])
case("reshape_zero", "Reshape", [R(0, 3), I(3, -1, 2)])
case("diag", "Diag", [R(2, 3)])
case("matrixbandpart", "MatrixBandPart", [R(2, 4, 5), np.array(1, np.int64), np.array(-1, np.int64)])
case("matrixdiagv3", "MatrixDiagV3", [R(2, 3, 4), I(-1, 1), np.array(4, np.int32), np.array(5, np.int32), np.array(0.5)],
     dict(align="LEFT_RIGHT"), wrt=[0], dyn=False)
case("matrixdiagv3_rl", "MatrixDiagV3", [R(2, 3), I(-1, 1), np.array(-1, np.int32), np.array(-1, np.int32), np.array(0.0)],
     dict(align="RIGHT_LEFT"), wrt=[0])
case("depthtospace_nhwc", "DepthToSpace", [R(1, 2, 3, 8)], dict(block_size=2))
case("spacetodepth_nhwc", "SpaceToDepth", [R(1, 4, 6, 2)], dict(block_size=2))
case("depthtospace_nchw", "DepthToSpace", [R(1, 8, 2, 3, dt="float32")], dict(block_size=2, data_format="NCHW"))
case("spacetodepth_nchw", "SpaceToDepth", [R(1, 2, 4, 6, dt="float32")], dict(block_size=2, data_format="NCHW"))
case("s2bnd", "SpaceToBatchND", [R(2, 5, 4, 1), I(2, 2), I(1, 0, 0, 2).reshape(2, 2)])
case("b2snd", "BatchToSpaceND", [R(8, 3, 3, 1), I(2, 2), I(1, 0, 0, 2).reshape(2, 2)])
case("lrn", "LRN", [R(2, 3, 3, 6, dt="float32")], dict(depth_radius=2, bias=1.5, alpha=0.3, beta=0.6), order2=False)
case("l2loss", "L2Loss", [R(3, 4)])
case("leakyrelu_neg_alpha", "LeakyRelu", [R(3, 4)], dict(alpha=-0.3))
case("leakyrelu_big_alpha", "LeakyRelu", [R(3, 4)], dict(alpha=1.7))
case("cross", "Cross", [R(2, 3), R(2, 3)])
case("unsorted_segsum_neg", "UnsortedSegmentSum", [R(5, 2), I(0, -1, 2, 0, 3), np.array(4, np.int32)], wrt=[0])
case("unsorted_segmax_empty", "UnsortedSegmentMax", [R(4, 2), I(0, 2, 2, 0), np.array(4, np.int32)], wrt=[0])
case("segsum_gap", "SegmentSum", [R(4, 2), I(0, 0, 2, 3)], wrt=[0])
case("scatternd_dup", "ScatterNd", [I(0, 2, 0).reshape(3, 1), R(3, 2), I(4, 2)], wrt=[1])
case("tsadd_dup", "TensorScatterAdd", [R(4, 2), I(1, 1, 3).reshape(3, 1), R(3, 2)], wrt=[0, 2])
case("tsupdate", "TensorScatterUpdate", [R(4, 2), I(1, 3).reshape(2, 1), R(2, 2)], wrt=[0, 2])
case("dynstitch", "DynamicStitch", [[I(0, 2), I(1, 3)], [R(2, 3), R(2, 3)]])
case("dynpart", "DynamicPartition", [R(5, 2), I(0, 2, 0, 1, 2)], dict(num_partitions=3))
case("fill", "Fill", [I(2, 3), np.array(1.5)])
case("zeroslike", "ZerosLike", [R(2, 3)])
case("oneslike", "OnesLike", [R(2, 3)])
case("identityn", "IdentityN", [[R(2), R(3)]])
case("stopgradient", "StopGradient", [R(3)])
case("cast_f2i", "Cast", [np.array([1.7, -1.7, 2.5])], dict(DstT=tf.int32))
case("cast_i2f", "Cast", [I(1, -2, 3)], dict(DstT=tf.float64))
case("selu_elu", "Selu", [np.array([-2.0, -0.0, 0.0, 1.0])])
case("relu6_edges", "Relu6", [np.array([-1.0, 0.0, 3.0, 6.0, 7.0])])
case("softmax_3d", "Softmax", [R(2, 3, 4)])
case("logsoftmax_3d", "LogSoftmax", [R(2, 3, 4)])
case("softmax_zero", "Softmax", [R(0, 4)])
case("bincount_w", "Bincount", [I(1, 3, 1, 0, 6), np.array(5, np.int32), R(5)], wrt=[])
case("broadcastargs", "BroadcastArgs", [I(2, 1, 3), I(4, 1)], grad=False)
case("where_bool", "Where", [rng.random((3, 4)) > 0.5], grad=False)
case("unique_f", "Unique", [np.array([3.0, 1.0, 3.0, 2.0, 1.0])], dict(out_idx=tf.int64))
case("shape_size_rank", "Shape", [R(2, 0, 3)], dict(out_type=tf.int64), grad=False)
case("mirrorpad_2d_refl", "MirrorPad", [R(3, 4), I(2, 2, 3, 3).reshape(2, 2)], dict(mode="REFLECT"))


# ------------------------------------------------------------------ dtypes other than float64
for dt in ("float32", "float16", "bfloat16"):
    def D(*shape, pos=False, dt=dt):
        x = R(*shape, pos=pos)
        return x.astype(tf.bfloat16.as_numpy_dtype) if dt == "bfloat16" else x.astype(dt)
    o2 = True
    case(f"conv2d_{dt}", "Conv2D", [D(1, 5, 5, 2), D(3, 3, 2, 3)], dict(strides=[1, 2, 2, 1], padding="SAME"), order2=o2)
    case(f"matmul_{dt}", "MatMul", [D(3, 4), D(5, 4)], dict(transpose_b=True), order2=o2)
    case(f"bmm_{dt}", "BatchMatMulV2", [D(2, 1, 3, 4), D(3, 4, 2)], dict(adj_x=False), order2=o2)
    case(f"maxpool_{dt}", "MaxPool", [D(1, 4, 5, 2)], dict(ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME"), order2=o2)
    case(f"avgpool_{dt}", "AvgPool", [D(1, 4, 5, 2)], dict(ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME"), order2=o2)
    case(f"biasadd_{dt}", "BiasAdd", [D(2, 3, 4), D(4)], order2=o2)
    case(f"mean_{dt}", "Mean", [D(4, 50), I(1)], dict(keep_dims=True), order2=o2)
    case(f"sum_{dt}", "Sum", [D(4, 8), I(0, 1)], order2=o2)  # (TF's float16 Sum of 200 adds in half: 0.06 for 0.073)
    case(f"prod_{dt}", "Prod", [D(3, 4), I(1)], order2=o2)
    case(f"cumsum_{dt}", "Cumsum", [D(3, 6), np.array(1, np.int32)], dict(exclusive=True, reverse=True), order2=o2)
    case(f"softmax_{dt}", "Softmax", [D(3, 6)], order2=o2)
    case(f"logsoftmax_{dt}", "LogSoftmax", [D(3, 6)], order2=o2)
    case(f"resize_bl_{dt}", "ResizeBilinear", [D(1, 3, 4, 2), I(5, 7)], dict(half_pixel_centers=True), order2=False)
    case(f"resize_nn_{dt}", "ResizeNearestNeighbor", [D(1, 3, 4, 2), I(5, 7)], dict(half_pixel_centers=True), order2=False)
    case(f"sparse_sce_{dt}", "SparseSoftmaxCrossEntropyWithLogits", [D(3, 4), I(0, 3, 1)], order2=o2)
    case(f"sce_{dt}", "SoftmaxCrossEntropyWithLogits", [D(3, 4), np.abs(D(3, 4))], wrt=[0], order2=o2)
    case(f"einsum_{dt}", "Einsum", [[D(2, 3, 4), D(4, 5)]], dict(equation="bij,jk->bik"), order2=o2)
    case(f"l2loss_{dt}", "L2Loss", [D(3, 4)], order2=o2)
    case(f"fbn3_{dt}", "FusedBatchNormV3", [D(2, 2, 2, 3), R(3, dt="float32", pos=True), R(3, dt="float32"),
                                            np.zeros(3, np.float32), np.zeros(3, np.float32)],
         dict(is_training=True), wrt=[0, 1, 2], order2=False, skip_outs=(5,))
    case(f"squareddiff_{dt}", "SquaredDifference", [D(3, 1), D(4)], order2=o2)
    case(f"lrelu_{dt}", "LeakyRelu", [D(3, 4)], dict(alpha=0.2), order2=o2)
    case(f"selectv2_{dt}", "SelectV2", [rng.random((3, 1)) > 0.5, D(1, 4), D(3, 4)], order2=o2)
    case(f"argmax_{dt}", "ArgMax", [D(3, 5), np.array(1, np.int32)], grad=False)
    case(f"topk_{dt}", "TopKV2", [D(3, 5), np.array(2, np.int32)], order2=o2)
    case(f"clip_{dt}", "ClipByValue", [D(3, 4), np.array(-0.3, dt if dt != "bfloat16" else tf.bfloat16.as_numpy_dtype),
                                        np.array(0.4, dt if dt != "bfloat16" else tf.bfloat16.as_numpy_dtype)], order2=o2)
for dt in ("int32", "int64", "uint8", "int8", "int16"):
    x = rng.integers(0, 9, (3, 4)).astype(dt)
    case(f"sum_{dt}", "Sum", [x, I(-1)], dict(keep_dims=True))
    case(f"mean_{dt}", "Mean", [x, I(0)])
    case(f"prod_{dt}", "Prod", [x, I(1)])
    case(f"max_{dt}", "Max", [x, np.zeros(0, np.int32)])
    case(f"cumsum_{dt}", "Cumsum", [x, np.array(1, np.int32)], dict(exclusive=True))
    case(f"cumprod_{dt}", "Cumprod", [x, np.array(0, np.int32)], dict(reverse=True))
    case(f"argmin_{dt}", "ArgMin", [x, np.array(0, np.int32)], dict(output_type=tf.int32))
    case(f"tile_{dt}", "Tile", [x, I(2, 1)])
    case(f"pad_{dt}", "Pad", [x, I(1, 0, 0, 2).reshape(2, 2)])
    case(f"mirrorpad_{dt}", "MirrorPad", [x, I(1, 0, 0, 2).reshape(2, 2)], dict(mode="SYMMETRIC"))
    case(f"ss_{dt}", "StridedSlice", [x, I(0, -1), I(3, 0), I(2, -1)])
    case(f"topk_{dt}", "TopKV2", [x, np.array(3, np.int32)])
    case(f"onehot_{dt}", "OneHot", [rng.integers(-1, 4, (2, 3)).astype(dt if dt in ("int32", "int64", "uint8", "int8") else "int32"),
                                     np.array(4, np.int32), np.array(7, np.int32), np.array(-1, np.int32)])
b = rng.random((3, 4)) > 0.5
case("tile_bool", "Tile", [b, I(1, 2)])
case("ss_bool", "StridedSlice", [b, I(0, 1), I(0, 3), I(1, 1)], dict(begin_mask=1, end_mask=1))
case("transpose_bool", "Transpose", [b, I(1, 0)])
case("pack_bool", "Pack", [[b, b]], dict(axis=-1))
case("gather_bool", "GatherV2", [b, I(2, 0), np.array(1, np.int32)])
case("selectv2_bool", "SelectV2", [b, b[:1], np.array(True)])
case("pad_bool", "Pad", [b, I(1, 0, 0, 2).reshape(2, 2)])
case("reverse_bool", "ReverseV2", [b, I(1)])
case("concat_bool", "ConcatV2", [[b, b], np.array(-1, np.int32)])

# ------------------------------------------------------------------ zero-size dims
case("z_conv2d_batch0", "Conv2D", [R(0, 4, 4, 2), R(2, 2, 2, 3)], dict(strides=[1, 1, 1, 1], padding="SAME"))
case("z_conv2d_cin0", "Conv2D", [R(1, 4, 4, 0), R(2, 2, 0, 3)], dict(strides=[1, 1, 1, 1], padding="VALID"))
case("z_conv2d_cout0", "Conv2D", [R(1, 4, 4, 2), R(2, 2, 2, 0)], dict(strides=[1, 1, 1, 1], padding="VALID"))
case("z_dwconv_batch0", "DepthwiseConv2dNative", [R(0, 4, 4, 2), R(2, 2, 2, 1)], dict(strides=[1, 1, 1, 1], padding="SAME"),
     wrt=[0])  # TF's filter gradient of an empty batch is uninitialized memory (specflow's: zeros)
case("z_maxpool_batch0", "MaxPool", [R(0, 4, 4, 2)], dict(ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID"))
case("z_avgpool_c0", "AvgPool", [R(1, 4, 4, 0)], dict(ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID"))
case("z_biasadd", "BiasAdd", [R(0, 3), R(3)])
case("z_bmm_batch0", "BatchMatMulV2", [R(0, 2, 3), R(3, 4)])
case("z_bmm_m0", "BatchMatMulV2", [R(2, 0, 3), R(2, 3, 4)], dict(adj_y=False))
case("z_resize_bl", "ResizeBilinear", [R(0, 2, 2, 1, dt="float32"), I(3, 3)], order2=False)
case("z_resize_nn", "ResizeNearestNeighbor", [R(1, 2, 2, 0, dt="float32"), I(3, 3)], order2=False)
case("z_gather_params0", "GatherV2", [R(3, 0), I(2, 0), np.array(0, np.int32)])
case("z_gather_bd", "GatherV2", [R(2, 0, 3), np.zeros((2, 0), np.int32), np.array(1, np.int32)], dict(batch_dims=1))
case("z_onehot_depth0", "OneHot", [I(0, 1), np.array(0, np.int32), np.array(1.0), np.array(0.0)], wrt=[2, 3])
case("z_range", "Range", [np.array(3, np.int32), np.array(3, np.int32), np.array(-1, np.int32)], grad=False)
case("z_transpose", "Transpose", [R(0, 3, 0), I(2, 1, 0)])
case("z_einsum", "Einsum", [[R(0, 3), R(3, 2)]], dict(equation="ij,jk->ik"))
case("z_einsum_contract0", "Einsum", [[R(2, 0), R(0, 2)]], dict(equation="ij,jk->ik"))
case("z_sparse_sce", "SparseSoftmaxCrossEntropyWithLogits", [R(0, 3), np.zeros(0, np.int32)])
case("z_argmax", "ArgMax", [R(0, 3), np.array(1, np.int32)], grad=False)
case("z_split", "Split", [np.array(1, np.int32), R(0, 4)], dict(num_split=2))
case("z_splitv", "SplitV", [R(3, 0), I(0, -1), np.array(1, np.int32)], dict(num_split=2))
case("z_pack", "Pack", [[R(0, 2), R(0, 2)]], dict(axis=1))
case("z_unpack", "Unpack", [R(3, 0)], dict(num=3, axis=0))
case("z_reverse", "ReverseV2", [R(0, 3), I(0, 1)])
case("z_pad", "Pad", [R(0, 0), I(1, 1, 2, 0).reshape(2, 2)])
case("z_ss", "StridedSlice", [R(3, 0, 2), I(1, 0, 0), I(3, 0, 2), I(1, 1, -1)], dict(end_mask=6, begin_mask=6))
case("z_select", "SelectV2", [np.zeros((0, 1), bool), R(0, 3), R(3)])
case("z_topk", "TopKV2", [R(0, 3), np.array(2, np.int32)])
case("z_cumprod", "Cumprod", [R(2, 0), np.array(1, np.int32)], dict(reverse=True))
case("z_softmax_ce", "SoftmaxCrossEntropyWithLogits", [R(0, 3), R(0, 3)], wrt=[0])
case("z_fbn", "FusedBatchNormV3", [R(0, 2, 2, 2, dt="float32"), R(2, dt="float32"), R(2, dt="float32"),
                                    np.zeros(2, np.float32), np.zeros(2, np.float32)], dict(is_training=False),
     wrt=[0, 1, 2], order2=False, skip_outs=(3, 4, 5))  # reserve spaces of an empty x: unset in TF's Eigen kernel
case("z_mean_all", "Mean", [R(0, 3), I(0, 1)], grad=False)
case("z_max_kd", "Max", [R(0, 3), I(0)], dict(keep_dims=True), grad=False)
case("z_l2loss", "L2Loss", [R(0, 3)])
case("z_tile_rank0", "Tile", [np.array(2.0), np.zeros(0, np.int32)])
case("z_lrn", "LRN", [R(0, 2, 2, 3, dt="float32")], order2=False)
case("z_mirrorpad", "MirrorPad", [R(0, 3), I(0, 0, 1, 1).reshape(2, 2)], dict(mode="REFLECT"))
case("z_bcast_to", "BroadcastTo", [R(0, 1), I(0, 4)])
case("z_expand", "ExpandDims", [R(0), np.array(-1, np.int32)])
case("z_squeeze", "Squeeze", [R(0, 1)], dict(squeeze_dims=[-1]))
case("z_cross", "Cross", [R(0, 3), R(0, 3)])
case("z_diag", "Diag", [R(0)])
case("z_bandpart", "MatrixBandPart", [R(0, 3, 3), np.array(0, np.int64), np.array(0, np.int64)])

# ------------------------------------------------------------------ more einsum, gather, slices
for eq, shapes in [
    ("...ij,jk->...ik", [(2, 3, 4), (4, 5)]), ("ij,...jk->...ik", [(3, 4), (2, 4, 5)]), ("ij,jk", [(2, 3), (3, 4)]),
    ("ba,ca", [(2, 3), (4, 3)]), ("i...,i...->...", [(3, 2), (3, 1)]), ("...,...->...", [(2, 3), (3,)]),
    ("ijj,jk->ik", [(2, 3, 3), (3, 4)]), ("ij,ij,ij->i", [(2, 3), (2, 3), (2, 3)]), ("abc->cba", [(2, 3, 4)]),
    ("aab->ba", [(3, 3, 2)]), ("ab,ab->", [(2, 3), (2, 3)]), ("...->", [(2, 3)]), ("a...b,b...c->a...c", [(2, 3, 4), (4, 3, 5)]),
    ("bnqd,bnkd->bnqk", [(1, 2, 3, 4), (1, 2, 5, 4)]), ("bnqk,bnkd->bqnd", [(1, 2, 3, 5), (1, 2, 5, 4)]),
    ("abcd,cd->ab", [(2, 3, 4, 5), (4, 5)]), ("i,i", [(3,), (3,)]), ("ii->", [(3, 3)]),
]:
    case("einsum2_" + eq.replace("...", "E").replace(",", "_").replace("->", "_to_"), "Einsum",
         [[R(*s) for s in shapes]], dict(equation=eq))
for bd, ax, ps, ish in [(1, 1, (2, 4, 3), (2, 5)), (1, 2, (2, 4, 3), (2, 5)), (2, 2, (2, 3, 4, 2), (2, 3, 2)),
                        (-1, -1, (2, 5), (2, 3)), (1, -1, (2, 3, 4), (2, 2, 2)), (0, 1, (3, 4), (2, 2, 2)),
                        (-2, 2, (2, 3, 4), (2, 3, 5)), (1, 1, (2, 4), (2,))]:
    b = bd if bd >= 0 else bd + len(ish)
    a = ax if ax >= 0 else ax + len(ps)
    idx = rng.integers(0, ps[a], ish).astype(np.int64)
    case(f"gatherv2b_bd{bd}_ax{ax}_{len(ps)}{len(ish)}", "GatherV2", [R(*ps), idx, np.array(ax, np.int64)], dict(batch_dims=bd))
case("gathernd_bd", "GatherNd", [R(2, 3, 4), I(1, 2, 0, 3, 2, 0, 0, 1).reshape(2, 2, 2)], dict(batch_dims=1))
for n, b, e, st, m in [
    ("ell_end", [1, 0], [3, 0], [1, 1], dict(ellipsis_mask=2)),
    ("shrink_last_neg", [0, -1], [0, 0], [1, 1], dict(begin_mask=1, end_mask=1, shrink_axis_mask=2)),
    ("neg_stride_shrink", [2, 4], [0, 0], [-1, -1], dict(shrink_axis_mask=1, end_mask=2)),
    ("new_at_end", [0, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1], dict(begin_mask=7, end_mask=7, new_axis_mask=8)),
    ("ell_new_after", [0, 0, 0], [0, 0, 0], [1, 1, 1], dict(ellipsis_mask=1, new_axis_mask=6)),
    ("big_stride", [0, 0, 0], [4, 5, 6], [3, 4, 5], {}),
    ("neg_big_stride", [-1, -1, -1], [-5, -6, -7], [-3, -4, -5], {}),
    ("shrink_all", [1, 2, 3], [2, 3, 4], [1, 1, 1], dict(shrink_axis_mask=7)),
    ("new_ellipsis_only", [0, 0], [0, 0], [1, 1], dict(new_axis_mask=1, ellipsis_mask=2)),
    ("ell_twice_mask", [0, 1, 0], [0, 2, 0], [1, 1, 1], dict(ellipsis_mask=1, shrink_axis_mask=2, new_axis_mask=4)),
]:
    case(f"ss2_{n}", "StridedSlice", [x if False else R(4, 5, 6), I(*b), I(*e), I(*st)], m)

# ------------------------------------------------------------------ integer inputs and unconnected gradients
case("int_gather_params", "GatherV2", [I(1, 2, 3, 4), I(0, 3), np.array(0, np.int32)], grad=False)
case("cast_int_mul", "Mul", [R(3), np.array([1.0, 2.0, 3.0])], wrt=[0])
case("unconnected_shape", "Shape", [R(2, 3)], grad=True)
case("unconnected_zeroslike", "ZerosLike", [R(2, 3)])
case("unconnected_argmax", "ArgMax", [R(2, 3), np.array(1, np.int32)])
case("unconnected_equal", "Equal", [R(2, 3), R(2, 3)])
case("unconnected_floor", "Floor", [R(2, 3)])
case("unconnected_sign", "Sign", [R(2, 3)])
case("unconnected_round", "Round", [R(2, 3)])
case("unconnected_rint", "Rint", [R(2, 3)])
case("unconnected_ceil", "Ceil", [R(2, 3)])
case("unconnected_isnan", "IsNan", [R(2, 3)])
case("unconnected_size", "Size", [R(2, 3)])
case("unconnected_rank", "Rank", [R(2, 3)])
case("unconnected_fill_dims", "Fill", [I(2, 2), np.array(3.0)])
case("unconnected_topk_idx", "TopKV2", [R(2, 5), np.array(2, np.int32)])
case("unconnected_unique", "Unique", [np.array([3.0, 1.0, 3.0])], grad=False)
case("unconnected_bincount", "Bincount", [I(1, 2, 1), np.array(3, np.int32), np.zeros(0)], grad=False)
case("checknumerics", "CheckNumerics", [R(3)], dict(message="m"))
case("identity", "Identity", [R(3)])
case("isfinite_inf", "IsFinite", [np.array([1.0, np.inf, np.nan])], grad=False)
case("truncmod", "TruncateMod", [R(3, 4, pos=True) * 3, R(4, pos=True)])
case("floormod_neg", "FloorMod", [R(3, 4) * 3, R(4, pos=True)])
case("floordiv_neg_i", "FloorDiv", [I(-7, 7, -7, 7), I(2, -2, -2, 2)])
case("truncdiv_neg_i", "TruncateDiv", [I(-7, 7, -7, 7), I(2, -2, -2, 2)])
case("div_int", "Div", [I(-7, 7, -7, 7), I(2, -2, -2, 2)])
case("div_float", "Div", [R(3), R(3, pos=True)])
case("realdiv_bc", "RealDiv", [R(2, 1, 3), R(4, 1, pos=True)])
case("pow_neg_int_exp", "Pow", [np.array([-2.0, 2.0, -0.5, 3.0]), np.array([2.0, -1.0, 3.0, 0.0])])
case("pow_int", "Pow", [I(2, -3, 4), I(3, 2, 0)])

# ------------------------------------------------------------------ second order of the unary ops at their kinks
KINKS = np.array([-2.5, -1.0, -0.3, 0.0, 0.4, 1.0, 2.0, 6.0, 6.5])
for op, x in [("Relu", KINKS), ("Relu6", KINKS), ("Elu", KINKS), ("Selu", KINKS), ("Softplus", KINKS), ("Softsign", KINKS),
              ("Sigmoid", KINKS), ("Tanh", KINKS), ("Sqrt", np.abs(KINKS) + 0.2), ("Rsqrt", np.abs(KINKS) + 0.2),
              ("Reciprocal", KINKS + 0.05), ("Log1p", np.abs(KINKS)), ("Expm1", KINKS), ("Erf", KINKS), ("Erfc", KINKS),
              ("Atan", KINKS), ("Asinh", KINKS), ("Acosh", np.abs(KINKS) + 1.1), ("Atanh", KINKS / 7), ("Asin", KINKS / 7),
              ("Acos", KINKS / 7), ("Tan", KINKS / 3), ("Sinh", KINKS), ("Cosh", KINKS), ("Square", KINKS), ("Abs", KINKS),
              ("Neg", KINKS), ("Exp", KINKS), ("Log", np.abs(KINKS) + 0.1), ("Sin", KINKS), ("Cos", KINKS), ("Sign", KINKS),
              ("Floor", KINKS), ("Ceil", KINKS), ("Round", KINKS), ("Rint", KINKS), ("L2Loss", KINKS),
              ("Softmax", KINKS.reshape(3, 3)), ("LogSoftmax", KINKS.reshape(3, 3))]:
    case(f"kink2_{op.lower()}", op, [x.copy()])
    case(f"kink2_{op.lower()}_f32", op, [x.astype(np.float32)])
case("kink2_leakyrelu", "LeakyRelu", [KINKS.copy()], dict(alpha=0.25))
for op in ("Maximum", "Minimum", "SquaredDifference", "Atan2", "Pow", "Xlogy", "Xdivy", "DivNoNan", "MulNoNan", "RealDiv"):
    a = np.array([0.5, 1.0, 2.0, 0.0, 3.0])
    b = np.array([0.5, 2.0, 1.0, 1.0, 0.0]) if op not in ("Pow",) else np.array([0.5, 2.0, 1.0, 1.0, 3.0])
    if op in ("Xdivy", "RealDiv"):
        b = b + 0.5
    case(f"kink2_{op.lower()}", op, [a, b])
case("kink2_clip", "ClipByValue", [np.array([-1.0, 0.0, 0.5, 1.0, 2.0]), np.array(0.0), np.array(1.0)])
case("kink2_matinv", "MatrixInverse", [R(2, 3, 3) + 3 * np.eye(3)])
case("kink2_matinv_adj", "MatrixInverse", [R(3, 3) + 3 * np.eye(3)], dict(adjoint=True))
a = R(2, 3, 3)
case("kink2_cholesky", "Cholesky", [a @ np.swapaxes(a, -1, -2) + 3 * np.eye(3)])
case("kink2_usegmax_ties", "UnsortedSegmentMax", [np.array([[1.0, 2.0], [1.0, 5.0], [3.0, 5.0]]), I(0, 0, 0),
                                                 np.array(2, np.int32)], wrt=[0])
case("kink2_segsum", "SegmentSum", [R(4, 2), I(0, 0, 1, 3)], wrt=[0])
case("kink2_dynstitch_dup", "DynamicStitch", [[I(0, 1), I(1, 2)], [R(2, 3), R(2, 3)]])
case("kink2_lrn", "LRN", [R(1, 2, 2, 5, dt="float32")], dict(depth_radius=1, bias=1.0, alpha=0.5, beta=0.75), order2=False)

# ------------------------------------------------------------------ integer and bool sources (TF: no gradient)
case("int_src_cast", "Cast", [I(1, -2, 3)], dict(DstT=tf.float64), wrt=[0])
case("int_src_gather_idx", "GatherV2", [R(4, 2), I(1, 3), np.array(0, np.int32)], wrt=[0, 1])
case("int_src_onehot", "OneHot", [I(0, 2), np.array(3, np.int32), np.array(1.0), np.array(0.0)], wrt=[0, 2])
case("bool_src_select", "SelectV2", [rng.random((3,)) > 0.5, R(3), R(3)], wrt=[0, 1, 2])
case("int_src_tile_mult", "Tile", [R(2, 3), I(2, 1)], wrt=[0, 1])
case("int_src_range", "Range", [np.array(0.0), np.array(3.0), np.array(0.5)], wrt=[0, 1, 2])
case("int_src_pad", "Pad", [R(2, 2), I(1, 0, 0, 1).reshape(2, 2)], wrt=[0, 1])
case("int_src_fill", "Fill", [I(2, 2), np.array(3.0)], wrt=[0, 1])
case("int_src_bincount", "Bincount", [I(1, 2, 1), np.array(3, np.int32), np.array([0.5, 1.0, 2.0])], wrt=[0, 2])

# ------------------------------------------------------------------ more attrs: 3-D, argmax pools, depthwise explicit
for pad in ("SAME", "VALID"):
    for st, dl in [((1, 1, 1), (1, 1, 1)), ((2, 1, 2), (1, 1, 1)), ((1, 1, 1), (1, 2, 1))]:
        case(f"conv3d_{pad}_s{''.join(map(str, st))}_d{''.join(map(str, dl))}", "Conv3D", [R(1, 5, 4, 5, 2), R(2, 3, 2, 2, 3)],
             dict(strides=[1, *st, 1], padding=pad, dilations=[1, *dl, 1]), order2=dl == (1, 1, 1))
    case(f"avgpool3d_{pad}", "AvgPool3D", [R(1, 4, 5, 3, 2, dt="float32")], dict(ksize=[1, 2, 3, 2, 1], strides=[1, 2, 2, 1, 1], padding=pad))
case("dwconv_explicit", "DepthwiseConv2dNative", [R(1, 5, 5, 2), R(3, 3, 2, 2)],
     dict(strides=[1, 2, 2, 1], padding="EXPLICIT", explicit_paddings=[0, 0, 1, 2, 0, 1, 0, 0]))
for incl in (False, True):
    for ta in (tf.int64,):
        case(f"maxpool_argmax_{int(incl)}", "MaxPoolWithArgmax", [R(2, 4, 5, 3, dt="float32")],
             dict(ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME", include_batch_in_index=incl, Targmax=ta))
case("maxpool_ties", "MaxPool", [np.array([[1.0, 1.0, 2.0, 2.0], [1.0, 1.0, 2.0, 2.0]]).reshape(1, 2, 4, 1)],
     dict(ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID"))
case("maxpool_overlap_ties", "MaxPool", [np.array([[1.0, 3.0, 3.0, 2.0], [3.0, 1.0, 2.0, 3.0]]).reshape(1, 2, 4, 1)],
     dict(ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1], padding="SAME"))
case("avgpool_big_window", "AvgPool", [R(1, 3, 3, 1)], dict(ksize=[1, 5, 5, 1], strides=[1, 1, 1, 1], padding="SAME"))
case("s2bnd_3d", "SpaceToBatchND", [R(2, 6, 2), I(3), I(1, 2).reshape(1, 2)])
case("b2snd_crop", "BatchToSpaceND", [R(6, 2, 2), I(3), I(1, 2).reshape(1, 2)])
case("s2bnd_2blocks_c", "SpaceToBatchND", [R(1, 4, 6, 2, 3), I(2, 3), I(0, 0, 0, 0).reshape(2, 2)])
case("d2s_big", "DepthToSpace", [R(2, 1, 2, 18)], dict(block_size=3))
case("revseq_neg", "ReverseSequence", [R(2, 4, 3), I(4, 1)], dict(seq_dim=-2, batch_dim=0))
case("roll_neg_axis_zero", "Roll", [R(0, 4), I(2), I(-1)])
case("bmm_v1", "BatchMatMul", [R(2, 3, 4), R(2, 5, 4)], dict(adj_y=True))
case("bmmv3_int8", "BatchMatMulV3", [rng.integers(-3, 4, (2, 3, 4)).astype(np.int8), rng.integers(-3, 4, (4, 2)).astype(np.int8)],
     dict(Tout=tf.int32))
case("cumlse_neg_axis", "CumulativeLogsumexp", [R(3, 4), np.array(-2, np.int64)], dict(exclusive=True, reverse=True))
case("cumsum_int64_axis", "Cumsum", [R(3, 4), np.array(-1, np.int64)], dict(reverse=True))
case("intopk_k0", "InTopKV2", [R(3, 4, dt="float32"), I(0, 1, 2), np.array(0, np.int32)], grad=False)
case("intopk_oob", "InTopKV2", [R(2, 4, dt="float32"), I(4, -1), np.array(2, np.int32)], grad=False)
case("linspace_neg", "LinSpace", [np.array(2.0), np.array(-2.0), np.array(5, np.int64)])
case("bcastto_scalar", "BroadcastTo", [np.array(2.0), I(2, 3)])
case("bcastto_same", "BroadcastTo", [R(2, 3), I(2, 3)])
case("bcastto_rank_up", "BroadcastTo", [R(3), I(4, 2, 3)])
case("select_v1_scalar_cond", "Select", [np.array(True), R(2, 3), R(2, 3)])
case("selectv2_only_cond_bc", "SelectV2", [rng.random((2, 3)) > 0.5, np.array(1.0), np.array(-1.0)])
case("addn_one", "AddN", [[R(2, 3)]])
case("xlogy_bc_zero", "Xlogy", [np.array([[0.0], [1.0]]), np.array([0.0, 2.0, 0.5])])
case("squeeze_neg_all", "Squeeze", [R(1, 2, 1)], dict(squeeze_dims=[-3, -1]))
case("pack_scalars", "Pack", [[np.array(1.0), np.array(2.0), np.array(3.0)]], dict(axis=-1))
case("unpack_scalar_out", "Unpack", [R(3)], dict(num=3, axis=-1))
case("split_one", "Split", [np.array(-1, np.int32), R(2, 3)], dict(num_split=1))
case("splitv_neg_mid", "SplitV", [R(2, 7), I(2, -1, 1, dt="int64"), np.array(-1, np.int32)], dict(num_split=3))
case("onehot_neg_ax_3d", "OneHot", [I(1, 0, 2, 1).reshape(2, 2), np.array(3, np.int32), np.array(2.0), np.array(0.5)],
     dict(axis=1), wrt=[2, 3])
case("tile_int64_mult", "Tile", [R(2, 1), I(1, 3, dt="int64")])
case("pad_int64", "Pad", [R(2, 2), I(0, 1, 2, 0, dt="int64").reshape(2, 2)])
case("mirrorpad_int64_sym", "MirrorPad", [R(3, 3), I(3, 0, 1, 2, dt="int64").reshape(2, 2)], dict(mode="SYMMETRIC"))
case("slice_int64", "Slice", [R(3, 4), I(1, 0, dt="int64"), I(-1, 2, dt="int64")])
case("transpose_int64", "Transpose", [R(2, 3, 4), I(1, 2, 0, dt="int64")])
case("reshape_int64", "Reshape", [R(2, 3), I(-1, dt="int64")])
case("expanddims_int64", "ExpandDims", [R(2), np.array(-2, np.int64)])
case("argmax_i64_axis_neg", "ArgMax", [R(2, 3, 4), np.array(-2, np.int64)], dict(output_type=tf.int32), grad=False)
case("topk_k_eq_n", "TopKV2", [np.array([2.0, 2.0, 1.0, 3.0]), np.array(4, np.int32)], dict(sorted=False))
case("gathernd_scalar_out", "GatherNd", [R(3, 4), I(2, 1, 0, 3).reshape(2, 2)])
case("gathernd_int64", "GatherNd", [R(3, 4), I(2, 0, dt="int64").reshape(2, 1)])
case("scatternd_2d_idx", "ScatterNd", [I(0, 1, 2, 0, 0, 1).reshape(3, 2), R(3), I(3, 2)], wrt=[1])
case("tsadd_slices", "TensorScatterAdd", [R(3, 4), I(2, 0).reshape(2, 1), R(2, 4)], wrt=[0, 2])
case("tsupdate_dup", "TensorScatterUpdate", [R(4), I(1, 1).reshape(2, 1), np.array([5.0, 6.0])], wrt=[0], grad=True)
case("cross_bc_batch", "Cross", [R(2, 2, 3), R(2, 2, 3)])
case("bandpart_neg", "MatrixBandPart", [R(4, 4), np.array(-1, np.int64), np.array(0, np.int64)])
case("bandpart_int32", "MatrixBandPart", [R(3, 4), np.array(1, np.int32), np.array(2, np.int32)])
case("matrixdiagv3_k0", "MatrixDiagV3", [R(2, 3), np.array(0, np.int32), np.array(-1, np.int32), np.array(-1, np.int32),
                                          np.array(0.0)], wrt=[0])
case("matrixdiagv3_rect", "MatrixDiagV3", [R(3), np.array(1, np.int32), np.array(3, np.int32), np.array(5, np.int32),
                                            np.array(9.0)], wrt=[0, 4], dyn=False)

# ------------------------------------------------------------------ running
def graph(name, fn, inputs, wrt=None, order2=True):
    """A small graph of several ops: ``fn(ops, *inputs)`` with ``ops`` tf.raw_ops or sf.ops,
    keyword arguments by OpDef name."""
    CASES.append(dict(name=name, op=None, fn=fn, inputs=inputs, attrs={}, wrt=wrt, grad=True, order2=order2,
                      dyn=True, skip_outs=()))


def flat_inputs(inputs):
    out = []
    for x in inputs:
        out.extend(x if isinstance(x, list) else [x])
    return out


def regroup(inputs, flat):
    out, k = [], 0
    for x in inputs:
        if isinstance(x, list):
            out.append(list(flat[k:k + len(x)]))
            k += len(x)
        else:
            out.append(flat[k])
            k += 1
    return out


def tf_kwargs(op, grouped, attrs):
    opdef = get_op(op)
    kw = {RENAMED.get((op, a.name), a.name): v for a, v in zip(opdef.inputs, grouped)}
    kw.update({RENAMED.get((op, k), k): v for k, v in attrs.items()})
    return kw


def sf_attrs(attrs):
    return {k: (sf.as_dtype(v.name) if isinstance(v, tf.dtypes.DType) else v) for k, v in attrs.items()}


def vec(ops, *v):
    return (tf.constant if ops is tf.raw_ops else sf.constant)(np.array(v, np.int32))


def _weights(like, salt):
    n = int(np.prod(like.shape))
    return ((np.arange(n) * (3 + salt)) % 7 * 0.3 - 0.8).reshape(like.shape).astype(like.dtype.name if hasattr(like.dtype, "name") else like.dtype)


def outs_list(y):
    return list(y) if isinstance(y, (list, tuple)) else [y]


def is_float(dt):
    return np.dtype(dt).kind in "fc" or np.dtype(dt).name == "bfloat16"


NHWC_OPS = {"Conv2D", "Conv2DBackpropInput", "DepthwiseConv2dNative", "MaxPool", "AvgPool", "MaxPoolV2", "DepthToSpace", "SpaceToDepth"}


def _to_nhwc(v):
    return [v[0], v[2], v[3], v[1]]


def call_tf(op, grouped, attrs):
    """TF's op; an NCHW form its CPU kernels refuse runs as its NHWC form between transposes
    (gradients flow through the transposes), the reference for specflow's NCHW kernels."""
    fn = getattr(tf.raw_ops, op)
    if op not in NHWC_OPS or attrs.get("data_format") != "NCHW":
        return outs_list(fn(**tf_kwargs(op, grouped, attrs)))
    a = dict(attrs, data_format="NHWC")
    for k in ("strides", "ksize", "dilations"):
        if k in a:
            a[k] = _to_nhwc(a[k])
    if "explicit_paddings" in a:
        e = a["explicit_paddings"]
        a["explicit_paddings"] = e[0:2] + e[4:8] + e[2:4]
    g = list(grouped)
    if op == "Conv2DBackpropInput":  # (input_sizes, filter, out_backprop)
        g[0] = tf.constant(_to_nhwc(list(np.asarray(g[0]))), tf.int32)
        g[2] = tf.transpose(g[2], [0, 2, 3, 1])
    else:
        g[0] = tf.transpose(g[0], [0, 2, 3, 1])
    if op == "MaxPoolV2":
        g[1] = tf.constant(_to_nhwc(list(np.asarray(g[1]))), tf.int32)
        g[2] = tf.constant(_to_nhwc(list(np.asarray(g[2]))), tf.int32)
    ys = outs_list(fn(**tf_kwargs(op, g, a)))
    return [tf.transpose(y, [0, 3, 1, 2]) if y.shape.rank == 4 else y for y in ys]


def run_tf_eager(c, flat, wrt):
    """TF's outputs, first-order gradients (seeded with fixed grad_ys) and second-order ones."""
    consts = [tf.constant(x) for x in flat]
    with tf.GradientTape(persistent=True) as t2:
        for i in wrt:
            t2.watch(consts[i])
        with tf.GradientTape() as t1:
            for i in wrt:
                t1.watch(consts[i])
            ys = outs_list(c["fn"](tf.raw_ops, *consts)) if c.get("fn") else call_tf(c["op"], regroup(c["inputs"], consts), c["attrs"])
        fys = [y for y in ys if y.dtype.is_floating]
        seeds = [tf.constant(_weights(y.numpy(), k)) for k, y in enumerate(fys)]
        g1 = t1.gradient(fys, [consts[i] for i in wrt], output_gradients=seeds) if (c["grad"] and wrt and fys) else []
        g1 = [None if g is None else tf.convert_to_tensor(g) for g in g1]
        live = [g for g in g1 if g is not None]
        loss2 = tf.add_n([tf.reduce_sum(g * _weights(g.numpy(), 5 + k)) for k, g in enumerate(live)]) \
            if live and c["order2"] else None
    g2 = t2.gradient(loss2, [consts[i] for i in wrt]) if loss2 is not None else []
    conv = lambda gs: [None if g is None else tf.convert_to_tensor(g).numpy() for g in gs]  # noqa: E731
    return [y.numpy() for y in ys], conv(g1), conv(g2)


def run_sf_eager(c, flat, wrt):
    fn = getattr(sf.ops, c["op"]) if not c.get("fn") else None
    consts = [sf.constant(x) for x in flat]
    with sf.GradientTape(persistent=True) as t2:
        for i in wrt:
            t2.watch(consts[i])
        with sf.GradientTape() as t1:
            for i in wrt:
                t1.watch(consts[i])
            ys = outs_list(c["fn"](sf.ops, *consts) if c.get("fn") else fn(*regroup(c["inputs"], consts), **sf_attrs(c["attrs"])))
        fys = [y for y in ys if is_float(y.dtype.numpy)]
        seeds = [sf.constant(_weights(np.asarray(y.numpy()), k)) for k, y in enumerate(fys)]
        g1 = t1.gradient(fys, [consts[i] for i in wrt], output_gradients=seeds) if (c["grad"] and wrt and fys) else []
        g1 = [None if g is None else sf.convert_to_tensor(g) for g in g1]
        live = [g for g in g1 if g is not None]
        loss2 = sf.add_n([sf.reduce_sum(g * _weights(np.asarray(g.numpy()), 5 + k)) for k, g in enumerate(live)]) \
            if live and c["order2"] else None
    g2 = t2.gradient(loss2, [consts[i] for i in wrt]) if loss2 is not None else []
    conv = lambda gs: [None if g is None else np.asarray(sf.convert_to_tensor(g).numpy()) for g in gs]  # noqa: E731
    return [np.asarray(y.numpy()) for y in ys], conv(g1), conv(g2)


def run_sf_function(c, flat, wrt, want, feed_all=False):
    """The op in an ``sf.function`` traced with every dim unknown, ``sf.gradients`` (grad_ys
    seeded) of it and of a weighted sum of those: specflow's gradient construction on shapes
    only known at run time."""
    ys_w, g1_w, g2_w = want
    fed = [i for i, x in enumerate(flat) if is_float(x.dtype) or feed_all]
    specs = [sf.TensorSpec([None] * flat[i].ndim, sf.as_dtype(flat[i].dtype.name)) for i in fed]
    fn = getattr(sf.ops, c["op"]) if not c.get("fn") else None

    @sf.function(input_signature=specs)
    def f(*args):
        xs = [sf.constant(x) for x in flat]
        for i, a in zip(fed, args):
            xs[i] = a
        ys = outs_list(c["fn"](sf.ops, *xs) if c.get("fn") else fn(*regroup(c["inputs"], xs), **sf_attrs(c["attrs"])))
        outs = list(ys)
        if g1_w:
            fys = [y for y in ys if is_float(y.dtype.numpy)]
            skip = {sum(is_float(w.dtype) for w in ys_w[:j]) for j in c["skip_outs"]}
            seeds = [sf.zeros_like(y) if k in skip else sf.reshape(_weights(w, k), sf.shape(y))
                     for k, (y, w) in enumerate(zip(fys, [w for w in ys_w if is_float(w.dtype)]))]
            g1 = sf.gradients(fys, [xs[i] for i in wrt], grad_ys=seeds)
            live = [sf.convert_to_tensor(g) for g in g1 if g is not None]
            outs += live
            if g2_w:
                gw = [w for w in g1_w if w is not None]
                loss2 = sf.add_n([sf.reduce_sum(g * sf.reshape(_weights(w, 5 + k), sf.shape(g)))
                                  for k, (g, w) in enumerate(zip(live, gw))])
                outs += [sf.convert_to_tensor(g) for g in sf.gradients([loss2], [xs[i] for i in wrt]) if g is not None]
        return outs

    got = [np.asarray(t.numpy()) for t in f(*[flat[i] for i in fed])]
    want_flat = ys_w + [g for g in g1_w if g is not None] + [g for g in g2_w if g is not None]
    if len(got) != len(want_flat):
        return [f"{len(got)} outputs vs {len(want_flat)}"]
    keep = [k for k in range(len(got)) if k not in c["skip_outs"]]
    return compare({k: got[k] for k in keep}, {k: want_flat[k] for k in keep}, check_dtype=True)


def run_spec(c, flat, want):
    """The op as a YAML spec's node (specflow's own front end): float and list inputs declared as
    spec inputs, the other inputs written as literals under their OpDef names, attrs as keys;
    lowered, run by specflow's Session, outputs compared with TF's."""
    import yaml

    from specflow.runtime.session import Session
    from specflow.schema.loader import load_spec_text

    opdef = get_op(c["op"])
    decl, node, feeds, pos, k = {}, {"op": c["op"]}, {}, [], 0
    for j, (arg, x) in enumerate(zip(opdef.inputs, c["inputs"])):
        items = x if isinstance(x, list) else [x]
        names = []
        for it in items:  # the data input, float ones and lists are declared; the rest literals
            if j == 0 or isinstance(x, list) or is_float(it.dtype) or it.size == 0:
                name = f"x{k}"
                decl[name] = {"dtype": it.dtype.name, "shape": list(it.shape)}
                feeds[name] = it
                names.append(name)
            else:
                node[arg.name] = it.tolist()
            k += 1
        if names:
            pos.append(names if isinstance(x, list) else names[0])
    if any(isinstance(p, list) for p in pos):
        flat_pos = [q for p in pos for q in (p if isinstance(p, list) else [p])]
        if len(pos) != 1:
            return []  # a list input beside others: positional order is ambiguous in a spec
        pos = flat_pos
    # positional inputs fill the OpDef's inputs in order, the literals the rest: only when the
    # fed ones come first (Split's axis, Conv2DBackpropInput's sizes lead: skip those)
    fed_args = [a.name for a, x in zip(opdef.inputs, c["inputs"]) if a.name not in node]
    if fed_args != [a.name for a in opdef.inputs][:len(fed_args)]:
        return []
    node["inputs"] = pos
    node.update({a: (v.name if isinstance(v, tf.dtypes.DType) else v) for a, v in c["attrs"].items()})
    text = yaml.safe_dump({"specflow": 1, "name": "t", "inputs": decl, "nodes": {"y": node}}, sort_keys=False)
    spec = load_spec_text(text, "t.yaml")
    ys_w = want[0]
    fetch = [spec.resolve("y" if j == 0 else f"y:{j}") for j in range(len(ys_w))]
    if opdef.outputs and opdef.outputs[0].is_list:  # a list output: y:0 .. y:n-1
        fetch = [spec.resolve(f"y:{j}") for j in range(len(ys_w))]
    with Session(spec.graph_def) as sess:
        got = sess.run(fetch, {spec.resolve(n): v for n, v in feeds.items()})
    COUNTS["spec"] += 1
    keep = [j for j in range(len(got)) if j not in c["skip_outs"]]
    return compare({j: got[j] for j in keep}, {j: ys_w[j] for j in keep}, check_dtype=True)


def run_graph(c, flat, wrt, want, tmp, dynamic=False, feed_all=False):
    """The op and its tape gradients traced by TF (the op's own data_format: tracing needs no
    kernel), float inputs fed, the rest constants; run by specflow's loader and compared with
    TF's eager values ``want``."""
    fn = getattr(tf.raw_ops, c["op"]) if not c.get("fn") else None
    fed = [i for i, x in enumerate(flat) if is_float(x.dtype) or feed_all]
    specs = [tf.TensorSpec([None] * flat[i].ndim if dynamic else flat[i].shape, tf.as_dtype(flat[i].dtype)) for i in fed]
    ys_w, g1_w, g2_w = want

    @tf.function(input_signature=specs)
    def f(*args):
        xs = [tf.constant(x) for x in flat]
        for i, a in zip(fed, args):
            xs[i] = a
        with tf.GradientTape(persistent=True) as t2:
            for i in wrt:
                t2.watch(xs[i])
            with tf.GradientTape() as t1:
                for i in wrt:
                    t1.watch(xs[i])
                ys = outs_list(c["fn"](tf.raw_ops, *xs) if c.get("fn") else fn(**tf_kwargs(c["op"], regroup(c["inputs"], xs), c["attrs"])))
            fys = [y for y in ys if y.dtype.is_floating]
            outs = list(ys)
            if g1_w:
                seeds = [tf.constant(_weights(y, k)) for k, y in enumerate(w for w in ys_w if is_float(w.dtype))]
                if dynamic:  # seeds of the outputs' traced (unknown) shapes
                    seeds = [tf.reshape(s, tf.shape(y)) for s, y in zip(seeds, fys)]
                g1 = t1.gradient(fys, [xs[i] for i in wrt], output_gradients=seeds)
                live = [tf.convert_to_tensor(g) for g in g1 if g is not None]
                outs += live
                if g2_w:
                    gw = [w for w in g1_w if w is not None]
                    loss2 = tf.add_n([tf.reduce_sum(g * tf.reshape(_weights(w, 5 + k), tf.shape(g)))
                                      for k, (g, w) in enumerate(zip(live, gw))])
                    outs += [tf.convert_to_tensor(g) for g in t2.gradient(loss2, [xs[i] for i in wrt]) if g is not None]
        return outs

    try:
        cf = f.get_concrete_function()
    except (ValueError, TypeError):
        if feed_all:  # TF cannot trace it with these inputs unknown (SpaceToBatchND's block_shape): not ours
            return []
        raise
    want_flat = ys_w + [g for g in g1_w if g is not None] + [g for g in g2_w if g is not None]
    got = run_in_specflow(cf, [flat[i] for i in fed], tmp_path(tmp, c["name"] + "_dyn" * dynamic + "_all" * feed_all))
    if len(got) != len(want_flat):
        return [f"{len(got)} graph outputs vs {len(want_flat)}"]
    keep = [k for k in range(len(got)) if k not in c["skip_outs"]]
    return compare({k: got[k] for k in keep}, {k: want_flat[k] for k in keep})


def why(e) -> str:
    """An exception in one line: its type and last message line (TF's 'in user code' errors
    put the cause last)."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[-1] if lines else ''}"[:240]


def cmp_lists(tag, got, want):
    bad = []
    if len(got) != len(want):
        return [f"{tag}: {len(got)} results vs TF {len(want)}"]
    for k, (g, w) in enumerate(zip(got, want)):
        if (g is None) != (w is None):
            bad.append(f"{tag}[{k}] {'None' if g is None else 'a value'} vs TF {'None' if w is None else 'a value'}")
        elif g is not None:
            bad += [f"{tag}[{k}] " + b for b in compare({0: g}, {0: w}, check_dtype=True)]
    return bad


def run_case(c, tmp):
    flat = flat_inputs(c["inputs"])
    wrt = c["wrt"] if c["wrt"] is not None else [i for i, x in enumerate(flat) if is_float(x.dtype)]
    try:
        want = run_tf_eager(c, flat, wrt)
    except Exception as e:  # TF refuses (an attr its CPU kernels lack): its forward alone, else skip
        try:
            c = dict(c, grad=False)
            want = run_tf_eager(c, flat, wrt)
        except Exception:
            return None, f"TF refused: {str(e).splitlines()[0][:150]}"
    bad = []
    try:
        got = run_sf_eager(c, flat, wrt)
        for tag, g, w in zip(("out", "grad", "grad2"), got, want):
            if tag == "out":
                g, w = ([None if k in c["skip_outs"] else v for k, v in enumerate(vs)] for vs in (g, w))
            bad += cmp_lists("eager " + tag, g, w)
    except Exception as e:
        bad.append(f"eager EXC {why(e)}")
    try:
        bad += ["graph " + b for b in run_graph(c, flat, wrt, want, tmp)]
    except Exception as e:
        bad.append(f"graph EXC {why(e)}")
    if c["dyn"]:
        try:
            bad += ["dyn graph " + b for b in run_graph(c, flat, wrt, want, tmp, dynamic=True)]
        except Exception as e:
            bad.append(f"dyn graph EXC {why(e)}")
    try:
        bad += ["sf.function " + b for b in run_sf_function(c, flat, wrt, want)]
    except Exception as e:
        bad.append(f"sf.function EXC {why(e)}")
    if not c.get("fn"):
        try:
            bad += ["spec " + b for b in run_spec(c, flat, want)]
        except Exception as e:
            bad.append(f"spec EXC {why(e)}")
    if FEED_ALL and len(flat) > len([x for x in flat if is_float(x.dtype)]):
        if c["dyn"]:
            try:
                bad += ["fed graph " + b for b in run_graph(c, flat, wrt, want, tmp, dynamic=True, feed_all=True)]
            except Exception as e:
                bad.append(f"fed graph EXC {why(e)}")
        try:
            bad += ["fed sf.function " + b for b in run_sf_function(c, flat, wrt, want, feed_all=True)]
        except Exception as e:
            bad.append(f"fed sf.function EXC {why(e)}")
    return bad, None


# ------------------------------------------------------------------ small graphs of several ops
def K(ops, op, *args, **kw):
    """``op`` from ``ops`` (tf.raw_ops or sf.ops) with keywords by OpDef name (tf.raw_ops' own
    Python names where they differ)."""
    if ops is tf.raw_ops:
        kw = {RENAMED.get((op, k), k): v for k, v in kw.items()}
        return getattr(ops, op)(**kw)
    return getattr(ops, op)(**sf_attrs(kw))


def i32(ops, *v):
    return (tf.constant if ops is tf.raw_ops else sf.constant)(np.array(v if len(v) != 1 else v[0], np.int32))


graph("g_conv_bias_relu_pool_dense", lambda o, x, f, bias, w: [K(o, "MatMul", a=K(o, "Reshape", tensor=K(o, "MaxPool", input=K(
    o, "Relu", features=K(o, "BiasAdd", value=K(o, "Conv2D", input=x, filter=f, strides=[1, 1, 1, 1], padding="SAME"), bias=bias)),
    ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID"), shape=i32(o, 2, -1)), b=w)],
    [R(2, 4, 4, 2), R(3, 3, 2, 3), R(3), R(12, 2)])
graph("g_reuse_broadcast", lambda o, x: [K(o, "AddV2", x=K(o, "Mul", x=x, y=x), y=K(o, "Sum", input=x, reduction_indices=i32(o, 1),
                                                                                   keep_dims=True)),
                                          K(o, "Max", input=x, reduction_indices=i32(o, 0, 1))], [R(3, 4)])
graph("g_unconnected_output", lambda o, a, b: [K(o, "Mul", x=a, y=a), K(o, "Cast", x=K(o, "Shape", input=b), DstT=tf.float64)],
      [R(2, 3), R(4)])
graph("g_int_and_float_out", lambda o, x: [K(o, "ArgMax", input=x, dimension=i32(o, 1)), K(o, "Softmax", logits=x)], [R(3, 4)])
graph("g_nan_safe_where", lambda o, x: [K(o, "SelectV2", condition=K(o, "Greater", x=x, y=K(o, "ZerosLike", x=x)),
                                                t=K(o, "Sqrt", x=x), e=K(o, "ZerosLike", x=x))],
      [np.array([-1.0, 0.5, 2.0, -0.2])], order2=False)
graph("g_double_where", lambda o, x: [K(o, "SelectV2", condition=K(o, "Greater", x=x, y=K(o, "ZerosLike", x=x)),
                                              t=K(o, "Sqrt", x=K(o, "SelectV2", condition=K(o, "Greater", x=x, y=K(o, "ZerosLike", x=x)),
                                                                      t=x, e=K(o, "OnesLike", x=x))),
                                              e=K(o, "ZerosLike", x=x))], [np.array([-1.0, 0.5, 2.0, -0.2])])
graph("g_slices_of_one", lambda o, x: [K(o, "ConcatV2", values=[K(o, "StridedSlice", input=x, begin=i32(o, 0, 1), end=i32(o, 0, 3),
                                                                          strides=i32(o, 1, 1), begin_mask=1, end_mask=1),
                                                                   K(o, "GatherV2", params=x, indices=i32(o, 2, 0), axis=i32(o, 1)), x],
                                                 axis=i32(o, 1))], [R(2, 4)])
graph("g_logsoftmax_sparse_ce", lambda o, x, w: list(K(o, "SparseSoftmaxCrossEntropyWithLogits",
                                                       features=K(o, "MatMul", a=x, b=w), labels=i32(o, 0, 2, 1))),
      [R(3, 4), R(4, 3)])
graph("g_fbn_train_relu_mean", lambda o, x, sc, of: [K(o, "Mean", input=K(o, "Relu", features=K(o, "FusedBatchNormV3", x=x, scale=sc, offset=of,
                                                                                              mean=K(o, "ZerosLike", x=sc), variance=K(o, "ZerosLike", x=sc),
                                                                                              is_training=True, epsilon=0.001)[0]),
                                                              reduction_indices=i32(o, 0, 1, 2))],
      [R(2, 3, 3, 2, dt="float32"), R(2, dt="float32", pos=True), R(2, dt="float32")], order2=False)
graph("g_cumsum_cumprod", lambda o, x: [K(o, "Cumprod", x=K(o, "Cumsum", x=x, axis=i32(o, 1), reverse=True), axis=i32(o, 0), exclusive=True)],
      [R(3, 4)])
graph("g_resize_conv", lambda o, x, f: [K(o, "Conv2D", input=K(o, "ResizeBilinear", images=x, size=i32(o, 5, 5), half_pixel_centers=True),
                                            filter=f, strides=[1, 2, 2, 1], padding="VALID")],
      [R(1, 3, 3, 2, dt="float32"), R(2, 2, 2, 1, dt="float32")], order2=False)
graph("g_addn_l2", lambda o, x, y: [K(o, "AddN", inputs=[x, x, y]), K(o, "L2Loss", t=K(o, "Sub", x=x, y=y))], [R(2, 3), R(2, 3)])
graph("g_pack_unpack", lambda o, x, y: [K(o, "Pack", values=[K(o, "Mul", x=a, y=b) for a, b in zip(
    K(o, "Unpack", value=x, num=3, axis=1), K(o, "Unpack", value=y, num=3, axis=-1))], axis=0)], [R(2, 3), R(2, 3)])
graph("g_partition_stitch", lambda o, x: [K(o, "DynamicStitch", indices=K(o, "DynamicPartition", data=i32(o, 0, 1, 2, 3, 4),
                                                                                     partitions=i32(o, 1, 0, 1, 1, 0), num_partitions=2),
                                                  data=[K(o, "Mul", x=p, y=p) for p in K(o, "DynamicPartition", data=x,
                                                                                        partitions=i32(o, 1, 0, 1, 1, 0), num_partitions=2)])],
      [R(5, 2)])
graph("g_topk_gather", lambda o, x: [K(o, "GatherV2", params=x, indices=K(o, "TopKV2", input=x, k=i32(o, 2))[1], axis=i32(o, 1),
                                           batch_dims=1)], [R(3, 5)])
graph("g_einsum_transpose_tile", lambda o, a, b: [K(o, "Tile", input=K(o, "Transpose", x=K(o, "Einsum", inputs=[a, b], equation="bij,jk->bki"),
                                                                           perm=i32(o, 2, 0, 1)), multiples=i32(o, 1, 2, 1))],
      [R(2, 3, 4), R(4, 2)])
graph("g_softmax_xent_bcast", lambda o, x, y: list(K(o, "SoftmaxCrossEntropyWithLogits", features=K(o, "AddV2", x=x, y=y),
                                                     labels=K(o, "Softmax", logits=y))), [R(3, 4), R(1, 4)])
graph("g_select_bcast_grad", lambda o, x, y: [K(o, "SelectV2", condition=K(o, "Less", x=x, y=y), t=x, e=y)], [R(3, 1), R(1, 4)])
graph("g_pow_chain", lambda o, x: [K(o, "Pow", x=K(o, "Square", x=x), y=K(o, "Reciprocal", x=K(o, "AddV2", x=K(o, "Abs", x=x),
                                                                                              y=K(o, "OnesLike", x=x))))],
      [R(4)])
graph("g_stopgrad_mix", lambda o, x: [K(o, "Mul", x=K(o, "StopGradient", input=x), y=x)], [R(3)])
graph("g_identityn", lambda o, x, y: list(K(o, "IdentityN", input=[K(o, "Exp", x=x), y])), [R(2), R(3)])
graph("g_mean_of_empty_batch", lambda o, x: [K(o, "Mean", input=x, reduction_indices=i32(o, 0), keep_dims=False)], [R(0, 3)])
graph("g_xlogy_entropy", lambda o, p: [K(o, "Neg", x=K(o, "Sum", input=K(o, "Xlogy", x=p, y=p), reduction_indices=i32(o, -1)))],
      [np.array([[0.0, 0.3, 0.7], [0.5, 0.5, 0.0]])])
graph("g_clip_norm", lambda o, x: [K(o, "Mul", x=x, y=K(o, "Rsqrt", x=K(o, "Maximum", x=K(o, "Sum", input=K(o, "Square", x=x),
                                                                                                    reduction_indices=i32(o, 1), keep_dims=True),
                                                                                    y=K(o, "Fill", dims=i32(o, 1, 1), value=np.float64(1e-3)))))],
      [R(3, 4)])
graph("g_matmul_bmm_bcast", lambda o, a, b, c: [K(o, "BatchMatMulV2", x=K(o, "MatMul", a=a, b=b, transpose_b=True), y=c, adj_y=True)],
      [R(3, 4), R(5, 4), R(2, 6, 5)])
graph("g_reverse_roll", lambda o, x: [K(o, "Roll", input=K(o, "ReverseV2", tensor=x, axis=vec(o, -1)), shift=i32(o, 1), axis=i32(o, 0))],
      [R(3, 4)])
graph("g_onehot_matmul", lambda o, w: [K(o, "MatMul", a=K(o, "OneHot", indices=i32(o, 2, 0, 1), depth=i32(o, 4), on_value=np.float64(1.0),
                                                           off_value=np.float64(0.0)), b=w)], [R(4, 3)])


def api_checks() -> list[str]:
    """tf.gradients' own options inside a traced function, against sf.gradients in sf.function:
    a None entry in grad_ys (ones), stop_gradients, a repeated y, an unconnected x, and
    gradients of gradients seeded with grad_ys."""
    x0 = np.array([1.0, -2.0, 3.0])

    def body(T, x):
        y1, y2 = x * x, T.reduce_sum(T.sin(x))
        m = T.exp(x)
        g1 = T.gradients([y1, y2], [x], grad_ys=[None, T.constant(2.0, x.dtype)])
        g2 = T.gradients(m * x, x, stop_gradients=[m])
        g3 = T.gradients([y1, y1], [x, m])
        ones = T.gradients([y1, y2], [x], grad_ys=[T.ones_like(y1), T.constant(2.0, x.dtype)])
        gg = T.gradients([ones[0]], [x])
        gg2 = T.gradients([T.reduce_sum(ones[0] * ones[0])], [x], grad_ys=[T.constant(3.0, x.dtype)])
        single = T.gradients(y1, x)  # a tensor, not a list: tf.gradients still returns a list
        return [g1[0], g2[0], g3[0], gg[0], gg2[0], T.zeros(1, x.dtype) if g3[1] is None else g3[1], single[0]]

    tf_f = tf.function(lambda x: body(tf, x), input_signature=[tf.TensorSpec([None], tf.float64)])
    sf_f = sf.function(lambda x: body(sf, x), input_signature=[sf.TensorSpec([None], sf.float64)])
    want = [t.numpy() for t in tf_f(tf.constant(x0))]
    got = [np.asarray(t.numpy()) for t in sf_f(x0)]
    what = ["grad_ys [None, 2]", "stop_gradients", "repeated y", "grad of grad", "grad of grad, grad_ys", "unconnected x",
            "a single y and x (not lists)"]
    return [f"sf.gradients {w}: {b}" for w, g, t in zip(what, got, want) for b in compare({0: g}, {0: t})]


COUNTS = {"spec": 0}
FEED_ALL = False  # --feed-all: integer and bool inputs (axes, sizes, masks' begin/end) fed too, not constants


def main(pick):
    global FEED_ALL
    FEED_ALL = "--feed-all" in pick
    pick = [p for p in pick if p != "--feed-all"]
    tmp = tempfile.mkdtemp()
    fails = refused = 0
    n = 0
    # the several-op graphs first: a TF trace that fails in --feed-all mode (tapes left open in its
    # graph) breaks later traces of tf.function in the same process
    for c in sorted(CASES, key=lambda c: not c.get("fn")):
        if pick and not any(fnmatch.fnmatchcase(c["name"], p) for p in pick):
            continue
        n += 1
        bad, why = run_case(c, tmp)
        if why:
            refused += 1
            print(f"SKIP {c['name']}: {why}", flush=True)
        elif bad:
            fails += 1
            print(f"FAIL {c['name']}: {'; '.join(bad)}"[:600], flush=True)
    if not pick or any(fnmatch.fnmatchcase("api", p) for p in pick):
        for b in api_checks():
            fails += 1
            print(f"FAIL api: {b}", flush=True)
    print(f"{n} cases ({COUNTS['spec']} also as spec nodes), {fails} failing, {refused} refused by TF")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
