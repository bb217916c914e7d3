"""specflow beside its peers: ``python -m benchmarks.peers`` (issue 18's table).

Rows: the zoo CNN's training step (models/mnist_cnn.yaml, Adam, batch 64 / 256 / 1024), its
inference (softmax probabilities, batch 1 / 256), the RNN's training step (models/
rnn_sequence_sum.yaml: an 8-step while loop, batch 64; and again with the trip count fed, so
the loop stays a loop), a data-dependent while loop (a fixed point iteration) and 1,000 chained
tiny ops (Sin on a float32[1]). Sides: specflow (Session.run), TensorFlow (``tf.function``; the RNN as
``tf.while_loop``), PyTorch (eager) and onnxruntime (specflow's own ONNX export, inference
only). A peer that does not import is left out, so the script runs in the project's venv with
specflow's rows alone; run it in a venv with the peers, specflow from the checkout:

    PYTHONPATH=$PWD /path/to/venv/bin/python -m benchmarks.peers [--rounds 11] [--rows cnn]
    ... -m benchmarks.peers --spread            # the CNN step's median in 3 processes: max/min
    ... -m benchmarks.peers --spread --sides specflow tf    # the same for TF, in the same processes
    ... -m benchmarks.peers --spread --alternate  # the 3 processes alive at once, taking turns
    ... -m benchmarks.peers --baseline TREE     # specflow from TREE vs this tree, A/B

Every side gets the same weights (specflow's initial values) and batches, and one thread: the
BLAS/OpenMP variables are set before numpy or a peer is imported, specflow's Session has one
inter-op thread, TF's intra/inter-op pools, torch.set_num_threads and ORT's session options are
pinned, and all of it is printed. Sides run
in interleaved rounds (the order rotating every round), each round timing enough calls for
~20 ms; times are medians of the rounds, ratios medians of the per-round ratios. Outputs are
checked to agree before timing (inference probabilities on every side; the RNN's first loss).
"""

from __future__ import annotations

import os

ONE_THREAD = {v: "1" for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                               "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")}
if __name__ == "__main__":  # run as a script: before any import that starts a thread pool
    os.environ.update(ONE_THREAD)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

SIDES = ("specflow", "tf", "torch", "ort")
ROWS = ("cnn", "infer", "rnn", "loop", "chain")
CNN_BATCHES = (64, 256, 1024)
# issue 18's goals: side -> most specflow / side may be.
GOALS = {
    "CNN step": {"tf": 1.3, "torch": 1.0},
    "CNN inference, batch 1": {"torch": 1.0},
    "CNN inference, batch 256": {"ort": 2.0},
    "RNN step": {"tf": 1.0},
    "Fixed point": {"tf": 1.0},
}


def load_peers(wanted) -> dict:
    """The peer modules that import, with their thread pools pinned to one thread."""
    peers = {}
    if "tf" in wanted:
        try:
            import tensorflow as tf

            tf.config.threading.set_intra_op_parallelism_threads(1)
            tf.config.threading.set_inter_op_parallelism_threads(1)
            peers["tf"] = tf
        except ImportError:
            pass
    if "torch" in wanted:
        try:
            import torch

            torch.set_num_threads(1)
            torch.set_num_interop_threads(1)
            peers["torch"] = torch
        except ImportError:
            pass
    if "ort" in wanted:
        try:
            import onnx  # noqa: F401  (specflow's exporter needs it)
            import onnxruntime

            peers["ort"] = onnxruntime
        except ImportError:
            pass
    return peers


def thread_report(peers) -> list[str]:
    from benchmarks.timing import blas_info

    lines = [f"numpy {np.__version__} BLAS: {blas_info()}", "specflow: Session inter_op_threads=1 (one kernel at a time)"]
    if "tf" in peers:
        tf = peers["tf"]
        lines.append(f"tensorflow {tf.__version__}: intra_op={tf.config.threading.get_intra_op_parallelism_threads()} "
                     f"inter_op={tf.config.threading.get_inter_op_parallelism_threads()}")
    if "torch" in peers:
        torch = peers["torch"]
        lines.append(f"torch {torch.__version__}: num_threads={torch.get_num_threads()} "
                     f"interop={torch.get_num_interop_threads()}")
    if "ort" in peers:
        lines.append(f"onnxruntime {peers['ort'].__version__}: intra_op=1 inter_op=1 sequential")
    return lines


# --- workloads: row name -> {side: callable} ------------------------------------------------------


def _close(name: str, outs: dict, rtol=1e-3, atol=1e-4) -> None:
    ref = outs["specflow"]
    for side, out in outs.items():
        if not np.allclose(out, ref, rtol=rtol, atol=atol):
            raise SystemExit(f"{name}: {side} disagrees with specflow (max diff {np.abs(out - ref).max():.3g})")


