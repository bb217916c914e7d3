"""Round-3 op builders of scripts/tf_fuzz_parity.py (``--family 3``), in the format of
scripts/tf_fuzz_ops.py: control flow and TensorLists, as TF2 traces them (functional If/Case/While,
TensorList ops), with random elementwise ops and reductions inside branches and bodies. ``tf.cond``
(nested; captured tensors and variables; several outputs, int and float; a branch passing its input
through; an untaken branch that would give inf/NaN), ``tf.while_loop`` (fixed and data-dependent
trip counts, ``maximum_iterations``, loop variables of several dtypes and shapes, a vector growing
under shape_invariants, nested loops, a cond in a body, a loop in a branch), ``tf.switch_case``,
``tf.TensorArray`` (write/read/stack/unstack/gather/scatter/concat in loops, dynamic_size, unknown
element shapes) and ``tf.scan``/``tf.foldl``/``tf.map_fn``. A builder's variables are created when
it runs (eagerly) and captured by the traced function, which the harness then freezes; their
gradients are compared too (``tape.watched_variables()``)."""

import numpy as np
import tensorflow as tf

from scripts.tf_fuzz_ops2 import own

FL = ("float32", "float64")
# shape-preserving float ops: tame ones (safe in loops) and ones that make inf/NaN out of range
TAME = [("tanh", tf.tanh), ("sin", tf.sin), ("cos", tf.cos), ("sigmoid", tf.sigmoid), ("abs", tf.abs),
        ("neg", tf.negative), ("softplus", tf.nn.softplus), ("relu", tf.nn.relu), ("square", tf.square),
        ("half", lambda t: t * 0.5), ("plus1", lambda t: t + 1.0)]
RISKY = [("log", tf.math.log), ("sqrt", tf.sqrt), ("reciprocal", tf.math.reciprocal), ("exp", tf.exp),
         ("rsqrt", tf.math.rsqrt), ("log1p", tf.math.log1p), ("acos", tf.acos)]
BIN = [("add", tf.add), ("mul", tf.multiply), ("sub", tf.subtract), ("maximum", tf.maximum), ("minimum", tf.minimum)]
RED = [("sum", tf.reduce_sum), ("mean", tf.reduce_mean), ("max", tf.reduce_max), ("min", tf.reduce_min),
       ("lse", tf.reduce_logsumexp)]


def chain(g, risky=0.25, lo=1, hi=3):
    """A random chain of shape-preserving float ops: (fn, description with ``.`` for the input)."""
    r = g.r
    ops = []
    for _ in range(int(r.integers(lo, hi + 1))):
        pool = RISKY if r.random() < risky else TAME
        ops.append(pool[int(r.integers(len(pool)))])

    def fn(t):
        for _, f in ops:
            t = f(t)
        return t
    desc = "."
    for n, _ in ops:
        desc = f"{n}({desc})"
    return fn, desc


def binop(g):
    n, f = BIN[int(g.r.integers(len(BIN)))]
    return f, n


def red(g):
    n, f = RED[int(g.r.integers(len(RED)))]
    return f, n


def _fl(g, min_rank=0, max_rank=2):
    """A float input (rank min_rank..max_rank), from the pool or fresh."""
    r = g.r
    ok = [i for i, v in enumerate(g.pool) if v.dtype.name in FL and min_rank <= v.ndim <= max_rank and v.size <= 12]
    if ok and r.random() < 0.5:
        return int(r.choice(ok))
    rank = int(r.integers(min_rank, max_rank + 1))
    shp = tuple(int(r.integers(1, 4)) for _ in range(rank))
    return g.fresh(shp, str(r.choice(FL)))


def _same(g, a):
    return g.fresh(g.pool[a].shape, g.pool[a].dtype.name)


def _var(g, a):
    v = g.sample(g.pool[a].shape, g.pool[a].dtype.name)
    return tf.Variable(v), f"v=np.array({np.array2string(v, separator=', ')}, {v.dtype.name})"


