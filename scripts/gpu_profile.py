"""Where a GPU training step's time goes: a zoo spec's step on cpu:1,gpu:1 under cProfile.

    python scripts/gpu_profile.py [models/mnist_cnn.yaml] [--batch 256] [--steps 200] [--top 30]

Prints the step time, the plan's nodes per device and the functions with the most own time
(cupy's launches, host copies that wait for the GPU, the executor's bookkeeping).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import gpu  # noqa: E402
from benchmarks import peers_models as pm  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("spec", nargs="?", default=str(pm.CNN_SPEC))
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args()
    import cupy

    sf = pm.SpecflowModel(Path(args.spec), devices=gpu.DEVICES)
    x, y = pm.cnn_batch(args.batch) if "rnn" not in args.spec else pm.rnn_batch(args.batch)
    names = [n for n in sf.spec.model.inputs if n != "training"]
    step = sf.step(dict(zip(names, (x, y))))
    for _ in range(50):
        step()
    cupy.cuda.Device(0).synchronize()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        step()
    cupy.cuda.Device(0).synchronize()
    print(f"{args.spec} batch {args.batch}: {(time.perf_counter() - t0) / args.steps * 1e3:.3f} ms a step; "
          f"placed {gpu.placement(sf)}")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.steps):
        step()
    cupy.cuda.Device(0).synchronize()
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(args.top)
    sf.close()


if __name__ == "__main__":
    main()
