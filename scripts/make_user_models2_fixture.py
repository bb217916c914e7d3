"""Write tests/cli/data/user_models2: models users wrote (specs), their data, and what Keras 3
gives for each: `PYTHONPATH=. /work/scratch/tfvenv/bin/python scripts/make_user_models2_fixture.py [NAME ...]`.

Each model is a spec and the same model written in Keras. The spec is trained by the Trainer a
few steps in a fixed data order (shuffle: false); its initial weights are loaded into the Keras
model, which is trained by `train_on_batch` on the same batches. Stored per model, in
NAME_keras.npz: the initial weights (`init/VAR`), Keras's loss per step (`losses`), its final
weights (`final/VAR`) and its predictions on the probe inputs (`probe/INPUT`, `pred/OUTPUT`).
The spec's dropouts, if any, train with rate 0 here (the comparison needs no randomness). Prints
the largest differences from specflow."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from specflow.schema.loader import load_spec  # noqa: E402
from specflow.train.evaluate import load_split  # noqa: E402
from tests.cli.user_models2_run import DATA, train  # noqa: E402

MODELS: dict[str, dict] = {}


def model(name, spec, data, keras_fn, weights, probe, outputs, no_dropout=(), sample_weight=None, class_weight=None):
    MODELS[name] = dict(spec=spec, data=data, keras=keras_fn, weights=weights, probe=probe, outputs=outputs,
                        no_dropout=no_dropout, sample_weight=sample_weight, class_weight=class_weight)


def xent(logits, labels):
    return f"{{op: Mean, inputs: [{{op: SparseSoftmaxCrossEntropyWithLogits, inputs: [{logits}, {labels}]}}]}}"


# --- 1. text classifier: Embedding(mask_zero) + Bidirectional(GRU, return_sequences) + masked average

TEXT_BIGRU = f"""
specflow: 1
name: text_bigru
seed: 1
inputs:
  tokens: {{dtype: int32, shape: [null, 10]}}
  label: {{dtype: int64, shape: [null]}}
nodes:
  emb: {{layer: embedding, inputs: [tokens], input_dim: 30, output_dim: 8, mask_zero: true}}
  rnn: {{layer: bidirectional, inputs: {{sequence: emb, mask: "emb:1"}}, rnn: {{gru: {{units: 6, return_sequences: true}}}}}}
  pooled: {{layer: global_avg_pool, inputs: [rnn, "emb:1"]}}
  logits: {{layer: dense, inputs: [pooled], units: 3}}
  probs: {{op: Softmax, inputs: [logits]}}
  loss: {xent("logits", "label")}
signatures:
  serving_default: {{inputs: {{tokens: tokens}}, outputs: {{probs: probs}}}}
train:
  loss: loss
  optimizer: {{adam: {{learning_rate: 0.01, beta_1: 0.8, beta_2: 0.99, epsilon: 1.0e-6}}}}
  data: {{source: {{npz: text_bigru.npz}}, feeds: {{tokens: x, label: y}}, batch_size: 8, shuffle: false, split: {{test: 0.25}}}}
  steps: 6
"""


def text_data(rng):
    n = 64
    lengths = rng.integers(3, 11, n)
    x = rng.integers(1, 30, (n, 10)).astype(np.int32)
    x[np.arange(10)[None, :] >= lengths[:, None]] = 0
    return {"x": x, "y": (x.sum(1) % 3).astype(np.int64)}


def text_keras(keras):
    L = keras.layers
    t = keras.Input((10,), dtype="int32")
    h = L.Embedding(30, 8, mask_zero=True)(t)
    h = L.Bidirectional(L.GRU(6, return_sequences=True))(h)
    h = L.GlobalAveragePooling1D()(h)
    m = keras.Model(t, L.Dense(3)(h))
    opt = keras.optimizers.Adam(0.01, beta_1=0.8, beta_2=0.99, epsilon=1e-6)
    return m, dict(optimizer=opt, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)), ["x"], ["y"]


model("text_bigru", TEXT_BIGRU, text_data, text_keras,
      "auto", probe={"tokens": "x"}, outputs={"probs": "softmax"})



def sce(keras):
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


# --- 2. a transformer encoder block: MultiHeadAttention, residuals, LayerNormalization, GELU, dropout

TRANSFORMER = f"""
specflow: 1
name: transformer_block
seed: 2
inputs:
  tokens: {{dtype: int32, shape: [null, 6]}}
  label: {{dtype: int64, shape: [null]}}
  training: {{dtype: bool, shape: [], default: false}}
nodes:
  emb: {{layer: embedding, inputs: [tokens], input_dim: 20, output_dim: 8}}
  x0: {{op: AddV2, inputs: [emb, pos]}}
  att: {{layer: multi_head_attention, inputs: {{query: x0}}, num_heads: 2, key_dim: 4}}
  att_drop: {{layer: dropout, inputs: [att], rate: 0.1}}
  ln1: {{layer: layer_norm, inputs: [{{op: AddV2, inputs: [x0, att_drop]}}], epsilon: 1.0e-6}}
  ff1: {{layer: dense, inputs: [ln1], units: 16, activation: gelu}}
  ff2: {{layer: dense, inputs: [ff1], units: 8}}
  ff_drop: {{layer: dropout, inputs: [ff2], rate: 0.1}}
  res2: {{layer: add, inputs: [ln1, ff_drop]}}
  ln2: {{layer: layer_norm, inputs: [res2], epsilon: 1.0e-6}}
  pooled: {{layer: global_avg_pool, inputs: [ln2]}}
  logits: {{layer: dense, inputs: [pooled], units: 2}}
  probs: {{op: Softmax, inputs: [logits]}}
  loss: {xent("logits", "label")}
variables:
  pos: {{shape: [6, 8], initializer: {{random_normal: {{stddev: 0.02}}}}}}
signatures:
  serving_default: {{inputs: {{tokens: tokens}}, outputs: {{probs: probs}}}}
