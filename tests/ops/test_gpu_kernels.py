"""Every kernel case again on the GPU (cupy), compared with the CPU result. Skips without a GPU."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.graph.dtypes import dtype_of
from specflow.graph.graph_def import NodeDef
from specflow.ops.eval import evaluate_op, run_kernel
from specflow.ops.registry import KernelContext, bind_attrs, find_kernel, get_op
from tests.ops.test_kernels import CASES, _case_id

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_gpu_kernel_matches_cpu(case):
    import cupy

    opdef = get_op(case.op)
    attrs = bind_attrs(opdef, [dtype_of(x) for x in case.inputs], dict(case.attrs), node="gpu")
    if find_kernel(case.op, "GPU", attrs) is None:
        pytest.skip(f"{case.op} has no GPU kernel for these types")
    node = NodeDef("gpu", case.op, [f"in{i}" for i in range(len(case.inputs))], attrs=attrs)
    ctx = KernelContext(node=node, attrs=attrs, xp=cupy, device="/device:GPU:0", device_type="GPU")
    k = find_kernel(case.op, "GPU", attrs)
    inputs = [x if i in k.host_inputs else cupy.asarray(x) for i, x in enumerate(case.inputs)]
    got = run_kernel(node, inputs, attrs, device_type="GPU", ctx=ctx)
    if case.check is not None:  # random ops: same properties on the GPU
        case.check([cupy.asnumpy(g) for g in got], case.inputs)
        return
    want = evaluate_op(case.op, case.inputs, **case.attrs)
    for g, w in zip(got, want):
        g = cupy.asnumpy(g)
        assert g.dtype == np.asarray(w).dtype
        if g.dtype.kind in "fc":
            np.testing.assert_allclose(g, w, rtol=max(case.rtol, 1e-5), atol=max(case.atol, 1e-5))
        else:
            np.testing.assert_array_equal(g, w)
