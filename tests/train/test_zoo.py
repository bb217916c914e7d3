"""The model zoo (models/): each model validates, and a few Trainer steps lower its loss."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specflow.schema.loader import load_spec
from specflow.train.loop import Listener, Trainer, TrainOptions

MODELS = Path(__file__).resolve().parents[2] / "models"
ZOO = ["lenet5", "resnet_digits", "lstm_language_model", "gru_classifier", "transformer_classifier", "word2vec",
       "autoencoder", "house_regression", "bilstm_attention", "siamese_digits"]
LAYERS_USED = {
    "lenet5": {"zero_padding", "conv2d", "avg_pool2d"},
    "resnet_digits": {"batch_norm", "add", "global_avg_pool"},
    "lstm_language_model": {"embedding", "lstm"},
    "gru_classifier": {"gru"},
    "transformer_classifier": {"multi_head_attention", "layer_norm"},
    "word2vec": {"embedding"},
    "autoencoder": {"conv2d_transpose", "upsampling2d"},
    "house_regression": {"dense", "dropout"},
    "bilstm_attention": {"bidirectional", "embedding"},
    "siamese_digits": {"dense"},
}


class Losses(Listener):
    def __init__(self):
        self.losses: dict[int, float] = {}

    def on_step(self, step, loss, steps_per_sec):
        self.losses[step] = loss


def test_every_zoo_model_is_in_the_readme():
    readme = (MODELS.parent / "README.md").read_text()
    assert all(f"models/{name}.yaml" in readme for name in ZOO)


@pytest.mark.parametrize("name", ZOO)
def test_zoo_model_trains(name, tmp_path):
    spec = load_spec(MODELS / f"{name}.yaml")
    assert spec.train is not None and spec.signatures
    text = (MODELS / f"{name}.yaml").read_text()
    assert all(f"layer: {layer}" in text for layer in LAYERS_USED[name])
    rec = Losses()
    result = Trainer(spec, TrainOptions(logdir=tmp_path / "run", steps=8), rec).run()
    assert result.step == 8
    losses = [rec.losses[s] for s in sorted(rec.losses)]
    assert np.isfinite(losses).all()
    assert np.mean(losses[-2:]) < np.mean(losses[:2]), losses
