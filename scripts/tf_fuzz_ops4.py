"""Round-4 op builders of scripts/tf_fuzz_parity.py (``--family 4``), in the format of
scripts/tf_fuzz_ops.py: the op families rounds 1-3 do not reach. Special functions (lgamma,
digamma, igamma/igammac, betainc, zeta, polygamma, the Bessel functions, ndtri, erfinv, dawsn,
expint, fresnel, spence, xlog1py, nextafter) near their poles and domain edges; the stateless
random ops with fixed seeds (uniform, int, full-range int, normal, truncated normal, binomial,
poisson, gamma and its gradient, categorical, fold_in/split), which must be bit-exact;
dynamic_partition/stitch, space_to_batch_nd/batch_to_space, searchsorted, sort/argsort, bincount,
histogram_fixed_width, bucketize, setdiff1d, invert_permutation, mirror pad; sparse segment ops
(with num_segments), embedding_lookup_sparse, sparse-dense matmul, sparse_to_dense,
sparse_reduce_sum; nn losses and normalizations (sigmoid/weighted cross entropy, log_poisson_loss,
moments, batch_normalization, l2_normalize, clip_by_norm/global_norm), conv1d,
max_pool_with_argmax, extract_patches, crop_and_resize, non_max_suppression (v3-v5), the colour
ops (rgb_to_hsv, hsv_to_rgb, adjust_contrast/saturation/hue); fake_quant (args, vars, per
channel) and their gradients; complex64/128 arithmetic, matmul and FFTs."""

import numpy as np
import tensorflow as tf

from scripts.tf_fuzz_ops import SPECIAL
from scripts.tf_fuzz_ops2 import own

FL = ("float32", "float64")


def _vals(g, shape, dt, kind="any"):
    """Values for a special function: ``pos`` (mostly in (0, 8)), ``unit`` (in (0, 1)), ``sym``
    (in (-1, 1)) or ``any`` (normal, negatives and integers included: the poles); the domain's
    edges and, when the run allows them, infinities, NaN and signed zeros mixed in."""
    r = g.r
    if kind == "pos":
        x = np.exp(r.standard_normal(shape) * 1.2)
        edges = [0.0, 1.0, 0.5, 2.0, 20.0]
    elif kind == "unit":
        x = r.random(shape)
        edges = [0.0, 1.0, 0.5, 1e-6, 1 - 1e-6]
    elif kind == "sym":
        x = r.random(shape) * 2 - 1
        edges = [0.0, 1.0, -1.0, 0.999, -0.5]
    else:
        x = r.standard_normal(shape) * 3
        edges = [0.0, -1.0, -2.0, 1.0, 2.0, 0.5, -0.5, 10.0]
    if x.size and r.random() < 0.4:
        x = np.where(r.random(shape) < 0.3, r.choice(edges, shape), x)
    if g.special and x.size and r.random() < 0.2:
        x = np.where(r.random(shape) < 0.25, r.choice(SPECIAL, shape), x)
    return own(g, np.asarray(x).astype(dt))


SPECIAL_UNARY = [  # (name, fn, dtypes, domain)
    ("lgamma", tf.math.lgamma, FL + ("float16",), "any"), ("digamma", tf.math.digamma, FL + ("float16",), "any"),
    ("erfinv", tf.math.erfinv, FL, "sym"), ("ndtri", tf.math.ndtri, FL, "unit"),
    ("bessel_i0", tf.math.bessel_i0, FL, "any"), ("bessel_i0e", tf.math.bessel_i0e, FL + ("float16",), "any"),
    ("bessel_i1", tf.math.bessel_i1, FL, "any"), ("bessel_i1e", tf.math.bessel_i1e, FL + ("float16",), "any"),
    ("bessel_k0", tf.math.special.bessel_k0, FL, "pos"), ("bessel_k0e", tf.math.special.bessel_k0e, FL, "pos"),
    ("bessel_k1", tf.math.special.bessel_k1, FL, "pos"), ("bessel_k1e", tf.math.special.bessel_k1e, FL, "pos"),
    ("bessel_j0", tf.math.special.bessel_j0, FL, "any"), ("bessel_j1", tf.math.special.bessel_j1, FL, "any"),
    ("bessel_y0", tf.math.special.bessel_y0, FL, "pos"), ("bessel_y1", tf.math.special.bessel_y1, FL, "pos"),
    ("dawsn", tf.math.special.dawsn, FL, "any"), ("expint", tf.math.special.expint, FL, "any"),
    ("fresnel_cos", tf.math.special.fresnel_cos, FL, "any"), ("fresnel_sin", tf.math.special.fresnel_sin, FL, "any"),
    ("spence", tf.math.special.spence, FL, "pos"), ("erfc", tf.math.erfc, FL, "any"),
]


def special_unary(g):
    r = g.r
    name, f, dts, dom = SPECIAL_UNARY[int(r.integers(len(SPECIAL_UNARY)))]
    dt = str(r.choice(dts))
    return name, f, [_vals(g, g.shape(), dt, dom)], f"{name}(a) [{dt}]"


