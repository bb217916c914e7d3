"""Models written as a TensorFlow 2 user writes them in their first week, once, against a
namespace ``tf`` that is either ``specflow`` or ``tensorflow`` itself (and ``opts``: sf.optimizers
or tf.keras.optimizers). ``tests/api/test_tf_style_models.py`` runs them on specflow and compares
with the values TensorFlow 2.21 gave for the same code (``data/tf_style_models.npz``, written by
``data/make_tf_style_models.py``), and, where TensorFlow is importable, with TensorFlow live.

Every model takes its initial weights from a seeded numpy generator, so both libraries start
from the same numbers; each returns a dict of numpy arrays (losses per step, final weights,
gradients, outputs)."""

from __future__ import annotations

import numpy as np

# --- shared pieces -------------------------------------------------------------------------------


def _data(seed: int, *shape, classes: int = 3):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape).astype(np.float32)
    y = rng.integers(0, classes, shape[0]).astype(np.int64)
    return x, y


def _layers(tf):
    rng = np.random.default_rng(1)

    class Dense(tf.Module):
        def __init__(self, n_in, n_out, activation=None, name=None):
            super().__init__(name=name)
            self.kernel = tf.Variable(rng.normal(0, 1 / np.sqrt(n_in), (n_in, n_out)).astype(np.float32))
            self.bias = tf.Variable(np.zeros(n_out, np.float32))
            self.activation = activation

        def __call__(self, x):
            y = tf.matmul(x, self.kernel) + self.bias
            return self.activation(y) if self.activation else y

    class Conv(tf.Module):
        def __init__(self, c_in, c_out, name=None):
            super().__init__(name=name)
            self.filters = tf.Variable(rng.normal(0, 0.3, (3, 3, c_in, c_out)).astype(np.float32))
            self.bias = tf.Variable(np.zeros(c_out, np.float32))

        def __call__(self, x):
            return tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, self.filters, strides=1, padding="SAME"), self.bias))

    class LayerNorm(tf.Module):
        def __init__(self, d, name=None):
            super().__init__(name=name)
            self.gamma = tf.Variable(np.ones(d, np.float32) + rng.normal(0, 0.1, d).astype(np.float32))
            self.beta = tf.Variable(rng.normal(0, 0.1, d).astype(np.float32))

        def __call__(self, x):
            mean, var = tf.nn.moments(x, axes=[-1], keepdims=True)
            return tf.nn.batch_normalization(x, mean, var, self.beta, self.gamma, 1e-6)

    return Dense, Conv, LayerNorm, rng


# --- 1. a CNN classifier trained by a custom loop ---------------------------------------------------


def convnet_training(tf, opts, steps: int = 12):
    Dense, Conv, _, _ = _layers(tf)

    class ConvNet(tf.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = Conv(1, 4)
            self.conv2 = Conv(4, 8)
            self.hidden = Dense(4 * 4 * 8, 16, tf.nn.relu)
            self.out = Dense(16, 3)

        def __call__(self, x):
            h = tf.nn.max_pool2d(self.conv1(x), ksize=2, strides=2, padding="VALID")
            h = tf.reshape(self.conv2(h), [-1, 4 * 4 * 8])
            return self.out(self.hidden(h))

    net = ConvNet()
    opt = opts.Adam(learning_rate=0.01)
    x, y = _data(2, 16, 8, 8, 1)

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            logits = net(x)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        grads = tape.gradient(loss, net.trainable_variables)
        opt.apply_gradients(zip(grads, net.trainable_variables))
        return loss

    losses = [float(train_step(x, y)) for _ in range(steps)]
    acc = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(net(x), axis=1), y), tf.float32))
    return {"losses": np.array(losses), "accuracy": np.array(float(acc)),
            **{f"w{i}": v.numpy() for i, v in enumerate(net.trainable_variables)}}


# --- 2. a transformer encoder block (multi-head attention, layer norm, residuals, a mask) ----------


D_MODEL, HEADS, STEPS = 8, 2, 5
MASK = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 1, 0]], np.float32)


