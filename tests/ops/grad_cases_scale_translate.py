"""ScaleAndTranslate's gradient: its output is float32 whatever the input (and TF's gradient op is
float32 only), so the float64 finite-difference harness cannot run it; tests/ops/test_scale_translate.py
checks the gradient as the resampling's adjoint instead."""

CASES: list = []

TESTED_ELSEWHERE = {"ScaleAndTranslate": "tests/ops/test_scale_translate.py (adjoint identity, gradient graph)"}
NO_GRADIENT = {"ScaleAndTranslateGrad": "TensorFlow registers no gradient for it"}