train:
  loss: loss
  optimizer: {{adamw: {{learning_rate: 0.005, beta_2: 0.98, weight_decay: 0.01}}}}
  data: {{source: {{npz: transformer_block.npz}}, feeds: {{tokens: x, label: y}}, batch_size: 8, shuffle: false, split: {{test: 0.25}}}}
  steps: 6
"""


def transformer_data(rng):
    x = rng.integers(0, 20, (64, 6)).astype(np.int32)
    return {"x": x, "y": (x[:, 0] > x[:, -1]).astype(np.int64)}


def transformer_keras(keras):
    L = keras.layers

    class AddPosition(L.Layer):
        def build(self, shape):
            self.pos = self.add_weight(shape=(6, 8), name="pos")

        def call(self, x):
            return x + self.pos

    t = keras.Input((6,), dtype="int32")
    x0 = AddPosition()(L.Embedding(20, 8)(t))
    att = L.Dropout(0.0)(L.MultiHeadAttention(2, 4)(x0, x0))
    ln1 = L.LayerNormalization(epsilon=1e-6)(x0 + att)
    ff = L.Dropout(0.0)(L.Dense(8)(L.Dense(16, activation="gelu")(ln1)))
    ln2 = L.LayerNormalization(epsilon=1e-6)(L.Add()([ln1, ff]))
    m = keras.Model(t, L.Dense(2)(L.GlobalAveragePooling1D()(ln2)))
    opt = keras.optimizers.AdamW(0.005, beta_2=0.98, weight_decay=0.01)
    return m, dict(optimizer=opt, loss=sce(keras)), ["x"], ["y"]


model("transformer_block", TRANSFORMER, transformer_data, transformer_keras, ["emb/embeddings", "pos"],
      probe={"tokens": "x"}, outputs={"probs": "softmax"}, no_dropout=("att_drop", "ff_drop"))


# --- 3. a MobileNet-style block: DepthwiseConv2D, SeparableConv2D, BatchNormalization, ReLU6

def images(rng, n=64, shape=(8, 8, 1), k=10):
    x = rng.normal(size=(n, *shape)).astype(np.float32)
    return {"x": x, "y": (np.abs(x.reshape(n, -1)).argmax(1) % k).astype(np.int64)}


MOBILENET = f"""
specflow: 1
name: mobilenet_block
seed: 3
inputs:
  images: {{dtype: float32, shape: [null, 8, 8, 1]}}
  label: {{dtype: int64, shape: [null]}}
  training: {{dtype: bool, shape: [], default: false}}
nodes:
  stem: {{layer: conv2d, inputs: [images], filters: 8, kernel_size: 3, strides: 2, padding: same, use_bias: false}}
  stem_bn: {{layer: batch_norm, inputs: [stem], momentum: 0.9}}
  stem_act: {{layer: activation, inputs: [stem_bn], activation: relu6}}
  dw: {{layer: depthwise_conv2d, inputs: [stem_act], kernel_size: 3, padding: same, use_bias: false}}
  dw_bn: {{layer: batch_norm, inputs: [dw], momentum: 0.9}}
  dw_act: {{layer: activation, inputs: [dw_bn], activation: relu6}}
  pw: {{layer: conv2d, inputs: [dw_act], filters: 16, kernel_size: 1, use_bias: false}}
  pw_bn: {{layer: batch_norm, inputs: [pw], momentum: 0.9}}
  pw_act: {{layer: activation, inputs: [pw_bn], activation: relu6}}
  sep: {{layer: separable_conv2d, inputs: [pw_act], filters: 16, kernel_size: 3, padding: same, depth_multiplier: 2}}
  sep_bn: {{layer: batch_norm, inputs: [sep], momentum: 0.9, epsilon: 1.0e-5}}
  sep_act: {{layer: activation, inputs: [sep_bn], activation: relu6}}
  pooled: {{layer: global_avg_pool, inputs: [sep_act]}}
  logits: {{layer: dense, inputs: [pooled], units: 10}}
  probs: {{op: Softmax, inputs: [logits]}}
  loss: {xent("logits", "label")}
signatures:
  serving_default: {{inputs: {{images: images}}, outputs: {{probs: probs}}}}
train:
  loss: loss
  optimizer: {{momentum: {{learning_rate: 0.05, momentum: 0.9, nesterov: true}}}}
  data: {{source: {{npz: mobilenet_block.npz}}, feeds: {{images: x, label: y}}, batch_size: 8, shuffle: false, split: {{test: 0.25}}}}
  steps: 6
"""


def mobilenet_keras(keras):
    L = keras.layers
    i = keras.Input((8, 8, 1))
    x = L.ReLU(6.0)(L.BatchNormalization(momentum=0.9)(L.Conv2D(8, 3, strides=2, padding="same", use_bias=False)(i)))
    x = L.ReLU(6.0)(L.BatchNormalization(momentum=0.9)(L.DepthwiseConv2D(3, padding="same", use_bias=False)(x)))
    x = L.ReLU(6.0)(L.BatchNormalization(momentum=0.9)(L.Conv2D(16, 1, use_bias=False)(x)))
    x = L.SeparableConv2D(16, 3, padding="same", depth_multiplier=2)(x)
    x = L.ReLU(6.0)(L.BatchNormalization(momentum=0.9, epsilon=1e-5)(x))
    m = keras.Model(i, L.Dense(10)(L.GlobalAveragePooling2D()(x)))
    opt = keras.optimizers.SGD(0.05, momentum=0.9, nesterov=True)
    return m, dict(optimizer=opt, loss=sce(keras)), ["x"], ["y"]


model("mobilenet_block", MOBILENET, images, mobilenet_keras, "auto",
      probe={"images": "x"}, outputs={"probs": "softmax"})


# --- 4. a ResNet block: strided convs, a projection shortcut, Add

RESNET = f"""
specflow: 1
name: resnet_block
seed: 4
inputs:
  images: {{dtype: float32, shape: [null, 8, 8, 3]}}
  label: {{dtype: int64, shape: [null]}}
  training: {{dtype: bool, shape: [], default: false}}
