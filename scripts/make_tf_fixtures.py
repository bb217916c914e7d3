"""Writes the TF2 fixtures of tests/io/data/tf2/ with a scratch TensorFlow (never a dependency of
specflow)::

    python -m venv /work/scratch/tfvenv && /work/scratch/tfvenv/bin/pip install tensorflow-cpu
    /work/scratch/tfvenv/bin/python scripts/make_tf_fixtures.py [--out OUT_DIR] [NAME ...]

Each SavedModel fixture is ``<name>/`` (``tf.saved_model.save`` of a small Keras model, without
fingerprint/assets) plus ``<name>.npz``: the signature's input (``in_<arg>``) and TensorFlow's
outputs (``out_<key>``) from ``tf.saved_model.load(...).signatures["serving_default"]``. The frozen
graph fixtures are ``frozen_cnn.pb`` / ``frozen_cnn.pbtxt`` (conv_swish's forward function with its
variables folded to constants) and ``frozen_lstm.pb``, each with ``<name>.npz`` (``in_<placeholder
tensor>``, ``out_<output tensor>``). ``cond_loop/`` is a tf.Module whose function holds a tf.cond
with a while loop and another tf.cond inside (TF2 If/While), with ``cond_loop.npz``: its outputs
for both branches and TensorFlow's gradients (GradientTape) w.r.t. the input and the variable.
``tf1_loops.pb`` is a TF1 graph (``tf.compat.v1``, control flow v1) with nested while loops, a
loop with ``maximum_iterations`` and loop invariants; ``tf1_cond.pb`` one with a v1 ``tf.cond``;
each with ``<name>.npz``: ``in_x`` and ``in_neg_x`` (its negation: every conditional takes the
other branch) with the outputs for each (``out_<tensor>``, ``outneg_<tensor>``, ``:`` as ``_``).
``lowered_conds.pb`` is a TF2 function with conds (nested, in a while body) frozen with its
control flow lowered (convert_variables_to_constants_v2's default), with the same kind of .npz.
``custom_gradient/`` is a tf.Module using two tf.custom_gradients (saved gradient functions), with
TF's gradients in ``custom_gradient.npz``.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.python.framework.convert_to_constants import (  # noqa: E402
    convert_variables_to_constants_v2,
)

L = keras.layers
ARGS = sys.argv[1:]
OUT = Path(ARGS[ARGS.index("--out") + 1]) if "--out" in ARGS else \
    Path(__file__).resolve().parents[1] / "tests" / "io" / "data" / "tf2"
ONLY = [a for i, a in enumerate(ARGS) if a != "--out" and (i == 0 or ARGS[i - 1] != "--out")]


def lstm():  # TF2 While + TensorList ops; the output sequence and the last state
    x = keras.Input((5, 3))
    seq = L.LSTM(4, return_sequences=True)(x)
    return keras.Model(x, L.LSTM(3)(seq))


def gru():
    return keras.Sequential([keras.Input((6, 2)), L.GRU(4), L.Dense(2)])


def bidirectional():  # a forward and a reversed loop, concatenated
    return keras.Sequential([keras.Input((4, 3)), L.Bidirectional(L.LSTM(3)), L.Dense(2)])


class Standardize(L.Layer):
    """Holds eager constants its call reads: the SavedModel's object graph gets
    ``captured_tensor`` nodes for them."""

    def __init__(self, n, **kw):
        super().__init__(**kw)
        self.mean = tf.constant(np.linspace(-0.2, 0.2, n).astype("float32"))
        self.scale = tf.constant(np.linspace(0.5, 1.5, n).astype("float32"))

    def call(self, x):
        return (x - self.mean) * self.scale


def conv_swish():  # swish activations and captured constants
    return keras.Sequential([
        keras.Input((6, 6, 2)),
        Standardize(2),
        L.Conv2D(4, 3, padding="same", activation="swish"),
        L.GlobalAveragePooling2D(),
        L.Dense(3, activation="swish"),
    ])


FIXTURES = {"lstm": (lstm, (2, 5, 3)), "gru": (gru, (2, 6, 2)), "bidirectional": (bidirectional, (2, 4, 3)),
            "conv_swish": (conv_swish, (2, 6, 6, 2))}


def save(name: str, build, input_shape) -> None:
    keras.utils.set_random_seed(0)
    model = build()
    out_dir = OUT / name
    shutil.rmtree(out_dir, ignore_errors=True)
    tf.saved_model.save(model, str(out_dir))
    for extra in ("fingerprint.pb", "assets"):  # not part of what a loader reads
        path = out_dir / extra
        shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
    serving = tf.saved_model.load(str(out_dir)).signatures["serving_default"]
    (arg,) = serving.structured_input_signature[1]
    x = np.random.default_rng(1).standard_normal(input_shape).astype("float32")
    outputs = serving(**{arg: tf.constant(x)})
    np.savez(OUT / f"{name}.npz", **{f"in_{arg}": x}, **{f"out_{k}": v.numpy() for k, v in outputs.items()})
    size = sum(p.stat().st_size for p in out_dir.rglob("*") if p.is_file())
    print(f"{name}: {size} bytes, input {arg} {x.shape}, outputs {sorted(outputs)}")


def frozen(name: str, build, input_shape, text: bool = True) -> None:
    """The model's forward function with variables folded to constants, as .pb and .pbtxt."""
    keras.utils.set_random_seed(0)
    model = build()
    fn = tf.function(lambda x: model(x, training=False))
    concrete = fn.get_concrete_function(tf.TensorSpec((None, *input_shape[1:]), tf.float32, name="x"))
    frozen_fn = convert_variables_to_constants_v2(concrete)
    graph_def = frozen_fn.graph.as_graph_def()
    (OUT / f"{name}.pb").write_bytes(graph_def.SerializeToString())
    if text:
        (OUT / f"{name}.pbtxt").write_text(str(graph_def))
    x = np.random.default_rng(2).standard_normal(input_shape).astype("float32")
    (out,) = frozen_fn(tf.constant(x))
    (inp,) = [t.name for t in frozen_fn.inputs]
    (res,) = [t.name for t in frozen_fn.outputs]
    np.savez(OUT / f"{name}.npz", **{f"in_{inp}": x, f"out_{res}": out.numpy()})
    print(f"{name}: {len(graph_def.SerializeToString())} bytes, {inp} -> {res}")


