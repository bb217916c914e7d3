"""Round-2 op builders of scripts/tf_fuzz_parity.py (``--family 2``), in the format of
scripts/tf_fuzz_ops.py: convolutions (Conv2D/Conv3D with strides, dilations, SAME/VALID/explicit
padding; DepthwiseConv2dNative; Conv2DBackpropInput), pooling (2-D and 3-D max/avg, ties),
FusedBatchNormV3 (training and inference), LRN, image resizes and their v1 flags, linear algebra
on well-conditioned inputs (inverse, determinants, solve, Cholesky, QR, SVD), scatters with
duplicate indices, OneHot, Range/LinSpace, Unique, softmax cross entropies, BiasAdd (both data
formats), SpaceToDepth/DepthToSpace, matrix diagonals, integer ops at their edges (bitwise ops,
shifts out of range, division of negatives, INT_MIN) and float-to-int casts of NaN, infinities
and out-of-range values."""

import numpy as np
import tensorflow as tf

from scripts.tf_fuzz_ops import FLOATS, TIES

INT_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def own(g, value):
    """A placeholder fed ``value`` (chosen by the builder, not sampled)."""
    g.pool.append(np.asarray(value))
    g.inputs.append(len(g.pool) - 1)
    return len(g.pool) - 1


def _image(g, rank, dtypes=("float32", "float64", "float16"), lo=1, hi=6):
    r = g.r
    dt = str(r.choice(dtypes))
    shp = (int(r.integers(1, 3)),) + tuple(int(r.integers(lo, hi)) for _ in range(rank - 2)) + (int(r.integers(1, 4)),)
    return g.fresh(shp, dt), dt


def _padding(g, nd, explicit=True):
    r = g.r
    p = str(r.choice(["SAME", "VALID", "EXPLICIT"] if explicit else ["SAME", "VALID"]))
    if p != "EXPLICIT":
        return p
    return [[0, 0]] + [[int(r.integers(0, 3)), int(r.integers(0, 3))] for _ in range(nd)] + [[0, 0]]


def conv(g):
    r = g.r
    k = int(r.integers(4))
    nd = 3 if k == 1 else 2
    a, dt = _image(g, nd + 2, ("float32", "float64") if nd == 2 else ("float32",))
    cin = g.pool[a].shape[-1]
    ks = [int(r.integers(1, 4)) for _ in range(nd)]
    # TF's CPU kernels refuse dilations > 1 where oneDNN does not take the convolution (float64,
    # explicit padding): its gradients fail there ("do not yet support dilation rates larger than 1")
    if r.random() < 0.5 or dt == "float64":
        s, d = [int(r.integers(1, 4)) for _ in range(nd)], [1] * nd
    else:
        s, d = [1] * nd, [int(r.integers(1, 3)) for _ in range(nd)]
    if k == 0:
        f = g.fresh(tuple(ks) + (cin, int(r.integers(1, 4))), dt)
        pad = _padding(g, 2, explicit=d == [1, 1])
        desc = f"conv2d(a, b, strides={s}, padding={pad}, dilations={d})"
        return "conv2d", lambda x, w: tf.nn.conv2d(x, w, [1] + s + [1], pad, dilations=[1] + d + [1]), [a, f], desc
    if k == 1:
        f = g.fresh(tuple(ks) + (cin, int(r.integers(1, 3))), dt)
        pad = _padding(g, 3, explicit=False)
        desc = f"conv3d(a, b, strides={s}, padding={pad}, dilations={d})"
        return "conv3d", lambda x, w: tf.nn.conv3d(x, w, [1] + s + [1], pad, dilations=[1] + d + [1]), [a, f], desc
    if k == 2:
        f = g.fresh(tuple(ks) + (cin, int(r.integers(1, 3))), dt)
        pad = _padding(g, 2, explicit=False)
        ss = [1, s[0], s[0], 1]
        rate = d if s[0] == 1 else None
        desc = f"depthwise_conv2d(a, b, {ss}, {pad}, dilations={rate})"
        return "depthwise_conv2d", lambda x, w: tf.nn.depthwise_conv2d(x, w, ss, pad, dilations=rate), [a, f], desc
    # transposed: output sizes whose forward conv gives the input's sizes
    x = g.pool[a]
    cout = int(r.integers(1, 4))
    f = g.fresh(tuple(ks) + (cout, cin), dt)
    pad = str(r.choice(["SAME", "VALID"]))
    out = [x.shape[0]]
    for i in range(2):
        n, st, ke = x.shape[1 + i], s[i], (ks[i] - 1) * d[i] + 1
        lo, hi = ((n - 1) * st + 1, n * st) if pad == "SAME" else ((n - 1) * st + ke, n * st + ke - 1)
        out.append(int(r.integers(lo, hi + 1)))
    out.append(cout)
    desc = f"conv2d_transpose(a, b, {out}, strides={s}, padding={pad}, dilations={d})"
    return "conv2d_transpose", lambda t, w: tf.nn.conv2d_transpose(t, w, out, [1] + s + [1], pad, dilations=[1] + d + [1]), [a, f], desc


