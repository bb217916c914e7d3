"""RandomGamma's gradient (TF's implicit reparameterization) is checked against the quantile
function's derivative in tests/ops/test_random_dist.py, as StatelessRandomGammaV3's."""

TESTED_ELSEWHERE = {"RandomGamma": "tests/ops/test_random_dist.py"}
CASES = []
