"""Each zoo model, trained 3 steps and exported, loads in TensorFlow (tf.saved_model.load) and
its serving signature matches specflow's to 1e-5. Skipped where TensorFlow is not importable."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.export.exporter import export_model
from specflow.export.loader import load_saved_model
from tests.train.test_zoo import ZOO

tf = pytest.importorskip("tensorflow")


@pytest.mark.parametrize("name", ZOO)
def test_zoo_savedmodel_runs_in_tensorflow(name, trained, tmp_path):
    spec, logdir = trained(name)
    export_model(spec, logdir, tmp_path / "export")
    ours = load_saved_model(tmp_path / "export")
    rng = np.random.default_rng(0)
    feeds = {}
    for alias, (_, s) in ours.signatures["serving_default"].inputs.items():
        shape = [5 if d is None else d for d in s.shape.as_list()]
        value = rng.integers(0, 9, shape) if s.dtype.is_integer else rng.uniform(0, 1, shape)
        feeds[alias] = value.astype(s.dtype.numpy)
    want = ours.run("serving_default", feeds)
    got = tf.saved_model.load(str(tmp_path / "export")).signatures["serving_default"](
        **{k: tf.constant(v) for k, v in feeds.items()})
    for key, value in want.items():
        np.testing.assert_allclose(got[key].numpy(), value, rtol=1e-5, atol=1e-6)