def pool(g):
    r = g.r
    nd = 2 if r.random() < 0.7 else 3
    a, dt = _image(g, nd + 2, ("float32", "float64", "float16") if nd == 2 else ("float32",))
    if r.random() < 0.5:
        g.pool[a] = r.choice(TIES, g.pool[a].shape).astype(dt)
    ks = [int(r.integers(1, 4)) for _ in range(nd)]
    s = [int(r.integers(1, 4)) for _ in range(nd)]
    pad = str(r.choice(["SAME", "VALID"]))
    if pad == "VALID":  # an empty VALID pooling kills TF 2.21 (SIGFPE)
        ks = [min(k, d) for k, d in zip(ks, g.pool[a].shape[1:4])]
    kind = str(r.choice(["max", "avg"]))
    f = {(2, "max"): tf.nn.max_pool2d, (2, "avg"): tf.nn.avg_pool2d, (3, "max"): tf.nn.max_pool3d, (3, "avg"): tf.nn.avg_pool3d}[nd, kind]
    name = f"{kind}_pool{nd}d"
    return name, lambda x: f(x, ks, s, pad), [a], f"{name}(a, {ks}, {s}, {pad})"


def batch_norm(g):
    r = g.r
    a, dt = _image(g, 4, ("float32", "float16"))
    c = g.pool[a].shape[-1]
    sc, of = g.fresh((c,), "float32"), g.fresh((c,), "float32")
    eps = float(r.choice([1e-3, 1e-5, 0.1]))
    if r.random() < 0.5:
        factor = float(r.choice([1.0, 0.5]))
        mean, var = own(g, r.standard_normal(c).astype("float32")), own(g, (r.random(c) + 0.5).astype("float32"))

        def f(x, s_, o_, m_, v_):
            return list(tf.raw_ops.FusedBatchNormV3(x=x, scale=s_, offset=o_, mean=m_, variance=v_, epsilon=eps,
                                                    exponential_avg_factor=factor, is_training=True)[:3])
        if factor == 1.0:
            return "fused_batch_norm_train", lambda x, s_, o_: f(x, s_, o_, tf.zeros([0]), tf.zeros([0])), [a, sc, of], f"FusedBatchNormV3(a, b, c, eps={eps}, training)"
        return "fused_batch_norm_train_avg", f, [a, sc, of, mean, var], f"FusedBatchNormV3(a, b, c, d, e, eps={eps}, factor={factor}, training)"
    mean, var = g.fresh((c,), "float32"), own(g, (r.random(c) + (0.0 if r.random() < 0.2 else 0.5)).astype("float32"))

    def h(x, s_, o_, m_, v_):
        return tf.raw_ops.FusedBatchNormV3(x=x, scale=s_, offset=o_, mean=m_, variance=v_, epsilon=eps, is_training=False)[0]
    return "fused_batch_norm_infer", h, [a, sc, of, mean, var], f"FusedBatchNormV3(a, b, c, d, e, eps={eps}, inference)"