def make_encoder(tf):
    """A transformer encoder classifier; ``__call__(x, mask)`` has an input_signature (None batch)."""
    Dense, _, LayerNorm, rng = _layers(tf)
    d, heads, t = D_MODEL, HEADS, STEPS

    class MultiHeadAttention(tf.Module):
        def __init__(self):
            super().__init__()
            dh = d // heads
            self.wq, self.wk, self.wv = (tf.Variable(rng.normal(0, 0.4, (d, heads, dh)).astype(np.float32))
                                         for _ in range(3))
            self.wo = tf.Variable(rng.normal(0, 0.4, (heads, dh, d)).astype(np.float32))

        def __call__(self, x, mask):
            q = tf.einsum("btd,dhk->bhtk", x, self.wq)
            k = tf.einsum("btd,dhk->bhtk", x, self.wk)
            v = tf.einsum("btd,dhk->bhtk", x, self.wv)
            scores = tf.matmul(q, k, transpose_b=True) / np.sqrt(d // heads).astype(np.float32)
            scores += (1.0 - mask[:, None, None, :]) * -1e9  # padded keys get no attention
            attn = tf.nn.softmax(scores, axis=-1)
            return tf.einsum("bhtk,hkd->btd", tf.matmul(attn, v), self.wo)

    class Encoder(tf.Module):
        def __init__(self):
            super().__init__()
            self.attention = MultiHeadAttention()
            self.norm1, self.norm2 = LayerNorm(d), LayerNorm(d)
            self.ff1 = Dense(d, 16, lambda h: tf.nn.gelu(h))
            self.ff2 = Dense(16, d)
            self.head = Dense(d, 3)

        @tf.function(input_signature=[tf.TensorSpec([None, t, d], tf.float32), tf.TensorSpec([None, t], tf.float32)])
        def __call__(self, x, mask):
            h = self.norm1(x + self.attention(x, mask))
            b = tf.shape(h)[0]
            flat = tf.reshape(h, [b * t, d])
            h = self.norm2(h + tf.reshape(self.ff2(self.ff1(flat)), [b, t, d]))
            pooled = tf.reduce_sum(h * mask[:, :, None], axis=1) / tf.reduce_sum(mask, axis=1, keepdims=True)
            return self.head(pooled)

    return Encoder()


def transformer_block(tf, opts, steps: int = 6):
    model = make_encoder(tf)
    x, y = _data(3, 4, STEPS, D_MODEL)
    mask = MASK
    out0 = model(x, mask).numpy()
    x_noisy = x.copy()
    x_noisy[mask == 0] = 100.0  # padded positions must not change the outputs
    masked_out = model(x_noisy, mask).numpy()
    opt = opts.Adam(learning_rate=0.02)

    @tf.function
    def train_step(x, mask, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=model(x, mask)))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss, grads

    first_grads = None
    losses = []
    for _ in range(steps):
        loss, grads = train_step(x, mask, y)
        losses.append(float(loss))
        if first_grads is None:
            first_grads = [g.numpy() for g in grads]
    return {"out0": out0, "masked_out": masked_out, "losses": np.array(losses),
            **{f"g{i}": g for i, g in enumerate(first_grads)}}


# --- 3. LSTM and GRU sequence models: return_sequences, masking, bidirectional --------------------


