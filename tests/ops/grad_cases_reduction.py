"""Gradient cases for reduction_ops: Sum, Mean, Prod, Max, Min (axes, negative axes, all axes,
keep_dims) and the scans Cumsum/Cumprod (exclusive, reverse).

Max/Min inputs have distinct values (a tie splits the gradient, where finite differences are
one-sided); Prod includes a zero, which the zero-safe gradient must handle.
"""

import numpy as np

from tests.ops.grad_harness import GradCase, away_from, g64, gpos


def _ax(*axes):
    return np.array(axes, dtype=np.int32)


def _distinct(*shape):
    """Well-separated values in random order: no near-ties for Max/Min."""
    n = int(np.prod(shape))
    return np.random.default_rng(7).permutation(np.linspace(-2.0, 2.0, n)).reshape(shape)


def _reduction_cases(op, x):
    return [
        GradCase(op, [x, _ax(1)], id=f"{op}-axis1"),
        GradCase(op, [x, _ax(0, -1)], attrs={"keep_dims": True}, id=f"{op}-neg-axis-keep"),
        GradCase(op, [x, _ax(0, 1, 2)], id=f"{op}-all"),
        GradCase(op, [x, np.array(-2, np.int64)], attrs={"Tidx": "int64"}, id=f"{op}-scalar-axis-int64"),
    ]


CASES = (
    _reduction_cases("Sum", g64(2, 3, 2))
    + _reduction_cases("Mean", g64(2, 3, 2))
    + _reduction_cases("Prod", away_from(g64(2, 3, 2), gap=0.2))
    + _reduction_cases("Max", _distinct(2, 3, 2))
    + _reduction_cases("Min", _distinct(2, 3, 2))
    + _reduction_cases("EuclideanNorm", away_from(g64(2, 3, 2), gap=0.2))
    + [
        GradCase("Prod", [np.array([[1.5, 0.0, -2.0], [0.5, 1.2, 0.0]]), _ax(1)], id="Prod-with-zeros"),
        GradCase("Sum", [g64(2, 3), np.zeros(0, np.int32)], id="Sum-no-axes"),
        GradCase("Cumsum", [g64(2, 3), np.array(1, np.int32)]),
        GradCase(
            "Cumsum",
            [g64(3, 2), np.array(0, np.int32)],
            attrs={"exclusive": True, "reverse": True},
            id="Cumsum-exclusive-reverse",
        ),
        GradCase("Cumprod", [gpos(2, 3), np.array(-1, np.int32)]),
        GradCase("Cumprod", [gpos(3, 2), np.array(0, np.int32)], attrs={"exclusive": True}, id="Cumprod-exclusive"),
        GradCase("Cumprod", [gpos(3), np.array(0, np.int32)], attrs={"reverse": True}, id="Cumprod-reverse"),
    ]
)