def lrn(g):
    r = g.r
    a, _ = _image(g, 4, ("float32",))
    if r.random() < 0.5:
        g.pool[a] = g.pool[a][..., :1].repeat(int(r.integers(1, 8)), -1)
    rad, bias, alpha, beta = int(r.integers(0, 4)), float(r.choice([1.0, 2.0, 0.5])), float(r.choice([1e-4, 0.1, 1.0])), float(r.choice([0.75, 0.5, 1.0]))
    desc = f"lrn(a, {rad}, {bias}, {alpha}, {beta})"
    return "lrn", lambda x: tf.nn.local_response_normalization(x, rad, bias, alpha, beta), [a], desc


def resize(g):
    r = g.r
    a, dt = _image(g, 4, ("float32", "float64", "float16", "int32") if r.random() < 0.3 else ("float32",))
    size = [int(r.integers(1, 8)), int(r.integers(1, 8))]
    ac = bool(r.random() < 0.4)
    hp = bool(not ac and r.random() < 0.6)
    method = str(r.choice(["bilinear", "nearest", "bicubic", "area"], p=[0.4, 0.35, 0.15, 0.1]))
    if method == "area":
        return "resize_area", lambda x: tf.raw_ops.ResizeArea(images=x, size=size, align_corners=ac), [a], f"ResizeArea(a, {size}, align_corners={ac})"
    op = {"bilinear": tf.raw_ops.ResizeBilinear, "nearest": tf.raw_ops.ResizeNearestNeighbor, "bicubic": tf.raw_ops.ResizeBicubic}[method]
    desc = f"resize_{method}(a, {size}, align_corners={ac}, half_pixel_centers={hp})"
    return f"resize_{method}", lambda x: op(images=x, size=size, align_corners=ac, half_pixel_centers=hp), [a], desc


def _wellcond(g, n, batch, dt, spd=False):
    r = g.r
    m = r.standard_normal(tuple(batch) + (n, n))
    m = m @ np.swapaxes(m, -1, -2) + n * np.eye(n) if spd else m + 3 * np.eye(n) * np.sign(r.standard_normal())
    return own(g, m.astype(dt))


def linalg(g):
    r = g.r
    dt = str(r.choice(["float32", "float64"]))
    n = int(r.integers(1, 5))
    batch = [] if r.random() < 0.5 else [int(r.integers(1, 3))]
    k = int(r.integers(7))
    if k == 0:
        a = _wellcond(g, n, batch, dt)
        adj = bool(r.random() < 0.3)
        return "matrix_inverse", lambda x: tf.linalg.inv(x, adjoint=adj), [a], f"inv(a, adjoint={adj})"
    if k == 1:
        a = _wellcond(g, n, batch, dt)
        return "matrix_determinant", tf.linalg.det, [a], "det(a)"
    if k == 2:
        a = _wellcond(g, n, batch, dt)
        return "log_matrix_determinant", lambda x: list(tf.linalg.slogdet(x)), [a], "slogdet(a)"
    if k == 3:
        a = _wellcond(g, n, batch, dt)
        b = g.fresh(tuple(batch) + (n, int(r.integers(1, 3))), dt)
        adj = bool(r.random() < 0.3)
        return "matrix_solve", lambda x, y: tf.linalg.solve(x, y, adjoint=adj), [a, b], f"solve(a, b, adjoint={adj})"
    if k == 4:
        a = _wellcond(g, n, batch, dt, spd=True)
        return "cholesky", tf.linalg.cholesky, [a], "cholesky(a)"
    m = int(r.integers(1, 5))
    a = own(g, r.standard_normal(tuple(batch) + (m, n)).astype(dt))
    full = bool(r.random() < 0.4)
    if k == 5:
        return "qr", lambda x: list(tf.linalg.qr(x, full_matrices=full)), [a], f"qr(a, full_matrices={full})"
    uv = bool(r.random() < 0.5)
    if uv:
        # singular vectors are unique up to sign only (TF's Eigen SVD and LAPACK pick differently):
        # compare what does not depend on it, the reconstruction and |u|, |v| (gradients too)
        def svd_uv(x):
            s_, u, v = tf.linalg.svd(x, full_matrices=False, compute_uv=True)
            return [s_, tf.matmul(u * s_[..., None, :], v, adjoint_b=True), tf.abs(u), tf.abs(v)]
        return "svd_uv", svd_uv, [a], "svd(a) -> s, u diag(s) v^H, |u|, |v|"
    return "svd", lambda x: tf.linalg.svd(x, compute_uv=False), [a], "svd(a, compute_uv=False)"


