"""The op builders of scripts/tf_fuzz_parity.py: each takes a :class:`Gen` (the graph being
grown: a pool of values, its random generator) and returns ``(name, fn, args, desc)``: ``fn``
maps the TF tensors of pool entries ``args`` to a tensor or a list of them, ``desc`` says what it
does with its arguments ``a, b, ...`` (the repro line). Builders return None when they do not
apply. Values are small (dims 0-4, rank 0-4) and include ties, signed zeros, infinities and NaN
where the op defines them; TensorFlow decides what is valid (a builder may emit an invalid op:
TF's refusal is then the expected result)."""

import numpy as np
import tensorflow as tf

FLOATS = ("float32", "float64", "float16")
INTS = ("int32", "int64")
NUMS = FLOATS + INTS
TIES = np.array([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0])
SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan])


class Gen:
    def __init__(self, seed, special=True):
        self.r = np.random.default_rng(seed)
        self.special = special
        self.inputs = []  # pool indices of the placeholders
        self.pool = []  # numpy values (TF's eager results for step outputs)

    def shape(self, rank=None, zero=0.05):
        r = self.r
        rank = int(r.choice(4, p=[0.15, 0.3, 0.35, 0.2])) if rank is None else rank
        return tuple(0 if r.random() < zero else int(r.integers(1, 5)) for _ in range(rank))

    def sample(self, shape, dtype):
        r = self.r
        if dtype in INTS:
            return r.integers(-6, 7, shape).astype(dtype)
        if dtype == "bool":
            return r.random(shape) < 0.5
        x = r.standard_normal(shape) * 2
        if r.random() < 0.3:
            x = r.choice(TIES, shape)
        if self.special and r.random() < 0.25 and x.size:
            m = r.random(shape) < 0.3
            x = np.where(m, r.choice(SPECIAL, shape), x)
        return np.asarray(x).astype(dtype)

    def fresh(self, shape, dtype):
        self.pool.append(self.sample(shape, dtype))
        self.inputs.append(len(self.pool) - 1)
        return len(self.pool) - 1

    def pick(self, dtypes, min_rank=0, new=0.25):
        """A pool value of one of ``dtypes`` (rank >= min_rank), or a fresh input."""
        ok = [i for i, v in enumerate(self.pool) if v.dtype.name in dtypes and v.ndim >= min_rank]
        if ok and self.r.random() > new:
            return int(self.r.choice(ok))
        shp = self.shape()
        while len(shp) < min_rank:
            shp = shp + (int(self.r.integers(1, 4)),)
        return self.fresh(shp, str(self.r.choice(dtypes)))

    def bshape(self, shape):
        """A shape broadcast-compatible with ``shape`` (``shape`` itself if it is empty: TF 2.21
        dies of SIGFPE on some broadcast gradients of empty tensors, e.g. [4, 0] * [1, 0])."""
        r = self.r
        s = list(shape)
        if 0 in s:
            return tuple(s)
        if s and r.random() < 0.4:
            s = s[int(r.integers(0, len(s) + 1)):]
        s = [1 if r.random() < 0.3 else d for d in s]
        if r.random() < 0.2 and len(s) < 4:
            s = [int(r.integers(1, 4))] + s
        return tuple(s)

    def partner(self, i):
        """A second operand for pool entry ``i``: same dtype, broadcast-compatible."""
        x = self.pool[i]
        ok = []
        for j, v in enumerate(self.pool):
            if v.dtype == x.dtype and (v.shape == x.shape or (v.size and x.size)):
                try:
                    np.broadcast_shapes(v.shape, x.shape)
                    ok.append(j)
                except ValueError:
                    pass
        if ok and self.r.random() < 0.4:
            return int(self.r.choice(ok))
        return self.fresh(self.bshape(x.shape), x.dtype.name)

    def axis(self, rank):
        return int(self.r.integers(-rank, rank)) if rank else 0

    def axes(self, rank):
        r = self.r
        if rank == 0 or r.random() < 0.2:
            return None
        if r.random() < 0.5:
            return self.axis(rank)
        k = int(r.integers(1, rank + 1))
        return [int(a) - (rank if r.random() < 0.5 else 0) for a in r.choice(rank, k, replace=False)]


def _unary(name, f, dtypes):
    def build(g):
        return name, f, [g.pick(dtypes)], f"{name}(a)"
    return build


def _binary(name, f, dtypes):
    def build(g):
        a = g.pick(dtypes)
        return name, f, [a, g.partner(a)], f"{name}(a, b)"
    return build


