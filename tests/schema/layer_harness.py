"""Run a layer for real: expand it on placeholders, initialize its variables in a Session, and
fetch its outputs, its variables' values and gradients (checked against finite differences)."""

from __future__ import annotations

import numpy as np

import specflow.ops  # noqa: F401  (registers the ops)
from specflow.graph import dtypes
from specflow.graph.builder import GraphBuilder
from specflow.graph.shapes import Shape
from specflow.runtime.session import Session
from specflow.schema.layers import LAYERS, LayerContext, expand_layer
from specflow.train.gradients import gradients


class LayerRun:
    """``kind`` expanded as ``layer`` on placeholders named by ``inputs`` (name -> array); the
    layer's inputs are the names in order (a list) or by role (``roles``: role -> name)."""

    def __init__(self, kind: str, inputs: dict[str, np.ndarray], roles: dict[str, str] | None = None,
                 shapes: dict[str, list] | None = None, **config):
        self.b = b = GraphBuilder()
        self.feeds = {}
        for name, value in inputs.items():
            value = np.asarray(value)
            shape = (shapes or {}).get(name, [None, *value.shape[1:]] if value.ndim else [])
            b.add_op("Placeholder", [], {"dtype": dtypes.as_dtype(value.dtype), "shape": Shape(shape)}, name=name)
            self.feeds[name] = value
        args = roles if roles is not None else list(inputs)
        out = expand_layer(b, "layer", args, LAYERS[kind].model_validate(config), LayerContext(name="layer"),
                           kind=kind)  # fmt: skip
        self.outputs = out if isinstance(out, list) else [out]
        self.variables = {v.name.removeprefix("layer/"): v for v in b.collections.get("variables", [])}
        self.session = Session(b.graph_def)
        inits = b.collections.get("init_ops", [])
        if inits:
            self.session.run([], targets=inits)

    def run(self, extra: dict | None = None) -> list[np.ndarray]:
        return self.session.run(self.outputs, feeds={**self.feeds, **(extra or {})})

    def weights(self) -> dict[str, np.ndarray]:
        return dict(zip(self.variables, self.session.run([v.read for v in self.variables.values()])))

    def set_weights(self, values: dict[str, np.ndarray]) -> None:
        """Feed these values for the variables' reads on every later run (Keras weights)."""
        for name, value in values.items():
            self.feeds[self.variables[name].read] = np.asarray(value, self.weights()[name].dtype)

    def check_gradients(self, wrt: list[str], output: int = 0, rtol=1e-5, atol=1e-7, eps=1e-6) -> None:
        """d sum(output * w) / d each of ``wrt`` (input names or variable names) against central
        finite differences; w is a fixed random weighting, so every output element counts."""
        b, s = self.b, self.session
        y = self.outputs[output]
        shape = s.run(y, feeds=self.feeds).shape
        w = np.random.default_rng(0).normal(size=shape)
        weight = b.const(w.astype(b.spec(y).dtype.numpy), b.spec(y).dtype)
        prod = b.add_op("Mul", [y, weight]).name
        loss = b.add_op("Sum", [prod, b.const(np.arange(len(shape), dtype=np.int32))]).name
        tensors = [self.variables[n].read if n in self.variables else n for n in wrt]
        grads = gradients(b, [loss], tensors)
        s = self.session = Session(b.graph_def)
        inits = b.collections.get("init_ops", [])
        if inits:
            s.run([], targets=inits)
        base = {**self.feeds}
        for t in tensors:
            if t not in base:
                base[t] = s.run(t, feeds=self.feeds)
        got = s.run(grads, feeds=base)
        for name, t, g in zip(wrt, tensors, got):
            x = base[t]
            num = np.zeros_like(x, dtype=np.float64)
            for j in range(x.size):
                d = np.zeros(x.size)
                d[j] = eps
                d = d.reshape(x.shape).astype(x.dtype)
                hi = s.run(loss, feeds={**base, t: x + d})
                lo = s.run(loss, feeds={**base, t: x - d})
                num.flat[j] = (hi - lo) / (2 * eps)
            np.testing.assert_allclose(g, num, rtol=rtol, atol=atol, err_msg=f"d loss / d {name}")