def _recurrent(tf, rng, n_in: int, units: int):
    class LSTM(tf.Module):
        """Keras's LSTM math (gates i, f, c, o; one kernel for the four), a mask carrying the
        state over padded steps and giving the previous output there, as Keras masks."""

        def __init__(self, go_backwards=False, inputs=n_in, name=None):
            super().__init__(name=name)
            self.kernel = tf.Variable(rng.normal(0, 0.3, (inputs, 4 * units)).astype(np.float32))
            self.recurrent_kernel = tf.Variable(rng.normal(0, 0.3, (units, 4 * units)).astype(np.float32))
            self.bias = tf.Variable(np.concatenate([np.zeros(units), np.ones(units), np.zeros(2 * units)]).astype(np.float32))
            self.go_backwards = go_backwards

        def __call__(self, x, mask, return_sequences=False):
            steps = x.shape[1]
            h = tf.zeros([tf.shape(x)[0], units])
            c = tf.zeros([tf.shape(x)[0], units])
            outputs = []
            order = range(steps - 1, -1, -1) if self.go_backwards else range(steps)
            for s in order:
                z = tf.matmul(x[:, s], self.kernel) + tf.matmul(h, self.recurrent_kernel) + self.bias
                i, f, g, o = tf.split(z, 4, axis=1)
                c_new = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
                h_new = tf.sigmoid(o) * tf.tanh(c_new)
                keep = mask[:, s:s + 1] > 0
                h = tf.where(keep, h_new, h)
                c = tf.where(keep, c_new, c)
                outputs.append(h)
            if self.go_backwards:
                outputs = outputs[::-1]
            return tf.stack(outputs, axis=1) if return_sequences else h

    class GRU(tf.Module):
        """Keras's GRU (reset_after=True) as a tf.while_loop over time: the graph's loop."""

        def __init__(self, name=None):
            super().__init__(name=name)
            self.kernel = tf.Variable(rng.normal(0, 0.3, (n_in, 3 * units)).astype(np.float32))
            self.recurrent_kernel = tf.Variable(rng.normal(0, 0.3, (units, 3 * units)).astype(np.float32))
            self.bias = tf.Variable(rng.normal(0, 0.1, (2, 3 * units)).astype(np.float32))

        def __call__(self, x, mask):
            def step(s, h):
                xs = tf.gather(x, s, axis=1)
                mx = tf.matmul(xs, self.kernel) + self.bias[0]
                mh = tf.matmul(h, self.recurrent_kernel) + self.bias[1]
                xz, xr, xh = tf.split(mx, 3, axis=1)
                hz, hr, hh = tf.split(mh, 3, axis=1)
                z = tf.sigmoid(xz + hz)
                r = tf.sigmoid(xr + hr)
                cand = tf.tanh(xh + r * hh)
                h_new = z * h + (1 - z) * cand
                return s + 1, tf.where(tf.gather(mask, s, axis=1)[:, None] > 0, h_new, h)

            _, h = tf.while_loop(lambda s, h: s < tf.shape(x)[1], step, (tf.constant(0), tf.zeros([tf.shape(x)[0], units])))
            return h

    return LSTM, GRU


def sequence_models(tf, opts, steps: int = 5):
    Dense, _, _, rng = _layers(tf)
    n_in, units, t = 3, 4, 6
    LSTM, GRU = _recurrent(tf, rng, n_in, units)

    class Tagger(tf.Module):
        """A bidirectional LSTM with return_sequences feeding an LSTM and a GRU, then a head."""

        def __init__(self):
            super().__init__()
            self.forward_lstm = LSTM()
            self.backward_lstm = LSTM(go_backwards=True)
            self.top = LSTM(inputs=2 * units)
            self.gru = GRU()
            self.head = Dense(2 * units, 2)

        def __call__(self, x, mask):
            seq = tf.concat([self.forward_lstm(x, mask, return_sequences=True),
                             self.backward_lstm(x, mask, return_sequences=True)], axis=-1)
            return self.head(tf.concat([self.top(seq, mask), self.gru(x, mask)], axis=-1))

    model = Tagger()
    x, _ = _data(4, 3, t, n_in)
    lengths = np.array([6, 4, 2])
    mask = (np.arange(t)[None, :] < lengths[:, None]).astype(np.float32)
    target = np.random.default_rng(5).normal(size=(3, 2)).astype(np.float32)
    opt = opts.SGD(learning_rate=0.1, momentum=0.9)

    @tf.function
    def train_step(x, mask):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, mask) - target))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    out0 = model(x, mask).numpy()
    noisy = x.copy()
    noisy[mask == 0] = 50.0
    masked_out = model(noisy, mask).numpy()
    eager = tf.sequence_mask(lengths, t, dtype=tf.float32).numpy()
    losses = [float(train_step(x, mask)) for _ in range(steps)]
    return {"out0": out0, "masked_out": masked_out, "sequence_mask": eager, "losses": np.array(losses),
            **{f"w{i}": v.numpy() for i, v in enumerate(model.trainable_variables)}}


# --- 4. Python control flow as the graph's: tf.cond and tf.while_loop in tf.function ---------------