nodes:
  stem: {{layer: conv2d, inputs: [images], filters: 8, kernel_size: 3, padding: same, activation: relu}}
  c1: {{layer: conv2d, inputs: [stem], filters: 16, kernel_size: 3, strides: 2, padding: same, use_bias: false}}
  bn1: {{layer: batch_norm, inputs: [c1]}}
  r1: {{op: Relu, inputs: [bn1]}}
  c2: {{layer: conv2d, inputs: [r1], filters: 16, kernel_size: 3, padding: same, use_bias: false}}
  bn2: {{layer: batch_norm, inputs: [c2]}}
  shortcut: {{layer: conv2d, inputs: [stem], filters: 16, kernel_size: 1, strides: 2, use_bias: false}}
  sum: {{layer: add, inputs: [bn2, shortcut]}}
  out: {{op: Relu, inputs: [sum]}}
  pooled: {{layer: global_avg_pool, inputs: [out]}}
  logits: {{layer: dense, inputs: [pooled], units: 4}}
  probs: {{op: Softmax, inputs: [logits]}}
  loss: {xent("logits", "label")}
signatures:
  serving_default: {{inputs: {{images: images}}, outputs: {{probs: probs}}}}
train:
  loss: loss
  # epsilon: the kernel before a batch norm has gradients of float32 noise (the norm cancels
  # them); Adam's 1e-7 would make each a step of up to lr, different in every framework
  optimizer: {{adam: {{learning_rate: 0.01, epsilon: 1.0e-4}}}}
  data: {{source: {{npz: resnet_block.npz}}, feeds: {{images: x, label: y}}, batch_size: 8, shuffle: false, split: {{test: 0.25}}}}
  steps: 6
"""


def resnet_keras(keras):
    L = keras.layers
    i = keras.Input((8, 8, 3))
    stem = L.Conv2D(8, 3, padding="same", activation="relu")(i)
    x = L.ReLU()(L.BatchNormalization()(L.Conv2D(16, 3, strides=2, padding="same", use_bias=False)(stem)))
    x = L.BatchNormalization()(L.Conv2D(16, 3, padding="same", use_bias=False)(x))
    short = L.Conv2D(16, 1, strides=2, use_bias=False)(stem)
    x = L.ReLU()(L.Add()([x, short]))
    m = keras.Model(i, L.Dense(4)(L.GlobalAveragePooling2D()(x)))
    return m, dict(optimizer=keras.optimizers.Adam(0.01, epsilon=1e-4), loss=sce(keras)), ["x"], ["y"]


model("resnet_block", RESNET, lambda rng: images(rng, shape=(8, 8, 3), k=4), resnet_keras, "auto",
      probe={"images": "x"}, outputs={"probs": "softmax"})


# --- 5. Conv1D + MaxPooling1D + GlobalAveragePooling1D on sequences (a regression)

CONV1D = """
specflow: 1
name: conv1d_seq
seed: 5
inputs:
  series: {dtype: float32, shape: [null, 20, 2]}
  target: {dtype: float32, shape: [null, 1]}
nodes:
  c1: {layer: conv1d, inputs: [series], filters: 8, kernel_size: 3, padding: same, activation: relu}
  p1: {layer: max_pool1d, inputs: [c1], pool_size: 2}
  c2: {layer: conv1d, inputs: [p1], filters: 8, kernel_size: 3, activation: relu}
  p2: {layer: avg_pool1d, inputs: [c2], pool_size: 3, strides: 2, padding: same}
  pooled: {layer: global_avg_pool, inputs: [p2]}
  pred: {layer: dense, inputs: [pooled], units: 1}
  loss: {op: Mean, inputs: [{op: SquaredDifference, inputs: [pred, target]}]}
signatures:
  serving_default: {inputs: {series: series}, outputs: {pred: pred}}
train:
  loss: loss
  optimizer: {sgd: {learning_rate: 0.05, weight_decay: 0.01}}
  data: {source: {npz: conv1d_seq.npz}, feeds: {series: x, target: y}, batch_size: 8, shuffle: false, split: {test: 0.25}}
  steps: 6
"""


def conv1d_data(rng):
    x = rng.normal(size=(64, 20, 2)).astype(np.float32)
    return {"x": x, "y": (x[:, :, 0].max(1, keepdims=True) - x[:, :, 1].mean(1, keepdims=True)).astype(np.float32)}


def conv1d_keras(keras):
    L = keras.layers
    i = keras.Input((20, 2))
    x = L.MaxPooling1D(2)(L.Conv1D(8, 3, padding="same", activation="relu")(i))
    x = L.AveragePooling1D(3, strides=2, padding="same")(L.Conv1D(8, 3, activation="relu")(x))
    m = keras.Model(i, L.Dense(1)(L.GlobalAveragePooling1D()(x)))
    return m, dict(optimizer=keras.optimizers.SGD(0.05, weight_decay=0.01), loss="mse"), ["x"], ["y"]


model("conv1d_seq", CONV1D, conv1d_data, conv1d_keras, "auto", probe={"series": "x"}, outputs={"pred": None})


# --- 6. two inputs, two outputs, two losses with loss weights

MULTI_IO = f"""
specflow: 1
name: multi_io
seed: 6
inputs:
  numeric: {{dtype: float32, shape: [null, 5]}}
  extra: {{dtype: float32, shape: [null, 3]}}
  kind: {{dtype: int64, shape: [null]}}
  amount: {{dtype: float32, shape: [null, 1]}}
