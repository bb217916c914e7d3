"""Convolution and pooling kernels and a CNN training step: ``python -m benchmarks.conv``.

Rows: each window kernel alone (run through its registered kernel, as the executor does) at
the shapes of a 28x28 CNN, and one SGD step of that CNN through a Session. ``--baseline TREE``
runs the same measurements with another checkout of specflow (e.g. the commit this branch
started from) in alternating subprocesses, so both sides see the same machine state, and prints
old / new side by side. Times are best-of-rounds (see best_seconds below), BLAS on one thread.
A plain numpy reference (sliding_window_view of a padded input, one matmul) is shown for Conv2D.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

BATCHES = (64, 256)


def best_seconds(fn, *, repeats: int, number: int) -> float:
    """The best of ``repeats`` rounds of ``number`` calls (after one warm-up): on a shared
    machine the minimum is the stable statistic, the median follows other processes' load."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def _conv_attrs(padding="SAME"):
    return {"strides": [1, 1, 1, 1], "padding": padding}


def _pool_attrs():
    return {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "VALID"}


def kernel_cases(batch: int):
    """(name, op, inputs, attrs) at the shapes of the CNN below."""
    rng = np.random.default_rng(0)

    def r(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    x1, f1 = r(batch, 28, 28, 1), r(3, 3, 1, 32)
    x2, f2 = r(batch, 14, 14, 32), r(3, 3, 32, 64)
    dy2 = r(batch, 14, 14, 64)
    p = r(batch, 28, 28, 32)
    sizes = np.array(x2.shape, np.int32)
    cases = [
        ("Conv2D 28x28x1 -> 32", "Conv2D", [x1, f1], _conv_attrs()),
        ("Conv2D 14x14x32 -> 64", "Conv2D", [x2, f2], _conv_attrs()),
        ("Conv2DBackpropInput 14x14 64 -> 32", "Conv2DBackpropInput", [sizes, f2, dy2], _conv_attrs()),
        ("Conv2DBackpropFilter 14x14x32 -> 64", "Conv2DBackpropFilter",
         [x2, np.array(f2.shape, np.int32), dy2], _conv_attrs()),
        ("MaxPool 2x2/2 28x28x32", "MaxPool", [p], _pool_attrs()),
        ("AvgPool 3x3/1 SAME 14x14x32", "AvgPool", [x2],
         {"ksize": [1, 3, 3, 1], "strides": [1, 1, 1, 1], "padding": "SAME"}),
    ]
    from specflow.ops.eval import evaluate_op

    y = evaluate_op("MaxPool", [p], **_pool_attrs())[0]
    cases.append(("MaxPoolGrad 2x2/2 28x28x32", "MaxPoolGrad", [p, y, r(*y.shape)], _pool_attrs()))
    return cases


def numpy_conv(x, f):
    """Conv2D SAME, stride 1, written plainly in numpy: pad, sliding windows, one matmul."""
    kh, kw, c, o = f.shape
    xp = np.pad(x, ((0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2), (0, 0)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(1, 2))  # [N, H, W, C, KH, KW]
    cols = win.transpose(0, 1, 2, 4, 5, 3).reshape(-1, kh * kw * c)
    return (cols @ f.reshape(-1, o)).reshape(*x.shape[:3], o)


CNN_SPEC = """
specflow: 1
name: bench_cnn
seed: 0
inputs:
  x: {dtype: float32, shape: [null, 28, 28, 1]}
  y: {dtype: int64, shape: [null]}
nodes:
  conv1: {layer: conv2d, inputs: [x], filters: 32, kernel_size: 3, padding: same, activation: relu}
  pool1: {layer: max_pool2d, inputs: [conv1]}
  conv2: {layer: conv2d, inputs: [pool1], filters: 64, kernel_size: 3, padding: same, activation: relu}
  pool2: {layer: max_pool2d, inputs: [conv2]}
  flat: {layer: flatten, inputs: [pool2]}
  logits: {layer: dense, inputs: [flat], units: 10}
  xent: {op: SparseSoftmaxCrossEntropyWithLogits, inputs: [logits, y]}
  loss: {op: Mean, inputs: ['xent:0']}
train:
  loss: loss
  optimizer: {sgd: {learning_rate: 0.01}}
  data: {source: {npz: unused.npz}, feeds: {x: x, y: y}}
"""


def measure(repeats: int) -> dict[str, float]:
    """Median seconds per row, in this process's specflow."""
    from specflow.ops.eval import evaluate_op
    from specflow.runtime.session import Session, SessionConfig
    from specflow.schema.loader import load_spec_text
    from specflow.train.graph import build_training_graph

    out = {}
    for batch in BATCHES:
        for name, op, inputs, attrs in kernel_cases(batch):
            out[f"{name}, batch {batch}"] = best_seconds(
                lambda op=op, inputs=inputs, attrs=attrs: evaluate_op(op, inputs, **attrs), repeats=repeats, number=3
            )
    spec = load_spec_text(CNN_SPEC, "bench_cnn.yaml")
    tg = build_training_graph(spec, spec.train, None)
    rng = np.random.default_rng(0)
    for batch in BATCHES:
        feeds = {"x": rng.standard_normal((batch, 28, 28, 1)).astype(np.float32),
                 "y": rng.integers(0, 10, batch).astype(np.int64)}
        with Session(tg.graph_def, SessionConfig(devices="cpu:1", graph_seed=0)) as sess:
            sess.run([], targets=[tg.init_op])
            out[f"CNN SGD step, batch {batch}"] = best_seconds(
                lambda sess=sess, feeds=feeds: sess.run(tg.loss, feeds, targets=[tg.train_op]),
                repeats=repeats, number=2,
            )
    out.update({f"numpy {k}": v for k, v in numpy_rows(repeats).items()})
    return out


def numpy_rows(repeats: int) -> dict[str, float]:
    rng = np.random.default_rng(0)
    out = {}
    for batch in BATCHES:
        for c, o, hw in ((1, 32, 28), (32, 64, 14)):
            x = rng.standard_normal((batch, hw, hw, c)).astype(np.float32)
            f = rng.standard_normal((3, 3, c, o)).astype(np.float32)
            out[f"Conv2D {hw}x{hw}x{c} -> {o}, batch {batch}"] = best_seconds(
                lambda x=x, f=f: numpy_conv(x, f), repeats=repeats, number=3
            )
    return out


def _child(tree: str, repeats: int) -> dict[str, float]:
    """This file's measurements, in a subprocess whose specflow is imported from ``tree``."""
    code = (
        f"import sys; sys.path.insert(0, {tree!r}); import specflow, runpy; "
        f"sys.argv = ['conv', '--json', '--repeats', '{repeats}']; "
        f"runpy.run_path({str(Path(__file__).resolve())!r}, run_name='__main__')"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--baseline", help="another specflow checkout to compare with (e.g. /work/main)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating subprocess rounds with --baseline")
    ap.add_argument("--json", action="store_true", help="print this tree's best times as JSON")
    args = ap.parse_args(argv)
    if args.json:
        print(json.dumps(measure(args.repeats)))
        return
    from benchmarks.timing import machine_info

    print(machine_info())
    here = str(Path(__file__).resolve().parent.parent)
    if not args.baseline:
        for k, v in measure(args.repeats).items():
            print(f"{k:48s} {v * 1e3:9.3f} ms")
        return
    olds, news = [], []
    for _ in range(args.rounds):
        olds.append(_child(args.baseline, args.repeats))
        news.append(_child(here, args.repeats))
    print(f"{'row':48s} {'baseline':>10s} {'this tree':>10s} {'new/old':>8s} {'numpy':>10s}")
    for k in [k for k in news[0] if not k.startswith("numpy ")]:
        old = min(o[k] for o in olds)
        new = min(n[k] for n in news)
        ref = min(n.get(f"numpy {k}", float("nan")) for n in news)
        np_ref = f"{ref * 1e3:8.3f}ms" if f"numpy {k}" in news[0] else ""
        print(f"{k:48s} {old * 1e3:8.3f}ms {new * 1e3:8.3f}ms {new / old:7.2f}x {np_ref:>10s}")


if __name__ == "__main__":
    main()
