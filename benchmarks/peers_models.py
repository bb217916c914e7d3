"""The workloads of ``benchmarks/peers.py`` written for each side: specflow (a spec through a
Session), TensorFlow (``tf.function``), PyTorch (eager) and onnxruntime (specflow's ONNX export).

Every side starts from specflow's initial variable values, so the same weights and batches go
through every side; each builder returns a zero-argument callable that runs one step (or one
inference) and returns something checkable. Peers are imported by the caller (peers.py) and
passed in as modules: this file imports none of them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CNN_SPEC = ROOT / "models" / "mnist_cnn.yaml"
RNN_SPEC = ROOT / "models" / "rnn_sequence_sum.yaml"
ADAM = {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-7}  # specflow's (Keras's) Adam defaults
CHAIN = 1000


# --- specflow -----------------------------------------------------------------------------------


class SpecflowModel:
    """A zoo spec's training graph in one Session (``cpu:1``, or ``devices``): its initial
    weights, a training step and, for specs with signatures, an inference call."""

    def __init__(self, path: Path, text: str | None = None, devices: str = "cpu:1"):
        from specflow.runtime.session import Session, SessionConfig
        from specflow.schema.loader import load_spec, load_spec_text
        from specflow.train.graph import build_training_graph

        # ``text``: a variant of the spec at ``path`` (its data paths still relative to it).
        self.spec = load_spec(str(path)) if text is None else load_spec_text(text, str(path))
        self.tg = build_training_graph(self.spec, self.spec.train, None)
        self.sess = Session(self.tg.graph_def, SessionConfig(devices=devices, graph_seed=0, inter_op_threads=1))
        self.sess.run([], targets=[self.tg.init_op])
        model_vars = self.spec.lowered.variables
        values = self.sess.run([v.read for v in model_vars])
        self.weights = {v.name: np.array(a) for v, a in zip(model_vars, values)}
        self.flag = self.tg.training_flag

    def step(self, feeds: dict):
        feeds = dict(feeds)
        if self.flag:
            feeds[self.flag] = True
        return lambda: self.sess.run(self.tg.loss, feeds, targets=[self.tg.train_op])

    def infer(self, output: str, feeds: dict):
        # The training flag is not fed: its default (false) picks the inference branch.
        tensor = self.spec.resolve(output)
        return lambda: self.sess.run(tensor, feeds)

    def close(self):
        self.sess.close()


def specflow_onnx(model: SpecflowModel, signature: str = "serving_default") -> bytes:
    """``signature`` of the model, with its current weights, exported by specflow's ONNX exporter."""
    from specflow.export.onnx_export import to_onnx
    from specflow.export.serving import ServingModel, closure, fold_training_flag, select_signatures

    spec = model.spec
    sigs = select_signatures(spec, [signature])
    graph = fold_training_flag(spec.graph_def, spec.lowered.training_flag, spec.tensor_spec)
    tensors = [t for sig in sigs.values() for io in (sig.outputs, sig.inputs) for t, _ in io.values()]
    graph = closure(graph, tensors)
    names = [v.name for v in spec.lowered.variables]
    values = model.sess.run([v.read for v in spec.lowered.variables])
    serving = ServingModel(graph, sigs, {n: np.array(v) for n, v in zip(names, values)}, "")
    return to_onnx(serving, signature).SerializeToString()


def specflow_chain():
    """x: float32[1] through ``CHAIN`` Sin ops in one Session.run (Sin: no optimizer on any
    side may simplify a chain of it away, as it would Neg(Neg(x)) or Identity)."""
    from specflow.graph import dtypes
    from specflow.graph.builder import GraphBuilder
    from specflow.runtime.session import Session, SessionConfig

    b = GraphBuilder()
    h = b.add_op("Placeholder", [], {"dtype": dtypes.float32, "shape": [1]}, name="x").name
    for i in range(CHAIN):
        h = b.add_op("Sin", [h], name=f"n{i}").name
    sess = Session(b.graph_def, SessionConfig(devices="cpu:1", inter_op_threads=1))
    feed = {"x": np.full(1, 0.5, np.float32)}
    return sess, lambda: sess.run(h, feed)


