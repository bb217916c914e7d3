"""Math and reduction gradients with an unknown batch dimension.

Each graph is built once with ``shape=[None, ...]`` placeholders (and, for reductions, once with
the axes fed at run time), run with two batch sizes, and compared with the same gradient built
from fully known shapes, which the finite-difference cases in grad_cases_math/_reduction check.
"""

from __future__ import annotations

import numpy as np
import pytest

from specflow.graph import dtypes
from specflow.graph.builder import GraphBuilder
from specflow.runtime.session import Session
from specflow.train.gradients import gradients

RNG = np.random.default_rng(99)


def _grads(op, inputs, attrs, shapes, feed_consts=()):
    """d sum(op(inputs) ** 2 / 2) / d float inputs (the output seeds its own gradient), with
    placeholder shapes ``shapes`` (None: a Const input, unless listed in ``feed_consts``: then a
    placeholder whose value is unknown when the gradient is built)."""
    b = GraphBuilder()
    names, feeds, xs = [], {}, []
    for i, (x, shape) in enumerate(zip(inputs, shapes)):
        if shape is None and i not in feed_consts:
            names.append(b.const(x, dtypes.as_dtype(x.dtype), name=f"c{i}"))
            continue
        ph = b.add_op("Placeholder", [], {"dtype": dtypes.as_dtype(x.dtype), "shape": shape}, name=f"x{i}").name
        names.append(ph)
        feeds[ph] = x
        if x.dtype.kind == "f":
            xs.append(ph)
    out = b.add_op(op, names, dict(attrs)).name
    grads = gradients(b, [out], xs, grad_ys=[out])
    with Session(b.graph_def) as sess:
        return sess.run(grads, feeds)


def _check(op, make_inputs, attrs=None, batch_axis=(0,), axes_fed=False):
    for batch in (2, 3):
        inputs = make_inputs(batch)
        static = [list(x.shape) if x.dtype.kind == "f" else None for x in inputs]
        dynamic = [
            [None if (k in batch_axis and i == 0) else d for k, d in enumerate(s)] if s is not None else None
            for i, s in enumerate(static)
        ]
        want = _grads(op, inputs, attrs or {}, static)
        fed = [i for i, x in enumerate(inputs) if x.dtype.kind != "f"] if axes_fed else ()
        got = _grads(op, inputs, attrs or {}, dynamic, feed_consts=fed)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def _f(*shape):
    return RNG.uniform(0.3, 2.0, size=shape)


BINARY = ["AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "Pow", "SquaredDifference", "FloorMod"]


@pytest.mark.parametrize("op", BINARY)
def test_binary_with_unknown_batch_broadcasting_a_row(op):
    _check(op, lambda n: [_f(n, 3), _f(3)])


def test_unary_and_select_with_unknown_batch():
    for op in ["Exp", "Log", "Tanh", "Sigmoid", "Rsqrt", "Abs"]:
        _check(op, lambda n: [_f(n, 3)])
    _check("SelectV2", lambda n: [np.array([True, False, True]), _f(n, 3), _f(1, 3)])
    _check("AddN", lambda n: [_f(n, 2), _f(n, 2)])


def test_matmul_with_unknown_batch():
    _check("MatMul", lambda n: [_f(n, 3), _f(3, 2)])
    _check("MatMul", lambda n: [_f(n, 3), _f(2, 3)], {"transpose_b": True})
    _check("BatchMatMulV2", lambda n: [_f(n, 2, 3), _f(3, 2)])
    _check("BatchMatMulV2", lambda n: [_f(n, 1, 2, 3), _f(2, 3, 2)], {"adj_x": False})


REDUCTIONS = ["Sum", "Mean", "Max", "Min", "Prod"]


@pytest.mark.parametrize("op", REDUCTIONS)
@pytest.mark.parametrize("axes,keep", [((1,), False), ((0,), False), ((0, -1), True), ((0, 1, 2), False)])
def test_reduction_with_unknown_batch(op, axes, keep):
    _check(op, lambda n: [_f(n, 3, 2), np.array(axes, np.int32)], {"keep_dims": keep})


@pytest.mark.parametrize("op", ["Sum", "Mean", "Max", "Min", "Prod"])
@pytest.mark.parametrize("keep", [False, True])
def test_reduction_with_axes_known_only_at_run_time(op, keep):
    _check(op, lambda n: [_f(n, 3, 2), np.array([-1, 0], np.int64)], {"keep_dims": keep, "Tidx": "int64"},
           axes_fed=True)


def test_complex_prod_gradient_is_the_conjugate_of_the_other_factors():
    # TF's _ProdGrad: dy * conj(left) * conj(right), the exclusive products of the other elements.
    x = np.array([[1 + 2j, -0.5 + 1j], [2 - 1j, 0.25 + 0.5j], [3j, 1 - 1j]])
    dy = np.array([0.5 - 1j, 2 + 0.25j])
    b = GraphBuilder()
    a = b.add_op("Placeholder", [], {"dtype": dtypes.complex128, "shape": [3, 2]}, name="a").name
    y = b.add_op("Prod", [a, b.const(np.array([0], np.int32), name="axis")]).name
    (g,) = gradients(b, [y], [a], grad_ys=[b.const(dy, dtypes.complex128, name="dy")])
    got = Session(b.graph_def).run(g, {a: x})
    others = np.stack([np.prod(np.delete(x, i, axis=0), axis=0) for i in range(3)])
    np.testing.assert_allclose(got, dy * np.conj(others), rtol=1e-14)