def cnn_rows(peers, batches) -> tuple[dict, list]:
    from benchmarks import peers_models as pm

    rows, cleanup = {}, []
    for batch in batches:
        sf = pm.SpecflowModel(pm.CNN_SPEC)  # fresh weights per batch: every side starts equal
        cleanup.append(sf.close)
        x, y = pm.cnn_batch(batch)
        sides = {"specflow": sf.step({"images": x, "labels": y})}
        if "tf" in peers:
            tf = peers["tf"]
            m = pm.TfCnn(tf, sf.weights)
            tx, ty = tf.constant(x), tf.constant(y)
            sides["tf"] = lambda m=m, tx=tx, ty=ty: m.step(tx, ty).numpy()
        if "torch" in peers:
            torch = peers["torch"]
            m = pm.TorchCnn(torch, sf.weights)
            tx, ty = torch.from_numpy(x), torch.from_numpy(y)
            sides["torch"] = lambda m=m, tx=tx, ty=ty: m.step(tx, ty).item()
        rows[f"CNN step, batch {batch}"] = sides
    return rows, cleanup


def infer_rows(peers) -> tuple[dict, list]:
    from benchmarks import peers_models as pm

    sf = pm.SpecflowModel(pm.CNN_SPEC)
    rows = {}
    tf_m = pm.TfCnn(peers["tf"], sf.weights) if "tf" in peers else None
    torch_m = pm.TorchCnn(peers["torch"], sf.weights) if "torch" in peers else None
    ort_s = pm.ort_session(peers["ort"], pm.specflow_onnx(sf)) if "ort" in peers else None
    for batch in (1, 256):
        x, _ = pm.cnn_batch(batch, seed=1)
        sides = {"specflow": sf.infer("probs", {"images": x})}
        if tf_m is not None:
            tx = peers["tf"].constant(x)
            sides["tf"] = lambda tx=tx: tf_m.infer(tx).numpy()
        if torch_m is not None:
            tx = peers["torch"].from_numpy(x)
            sides["torch"] = lambda tx=tx: torch_m.infer(tx).numpy()
        if ort_s is not None:
            name = ort_s.get_inputs()[0].name
            sides["ort"] = lambda x=x, name=name: ort_s.run(None, {name: x})[0]
        name = f"CNN inference, batch {batch}"
        _close(name, {side: np.asarray(fn()) for side, fn in sides.items()})
        rows[name] = sides
    return rows, [sf.close]


def rnn_rows(peers) -> tuple[dict, list]:
    from benchmarks import peers_models as pm

    sf = pm.SpecflowModel(pm.RNN_SPEC)
    x, y = pm.rnn_batch(64)
    sides = {"specflow": sf.step({"x": x, "y": y})}
    if "tf" in peers:
        tf = peers["tf"]
        m = pm.TfRnn(tf, sf.weights)
        tx, ty = tf.constant(x), tf.constant(y)
        sides["tf"] = lambda: m.step(tx, ty).numpy()
    if "torch" in peers:
        torch = peers["torch"]
        mt = pm.TorchRnn(torch, sf.weights)
        px, py = torch.from_numpy(x), torch.from_numpy(y)
        sides["torch"] = lambda: mt.step(px, py).item()
    # The first step's loss, from equal weights, before any side has trained.
    _close("RNN step", {side: np.asarray(fn(), np.float32) for side, fn in sides.items()}, rtol=1e-4)
    return {"RNN step (8-step while loop), batch 64": sides}, [sf.close]


def loop_rows(peers) -> tuple[dict, list]:
    """Loops that stay loops: the RNN step with its trip count fed, and a data-dependent loop."""
    from benchmarks import peers_models as pm

    sf = pm.SpecflowModel(pm.RNN_SPEC, pm.rnn_fed_spec())
    x, y = pm.rnn_batch(64)
    n = np.int32(8)
    sides = {"specflow": sf.step({"x": x, "y": y, "n": n})}
    if "tf" in peers:
        tf = peers["tf"]
        m = pm.TfRnn(tf, sf.weights)
        tx, ty, tn = tf.constant(x), tf.constant(y), tf.constant(n)
        sides["tf"] = lambda: m.step(tx, ty, tn).numpy()
    if "torch" in peers:
        mt = pm.TorchRnn(peers["torch"], sf.weights)
        px, py = peers["torch"].from_numpy(x), peers["torch"].from_numpy(y)
        sides["torch"] = lambda: mt.step(px, py).item()
    _close("RNN step, fed", {side: np.asarray(fn(), np.float32) for side, fn in sides.items()}, rtol=1e-4)
    rows = {"RNN step (8 steps, trip count fed), batch 64": sides}
    fx, fu = pm.fixed_point_problem()
    sess, run = pm.specflow_fixed_point(fx, fu)
    fixed = {"specflow": run}
    if "tf" in peers:
        fixed["tf"] = pm.tf_fixed_point(peers["tf"], fx, fu)
    if "torch" in peers:
        fixed["torch"] = pm.torch_fixed_point(peers["torch"], fx, fu)
    outs = {side: fn() for side, fn in fixed.items()}
    trips = {side: int(o[1]) for side, o in outs.items()}
    if len(set(trips.values())) != 1:
        raise SystemExit(f"fixed point: the sides ran different trip counts {trips}")
    _close("Fixed point", {side: np.asarray(o[0]) for side, o in outs.items()})
    rows[f"Fixed point while loop ({trips['specflow']} trips), 64x16"] = fixed
    return rows, [sf.close, sess.close]


