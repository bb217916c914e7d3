"""Cases for stateless_random_dist_ops: StatelessRandomBinomial, StatelessRandomPoisson,
StatelessRandomGammaV3 and RandomGammaGrad against values TensorFlow 2.21 gave on CPU for the same
seeds (tf.random.stateless_binomial/poisson/gamma with seed [3, 4]; recorded as literals: the
suite never imports TF). They cover the binomial's inversion, BTRS and p > 0.5 branches,
Poisson's Knuth (rate < 10) and PTRS branches, and gamma's exponential (alpha 1), alpha < 1 and
alpha > 1 paths, with parameters broadcast over the trailing dims."""

import numpy as np

from tests.ops.harness import Case

SEED = np.array([3, 4], np.int64)

BINOMIAL = [
    (5.0, 0.5, [2, 3], [[3, 4, 1], [2, 4, 3]]),
    (40.0, 0.3, [2, 3], [[16, 13, 16], [12, 8, 13]]),
    ([7.0, 100.0], [0.95, 0.9], [3, 2], [[6, 90], [6, 94], [7, 85]]),
]
POISSON = [
    (2.0, [2, 3], [[3, 2, 0], [2, 1, 4]]),
    (30.0, [2, 3], [[36, 32, 39], [31, 22, 40]]),
    ([0.5, 15.0, 100.0], [2, 3], [[3, 21, 86], [1, 15, 118]]),
]
KEY, COUNTER = 5186321457711525117, [0, 2956673722964415482]
GAMMA = [
    (2.0, [2, 3], [[1.702830780633775, 1.1621073742634231, 2.6529496079795916], [0.4538315984368699, 8.89545971595502, 2.615978088641471]]),
    (1.0, [2, 3], [[1.4411236796320566, 1.0419907865585394, 0.07935843826832506], [0.793442999605626, 4.8859641181404525, 2.617991517149285]]),
    (0.3, [2, 3], [[0.003980345537993236, 0.09830192177116924, 0.8456182611609214], [0.00014861895927446804, 1.1326966921682133, 0.0488915815897558]]),
    ([0.5, 4.0], [3, 2], [[0.04360453289959347, 1.6273658008003544], [0.25566861555851716, 12.474910556113382], [1.301618537286629, 5.005447118278669]]),
]
GAMMA_GRAD = [1.0098019459488548, 1.4309374423012804, 1.0862085766363292, 0.9075477177235494]


def _implicit_ref(alpha, sample):
    """d sample / d alpha at a fixed CDF, by central differences of scipy's inverse (0 at 0)."""
    from scipy.special import gammainc, gammaincinv

    a, x = np.broadcast_arrays(alpha.astype(np.float64), sample.astype(np.float64))
    q, h = gammainc(a, x), 1e-6
    return np.where(x == 0, 0.0, (gammaincinv(a + h, q) - gammaincinv(a - h, q)) / (2 * h))


def _lit(values, dtype):
    return lambda *_: np.array(values, dtype)


CASES = [
    *(Case("StatelessRandomBinomial", [np.array(shape, np.int32), SEED, np.array(c, np.float32), np.array(p, np.float32)],
           attrs={"dtype": "int32"}, ref=_lit(want, np.int32), const_inputs=[0], rtol=0, atol=0, id=f"binomial-{i}")
      for i, (c, p, shape, want) in enumerate(BINOMIAL)),
    *(Case("StatelessRandomPoisson", [np.array(shape, np.int32), SEED, np.array(lam, np.float32)],
           attrs={"dtype": "int32"}, ref=_lit(want, np.int32), const_inputs=[0], rtol=0, atol=0, id=f"poisson-{i}")
      for i, (lam, shape, want) in enumerate(POISSON)),
    *(Case("StatelessRandomGammaV3", [np.array(shape, np.int32), np.array([KEY], np.uint64), np.array(COUNTER, np.uint64),
                                      np.int32(1), np.array(alpha, np.float64)],
           ref=_lit(want, np.float64), const_inputs=[0], rtol=1e-12, id=f"gamma-{i}")
      for i, (alpha, shape, want) in enumerate(GAMMA)),
    Case("RandomGammaGrad", [np.array([0.5, 1.0, 2.0, 10.0]), np.array([0.3, 1.5, 2.0, 8.0])], ref=_lit(GAMMA_GRAD, np.float64),
         rtol=1e-9),
    Case("RandomGammaGrad", [np.array([[0.5], [3.0]], np.float32), np.array([0.0, 1.0, 2.5], np.float32)],
         ref=lambda a, s: _implicit_ref(a, s).astype(np.float32), rtol=1e-4, atol=1e-5, id="RandomGammaGrad-broadcast-zero"),
    # scalars stay scalars (a stateless_gamma of shape [] and its gradient; TF 2.21's number)
    Case("RandomGammaGrad", [np.float32(1.5), np.float32(1.1969660520553589)], ref=_lit(0.9932989478111267, np.float32),
         rtol=1e-5, id="RandomGammaGrad-scalar"),
]
