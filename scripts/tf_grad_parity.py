"""Every gradient case of the suite (tests/ops/grad_cases_*.py), plus inputs sitting exactly on
kinks and ties (relu at 0, max ties, clip bounds...), differentiated by specflow and by real
TensorFlow (``tf.GradientTape`` over ``tf.raw_ops``) with the same loss, and compared. Finite
differences check our gradients in the suite; this checks TF's conventions where the math
leaves a choice. Run by hand in a venv that has TensorFlow (never a dependency):

    TF_ENABLE_ONEDNN_OPTS=0 PYTHONPATH=. /work/scratch/tfvenv/bin/python scripts/tf_grad_parity.py [OP ...] [--record]

``--record`` rewrites tests/ops/data/tf_grad_kinks.json, TF's values that the suite checks.

Known and kept (ours agrees with finite differences, TF's does not): SoftmaxCrossEntropyWithLogits'
labels gradient when the backprop output is in the loss too, and its gradient of broadcast
labels/logits (TF returns the broadcast shape); DepthwiseConv2dNative's backprops with dilations.

Prints one line per mismatch and a summary; exit 1 on any mismatch."""

from __future__ import annotations

import inspect
import json
import sys

import numpy as np

from scripts.tf_op_parity import LOOSER_FLOAT64, _grouped, raw_op_kwargs
from tests.ops.grad_kinks import RECORDED, kink_cases

KINKS = kink_cases()


def main(only: list[str]) -> int:
    import tensorflow as tf

    from specflow.graph.dtypes import dtype_of
    from specflow.ops.registry import bind_attrs, get_op
    from specflow.runtime.session import Session
    from tests.ops import grad_harness as gh
    from tests.ops.harness import collect_cases

    record = "--record" in only
    only = [o for o in only if o != "--record"]
    cases = collect_cases("grad_cases_", "GRAD_EXEMPT", {}) + KINKS
    recorded = {}
    bad = same = refused = 0
    for case in cases:
        if only and case.op not in only:
            continue
        fn = getattr(tf.raw_ops, case.op, None)
        if fn is None or case.op.startswith("_"):
            continue
        kink = case.id in {c.id for c in KINKS}
        if kink:  # the loss weights of a recorded case must not depend on what ran before
            gh.RNG = np.random.default_rng(0)
        try:
            b, ins, wrt, names, loss, grads = gh._build(case)
            with Session(b.graph_def) as s:
                ours = [np.zeros_like(ins[i]) if g is None else s.run(g, {names[k]: ins[k] for k in wrt})
                        for i, g in zip(wrt, grads)]  # no gradient (Floor, Round): zeros, as TF's None
        except Exception as e:
            print(f"OURS FAILED {case.op} [{case.id}]: {str(e).splitlines()[0][:160]}")
            bad += 1
            continue
        weights = {int(n.name[1:]): n.attrs["value"] for n in b.graph_def.nodes
                   if n.op == "Const" and n.name[:1] == "w" and n.name[1:].isdigit()}
        opdef = get_op(case.op)
        bound = bind_attrs(opdef, [dtype_of(a) for a in ins], dict(case.attrs))
        params = set(inspect.signature(fn).parameters)
        try:
            consts = [tf.constant(x) for x in ins]
            with tf.GradientTape() as tape:
                for i in wrt:
                    tape.watch(consts[i])
                grouped = _grouped(opdef, bound, consts)
                out = fn(**raw_op_kwargs(case.op, opdef, bound, grouped, params))
                out = list(out) if isinstance(out, (list, tuple)) else [out]
                loss_tf = tf.add_n([tf.reduce_sum(out[k] * tf.constant(w)) for k, w in weights.items()])
            theirs = tape.gradient(loss_tf, [consts[i] for i in wrt])
        except Exception as e:
            refused += 1
            print(f"REFUSED {case.op} [{case.id}]: {str(e).splitlines()[0][:160]}")
            continue
        if kink:
            recorded[case.id] = [None if t is None else np.asarray(tf.convert_to_tensor(t)).tolist() for t in theirs]
        problems = []
        for i, g, t in zip(wrt, ours, theirs):
            t = np.zeros_like(ins[i]) if t is None else np.asarray(tf.convert_to_tensor(t))
            g = np.asarray(g)
            if g.shape != t.shape:
                problems.append(f"input {i}: shape {g.shape} vs TF {t.shape}")
                continue
            both_nan = np.isnan(g) & np.isnan(t)
            atol = max(1e-9, LOOSER_FLOAT64.get(case.op, 0.0))  # (TF's own float64 error, tf_op_parity.py)
            close = np.isclose(g, t, rtol=1e-6, atol=atol) | both_nan | ((g == t) & ~np.isnan(g))
            if not close.all():
                k = np.argwhere(~close)[0]
                problems.append(f"input {i}: {int((~close).sum())} of {g.size} differ, e.g. at {tuple(k)} "
                                f"ours {g[tuple(k)]!r} TF {t[tuple(k)]!r}")
        if problems:
            bad += 1
            print(f"MISMATCH {case.op} [{case.id}]: " + "; ".join(problems))
        else:
            same += 1
    print(f"{same} gradient cases match TF, {bad} differ, {refused} refused by TF")
    if record:  # TF's values at kinks and ties, for tests/ops/test_grad_kinks.py
        RECORDED.write_text(json.dumps({"tensorflow": tf.__version__, "grads": recorded}, indent=0) + "\n")
        print(f"wrote {RECORDED}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