def special_binary(g):
    """igamma/igammac (gradients in a and x), zeta (in q), polygamma (in x), betainc (in x),
    xlog1py, nextafter; the operands broadcast."""
    r = g.r
    dt = str(r.choice(FL))
    k = int(r.integers(7))
    shape = g.shape()
    other = g.bshape(shape)
    if k in (0, 1):
        name = ("igamma", "igammac")[k]
        f = (tf.math.igamma, tf.math.igammac)[k]
        return name, f, [_vals(g, shape, dt, "pos"), _vals(g, other, dt, "pos")], f"{name}(a, b) [{dt}]"
    if k == 2:
        return "zeta", tf.math.zeta, [_vals(g, shape, dt, "pos"), _vals(g, other, dt, "any")], f"zeta(a, b) [{dt}]"
    if k == 3:
        n = own(g, r.choice([0.0, 1.0, 2.0, 3.0, 0.5, -1.0] if r.random() < 0.2 else [0.0, 1.0, 2.0, 3.0], shape).astype(dt))
        return "polygamma", tf.math.polygamma, [n, _vals(g, other, dt, "any")], f"polygamma(a, b) [{dt}]"
    if k == 4:
        a, b = _vals(g, shape, dt, "pos"), _vals(g, other, dt, "pos")
        x = _vals(g, g.bshape(shape) if r.random() < 0.5 else shape, dt, "unit")
        return "betainc", tf.math.betainc, [a, b, x], f"betainc(a, b, c) [{dt}]"
    if k == 5:
        return "xlog1py", tf.math.xlog1py, [_vals(g, shape, dt), _vals(g, other, dt)], f"xlog1py(a, b) [{dt}]"
    return "nextafter", tf.math.nextafter, [_vals(g, shape, dt), _vals(g, other, dt)], f"nextafter(a, b) [{dt}]"


def _seed(g):
    r = g.r
    it = str(r.choice(["int32", "int64"]))
    return own(g, r.integers(-(2 ** 31), 2 ** 31 - 1, 2).astype(it) if r.random() < 0.5 else r.integers(0, 100, 2).astype(it))


def stateless(g):
    """Stateless random ops: the same seed must give TF's bits."""
    r = g.r
    s = _seed(g)
    shape = [int(v) for v in g.shape(int(r.integers(0, 4)))]
    alg = str(r.choice(["auto_select", "philox", "threefry"], p=[0.45, 0.45, 0.1]))
    k = int(r.integers(10))
    if k == 0:
        dt = str(r.choice(["float32", "float64", "float16", "bfloat16"]))
        lo, hi = (float(r.choice([-3.0, 0.0, 1.5])), float(r.choice([4.0, 1.0, 2.0]))) if r.random() < 0.5 else (0, 1)
        return "stateless_uniform", lambda t: tf.random.stateless_uniform(shape, t, lo, hi, dt, alg=alg), [s], \
            f"stateless_uniform({shape}, a, {lo}, {hi}, {dt}, alg={alg})"
    if k == 1:
        dt = str(r.choice(["int32", "int64", "uint32", "uint64"]))
        if r.random() < 0.4 or dt.startswith("u"):
            return "stateless_uniform_full_int", lambda t: tf.random.stateless_uniform(shape, t, None, None, dt, alg=alg), [s], \
                f"stateless_uniform({shape}, a, dtype={dt}, full range, alg={alg})"
        lo = int(r.choice([-(2 ** 31) if dt == "int32" else -(2 ** 62), -5, 0, 3]))
        hi = int(r.choice([lo + 1, lo + 7, 2 ** 31 - 1, 1000]))
        return "stateless_uniform_int", lambda t: tf.random.stateless_uniform(shape, t, lo, hi, dt, alg=alg), [s], \
            f"stateless_uniform({shape}, a, {lo}, {hi}, {dt}, alg={alg})"
    if k in (2, 3):
        dt = str(r.choice(["float32", "float64", "float16"]))
        mean, std = _vals(g, (), dt), own(g, np.array(abs(r.standard_normal()) + 0.1, dt))
        f = tf.random.stateless_normal if k == 2 else tf.random.stateless_truncated_normal
        name = ("stateless_normal", "stateless_truncated_normal")[k - 2]
        return name, lambda t, m, sd: f(shape, t, m, sd, dt, alg=alg), [s, mean, std], f"{name}({shape}, a, b, c, {dt}, alg={alg})"
    if k == 4:
        dt = str(r.choice(["float32", "float64", "int32", "int64"]))
        counts = own(g, r.choice([0.0, 1.0, 5.0, 20.0, 100.0], shape[-1:] or ()).astype("float32"))
        probs = own(g, r.choice([0.0, 0.1, 0.5, 0.9, 1.0], shape[-1:] or ()).astype("float32"))
        return "stateless_binomial", lambda t, c, p: tf.random.stateless_binomial(shape, t, c, p, dt), [s, counts, probs], \
            f"stateless_binomial({shape}, a, b, c, {dt})"
    if k == 5:
        dt = str(r.choice(["float32", "float64", "int32", "int64"]))
        lam = own(g, r.choice([0.0, 0.5, 3.0, 12.0, 40.0], shape[-1:] or ()).astype(str(r.choice(FL))))
        return "stateless_poisson", lambda t, lm: tf.random.stateless_poisson(shape, t, lm, dt), [s, lam], \
            f"stateless_poisson({shape}, a, b, {dt})"
    if k == 6:
        dt = str(r.choice(FL))
        alpha = own(g, r.choice([0.1, 0.5, 1.0, 2.5, 7.0], shape[-1:] or ()).astype(dt))
        beta = own(g, r.choice([0.5, 1.0, 3.0], shape[-1:] or ()).astype(dt)) if r.random() < 0.5 else None
        if beta is None:
            return "stateless_gamma", lambda t, a_: tf.random.stateless_gamma(shape, t, a_, dtype=dt), [s, alpha], \
                f"stateless_gamma({shape}, a, b, {dt})"
        return "stateless_gamma", lambda t, a_, b_: tf.random.stateless_gamma(shape, t, a_, b_, dtype=dt), [s, alpha, beta], \
            f"stateless_gamma({shape}, a, b, c, {dt})"
    if k == 7:
        n, c = int(r.integers(1, 4)), int(r.integers(1, 5))
        logits = own(g, (r.standard_normal((n, c)) * 2).astype(str(r.choice(FL))))
        ns, ot = int(r.integers(0, 6)), str(r.choice(["int32", "int64"]))
        return "stateless_categorical", lambda t, lg: tf.random.stateless_categorical(lg, ns, t, ot), [s, logits], \
            f"stateless_categorical(b, {ns}, a, {ot})"
    if k == 8:
        data = int(r.integers(-5, 1000))
        return "stateless_fold_in", lambda t: tf.random.stateless_uniform(
            shape, tf.random.experimental.stateless_fold_in(t, data, alg=alg), alg=alg), [s], \
            f"stateless_uniform({shape}, fold_in(a, {data}), alg={alg})"
    num = int(r.integers(1, 4))
    return "stateless_split", lambda t: tf.random.stateless_normal(
        shape, tf.random.experimental.stateless_split(t, num, alg=alg)[-1], alg=alg), [s], \
        f"stateless_normal({shape}, split(a, {num})[-1], alg={alg})"