nodes:
  a: {{layer: dense, inputs: [numeric], units: 8, activation: relu}}
  b: {{layer: dense, inputs: [extra], units: 8, activation: relu}}
  joined: {{layer: concat, inputs: [a, b]}}
  shared: {{layer: dense, inputs: [joined], units: 8, activation: tanh}}
  kind_logits: {{layer: dense, inputs: [shared], units: 3}}
  amount_pred: {{layer: dense, inputs: [shared], units: 1}}
  kind_probs: {{op: Softmax, inputs: [kind_logits]}}
  kind_loss: {xent("kind_logits", "kind")}
  amount_loss: {{op: Mean, inputs: [{{op: SquaredDifference, inputs: [amount_pred, amount]}}]}}
  loss: {{op: AddV2, inputs: [kind_loss, {{op: Mul, inputs: [amount_loss], y: 0.5}}]}}
signatures:
  serving_default: {{inputs: {{numeric: numeric, extra: extra}}, outputs: {{kind: kind_probs, amount: amount_pred}}}}
train:
  loss: loss
  optimizer: {{rmsprop: {{learning_rate: 0.01, rho: 0.8, momentum: 0.5, centered: true, epsilon: 1.0e-6}}}}
  data: {{source: {{npz: multi_io.npz}}, feeds: {{numeric: a, extra: b, kind: k, amount: r}}, batch_size: 8, shuffle: false, split: {{test: 0.25}}}}
  steps: 6
"""


def multi_io_data(rng):
    a = rng.normal(size=(64, 5)).astype(np.float32)
    b = rng.normal(size=(64, 3)).astype(np.float32)
    return {"a": a, "b": b, "k": (a[:, 0] > b[:, 0]).astype(np.int64) + (a[:, 1] > 1),
            "r": (a.sum(1, keepdims=True) * 0.5 + b[:, :1]).astype(np.float32)}


def multi_io_keras(keras):
    L = keras.layers
    a, b = keras.Input((5,)), keras.Input((3,))
    h = L.Dense(8, activation="tanh")(L.Concatenate()([L.Dense(8, activation="relu")(a),
                                                        L.Dense(8, activation="relu")(b)]))
    m = keras.Model([a, b], [L.Dense(3)(h), L.Dense(1)(h)])
    opt = keras.optimizers.RMSprop(0.01, rho=0.8, momentum=0.5, centered=True, epsilon=1e-6)
    return m, dict(optimizer=opt, loss=[sce(keras), "mse"], loss_weights=[1.0, 0.5]), ["a", "b"], ["k", "r"]


model("multi_io", MULTI_IO, multi_io_data, multi_io_keras, "auto", probe={"numeric": "a", "extra": "b"},
      outputs={"kind": "softmax", "amount": None})


# --- 7. a convolutional autoencoder: strided Conv2D, Conv2DTranspose, UpSampling2D

AUTOENCODER = """
specflow: 1
name: conv_autoencoder
seed: 7
inputs:
  images: {dtype: float32, shape: [null, 8, 8, 1]}
nodes:
  e1: {layer: conv2d, inputs: [images], filters: 8, kernel_size: 3, strides: 2, padding: same, activation: relu}
  e2: {layer: conv2d, inputs: [e1], filters: 4, kernel_size: 3, strides: 2, padding: same, activation: relu}
  d1: {layer: conv2d_transpose, inputs: [e2], filters: 8, kernel_size: 3, strides: 2, padding: same, activation: relu}
  up: {layer: upsampling2d, inputs: [d1], size: 2}
  recon: {layer: conv2d, inputs: [up], filters: 1, kernel_size: 3, padding: same, activation: sigmoid}
  loss: {op: Mean, inputs: [{op: SquaredDifference, inputs: [recon, images]}]}
signatures:
  serving_default: {inputs: {images: images}, outputs: {recon: recon}}
train:
  loss: loss
  optimizer: {adam: {learning_rate: 0.01, epsilon: 1.0e-7}}
  data: {source: {npz: conv_autoencoder.npz}, feeds: {images: x}, batch_size: 8, shuffle: false, split: {test: 0.25}}
  steps: 6
"""


def autoencoder_keras(keras):
    L = keras.layers
    i = keras.Input((8, 8, 1))
    x = L.Conv2D(8, 3, strides=2, padding="same", activation="relu")(i)
    x = L.Conv2D(4, 3, strides=2, padding="same", activation="relu")(x)
    x = L.UpSampling2D(2)(L.Conv2DTranspose(8, 3, strides=2, padding="same", activation="relu")(x))
    m = keras.Model(i, L.Conv2D(1, 3, padding="same", activation="sigmoid")(x))
    return m, dict(optimizer=keras.optimizers.Adam(0.01), loss="mse"), ["x"], ["x"]


model("conv_autoencoder", AUTOENCODER, lambda rng: {"x": rng.uniform(size=(64, 8, 8, 1)).astype(np.float32)},
      autoencoder_keras, "auto", probe={"images": "x"}, outputs={"recon": None})



# --- 8. a regression behind a Normalization layer (the data's mean and variance), a Huber loss
# written in ops, SGD on a staircase exponential decay

def regression_data(rng):
    x = (rng.normal(size=(64, 4)) * [1.0, 10.0, 0.1, 3.0] + [5.0, -20.0, 0.0, 1.0]).astype(np.float32)
    return {"x": x, "y": (x @ [[0.5], [0.05], [3.0], [-0.2]] + 1.0).astype(np.float32)}


_REG = regression_data(np.random.default_rng(len("normalized_regression")))["x"]
MEAN, VAR = _REG.mean(0), _REG.var(0)
NORMALIZED = f"""
specflow: 1
name: normalized_regression
seed: 8
inputs:
  features: {{dtype: float32, shape: [null, 4]}}
  target: {{dtype: float32, shape: [null, 1]}}