def scatter(g):
    r = g.r
    dt = str(r.choice(["float32", "float64", "int32", "int64"]))
    shape = g.shape(int(r.integers(1, 4)), zero=0.02)
    shape = tuple(max(d, 1) for d in shape)
    k = int(r.integers(1, len(shape) + 1))
    n = int(r.integers(0, 5))
    it = str(r.choice(["int32", "int64"]))
    idx = np.stack([r.integers(0, d, n) for d in shape[:k]], -1).astype(it) if n else np.zeros((0, k), it)
    if r.random() < 0.08 and n:
        idx[0, 0] = shape[0] + 1
    u = g.fresh((n,) + shape[k:], dt)
    kind = str(r.choice(["scatter_nd", "update", "add", "sub", "max", "min"]))
    if kind == "scatter_nd":
        return "scatter_nd", lambda t: tf.scatter_nd(idx, t, shape), [u], f"scatter_nd({idx.tolist()}, a, {shape})"
    base = g.fresh(shape, dt)
    f = {"update": tf.tensor_scatter_nd_update, "add": tf.tensor_scatter_nd_add, "sub": tf.tensor_scatter_nd_sub,
         "max": tf.tensor_scatter_nd_max, "min": tf.tensor_scatter_nd_min}[kind]
    return f"tensor_scatter_{kind}", lambda b, t: f(b, idx, t), [base, u], f"tensor_scatter_nd_{kind}(a, {idx.tolist()}, b)"


