"""Every registered op: kernel vs numpy reference, shape function vs the kernel's real output."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.graph.builder import GraphBuilder
from specflow.graph.dtypes import as_dtype, dtype_of
from specflow.graph.shapes import Shape
from specflow.ops import all_ops
from specflow.ops.eval import evaluate_op
from tests.ops.harness import Case, collect_cases

# Ops whose kernels need a runtime (feeds, resources, rendezvous) and are tested elsewhere.
# Every entry says where.
EXEMPT: dict[str, str] = {
    "Placeholder": "has no value unless fed; tests/runtime (feeds)",
}


CASES: list[Case] = collect_cases("cases_", "EXEMPT", EXEMPT)


def _case_id(c: Case) -> str:
    return c.id or c.op


def _as_list(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def _compare(got, want, case: Case):
    want = np.asarray(want)
    assert got.shape == want.shape, f"{case.op}: shape {got.shape} != reference {want.shape}"
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=case.rtol, atol=case.atol)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_kernel_matches_numpy(case: Case):
    outs = evaluate_op(case.op, case.inputs, **case.attrs)
    if case.check is not None:
        case.check(outs, case.inputs)
        return
    assert case.ref is not None, f"case for {case.op} has neither ref nor check"
    want = _as_list(case.ref(*case.inputs))
    assert len(outs) == len(want), f"{case.op}: {len(outs)} outputs, reference has {len(want)}"
    for got, w in zip(outs, want):
        _compare(np.asarray(got), w, case)


def _build(case: Case, partial: bool):
    """Placeholders for data inputs (optionally with unknown dims), Consts for const inputs."""
    b = GraphBuilder()
    names = []
    for i, x in enumerate(case.inputs):
        if i in case.const_inputs:
            names.append(b.const(x, dtype=as_dtype(x.dtype), name=f"c{i}"))
        else:
            shape = [None] * x.ndim if partial else list(x.shape)
            names.append(b.add_op("Placeholder", attrs={"dtype": dtype_of(x), "shape": shape}, name=f"p{i}").name)
    node = b.add_op(case.op, names, dict(case.attrs), name="op")
    return b, node


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_shape_function_matches_kernel(case: Case):
    outs = evaluate_op(case.op, case.inputs, **case.attrs)
    for partial in (False, True):
        b, node = _build(case, partial)
        specs = b.inferencer.specs[node.name]
        assert len(specs) == len(outs)
        for spec, got in zip(specs, outs):
            got = np.asarray(got)
            assert spec.dtype == dtype_of(got), f"{case.op}: inferred {spec.dtype}, kernel gave {got.dtype}"
            assert spec.shape.is_compatible_with(Shape(got.shape)), (
                f"{case.op}: inferred {spec.shape} incompatible with actual {got.shape} (partial={partial})"
            )
            if not partial and case.exact_shape:
                assert spec.shape == Shape(got.shape), f"{case.op}: inferred {spec.shape}, actual {got.shape}"


def test_every_op_has_a_case():
    covered = {c.op for c in CASES}
    missing = sorted(set(all_ops()) - covered - set(EXEMPT))
    assert not missing, f"ops without a kernel test case: {missing}"


def test_registry_size():
    assert len(all_ops()) >= 70