def control_flow_model(tf, opts, steps: int = 4):
    rng = np.random.default_rng(6)
    w = tf.Variable(rng.normal(0, 0.5, (3, 3)).astype(np.float32))
    x = rng.normal(size=(4, 3)).astype(np.float32)

    @tf.function
    def forward(x):
        def cond(i, h):
            return tf.logical_and(i < 8, tf.reduce_max(tf.abs(h)) > 0.05)  # a data-dependent trip count

        def body(i, h):
            return i + 1, tf.tanh(tf.matmul(h, w)) * 0.9

        n, h = tf.while_loop(cond, body, (tf.constant(0), x))
        y = tf.cond(tf.reduce_sum(h) > 0, lambda: h * 2.0, lambda: -h + 1.0)
        return n, tf.reduce_sum(tf.square(y))

    opt = opts.SGD(learning_rate=0.05)
    losses, trips = [], []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            n, loss = forward(x)
        opt.apply_gradients([(tape.gradient(loss, w), w)])
        losses.append(float(loss))
        trips.append(int(n))
    return {"losses": np.array(losses), "trips": np.array(trips), "w": w.numpy()}


# --- 5. a function that creates its variables on the first call -----------------------------------


def lazy_variables(tf, opts):
    class LazyDense(tf.Module):
        def __init__(self, units):
            super().__init__()
            self.units = units
            self.kernel = None

        @tf.function
        def __call__(self, x):
            if self.kernel is None:  # built from the first input's shape, as Keras layers are
                n = x.shape[-1]
                self.kernel = tf.Variable(tf.ones([n, self.units]) / n)
                self.bias = tf.Variable(tf.zeros([self.units]))
            return tf.matmul(x, self.kernel) + self.bias

    layer = LazyDense(2)
    a = layer(np.arange(6, dtype=np.float32).reshape(2, 3))
    b = layer(np.ones((5, 3), np.float32))  # a new shape: traced again, the variables kept
    return {"a": a.numpy(), "b": b.numpy(), "n_variables": np.array(len(layer.trainable_variables))}


# --- 6. retracing: shapes, dtypes, Python values, input_signature with None dims -----------------


def retracing(tf, count):
    """``count(fn)``: how many times ``fn`` traced (len(concrete_functions) or TF's tracing count)."""
    traces = []

    @tf.function
    def f(x, k):
        traces.append(1)
        return x * 2 + k

    f(np.ones((2, 3), np.float32), 1)
    f(np.ones((2, 3), np.float32), 1)        # the same signature: no trace
    f(np.ones((4, 3), np.float32), 1)        # a new shape
    f(np.ones((2, 3), np.int32), 1)          # a new dtype
    f(np.ones((2, 3), np.float32), 2)        # a new Python value
    f(tf.constant(np.ones((2, 3), np.float32)), 1)  # a tensor of a seen signature: no trace

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def g(x):
        return tf.reduce_sum(x, axis=1)

    outs = [g(np.ones((n, 3), np.float32)).numpy() for n in (1, 2, 7)]
    return {"f_traces": np.array(count(f)), "python_traces": np.array(len(traces)), "g_traces": np.array(count(g)),
            "g_out": np.concatenate(outs)}


# --- 7. an optimizer zoo on one quadratic-ish loss ------------------------------------------------


def optimizer_zoo(tf, opts, steps: int = 5):
    rng = np.random.default_rng(7)
    start = rng.normal(size=(3, 2)).astype(np.float32)
    x = rng.normal(size=(5, 3)).astype(np.float32)
    out = {}
    makers = {
        "sgd": lambda: opts.SGD(0.1),
        "momentum": lambda: opts.SGD(0.1, momentum=0.9),
        "nesterov": lambda: opts.SGD(0.1, momentum=0.9, nesterov=True),
        "adam": lambda: opts.Adam(0.05),
        "amsgrad": lambda: opts.Adam(0.05, amsgrad=True),
        "adamw": lambda: opts.AdamW(0.05, weight_decay=0.1),
        "rmsprop": lambda: opts.RMSprop(0.01),
        "rmsprop_centered_momentum": lambda: opts.RMSprop(0.01, momentum=0.5, centered=True),
        "adagrad": lambda: opts.Adagrad(0.1),
    }
    for name, make in makers.items():
        w = tf.Variable(start)
        opt = make()
        for _ in range(steps):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.nn.softplus(tf.matmul(x, w))) + tf.reduce_sum(w * w) * 0.1
            opt.apply_gradients([(tape.gradient(loss, w), w)])
        out[name] = w.numpy()
    return out


