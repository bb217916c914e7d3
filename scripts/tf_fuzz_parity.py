"""Randomized TF parity: seeded random graphs of 2-6 common ops (scripts/tf_fuzz_ops.py: elementwise
unary/binary ops with broadcasting, reductions, cumulative ops, casts, reshapes, slices, strided
slices, gathers, concat/split/pad/tile, matmuls, segment ops, clip, where...), over small shapes
(size 0 and scalars included) and values with ties, signed zeros, infinities and NaN. Each graph
is grown eagerly in TensorFlow (TF says which ops are valid), then traced as one ``tf.function``
that returns every op's outputs and the ``tf.GradientTape`` gradients of a weighted sum of the
float ones with respect to every float input; that GraphDef is run by specflow through
scripts/tf_parity_common.py (the machinery of tf_graph_parity.py) and compared: values (rtol
1e-4, float16 1e-3), NaN/inf positions, dtypes, and TF's refusals (an op TF rejects at run time
must fail in specflow too). A failing graph is shrunk to its first op that fails on its own,
printed as a repro with that op's input values. TensorFlow is never a specflow dependency:

    PYTHONPATH=. /work/scratch/tfvenv/bin/python scripts/tf_fuzz_parity.py [--seed 0] [--count 2000]

Prints the failures grouped by op and kind (first few repros of each) and a summary; exit 1 on
any failure. Known, and left (TF 2.21, oneDNN on, AVX-512): gather_nd with 1-D indices, whose TF
gradient fails (its ScatterNd reads 1-D indices as a batch of scalar indices); NaN order in top_k
and NaN in softmax (implementation-defined, as tf_graph_parity.py says); Relu(-0.0), -0.0 in TF,
0.0 here (numpy's maximum; its SIMD loops disagree on the zero's sign); TF's float32 Reciprocal
1 ulp off (rcp14 + Newton) and grappler's TruncateDiv(ones_like(y), y) -> Reciprocal(y), seen
through later comparisons; sorted SegmentMax/Min with NaN, which TF folds one way in Eigen's
vectorized columns and another in the scalar remainder (it depends on the row width); float16 chains and ill-conditioned chains (erf near -1, then log1p)
past the tolerance.

Known, and left, in ``--family 2`` (scripts/tf_fuzz_ops2.py), the same TF: TF's CPU Conv2D
gradients refuse dilations > 1 where oneDNN does not take the convolution (float64, EXPLICIT
padding), specflow computes them; convolutions (Conv2D/3D, depthwise, transposed, and their
gradients) with an inf or NaN in the filter or dy, where TF never multiplies the padding (0 * inf
is NaN here; fixing it touches every conv path); MaxPool3DGrad of some windows with a NaN (1 or 2
in 600 graphs; oneDNN's rule there not worked out); ResizeBilinearGrad of a 1x1 image with an infinite
grad (inf in TF, inf + inf * 0 = NaN here); TF's oneDNN Conv2D with asymmetric EXPLICIT
padding, wrong in some shapes (x [2, 4, 4, 1], filter [2, 2, 1, 3], strides [1, 3], padding rows
[1, 0]: off by up to 28 from the direct sum, which specflow and TF_ENABLE_ONEDNN_OPTS=0 give,
seed 7000551 of --family 2 --seed 7 --no-special); float-to-int casts of NaN, infinities and values out
of range (undefined in C++; TF's result depends on the element's position, vector packets
saturating and the scalar tail wrapping), left out of the builder.

``--family 3`` (scripts/tf_fuzz_ops3.py): tf.cond/switch_case/while_loop/TensorArray/scan/foldl/
map_fn graphs, variables captured (frozen keeping If/While functional; ``--lowered`` freezes with
TF's lowering: Switch/Merge, _SwitchN). It found (fixed) TensorListConcatV2/TensorListSplit
missing, a frozen If's captured constant ``cond/input_2`` shadowed by the lowering's Switch of the
same name, _SwitchN unknown, Sqrt/Rsqrt/ReciprocalGrad NaN where dy is 0, and a While var under
shape_invariants inferred as its initial shape (a static shape error downstream). Known, and left:
TF 2.21's gradient of a loop var whose shape changes (shape_invariants) fails ("Incompatible
shapes"), so the growing-vector loop is checked forward only; Relu(-0.0) above shows through
loops (reciprocal(relu(-0.0))).

``--family 4`` (scripts/tf_fuzz_ops4.py): special functions, stateless random ops, sparse and
embedding ops, nn/image ops, fake_quant, complex arithmetic and FFTs. It found (fixed): the
special functions' values off scipy's domain (BesselK*/Y* below 0, float32 BesselY1(0), Expint
below 0 and at inf, Lgamma(-inf), Digamma(0), Polygamma at its poles, Zeta(inf, q),
Igamma/Igammac(inf, inf), Betainc with infinite or NaN a, b, IgammaGradA at a = inf);
SparseSegment{Sum,Mean,SqrtN}GradV2 missing (embedding_lookup_sparse's gradient); RandomGammaGrad
of scalars a vector; stateless uniform/normal/truncated normal in bfloat16 refused, empty truncated
normals failing; FFTs of empty inputs failing; FakeQuantWithMinMaxVars rounding halfway inputs the
other way (TF's Vars kernel divides by the scale) and NaN range gradients of a [0, 0] channel;
complex TanhGrad/SigmoidGrad conjugating (TF's kernels do not); CropAndResizeGradBoxes adding
0 * NaN for samples outside the image; DenseBincount of [b, 0]; a bfloat16 fetch returned as
float32 (_Retval ran as a float32 kernel); constant folding's KeyError on Consts an earlier pass
appended; LowerBound/UpperBound with NaN (TF's binary search, not numpy's NaN-last order). Known,
and left: denormal results, which TF's CPU kernels flush to 0 (float32 Erfc's gradient at x = 10
is exp(-100), 0 in TF, so an infinite loss weight gives NaN there, -inf here); conv1d under
infinite loss weights (family 2's convolutions with inf in dy); TF's float32 Polygamma/Zeta at q below about -7 (its Hurwitz zeta
loses every digit there; scipy's is right); complex arithmetic and functions at infinities and
0 (reciprocal(0), square/log1p/expm1 of an infinite part: C99's rules in numpy, naive formulas in
Eigen) and complex matmuls, FFTs and their gradients of infinities or under infinite loss weights
(where NaN lands depends on the summation order), so the matmul/FFT builders use finite values;
sort/argsort with NaN (as top_k); TF's SparseSegment*Grad of no indices (uninitialized memory,
so the builder uses at least one index); tf.function runs that TF refuses or that give NaN
where TF's own v1 Session runs the same GraphDef and gives specflow's values (a float16
rgb_to_hsv gradient; AddN and DynamicStitch shape errors in gradients of dynamic_partition
graphs: grappler's rewrites); TF 2.21 aborts the process on empty or 0-length real FFTs (DUCC),
so the builder avoids them; threefry refused by both."""