def misc2(g):
    """OneHot with on/off values, Range, LinSpace, Unique, L2Loss, the softmax cross entropies,
    BiasAdd in NCHW, SpaceToDepth/DepthToSpace, matrix diagonals."""
    r = g.r
    k = int(r.integers(9))
    if k == 0:
        idx = own(g, r.integers(-2, 5, g.shape()).astype(str(r.choice(["int32", "int64", "uint8"]))))
        depth, ax = int(r.integers(0, 5)), int(r.integers(-1, g.pool[idx].ndim + 1))
        dt = str(r.choice(["float32", "int32", "float64"]))
        on, off = (3, -1) if r.random() < 0.5 else (1, 0)
        return "one_hot", lambda t: tf.one_hot(t, depth, on, off, axis=ax, dtype=dt), [idx], f"one_hot(a, {depth}, {on}, {off}, axis={ax}, dtype={dt})"
    if k == 1:
        dt = str(r.choice(["float32", "float64", "int32", "int64"]))
        vals = [float(v) for v in r.choice([-3, -1, 0, 0.5, 1, 2, 4, 7], 3)]
        s, l_, d = (own(g, np.array(v).astype(dt)) for v in vals)
        return "range", lambda a_, b_, c_: tf.range(a_, b_, c_), [s, l_, d], f"range({vals})"
    if k == 2:
        dt = str(r.choice(["float32", "float64"]))
        s, e = own(g, np.array(r.standard_normal() * 3, dt)), own(g, np.array(r.standard_normal() * 3, dt))
        num = int(r.integers(0, 6))
        return "linspace", lambda a_, b_: tf.linspace(a_, b_, num), [s, e], f"linspace(a, b, {num})"
    if k == 3:
        a = own(g, r.integers(-3, 4, int(r.integers(0, 8))).astype(str(r.choice(["int32", "int64", "float32"]))))
        oi = str(r.choice(["int32", "int64"]))
        if r.random() < 0.5:
            return "unique", lambda t: list(tf.unique(t, oi)), [a], f"unique(a, {oi})"
        return "unique_with_counts", lambda t: list(tf.unique_with_counts(t, oi)), [a], f"unique_with_counts(a, {oi})"
    if k == 4:
        dt = str(r.choice(FLOATS))
        n, c = int(r.integers(0, 4)), int(r.integers(1, 5))
        a = g.fresh((n, c), dt)
        if r.random() < 0.5:
            lab = np.abs(r.standard_normal((n, c))).astype(dt)
            lab = own(g, lab / np.maximum(lab.sum(-1, keepdims=True), 1e-3).astype(dt))
            return "softmax_xent", lambda x, y: tf.nn.softmax_cross_entropy_with_logits(y, x), [a, lab], "softmax_cross_entropy_with_logits(b, a)"
        lab = r.integers(0, c + (1 if r.random() < 0.1 else 0), n).astype(str(r.choice(["int32", "int64"])))
        return "sparse_softmax_xent", lambda x: tf.nn.sparse_softmax_cross_entropy_with_logits(lab, x), [a], f"sparse_softmax_cross_entropy_with_logits({lab.tolist()}, a)"
    if k == 5:
        a = g.pick(("float32", "float64", "int32"), min_rank=2)
        x = g.pool[a]
        fmt = "NCHW" if x.ndim >= 3 and r.random() < 0.6 else "NHWC"
        b = g.fresh((x.shape[1] if fmt == "NCHW" else x.shape[-1],), x.dtype.name)
        return "bias_add", lambda t, u: tf.nn.bias_add(t, u, data_format=fmt), [a, b], f"bias_add(a, b, data_format={fmt})"
    if k == 6:
        bs = int(r.integers(2, 4))
        dt = str(r.choice(["float32", "int32", "float64"]))
        if r.random() < 0.5:
            a = g.fresh((int(r.integers(1, 3)), bs * int(r.integers(1, 3)), bs * int(r.integers(1, 3)), int(r.integers(1, 3))), dt)
            return "space_to_depth", lambda t: tf.nn.space_to_depth(t, bs), [a], f"space_to_depth(a, {bs})"
        a = g.fresh((int(r.integers(1, 3)), int(r.integers(1, 3)), int(r.integers(1, 3)), bs * bs * int(r.integers(1, 3))), dt)
        return "depth_to_space", lambda t: tf.nn.depth_to_space(t, bs), [a], f"depth_to_space(a, {bs})"
    a = g.pick(("float32", "float64", "int32"), min_rank=2 if k == 7 else 1)
    x = g.pool[a]
    lo = int(r.integers(-2, 2))
    hi = lo + int(r.integers(0, 2))
    align = str(r.choice(["RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT"]))
    if k == 7:
        if r.random() < 0.5:
            return "matrix_diag_part", lambda t: tf.linalg.diag_part(t, k=(lo, hi), padding_value=9, align=align), [a], f"diag_part(a, k=({lo}, {hi}), align={align})"
        m, n = x.shape[-2:]
        dl = [min(m + min(d, 0), n - max(d, 0)) for d in range(lo, hi + 1)]
        if min(dl) <= 0:
            return None
        dshape = x.shape[:-2] + ((hi - lo + 1,) if hi > lo else ()) + (max(dl),)
        dg = g.fresh(dshape, x.dtype.name)
        return "matrix_set_diag", lambda t, u: tf.linalg.set_diag(t, u, k=(lo, hi), align=align), [a, dg], f"set_diag(a, b, k=({lo}, {hi}), align={align})"
    nr = int(r.integers(-1, 5)) if r.random() < 0.3 else -1
    return "matrix_diag", lambda t: tf.linalg.diag(t, k=lo, num_rows=nr, padding_value=2), [a], f"diag(a, k={lo}, num_rows={nr})"


