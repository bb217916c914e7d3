"""StatelessRandomGammaV3's gradient is TF's implicit reparameterization (d sample / d alpha at a
fixed CDF), which is not the derivative of the Marsaglia-Tsang sampler along one Philox stream, so
finite differences cannot check it: tests/ops/test_stateless_random_dist.py compares it with the
quantile function's derivative instead."""

TESTED_ELSEWHERE = {"StatelessRandomGammaV3": "tests/ops/test_stateless_random_dist.py"}
CASES = []