nodes:
  normalized: {{layer: normalization, inputs: [features], mean: {MEAN.tolist()}, variance: {VAR.tolist()}}}
  h: {{layer: dense, inputs: [normalized], units: 16, activation: relu}}
  pred: {{layer: dense, inputs: [h], units: 1}}
  err: {{op: Abs, inputs: [{{op: Sub, inputs: [pred, target]}}]}}
  quad: {{op: Minimum, inputs: [err], y: 1.0}}
  # Keras's Huber(delta=1): 0.5 * q^2 + delta * (|e| - q), q = min(|e|, delta)
  loss: {{op: Mean, inputs: [{{op: AddV2, inputs: [{{op: Mul, inputs: [{{op: Square, inputs: [quad]}}], y: 0.5}},
                                             {{op: Sub, inputs: [err, quad]}}]}}]}}
signatures:
  serving_default: {{inputs: {{features: features}}, outputs: {{pred: pred}}}}
train:
  loss: loss
  optimizer:
    sgd: {{learning_rate: {{schedule: exponential, initial: 0.05, decay_steps: 2, decay_rate: 0.5, staircase: true}}}}
  data: {{source: {{npz: normalized_regression.npz}}, feeds: {{features: x, target: y}}, batch_size: 8, shuffle: false,
         split: {{test: 0.25}}}}
  steps: 6
"""


def normalized_keras(keras):
    L = keras.layers
    i = keras.Input((4,))
    x = L.Normalization(mean=MEAN, variance=VAR)(i)
    m = keras.Model(i, L.Dense(1)(L.Dense(16, activation="relu")(x)))
    lr = keras.optimizers.schedules.ExponentialDecay(0.05, 2, 0.5, staircase=True)
    return m, dict(optimizer=keras.optimizers.SGD(lr), loss=keras.losses.Huber(1.0)), ["x"], ["y"]


model("normalized_regression", NORMALIZED, regression_data, normalized_keras, "auto", probe={"features": "x"},
      outputs={"pred": None})


# --- 9. L1/L2 regularizers (Keras's kernel_regularizer / bias_regularizer) written into the loss

REGULARIZED = f"""
specflow: 1
name: regularized_mlp
seed: 9
inputs:
  x: {{dtype: float32, shape: [null, 6]}}
  y: {{dtype: int64, shape: [null]}}
nodes:
  h: {{layer: dense, inputs: [x], units: 16, activation: relu}}
  logits: {{layer: dense, inputs: [h], units: 3}}
  probs: {{op: Softmax, inputs: [logits]}}
  xent: {xent("logits", "y")}
  # L1L2(l1=0.001, l2=0.01) on h's kernel, L2(0.001) on its bias, L2(0.01) on logits' kernel
  penalty:
    op: AddN
    inputs:
      - {{op: Mul, inputs: [{{op: Sum, inputs: [{{op: Abs, inputs: [h/kernel]}}]}}], y: 0.001}}
      - {{op: Mul, inputs: [{{op: Sum, inputs: [{{op: Square, inputs: [h/kernel]}}]}}], y: 0.01}}
      - {{op: Mul, inputs: [{{op: Sum, inputs: [{{op: Square, inputs: [h/bias]}}]}}], y: 0.001}}
      - {{op: Mul, inputs: [{{op: Sum, inputs: [{{op: Square, inputs: [logits/kernel]}}]}}], y: 0.01}}
  loss: {{op: AddV2, inputs: [xent, penalty]}}
signatures:
  serving_default: {{inputs: {{x: x}}, outputs: {{probs: probs}}}}
train:
  loss: loss
  optimizer: {{sgd: {{learning_rate: 0.1}}}}
  data: {{source: {{npz: regularized_mlp.npz}}, feeds: {{x: x, y: y}}, batch_size: 8, shuffle: false, split: {{test: 0.25}}}}
  steps: 6
"""


def tabular(rng, n=64, d=6, k=3):
    x = rng.normal(size=(n, d)).astype(np.float32)
    return {"x": x, "y": (np.argmax(x[:, :k], 1)).astype(np.int64)}


def regularized_keras(keras):
    L, R = keras.layers, keras.regularizers
    i = keras.Input((6,))
    h = L.Dense(16, activation="relu", kernel_regularizer=R.L1L2(l1=0.001, l2=0.01), bias_regularizer=R.L2(0.001))(i)
    m = keras.Model(i, L.Dense(3, kernel_regularizer=R.L2(0.01))(h))
    return m, dict(optimizer=keras.optimizers.SGD(0.1), loss=sce(keras)), ["x"], ["y"]


model("regularized_mlp", REGULARIZED, tabular, regularized_keras, "auto", probe={"x": "x"}, outputs={"probs": "softmax"})


# --- 10. per-example sample weights (Keras's sample_weight: sum(w * loss) / batch size), Adagrad

WEIGHTED = """
specflow: 1
name: sample_weighted
seed: 10
inputs:
  x: {dtype: float32, shape: [null, 6]}
  y: {dtype: int64, shape: [null]}
  w: {dtype: float32, shape: [null]}
nodes:
  h: {layer: dense, inputs: [x], units: 12, activation: elu}
  logits: {layer: dense, inputs: [h], units: 3}
  probs: {op: Softmax, inputs: [logits]}
  per_example: {op: SparseSoftmaxCrossEntropyWithLogits, inputs: [logits, y]}
  loss: {op: Mean, inputs: [{op: Mul, inputs: [per_example, w]}]}
signatures:
  serving_default: {inputs: {x: x}, outputs: {probs: probs}}
train:
  loss: loss
  optimizer: {adagrad: {learning_rate: 0.1, initial_accumulator_value: 0.05}}
  data: {source: {npz: sample_weighted.npz}, feeds: {x: x, y: y, w: w}, batch_size: 8, shuffle: false, split: {test: 0.25}}
  steps: 6
