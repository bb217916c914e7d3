"""specflow on a GPU beside PyTorch eager on the same card: ``python -m benchmarks.gpu`` (issue 20).

Rows: training steps of the digits MLP (models/digits_mlp.yaml: 64-128-10, Adam), the zoo CNN
(models/mnist_cnn.yaml, Adam), the RNN (models/rnn_sequence_sum.yaml: an 8-step while loop, Adam)
and a 784-1024-1024-10 MLP (SGD), each at batch 256 and 1024. specflow runs the spec's training
graph in a Session on ``cpu:1,gpu:1`` (the placer puts the kernels on the GPU); PyTorch runs the
same network eagerly on ``cuda``, from the same initial weights. Both sides take the batch from
host memory every step (as a training loop reading data does) and return the loss to the host.

Sides run in interleaved rounds (order rotating; ``peers.interleaved``), each round ~50 ms of
calls followed by a device synchronize; times are medians over rounds, ratios medians of
per-round ratios. The
card's name, the library versions and where specflow placed each row's nodes are printed.

    python -m benchmarks.gpu [--rounds 11] [--batches 256 1024] [--rows mlp cnn rnn wide]

Without cupy and a GPU it says so and exits 2; without PyTorch it prints specflow's rows alone.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from benchmarks import peers_models as pm  # noqa: E402
from benchmarks.peers import interleaved  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MLP_SPEC = ROOT / "models" / "digits_mlp.yaml"
WIDE = (784, 1024, 1024, 10)
ROWS = ("mlp", "cnn", "rnn", "wide")
GOAL = 1.2  # issue 20: specflow / PyTorch on every row
DEVICES = "cpu:1,gpu:1"


class TorchMlp:
    """Dense layers (relu between) and mean sparse cross-entropy; Adam or SGD as the spec's."""

    def __init__(self, torch, params, *, adam: bool, lr: float, device: str):
        self.torch = torch
        self.p = [(torch.tensor(w, device=device).requires_grad_(), torch.tensor(b, device=device).requires_grad_())
                  for w, b in params]
        flat = [t for wb in self.p for t in wb]
        if adam:
            self.opt = torch.optim.Adam(flat, lr=lr, betas=(pm.ADAM["beta1"], pm.ADAM["beta2"]), eps=pm.ADAM["epsilon"])
        else:
            self.opt = torch.optim.SGD(flat, lr=lr)

    def step(self, x, y):
        torch = self.torch
        self.opt.zero_grad(set_to_none=True)
        h = x
        for i, (w, b) in enumerate(self.p):
            h = h @ w + b
            if i < len(self.p) - 1:
                h = torch.relu(h)
        loss = torch.nn.functional.cross_entropy(h, y)
        loss.backward()
        self.opt.step()
        return loss


def _mlp_params(sf: pm.SpecflowModel, names) -> list:
    return [(sf.weights[f"{n}/kernel"], sf.weights[f"{n}/bias"]) for n in names]


def _row(torch, sf, feeds: dict, make_torch, check: bool) -> dict:
    """{side: one training step} for a row; the torch side moves the host batch to the card."""
    sides = {"specflow": sf.step(feeds)}
    if torch is not None:
        m = make_torch()
        host = [torch.from_numpy(a) for a in feeds.values()]

        def torch_step():
            return m.step(*(t.to("cuda") for t in host)).item()

        sides["torch"] = torch_step
        if check:  # the first step's loss, from the same weights (no dropout in these rows)
            a, b = float(sides["specflow"]()), float(torch_step())
            if not np.isclose(a, b, rtol=1e-3, atol=1e-4):
                raise SystemExit(f"first-step losses differ: specflow {a} vs torch {b}")
    return sides


