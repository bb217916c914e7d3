"""examples/digits_python.py: trains, saves, and `specflow predict` (and TensorFlow, where
installed) runs the export."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np

import specflow as sf

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "digits_python.py"


def test_python_example_trains_saves_and_predicts(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("digits_python", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    assert example.main([str(tmp_path / "export"), "--steps", "300"]) == 0
    accuracy = float(capsys.readouterr().out.split("held-out accuracy: ")[1].split()[0])
    assert accuracy > 0.85
    data = np.load(Path(sf.__file__).parent / "data" / "digits.npz")
    images = (data["images"][:5] / 16).astype(np.float32)
    np.save(tmp_path / "images.npy", images)
    run = subprocess.run([sys.executable, "-m", "specflow.cli", "predict", str(tmp_path / "export"), "-i",
                          f"images={tmp_path / 'images.npy'}", "-o", str(tmp_path / "out.npz")],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    probs = np.load(tmp_path / "out.npz")["probabilities"]
    want = sf.load(tmp_path / "export").serving_default(images=images)["probabilities"].numpy()
    np.testing.assert_allclose(probs, want, rtol=1e-6)
    assert (tmp_path / "export.ckpt" / "checkpoint").exists()
    if importlib.util.find_spec("tensorflow") is not None:  # and TensorFlow loads it, where installed
        import tensorflow as tf

        loaded = tf.saved_model.load(str(tmp_path / "export"))
        got = loaded.signatures["serving_default"](images=tf.constant(images))["probabilities"].numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