"""


def weighted_data(rng):
    d = tabular(rng)
    return {**d, "w": rng.uniform(0.0, 3.0, 64).astype(np.float32)}


def weighted_keras(keras):
    L = keras.layers
    i = keras.Input((6,))
    m = keras.Model(i, L.Dense(3)(L.Dense(12, activation="elu")(i)))
    opt = keras.optimizers.Adagrad(0.1, initial_accumulator_value=0.05)
    return m, dict(optimizer=opt, loss=sce(keras)), ["x"], ["y"]


model("sample_weighted", WEIGHTED, weighted_data, weighted_keras, "auto", probe={"x": "x"},
      outputs={"probs": "softmax"}, sample_weight="w")


# --- 11. class weights (Keras's class_weight: each example weighted by its class's weight)

CLASS_WEIGHTED = """
specflow: 1
name: class_weighted
seed: 11
inputs:
  x: {dtype: float32, shape: [null, 6]}
  y: {dtype: int64, shape: [null]}
nodes:
  h: {layer: dense, inputs: [x], units: 12, activation: selu}
  logits: {layer: dense, inputs: [h], units: 3}
  probs: {op: Softmax, inputs: [logits]}
  weight: {op: GatherV2, inputs: [{op: Const, value: [1.0, 4.0, 0.5], dtype: float32}, y], axis: 0}
  loss: {op: Mean, inputs: [{op: Mul, inputs: [{op: SparseSoftmaxCrossEntropyWithLogits, inputs: [logits, y]}, weight]}]}
signatures:
  serving_default: {inputs: {x: x}, outputs: {probs: probs}}
train:
  loss: loss
  optimizer: {adam: {learning_rate: 0.02, weight_decay: 0.05}}
  data: {source: {npz: class_weighted.npz}, feeds: {x: x, y: y}, batch_size: 8, shuffle: false, split: {test: 0.25}}
  steps: 6
"""


def class_weighted_keras(keras):
    L = keras.layers
    i = keras.Input((6,))
    m = keras.Model(i, L.Dense(3)(L.Dense(12, activation="selu")(i)))
    return m, dict(optimizer=keras.optimizers.Adam(0.02, weight_decay=0.05), loss=sce(keras)), ["x"], ["y"]


model("class_weighted", CLASS_WEIGHTED, tabular, class_weighted_keras, "auto", probe={"x": "x"},
      outputs={"probs": "softmax"}, class_weight={0: 1.0, 1: 4.0, 2: 0.5})


# --- 12. a cosine schedule with linear warmup (Keras's CosineDecay(0, ..., warmup_target, warmup_steps)),
# Nesterov momentum, on a dilated CNN with average pooling (strides 1), dropout and global max pooling

WARMUP = f"""
specflow: 1
name: warmup_cnn
seed: 12
inputs:
  images: {{dtype: float32, shape: [null, 8, 8, 2]}}
  label: {{dtype: int64, shape: [null]}}
  training: {{dtype: bool, shape: [], default: false}}
nodes:
  c1: {{layer: conv2d, inputs: [images], filters: 6, kernel_size: 3, dilation_rate: 2, padding: same, activation: elu}}
  p1: {{layer: avg_pool2d, inputs: [c1], pool_size: 2, strides: 1}}
  drop: {{layer: dropout, inputs: [p1], rate: 0.2}}
  pooled: {{layer: global_max_pool, inputs: [drop]}}
  logits: {{layer: dense, inputs: [pooled], units: 3}}
  probs: {{op: Softmax, inputs: [logits]}}
  loss: {xent("logits", "label")}
signatures:
  serving_default: {{inputs: {{images: images}}, outputs: {{probs: probs}}}}
train:
  loss: loss
  optimizer:
    momentum:
      learning_rate: {{schedule: cosine, initial: 0.1, decay_steps: 4, alpha: 0.1, warmup_steps: 3}}
      momentum: 0.8
      nesterov: true
  data: {{source: {{npz: warmup_cnn.npz}}, feeds: {{images: x, label: y}}, batch_size: 6, shuffle: false, split: {{test: 0.25}}}}
  steps: 8
"""


def warmup_keras(keras):
    L = keras.layers
    i = keras.Input((8, 8, 2))
    x = L.Conv2D(6, 3, dilation_rate=2, padding="same", activation="elu")(i)
    x = L.Dropout(0.0)(L.AveragePooling2D(2, strides=1)(x))
    m = keras.Model(i, L.Dense(3)(L.GlobalMaxPooling2D()(x)))
    lr = keras.optimizers.schedules.CosineDecay(0.0, 4, alpha=0.1, warmup_target=0.1, warmup_steps=3)
    return m, dict(optimizer=keras.optimizers.SGD(lr, momentum=0.8, nesterov=True), loss=sce(keras)), ["x"], ["y"]


model("warmup_cnn", WARMUP, lambda rng: images(rng, shape=(8, 8, 2), k=3), warmup_keras, "auto",
      probe={"images": "x"}, outputs={"probs": "softmax"}, no_dropout=("drop",))


# --- 13. a sequence tagger: stacked LSTMs returning sequences, a Dense on every step (TimeDistributed)

TAGGER = """
specflow: 1
name: lstm_tagger
seed: 13
inputs:
  tokens: {dtype: int64, shape: [null, 7]}
  tags: {dtype: int64, shape: [null, 7]}
nodes:
  emb: {layer: embedding, inputs: [tokens], input_dim: 15, output_dim: 6}
  l1: {layer: lstm, inputs: [emb], units: 8, return_sequences: true}
  l2: {layer: lstm, inputs: [l1], units: 8, return_sequences: true, go_backwards: false, unit_forget_bias: true}
  logits: {layer: dense, inputs: [l2], units: 4}
  probs: {op: Softmax, inputs: [logits]}
  loss:
    op: Mean
    inputs:
      - op: SparseSoftmaxCrossEntropyWithLogits
        inputs: [{op: Reshape, inputs: [logits], shape: [-1, 4]}, {op: Reshape, inputs: [tags], shape: [-1]}]
signatures:
  serving_default: {inputs: {tokens: tokens}, outputs: {probs: probs}}
train:
  loss: loss
  optimizer: {adam: {learning_rate: 0.01, beta_1: 0.85, beta_2: 0.6, amsgrad: true}}
  data: {source: {npz: lstm_tagger.npz}, feeds: {tokens: x, tags: y}, batch_size: 8, shuffle: false, split: {test: 0.25}}
  steps: 6