import argparse
import os
import signal
import sys
import tempfile
import time

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import tensorflow as tf
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scripts.tf_fuzz_ops import BUILDERS, NUMS, Gen
from scripts.tf_fuzz_ops2 import BUILDERS2
from scripts.tf_fuzz_ops3 import BUILDERS3
from scripts.tf_fuzz_ops4 import BUILDERS4
from scripts.tf_parity_common import compare, run_in_specflow, tmp_path

tf.get_logger().setLevel("ERROR")


FAMILIES = {"1": BUILDERS, "2": BUILDERS2, "3": BUILDERS3, "4": BUILDERS4, "all": BUILDERS + BUILDERS2 + BUILDERS4}


def grow(seed, n_ops, special=True, builders=BUILDERS):
    """A random graph: the Gen (its pool values, TF's eager results) and its steps
    ``(name, fn, args, desc, outs)``; the last step may be one TF refuses (``outs`` empty)."""
    g = Gen(seed, special)
    g.fresh(g.shape(), str(g.r.choice(NUMS + ("bool",), p=[0.4, 0.15, 0.1, 0.15, 0.1, 0.1])))
    steps = []
    for _ in range(8 * n_ops):
        if len(steps) == n_ops:
            break
        pool_n, in_n = len(g.pool), len(g.inputs)
        try:
            spec = builders[int(g.r.integers(len(builders)))](g)
        except (ValueError, IndexError):
            spec = None
        if spec is not None:
            name, fn, args, desc = spec
            try:
                out = fn(*[tf.constant(g.pool[i]) for i in args])
                vals = [t.numpy() for t in (out if isinstance(out, list) else [out])]
            except tf.errors.InvalidArgumentError:
                if g.r.random() < 0.5:
                    steps.append((name, fn, args, desc, []))
                    break
                vals = None
            except Exception:
                vals = None
            if vals is not None:
                g.pool.extend(vals)
                steps.append((name, fn, args, desc, list(range(len(g.pool) - len(vals), len(g.pool)))))
                continue
        del g.pool[pool_n:]
        del g.inputs[in_n:]
    return g, steps