def _pred(g, a, fr):
    """A scalar predicate: data-dependent on ``a`` or a fed bool."""
    r = g.r
    if r.random() < 0.3:
        p = own(g, np.asarray(r.random() < 0.5))
        return [p], (lambda args: args[0]), "c"
    rf, rn = red(g)
    thr = float(r.choice([-1.0, 0.0, 0.5, 1.0]))
    return [], (lambda args: rf(args[fr]) > thr), f"{rn}(a) > {thr}"


def cond(g):
    r = g.r
    a = _fl(g)
    b = _same(g, a)
    f1, d1 = chain(g)
    f2, d2 = chain(g)
    f3, d3 = chain(g, risky=0)
    bf, bn = binop(g)
    passthrough, nested, use_var = r.random() < 0.5, r.random() < 0.35, r.random() < 0.35
    extra, pfn, pdesc = _pred(g, a, 0)
    v, vdesc = _var(g, a) if use_var else (None, "")
    ni = int(r.integers(-3, 4))

    def fn(x, y, *rest):
        args = (x, y) + rest

        def tb():
            t = bf(f1(x), y)
            if v is not None:
                t = t * v
            return [t, tf.size(x) + ni, y]

        def fb():
            u = x if passthrough else f2(x)
            if nested:
                w = tf.cond(tf.reduce_max(y) < 0.5, lambda: f3(y) + (v if v is not None else 0.0), lambda: y)
            else:
                w = f3(y)
            return [u, tf.constant(ni, tf.int32), w]
        return tf.cond(pfn(args), tb, fb)
    desc = (f"cond({pdesc}, [{bn}({d1.replace('.', 'a')}, b){' * v' if v is not None else ''}, size(a) + {ni}, b], "
            f"[{'a' if passthrough else d2.replace('.', 'a')}, {ni}, "
            f"{'cond(max(b) < 0.5, ' + d3.replace('.', 'b') + (' + v' if v is not None else '') + ', b)' if nested else d3.replace('.', 'b')}]) {vdesc}")
    return "cond", fn, [a, b] + extra, desc


def cond_nan(g):
    """An untaken branch that would be inf/NaN (and its gradient too): TF's gradient is 0 there."""
    r = g.r
    a = _fl(g)
    name, f = RISKY[int(r.integers(len(RISKY)))]
    guard = {"log": 0.0, "sqrt": 0.0, "rsqrt": 0.0, "reciprocal": 0.0, "log1p": -1.0, "exp": None, "acos": None}[name]
    f2, d2 = chain(g, risky=0)
    if guard is None:
        def fn(x):
            return tf.cond(tf.reduce_all(tf.abs(x) < 1.0), lambda: f(x), lambda: f2(x))
        return "cond_nan", fn, [a], f"cond(all(|a| < 1), {name}(a), {d2.replace('.', 'a')})"

    def fn(x):
        return tf.cond(tf.reduce_all(x > guard), lambda: f(x), lambda: f2(x) * 0.0)
    return "cond_nan", fn, [a], f"cond(all(a > {guard}), {name}(a), {d2.replace('.', 'a')} * 0)"


def switch_case(g):
    r = g.r
    a = _fl(g)
    idx = own(g, np.asarray(int(r.integers(-1, 4)), "int32"))
    fs = [chain(g) for _ in range(int(r.integers(2, 4)))]

    def fn(x, i):
        return tf.switch_case(i, [lambda f=f: [f(x), tf.reduce_sum(f(x))] for f, _ in fs])
    return "switch_case", fn, [a, idx], f"switch_case(i, {[d.replace('.', 'a') for _, d in fs]})"


