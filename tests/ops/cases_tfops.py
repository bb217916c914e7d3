"""Cases for QuantizeAndDequantizeV2/V3/V4/V4Grad, Dilation2D and its backprops,
SparseFillEmptyRows(+Grad), SparseReshape and StatelessShuffle against TensorFlow 2.21's own
outputs, recorded in tests/ops/data/tf_tfops.json by scripts/make_tfops_fixtures.py (so CI checks
TF's numbers without TF). Every value must match exactly: the kernels follow TF's CPU arithmetic
(quantize_and_dequantize_op.h's range and rounding in the input's type, dilation's first strict
maximum, the fill's stable counting sort, the shuffle's Fisher-Yates over the Philox stream).
The entries TF refuses are checked in test_tfops_errors.py."""

import json
from pathlib import Path

import numpy as np

from tests.ops.harness import Case

ENTRIES = json.loads((Path(__file__).parent / "data" / "tf_tfops.json").read_text())


def decode(t: dict) -> np.ndarray:
    return np.array(t["data"], dtype=t["dtype"]).reshape(t["shape"])


def _case(e: dict) -> Case:
    want = [decode(o) for o in e["outputs"]]
    # the sparse ops' output sizes depend on the values of their inputs
    exact = e["op"] not in ("SparseFillEmptyRows", "SparseReshape")
    return Case(e["op"], [decode(i) for i in e["inputs"]], attrs=e["attrs"], rtol=0, atol=0, id=f"tf-{e['id']}",
                ref=lambda *a, w=want: w, exact_shape=exact)


CASES = [_case(e) for e in ENTRIES if "outputs" in e]