# The loss weights (the upstream gradient of every output), by position mod 5: finite, or with
# infinities or a NaN among them (how a gradient op passes non-finite upstream values on).
WEIGHTS = ([-0.5, -0.2, 0.1, 0.4, 0.7], [-0.5, np.inf, 0.1, -np.inf, 0.7], [-0.5, np.nan, 0.1, 0.4, 0.7])


def _weight(t, wmode):
    n = tf.size(t)
    return tf.gather(tf.constant(WEIGHTS[wmode], tf.float64), tf.reshape(tf.range(n) % 5, tf.shape(t)))


LOWER = []  # --lowered: every graph frozen with its control flow lowered (TF's default for frozen graphs)


def run(values, inputs, steps, tmp, name, wmode=0):
    """Run the steps in TF and in specflow: ``None`` if they agree, else a list of problems (the
    number of forward outputs is prefixed so callers can tell forward from gradient)."""
    xs = [values[i] for i in inputs]
    specs = [tf.TensorSpec(x.shape, tf.as_dtype(x.dtype)) for x in xs]
    n_fwd = []

    @tf.function(input_signature=specs)
    def f(*args):
        env = dict(zip(inputs, args))
        watched = [a for a in args if a.dtype.is_floating]
        with tf.GradientTape() as tape:
            for a in watched:
                tape.watch(a)
            outs = []
            for _, fn, argi, _, outi in steps:
                o = fn(*[env[i] for i in argi])
                o = o if isinstance(o, list) else [o]
                env.update(zip(outi, o))
                outs += o
            loss = tf.constant(0.0, tf.float64)
            for t in outs:
                if t.dtype.is_floating:
                    loss += tf.reduce_sum(tf.cast(t, tf.float64) * _weight(t, wmode))
        # captured variables (--family 3's) are read under the tape: their gradients too
        watched += [v for v in tape.watched_variables() if v.dtype.is_floating]
        gs = tape.gradient(loss, watched) if watched else []
        n_fwd.append(len(outs))
        return outs + [tf.zeros_like(a) if gr is None else tf.convert_to_tensor(gr) for gr, a in zip(gs, watched)]

    try:
        cf = f.get_concrete_function()
        if cf.variables or LOWER:  # frozen, as tf_graph_parity.py's Keras graphs (If/While kept unless --lowered)
            cf = convert_variables_to_constants_v2(cf, lower_control_flow=bool(LOWER))
    except Exception:
        return None  # TF refuses to trace it (a static shape error): nothing to compare
    n_fwd = n_fwd[0]
    try:
        want = [t.numpy() for t in cf(*[tf.constant(x) for x in xs])]
        tf_err = None
    except tf.errors.OpError as e:
        want, tf_err = None, e
    try:
        got = run_in_specflow(cf, xs, tmp_path(tmp, name))
        sf_err = None
    except Exception as e:
        got, sf_err = None, e
    if tf_err is not None and sf_err is not None:
        return None
    if tf_err is not None:
        return [f"TF refuses ({type(tf_err).__name__}: {_last_line(tf_err.message)}), specflow runs"]
    if sf_err is not None:
        return [f"specflow error ({type(sf_err).__name__}: {str(sf_err).splitlines()[0][:160]})"]
    bad = compare(dict(enumerate(got)), dict(enumerate(want)), check_dtype=True)
    return [("fwd " if int(b.split()[1]) < n_fwd else "grad ") + b for b in bad] or None


def _last_line(message):
    """The line of a TF error that says why (a graph error's first line is "Graph execution
    error:", its reason further down)."""
    lines = [ln.strip() for ln in message.splitlines() if ln.strip() and not ln.startswith(" ")]
    why = [ln for ln in lines if not ln.startswith(("Graph execution error", "Detected at node", "[["))]
    return (why[0] if why else lines[0] if lines else "")[:120]