def while_loop(g):
    r = g.r
    a = _fl(g)
    c = _same(g, a) if r.random() < 0.5 else g.fresh((), g.pool[a].dtype.name)
    f1, d1 = chain(g, risky=0.15)
    bf, bn = binop(g)
    kind = int(r.integers(3))  # fixed count, fed count, data-dependent
    n = int(r.integers(0, 5))
    mi = int(r.integers(0, 4)) if r.random() < 0.4 else None
    extra = [own(g, np.asarray(n, "int32"))] if kind == 1 else []
    in_cond, use_var = r.random() < 0.3, r.random() < 0.3
    v, vdesc = _var(g, a) if use_var else (None, "")
    fc, dc = chain(g, risky=0)
    thr = float(r.choice([0.5, 2.0, 5.0]))

    def fn(x, y, *rest):
        lim = rest[0] if kind == 1 else n

        def cnd(i, t, s):
            if kind == 2:
                return tf.logical_and(i < 6, tf.reduce_sum(tf.abs(t)) < thr)
            return i < lim

        def body(i, t, s):
            u = bf(f1(t), y)
            if v is not None:
                u = u + v * 0.5
            if in_cond:
                u = tf.cond(tf.reduce_sum(u) > 0, lambda: fc(u), lambda: u * 0.5)
            return i + 1, u, s + tf.cast(i, tf.int64) * 2
        return list(tf.while_loop(cnd, body, [tf.constant(0), x, tf.constant(1, tf.int64)], maximum_iterations=mi))
    stop = {0: f"i < {n}", 1: "i < k", 2: f"i < 6 and sum|t| < {thr}"}[kind]
    desc = (f"while({stop}, max_it={mi}): t = {bn}({d1.replace('.', 't')}, b){' + v/2' if v is not None else ''}"
            f"{'; t = cond(sum(t) > 0, ' + dc.replace('.', 't') + ', t/2)' if in_cond else ''}; s += 2i; t0 = a {vdesc}")
    return "while", fn, [a, c] + extra, desc


def while_grow(g):
    """A vector growing each iteration (shape_invariants), an int var and a float scalar beside it;
    forward only (TF's gradient of such a loop fails)."""
    r = g.r
    a = _fl(g, 1, 1)
    f1, d1 = chain(g, risky=0.1)
    n = int(r.integers(0, 4))
    mi = int(r.integers(1, 4)) if r.random() < 0.3 else None

    def fn(x):
        def body(i, t, s):
            t2 = tf.concat([t, f1(t[-1:])], 0)
            return i + 1, t2, s + tf.reduce_sum(t2)
        i0 = tf.constant(0)
        # no gradient: TF 2.21's refuses a loop var whose shape changes ("Incompatible shapes: [5] vs. [3]")
        return list(tf.while_loop(lambda i, t, s: i < n, body, [i0, tf.stop_gradient(x), tf.zeros([], x.dtype)], maximum_iterations=mi,
                                  shape_invariants=[i0.shape, tf.TensorShape([None]), tf.TensorShape([])]))
    return "while_grow", fn, [a], f"while(i < {n}, max_it={mi}): t = concat(t, {d1.replace('.', 't[-1:]')}); s += sum(t)"


def while_nested(g):
    """A loop in a loop, or a loop in a cond branch."""
    r = g.r
    a = _fl(g)
    f1, d1 = chain(g, risky=0.1)
    n1, n2 = int(r.integers(0, 4)), int(r.integers(0, 3))
    in_branch = r.random() < 0.4

    def inner(t, k):
        return tf.while_loop(lambda j, u: j < k, lambda j, u: (j + 1, f1(u) + tf.cast(j, u.dtype)), [0, t])[1]

    def fn(x):
        if in_branch:
            return tf.cond(tf.reduce_sum(x) > 0, lambda: inner(x, n1), lambda: x * 2.0)
        return tf.while_loop(lambda i, t: i < n1, lambda i, t: (i + 1, inner(t, n2 + i) * 0.5), [0, x])[1]
    if in_branch:
        return "while_in_cond", fn, [a], f"cond(sum(a) > 0, loop{n1}(t = {d1.replace('.', 't')} + j), 2a)"
    return "while_nested", fn, [a], f"loop{n1}(i: t = loop(n2={n2}+i)(t = {d1.replace('.', 't')} + j) / 2)"