MODELS = {
    "convnet": convnet_training,
    "transformer": transformer_block,
    "sequence": sequence_models,
    "control_flow": control_flow_model,
    "lazy": lazy_variables,
    "optimizers": optimizer_zoo,
}


# --- 8. Keras layers in Sequential models, trained by a custom loop -------------------------------


def keras_models(tf, keras, weights: dict | None = None, steps: int = 5):
    """A CNN (Conv2D, MaxPooling2D, Flatten, Dropout, gelu Dense) and a text model (Embedding, a
    Dense on 3-D input, LayerNormalization, GlobalAveragePooling1D) as ``keras.Sequential``s,
    trained with Adam on SparseCategoricalCrossentropy(from_logits=True). ``weights`` (name ->
    list of arrays) replaces the initial weights (Keras's random draws are its own); the result
    holds the initial weights used. Gradients are made dense before the update: Keras's Adam
    treats TensorFlow's sparse embedding gradient (IndexedSlices) differently where ids repeat."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 8, 8, 1)).astype(np.float32)
    y = rng.integers(0, 3, 8)
    ids = rng.integers(0, 20, (4, 6))
    y_text = rng.integers(0, 2, 4)
    L = keras.layers
    cnn = keras.Sequential([L.Conv2D(4, 3, padding="same", activation="relu"), L.MaxPooling2D(2),
                            L.Conv2D(6, 3, strides=2, activation="relu"), L.Flatten(), L.Dropout(0.5),
                            L.Dense(16, activation="gelu"), L.Dense(3)])
    text = keras.Sequential([L.Embedding(20, 8), L.Dense(8, activation="tanh"), L.LayerNormalization(),
                             L.GlobalAveragePooling1D(), L.Dense(2)])
    # id 0 pads: the mask reaches the bidirectional LSTM, the GRU and the pooling
    padded = ids * (np.arange(6)[None, :] < np.array([6, 4, 2, 5])[:, None])
    rnn = keras.Sequential([L.Embedding(20, 6, mask_zero=True), L.Bidirectional(L.LSTM(5, return_sequences=True)),
                            L.GRU(4, return_sequences=True), L.GlobalAveragePooling1D(), L.Dense(2)])
    rnn_last = keras.Sequential([L.Embedding(20, 6, mask_zero=True), L.LSTM(3, go_backwards=True), L.Dense(2)])
    out = {}
    for name, model, inputs, labels in (("cnn", cnn, x, y), ("text", text, ids, y_text), ("rnn", rnn, padded, y_text),
                                        ("rnn_last", rnn_last, padded, y_text)):
        model(inputs)
        if weights is not None:
            model.set_weights(weights[name])
        for i, w in enumerate(model.get_weights()):
            out[f"{name}_weight{i}"] = np.asarray(w)
        opt = keras.optimizers.Adam(0.01)
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

        @tf.function
        def step(inputs, labels, model=model, opt=opt, loss_fn=loss_fn):
            with tf.GradientTape() as tape:
                loss = loss_fn(labels, model(inputs, training=False))
            grads = [tf.convert_to_tensor(g) for g in tape.gradient(loss, model.trainable_variables)]
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        out[f"{name}_losses"] = np.array([float(step(inputs, labels)) for _ in range(steps)])
        probs = tf.nn.softmax(model(inputs))
        onehot = tf.one_hot(labels, probs.shape[-1])
        out[f"{name}_out"] = np.asarray(model(inputs))
        out[f"{name}_prob_loss"] = np.asarray(keras.losses.SparseCategoricalCrossentropy()(labels, probs))
        out[f"{name}_cce"] = np.asarray(keras.losses.CategoricalCrossentropy()(onehot, probs))
        out[f"{name}_mse"] = np.asarray(keras.losses.MeanSquaredError()(onehot, probs))
        out[f"{name}_bce"] = np.asarray(keras.losses.BinaryCrossentropy()(onehot, probs))
    return out
