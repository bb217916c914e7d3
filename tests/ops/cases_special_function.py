"""Cases for special_function_ops (Igamma, Igammac, IgammaGradA, Betainc, Zeta).

References are series summed in plain Python (the kernels take the values from scipy.special):
the incomplete gamma function's power series, the incomplete beta function's hypergeometric
series, zeta's series with an Euler-Maclaurin tail; IgammaGradA by a central difference of the
gamma series in a. The domain edges TF defines (nan for a <= 0, 0 at x = 0...)
carry literal values."""

import math

import numpy as np

from tests.ops.harness import Case, f32


def _lower_gamma(a, x):
    """P(a, x) by its series x^a e^-x sum_n x^n / Gamma(a + n + 1), summed in Python."""
    if x == 0:
        return 0.0
    total, n = 0.0, 0
    while True:
        term = math.exp((a + n) * math.log(x) - x - math.lgamma(a + n + 1))
        total += term
        if n > x and term < 1e-18 * total:
            return total
        n += 1


def _ref(f, *arrays):
    shape = np.broadcast_shapes(*(np.shape(a) for a in arrays))
    flat = [np.broadcast_to(a, shape).ravel() for a in arrays]
    return np.array([f(*map(float, vals)) for vals in zip(*flat)]).reshape(shape)


def _incomplete_beta(a, b, x):
    """I_x(a, b) = x^a / B(a, b) sum_n (1 - b)_n x^n / (n! (a + n)) (x < 1), summed in Python."""
    if x <= 0:
        return 0.0
    total, c, n = 0.0, 1.0, 0
    while abs(c) > 1e-19 or n < 10:
        total += c / (a + n)
        c *= (n + 1 - b) / (n + 1) * x
        n += 1
    return math.exp(a * math.log(x) + math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)) * total


def _hurwitz(x, q, n=50):
    """The first n terms of sum (k + q)^-x plus the Euler-Maclaurin tail from n."""
    head = sum((k + q) ** -x for k in range(n))
    m = n + q
    return head + m ** (1 - x) / (x - 1) + m**-x / 2 + x * m ** (-x - 1) / 12 - x * (x + 1) * (x + 2) * m ** (-x - 3) / 720


_A = np.array([[0.3, 1.2, 2.5], [4.0, 7.5, 0.8]])
_X = np.array([[0.2, 1.7, 3.0], [0.5, 9.0, 6.0]])


def _grad_a(a, x, h=1e-5):
    """d/da P(a, x) by a central difference of the series (float64)."""
    return (_ref(_lower_gamma, a + h, x) - _ref(_lower_gamma, a - h, x)) / (2 * h)


CASES = [
    Case("Igamma", [_A, _X], ref=lambda a, x: _ref(_lower_gamma, a, x), rtol=1e-9, atol=1e-10),
    Case("Igamma", [np.float32(2.0), f32(4, low=0.1, high=5)], ref=lambda a, x: _ref(_lower_gamma, a, x).astype(np.float32),
         rtol=1e-5, atol=1e-6, id="Igamma-float32-broadcast"),
    Case("Igamma", [np.array([1.0, 0.0, -1.0, 2.0, np.nan]), np.array([0.0, 0.0, 1.0, -1.0, 1.0])],
         ref=lambda a, x: np.array([0.0, 0.0, np.nan, np.nan, np.nan]), id="Igamma-domain"),
    Case("Igammac", [_A, _X], ref=lambda a, x: 1 - _ref(_lower_gamma, a, x), rtol=1e-9, atol=1e-10),
    Case("Igammac", [np.array([1.0, 0.0, 2.0]), np.array([0.0, 0.0, np.inf])],
         ref=lambda a, x: np.array([1.0, np.nan, 0.0]), id="Igammac-domain"),
    Case("IgammaGradA", [_A, _X], rtol=1e-6, atol=1e-8, ref=lambda a, x: _grad_a(a, x)),
    Case("IgammaGradA", [np.array([3.0, 0.5, 40.0]), np.array([0.0, 80.0, 20.0])], rtol=1e-6, atol=1e-8,
         id="IgammaGradA-far-tails",
         ref=lambda a, x: _grad_a(a, x)),
    Case("IgammaGradA", [np.array([0.5, 2.0], np.float32), np.array([0.7, 3.0], np.float32)], rtol=1e-4, atol=1e-6,
         id="IgammaGradA-float32",
         ref=lambda a, x: _grad_a(a.astype(np.float64), x.astype(np.float64)).astype(np.float32)),
    Case("Betainc", [_A, _A[::-1], _X / 10], ref=lambda a, b, x: _ref(_incomplete_beta, a, b, x), rtol=1e-9, atol=1e-10),
    Case("Betainc", [np.float64(2.0), np.array([0.5, 3.0, 1.0]), np.float64(0.4)],
         ref=lambda a, b, x: _ref(_incomplete_beta, a, b, x), rtol=1e-9, atol=1e-10, id="Betainc-scalars"),
    Case("Betainc", [np.array([0.0, 1.0, 1.0, 2.0]), np.array([1.0, -1.0, 1.0, 2.0]), np.array([0.5, 0.5, 1.5, 1.0])],
         ref=lambda a, b, x: np.array([np.nan, np.nan, np.nan, 1.0]), id="Betainc-domain"),
    Case("Zeta", [_A + 1.5, _X], ref=lambda x, q: _ref(_hurwitz, x, q), rtol=1e-9),
    Case("Zeta", [np.array([0.5, 1.0, 2.0, 3.0, 2.5]), np.array([1.0, 1.0, -1.0, -2.0, -0.5])],
         ref=lambda x, q: np.array([np.nan, np.inf, np.inf, np.nan, np.nan]), id="Zeta-domain"),
    # TF 2.21's values at the infinities (found by tf_fuzz_parity.py --family 4): Zeta(inf, q) is
    # inf below q = 1, 1 at 1, 0 above; P and Q of (inf, inf) 0; Betainc nan inside (0, 1) for an
    # infinite a or b, and 0 at x = 0, 1 at x = 1 whatever a and b (nan included)
    Case("Zeta", [np.full(6, np.inf), np.array([-np.inf, -1.5, 0.0, 1.0, 1.5, np.inf])], id="Zeta-x-inf",
         ref=lambda x, q: np.array([np.inf, np.inf, np.inf, 1.0, 0.0, 0.0])),
    Case("IgammaGradA", [np.array([np.inf, np.inf, np.inf], np.float32), np.array([0.5, 200.0, np.inf], np.float32)],
         ref=lambda a, x: np.zeros(3, np.float32), id="IgammaGradA-a-inf"),
    Case("Igamma", [np.array([np.inf, np.inf]), np.array([np.inf, 1.0])], ref=lambda a, x: np.array([0.0, 0.0]), id="Igamma-inf"),
    Case("Igammac", [np.array([np.inf, 2.0]), np.array([np.inf, np.inf])], ref=lambda a, x: np.array([0.0, 0.0]), id="Igammac-inf"),
    Case("Betainc", [np.array([0.5, np.inf, np.nan, np.inf, 2.0]), np.array([np.inf, 1.0, 1.0, np.inf, np.nan]),
                     np.array([0.3, 0.3, 0.0, 1.0, 1.0])], id="Betainc-inf-nan-edges",
         ref=lambda a, b, x: np.array([np.nan, np.nan, 0.0, 1.0, 1.0])),
]  # fmt: skip
