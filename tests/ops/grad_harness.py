"""Gradient checks against central finite differences.

A :class:`GradCase` names an op, its inputs and attrs. The check builds ``loss = sum_k
sum(out_k * w_k)`` over the op's float outputs with fixed random weights ``w_k`` (so every
output element matters with a distinct weight), asks :func:`specflow.train.gradients.gradients`
for d loss / d input, runs it, and compares each element with
``(loss(x + eps) - loss(x - eps)) / 2 eps`` computed by running the forward graph. Float inputs
are promoted to float64 so the differences are accurate; non-float inputs (axes, shapes,
indices) become constants.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from specflow.graph import dtypes
from specflow.graph.builder import GraphBuilder
from specflow.ops.registry import get_op, output_dtypes
from specflow.runtime.session import Session
from specflow.train.gradients import gradients

RNG = np.random.default_rng(4321)


@dataclass
class GradCase:
    op: str
    inputs: Sequence[Any] = ()
    attrs: dict = field(default_factory=dict)
    wrt: Sequence[int] | None = None  # input indices to check; default: every float input
    eps: float = 1e-6
    rtol: float = 1e-4
    atol: float = 1e-6
    keep_float32: bool = False  # ops without a float64 kernel
    outputs: Sequence[int] | None = None  # outputs in the loss; default: every float output
    id: str = ""

    def __post_init__(self):
        self.inputs = [np.asarray(x) for x in self.inputs]


def g64(*shape, low=-2.0, high=2.0) -> np.ndarray:
    return RNG.uniform(low, high, size=shape).astype(np.float64)


def gpos(*shape, low=0.2, high=2.0) -> np.ndarray:
    return RNG.uniform(low, high, size=shape).astype(np.float64)


def away_from(values, points=(0.0,), gap=0.05, *shape) -> np.ndarray:
    """Random values at least ``gap`` away from kinks at ``points`` (relu, abs, max...)."""
    x = np.asarray(values, dtype=np.float64)
    for p in points:
        near = np.abs(x - p) < gap
        x = np.where(near, p + np.sign(x - p + 1e-12) * gap * 2, x)
    return x


def _promote(x: np.ndarray, keep32: bool) -> np.ndarray:
    if x.dtype.kind == "f" and not keep32:
        return x.astype(np.float64)
    return x


def _build(case: GradCase):
    b = GraphBuilder()
    ins = [_promote(x, case.keep_float32) for x in case.inputs]
    wrt = case.wrt if case.wrt is not None else [i for i, x in enumerate(ins) if x.dtype.kind in "fc"]
    names = []
    for i, x in enumerate(ins):
        if i in wrt:
            names.append(b.add_op("Placeholder", [], {"dtype": dtypes.as_dtype(x.dtype), "shape": list(x.shape)},
                                  name=f"x{i}").name)
        else:
            names.append(b.const(x, dtypes.as_dtype(x.dtype), name=f"c{i}"))
    node = b.add_op(case.op, names, dict(case.attrs), name="op")
    terms = []
    for k, dt in enumerate(output_dtypes(get_op(case.op), node.attrs)):
        if not (dt.is_floating or dt.is_complex) or (case.outputs is not None and k not in case.outputs):
            continue
        out = node.name if k == 0 else f"{node.name}:{k}"
        shape = b.spec(out).shape
        w = RNG.uniform(0.5, 1.5, size=[d for d in shape.as_list()]).astype(dt.numpy)
        prod = b.add_op("Mul", [out, b.const(w, dt, name=f"w{k}")]).name
        axes = b.const(np.arange(len(w.shape), dtype=np.int32), name=f"axes{k}")
        terms.append(b.add_op("Sum", [prod, axes]).name)
    assert terms, f"{case.op} has no float output to differentiate"
    loss = terms[0] if len(terms) == 1 else b.add_op("AddN", terms).name
    xs = [names[i] for i in wrt]
    grads = gradients(b, [loss], xs)
    return b, ins, wrt, names, loss, grads


def check_gradient(case: GradCase) -> None:
    b, ins, wrt, names, loss, grads = _build(case)
    sess = Session(b.graph_def)
    feeds = {names[i]: ins[i] for i in wrt}
    for i, g in zip(wrt, grads):
        assert g is not None, f"{case.op}: no gradient reached input {i}"
    analytic = sess.run(list(grads), feeds)
    for i, got in zip(wrt, analytic):
        x = ins[i]
        numeric = np.zeros_like(x)
        flat = numeric.reshape(-1)
        for j in range(x.size):
            xp, xm = x.copy().reshape(-1), x.copy().reshape(-1)
            xp[j] += case.eps
            xm[j] -= case.eps
            lp = sess.run(loss, {**feeds, names[i]: xp.reshape(x.shape)})
            lm = sess.run(loss, {**feeds, names[i]: xm.reshape(x.shape)})
            d = (lp - lm) / (2 * case.eps)
            # A real input's gradient is the real part of a complex loss's derivative (TF's rule).
            flat[j] = d if np.iscomplexobj(flat) else np.real(d)
        assert got.shape == x.shape, f"{case.op}: gradient of input {i} has shape {got.shape}, input {x.shape}"
        np.testing.assert_allclose(got, numeric, rtol=case.rtol, atol=case.atol,
                                   err_msg=f"{case.op}: gradient of input {i}")
    sess.close()