UNARY = [
    ("abs", tf.abs, NUMS), ("neg", tf.negative, NUMS), ("sign", tf.sign, NUMS), ("square", tf.square, NUMS),
    ("exp", tf.exp, FLOATS), ("log", tf.math.log, FLOATS), ("log1p", tf.math.log1p, FLOATS), ("expm1", tf.math.expm1, FLOATS),
    ("sqrt", tf.sqrt, FLOATS), ("rsqrt", tf.math.rsqrt, FLOATS), ("reciprocal", tf.math.reciprocal, FLOATS),
    ("sin", tf.sin, FLOATS), ("cos", tf.cos, FLOATS), ("tan", tf.tan, FLOATS), ("sinh", tf.sinh, FLOATS),
    ("cosh", tf.cosh, FLOATS), ("tanh", tf.tanh, FLOATS), ("asin", tf.asin, FLOATS), ("acos", tf.acos, FLOATS),
    ("atan", tf.atan, FLOATS), ("asinh", tf.asinh, FLOATS), ("acosh", tf.acosh, FLOATS), ("atanh", tf.atanh, FLOATS),
    ("sigmoid", tf.sigmoid, FLOATS), ("erf", tf.math.erf, FLOATS), ("erfc", tf.math.erfc, FLOATS),
    ("floor", tf.floor, FLOATS), ("ceil", tf.math.ceil, FLOATS), ("round", tf.round, NUMS), ("rint", tf.math.rint, FLOATS),
    ("relu", tf.nn.relu, NUMS), ("relu6", tf.nn.relu6, NUMS), ("elu", tf.nn.elu, FLOATS), ("selu", tf.nn.selu, FLOATS),
    ("leaky_relu", lambda x: tf.nn.leaky_relu(x, 0.2), FLOATS), ("softplus", tf.nn.softplus, FLOATS),
    ("softsign", tf.nn.softsign, FLOATS), ("is_nan", tf.math.is_nan, FLOATS), ("is_inf", tf.math.is_inf, FLOATS),
    ("is_finite", tf.math.is_finite, FLOATS), ("logical_not", tf.logical_not, ("bool",)),
    ("l2_loss", tf.nn.l2_loss, FLOATS), ("zeros_like", tf.zeros_like, NUMS + ("bool",)),
    ("ones_like", tf.ones_like, NUMS + ("bool",)), ("stop_gradient", tf.stop_gradient, NUMS),
    ("identity", tf.identity, NUMS + ("bool",)), ("shape", tf.shape, NUMS), ("size", tf.size, NUMS), ("rank", tf.rank, NUMS),
]
BINARY = [
    ("add", tf.add, NUMS), ("sub", tf.subtract, NUMS), ("mul", tf.multiply, NUMS), ("truediv", tf.divide, NUMS),
    ("realdiv", lambda a, b: tf.raw_ops.RealDiv(x=a, y=b), FLOATS), ("div", lambda a, b: tf.raw_ops.Div(x=a, y=b), NUMS),
    ("floordiv", tf.math.floordiv, NUMS), ("floormod", tf.math.floormod, NUMS), ("truncatediv", tf.truncatediv, NUMS),
    ("truncatemod", tf.truncatemod, NUMS), ("maximum", tf.maximum, NUMS), ("minimum", tf.minimum, NUMS),
    ("pow", tf.pow, NUMS), ("squared_difference", tf.math.squared_difference, NUMS), ("atan2", tf.atan2, FLOATS),
    ("xdivy", tf.math.xdivy, FLOATS), ("xlogy", tf.math.xlogy, FLOATS), ("divide_no_nan", tf.math.divide_no_nan, FLOATS),
    ("multiply_no_nan", tf.math.multiply_no_nan, FLOATS), ("equal", tf.equal, NUMS + ("bool",)),
    ("not_equal", tf.not_equal, NUMS + ("bool",)), ("less", tf.less, NUMS), ("less_equal", tf.less_equal, NUMS),
    ("greater", tf.greater, NUMS), ("greater_equal", tf.greater_equal, NUMS), ("logical_and", tf.logical_and, ("bool",)),
    ("logical_or", tf.logical_or, ("bool",)),
]

BUILDERS = [_unary(*u) for u in UNARY] + [_binary(*b) for b in BINARY] * 2


