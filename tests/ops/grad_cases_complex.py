"""complex_ops' gradients map between real and complex tensors: tests/ops/test_complex_ops.py checks
them against central differences in TF's convention."""

CASES: list = []
TESTED_ELSEWHERE = {op: "tests/ops/test_complex_ops.py" for op in ("Complex", "Real", "Imag", "ComplexAbs", "Angle")}