def _kind(problem):
    return " ".join(problem.split()[:2]) if problem.startswith(("fwd", "grad")) else problem.split("(")[0].strip()


def repro(values, step):
    name, _, args, desc, _ = step
    names = {}
    for i in args:
        names.setdefault(i, "abcdefgh"[len(names)])
    lines = [f"  {desc}"]
    for i, n in names.items():
        v = values[i]
        lines.append(f"    {n} = np.array({np.array2string(v, separator=', ', threshold=64)}, {v.dtype.name})  # shape {v.shape}")
    return "\n".join(lines)


def shrink(g, steps, tmp, wmode):
    """The first step that fails on its own, fed its recorded inputs: (step, problems), or None."""
    for k, st in enumerate(steps):
        ins = list(dict.fromkeys(st[2]))
        bad = run(g.pool, ins, [st], tmp, f"shrink{k}", wmode)
        if bad:
            return st, bad
    return None


class _Hang(BaseException):  # not caught as a specflow or TF error
    pass


def _on_alarm(signum, frame):
    raise _Hang()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--min-ops", type=int, default=2)
    ap.add_argument("--max-ops", type=int, default=6)
    ap.add_argument("--show", type=int, default=2, help="repros printed per (op, kind)")
    ap.add_argument("--no-special", action="store_true", help="no inf/NaN/signed zero in inputs")
    ap.add_argument("--timeout", type=int, default=30, help="seconds per graph (its shrinking included)")
    ap.add_argument("--family", choices=sorted(FAMILIES), default="1",
                    help="op builders: 1 (scripts/tf_fuzz_ops.py), 2 (scripts/tf_fuzz_ops2.py), "
                    "3 (scripts/tf_fuzz_ops3.py: control flow, TensorLists), 4 (scripts/tf_fuzz_ops4.py: special "
                    "functions, stateless random, sparse, nn/image, fake_quant, complex) or all")
    ap.add_argument("--lowered", action="store_true",
                    help="freeze every graph with TF's control-flow lowering (Switch/Merge, _SwitchN for Case)")
    ap.add_argument("--verbose", action="store_true", help="each graph's seed on stderr before it runs")
    a = ap.parse_args()
    LOWER[:] = [True] if a.lowered else []
    signal.signal(signal.SIGALRM, _on_alarm)
    tmp = tempfile.mkdtemp()
    groups: dict = {}
    ran = skipped = 0
    t0 = time.time()
    for i in range(a.count):
        seed = a.seed * 1_000_003 + i
        rs = np.random.default_rng(seed)
        if a.verbose:
            print(f"seed {seed}", file=sys.stderr, flush=True)
        g, steps = grow(seed, int(rs.integers(a.min_ops, a.max_ops + 1)), not a.no_special, FAMILIES[a.family])
        if not steps:
            skipped += 1
            continue
        ran += 1
        signal.alarm(a.timeout)
        wmode = int(rs.choice(3, p=[0.8, 0.1, 0.1])) if not a.no_special else 0
        try:
            bad = run(g.pool, g.inputs, steps, tmp, f"g{i}", wmode)
            small = shrink(g, steps, tmp, wmode) if bad else None
        except _Hang:
            bad, small = [f"no result in {a.timeout}s"], None
        signal.alarm(0)
        if not bad:
            continue
        if small:
            st, bad1 = small
            key = (st[0], _kind(bad1[0]))
            text = repro(g.pool, st) + f"\n    -> {'; '.join(bad1)}"
        else:
            key = ("+".join(s[0] for s in steps), _kind(bad[0]))
            text = "\n".join(repro(g.pool, s) for s in steps) + f"\n    -> {'; '.join(bad)}"
        text += f"  (loss weights {WEIGHTS[wmode]})" if wmode else ""
        groups.setdefault(key, []).append(f"seed {seed}:\n{text}")
        if len(groups[key]) <= a.show:
            print(f"FAIL {key[0]} [{key[1]}] seed {seed}\n{text}", flush=True)
    print(f"\n{ran} graphs run ({skipped} empty) in {time.time() - t0:.0f}s; {sum(map(len, groups.values()))} failing")
    for (op, kind), items in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(items):4d}  {op} [{kind}]")
    return 1 if groups else 0


if __name__ == "__main__":
    sys.exit(main())