# --- the CNN (models/mnist_cnn.yaml) --------------------------------------------------------------


def cnn_batch(batch: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.random((batch, 64), dtype=np.float32), rng.integers(0, 10, batch).astype(np.int64)


def _torch_dense(w: np.ndarray) -> np.ndarray:
    """The dense kernel [h*w*c, units] of an NHWC flatten as torch's [units, c*h*w] (NCHW flatten)."""
    return np.ascontiguousarray(w.reshape(4, 4, 32, -1).transpose(3, 2, 0, 1).reshape(w.shape[1], -1))


class TfCnn:
    """mnist_cnn in TensorFlow ops (NHWC, oneDNN): conv 3x3 16 + relu, 2x2 max-pool, conv 3x3 32,
    batch norm (batch moments in training, moving averages updated as Keras does), relu, dropout
    0.25, dense 10; Adam through ResourceApplyAdam (TF's fused kernel, as specflow's)."""

    def __init__(self, tf, w: dict, lr: float = 1e-3):
        self.tf = tf
        self.v = {k: tf.Variable(a, name=k.replace("/", "_")) for k, a in w.items()}
        self.train_vars = [self.v[k] for k in ("conv1/kernel", "conv1/bias", "conv2/kernel", "bn2/gamma",
                                                "bn2/beta", "logits/kernel", "logits/bias")]
        self.adam = TfAdam(tf, self.train_vars, lr)
        self.step = tf.function(self._step)
        self.infer = tf.function(lambda x: tf.nn.softmax(self.forward(x, False)))

    def forward(self, x, training: bool):
        tf, v = self.tf, self.v
        h = tf.reshape(x, [-1, 8, 8, 1])
        h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(h, v["conv1/kernel"], 1, "SAME"), v["conv1/bias"]))
        h = tf.nn.max_pool2d(h, 2, 2, "VALID")
        h = tf.nn.conv2d(h, v["conv2/kernel"], 1, "SAME")
        if training:
            mean, var = tf.nn.moments(h, [0, 1, 2])
            for key, batch in (("bn2/moving_mean", mean), ("bn2/moving_variance", var)):
                v[key].assign_sub((v[key] - batch) * 0.01)
        else:
            mean, var = v["bn2/moving_mean"], v["bn2/moving_variance"]
        h = tf.nn.relu(tf.nn.batch_normalization(h, mean, var, v["bn2/beta"], v["bn2/gamma"], 1e-3))
        h = tf.reshape(h, [-1, 512])
        if training:
            h = tf.nn.dropout(h, 0.25)
        return tf.matmul(h, v["logits/kernel"]) + v["logits/bias"]

    def _step(self, x, y):
        tf = self.tf
        with tf.GradientTape() as tape:
            logits = self.forward(x, True)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
        self.adam.apply(tape.gradient(loss, self.train_vars))
        return loss


class TfAdam:
    def __init__(self, tf, variables, lr: float):
        self.tf, self.vars, self.lr = tf, variables, lr
        self.m = [tf.Variable(tf.zeros_like(v)) for v in variables]
        self.s = [tf.Variable(tf.zeros_like(v)) for v in variables]
        self.b1p = tf.Variable(ADAM["beta1"])
        self.b2p = tf.Variable(ADAM["beta2"])

    def apply(self, grads):
        tf = self.tf
        for v, m, s, g in zip(self.vars, self.m, self.s, grads):
            tf.raw_ops.ResourceApplyAdam(
                var=v.handle, m=m.handle, v=s.handle, beta1_power=self.b1p, beta2_power=self.b2p,
                lr=self.lr, beta1=ADAM["beta1"], beta2=ADAM["beta2"], epsilon=ADAM["epsilon"], grad=g,
            )
        self.b1p.assign(self.b1p * ADAM["beta1"])
        self.b2p.assign(self.b2p * ADAM["beta2"])


