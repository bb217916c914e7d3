"""Writes tests/ops/data/tf_tfops.json: TensorFlow's outputs (or its refusal) for the kernel cases
of QuantizeAndDequantizeV2/V3/V4/V4Grad, Dilation2D and its backprops, SparseFillEmptyRows(+Grad),
SparseReshape and StatelessShuffle, so the suite checks specflow against TF's numbers without TF
(tests/ops/cases_tfops.py). Run with a scratch TensorFlow (never a dependency of specflow)::

    /work/scratch/tfvenv/bin/python scripts/make_tfops_fixtures.py

Each entry: ``id``, ``op``, ``attrs``, ``inputs`` (in the OpDef's order) and either ``outputs`` or
``error`` (TF's message: specflow must refuse the same input). Values are exact (float32 values
written as the doubles they are); inputs come from a seeded numpy generator, so a rerun gives the
same file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "tests" / "ops" / "data" / "tf_tfops.json"
ARGS = {
    "QuantizeAndDequantizeV2": ["input", "input_min", "input_max"],
    "QuantizeAndDequantizeV3": ["input", "input_min", "input_max", "num_bits"],
    "QuantizeAndDequantizeV4": ["input", "input_min", "input_max"],
    "QuantizeAndDequantizeV4Grad": ["gradients", "input", "input_min", "input_max"],
    "Dilation2D": ["input", "filter"],
    "Dilation2DBackpropInput": ["input", "filter", "out_backprop"],
    "Dilation2DBackpropFilter": ["input", "filter", "out_backprop"],
    "SparseFillEmptyRows": ["indices", "values", "dense_shape", "default_value"],
    "SparseFillEmptyRowsGrad": ["reverse_index_map", "grad_values"],
    "SparseReshape": ["input_indices", "input_shape", "new_shape"],
    "StatelessShuffle": ["value", "key", "counter", "alg"],
}
rng = np.random.default_rng(2026)
F32, F64, I64 = np.float32, np.float64, np.int64
nan, inf = float("nan"), float("inf")
CASES = []


def case(id_, op, inputs, **attrs):
    CASES.append((id_, op, [np.asarray(x) for x in inputs], attrs))


def normal(*shape, dtype=F32, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


# --- QuantizeAndDequantize ----------------------------------------------------------------------
q = "QuantizeAndDequantizeV"
x34 = normal(3, 4, scale=2)
case("qdq_v2_own_range", q + "2", [x34, F32(0), F32(0)])
ties = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 9.0, -9.0], F32) / F32(2)
case("qdq_v2_given_narrow_half_up", q + "2", [ties, F32(-3), F32(3)], range_given=True, narrow_range=True,
     round_mode="HALF_UP", num_bits=4)
case("qdq_v2_given_half_even", q + "2", [ties, F32(-3), F32(3)], range_given=True, narrow_range=True, num_bits=4)
x234 = normal(2, 3, 4)
case("qdq_v2_axis1_unsigned", q + "2", [x234, np.zeros(3, F32), np.zeros(3, F32)], axis=1, signed_input=False, num_bits=3)
# TF 2.21's V2/V4 kernels refuse a per-slice range that is given ("input_min must be a scalar.", a
# check of theirs that ignores axis); V3's kernel, the same arithmetic, gives these (``via``)
case("qdq_v4_axis0_given_f64", q + "4", [normal(3, 5, dtype=F64, scale=2), np.array([-1, 0.5, -3], F64),
                                          np.array([1, 2, 0.25], F64)], axis=0, range_given=True, num_bits=5, via=q + "3")
case("qdq_v4_axis2_given", q + "4", [normal(2, 2, 3, scale=2), np.array([-1, -2, 0], F32), np.array([1, 0, 0], F32)],
     axis=2, range_given=True, via=q + "3")
case("qdq_v4_own_range_axis0_unsigned", q + "4", [normal(4, 3), np.zeros(4, F32), np.zeros(4, F32)], axis=0,
     signed_input=False, narrow_range=True, num_bits=2)
case("qdq_v3_bits5", q + "3", [x34, F32(-1.5), F32(2.5), np.int32(5)], signed_input=False, narrow_range=True)
case("qdq_v3_axis1", q + "3", [x34, np.array([-1, -2, 0, -0.5], F32), np.array([1, 2, 3, 0.5], F32), np.int32(3)], axis=1)
case("qdq_v2_nan_inf_own_range", q + "2", [np.array([1.0, nan, -2.0, 0.4], F32), F32(0), F32(0)])
case("qdq_v2_inf_own_range", q + "2", [np.array([1.0, inf, -2.0], F32), F32(0), F32(0)])
case("qdq_v2_zero_range_given", q + "2", [np.array([-1.3, -0.5, 0.0, 0.26, 2.5], F32), F32(0), F32(0)], range_given=True)
case("qdq_v2_scalar_40_bits", q + "2", [F32(0.3), F32(-1), F32(1)], range_given=True, num_bits=40)
case("qdq_v2_empty", q + "2", [np.zeros((0, 3), F32), F32(0), F32(0)])
case("qdq_v4_grad", q + "4Grad", [normal(3, 4), x34, F32(-1), F32(1.5)])
case("qdq_v4_grad_axis1_f64", q + "4Grad", [normal(2, 3, 4, dtype=F64), x234.astype(F64), np.array([-1, 0, -0.5]),
                                             np.array([1, 0.5, 0.2])], axis=1)
case("qdq_err_bad_range", q + "2", [x34, F32(1), F32(-1)], range_given=True)
case("qdq_err_bits", q + "2", [x34, F32(0), F32(0)], num_bits=62)
case("qdq_err_axis_rank", q + "2", [x34, np.zeros(1, F32), np.zeros(1, F32)], axis=2)
case("qdq_err_range_size", q + "4", [x34, np.zeros(2, F32), np.zeros(2, F32)], axis=1, range_given=True)
case("qdq_err_v3_bits_vector", q + "3", [x34, F32(-1), F32(1), np.array([3], np.int32)])
case("qdq_err_grad_shapes", q + "4Grad", [normal(4), x34, F32(-1), F32(1)])

# --- Dilation2D ---------------------------------------------------------------------------------
for id_, xs, fs, s, r, pad, dtype in [
    ("same", (2, 5, 6, 3), (2, 3, 3), (1, 1), (1, 1), "SAME", F32),
    ("same_strided_rates", (1, 7, 7, 2), (3, 2, 2), (2, 1), (2, 3), "SAME", F32),
    ("valid", (2, 6, 5, 1), (2, 2, 1), (2, 2), (1, 2), "VALID", F64),
    ("padding_only_window", (1, 1, 3, 1), (2, 1, 1), (1, 1), (3, 1), "SAME", F32),
    ("int32_ties", (1, 4, 4, 2), (2, 2, 2), (1, 1), (1, 1), "SAME", np.int32),
]:
    if dtype == np.int32:
        x, f = rng.integers(-3, 3, xs).astype(dtype), rng.integers(-1, 2, fs).astype(dtype)
    else:
        x, f = normal(*xs, dtype=dtype), normal(*fs, dtype=dtype)
        x[0, 0, :2, 0] = 1.0  # equal sums: the first tap wins
        f[..., 0] = np.round(f[..., 0])
    attrs = dict(strides=[1, *s, 1], rates=[1, *r, 1], padding=pad)
    y = tf.raw_ops.Dilation2D(input=x, filter=f, **attrs).numpy()
    dy = ((np.arange(y.size) % 7) - 3).reshape(y.shape).astype(dtype)
    case(f"dilation_{id_}", "Dilation2D", [x, f], **attrs)
    case(f"dilation_{id_}_backprop_input", "Dilation2DBackpropInput", [x, f, dy], **attrs)
    case(f"dilation_{id_}_backprop_filter", "Dilation2DBackpropFilter", [x, f, dy], **attrs)
xn = normal(1, 3, 3, 1)
xn[0, 1, 1, 0] = nan
case("dilation_nan", "Dilation2D", [xn, normal(2, 2, 1)], strides=[1, 1, 1, 1], rates=[1, 1, 1, 1], padding="SAME")
case("dilation_err_depth", "Dilation2D", [normal(1, 3, 3, 2), normal(2, 2, 1)], strides=[1] * 4, rates=[1] * 4, padding="SAME")
case("dilation_valid_empty", "Dilation2D", [normal(1, 2, 2, 1), normal(3, 3, 1)], strides=[1] * 4, rates=[1] * 4,
     padding="VALID")
case("dilation_err_batch_stride", "Dilation2D", [normal(1, 3, 3, 1), normal(2, 2, 1)], strides=[2, 1, 1, 1], rates=[1] * 4,
     padding="SAME")

# --- SparseFillEmptyRows, SparseReshape --------------------------------------------------------------
idx = np.array([[3, 1], [0, 2], [3, 0], [1, 1], [0, 0]], I64)
case("fill_unordered_empty_rows", "SparseFillEmptyRows", [idx, normal(5), np.array([6, 4], I64), F32(-1)])
case("fill_full_ordered", "SparseFillEmptyRows", [np.array([[0, 1], [1, 2], [1, 0]], I64), np.array([7, 8, 9], I64),
                                                  np.array([2, 4], I64), I64(0)])
case("fill_full_unordered_rank3", "SparseFillEmptyRows", [np.array([[1, 0, 1], [0, 2, 0], [1, 1, 1]], I64),
                                                          normal(3, dtype=F64), np.array([2, 3, 2], I64), F64(5)])
case("fill_nothing", "SparseFillEmptyRows", [np.zeros((0, 2), I64), np.zeros(0, F32), np.array([3, 2], I64), F32(4)])
case("fill_zero_rows", "SparseFillEmptyRows", [np.zeros((0, 2), I64), np.zeros(0, F32), np.array([0, 2], I64), F32(4)])
case("fill_grad", "SparseFillEmptyRowsGrad", [np.array([4, 0, 5, 2, 1], I64), normal(8)])
case("fill_err_row", "SparseFillEmptyRows", [np.array([[2, 0]], I64), normal(1), np.array([2, 2], I64), F32(0)])
case("fill_err_default", "SparseFillEmptyRows", [idx, normal(5), np.array([6, 4], I64), np.zeros(1, F32)])
case("fill_grad_err_index", "SparseFillEmptyRowsGrad", [np.array([4, 8], I64), normal(8)])
sp = np.array([[0, 0, 1], [1, 2, 3], [1, 0, 0], [0, 1, 2]], I64)
case("reshape_infer", "SparseReshape", [sp, np.array([2, 3, 4], I64), np.array([-1, 6], I64)])
case("reshape_rank4", "SparseReshape", [sp, np.array([2, 3, 4], I64), np.array([4, 1, 3, -1], I64)])
case("reshape_same", "SparseReshape", [sp, np.array([2, 3, 4], I64), np.array([2, -1, 4], I64)])
case("reshape_empty", "SparseReshape", [np.zeros((0, 2), I64), np.array([0, 3], I64), np.array([3, 0, 5], I64)])
case("reshape_err_two_unknown", "SparseReshape", [sp, np.array([2, 3, 4], I64), np.array([-1, -1], I64)])
case("reshape_err_multiple", "SparseReshape", [sp, np.array([2, 3, 4], I64), np.array([-1, 5], I64)])
case("reshape_err_size", "SparseReshape", [sp, np.array([2, 3, 4], I64), np.array([5, 5], I64)])
case("reshape_err_infer_empty", "SparseReshape", [np.zeros((0, 2), I64), np.array([0, 3], I64), np.array([-1, 0], I64)])

# --- StatelessShuffle ---------------------------------------------------------------------------
for id_, value, seed, alg in [
    ("vector", np.arange(37, dtype=np.int32), [7, 3], 1),
    ("matrix_auto_alg", normal(6, 3), [1, 2], 3),
    ("rank3", normal(5, 2, 2, dtype=F64), [-4, 123456789], 1),
    ("one_row", normal(1, 4), [5, 5], 1),
    ("long", np.arange(300, dtype=I64), [42, 0], 1),
]:
    key, counter = (t.numpy() for t in tf.raw_ops.StatelessRandomGetKeyCounter(seed=seed))
    case(f"shuffle_{id_}", "StatelessShuffle", [value, key, counter, np.int32(alg)])
case("shuffle_err_threefry", "StatelessShuffle", [np.arange(5), np.array([3], np.uint64), np.array([1, 2], np.uint64), np.int32(2)])
case("shuffle_err_key", "StatelessShuffle", [np.arange(5), np.array([3, 4], np.uint64), np.array([1, 2], np.uint64), np.int32(1)])


def encode(a: np.ndarray) -> dict:
    return {"dtype": a.dtype.name, "shape": list(a.shape), "data": a.reshape(-1).tolist()}


def main():
    entries = []
    for id_, op, inputs, attrs in CASES:
        via = attrs.pop("via", None)
        entry = {"id": id_, "op": op, "attrs": attrs, "inputs": [encode(x) for x in inputs]}
        try:
            if via:  # V3: num_bits an input, always HALF_TO_EVEN
                bits = np.int32(attrs.pop("num_bits", 8))
                outs = getattr(tf.raw_ops, via)(**dict(zip(ARGS[via], [*inputs, bits])), **attrs)
                attrs["num_bits"] = int(bits)
            else:
                outs = getattr(tf.raw_ops, op)(**dict(zip(ARGS[op], inputs)), **attrs)
            outs = outs if isinstance(outs, (list, tuple)) else [outs]
            entry["outputs"] = [encode(np.asarray(o)) for o in outs]
        except (tf.errors.OpError, ValueError, TypeError) as e:
            entry["error"] = str(e).split("\n")[0][:300]
        entries.append(entry)
    OUT.write_text(json.dumps(entries, indent=None, separators=(",", ":")) + "\n")
    print(f"{len(entries)} cases ({sum('error' in e for e in entries)} refusals) -> {OUT}")


if __name__ == "__main__":
    main()