def reduction(g):
    r = g.r
    name, f, dts = [("reduce_sum", tf.reduce_sum, NUMS), ("reduce_mean", tf.reduce_mean, NUMS),
                    ("reduce_max", tf.reduce_max, NUMS), ("reduce_min", tf.reduce_min, NUMS),
                    ("reduce_prod", tf.reduce_prod, NUMS), ("reduce_all", tf.reduce_all, ("bool",)),
                    ("reduce_any", tf.reduce_any, ("bool",)), ("reduce_logsumexp", tf.reduce_logsumexp, FLOATS),
                    ("reduce_euclidean_norm", tf.math.reduce_euclidean_norm, NUMS)][int(r.integers(9))]
    a = g.pick(dts)
    ax, keep = g.axes(g.pool[a].ndim), bool(r.random() < 0.5)
    return name, lambda x: f(x, axis=ax, keepdims=keep), [a], f"{name}(a, axis={ax}, keepdims={keep})"


def argminmax(g):
    name = str(g.r.choice(["argmax", "argmin"]))
    a = g.pick(NUMS, min_rank=1)
    ax, ot = g.axis(g.pool[a].ndim), str(g.r.choice(INTS))
    f = getattr(tf.math, name)
    return name, lambda x: f(x, axis=ax, output_type=ot), [a], f"{name}(a, axis={ax}, output_type={ot})"


def cumulative(g):
    r = g.r
    name = str(r.choice(["cumsum", "cumprod", "cumulative_logsumexp"]))
    a = g.pick(FLOATS if name == "cumulative_logsumexp" else NUMS, min_rank=1)
    ax, ex, rev = g.axis(g.pool[a].ndim), bool(r.random() < 0.5), bool(r.random() < 0.5)
    f = getattr(tf.math, name)
    return name, lambda x: f(x, axis=ax, exclusive=ex, reverse=rev), [a], f"{name}(a, axis={ax}, exclusive={ex}, reverse={rev})"


def softmax(g):
    name = str(g.r.choice(["softmax", "log_softmax"]))
    a = g.pick(FLOATS, min_rank=1)
    ax = g.axis(g.pool[a].ndim)
    f = getattr(tf.nn, name)
    return name, lambda x: f(x, axis=ax), [a], f"{name}(a, axis={ax})"


def cast(g):
    a = g.pick(NUMS + ("bool",))
    to = str(g.r.choice(NUMS + ("bool",)))
    return "cast", lambda x: tf.cast(x, to), [a], f"cast(a, {to})"


def reshape(g):
    a = g.pick(NUMS + ("bool",))
    n = g.pool[a].size
    dims = []
    while n > 1 and len(dims) < 3:
        d = int(g.r.choice([k for k in range(1, n + 1) if n % k == 0]))
        dims.append(d)
        n //= d
    dims.append(n)
    if g.r.random() < 0.4 and g.pool[a].size:
        dims[int(g.r.integers(len(dims)))] = -1
    g.r.shuffle(dims)
    return "reshape", lambda x: tf.reshape(x, dims), [a], f"reshape(a, {dims})"


def transpose(g):
    a = g.pick(NUMS + ("bool",), min_rank=1)
    perm = [int(p) for p in g.r.permutation(g.pool[a].ndim)]
    return "transpose", lambda x: tf.transpose(x, perm), [a], f"transpose(a, {perm})"


def slice_(g):
    a = g.pick(NUMS, min_rank=1)
    begin, size = [], []
    for d in g.pool[a].shape:
        b = int(g.r.integers(0, d + 1))
        begin.append(b)
        size.append(-1 if g.r.random() < 0.3 else int(g.r.integers(0, d - b + 1)))
    return "slice", lambda x: tf.slice(x, begin, size), [a], f"slice(a, {begin}, {size})"


def strided_slice(g):
    r = g.r
    a = g.pick(NUMS, min_rank=1)
    shape = g.pool[a].shape
    begin, end, strides = [], [], []
    masks = dict(begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0)
    n = len(shape) + (1 if r.random() < 0.3 else 0)
    for i in range(n):
        d = shape[min(i, len(shape) - 1)]
        s = int(r.choice([1, 1, 2, 3, -1, -2]))
        begin.append(int(r.integers(-d - 1, d + 2)))
        end.append(int(r.integers(-d - 1, d + 2)))
        strides.append(s)
        for m, p in [("begin_mask", 0.3), ("end_mask", 0.3), ("new_axis_mask", 0.1), ("shrink_axis_mask", 0.15)]:
            if r.random() < p:
                masks[m] |= 1 << i
        if masks["shrink_axis_mask"] >> i & 1:
            begin[-1], strides[-1] = int(r.integers(-d, d)) if d else 0, 1
    if r.random() < 0.15:
        masks["ellipsis_mask"] = 1 << int(r.integers(n))
    desc = f"strided_slice(a, {begin}, {end}, {strides}, **{masks})"
    return "strided_slice", lambda x: tf.strided_slice(x, begin, end, strides, **masks), [a], desc


