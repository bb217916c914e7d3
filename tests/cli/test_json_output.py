"""`--format json` output is JSON a strict parser reads: NaN and infinities (a metric of 0/0, a
diverged prediction) were written as Python's bare NaN / Infinity, which RFC 8259 parsers
(JavaScript's JSON.parse, Go's encoding/json) reject. They are strings now, as protobuf's JSON
mapping writes them: "NaN", "Infinity", "-Infinity"."""

from __future__ import annotations

import json

import numpy as np

from specflow.views.saved_model_view import predictions_json

from .cli_helpers import ok
from .test_user_specs import SPEC, spec_file


def strict(text: str):
    def refuse(constant):
        raise ValueError(f"non-standard JSON constant {constant}")

    return json.loads(text, parse_constant=refuse)


def test_predictions_json_writes_non_finite_values_as_strings():
    out = strict(predictions_json({"y": np.array([[1.5, np.nan], [np.inf, -np.inf]], np.float32),
                                   "n": np.array([3], np.int64)}))
    assert out["y"]["value"] == [[1.5, "NaN"], ["Infinity", "-Infinity"]]
    assert out["n"] == {"dtype": "int64", "shape": [1], "value": [3]}


def test_eval_json_of_a_nan_metric_is_strict_json(tmp_path):
    text = SPEC.replace("  loss: {op: Mean", "  nanm: {op: RealDiv, inputs: [{op: Sub, inputs: [loss, loss]}, "
                        "{op: Sub, inputs: [loss, loss]}]}\n  loss: {op: Mean")
    text = text.replace("  checkpoints:", "  eval: {metrics: [loss, nanm]}\n  checkpoints:")
    spec = spec_file(tmp_path, text)
    ok("train", spec, "--logdir", tmp_path / "run", "--steps", 2)
    out = strict(ok("eval", spec, "--logdir", tmp_path / "run", "--format", "json"))
    assert out["metrics"]["nanm"] == "NaN" and isinstance(out["metrics"]["loss"], float)


def test_inspect_json_of_a_non_finite_constant_is_strict_json(tmp_path):
    spec = spec_file(tmp_path, SPEC.replace("  loss:", "  odd: {op: Const, value: [.nan, .inf], dtype: float32}\n  loss:", 1))
    nodes = strict(ok("inspect", spec, "--format", "json"))["nodes"]
    assert "NaN" in json.dumps(next(n for n in nodes if n["name"] == "odd"))