def chain_rows(peers) -> tuple[dict, list]:
    from benchmarks import peers_models as pm

    sess, run = pm.specflow_chain()
    sides = {"specflow": run}
    x = np.full(1, 0.5, np.float32)
    if "tf" in peers:
        tf = peers["tf"]

        @tf.function
        def chain(t):
            for _ in range(pm.CHAIN):
                t = tf.sin(t)
            return t

        tx = tf.constant(x)
        sides["tf"] = lambda: chain(tx).numpy()
    if "torch" in peers:
        torch = peers["torch"]

        def torch_chain(t):
            for _ in range(pm.CHAIN):
                t = torch.sin(t)
            return t.numpy()

        px = torch.from_numpy(x)
        sides["torch"] = lambda: torch_chain(px)
    _close("chain", {side: np.asarray(fn()) for side, fn in sides.items()})
    return {f"{pm.CHAIN} chained Sin ops, float32[1]": sides}, [sess.close]


# --- timing -------------------------------------------------------------------------------------


def warm_up(fn, target_s: float = 0.02, sync=lambda: None) -> int:
    """Up to 40 warm-up calls (2 s at most): traces, plans, and specflow's first 32 steps, which
    time every kernel to settle its costs before the generated straight line takes over
    (straight_line.py). Returns how many calls take about ``target_s``."""
    t0 = time.perf_counter()
    for i in range(40):
        fn()
        if i >= 2 and time.perf_counter() - t0 > 2.0:
            break
    sync()
    t0 = time.perf_counter()
    for _ in range(3):
        fn()
    sync()
    return max(1, int(target_s / max((time.perf_counter() - t0) / 3, 1e-7)))


def interleaved(sides: dict, rounds: int, target_s: float = 0.02, sync=None) -> dict:
    """{side: (median seconds per call, median of per-round specflow/side)} over ``rounds``
    rounds, each side timed for ~``target_s`` per round, the order rotating every round, after
    up to 40 warm-up calls (2 s at most). ``sync()`` (a GPU's synchronize) ends every timed run
    of calls, so work still queued on a device counts."""
    sync = sync or (lambda: None)
    number = {side: warm_up(fn, target_s, sync) for side, fn in sides.items()}
    names = list(sides)
    times: dict[str, list[float]] = {s: [] for s in names}
    for r in range(rounds):
        for side in names[r % len(names):] + names[: r % len(names)]:
            fn, n = sides[side], number[side]
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            sync()
            times[side].append((time.perf_counter() - t0) / n)
    sf = times["specflow"]
    return {s: (statistics.median(t), statistics.median(a / b for a, b in zip(sf, t))) for s, t in times.items()}


def measure(rows_wanted, sides_wanted, rounds: int, batches=CNN_BATCHES) -> tuple[dict, list[str]]:
    peers = load_peers(sides_wanted)
    builders = {"cnn": lambda: cnn_rows(peers, batches), "infer": lambda: infer_rows(peers),
                "rnn": lambda: rnn_rows(peers), "loop": lambda: loop_rows(peers), "chain": lambda: chain_rows(peers)}
    results = {}
    for key in rows_wanted:
        rows, cleanup = builders[key]()
        try:
            for name, sides in rows.items():
                results[name] = interleaved(sides, rounds)
        finally:
            for fn in cleanup:
                fn()
    return results, thread_report(peers)


def _goal(name: str) -> dict:
    return next((g for prefix, g in GOALS.items() if name.startswith(prefix)), {})