def integers(g):
    """Bitwise ops, shifts (negative and too large), division of negatives and INT_MIN, abs/neg of
    INT_MIN, population count."""
    r = g.r
    dt = str(r.choice(INT_TYPES))
    info = np.iinfo(dt)
    shape = g.shape()

    def ints():
        v = r.integers(-7 if info.min else 0, 8, shape).astype(dt)
        if v.size and r.random() < 0.5:
            m = r.random(shape) < 0.3
            v = np.where(m, r.choice(np.array([info.min, info.max, info.min + 1, 0, -1 if info.min else 1], dtype=dt), shape), v)
        return own(g, v.astype(dt))

    k = int(r.integers(5))
    if k == 0:
        name = str(r.choice(["bitwise_and", "bitwise_or", "bitwise_xor"]))
        f = getattr(tf.bitwise, name)
        return name, f, [ints(), ints()], f"{name}(a, b)"
    if k == 1:
        name = str(r.choice(["left_shift", "right_shift"]))
        f = getattr(tf.bitwise, name)
        sh = own(g, r.integers(-2 if info.min else 0, info.bits + 4, shape).astype(dt))
        return name, f, [ints(), sh], f"{name}(a, b)"
    if k == 2:
        name = str(r.choice(["floordiv", "floormod", "truncatediv", "truncatemod", "div"]))
        f = {"floordiv": tf.math.floordiv, "floormod": tf.math.floormod, "truncatediv": tf.truncatediv,
             "truncatemod": tf.truncatemod, "div": lambda a, b: tf.raw_ops.Div(x=a, y=b)}[name]
        a, b = ints(), ints()
        if r.random() < 0.8:
            g.pool[b] = np.where(g.pool[b] == 0, np.array(-1 if info.min else 1, dt), g.pool[b]).astype(dt)
        if info.min:  # INT_MIN / -1 kills TF with SIGFPE (x86's idiv): nothing to compare
            g.pool[b] = np.where((g.pool[a] == info.min) & (g.pool[b] == -1), np.array(1, dt), g.pool[b]).astype(dt)
        return f"int_{name}", f, [a, b], f"{name}(a, b)"
    if k == 3:
        name = str(r.choice(["abs", "neg", "invert", "population_count", "sign", "square"]))
        if name in ("abs", "neg", "sign") and not info.min:
            return None
        f = {"abs": tf.abs, "neg": tf.negative, "invert": tf.bitwise.invert, "population_count": tf.raw_ops.PopulationCount,
             "sign": tf.sign, "square": tf.square}[name]
        if name == "population_count":
            return f"int_{name}", lambda t: f(x=t), [ints()], f"PopulationCount(a) [{dt}]"
        return f"int_{name}", f, [ints()], f"{name}(a) [{dt}]"
    # float -> int casts at the edges of the target's range. NaN, infinities and values out of
    # range are left out: C++ leaves them undefined, and TF's result depends on the element's
    # position (Eigen's vector packets saturate, its scalar tail wraps: float64 256.0 -> int8 is
    # 127 in a tensor of 16, 0 in one of 9)
    src = str(r.choice(["float32", "float64", "float16"]))
    to = str(r.choice(INT_TYPES + ("bool",)))
    ti = np.iinfo(to) if to != "bool" else np.iinfo("uint8")
    hi, lo = min(float(ti.max), 2.0 ** 24), max(float(ti.min), -(2.0 ** 24))
    edges = np.array([0.0, -0.0, 0.5, -0.5, 0.99, -0.99, 2.5, -2.5, hi, lo, hi - 0.5, lo + 0.5, np.nan if to == "bool" else 1.0])
    v = r.choice(edges, shape).astype(src)
    ok = (v.astype("float64") <= float(ti.max)) & (v.astype("float64") > float(ti.min) - 1)
    a = own(g, np.where(ok, v, np.zeros_like(v)))
    return "cast_edge", lambda t: tf.cast(t, to), [a], f"cast(a, {to}) [{src}]"


BUILDERS2 = [conv] * 4 + [pool] * 3 + [batch_norm] * 2 + [lrn, resize, resize] + [linalg] * 3 + [scatter] * 2 + [misc2] * 3 + [integers] * 3
