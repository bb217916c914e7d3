"""Gradient cases for fake_quant_ops. The ops are step functions, so finite differences would
see only their jumps; TF's gradient is the straight-through estimate (1 inside the nudged range,
0 outside, and the sums outside for min and max), which is checked against a loop in
tests/ops/cases_fake_quant.py (the *Gradient ops' cases) and against TF by tf_grad_parity."""

NO_GRADIENT = {op: "TensorFlow registers no gradient for it" for op in (
    "FakeQuantWithMinMaxArgsGradient", "FakeQuantWithMinMaxVarsGradient", "FakeQuantWithMinMaxVarsPerChannelGradient")}
TESTED_ELSEWHERE = {op: "a straight-through estimate, not a derivative: its gradient op's cases in "
                    "tests/ops/cases_fake_quant.py" for op in (
    "FakeQuantWithMinMaxArgs", "FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVarsPerChannel")}  # fmt: skip

CASES = []
