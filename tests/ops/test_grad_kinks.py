"""specflow's gradients at kinks and ties equal TensorFlow's recorded ones (grad_kinks.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from specflow.runtime.session import Session
from tests.ops import grad_harness as gh
from tests.ops.grad_kinks import RECORDED, kink_cases

TF = json.loads(RECORDED.read_text())["grads"]
CASES = [c for c in kink_cases() if c.id in TF]


def test_every_kink_case_is_recorded():
    assert len(CASES) == len(kink_cases()), sorted({c.id for c in kink_cases()} - set(TF))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_gradient_at_kinks_equals_tensorflows(case, monkeypatch):
    monkeypatch.setattr(gh, "RNG", np.random.default_rng(0))  # the weights TF's values were recorded with
    b, ins, wrt, names, loss, grads = gh._build(case)
    want = TF[case.id]
    with Session(b.graph_def) as s:
        for i, g, w in zip(wrt, grads, want):
            w = np.zeros_like(ins[i]) if w is None else np.array(w, np.float64).reshape(ins[i].shape)
            got = np.zeros_like(ins[i]) if g is None else s.run(g, {names[k]: ins[k] for k in wrt})
            np.testing.assert_allclose(got, w, rtol=1e-6, atol=1e-9, err_msg=f"{case.op}: input {i}")