def build_rows(torch, wanted, batches) -> tuple[dict, list, dict]:
    from benchmarks.train_step import LR, spec_text

    rows, models, placed = {}, [], {}
    for batch in batches:
        for key in wanted:
            if key == "mlp":
                sf = pm.SpecflowModel(MLP_SPEC, devices=DEVICES)
                x, y = pm.cnn_batch(batch)
                params = _mlp_params(sf, ("hidden", "logits"))
                name, feeds, check = f"MLP 64-128-10 (Adam), batch {batch}", {"images": x, "labels": y}, True
                make = lambda p=params: TorchMlp(torch, p, adam=True, lr=1e-3, device="cuda")  # noqa: E731
            elif key == "wide":
                sf = pm.SpecflowModel(ROOT / "bench_mlp.yaml", spec_text(WIDE), devices=DEVICES)
                rng = np.random.default_rng(0)
                x = rng.standard_normal((batch, WIDE[0])).astype(np.float32)
                y = rng.integers(0, WIDE[-1], batch).astype(np.int64)
                params = _mlp_params(sf, [f"dense{i}" for i in range(len(WIDE) - 1)])
                name, feeds, check = f"MLP 784-1024-1024-10 (SGD), batch {batch}", {"x": x, "y": y}, True
                make = lambda p=params: TorchMlp(torch, p, adam=False, lr=LR, device="cuda")  # noqa: E731
            elif key == "cnn":
                sf = pm.SpecflowModel(pm.CNN_SPEC, devices=DEVICES)
                x, y = pm.cnn_batch(batch)
                name, feeds, check = f"CNN (mnist_cnn, Adam), batch {batch}", {"images": x, "labels": y}, False
                make = lambda w=sf.weights: pm.TorchCnn(torch, w, device="cuda")  # noqa: E731
            else:
                sf = pm.SpecflowModel(pm.RNN_SPEC, devices=DEVICES)
                x, y = pm.rnn_batch(batch)
                name, feeds, check = f"RNN (8-step while loop, Adam), batch {batch}", {"x": x, "y": y}, True
                make = lambda w=sf.weights: pm.TorchRnn(torch, w, device="cuda")  # noqa: E731
            models.append(sf)
            rows[name] = _row(torch, sf, feeds, make, check)
            placed[name] = placement(sf)
    return rows, models, placed


def placement(sf: pm.SpecflowModel) -> str:
    """Nodes per device in the training step's plan (the Session's largest), and its receives."""
    plans = list(sf.sess._plans.values())
    if not plans:
        return "n/a"
    parts = max(plans, key=lambda p: sum(len(g.nodes) for g in p.partitions.values())).partitions
    out = []
    for dev, g in sorted(parts.items()):
        recvs = sum(n.op == "_Recv" for n in g.nodes)
        out.append(f"{dev.rsplit('device:', 1)[-1]} {len(g.nodes)} ({recvs} _Recv)")
    return ", ".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--batches", type=int, nargs="+", default=[256, 1024])
    ap.add_argument("--rows", nargs="+", choices=ROWS, default=list(ROWS))
    args = ap.parse_args(argv)
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("no GPU")
    except Exception as e:  # not installed, no driver, no device
        print(f"benchmarks.gpu needs cupy and a CUDA GPU: {e}")
        return 2
    try:
        import torch

        torch = torch if torch.cuda.is_available() else None
    except ImportError:
        torch = None
    card = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"card: {card}; cupy {cupy.__version__}, CUDA runtime {cupy.cuda.runtime.runtimeGetVersion()}; "
          f"numpy {np.__version__}" + (f"; torch {torch.__version__} (eager, cuda)" if torch else "; no PyTorch"))
    print(f"specflow: Session on {DEVICES}, inter_op_threads=1; float32 everywhere (TF32 off on both sides)")

    def sync():
        cupy.cuda.Device(0).synchronize()
        if torch is not None:
            torch.cuda.synchronize()

    t0 = time.perf_counter()
    rows, models, placed = build_rows(torch, args.rows, args.batches)
    results = {}
    try:
        for name, sides in rows.items():
            results[name] = interleaved(sides, args.rounds, target_s=0.05, sync=sync)
    finally:
        for m in models:
            m.close()
    print(f"{args.rounds} interleaved rounds, {time.perf_counter() - t0:.0f} s")
    print(f"{'workload':46s}{'specflow ms':>13s}{'torch ms':>10s}{'sf/torch':>10s}  goal  placed (nodes per device)")
    for name, r in results.items():
        line = f"{name:46s}{r['specflow'][0] * 1e3:13.3f}"
        if "torch" in r:
            ok = "ok" if r["torch"][1] <= GOAL else "MISS"
            line += f"{r['torch'][0] * 1e3:10.3f}{r['torch'][1]:9.2f}x  {ok:4s}"
        else:
            line += f"{'-':>10s}{'-':>10s}  {'':4s}"
        print(line + f"  {placed[name]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
