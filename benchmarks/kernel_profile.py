"""Each kernel of a training step timed back to back on its recorded inputs.

``python -m benchmarks.kernel_profile`` runs the 64-128-10 training step of ``train_step.py``
(``--cnn BATCH``: the zoo CNN's, models/mnist_cnn.yaml, as ``peers.py`` times it) until its plan
and straight line exist, records every node's kernel context and inputs during one traced step
(the contexts the executor built, so per-node state such as cached handles and axes is warm),
then calls each kernel in a loop and prints the best mean of 5 x ``calls`` calls (µs). Inputs
stay in the cache between calls, so a memory-bound kernel runs faster here than inside a step.
It reads the executor's internals (the session's cached call, the line's entries): a tool for
the notes in README.md, not an API.
"""

from __future__ import annotations

import os

if __name__ == "__main__":  # one BLAS thread, as peers.py times it: set before numpy is imported
    os.environ.update({v: "1" for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")})

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks.train_step import spec_text  # noqa: E402
from specflow.runtime.session import Session, SessionConfig  # noqa: E402
from specflow.schema.loader import load_spec_text  # noqa: E402
from specflow.train.graph import build_training_graph  # noqa: E402


def profile(batch: int = 64, sizes=(64, 128, 10), calls: int = 200) -> list[tuple[str, str, float]]:
    """(node, op, µs per call) for every kernel of the MLP step but _Arg/_Retval."""
    spec = load_spec_text(spec_text(sizes), "bench_mlp.yaml")
    tg = build_training_graph(spec, spec.train, None)
    rng = np.random.default_rng(0)
    feeds = {
        "x": rng.standard_normal((batch, sizes[0])).astype(np.float32),
        "y": rng.integers(0, sizes[-1], size=batch).astype(np.int64),
    }
    with Session(tg.graph_def, SessionConfig(devices="cpu:1", graph_seed=0)) as sess:
        sess.run([], targets=[tg.init_op])
        return profile_step(sess, lambda **kw: sess.run(tg.loss, feeds, targets=[tg.train_op], **kw), calls)


def profile_cnn(batch: int, calls: int = 20) -> list[tuple[str, str, float]]:
    """profile() of the zoo CNN's training step (peers_models.SpecflowModel, one thread)."""
    from benchmarks import peers_models as pm

    model = pm.SpecflowModel(pm.CNN_SPEC)
    x, y = pm.cnn_batch(batch)
    feeds = {"images": x, "labels": y, model.flag: True}
    tg = model.tg
    try:
        return profile_step(model.sess, lambda **kw: model.sess.run(tg.loss, feeds, targets=[tg.train_op], **kw), calls)
    finally:
        model.close()


def profile_step(sess: Session, step, calls: int) -> list[tuple[str, str, float]]:
    """Time each kernel of ``step(**run_kwargs)`` (a one-partition plan on the straight line)."""
    for _ in range(50 if calls >= 100 else 10):
        step()
    call = next(c for c in sess._calls.values() if c.by_shape)
    line = next(iter(call.by_shape.values())).single._lines_free[0]
    recorded: dict[int, tuple] = {}
    entries = list(line.entries)

    def recorder(k, fn):
        def run(ctx, *args):
            recorded[k] = (ctx, args, fn)
            return fn(ctx, *args)

        return run

    line.entries[:] = [(e[0], e[1], recorder(k, e[2]), *e[3:]) for k, e in enumerate(entries)]
    try:
        step(options={"trace": True})  # the generic loop
    finally:
        line.entries[:] = entries
    rows = []
    for k, entry in enumerate(entries):
        item = entry[1]
        if item.op in ("_Arg", "_Retval") or k not in recorded:
            continue
        ctx, args, fn = recorded[k]
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter_ns()
            for _ in range(calls):
                fn(ctx, *args)
            best = min(best, (time.perf_counter_ns() - t0) / calls / 1000)
        rows.append((item.name, item.op, best))
    return rows


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cnn", type=int, metavar="BATCH", help="the zoo CNN's step at this batch size")
    args = p.parse_args(argv)
    rows = profile() if args.cnn is None else profile_cnn(args.cnn)
    for name, op, us in sorted(rows, key=lambda r: -r[2]) if args.cnn else rows:
        print(f"{us:9.2f}  {op:36s} {name}")
    print(f"{sum(r[2] for r in rows):9.2f}  total ({len(rows)} kernels)")


if __name__ == "__main__":
    main()