class TorchCnn:
    """The same network in PyTorch (NCHW; the dense kernel's rows permuted to NCHW's flatten)."""

    def __init__(self, torch, w: dict, lr: float = 1e-3, device: str = "cpu"):
        self.torch = torch
        t = lambda a: torch.tensor(np.ascontiguousarray(a), device=device)  # noqa: E731
        self.k1 = t(w["conv1/kernel"].transpose(3, 2, 0, 1)).requires_grad_()
        self.b1 = t(w["conv1/bias"]).requires_grad_()
        self.k2 = t(w["conv2/kernel"].transpose(3, 2, 0, 1)).requires_grad_()
        self.gamma = t(w["bn2/gamma"]).requires_grad_()
        self.beta = t(w["bn2/beta"]).requires_grad_()
        self.mean, self.var = t(w["bn2/moving_mean"]), t(w["bn2/moving_variance"])
        self.wd = t(_torch_dense(w["logits/kernel"])).requires_grad_()
        self.bd = t(w["logits/bias"]).requires_grad_()
        params = [self.k1, self.b1, self.k2, self.gamma, self.beta, self.wd, self.bd]
        self.opt = torch.optim.Adam(params, lr=lr, betas=(ADAM["beta1"], ADAM["beta2"]), eps=ADAM["epsilon"])

    def forward(self, x, training: bool):
        F = self.torch.nn.functional
        h = x.view(-1, 1, 8, 8)
        h = F.relu(F.conv2d(h, self.k1, self.b1, padding=1))
        h = F.max_pool2d(h, 2)
        h = F.conv2d(h, self.k2, None, padding=1)
        h = F.batch_norm(h, self.mean, self.var, self.gamma, self.beta, training, 0.01, 1e-3)
        h = F.relu(h).flatten(1)
        h = F.dropout(h, 0.25, training)
        return F.linear(h, self.wd, self.bd)

    def step(self, x, y):
        self.opt.zero_grad(set_to_none=True)
        loss = self.torch.nn.functional.cross_entropy(self.forward(x, True), y)
        loss.backward()
        self.opt.step()
        return loss

    def infer(self, x):
        with self.torch.no_grad():
            return self.torch.softmax(self.forward(x, False), 1)


def ort_session(ort, model: bytes):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])


# --- the RNN (models/rnn_sequence_sum.yaml) -------------------------------------------------------


def rnn_batch(batch: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (batch, 8, 1)).astype(np.float32)
    return x, x.sum(axis=1)


def rnn_fed_spec() -> str:
    """models/rnn_sequence_sum.yaml with its trip count an input ``n`` (fed: the loop cannot be
    unrolled, so it runs as a loop: compiled, or on frames)."""
    text = RNN_SPEC.read_text()
    loop, fed = "cond: {op: Less, inputs: [t], y: 8}", "cond: {op: Less, inputs: [t, n]}"
    y_in = "  y: {dtype: float32, shape: [null, 1]}\n"
    assert loop in text and y_in in text, "models/rnn_sequence_sum.yaml changed: update rnn_fed_spec"
    return text.replace(loop, fed).replace(y_in, y_in + "  n: {dtype: int32, shape: [], default: 8}\n")


class TfRnn:
    """h_t = tanh(x_t W + h U + b) by ``tf.while_loop`` over 8 steps in a ``tf.function``
    (or ``n`` steps, n a tensor argument)."""

    def __init__(self, tf, w: dict, lr: float = 0.02):
        self.tf = tf
        self.v = {k: tf.Variable(w[k], name=k) for k in ("W", "U", "b", "V", "c")}
        self.vars = list(self.v.values())
        self.adam = TfAdam(tf, self.vars, lr)
        self.step = tf.function(self._step)

    def _step(self, x, y, n=8):
        tf, v = self.tf, self.v
        with tf.GradientTape() as tape:
            steps = tf.transpose(x, [1, 0, 2])
            h0 = tf.zeros([tf.shape(x)[0], 16])

            def body(t, h):
                return t + 1, tf.tanh(tf.nn.bias_add(tf.matmul(steps[t], v["W"]) + tf.matmul(h, v["U"]), v["b"]))

            _, h = tf.while_loop(lambda t, h: t < n, body, (tf.constant(0), h0))
            pred = tf.matmul(h, v["V"]) + v["c"]
            loss = tf.reduce_mean(tf.math.squared_difference(pred, y))
        self.adam.apply(tape.gradient(loss, self.vars))
        return loss


