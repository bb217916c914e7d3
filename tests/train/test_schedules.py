"""Learning-rate schedules as graph ops against numpy (Keras' formulas) at many steps, and their
parameter errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specflow.errors import SpecError
from specflow.graph.builder import GraphBuilder
from specflow.runtime.session import Session
from specflow.train.optimizers import create_global_step
from specflow.train.schedules import learning_rate

STEPS = np.arange(0, 400, 7).tolist() + [99, 100, 101, 199, 200, 201, 1000, 5000]


def _rates(spec, steps=STEPS):
    """The schedule's value at each step, with the step fed to an int64 Placeholder."""
    b = GraphBuilder()
    step = b.add_op("Placeholder", attrs={"dtype": "int64", "shape": []}, name="step").name
    lr = learning_rate(b, spec, step)
    session = Session(b.graph_def)
    return np.array([session.run(lr, feeds={step: np.int64(s)}) for s in steps])


def _exponential(s, initial, decay_steps, decay_rate, staircase=False):
    p = s / decay_steps
    return initial * decay_rate ** (math.floor(p) if staircase else p)


def _cosine(s, initial, decay_steps, alpha=0.0):
    fraction = min(s, decay_steps) / decay_steps
    return initial * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * fraction)) + alpha)


def _piecewise(s, boundaries, values):
    return values[sum(s > b for b in boundaries)]


def _polynomial(s, initial, decay_steps, end=0.0001, power=1.0, cycle=False):
    if cycle:
        decay_steps = decay_steps * (1 if s == 0 else math.ceil(s / decay_steps))
    else:
        s = min(s, decay_steps)
    return (initial - end) * (1 - s / decay_steps) ** power + end


def _inverse_time(s, initial, decay_steps, decay_rate, staircase=False):
    p = s / decay_steps
    return initial / (1 + decay_rate * (math.floor(p) if staircase else p))


def _warm(fn, warmup):
    # Linear from 0 to the schedule's first value at step N; the schedule counts from N.
    return lambda s: fn(max(s - warmup, 0)) * min(s / warmup, 1.0)


CASES = [
    ({"schedule": "constant", "value": 0.1}, lambda s: 0.1),
    ({"schedule": "exponential", "initial": 0.1, "decay_steps": 100, "decay_rate": 0.96},
     lambda s: _exponential(s, 0.1, 100, 0.96)),
    ({"schedule": "exponential", "initial": 0.5, "decay_steps": 30, "decay_rate": 0.5, "staircase": True},
     lambda s: _exponential(s, 0.5, 30, 0.5, staircase=True)),
    ({"schedule": "cosine", "initial": 0.1, "decay_steps": 200}, lambda s: _cosine(s, 0.1, 200)),
    ({"schedule": "cosine", "initial": 0.2, "decay_steps": 150, "alpha": 0.1}, lambda s: _cosine(s, 0.2, 150, 0.1)),
    ({"schedule": "piecewise", "boundaries": [100, 200], "values": [0.1, 0.01, 0.001]},
     lambda s: _piecewise(s, [100, 200], [0.1, 0.01, 0.001])),
    ({"schedule": "piecewise", "boundaries": [], "values": [0.3]}, lambda s: 0.3),
    ({"schedule": "constant", "value": 0.1, "warmup_steps": 50}, _warm(lambda s: 0.1, 50)),
    ({"schedule": "exponential", "initial": 0.1, "decay_steps": 40, "decay_rate": 0.9, "staircase": True,
      "warmup_steps": 20}, _warm(lambda s: _exponential(s, 0.1, 40, 0.9, True), 20)),
    ({"schedule": "cosine", "initial": 0.1, "decay_steps": 300, "alpha": 0.05, "warmup_steps": 100},
     _warm(lambda s: _cosine(s, 0.1, 300, 0.05), 100)),
    ({"schedule": "piecewise", "boundaries": [10, 60], "values": [1.0, 0.5, 0.25], "warmup_steps": 7},
     _warm(lambda s: _piecewise(s, [10, 60], [1.0, 0.5, 0.25]), 7)),
    ({"schedule": "polynomial", "initial": 0.1, "decay_steps": 200}, lambda s: _polynomial(s, 0.1, 200)),
    ({"schedule": "polynomial", "initial": 0.5, "decay_steps": 90, "end": 0.01, "power": 2.0, "cycle": True},
     lambda s: _polynomial(s, 0.5, 90, 0.01, 2.0, True)),
    ({"schedule": "inverse_time", "initial": 0.1, "decay_steps": 50, "decay_rate": 0.5},
     lambda s: _inverse_time(s, 0.1, 50, 0.5)),
    ({"schedule": "inverse_time", "initial": 0.3, "decay_steps": 40, "decay_rate": 1.5, "staircase": True,
      "warmup_steps": 10}, _warm(lambda s: _inverse_time(s, 0.3, 40, 1.5, True), 10)),
]  # fmt: skip


