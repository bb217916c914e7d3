"""ONNX export of the layers (recurrent ones as ONNX Loops): onnxruntime matches specflow's
Session to 1e-5 at two batch sizes, with perturbed variable values."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.export.onnx_export import MODEL_FILE, export_onnx, run_onnx
from specflow.schema.loader import load_spec_text
from tests.export.test_onnx_export import perturbed_model, specflow_outputs

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

LAYER_NODES = {
    "lstm": "{layer: lstm, inputs: [x], units: 3, return_sequences: true}",
    "gru_masked": "{layer: gru, inputs: {sequence: x, mask: m}, units: 3}",
    "simple_rnn_backwards": "{layer: simple_rnn, inputs: [x], units: 3, go_backwards: true}",
    "bidirectional": "{layer: bidirectional, inputs: [x], rnn: {gru: {units: 2, return_sequences: true}}}",
    "attention": "{layer: multi_head_attention, inputs: {query: x, mask: m}, num_heads: 2, key_dim: 2, causal: true}",
    "layer_norm": "{layer: layer_norm, inputs: [x]}",
    "group_norm": "{layer: group_norm, inputs: [x], groups: 2}",
    "group_norm_channels_first": "{layer: group_norm, inputs: [x], groups: 5, axis: 1}",
    "conv1d": "{layer: conv1d, inputs: [x], filters: 2, kernel_size: 3, padding: causal}",
    "activations": "{layer: dense, inputs: [x], units: 3, activation: gelu_tanh}",
    "hard_sigmoid": "{layer: hard_sigmoid, inputs: [x]}",
    "gelu_exact": "{layer: dense, inputs: [x], units: 3, activation: gelu}",
    "pool_pad_concat": "{layer: global_max_pool, inputs: [{op: Pad, inputs: [x], paddings: [[0, 0], [1, 1], [0, 0]]}]}",
    "conv2d_transpose": "{layer: conv2d_transpose, inputs: [img], filters: 2, kernel_size: 3, strides: 2}",
    "conv2d_transpose_same": "{layer: conv2d_transpose, inputs: [img], filters: 3, kernel_size: [3, 2], strides: [1, 2], "
                             "padding: same}",
    "upsampling": "{layer: upsampling2d, inputs: [img]}",
    "separable_conv2d": "{layer: separable_conv2d, inputs: [img], filters: 3, kernel_size: 2, depth_multiplier: 2, "
                        "padding: same}",
}


def spec_text(node: str) -> str:
    return f"""specflow: 1
name: t
inputs:
  x: {{dtype: float32, shape: [null, 5, 4]}}
  m: {{dtype: bool, shape: [null, 5]}}
  img: {{dtype: float32, shape: [null, 3, 3, 2]}}
nodes:
  y: {node}
signatures:
  serving_default: {{inputs: {{x: x, m: m, img: img}}, outputs: {{y: y}}}}
"""


@pytest.mark.parametrize("name", sorted(LAYER_NODES))
def test_layer_exports_to_onnx(name, tmp_path):
    model = perturbed_model(load_spec_text(spec_text(LAYER_NODES[name])))
    path = tmp_path / MODEL_FILE
    export_onnx(model, path, "serving_default")
    sig = model.signatures["serving_default"]
    for batch in (1, 3):
        rng = np.random.default_rng(batch)
        feeds = {}
        for alias, (_, s) in sig.inputs.items():
            shape = [batch if d is None else d for d in s.shape.as_list()]
            feeds[alias] = (rng.uniform(size=shape) > 0.3) if s.dtype.name == "bool" else \
                rng.normal(size=shape).astype(s.dtype.numpy)
            if s.dtype.name == "bool":
                feeds[alias][:, 0] = True  # every sequence has a real first step
        got, want = run_onnx(path, feeds), specflow_outputs(model, "serving_default", feeds)
        np.testing.assert_allclose(got["y"], want["y"], rtol=1e-5, atol=1e-5)
