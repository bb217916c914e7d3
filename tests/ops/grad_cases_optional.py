"""Optional gradients take or give an optional (a variant), which the single-op harness can
neither perturb nor sum: tests/ops/test_optional_ops.py checks them through a chain."""

CASES: list = []
TESTED_ELSEWHERE = {op: "d sum(x * x) / dx = 2x through OptionalFromValue -> OptionalGetValue in "
                    "tests/ops/test_optional_ops.py" for op in ("OptionalFromValue", "OptionalGetValue")}  # fmt: skip