def expand_squeeze(g):
    a = g.pick(NUMS)
    rank = g.pool[a].ndim
    if g.r.random() < 0.5:
        ax = int(g.r.integers(-rank - 1, rank + 1))
        return "expand_dims", lambda x: tf.expand_dims(x, ax), [a], f"expand_dims(a, {ax})"
    ones = [i for i, d in enumerate(g.pool[a].shape) if d == 1]
    ax = None if not ones or g.r.random() < 0.3 else [i - rank if g.r.random() < 0.5 else i for i in ones[:2]]
    return "squeeze", lambda x: tf.squeeze(x, ax), [a], f"squeeze(a, {ax})"


def concat(g):
    a = g.pick(NUMS + ("bool",), min_rank=1)
    x = g.pool[a]
    ax = g.axis(x.ndim)
    others = []
    for _ in range(int(g.r.integers(1, 3))):
        s = list(x.shape)
        s[ax] = int(g.r.integers(0, 4))
        others.append(a if g.r.random() < 0.3 else g.fresh(tuple(s), x.dtype.name))
    if g.r.random() < 0.3:
        return "stack", lambda *t: tf.stack([t[0]] * len(t), axis=ax), [a] * (1 + len(others)), f"stack([a]*n, axis={ax})"
    return "concat", lambda *t: tf.concat(t, ax), [a] + others, f"concat([a, b, ...], {ax})"


def split(g):
    a = g.pick(NUMS, min_rank=1)
    x = g.pool[a]
    ax = g.axis(x.ndim)
    d = x.shape[ax]
    if g.r.random() < 0.4:
        return "unstack", lambda t: tf.unstack(t, axis=ax), [a], f"unstack(a, axis={ax})"
    cuts = sorted(int(c) for c in g.r.integers(0, d + 1, int(g.r.integers(0, 3))))
    sizes = [q - p for p, q in zip([0] + cuts, cuts + [d])]
    if g.r.random() < 0.3:
        sizes[int(g.r.integers(len(sizes)))] = -1
    return "split", lambda t: tf.split(t, sizes, ax), [a], f"split(a, {sizes}, {ax})"


def pad(g):
    r = g.r
    a = g.pick(NUMS, min_rank=1)
    x = g.pool[a]
    mode = str(r.choice(["CONSTANT", "REFLECT", "SYMMETRIC"]))
    lim = {"CONSTANT": 3, "REFLECT": 0, "SYMMETRIC": 1}[mode]
    pads = [[int(r.integers(0, max(d + lim, 1))), int(r.integers(0, max(d + lim, 1)))] for d in x.shape]
    cv = 0 if mode != "CONSTANT" or r.random() < 0.5 else 2
    return "pad", lambda t: tf.pad(t, pads, mode, constant_values=cv), [a], f"pad(a, {pads}, {mode}, constant_values={cv})"


def tile_bcast(g):
    a = g.pick(NUMS + ("bool",), min_rank=1)
    x = g.pool[a]
    if g.r.random() < 0.5:
        mult = [int(g.r.choice([0, 1, 1, 2, 3])) for _ in x.shape]
        return "tile", lambda t: tf.tile(t, mult), [a], f"tile(a, {mult})"
    to = [int(g.r.integers(1, 4)) if d == 1 else d for d in x.shape]
    if g.r.random() < 0.3:
        to = [2] + to
    return "broadcast_to", lambda t: tf.broadcast_to(t, to), [a], f"broadcast_to(a, {to})"


def reverse_roll(g):
    a = g.pick(NUMS, min_rank=1)
    rank = g.pool[a].ndim
    axes = [int(v) - rank * int(g.r.integers(2)) for v in g.r.choice(rank, int(g.r.integers(1, rank + 1)), replace=False)]
    if g.r.random() < 0.5:
        return "reverse", lambda t: tf.reverse(t, axes), [a], f"reverse(a, {axes})"
    shift = [int(s) for s in g.r.integers(-5, 6, len(axes))]
    return "roll", lambda t: tf.roll(t, shift, axes), [a], f"roll(a, {shift}, {axes})"