def tensor_array(g):
    r = g.r
    kind = int(r.integers(6))
    a = _fl(g, 1, 2)
    f1, d1 = chain(g, risky=0.1)
    dyn, known = r.random() < 0.5, r.random() < 0.5
    n0 = g.pool[a].shape[0]
    if kind == 0:  # write in a loop, stack
        n = int(r.integers(0, 4))

        def fn(x):
            ta = tf.TensorArray(x.dtype, size=0 if dyn else n, dynamic_size=dyn,
                                element_shape=x.shape if known else None)

            def body(i, t, ta):
                t = f1(t)
                return i + 1, t, ta.write(i, t * tf.cast(i + 1, t.dtype))
            _, t, ta = tf.while_loop(lambda i, t, ta: i < n, body, [0, x, ta])
            return [ta.stack(), t] if n else [t]
        return "ta_write_stack", fn, [a], f"loop{n}: t = {d1.replace('.', 't')}; ta.write(i, t*(i+1)); stack (dyn={dyn}, shape={known})"
    if kind == 1:  # unstack, read in a loop
        def fn(x):
            ta = tf.TensorArray(x.dtype, size=n0, element_shape=x.shape[1:] if known else None).unstack(x)

            def body(i, acc):
                return i + 1, f1(acc + ta.read(i))
            return tf.while_loop(lambda i, acc: i < n0, body, [0, tf.zeros_like(x[0])])[1]
        return "ta_unstack_read", fn, [a], f"acc = {d1.replace('.', 'acc + a[i]')} over i"
    if kind == 2:  # scatter, gather
        perm = r.permutation(n0).tolist()
        gi = r.integers(0, n0, int(r.integers(1, 4))).tolist()

        def fn(x):
            ta = tf.TensorArray(x.dtype, size=n0, element_shape=None if not known else x.shape[1:])
            ta = ta.scatter(perm, f1(x))
            return ta.gather(gi)
        return "ta_scatter_gather", fn, [a], f"TA.scatter({perm}, {d1.replace('.', 'a')}).gather({gi})"
    if kind == 3:  # concat of growing elements
        n = int(r.integers(1, 4))

        def fn(x):
            ta = tf.TensorArray(x.dtype, size=n, infer_shape=False, element_shape=tf.TensorShape(None))

            def body(i, ta):
                return i + 1, ta.write(i, f1(x[: i % n0 + 1]) * tf.cast(i + 1, x.dtype))
            return tf.while_loop(lambda i, ta: i < n, body, [0, ta])[1].concat()
        return "ta_concat", fn, [a], f"loop{n}: ta.write(i, {d1.replace('.', 'a[:i%n0+1]')}*(i+1)); concat"
    if kind == 4:  # scan / foldl
        use_fold = r.random() < 0.5
        rev = r.random() < 0.5
        bf, bn = binop(g)
        if use_fold:
            def fn(x):
                return tf.foldl(lambda acc, e: bf(f1(acc), e), x, initializer=tf.zeros_like(x[0]) + 0.5)
            return "foldl", fn, [a], f"foldl(acc, e: {bn}({d1.replace('.', 'acc')}, e), a, init=0.5)"

        def fn(x):
            return tf.scan(lambda acc, e: bf(f1(acc), e), x, reverse=rev)
        return "scan", fn, [a], f"scan(acc, e: {bn}({d1.replace('.', 'acc')}, e), a, reverse={rev})"
    rf, rn = red(g)

    def fn(x):
        return tf.map_fn(lambda e: [f1(e), rf(e)], x, fn_output_signature=[x.dtype, x.dtype])
    return "map_fn", fn, [a], f"map_fn(e: [{d1.replace('.', 'e')}, {rn}(e)], a)"


BUILDERS3 = [cond] * 4 + [cond_nan] * 2 + [switch_case] + [while_loop] * 4 + [while_grow, while_nested, while_nested] + [tensor_array] * 5