class CondLoop(tf.Module):
    """y = cond(flag, while_loop(tanh(y) * 1.5, 3 times) of x @ w, sin(x @ w) + cond(sum(x) > 0, 1, -1))."""

    def __init__(self):
        super().__init__()
        self.w = tf.Variable(np.linspace(-1, 1, 6).reshape(2, 3).astype("float32"))

    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32), tf.TensorSpec([], tf.bool)])
    def __call__(self, x, flag):
        def then():
            _, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, tf.tanh(y) * 1.5),
                                 [tf.constant(0), tf.matmul(x, self.w)])
            return y

        def else_():
            return tf.sin(tf.matmul(x, self.w)) + tf.cond(tf.reduce_sum(x) > 0, lambda: 1.0, lambda: -1.0)

        return {"y": tf.cond(flag, then, else_)}


def cond_loop() -> None:
    module = CondLoop()
    out_dir = OUT / "cond_loop"
    shutil.rmtree(out_dir, ignore_errors=True)
    tf.saved_model.save(module, str(out_dir))
    (out_dir / "fingerprint.pb").unlink(missing_ok=True)
    shutil.rmtree(out_dir / "assets", ignore_errors=True)
    serving = tf.saved_model.load(str(out_dir)).signatures["serving_default"]
    x = np.random.default_rng(0).standard_normal((4, 2)).astype("float32")
    weights = np.linspace(0.5, 1.5, 12).reshape(4, 3).astype("float32")  # loss = sum(y * weights)
    saved = {"in_x": x, "weights": weights}
    for flag in (True, False):
        saved[f"out_y_{flag}"] = serving(x=tf.constant(x), flag=tf.constant(flag))["y"].numpy()
        xv = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(xv)
            loss = tf.reduce_sum(module(xv, tf.constant(flag))["y"] * weights)
        gx, gw = tape.gradient(loss, [xv, module.w])
        saved[f"grad_x_{flag}"], saved[f"grad_w_{flag}"] = gx.numpy(), gw.numpy()
    np.savez(OUT / "cond_loop.npz", **saved)
    print(f"cond_loop: {sum(p.stat().st_size for p in out_dir.rglob('*') if p.is_file())} bytes")


class Methods(tf.Module):
    """Methods served by signatures, each returning another structure: a tensor (__call__, f), a
    dict (g), a tuple (h)."""

    def __init__(self):
        super().__init__()
        self.w = tf.Variable(np.linspace(-1, 1, 6).reshape(3, 2).astype("float32"))

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def __call__(self, x):
        return tf.matmul(x, self.w)

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([], tf.float32)])
    def f(self, x, scale):
        return tf.matmul(x, self.w) * scale

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def g(self, x):
        return {"total": tf.reduce_sum(x), "twice": x * 2.0}

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def h(self, x):
        return tf.reduce_max(x, axis=1), tf.matmul(x, self.w)