def gather(g):
    r = g.r
    a = g.pick(NUMS, min_rank=1)
    x = g.pool[a]
    it = str(r.choice(INTS))
    if r.random() < 0.3:
        k = int(r.integers(1, x.ndim + 1))
        hi = np.array(x.shape[:k])
        idx = (r.random(g.shape(int(r.integers(0, 3))) + (k,)) * np.maximum(hi, 1)).astype(it)
        idx = np.minimum(idx, np.maximum(hi - 1, 0)).astype(it)
        return "gather_nd", lambda t: tf.gather_nd(t, idx), [a], f"gather_nd(a, {idx.tolist()})"
    ax = g.axis(x.ndim)
    bd = int(r.integers(0, 2)) if x.ndim > 1 and ax % x.ndim > 0 else 0
    d = x.shape[ax]
    ishape = x.shape[:bd] + g.shape(int(r.integers(0, 3)))
    idx = r.integers(0, max(d, 1), ishape).astype(it)
    if r.random() < 0.1:
        idx = idx + d
    desc = f"gather(a, {idx.tolist()}, axis={ax}, batch_dims={bd})"
    return "gather", lambda t: tf.gather(t, idx, axis=ax, batch_dims=bd), [a], desc


def matmul(g):
    r = g.r
    dt = str(r.choice(("float32", "float64", "float16", "int32")))
    m, k, n = (int(v) for v in r.integers(0 if r.random() < 0.1 else 1, 5, 3))
    batch = [] if r.random() < 0.4 else list(g.shape(int(r.integers(1, 3)), zero=0.02))
    bb = g.bshape(batch)
    ta, tb, aa, ab = (bool(v) for v in r.random(4) < 0.3)
    sa = tuple(batch) + ((k, m) if ta or aa else (m, k))
    sb = tuple(bb) + ((n, k) if tb or ab else (k, n))
    a, b = g.fresh(sa, dt), g.fresh(sb, dt)
    if not batch and not bb and r.random() < 0.5:
        desc = f"matmul(a, b, transpose_a={ta or aa}, transpose_b={tb or ab})"
        return "matmul", lambda x, y: tf.matmul(x, y, transpose_a=ta or aa, transpose_b=tb or ab), [a, b], desc
    desc = f"matmul(a, b, adjoint_a={ta or aa}, adjoint_b={tb or ab})"
    return "batch_matmul", lambda x, y: tf.matmul(x, y, adjoint_a=ta or aa, adjoint_b=tb or ab), [a, b], desc


def segments(g):
    r = g.r
    a = g.pick(NUMS, min_rank=1)
    n = g.pool[a].shape[0]
    it = str(r.choice(INTS))
    if r.random() < 0.5:
        name = str(r.choice(["segment_sum", "segment_mean", "segment_max", "segment_min", "segment_prod"]))
        ids = np.sort(r.integers(0, 4, n)).astype(it)
        f = getattr(tf.math, name)
        return name, lambda t: f(t, ids), [a], f"{name}(a, {ids.tolist()})"
    name = str(r.choice(["unsorted_segment_sum", "unsorted_segment_max", "unsorted_segment_min", "unsorted_segment_prod",
                         "unsorted_segment_mean", "unsorted_segment_sqrt_n"]))
    ns = int(r.integers(1, 5))
    ids = r.integers(-1 if r.random() < 0.3 else 0, ns, n).astype(it)
    f = getattr(tf.math, name)
    return name, lambda t: f(t, ids, ns), [a], f"{name}(a, {ids.tolist()}, {ns})"


def clip(g):
    a = g.pick(FLOATS + INTS)
    x = g.pool[a]
    lo, hi = g.fresh(g.bshape(x.shape) if g.r.random() < 0.3 else (), x.dtype.name), None
    hi = g.fresh(() if g.r.random() < 0.7 else g.bshape(x.shape), x.dtype.name)
    return "clip_by_value", lambda t, u, v: tf.clip_by_value(t, u, v), [a, lo, hi], "clip_by_value(a, b, c)"


def where(g):
    a = g.pick(NUMS + ("bool",))
    x = g.pool[a]
    if g.r.random() < 0.25:
        return "where1", lambda t: tf.where(t), [a], "where(a)"
    b = g.partner(a)
    c = g.fresh(g.bshape(np.broadcast_shapes(x.shape, g.pool[b].shape)), "bool")
    return "where3", lambda t, u, v: tf.where(v, t, u), [a, b, c], "where(c, a, b)"


