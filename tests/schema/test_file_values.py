"""Values a spec keeps beside it (specflow/schema/file_values.py, what `specflow import` writes): a
Const's `value: {npy: file}`, a variable's `initializer: {checkpoint: prefix}`, and a Const's inline
value cast to its dtype."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.errors import SpecflowError
from specflow.io.tensor_bundle import write_bundle
from specflow.runtime.session import Session
from specflow.schema.loader import load_spec

SPEC = """specflow: 1
name: t
inputs:
  x: {dtype: float32, shape: [null, 3]}
variables:
  w: {shape: [3, 2], initializer: {checkpoint: vals.ckpt}}
nodes:
  big: {op: Const, value: {npy: consts/big.npy}, dtype: float32}
  k: {op: Const, value: 2, dtype: int32}
  y: {op: MatMul, inputs: [x, w]}
  z: {op: AddV2, inputs: [y, big]}
signatures:
  serving_default: {inputs: {x: x}, outputs: {z: z, k: k}}
"""


def _write(tmp_path, text=SPEC):
    (tmp_path / "consts").mkdir(exist_ok=True)
    np.save(tmp_path / "consts" / "big.npy", np.arange(2, dtype=np.float32))
    write_bundle(str(tmp_path / "vals.ckpt"), {"w": np.arange(6, dtype=np.float32).reshape(3, 2)})
    (tmp_path / "m.yaml").write_text(text)
    return tmp_path / "m.yaml"


def test_values_come_from_files_beside_the_spec(tmp_path, monkeypatch):
    path = _write(tmp_path)
    monkeypatch.chdir("/")  # paths are relative to the spec file, not the working directory
    spec = load_spec(str(path))
    x = np.ones((2, 3), np.float32)
    with Session(spec.graph_def) as s:
        s.run([], targets=[spec.lowered.init_op])
        z, k = s.run(["z", "k"], {"x": x})
    np.testing.assert_array_equal(z, x @ np.arange(6, dtype=np.float32).reshape(3, 2) + np.arange(2))
    assert k.dtype == np.int32 and k == 2  # the inline value took the Const's dtype


@pytest.mark.parametrize("change, message", [
    (("consts/big.npy", "consts/none.npy"), r"m.yaml:8:\d+: .*value file .*none.npy: not a readable .npy file"),
    (("{checkpoint: vals.ckpt}", "{checkpoint: {prefix: vals.ckpt, key: v}}"), r"checkpoint .*vals.ckpt has no tensor 'v'"),
    (("shape: [3, 2]", "shape: [2, 3]"), r"holds 'w' as float32\[3, 2\], the variable is float32\[2, 3\]"),
    (("{checkpoint: vals.ckpt}", "{checkpoint: nowhere.ckpt}"), r"no such checkpoint"),
    (("{checkpoint: vals.ckpt}", "{checkpoint: {path: vals.ckpt}}"), r"initializer 'checkpoint' has no parameter 'path'"),
    (("value: 2, dtype: int32", "value: 3000000000, dtype: int32"), r"m.yaml:9:\d+: nodes.k.value: Const value: 3000000000 is out of range for int32"),
    (("value: 2, dtype: int32", "value: 2.5, dtype: int32"), r"m.yaml:9:\d+: nodes.k.value: Const value: .*int32"),
])
def test_bad_file_values_are_clear_errors(tmp_path, change, message):
    path = _write(tmp_path, SPEC.replace(*change))
    with pytest.raises(SpecflowError, match=message):
        load_spec(str(path))