def methods() -> None:
    module = Methods()
    out_dir = OUT / "methods"
    shutil.rmtree(out_dir, ignore_errors=True)
    tf.saved_model.save(module, str(out_dir), signatures={"serving_default": module.__call__, "f": module.f,
                                                          "g": module.g, "h": module.h})
    (out_dir / "fingerprint.pb").unlink(missing_ok=True)
    shutil.rmtree(out_dir / "assets", ignore_errors=True)
    m = tf.saved_model.load(str(out_dir))  # what TF's loaded object returns, method by method
    x = np.random.default_rng(1).standard_normal((4, 3)).astype("float32")
    g, h = m.g(x), m.h(x)
    np.savez(OUT / "methods.npz", in_x=x, out_call=m(x).numpy(), out_f=m.f(x, 3.0).numpy(),
             out_g_total=g["total"].numpy(), out_g_twice=g["twice"].numpy(), out_h_0=h[0].numpy(),
             out_h_1=h[1].numpy())  # fmt: skip
    print(f"methods: {sum(p.stat().st_size for p in out_dir.rglob('*') if p.is_file())} bytes")


def tf1_graph(name: str, build) -> None:
    """A TF1 graph (control flow v1: the five primitives with TF1's names) as ``name``.pb and its
    outputs for a fixed input; ``build(x)`` returns the output tensors."""
    g = tf.Graph()
    with g.as_default():
        tf.compat.v1.disable_control_flow_v2()
        x = tf.compat.v1.placeholder(tf.float32, (None, 3), name="x")
        outs = build(x)
        tf.compat.v1.enable_control_flow_v2()
    value = np.random.default_rng(3).standard_normal((2, 3)).astype("float32")
    saved = {"in_x": value, "in_neg_x": -value}  # -x: every conditional takes its other branch
    with tf.compat.v1.Session(graph=g) as sess:
        for key, v in (("out", value), ("outneg", -value)):
            saved.update({f"{key}_{t.name.replace(':', '_')}": got for t, got in zip(outs, sess.run(outs, {x: v}))})
    (OUT / f"{name}.pb").write_bytes(g.as_graph_def().SerializeToString())
    np.savez(OUT / f"{name}.npz", **saved)
    print(f"{name}: {len(g.as_graph_def().node)} nodes, outputs {[t.name for t in outs]}")


def tf1_loops(x):
    """Nested loops (the inner one reads the outer's var and an invariant), one with
    maximum_iterations, and a var whose result nobody reads."""
    scale = tf.constant(0.5, name="scale")

    def outer_body(i, acc, unused):
        def inner_body(j, a):
            return j + 1, tf.tanh(a * scale + tf.cast(i, tf.float32))
        _, acc = tf.compat.v1.while_loop(lambda j, a: j < i + 1, inner_body, [0, acc], name="inner")
        return i + 1, acc, unused * 2.0
    _, y, _ = tf.compat.v1.while_loop(lambda i, acc, u: i < 3, outer_body, [0, x, tf.reduce_sum(x)], name="outer")
    z = tf.compat.v1.while_loop(lambda v: tf.reduce_sum(v) < 1e6, lambda v: v * 2.0 + 1.0, [x],
                                maximum_iterations=4, name="capped")
    return [tf.identity(y, name="y"), tf.identity(z, name="z")]


def tf1_cond(x):
    """A cond; a cond holding a loop in one branch and a cond in the other; a loop whose body
    holds a cond on its var."""
    y = tf.compat.v1.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0, lambda: -x)

    def looped():
        return tf.compat.v1.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, tf.sin(v) + x), [0, x])[1]

    def nested():
        return tf.compat.v1.cond(x[0, 0] > 0, lambda: tf.exp(x), lambda: tf.square(x))
    z = tf.compat.v1.cond(x[1, 1] > 0, looped, nested)

    def body(i, v):
        return i + 1, tf.compat.v1.cond(tf.reduce_mean(v) > 0.1, lambda: v * 0.5, lambda: v + 1.0)
    w = tf.compat.v1.while_loop(lambda i, v: i < 4, body, [0, x], name="halving")[1]
    return [tf.identity(y, name="y"), tf.identity(z, name="z"), tf.identity(w, name="w")]