def misc(g):
    r = g.r
    k = int(r.integers(5))
    if k == 0:
        a = g.pick(NUMS)
        b = g.fresh(g.pool[a].shape, g.pool[a].dtype.name)
        return "add_n", lambda t, u: tf.add_n([t, u, t]), [a, b], "add_n([a, b, a])"
    if k == 1:
        a = g.pick(NUMS, min_rank=1)
        b = g.fresh(g.pool[a].shape[-1:], g.pool[a].dtype.name)
        return "bias_add", tf.nn.bias_add, [a, b], "bias_add(a, b)"
    if k == 2:
        a = g.pick(FLOATS + INTS, min_rank=1)
        kk = int(r.integers(0, g.pool[a].shape[-1] + 1))
        return "top_k", lambda t: list(tf.math.top_k(t, kk)), [a], f"top_k(a, {kk})"
    if k == 3:
        a = g.pick(INTS)
        depth = int(r.integers(0, 5))
        ax = int(r.integers(-1, g.pool[a].ndim + 1))
        return "one_hot", lambda t: tf.one_hot(t, depth, axis=ax), [a], f"one_hot(a, {depth}, axis={ax})"
    a = g.pick(FLOATS)
    return "check_numerics", lambda t: tf.debugging.check_numerics(t, "m"), [a], "check_numerics(a)"


def more(g):
    """Select (v1: a vector condition picks rows), Split by count, ReverseSequence, MatrixBandPart,
    Einsum, InTopKV2."""
    r = g.r
    k = int(r.integers(6))
    if k == 0:
        a = g.pick(NUMS, min_rank=1)
        x = g.pool[a]
        b = g.fresh(x.shape, x.dtype.name)
        c = g.fresh(x.shape[:1] if r.random() < 0.5 else x.shape, "bool")
        return "select_v1", lambda t, u, v: tf.raw_ops.Select(condition=v, x=t, y=u), [a, b, c], "Select(c, a, b)"
    if k == 1:
        a = g.pick(NUMS, min_rank=1)
        ax = g.axis(g.pool[a].ndim)
        d = g.pool[a].shape[ax]
        num = int(r.choice([q for q in range(1, 5) if d % q == 0] or [1]))
        return "split_num", lambda t: tf.split(t, num, ax), [a], f"split(a, {num}, {ax})"
    if k == 2:
        a = g.pick(NUMS, min_rank=2)
        x = g.pool[a]
        lens = r.integers(0, x.shape[1] + 1, x.shape[0]).astype(str(r.choice(INTS)))
        desc = f"reverse_sequence(a, {lens.tolist()}, seq_axis=1, batch_axis=0)"
        return "reverse_sequence", lambda t: tf.reverse_sequence(t, lens, seq_axis=1, batch_axis=0), [a], desc
    if k == 3:
        a = g.pick(NUMS, min_rank=2)
        lo, hi = int(r.integers(-1, 3)), int(r.integers(-1, 3))
        return "band_part", lambda t: tf.linalg.band_part(t, lo, hi), [a], f"band_part(a, {lo}, {hi})"
    if k == 4:
        m, kk, n = (int(v) for v in r.integers(1, 4, 3))
        dt = str(r.choice(FLOATS))
        a, b = g.fresh((2, m, kk), dt), g.fresh((kk, n), dt)
        eq = str(r.choice(["bij,jk->bik", "bij,jk->bki", "bij,jk->k"]))
        return "einsum", lambda t, u: tf.einsum(eq, t, u), [a, b], f"einsum('{eq}', a, b)"
    a = g.pick(("float32",), min_rank=2)
    x = g.pool[a].reshape(g.pool[a].shape[0], -1) if g.pool[a].ndim == 2 else None
    if x is None or not x.shape[1]:
        return None
    tgt = r.integers(0, x.shape[1], x.shape[0]).astype(np.int32)
    kk = int(r.integers(0, x.shape[1] + 1))
    return "in_top_k", lambda t: tf.math.in_top_k(tgt, t, kk), [a], f"in_top_k({tgt.tolist()}, a, {kk})"


BUILDERS += [more] * 3 + [reduction] * 6 + [argminmax, cumulative, cumulative, softmax, cast, cast, reshape, transpose,
             slice_, strided_slice, strided_slice, expand_squeeze, concat, split, pad, tile_bcast, reverse_roll,
             gather, gather, matmul, matmul, segments, segments, clip, where, where, misc, misc]
