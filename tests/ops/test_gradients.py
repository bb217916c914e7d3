"""Every gradient against finite differences, parametrized over the op registry.

Each family's ``grad_cases_*.py`` lists :class:`GradCase` objects (and may add to ``NO_GRADIENT``
an op that takes and returns floats yet has no gradient, with the reason).
``test_every_float_op_has_a_gradient_or_says_why`` keeps new ops honest: an op with float
inputs and outputs must register a gradient (with a case here) or be marked not differentiable.
"""

from __future__ import annotations

import pytest

from specflow.ops import all_ops
from specflow.ops.registry import NOT_DIFFERENTIABLE
from tests.ops.grad_harness import GradCase, check_gradient
from tests.ops.harness import collect_cases

NO_GRADIENT: dict[str, str] = {}


CASES: list[GradCase] = collect_cases("grad_cases_", "NO_GRADIENT", NO_GRADIENT)
# Gradients checked against finite differences by another test (op -> where), for ops whose
# inputs or outputs the single-op harness cannot perturb or sum (TensorList variants).
TESTED_ELSEWHERE: dict[str, str] = {}
collect_cases("grad_cases_", "TESTED_ELSEWHERE", TESTED_ELSEWHERE)


def _id(c: GradCase) -> str:
    return c.id or c.op


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_gradient_matches_finite_differences(case: GradCase):
    check_gradient(case)


def _may_be_float(arg, opdef) -> bool:
    """Whether an input/output arg can hold a float tensor."""
    if arg.dtype is not None:
        return arg.dtype.is_floating
    attr = opdef.attrs.get(arg.type_attr or arg.type_list_attr or "")
    if attr is None:
        return False
    return attr.allowed is None or any(getattr(d, "is_floating", False) for d in attr.allowed)


def test_every_float_op_has_a_gradient_or_says_why():
    with_case = {c.op for c in CASES}
    missing, untested = [], []
    for name, opdef in sorted(all_ops().items()):
        fn = opdef.gradient
        if fn is NOT_DIFFERENTIABLE or name in NO_GRADIENT:
            continue
        if fn is not None:
            if name not in with_case and name not in TESTED_ELSEWHERE:
                untested.append(name)
            continue
        ins = [a for a in opdef.inputs if _may_be_float(a, opdef)]
        outs = [a for a in opdef.outputs if _may_be_float(a, opdef)]
        if ins and outs:
            missing.append(name)
    assert not missing, f"float ops with no gradient and no not_differentiable mark: {missing}"
    assert not untested, f"gradients with no finite-difference case: {untested}"


def test_not_differentiable_ops_exist():
    assert all_ops()["StopGradient"].gradient is NOT_DIFFERENTIABLE