def custom_gradient() -> None:
    """``custom_gradient/``: a tf.Module whose function uses two tf.custom_gradients (TF 2 saves
    their gradient functions in the library's registered_gradients), one reading x outside its
    gradient (log1pexp's stable form) and one clipping dy; ``custom_gradient.npz``: the input,
    TF's output and TF's gradients w.r.t. the input and the variable."""

    @tf.custom_gradient
    def log1pexp(x):
        e = tf.exp(x)
        return tf.math.log(1 + e), lambda dy: dy * (1 - 1 / (1 + e))

    @tf.custom_gradient
    def clip_grad(x):
        return tf.identity(x), lambda dy: tf.clip_by_value(dy, -0.1, 0.1)

    class M(tf.Module):
        def __init__(self):
            self.w = tf.Variable([0.5, -1.5, 2.0])

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
        def f(self, x):
            return {"y": log1pexp(x * self.w) + clip_grad(x) * 3.0}

    m = M()
    out_dir = OUT / "custom_gradient"
    shutil.rmtree(out_dir, ignore_errors=True)
    tf.saved_model.save(m, str(out_dir), signatures={"serving_default": m.f})
    for extra in ("fingerprint.pb", "assets"):
        path = out_dir / extra
        shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
    loaded = tf.saved_model.load(str(out_dir))
    x = tf.constant(np.random.default_rng(5).standard_normal((2, 3)).astype("float32"))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = loaded.signatures["serving_default"](x=x)["y"]
        total = tf.reduce_sum(y * tf.constant([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.25]]))
    gx, gw = tape.gradient(total, [x, loaded.w])
    np.savez(OUT / "custom_gradient.npz", in_x=x.numpy(), out_y=y.numpy(), grad_x=gx.numpy(), grad_w=gw.numpy())
    print(f"custom_gradient: grad_x {gx.numpy().ravel()}")


def lowered_conds() -> None:
    """TF2 conds frozen as convert_variables_to_constants_v2 does by default, lowered to
    Switch/Merge with TF's If-lowering names (``cond/switch_pred/_2``, ``cond/x/_5``): two
    inputs and outputs, a cond nested in a branch, a cond in a while body."""

    @tf.function
    def f(x):
        s = tf.reduce_sum(x)
        a, b = tf.cond(s > 0, lambda: (x * 2.0, s + 1.0), lambda: (x - 1.0, s * 3.0))
        c = tf.cond(x[0, 0] > 0,
                    lambda: tf.cond(x[1, 1] > 0, lambda: tf.exp(x), lambda: tf.square(x)),
                    lambda: tf.sin(x))
        _, d = tf.while_loop(lambda i, v: i < 3,
                             lambda i, v: (i + 1, tf.cond(tf.reduce_mean(v) > 0.1, lambda: v * 0.5, lambda: v + 1.0)),
                             [0, x])
        return tf.identity(a, name="a"), tf.identity(b, name="b"), tf.identity(c, name="c"), tf.identity(d, name="d")

    frozen_fn = convert_variables_to_constants_v2(f.get_concrete_function(tf.TensorSpec((None, 3), tf.float32,
                                                                                        name="x")))
    graph_def = frozen_fn.graph.as_graph_def()
    assert not any(n.op in ("If", "StatelessIf", "While", "StatelessWhile") for n in graph_def.node)
    (OUT / "lowered_conds.pb").write_bytes(graph_def.SerializeToString())
    value = np.random.default_rng(4).standard_normal((2, 3)).astype("float32")
    saved = {"in_x": value, "in_neg_x": -value}
    for key, v in (("out", value), ("outneg", -value)):
        for t, got in zip(frozen_fn.outputs, frozen_fn(tf.constant(v))):
            saved[f"{key}_{t.name.replace(':', '_')}"] = got.numpy()
    np.savez(OUT / "lowered_conds.npz", **saved)
    print(f"lowered_conds: {len(graph_def.node)} nodes, outputs {[t.name for t in frozen_fn.outputs]}")


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    for name, (build, shape) in FIXTURES.items():
        if not ONLY or name in ONLY:
            save(name, build, shape)
    if not ONLY or "frozen_cnn" in ONLY:
        frozen("frozen_cnn", conv_swish, (3, 6, 6, 2))
    if not ONLY or "frozen_lstm" in ONLY:
        frozen("frozen_lstm", lstm, (2, 5, 3), text=False)  # a While at the top level of a frozen graph
    if not ONLY or "cond_loop" in ONLY:
        cond_loop()
    if not ONLY or "methods" in ONLY:
        methods()
    if not ONLY or "lowered_conds" in ONLY:
        lowered_conds()
    if not ONLY or "custom_gradient" in ONLY:
        custom_gradient()
    for name, build in (("tf1_loops", tf1_loops), ("tf1_cond", tf1_cond)):
        if not ONLY or name in ONLY:
            tf1_graph(name, build)
