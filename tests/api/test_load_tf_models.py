"""sf.load of TensorFlow-made artefacts (the fixtures of tests/io/data/tf2, written by
scripts/make_tf_fixtures.py): outputs against TensorFlow's recorded ones."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import specflow as sf

TF2 = Path(__file__).resolve().parents[1] / "io" / "data" / "tf2"


@pytest.mark.parametrize("file", ["frozen_cnn.pb", "frozen_cnn.pbtxt", "frozen_lstm.pb"])
def test_load_a_frozen_graph_def(file):
    rec = np.load(TF2 / f"{Path(file).stem}.npz")
    m = sf.load(TF2 / file)
    sig = m.signatures["serving_default"]
    feeds = {k[3:].split(":")[0]: rec[k] for k in rec if k.startswith("in_")}
    got = sig(**feeds)
    for k in rec:
        if k.startswith("out_"):
            np.testing.assert_allclose(got[k[4:].split(":")[0]].numpy(), rec[k], rtol=1e-5, atol=1e-6)
    m.close()
