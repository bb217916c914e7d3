"""Gradient cases for ctc_ops: CTCLoss's loss output against finite differences in the logits
(its gradient output has no gradient: TF puts it behind PreventGradient, whose gradient is an
error, checked in tests/ops/test_ctc_ops.py)."""

from tests.ops.cases_ctc import _IDX, _LEN, _VALS
from tests.ops.grad_harness import RNG, GradCase

CASES = [
    GradCase("CTCLoss", [RNG.standard_normal((5, 3, 4)), _IDX, _VALS, _LEN], wrt=[0], outputs=[0]),
    GradCase("CTCLoss", [RNG.standard_normal((5, 3, 4)), _IDX, _VALS, _LEN], {"ctc_merge_repeated": False}, wrt=[0],
             outputs=[0], id="CTCLoss-no-merge"),
]
TESTED_ELSEWHERE = {"PreventGradient": "its gradient is an error: tests/ops/test_ctc_ops.py"}