def print_table(results: dict) -> None:
    present = [s for s in SIDES if any(s in r for r in results.values())]
    head = f"{'workload':44s}" + "".join(f"{s + ' ms':>12s}" for s in present)
    head += "".join(f"{'sf/' + s:>10s}" for s in present if s != "specflow") + "  goals"
    print(head)
    for name, r in results.items():
        line = f"{name:44s}" + "".join(f"{r[s][0] * 1e3:12.3f}" if s in r else f"{'-':>12s}" for s in present)
        line += "".join(f"{r[s][1]:9.2f}x" if s in r else f"{'-':>10s}" for s in present if s != "specflow")
        goals = [f"{s}<={g}x {'ok' if r[s][1] <= g else 'MISS'}" for s, g in _goal(name).items() if s in r]
        print(line + "  " + ", ".join(goals))


def _load() -> str:
    try:
        return "load average " + " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "load average n/a"


# --- separate processes: --spread and --baseline ------------------------------------------------


def _child(args: list[str], tree: str | None = None) -> dict:
    """This script's --json output in a fresh process (specflow from ``tree`` when given)."""
    root = str(Path(__file__).resolve().parent.parent)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(ONE_THREAD)  # the child imports numpy (specflow) before this module's own setting
    # specflow is imported from ``tree`` first; benchmarks (this script) then from this checkout.
    code = (f"import sys; sys.path.insert(0, {tree or root!r}); import specflow; sys.path.insert(0, {root!r}); "
            f"import runpy; sys.argv = ['peers', '--json', *{args!r}]; "
            "runpy.run_module('benchmarks.peers', run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"child failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def spread(rounds: int, sides: list[str], processes: int = 3) -> None:
    """The CNN step's median in ``processes`` separate processes, max/min per batch, for specflow
    and, measured in the same processes (interleaved rounds), each peer that imports: the VM's
    own run-to-run noise shows in the peers' spread too."""
    runs = [_child(["--rows", "cnn", "--sides", *sides, "--rounds", str(rounds)]) for _ in range(processes)]
    print(f"CNN step, {processes} processes ({_load()}): each side's medians, then max/min")
    for name in runs[0]:
        for side in [s for s in SIDES if s in runs[0][name]]:
            meds = [r[name][side][0] for r in runs]
            print(f"{name:30s} {side:9s}" + " ".join(f"{m * 1e3:8.3f}ms" for m in meds)
                  + f"   max/min {max(meds) / min(meds):.3f}")  # fmt: skip


def baseline(tree: str, rows: list[str], rounds: int, pairs: int = 3) -> None:
    """specflow from ``tree`` vs this tree, alternating processes; medians over the processes."""
    args = ["--rows", *rows, "--sides", "specflow", "--rounds", str(rounds)]
    olds, news = [], []
    for _ in range(pairs):
        olds.append(_child(args, tree))
        news.append(_child(args))
    print(f"specflow, {tree} (old) vs this tree (new), {pairs} process pairs ({_load()})")
    print(f"{'workload':44s} {'old ms':>10s} {'new ms':>10s} {'new/old':>8s}")
    for name in news[0]:
        old = statistics.median(o[name]["specflow"][0] for o in olds)
        new = statistics.median(n[name]["specflow"][0] for n in news)
        print(f"{name:44s} {old * 1e3:10.3f} {new * 1e3:10.3f} {new / old:7.2f}x")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--rows", nargs="+", choices=ROWS, default=list(ROWS))
    ap.add_argument("--sides", nargs="+", choices=SIDES, default=list(SIDES))
    ap.add_argument("--spread", action="store_true", help="the CNN step in 3 processes: max/min of medians (every side in --sides)")
    ap.add_argument("--alternate", action="store_true",
                    help="with --spread: the 3 processes alive at once, taking turns round by round (benchmarks/peers_spread.py)")
    ap.add_argument("--baseline", metavar="TREE", help="another specflow checkout to compare with, A/B")
    ap.add_argument("--json", action="store_true", help="print the results as JSON (for --spread/--baseline)")
    args = ap.parse_args(argv)
    if args.spread and args.alternate:
        from benchmarks import peers_spread

        result = peers_spread.spread_alternating(args.rounds, args.sides)
        print(json.dumps(result)) if args.json else peers_spread.print_spread(result, _load())
        return
    if args.spread:
        spread(args.rounds, args.sides)
        return
    if args.baseline:
        baseline(args.baseline, args.rows, args.rounds)
        return
    t0 = time.perf_counter()
    results, threads = measure(args.rows, set(args.sides) | {"specflow"}, args.rounds)
    if args.json:
        print(json.dumps(results))
        return
    for line in threads:
        print(line)
    print(f"{args.rounds} interleaved rounds, {time.perf_counter() - t0:.0f} s, {_load()}")
    print_table(results)


if __name__ == "__main__":
    main()
