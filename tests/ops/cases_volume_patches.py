"""Cases for ExtractVolumePatches against TensorFlow 2.21's patches of the same volumes (shape,
sum of squares, the first 50 values and every 37th: data/tf_extract_volume_patches.json)."""

import json
from pathlib import Path

import numpy as np

from tests.ops.harness import Case, f64

TF = json.loads((Path(__file__).parent / "data" / "tf_extract_volume_patches.json").read_text())
X = np.arange(240, dtype=np.float32).reshape(2, 3, 4, 5, 2)
WINDOWS = [(pad, k, s) for pad in ("VALID", "SAME")
           for k, s in (([1, 2, 2, 3, 1], [1, 1, 2, 2, 1]), ([1, 3, 3, 2, 1], [1, 2, 3, 1, 1]))]  # fmt: skip


def _name(pad, k, s):
    return f"evp-{pad}-{k[1]}{k[2]}{k[3]}-{s[1]}{s[2]}{s[3]}"


def _tf_check(name):
    def check(outs, ins):
        y, want = np.asarray(outs[0]), TF[name]
        assert list(y.shape) == want["shape"]
        assert float((y.astype(np.float64) ** 2).sum()) == want["sum_sq"]
        np.testing.assert_array_equal(y.reshape(-1)[:50], want["head"])
        np.testing.assert_array_equal(y.reshape(-1)[::37], want["checks"])

    return check


def _ref(k, s, pad):
    """Window by window, one patch at a time, with explicit zero padding."""

    def ref(x):
        n, dims, c = x.shape[0], x.shape[1:4], x.shape[4]
        ks, ss = k[1:4], s[1:4]
        if pad == "SAME":
            outs = [-(-d // st) for d, st in zip(dims, ss)]
            before = [max((o - 1) * st + kk - d, 0) // 2 for o, st, kk, d in zip(outs, ss, ks, dims)]
        else:
            outs, before = [(d - kk) // st + 1 for d, kk, st in zip(dims, ks, ss)], [0, 0, 0]
        out = np.zeros((n, *outs, ks[0] * ks[1] * ks[2] * c), x.dtype)
        for idx in np.ndindex(*outs):
            vals = []
            for tap in np.ndindex(*ks):
                pos = [i * st + t - p for i, st, t, p in zip(idx, ss, tap, before)]
                inside = all(0 <= q < d for q, d in zip(pos, dims))
                vals.append(x[:, pos[0], pos[1], pos[2], :] if inside else np.zeros((n, c), x.dtype))
            out[(slice(None), *idx)] = np.stack(vals, axis=1).reshape(n, -1)
        return out

    return ref


CASES = [
    *[Case("ExtractVolumePatches", [X], attrs={"ksizes": k, "strides": s, "padding": pad}, check=_tf_check(_name(pad, k, s)),
           id="ExtractVolumePatches-" + _name(pad, k, s)) for pad, k, s in WINDOWS],
    Case("ExtractVolumePatches", [f64(1, 4, 3, 5, 3)], _ref([1, 2, 1, 3, 1], [1, 3, 1, 2, 1], "SAME"),
         attrs={"ksizes": [1, 2, 1, 3, 1], "strides": [1, 3, 1, 2, 1], "padding": "SAME"}, id="ExtractVolumePatches-ref"),
]  # fmt: skip