class TorchRnn:
    def __init__(self, torch, w: dict, lr: float = 0.02, device: str = "cpu"):
        self.torch = torch
        self.p = {k: torch.tensor(w[k], device=device).requires_grad_() for k in ("W", "U", "b", "V", "c")}
        self.opt = torch.optim.Adam(list(self.p.values()), lr=lr, betas=(ADAM["beta1"], ADAM["beta2"]),
                                    eps=ADAM["epsilon"])

    def step(self, x, y):
        torch, p = self.torch, self.p
        self.opt.zero_grad(set_to_none=True)
        h = torch.zeros(x.shape[0], 16, device=x.device)
        for t in range(8):
            h = torch.tanh(x[:, t] @ p["W"] + h @ p["U"] + p["b"])
        loss = torch.mean((h @ p["V"] + p["c"] - y) ** 2)
        loss.backward()
        self.opt.step()
        return loss


# --- a data-dependent while loop: a fixed point -----------------------------------------------------


FIXED_TOL = 1e-4


def fixed_point_problem(batch: int = 64, units: int = 16, seed: int = 0):
    """x [batch, units] and U [units, units] (spectral norm 0.6: a contraction) for the loop
    ``h, prev = tanh(x), 0; while max|h - prev| > tol: h, prev = tanh(h U + x), h``."""
    rng = np.random.default_rng(seed)
    u = rng.normal(size=(units, units))
    u *= 0.6 / np.linalg.norm(u, 2)
    return rng.uniform(-1, 1, (batch, units)).astype(np.float32), u.astype(np.float32)


def specflow_fixed_point(x: np.ndarray, u: np.ndarray):
    """The loop as a graph (``graph.control_flow.while_loop``) in one Session; fetches (h, trips)."""
    from specflow.graph import dtypes
    from specflow.graph.builder import GraphBuilder
    from specflow.graph.control_flow import while_loop
    from specflow.runtime.session import Session, SessionConfig

    b = GraphBuilder()
    add = lambda op, *ins: b.add_op(op, list(ins)).name  # noqa: E731
    xp = b.add_op("Placeholder", [], {"dtype": dtypes.float32, "shape": list(x.shape)}, name="x").name
    uc, tol, axes = b.const(u), b.const(np.float32(FIXED_TOL)), b.const(np.array([0, 1], np.int32))
    one = b.const(np.int32(1))

    def cond(b, k, h, prev):
        return add("Greater", add("Max", add("Abs", add("Sub", h, prev)), axes), tol)

    def body(b, k, h, prev):
        return [add("AddV2", k, one), add("Tanh", add("AddV2", add("MatMul", h, uc), xp)), h]

    r = while_loop(b, cond, body, [b.const(np.int32(0)), add("Tanh", xp), add("ZerosLike", xp)], name="fixed")
    sess = Session(b.graph_def, SessionConfig(devices="cpu:1", inter_op_threads=1))
    return sess, lambda: sess.run([r.outputs[1], r.outputs[0]], {xp: x})


def tf_fixed_point(tf, x: np.ndarray, u: np.ndarray):
    uc, tol = tf.constant(u), tf.constant(np.float32(FIXED_TOL))

    @tf.function
    def run(x):
        def body(k, h, prev):
            return k + 1, tf.tanh(tf.matmul(h, uc) + x), h

        k, h, _ = tf.while_loop(lambda k, h, prev: tf.reduce_max(tf.abs(h - prev)) > tol, body,
                                (tf.constant(0), tf.tanh(x), tf.zeros_like(x)))  # fmt: skip
        return h, k

    tx = tf.constant(x)
    return lambda: [t.numpy() for t in run(tx)]


def torch_fixed_point(torch, x: np.ndarray, u: np.ndarray):
    tx, tu = torch.from_numpy(x), torch.from_numpy(u)

    def run():
        k, h, prev = 0, torch.tanh(tx), torch.zeros_like(tx)
        while (h - prev).abs().max().item() > FIXED_TOL:
            k, h, prev = k + 1, torch.tanh(h @ tu + tx), h
        return [h.numpy(), k]

    return run