@pytest.mark.parametrize("spec,ref", CASES, ids=[f"{c[0]['schedule']}{i}" for i, c in enumerate(CASES)])
def test_schedule_matches_numpy(spec, ref):
    got = _rates(spec)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, [ref(s) for s in STEPS], rtol=2e-6, atol=1e-9)


def test_a_number_is_a_constant_and_global_step_variable_drives_a_schedule():
    b = GraphBuilder()
    step = create_global_step(b)
    fixed = learning_rate(b, 0.25, step)
    decayed = learning_rate(b, {"schedule": "exponential", "initial": 1.0, "decay_steps": 1, "decay_rate": 0.5}, step)
    assert b.graph_def.nodes[-1].name == decayed == "learning_rate_1"
    assert fixed == "learning_rate" and b.value(fixed) == np.float32(0.25)
    assert step.read in {i for n in b.graph_def.nodes for i in n.inputs}
    init = b.add_op("NoOp", name="init", control_inputs=b.collections["init_ops"]).name
    session = Session(b.graph_def)
    session.run([], targets=[init])
    assert session.run([fixed, decayed]) == [np.float32(0.25), np.float32(1.0)]


def test_scheduled_ops_live_under_a_scope():
    b = GraphBuilder()
    step = b.add_op("Placeholder", attrs={"dtype": "int64", "shape": []}, name="step").name
    with b.name_scope("train"):
        name = learning_rate(b, {"schedule": "cosine", "initial": 0.1, "decay_steps": 10}, step)
    assert name == "train/learning_rate"
    assert all(n.name.startswith("train/learning_rate") for n in b.graph_def.nodes[1:])


@pytest.mark.parametrize(
    "spec,path,match",
    [
        (-0.1, "learning_rate", "a learning rate must be a finite number >= 0"),
        ("fast", "learning_rate", "a learning rate must be a finite number >= 0"),
        ({"schedule": "cosin", "initial": 0.1}, "learning_rate.schedule", r"did you mean 'cosine'"),
        ({"initial": 0.1}, "learning_rate.schedule", "unknown schedule None"),
        ({"schedule": "cosine", "initial": 0.1, "decay_step": 5}, "learning_rate.decay_step",
         r"no parameter 'decay_step' \(did you mean 'decay_steps'\?\)"),
        ({"schedule": "exponential", "initial": 0.1, "decay_rate": 0.5}, "learning_rate", "needs 'decay_steps'"),
        ({"schedule": "exponential", "initial": 0.1, "decay_steps": -5, "decay_rate": 0.5},
         "learning_rate.decay_steps", "must be an integer >= 1, got -5"),
        ({"schedule": "exponential", "initial": 0.1, "decay_steps": 5, "decay_rate": 0},
         "learning_rate.decay_rate", "must be a number > 0"),
        ({"schedule": "exponential", "initial": 0.1, "decay_steps": 5, "decay_rate": 0.5, "staircase": 1},
         "learning_rate.staircase", "must be true or false"),
        ({"schedule": "cosine", "initial": 0.1, "decay_steps": 5, "alpha": 2}, "learning_rate.alpha", r"in \[0, 1\]"),
        ({"schedule": "constant", "value": 0.1, "warmup_steps": -1}, "learning_rate.warmup_steps",
         "must be an integer >= 0, got -1"),
        ({"schedule": "constant", "value": 0.1, "warmup_steps": 2.5}, "learning_rate.warmup_steps", "integer"),
        ({"schedule": "piecewise", "boundaries": [100, 100], "values": [1, 2, 3]}, "learning_rate.boundaries[1]",
         "strictly increasing, but 100 follows 100"),
        ({"schedule": "piecewise", "boundaries": [-1], "values": [1, 2]}, "learning_rate.boundaries[0]",
         "must be an integer >= 0"),
        ({"schedule": "piecewise", "boundaries": [10, 20], "values": [1, 2]}, "learning_rate.values",
         r"\(2 boundaries, so 3 values\), got 2"),
        ({"schedule": "piecewise", "boundaries": [10], "values": [1, -2]}, "learning_rate.values[1]", ">= 0"),
    ],
)  # fmt: skip
def test_bad_parameters_are_spec_errors(spec, path, match):
    b = GraphBuilder()
    step = b.add_op("Placeholder", attrs={"dtype": "int64", "shape": []}, name="step").name
    with pytest.raises(SpecError, match=match) as info:
        learning_rate(b, spec, step)
    assert info.value.path == path