def arrays4(g):
    """DynamicPartition/DynamicStitch, SpaceToBatchND/BatchToSpaceND, searchsorted, sort/argsort,
    bincount, histogram_fixed_width, bucketize, setdiff1d, invert_permutation, mirror pad."""
    r = g.r
    k = int(r.integers(11))
    if k == 0:
        a = g.pick(("float32", "float64", "int32"), min_rank=1)
        x = g.pool[a]
        pr = int(r.integers(1, x.ndim + 1))
        n = int(r.integers(1, 4))
        parts = r.integers(0, n + (1 if r.random() < 0.05 else 0), x.shape[:pr]).astype("int32")
        return "dynamic_partition", lambda t: tf.dynamic_partition(t, parts, n), [a], f"dynamic_partition(a, {parts.tolist()}, {n})"
    if k == 1:
        dt = str(r.choice(["float32", "float64", "int32"]))
        tail = g.shape(int(r.integers(0, 3)))
        sizes = [int(r.integers(0, 4)) for _ in range(int(r.integers(1, 4)))]
        total = int(r.integers(max(sizes), sum(sizes) + 2)) if sum(sizes) else 1
        idx = [r.integers(0, max(total, 1), (s_,)).astype("int32") for s_ in sizes]
        datas = [g.fresh((s_,) + tail, dt) for s_ in sizes]
        parallel = bool(r.random() < 0.3)
        f = tf.raw_ops.ParallelDynamicStitch if parallel else tf.raw_ops.DynamicStitch
        name = "parallel_dynamic_stitch" if parallel else "dynamic_stitch"
        return name, lambda *ds: f(indices=idx, data=list(ds)), datas, f"{name}({[i.tolist() for i in idx]}, data)"
    if k == 2:
        dt = str(r.choice(["float32", "float64", "int32"]))
        nb = int(r.integers(1, 3))
        block = [int(r.integers(1, 4)) for _ in range(nb)]
        if r.random() < 0.5:
            pads = [[int(r.integers(0, 3)), int(r.integers(0, 3))] for _ in range(nb)]
            sp = [bs * int(r.integers(1, 3)) - p[0] - p[1] for bs, p in zip(block, pads)]
            if min(sp) < 0:
                return None
            a = g.fresh((int(r.integers(1, 3)),) + tuple(sp) + g.shape(int(r.integers(0, 2))), dt)
            return "space_to_batch_nd", lambda t: tf.space_to_batch_nd(t, block, pads), [a], f"space_to_batch_nd(a, {block}, {pads})"
        sp = [int(r.integers(1, 3)) for _ in range(nb)]
        crops = [[int(r.integers(0, bs * d_ // 2 + 1)), 0] for bs, d_ in zip(block, sp)]
        crops = [[c0, int(r.integers(0, bs * d_ - c0 + 1))] for (c0, _), bs, d_ in zip(crops, block, sp)]
        a = g.fresh((int(np.prod(block)) * int(r.integers(1, 3)),) + tuple(sp) + g.shape(int(r.integers(0, 2))), dt)
        return "batch_to_space", lambda t: tf.batch_to_space(t, block, crops), [a], f"batch_to_space(a, {block}, {crops})"
    if k == 3:
        dt = str(r.choice(["float32", "float64", "int32", "int64"]))
        rows, n = int(r.integers(1, 3)), int(r.integers(0, 6))
        sorted_ = own(g, np.sort(g.sample((rows, n), dt), -1).astype(dt))
        vals = g.fresh((rows, int(r.integers(0, 5))), dt)
        side, ot = str(r.choice(["left", "right"])), str(r.choice(["int32", "int64"]))
        return "searchsorted", lambda s_, v: tf.searchsorted(s_, v, side, ot), [sorted_, vals], f"searchsorted(a, b, {side}, {ot})"
    if k == 4:
        a = g.pick(("float32", "float64", "int32", "int64"), min_rank=1)
        ax, d = g.axis(g.pool[a].ndim), str(r.choice(["ASCENDING", "DESCENDING"]))
        if r.random() < 0.5:
            return "sort", lambda t: tf.sort(t, ax, d), [a], f"sort(a, {ax}, {d})"
        st = bool(r.random() < 0.5)
        return "argsort", lambda t: tf.argsort(t, ax, d, stable=st), [a], f"argsort(a, {ax}, {d}, stable={st})"
    if k == 5:
        rank = int(r.integers(1, 3))
        arr = own(g, r.integers(-1 if r.random() < 0.1 else 0, 6, g.shape(rank)).astype("int32"))
        mn = int(r.integers(0, 8)) if r.random() < 0.5 else None
        mx = int(r.integers(0, 8)) if r.random() < 0.3 else None
        bo = bool(r.random() < 0.2)
        ax = -1 if rank == 2 and r.random() < 0.4 else None
        if r.random() < 0.5 and not bo:
            w = g.fresh(g.pool[arr].shape, str(r.choice(["float32", "float64", "int32"])))
            return "bincount", lambda t, u: tf.math.bincount(t, u, minlength=mn, maxlength=mx, axis=ax), [arr, w], \
                f"bincount(a, b, minlength={mn}, maxlength={mx}, axis={ax})"
        return "bincount", lambda t: tf.math.bincount(t, minlength=mn, maxlength=mx, binary_output=bo, axis=ax), [arr], \
            f"bincount(a, minlength={mn}, maxlength={mx}, binary_output={bo}, axis={ax})"
    if k == 6:
        dt = str(r.choice(["float32", "float64", "int32"]))
        a = g.pick((dt,))
        lo, hi = sorted(float(v) for v in r.choice([-3.0, -1.0, 0.0, 0.5, 2.0], 2, replace=False))
        nb, ot = int(r.integers(1, 6)), str(r.choice(["int32", "int64"]))
        rng = own(g, np.array([lo, hi], dt))
        return "histogram_fixed_width", lambda t, u: tf.histogram_fixed_width(t, u, nb, ot), [a, rng], \
            f"histogram_fixed_width(a, [{lo}, {hi}], {nb}, {ot})"
    if k == 7:
        a = g.pick(("float32", "float64", "int32", "int64"))
        bounds = sorted(float(v) for v in r.choice([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0], int(r.integers(0, 5))))
        return "bucketize", lambda t: tf.raw_ops.Bucketize(input=t, boundaries=bounds), [a], f"Bucketize(a, {bounds})"
    if k == 8:
        dt = str(r.choice(["int32", "int64", "float32"]))
        x = own(g, r.integers(-3, 4, int(r.integers(0, 7))).astype(dt))
        y = own(g, r.integers(-3, 4, int(r.integers(0, 4))).astype(dt))
        ot = str(r.choice(["int32", "int64"]))
        return "setdiff1d", lambda t, u: list(tf.compat.v1.setdiff1d(t, u, ot)), [x, y], f"setdiff1d(a, b, {ot})"
    if k == 9:
        n = int(r.integers(0, 6))
        p = r.permutation(n).astype(str(r.choice(["int32", "int64"])))
        if n and r.random() < 0.1:
            p[0] = n
        return "invert_permutation", lambda t: tf.math.invert_permutation(t), [own(g, p)], f"invert_permutation({p.tolist()})"
    a = g.pick(("float32", "float64", "int32"), min_rank=1)
    x = g.pool[a]
    mode = str(r.choice(["REFLECT", "SYMMETRIC"]))
    lim = [d - (mode == "REFLECT") for d in x.shape]
    pads = [[int(r.integers(0, max(m, 0) + 1)), int(r.integers(0, max(m, 0) + 1))] for m in lim]
    return "mirror_pad", lambda t: tf.pad(t, pads, mode), [a], f"pad(a, {pads}, {mode})"


def sparse(g):
    """SparseSegmentSum/Mean/SqrtN (+ num_segments), embedding_lookup_sparse, SparseTensorDenseMatMul,
    SparseToDense, SparseReduceSum."""
    r = g.r
    k = int(r.integers(5))
    dt = str(r.choice(FL))
    if k == 0:
        rows = int(r.integers(1, 5))
        a = g.fresh((rows,) + g.shape(int(r.integers(0, 3)), zero=0.02), dt)
        n = int(r.integers(1, 6))  # (TF 2.21's SparseSegment*Grad of no indices returns uninitialized memory)
        it, st = str(r.choice(["int32", "int64"])), str(r.choice(["int32", "int64"]))
        idx = r.integers(0, rows + (1 if r.random() < 0.05 else 0), n).astype(it)
        seg = np.sort(r.integers(0, 4, n)).astype(st)
        name = str(r.choice(["sum", "mean", "sqrt_n"]))
        f = {"sum": tf.sparse.segment_sum, "mean": tf.sparse.segment_mean, "sqrt_n": tf.sparse.segment_sqrt_n}[name]
        if r.random() < 0.5:
            ns = int(seg.max() + 1 + r.integers(0, 3)) if n else int(r.integers(0, 3))
            return f"sparse_segment_{name}_ns", lambda t: f(t, idx, seg, num_segments=ns), [a], \
                f"sparse.segment_{name}(a, {idx.tolist()}, {seg.tolist()}, num_segments={ns})"
        return f"sparse_segment_{name}", lambda t: f(t, idx, seg), [a], f"sparse.segment_{name}(a, {idx.tolist()}, {seg.tolist()})"
    if k == 1:
        vocab, dim, batch = int(r.integers(1, 6)), int(r.integers(1, 4)), int(r.integers(1, 4))
        params = g.fresh((vocab, dim), dt)
        ids = []
        for b in range(batch):
            for j in range(int(r.integers(0, 3))):
                ids.append((b, j, int(r.integers(0, vocab)), float(r.choice([0.5, 1.0, 2.0, -1.0]))))
        ind = np.array([[b, j] for b, j, _, _ in ids], "int64").reshape(-1, 2)
        sp_ids = tf.SparseTensor(ind, np.array([v for _, _, v, _ in ids], "int64"), [batch, 3])
        comb = str(r.choice(["sum", "mean", "sqrtn"]))
        if r.random() < 0.5:
            w = own(g, np.array([w_ for _, _, _, w_ in ids], dt))
            return "embedding_lookup_sparse_w", lambda p, ww: tf.nn.embedding_lookup_sparse(
                p, sp_ids, tf.SparseTensor(ind, ww, [batch, 3]), combiner=comb), [params, w], \
                f"embedding_lookup_sparse(a, {ids}, b, combiner={comb})"
        return "embedding_lookup_sparse", lambda p: tf.nn.embedding_lookup_sparse(p, sp_ids, None, combiner=comb), [params], \
            f"embedding_lookup_sparse(a, {ids}, None, combiner={comb})"
    if k == 2:
        m, kk, n = int(r.integers(1, 4)), int(r.integers(1, 4)), int(r.integers(1, 4))
        aa, ab = bool(r.random() < 0.3), bool(r.random() < 0.3)
        sshape = (kk, m) if aa else (m, kk)
        nnz = int(r.integers(0, m * kk + 1))
        flat = np.sort(r.choice(m * kk, nnz, replace=False))
        ind = np.stack(np.unravel_index(flat, sshape), -1).astype("int64").reshape(-1, 2)
        vals = g.fresh((nnz,), dt)
        b = g.fresh((n, kk) if ab else (kk, n), dt)
        return "sparse_dense_matmul", lambda v, d: tf.sparse.sparse_dense_matmul(tf.SparseTensor(ind, v, sshape), d, aa, ab), \
            [vals, b], f"sparse_dense_matmul(sparse({ind.tolist()}, a, {sshape}), b, adjoint_a={aa}, adjoint_b={ab})"
    shape = tuple(max(int(d), 1) for d in g.shape(int(r.integers(1, 4))))
    nnz = int(r.integers(0, int(np.prod(shape)) + 1))
    flat = np.sort(r.choice(int(np.prod(shape)), nnz, replace=False))
    ind = np.stack(np.unravel_index(flat, shape), -1).astype("int64").reshape(-1, len(shape))
    vals = g.fresh((nnz,), str(r.choice(FL + ("int32",))))
    if k == 3:
        dv = float(r.choice([0.0, -1.0, 2.5]))
        return "sparse_to_dense", lambda v: tf.sparse.to_dense(tf.SparseTensor(ind, v, shape), dv), [vals], \
            f"sparse.to_dense(sparse({ind.tolist()}, a, {shape}), {dv})"
    ax = None if r.random() < 0.3 else [int(v) for v in r.choice(len(shape), int(r.integers(1, len(shape) + 1)), replace=False)]
    keep = bool(r.random() < 0.5)
    return "sparse_reduce_sum", lambda v: tf.sparse.reduce_sum(tf.SparseTensor(ind, v, shape), ax, keep), [vals], \
        f"sparse.reduce_sum(sparse({ind.tolist()}, a, {shape}), {ax}, keepdims={keep})"


def nn4(g):
    """Losses and normalizations built from primitives TF emits (and their gradients), conv1d,
    max_pool_with_argmax, extract_patches."""
    r = g.r
    k = int(r.integers(10))
    if k <= 2:
        a = g.pick(FL + ("float16",))
        b = g.fresh(g.pool[a].shape, g.pool[a].dtype.name)
        if k == 0:
            return "sigmoid_xent", lambda x, z: tf.nn.sigmoid_cross_entropy_with_logits(z, x), [a, b], "sigmoid_cross_entropy_with_logits(b, a)"
        if k == 1:
            pw = float(r.choice([0.5, 1.0, 3.0]))
            return "weighted_xent", lambda x, z: tf.nn.weighted_cross_entropy_with_logits(z, x, pw), [a, b], f"weighted_cross_entropy_with_logits(b, a, {pw})"
        full = bool(r.random() < 0.5)
        return "log_poisson_loss", lambda x, z: tf.nn.log_poisson_loss(tf.abs(z), x, full), [a, b], f"log_poisson_loss(abs(b), a, {full})"
    if k == 3:
        a = g.pick(FL, min_rank=1)
        ax = sorted({int(v) for v in r.choice(g.pool[a].ndim, int(r.integers(1, g.pool[a].ndim + 1)))})
        keep = bool(r.random() < 0.5)
        return "moments", lambda x: list(tf.nn.moments(x, ax, keepdims=keep)), [a], f"moments(a, {ax}, keepdims={keep})"
    if k == 4:
        a = g.pick(FL, min_rank=1)
        x = g.pool[a]
        c = x.shape[-1:]
        m, v, o, s = g.fresh(c, x.dtype.name), own(g, (r.random(c) + 0.3).astype(x.dtype)), g.fresh(c, x.dtype.name), g.fresh(c, x.dtype.name)
        eps = float(r.choice([1e-3, 1e-5]))
        return "batch_normalization", lambda t, m_, v_, o_, s_: tf.nn.batch_normalization(t, m_, v_, o_, s_, eps), [a, m, v, o, s], \
            f"batch_normalization(a, b, c, d, e, {eps})"
    if k == 5:
        a = g.pick(FL, min_rank=1)
        ax = g.axis(g.pool[a].ndim)
        if r.random() < 0.5:
            return "l2_normalize", lambda x: tf.math.l2_normalize(x, ax), [a], f"l2_normalize(a, {ax})"
        cn = float(r.choice([0.5, 1.0, 5.0]))
        if r.random() < 0.5:
            return "clip_by_norm", lambda x: tf.clip_by_norm(x, cn, [ax]), [a], f"clip_by_norm(a, {cn}, [{ax}])"
        b = g.pick(FL)
        if g.pool[b].dtype != g.pool[a].dtype:
            return None
        return "clip_by_global_norm", lambda x, y: list(tf.clip_by_global_norm([x, y], cn)[0]), [a, b], f"clip_by_global_norm([a, b], {cn})"
    if k == 6:
        dt = str(r.choice(FL))
        n, w, cin, cout, kw = (int(r.integers(1, 3)), int(r.integers(1, 7)), int(r.integers(1, 3)), int(r.integers(1, 3)), int(r.integers(1, 4)))
        x, f = g.fresh((n, w, cin), dt), g.fresh((kw, cin, cout), dt)
        st, pad = int(r.integers(1, 3)), str(r.choice(["SAME", "VALID"]))
        dl = int(r.integers(1, 3)) if st == 1 and dt == "float32" else 1
        return "conv1d", lambda t, u: tf.nn.conv1d(t, u, st, pad, dilations=dl), [x, f], f"conv1d(a, b, {st}, {pad}, dilations={dl})"
    if k == 7:
        dt = str(r.choice(("float32", "float64", "float16")))
        x = g.fresh((int(r.integers(1, 3)), int(r.integers(1, 5)), int(r.integers(1, 5)), int(r.integers(1, 3))), dt)
        if r.random() < 0.5:
            g.pool[x] = r.choice([-1.0, 0.0, 1.0], g.pool[x].shape).astype(dt)
        ks, ss = [int(r.integers(1, 3)), int(r.integers(1, 3))], [int(r.integers(1, 3)), int(r.integers(1, 3))]
        pad = str(r.choice(["SAME", "VALID"]))
        if pad == "VALID":
            ks = [min(k_, d) for k_, d in zip(ks, g.pool[x].shape[1:3])]
        ib = bool(r.random() < 0.5)
        return "max_pool_with_argmax", lambda t: list(tf.nn.max_pool_with_argmax(t, ks, ss, pad, include_batch_in_index=ib)), [x], \
            f"max_pool_with_argmax(a, {ks}, {ss}, {pad}, include_batch_in_index={ib})"
    if k == 8:
        dt = str(r.choice(("float32", "float64", "int32")))
        x = g.fresh((int(r.integers(1, 3)), int(r.integers(1, 6)), int(r.integers(1, 6)), int(r.integers(1, 3))), dt)
        sz = [1, int(r.integers(1, 4)), int(r.integers(1, 4)), 1]
        st = [1, int(r.integers(1, 3)), int(r.integers(1, 3)), 1]
        rt = [1, int(r.integers(1, 3)), int(r.integers(1, 3)), 1]
        pad = str(r.choice(["SAME", "VALID"]))
        return "extract_patches", lambda t: tf.image.extract_patches(t, sz, st, rt, pad), [x], f"extract_patches(a, {sz}, {st}, {rt}, {pad})"
    a = g.pick(FL + ("float16",), min_rank=1)
    kind = str(r.choice(["gelu", "gelu_tanh", "silu", "log_sigmoid"]))
    f = {"gelu": tf.nn.gelu, "gelu_tanh": lambda t: tf.nn.gelu(t, approximate=True), "silu": tf.nn.silu,
         "log_sigmoid": tf.math.log_sigmoid}[kind]
    return kind, f, [a], f"{kind}(a)"


def image4(g):
    """crop_and_resize, non_max_suppression v3-v5, rgb_to_hsv/hsv_to_rgb, adjust_contrast/saturation/hue."""
    r = g.r
    k = int(r.integers(6))
    if k == 0:
        dt = str(r.choice(("float32", "float64", "float16")))
        img = g.fresh((int(r.integers(1, 3)), int(r.integers(1, 6)), int(r.integers(1, 6)), int(r.integers(1, 3))), dt)
        nb = int(r.integers(0, 4))
        boxes = own(g, (r.random((nb, 4)) * 1.4 - 0.2).astype("float32"))
        bi = r.integers(0, g.pool[img].shape[0], nb).astype("int32")
        cs = [int(r.integers(1, 4)), int(r.integers(1, 4))]
        method = str(r.choice(["bilinear", "nearest"]))
        ev = float(r.choice([0.0, -1.0]))
        return "crop_and_resize", lambda t, b: tf.image.crop_and_resize(t, b, bi, cs, method, ev), [img, boxes], \
            f"crop_and_resize(a, b, {bi.tolist()}, {cs}, {method}, {ev})"
    if k == 1:
        n = int(r.integers(0, 7))
        c = r.random((n, 2)) * 4
        boxes = own(g, np.concatenate([c, c + r.random((n, 2)) * 3 * (1 if r.random() < 0.8 else -1)], 1).astype("float32"))
        scores = own(g, r.choice([0.1, 0.3, 0.5, 0.7, 0.9], n).astype("float32") if r.random() < 0.5 else r.random(n).astype("float32"))
        mo, iou = int(r.integers(0, n + 2)), float(r.choice([0.1, 0.5, 0.7]))
        st = float(r.choice([float("-inf"), 0.2, 0.5]))
        v = int(r.integers(3))
        if v == 0:
            return "nms_v3", lambda b, s_: tf.image.non_max_suppression(b, s_, mo, iou, st), [boxes, scores], f"non_max_suppression(a, b, {mo}, {iou}, {st})"
        if v == 1:
            return "nms_v4", lambda b, s_: list(tf.image.non_max_suppression_padded(b, s_, mo, iou, st, pad_to_max_output_size=True)), \
                [boxes, scores], f"non_max_suppression_padded(a, b, {mo}, {iou}, {st}, pad)"
        sig = float(r.choice([0.0, 0.5]))
        return "nms_v5", lambda b, s_: list(tf.image.non_max_suppression_with_scores(b, s_, mo, iou, st, sig)), [boxes, scores], \
            f"non_max_suppression_with_scores(a, b, {mo}, {iou}, {st}, {sig})"
    dt = str(r.choice(("float32", "float64", "float16") if k != 4 else ("float32", "float16")))
    shape = g.shape(int(r.integers(0, 3))) + (3,)
    img = own(g, (r.random(shape) * 1.2 - 0.1 if r.random() < 0.7 else r.choice([0.0, 0.5, 1.0], shape)).astype(dt))
    if k == 2:
        if r.random() < 0.5:
            return "rgb_to_hsv", tf.image.rgb_to_hsv, [img], "rgb_to_hsv(a)"
        return "hsv_to_rgb", tf.image.hsv_to_rgb, [img], "hsv_to_rgb(a)"
    if k == 3:
        d = float(r.choice([-0.7, -0.2, 0.1, 0.5, 1.0]))
        return "adjust_hue", lambda t: tf.image.adjust_hue(t, d), [img], f"adjust_hue(a, {d})"
    if k == 4:
        if len(shape) < 3:
            return None
        f_ = float(r.choice([0.0, 0.5, 2.0, -1.0]))
        return "adjust_contrast", lambda t: tf.image.adjust_contrast(t, f_), [img], f"adjust_contrast(a, {f_})"
    f_ = float(r.choice([0.0, 0.5, 2.0]))
    return "adjust_saturation", lambda t: tf.image.adjust_saturation(t, f_), [img], f"adjust_saturation(a, {f_})"


def fake_quant(g):
    r = g.r
    a = g.pick(("float32",))
    x = g.pool[a]
    nb, nr = int(r.choice([2, 4, 8, 16])), bool(r.random() < 0.3)
    lo, hi = sorted(float(v) for v in r.choice([-6.0, -1.0, -0.3, 0.0, 0.2, 1.0, 6.0], 2, replace=False))
    k = int(r.integers(3))
    if k == 0:
        return "fake_quant_args", lambda t: tf.quantization.fake_quant_with_min_max_args(t, lo, hi, nb, nr), [a], \
            f"fake_quant_with_min_max_args(a, {lo}, {hi}, {nb}, {nr})"
    if k == 1:
        mn, mx = own(g, np.array(lo, "float32")), own(g, np.array(hi, "float32"))
        return "fake_quant_vars", lambda t, u, v: tf.quantization.fake_quant_with_min_max_vars(t, u, v, nb, nr), [a, mn, mx], \
            f"fake_quant_with_min_max_vars(a, {lo}, {hi}, {nb}, {nr})"
    if not x.ndim:
        return None
    c = x.shape[-1]
    los = r.choice([-3.0, -1.0, -0.1, 0.0, 0.4], c)
    his = los + r.choice([0.0, 0.5, 1.0, 4.0], c)
    mn, mx = own(g, los.astype("float32")), own(g, his.astype("float32"))
    return "fake_quant_per_channel", lambda t, u, v: tf.quantization.fake_quant_with_min_max_vars_per_channel(t, u, v, nb, nr), \
        [a, mn, mx], f"fake_quant_with_min_max_vars_per_channel(a, {los.tolist()}, {his.tolist()}, {nb}, {nr})"


def complex_(g):
    """complex64/128 built from float parts (so the gradients reach them), through arithmetic,
    unary ops, matmul and FFTs, back to real outputs."""
    r = g.r
    dt = str(r.choice(FL))
    shape = g.shape(int(r.integers(1, 4)), zero=0.02)
    k = int(r.integers(6))
    # finite, non-zero parts: complex infinities and division by 0 follow C99's rules in numpy and
    # naive formulas in Eigen, and in matmuls and FFTs where NaN lands depends on the summation
    # order (BLAS, pocketfft vs DUCC): known, and left (tf_fuzz_parity.py)
    def part(shp):
        return own(g, (r.standard_normal(shp) * 2).astype(dt))

    re, im = part(shape), part(shape)
    if k == 0:
        name = str(r.choice(["add", "sub", "mul", "div", "pow"]))
        re2, im2 = part(g.bshape(shape)), part(g.bshape(shape))
        f = {"add": tf.add, "sub": tf.subtract, "mul": tf.multiply, "div": tf.divide, "pow": tf.pow}[name]
        if g.pool[re2].shape != g.pool[im2].shape:
            return None

        def fb(a, b, c, d):
            z = f(tf.complex(a, b), tf.complex(c, d))
            return [z, tf.math.real(z), tf.math.imag(z)]
        return f"complex_{name}", fb, [re, im, re2, im2], f"{name}(complex(a, b), complex(c, d)) -> z, real, imag"
    if k == 1:
        name = str(r.choice(["abs", "angle", "conj", "exp", "log", "sqrt", "square", "neg", "reciprocal", "sign",
                             "tanh", "sin", "cos", "rsqrt", "expm1", "log1p"]))
        f = {"abs": tf.abs, "angle": tf.math.angle, "conj": tf.math.conj, "exp": tf.exp, "log": tf.math.log, "sqrt": tf.sqrt,
             "square": tf.square, "neg": tf.negative, "reciprocal": tf.math.reciprocal, "sign": tf.sign, "tanh": tf.tanh,
             "sin": tf.sin, "cos": tf.cos, "rsqrt": tf.math.rsqrt, "expm1": tf.math.expm1, "log1p": tf.math.log1p}[name]

        def fu(a, b):
            z = f(tf.complex(a, b))
            return [z] + ([tf.math.real(z), tf.math.imag(z)] if z.dtype.is_complex else [])
        return f"complex_{name}", fu, [re, im], f"{name}(complex(a, b))"
    if k == 2:
        m, kk, n = (int(v) for v in r.integers(1, 4, 3))
        a, b, c, d = part((m, kk)), part((m, kk)), part((kk, n)), part((kk, n))
        ta, tb = bool(r.random() < 0.3), bool(r.random() < 0.3)
        if ta:
            g.pool[a], g.pool[b] = g.pool[a].T.copy(), g.pool[b].T.copy()
        if tb:
            g.pool[c], g.pool[d] = g.pool[c].T.copy(), g.pool[d].T.copy()

        def fm(a_, b_, c_, d_):
            z = tf.matmul(tf.complex(a_, b_), tf.complex(c_, d_), adjoint_a=ta, adjoint_b=tb)
            return [z, tf.abs(z)]
        return "complex_matmul", fm, [a, b, c, d], f"matmul(complex(a, b), complex(c, d), adjoint_a={ta}, adjoint_b={tb})"
    if k in (3, 4):
        name = str(r.choice(["fft", "ifft", "fft2d", "ifft2d"]))
        f = {"fft": tf.signal.fft, "ifft": tf.signal.ifft, "fft2d": tf.signal.fft2d, "ifft2d": tf.signal.ifft2d}[name]
        if name.endswith("2d") and len(shape) < 2:
            return None

        def ff(a, b):
            z = f(tf.complex(a, b))
            return [z, tf.math.real(z) + 0.5 * tf.math.imag(z)]
        return name, ff, [re, im], f"{name}(complex(a, b))"
    name = str(r.choice(["rfft", "irfft", "rfft2d", "irfft2d"]))
    if name.endswith("2d") and len(shape) < 2:
        return None
    nd = 2 if name.endswith("2d") else 1
    ln = [int(r.integers(1, 6)) for _ in range(nd)] if r.random() < 0.4 else None
    if 0 in shape or (ln is None and name.startswith("i") and shape[-1] < 2):
        return None  # TF 2.21 aborts (DUCC: "axis length mismatch", "no zero-sized FFTs")
    f = {"rfft": tf.signal.rfft, "irfft": tf.signal.irfft, "rfft2d": tf.signal.rfft2d, "irfft2d": tf.signal.irfft2d}[name]
    if name.startswith("i"):
        def fi(a, b):
            return f(tf.complex(a, b), ln)
        return name, fi, [re, im], f"{name}(complex(a, b), {ln})"

    def fr(a):
        z = f(a, ln)
        return [z, tf.abs(z)]
    return name, fr, [re], f"{name}(a, {ln})"


BUILDERS4 = ([special_unary] * 5 + [special_binary] * 4 + [stateless] * 4 + [arrays4] * 5 + [sparse] * 3
             + [nn4] * 4 + [image4] * 3 + [fake_quant] * 2 + [complex_] * 3)