"""


def tagger_data(rng):
    x = rng.integers(0, 15, (64, 7))
    return {"x": x, "y": x % 4}


def tagger_keras(keras):
    L = keras.layers
    i = keras.Input((7,), dtype="int64")
    x = L.LSTM(8, return_sequences=True)(L.LSTM(8, return_sequences=True)(L.Embedding(15, 6)(i)))
    m = keras.Model(i, L.TimeDistributed(L.Dense(4))(x))
    return m, dict(optimizer=keras.optimizers.Adam(0.01, beta_1=0.85, beta_2=0.6, amsgrad=True), loss=sce(keras)), ["x"], ["y"]


model("lstm_tagger", TAGGER, tagger_data, tagger_keras, "auto", probe={"tokens": "x"}, outputs={"probs": "softmax"})



# --- 14. weight constraints (Keras's kernel_constraint, bias_constraint, embeddings_constraint)

CONSTRAINED = """
specflow: 1
name: constrained_mlp
seed: 14
inputs:
  tokens: {dtype: int32, shape: [null, 5]}
  y: {dtype: int64, shape: [null]}
nodes:
  emb: {layer: embedding, inputs: [tokens], input_dim: 12, output_dim: 4,
        embeddings_constraint: {max_norm: {max_value: 0.06, axis: 1}}}
  flat: {layer: flatten, inputs: [emb]}
  h: {layer: dense, inputs: [flat], units: 8, activation: relu, bias_constraint: non_neg,
      kernel_constraint: {min_max_norm: {min_value: 0.2, max_value: 0.6, rate: 0.5}}}
  logits: {layer: dense, inputs: [h], units: 3, kernel_constraint: unit_norm}
  probs: {op: Softmax, inputs: [logits]}
  loss: {op: Mean, inputs: [{op: SparseSoftmaxCrossEntropyWithLogits, inputs: [logits, y]}]}
signatures:
  serving_default: {inputs: {tokens: tokens}, outputs: {probs: probs}}
train:
  loss: loss
  optimizer: {sgd: {learning_rate: 0.5}}
  data: {source: {npz: constrained_mlp.npz}, feeds: {tokens: x, y: y}, batch_size: 8, shuffle: false, split: {test: 0.25}}
  steps: 6
