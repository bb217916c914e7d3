"""Cases for random_dist_ops (RandomGamma, RandomPoissonV2): numpy's stream, not TF's, so the
checks are the distributions' moments per parameter (20k draws each), the shapes (shape +
parameter shape), TF's out-of-domain values and the seeded determinism."""

import numpy as np

from specflow.ops.eval import evaluate_op
from tests.ops.harness import Case

_N = np.array([20000], np.int32)


def _check(op, attrs, mean_var, nan_at=(), dtype=None):
    def check(outs, ins):
        out = np.asarray(outs[0])
        assert out.shape == (20000, *ins[1].shape), out.shape
        assert out.dtype == (np.dtype(dtype) if dtype else ins[1].dtype), out.dtype
        x = out.astype(np.float64)
        for j, (m, v) in enumerate(mean_var):
            if j in nan_at:
                assert np.isnan(x[:, j]).all()
                continue
            col = x[:, j]
            assert abs(col.mean() - m) < 4 * np.sqrt(v / len(col)) + 1e-12, (j, col.mean(), m)
            assert abs(col.var() - v) < 0.06 * v + 1e-12, (j, col.var(), v)
        again = evaluate_op(op, ins, **attrs)[0]  # seeded: a fresh context draws the same values
        np.testing.assert_array_equal(np.asarray(again), out)

    return check


# gamma(a, 1): mean a, variance a; TF: alpha 0 draws 0, a negative or NaN alpha NaN
_ALPHA = np.array([0.3, 1.0, 4.5, 0.0, -1.0, np.nan], np.float32)
_RATE = np.array([0.5, 3.0, 40.0, 0.0, -1.0])  # Poisson: mean = variance = rate; TF: <= 0 draws 0

CASES = [
    Case("RandomGamma", [_N, _ALPHA], attrs={"seed": 3, "seed2": 4}, const_inputs=[0],
         check=_check("RandomGamma", {"seed": 3, "seed2": 4}, [(0.3, 0.3), (1, 1), (4.5, 4.5), (0, 0), (0, 0), (0, 0)],
                      nan_at=(4, 5))),
    Case("RandomGamma", [_N, np.array([2.0])], attrs={"seed": 5}, const_inputs=[0], id="RandomGamma-f64",
         check=_check("RandomGamma", {"seed": 5}, [(2, 2)])),
    Case("RandomPoissonV2", [_N, _RATE], attrs={"seed": 1}, const_inputs=[0],
         check=_check("RandomPoissonV2", {"seed": 1}, [(0.5, 0.5), (3, 3), (40, 40), (0, 0), (0, 0)],
                      dtype=np.int64)),
    Case("RandomPoissonV2", [_N, _RATE.astype(np.float32)], attrs={"seed": 2, "dtype": "float32"}, const_inputs=[0],
         id="RandomPoissonV2-float",
         check=_check("RandomPoissonV2", {"seed": 2, "dtype": "float32"},
                      [(0.5, 0.5), (3, 3), (40, 40), (0, 0), (0, 0)], dtype=np.float32)),
]  # fmt: skip


def _ptn_check(outs, ins):
    """Each batch row's bounds and moments against TF 2.21's own 20k-draw sample of the same
    parameters (mean, std: [0.2332, 7.2792, -1.5329], [0.7201, 1.0423, 0.2650]); the closed-form
    truncated-normal moments ([0.2296, 7.2822, -1.5344], [0.7209, 1.0363, 0.2670]) are within 0.01 of them."""
    x = np.asarray(outs[0])
    assert x.shape == (3, 20000) and x.dtype == np.float64
    assert (x.min(1) >= [-1, 6, -np.inf]).all() and (x.max(1) <= [2, 20, -1.2]).all()
    np.testing.assert_allclose(x.mean(1), [0.2332, 7.2792, -1.5329], atol=0.025)
    np.testing.assert_allclose(x.std(1), [0.7201, 1.0423, 0.2650], atol=0.025)
    again = evaluate_op("ParameterizedTruncatedNormal", ins, seed=1)[0]
    np.testing.assert_array_equal(again, x)


def _far_tail_check(outs, ins):
    x = np.asarray(outs[0])  # 50 stdevs out, one-sided: TF gives values just above 50
    assert x.dtype == np.float32 and (x >= 50).all() and (x < 50.2).all()


CASES += [
    Case("ParameterizedTruncatedNormal", [np.array([3, 20000], np.int32), np.array([0.0, 5.0, -1.0]),
                                          np.array([1.0, 2.0, 0.5]), np.array([-1.0, 6.0, -np.inf]),
                                          np.array([2.0, 20.0, -1.2])], attrs={"seed": 1}, const_inputs=[0],
         check=_ptn_check),
    Case("ParameterizedTruncatedNormal", [np.array([4], np.int32), np.float32(0), np.float32(1), np.float32(50),
                                          np.float32(np.inf)], attrs={"seed": 1}, const_inputs=[0],
         check=_far_tail_check, id="ParameterizedTruncatedNormal-far-tail"),
]  # fmt: skip