"""


def constrained_data(rng):
    x = rng.integers(0, 12, (64, 5)).astype(np.int32)
    return {"x": x, "y": (x[:, 0] % 3).astype(np.int64)}


def constrained_keras(keras):
    L, C = keras.layers, keras.constraints
    i = keras.Input((5,), dtype="int32")
    x = L.Flatten()(L.Embedding(12, 4, embeddings_constraint=C.MaxNorm(0.06, axis=1))(i))
    x = L.Dense(8, activation="relu", kernel_constraint=C.MinMaxNorm(0.2, 0.6, rate=0.5),
                bias_constraint=C.NonNeg())(x)
    m = keras.Model(i, L.Dense(3, kernel_constraint=C.UnitNorm())(x))
    return m, dict(optimizer=keras.optimizers.SGD(0.5), loss=sce(keras)), ["x"], ["y"]


model("constrained_mlp", CONSTRAINED, constrained_data, constrained_keras, "auto", probe={"tokens": "x"},
      outputs={"probs": "softmax"})


# --- the driver ---------------------------------------------------------------------------------


def spec_config(name):
    import yaml

    return yaml.safe_load(MODELS[name]["spec"])


def batches(name, arrays):
    cfg = spec_config(name)["train"]
    bs, steps = cfg["data"]["batch_size"], cfg["steps"]
    return [{k: v[i * bs:(i + 1) * bs] for k, v in arrays.items()} for i in range(steps)]


def dense_gradients(opt):
    """Keras 3 applies an embedding's IndexedSlices gradient with one update per occurrence of a
    row (an id twice in a batch moves Adam's row by up to 2 * lr in one step); specflow applies
    the summed gradient, as a dense one. The reference densifies the gradients first."""
    import tensorflow as tf

    apply = opt.apply

    def dense_apply(grads, variables=None):
        return apply([tf.convert_to_tensor(g) for g in grads], variables)

    opt.apply = dense_apply


def keras_order(first, init):
    """The spec's variables in the Keras model's weight order: ``first`` (a list) and then the
    others in the spec's order ("auto": all in the spec's order)."""
    first = [] if first == "auto" else first
    return first + [n for n in init if n not in first]


def keras_run(name, init, arrays, test_arrays):
    import keras

    m = MODELS[name]
    net, compile_kw, x_fields, y_fields = m["keras"](keras)
    dense_gradients(compile_kw["optimizer"])
    net.compile(**compile_kw)
    names = keras_order(m["weights"], init)
    assert [tuple(w.shape) for w in net.weights] == [init[n].shape for n in names], (
        [(w.path, w.shape) for w in net.weights], [(n, init[n].shape) for n in names])
    net.set_weights([init[n] for n in names])
    losses = []
    for batch in batches(name, arrays):
        xs = [batch[f] for f in x_fields]
        ys = [batch[f] for f in y_fields]
        kw = {}
        if m["sample_weight"]:
            kw["sample_weight"] = batch[m["sample_weight"]]
        if m["class_weight"]:
            kw["class_weight"] = m["class_weight"]
        out = net.train_on_batch(xs if len(xs) > 1 else xs[0], ys if len(ys) > 1 else ys[0], **kw)
        losses.append(float(out if np.isscalar(out) else out[0]))
    final = dict(zip(names, [np.asarray(w) for w in net.get_weights()]))
    tx, ty = [test_arrays[f] for f in x_fields], [test_arrays[f] for f in y_fields]
    kw = {"sample_weight": test_arrays[m["sample_weight"]]} if m["sample_weight"] else {}
    if m["class_weight"]:  # the spec's loss weighs the held-out examples too
        kw["sample_weight"] = np.array([m["class_weight"][int(c)] for c in ty[0]], np.float32)
    test_loss = net.evaluate(tx if len(tx) > 1 else tx[0], ty if len(ty) > 1 else ty[0], batch_size=len(tx[0]),
                             verbose=0, **kw)
    test_loss = float(test_loss if np.isscalar(test_loss) else test_loss[0])
    probe = {inp: arrays[field][:5] for inp, field in m["probe"].items()}
    raw = net.predict([probe[i] for i in m["probe"]] if len(probe) > 1 else next(iter(probe.values())), verbose=0)
    raw = raw if isinstance(raw, (list, tuple)) else [raw]
    preds = {}
    for (out, how), r in zip(m["outputs"].items(), raw):
        r = np.asarray(r)
        preds[out] = np.asarray(keras.ops.softmax(r, axis=-1)) if how == "softmax" else r
    return np.array(losses), final, probe, preds, test_loss


def make(name, check_cli=True):
    m = MODELS[name]
    arrays = m["data"](np.random.default_rng(len(name)))
    np.savez(DATA / f"{name}.npz", **arrays)
    (DATA / f"{name}.yaml").write_text(m["spec"].lstrip())
    overrides = [f"nodes.{d}.rate=0.0" for d in m["no_dropout"]]
    with tempfile.TemporaryDirectory() as d:
        init, sf_losses, sf_final, sf_eval = train(name, Path(d) / "run", overrides)
    spec = load_spec(DATA / f"{name}.yaml", overrides)
    train_arrays, test_arrays = load_split(spec, spec.train)
    losses, final, probe, preds, test_loss = keras_run(name, init, train_arrays, test_arrays)
    out = {"losses": losses, "test_loss": test_loss, "no_dropout": np.array(list(m["no_dropout"]), dtype=str), **{f"init/{k}": v for k, v in init.items()}, **{f"final/{k}": v for k, v in final.items()},
           **{f"probe/{k}": v for k, v in probe.items()}, **{f"pred/{k}": v for k, v in preds.items()}}
    np.savez(DATA / f"{name}_keras.npz", **out)
    dl = np.max(np.abs(sf_losses - losses) / np.maximum(np.abs(losses), 1e-6))
    dw = max(np.max(np.abs(sf_final[k] - final[k])) / (np.max(np.abs(final[k])) + 1e-6) for k in final)
    print(f"{name}: losses {np.round(losses, 5).tolist()}\n  specflow {np.round(sf_losses, 5).tolist()}\n"
          f"  max rel loss diff {dl:.2e}, max weight diff (rel to max |w|) {dw:.2e}\n"
          f"  held-out loss: Keras {test_loss:.6f}, specflow {sf_eval['loss']:.6f}")
    if check_cli:
        cli_check(name, probe, preds)


def cli_check(name, probe, preds):
    """validate / train / eval / export / predict as a user runs them; the SavedModel in TensorFlow."""
    import subprocess

    import tensorflow as tf

    m = MODELS[name]
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        spec = DATA / f"{name}.yaml"
        sets = [a for dd in m["no_dropout"] for a in ("--set", f"nodes.{dd}.rate=0.0")]

        def sh(*args):
            r = subprocess.run([sys.executable, "-m", "specflow", *map(str, args)], capture_output=True, text=True,
                               cwd=d)
            text = r.stdout + r.stderr
            status = "ok" if r.returncode == 0 and "Traceback" not in text else "FAILED"
            print(f"  specflow {args[0]}: {status}" + ("" if status == "ok" else f"\n{text[-3000:]}"))
            return text

        sh("validate", spec)
        sh("train", spec, "--logdir", d / "run", *sets)
        sh("eval", spec, "--logdir", d / "run")
        sh("export", spec, "--logdir", d / "run", "--out", d / "export")
        for k, v in probe.items():
            np.save(d / f"{k}.npy", v)
        sh("predict", d / "export", *[a for k in probe for a in ("--input", f"{k}={d / (k + '.npy')}")],
           "--out", d / "preds.npz")
        if (d / "preds.npz").exists():
            got = np.load(d / "preds.npz")
            for k, want in preds.items():
                print(f"  predict {k}: max diff from Keras {np.max(np.abs(got[k] - want)):.2e}")
        loaded = tf.saved_model.load(str(d / "export"))
        fn = loaded.signatures["serving_default"]
        got = fn(**{k: tf.constant(v) for k, v in probe.items()})
        for k, want in preds.items():
            print(f"  TF SavedModel {k}: max diff from Keras {np.max(np.abs(got[k].numpy() - want)):.2e}")


# Keras's CosineDecay with a warmup_target: (initial, decay_steps, alpha, warmup_target, warmup_steps).
COSINE_WARMUPS = [(0.0, 4, 0.1, 0.1, 3), (0.02, 10, 0.0, 0.2, 5), (0.05, 6, 0.3, 0.1, 0), (0.3, 8, 0.0, 0.1, 4)]
SCHEDULE_STEPS = list(range(25))


def make_schedules():
    """keras_schedules.npz: `cosine_K` = CosineDecay(*COSINE_WARMUPS[K]) at SCHEDULE_STEPS."""
    import keras

    out = {"steps": np.array(SCHEDULE_STEPS), "configs": np.array(COSINE_WARMUPS, np.float64)}
    for k, (initial, decay, alpha, target, warm) in enumerate(COSINE_WARMUPS):
        fn = keras.optimizers.schedules.CosineDecay(initial, decay, alpha=alpha, warmup_target=target,
                                                    warmup_steps=warm)
        out[f"cosine_{k}"] = np.array([float(fn(s)) for s in SCHEDULE_STEPS], np.float32)
    np.savez(DATA / "keras_schedules.npz", **out)


if __name__ == "__main__":
    make_schedules()
    for n in sys.argv[1:] or MODELS:
        make(n)
