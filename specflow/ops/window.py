"""Sliding-window kernels shared by the convolution and pooling ops (conv_ops, conv3d_ops,
depthwise_conv_ops, pool_ops), over any number of spatial dims of a channels-last tensor.

A window op is one loop over the window offsets ("taps"). At each tap, one strided slice of the
*unpadded* input holds the element that the output positions in one rectangle see there; the
output positions outside that rectangle see padding. So nothing is ever padded: im2col copies
each tap's rectangle into its column block once and zeroes only the border strips, pooling
reduces into the rectangles in place, and gradients add into the input's slices in place.
Only xp functions with identical numpy and cupy semantics are used, so the code runs on both.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from specflow.ops.buffers import give, take  # noqa: F401  (kernels use them as window.take/give)
from specflow.ops.window_gather import COLS_KEEP_MAX, col2im_scatter, im2col_gather, take_cols  # noqa: F401

Dims = Sequence[int | None]
_ALL = slice(None)


@dataclass(frozen=True)
class _Window:
    """A sliding window over a channels-last input; one entry per spatial dim ((rows, cols) for
    the 2-D ops, (depth, rows, cols) for the 3-D ones in conv3d_ops)."""

    ksize: tuple[int | None, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    out: tuple[int | None, ...]  # None where the input size is unknown
    pads: tuple[tuple[int, int], ...]  # (before, after) per spatial dim


@dataclass(frozen=True)
class Tap:
    """One window offset: output positions ``out`` (spatial slices) read input ``inp``."""

    index: int  # row-major offset number: the filter's (kh, kw, ...) order
    out: tuple[slice, ...]
    inp: tuple[slice, ...]
    ranges: tuple[tuple[int, int], ...]  # (lo, hi) of ``out`` per dim
    full: bool  # every output position reads a real element here
    empty: bool  # no output position does
    border: tuple = ()  # spatial slices of the output positions outside ``out`` (may overlap)


def _tap_range(size: int, before: int, stride: int, offset: int, out: int) -> tuple[int, int, slice]:
    """Output positions [lo, hi) whose input index o * stride + offset - pad lies in [0, size),
    and the input slice they read."""
    start = offset - before
    lo = min(max(0, -(start // stride)), out)  # ceil(-start / stride)
    hi = max(min(out, (size - 1 - start) // stride + 1), lo)
    first = lo * stride + start
    return lo, hi, slice(first, first + (hi - lo - 1) * stride + 1, stride) if hi > lo else slice(0, 0)


def taps(win: _Window, spatial: Dims) -> tuple[Tap, ...]:
    """Every window offset, row-major, with the output rectangle and the input slice it reads
    (worked out once per window and input size: a training step asks for the same ones)."""
    return _taps(win, tuple(spatial))


@functools.lru_cache(maxsize=512)
def _taps(win: _Window, spatial: tuple) -> tuple[Tap, ...]:
    result = []
    dims = list(zip(spatial, win.pads, win.strides, win.dilations, win.out))
    for index, offset in enumerate(itertools.product(*(range(k) for k in win.ksize))):
        parts = [_tap_range(n, p[0], s, i * d, o) for i, (n, p, s, d, o) in zip(offset, dims)]
        ranges = tuple((lo, hi) for lo, hi, _ in parts)
        result.append(
            Tap(
                index,
                tuple(slice(lo, hi) for lo, hi, _ in parts),
                tuple(s for _, _, s in parts),
                ranges,
                all(lo == 0 and hi == o for (lo, hi), o in zip(ranges, win.out)),
                any(lo == hi for lo, hi in ranges),
                tuple(_strips(ranges, win.out)),
            )
        )
    return tuple(result)


def _strips(ranges, out: Dims) -> Iterator[tuple[slice, ...]]:
    """Spatial slices covering the output positions outside the ``ranges`` (may overlap)."""
    for d, ((lo, hi), o) in enumerate(zip(ranges, out)):
        for part in (slice(0, lo), slice(hi, o)):
            if part.stop > part.start:
                yield (*(_ALL,) * d, part, *(_ALL,) * (len(out) - d - 1))


def offsets(win: _Window) -> Iterator[tuple]:
    """For each window offset, row-major: the strided slice of the padded channels-last input
    that holds, at every output position, the element the window sees at that offset (for the
    kernels that still pad: MaxPoolWithArgmax)."""
    dims = list(zip(win.strides, win.dilations, win.out))
    for offset in itertools.product(*(range(k) for k in win.ksize)):
        # An empty output dim needs an empty slice: its stop would be negative, and wrap.
        yield (
            _ALL,
            *(slice(i * d, i * d + (o - 1) * s + 1, s) if o else slice(0, 0) for i, (s, d, o) in zip(offset, dims)),
            _ALL,
        )


def pad(xp, x, win: _Window, value=0):
    return xp.pad(x, ((0, 0), *win.pads, (0, 0)), constant_values=value)


def lowest(dtype) -> float | int:
    """What padding would be for max pooling: never larger than a real element."""
    dtype = np.dtype(dtype)
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def bordered(xp, x, win: _Window, value=0, state=None):
    """``x`` inside a border of ``value`` as wide as the window's padding: one copy into a
    buffer (``take``'s, with ``state``) whose border strips alone are filled (``x`` itself when
    nothing is padded). Kernel-internal temporaries reuse ``take``'s per-node buffers; kernel
    outputs come from the executor's arena (``ops/buffers.py``, the ``empty`` arguments)."""
    if not any(a or z for a, z in win.pads):
        return x
    n, *spatial, c = x.shape
    buf = take(xp, state, "bordered", (n, *(d + a + z for d, (a, z) in zip(spatial, win.pads)), c), x.dtype)
    inner = tuple(slice(a, a + d) for d, (a, _) in zip(spatial, win.pads))
    ready = state.get("bordered_ready") if state is not None else None
    # The kernel's own buffer again: only its inside was written since its border was filled.
    if ready is None or ready[0] is not buf or ready[1] != value:
        for d, (a, z) in enumerate(win.pads):
            for strip in (slice(0, a), slice(a + spatial[d], a + spatial[d] + z)):
                if strip.stop > strip.start:
                    buf[(_ALL, *inner[:d], strip)] = value  # earlier dims: inside only; later: all
        if state is not None:
            state["bordered_ready"] = (buf, value)
    buf[(_ALL, *inner)] = x
    return buf


def windows(xp, x, win: _Window, xb=None):
    """A read-only strided view [N, *out, *ksize, C] of the bordered input (``xb``, made here
    when not given): every output position's window (no copy beyond the border)."""
    xb = bordered(xp, x, win) if xb is None else xb
    n, *spatial, c = xb.shape
    s = xb.strides
    sp = s[1:-1]
    shape = (n, *win.out, *win.ksize, c)
    strides = (s[0], *(a * b for a, b in zip(sp, win.strides)), *(a * b for a, b in zip(sp, win.dilations)), s[-1])
    if 0 in shape:
        return xp.zeros(shape, dtype=x.dtype)
    if xp is np and xb.flags.c_contiguous:  # the same view, without as_strided's 2.5 µs of set-up
        view = np.ndarray(shape, xb.dtype, xb, 0, strides)
        view.flags.writeable = False
        return view
    return xp.lib.stride_tricks.as_strided(xb, shape, strides)


# im2col elements up to which one gather beats a bordered copy and a copy of the window view (or
# one per tap) on the CPU whatever the channels: measured faster up to ~300K with 16-32 channels,
# ~40K with one. Above, the gather still wins where each index copies whole 16-byte units
# (_gathers_fast: numpy's take into a kept buffer, mode "wrap"): 256x4x4x16 with a 3x3 window
# 131 -> 111 µs, 64x16x16x4 325 -> 132, 16x32x32x64 5.7 -> 1.9 ms; with 3 channels (12 bytes)
# 284 -> 384 µs, so not there; one channel keeps its tap-major copy (the faster product).
GATHER_MAX = 1 << 16
GATHER_WIDE = True  # (tests turn it off to reach the copy paths)


def gathers(x, win: _Window) -> bool:
    """Whether im2col of ``x`` (channels last) on the CPU is one gather."""
    c = x.shape[-1]
    return x.shape[0] * math.prod(win.out) * math.prod(win.ksize) * c <= GATHER_MAX or _gathers_fast(c * x.itemsize)


def _gathers_fast(row_bytes: int) -> bool:
    """Whether one input position's channels are a whole number of 16-byte units."""
    return GATHER_WIDE and row_bytes >= 16 and row_bytes % 16 == 0



def im2col(xp, x, win: _Window, state=None):
    """[N, *out, K * C] (K window offsets): each output position's window, flattened in
    (kh, kw, c) order, the order of a [KH, KW, C, O] filter reshaped to [KH * KW * C, O].
    With enough channels one copy of the strided window view (its innermost KW * C elements
    are contiguous); with few, one copy per tap of the rectangle that reads real elements,
    zeroing only the border strips. With ``state`` the result is ``take``'s "im2col" buffer
    (the caller gives it back) and the bordered copy is reused too."""
    if xp is not np or gathers(x, win):
        return im2col_gather(xp, x, win, state)
    n, *spatial, c = x.shape
    k = math.prod(win.ksize)
    if win.ksize[-1] * c >= 8:
        # (taken in the shape it is given back in, so the next call finds it)
        cols = take_cols(xp, state, (n, *win.out, k * c), x.dtype).reshape(n, *win.out, *win.ksize, c)
        if 0 not in cols.shape:  # (nothing to copy into an empty one)
            xb = bordered(xp, x, win, state=state)
            cols[...] = windows(xp, x, win, xb)
            if xb is not x:
                give(state, "bordered", xb)
        return cols.reshape(n, *win.out, k * c)
    if c == 1:
        return _im2col_tap_major(xp, x, win, state, k)
    cols = take_cols(xp, state, (n, *win.out, k * c), x.dtype).reshape(n, *win.out, k, c)
    for t in taps(win, spatial):
        dst = cols[(_ALL, *(_ALL,) * len(spatial), t.index)]
        if not t.empty:
            dst[(_ALL, *t.out)] = x[(_ALL, *t.inp)]
        for strip in ([(_ALL,) * len(spatial)] if t.empty else t.border):
            dst[(_ALL, *strip)] = 0
    return cols.reshape(n, *win.out, k * c)


def _im2col_tap_major(xp, x, win: _Window, state, k: int):
    """im2col of one channel, [N, *out, K] as a view of a [K, N, *out] buffer: each tap's
    copy is one contiguous block (not every K-th element), and the matmuls take the view as
    a transposed operand, without a copy."""
    n, *spatial, _ = x.shape
    cols = take(xp, state, "im2col", (n, *win.out, k), x.dtype)
    if cols.strides[-1] != cols.itemsize * (cols.size // k if k else 1) or 0 in cols.shape:
        cols = xp.moveaxis(xp.empty((k, n, *win.out), dtype=x.dtype), 0, -1)  # (a fresh buffer)
    flat = x[..., 0]
    for t in taps(win, spatial):
        dst = cols[..., t.index]
        if not t.empty:
            dst[(_ALL, *t.out)] = flat[(_ALL, *t.inp)]
        for strip in ([(_ALL,) * len(spatial)] if t.empty else t.border):
            dst[(_ALL, *strip)] = 0
    return cols


def _zeros(xp, shape, dtype, empty):
    if empty is None:
        return xp.zeros(shape, dtype=dtype)
    out = empty(shape, dtype)
    out.fill(0)
    return out


def scatter(xp, shape: Dims, win: _Window, dtype, parts: Iterable, empty=None):
    """The gradient w.r.t. a channels-last input of ``shape``: the k-th of ``parts`` (shaped
    like the output) is added where the k-th window offset reads; padding gets nothing."""
    pairs = [(t, p) for t, p in zip(taps(win, shape[1:-1]), parts, strict=False) if not t.empty]  # parts may be endless
    whole = next((k for k, (t, _) in enumerate(pairs) if covers(t, shape)), None)
    if whole is None:
        grad = _zeros(xp, tuple(shape), dtype, empty)
    else:  # one tap reads every input element once: written, not zeroed and added to
        grad = empty(tuple(shape), dtype) if empty is not None else xp.empty(tuple(shape), dtype=dtype)
        grad[...] = pairs.pop(whole)[1]
    for t, part in pairs:
        grad[(_ALL, *t.inp)] += part if t.full else part[(_ALL, *t.out)]
    return grad


def covers(t: Tap, shape: Dims) -> bool:
    """Whether tap ``t`` maps the output positions one to one onto every input element (the
    centre tap of a stride-1 SAME window)."""
    return t.full and all(s.start == 0 and s.stop == n and s.step == 1 for s, n in zip(t.inp, shape[1:-1]))


def window_counts(xp, spatial: Dims, win: _Window, dtype):
    """[1, *output spatial dims, 1]: how many real (unpadded) input elements each window covers."""
    counts = np.zeros(win.out, dtype=dtype)
    for t in taps(win, spatial):
        counts[t.out] += 1
    return xp.asarray(counts[None, ..., None])


def _one_dim(win: _Window, d: int, sizes: tuple) -> _Window:
    """``win`` along spatial dim ``d`` alone, over an input of spatial ``sizes``."""
    def pick(values, other):
        return tuple(v if e == d else other[e] for e, v in enumerate(values))

    ones = (1,) * len(sizes)
    return _Window(pick(win.ksize, ones), pick(win.strides, ones), pick(win.dilations, ones),
                   pick(win.out, sizes), pick(win.pads, ((0, 0),) * len(sizes)))  # fmt: skip


def max_pool(xp, x, win: _Window, empty=None):
    """The maximum of each window; a window with no real element gives the dtype's lowest.
    Windows that tile the input reduce a reshaped view (``_max_pool_tiled``). Otherwise a max
    over a box is a max over each of its dims in turn: one dim at a time takes kh + kw passes
    instead of kh * kw, and the first (over rows) reads whole contiguous rows."""
    plan = _tile_plan(win, x.shape)
    if plan is not None:
        return _max_pool_tiled(xp, x, win, plan, empty)
    parts = _separable(win, tuple(x.shape[1:-1])) if x.size >= SEPARABLE_MIN else ()
    if len(parts) < 2:
        return _max_pool_taps(xp, x, win, empty)
    for part in parts:  # the intermediate too from ``empty`` (an arena's: no fresh MBs a step)
        x = _max_pool_taps(xp, x, part, empty)
    return x


SEPARABLE_MIN = 1 << 14  # elements: smaller inputs pool in one pass (fewer kernel calls)


@functools.lru_cache(maxsize=512)
def _separable(win: _Window, sizes: tuple) -> tuple[_Window, ...]:
    """The one-dim windows, in dim order, whose passes make ``win``'s max pool."""
    parts = []
    for d in range(len(win.ksize)):
        if (win.ksize[d], win.strides[d], win.pads[d]) != (1, 1, (0, 0)):
            parts.append(_one_dim(win, d, sizes))
            sizes = parts[-1].out
    return tuple(parts)


def _max_pool_tiled(xp, x, win: _Window, plan, empty=None):
    """max_pool where the windows tile the input (2x2 with stride 2 on an even size): x viewed
    as [N, out_0, k_0, out_1, k_1, ..., C] (no k axis where k is 1), and each dim's k slices
    reduced with k - 1 maximum calls (2 for 2x2 pooling, whatever the batch: 7.8 -> 5.1 µs at
    1x8x8x16). ``plan`` is ``_tile_plan``'s."""
    shape = (x.shape[0], *win.out, x.shape[-1])
    rshape, steps = plan
    out = empty(shape, x.dtype) if empty is not None else xp.empty(shape, dtype=x.dtype)
    if not steps:  # 1x1 windows: a copy
        out[...] = x
        return out
    r = x.reshape(rshape)
    for j, (idx, reduced) in enumerate(steps):
        dst = out.reshape(reduced) if j == len(steps) - 1 else None  # the last pass writes the result
        m = xp.maximum(r[idx[0]], r[idx[1]], out=dst)
        for ix in idx[2:]:
            xp.maximum(m, r[ix], out=m)
        r = m
    return out


@functools.lru_cache(maxsize=256)
def _tile_plan(win: _Window, shape: tuple):
    """For an input of ``shape`` the windows tile: the view's shape and, per dim with k > 1, the
    index of each of its k slices and the shape left once they are reduced; None otherwise."""
    n, *spatial, c = shape
    if not tiles(win, tuple(spatial)):
        return None
    rshape = [n, *[v for o, k in zip(win.out, win.ksize) for v in ((o, k) if k > 1 else (o,))], c]
    cur, steps = list(rshape), []
    for d, k in enumerate(win.ksize):
        if k > 1:  # its k axis follows N and out_0..out_d (the k axes before it are reduced)
            steps.append((tuple((*(_ALL,) * (2 + d), i) for i in range(k)), tuple(cur[: 2 + d] + cur[3 + d :])))
            del cur[2 + d]
    return tuple(rshape), tuple(steps)


def _max_pool_taps(xp, x, win: _Window, empty=None):
    n, *spatial, c = x.shape
    ts = [t for t in taps(win, spatial) if not t.empty]
    full = [t for t in ts if t.full][:2]  # the first written as the maximum of two full taps
    shape = (n, *win.out, c)
    if not full:
        out = xp.full(shape, lowest(x.dtype), dtype=x.dtype)
    else:
        out = empty(shape, x.dtype) if empty is not None else xp.empty(shape, dtype=x.dtype)
        if len(full) == 2:
            xp.maximum(x[(_ALL, *full[0].inp)], x[(_ALL, *full[1].inp)], out=out)
        else:
            out[...] = x[(_ALL, *full[0].inp)]
    for t in ts:
        if t not in full:
            view = out[(_ALL, *t.out)]
            xp.maximum(view, x[(_ALL, *t.inp)], out=view)
    return out


def window_sum(xp, x, win: _Window):
    """The sum of each window's real elements."""
    n, *spatial, c = x.shape
    ts = [t for t in taps(win, spatial) if not t.empty]
    first = next((t for t in ts if t.full), None)  # a copy to start from, not zeros + add
    out = x[(_ALL, *first.inp)].copy() if first is not None else xp.zeros((n, *win.out, c), dtype=x.dtype)
    for t in ts:
        if t is not first:
            out[(_ALL, *t.out)] += x[(_ALL, *t.inp)]
    return out


def first_max(xp, x, y, win: _Window, state=None) -> Iterator[tuple[Tap, object]]:
    """Per non-empty tap: where, in its output rectangle, it holds its window's maximum y (the
    first one, row-major, on ties). Each mask is yielded before the next is made (the caller
    uses it at once): one comparison and one ``hit > seen`` (hit and not yet seen) per tap,
    ``seen`` updated but after the last. With ``state`` both masks are ``take``'s buffers."""
    ts = [t for t in taps(win, x.shape[1:-1]) if not t.empty]
    hits = take(xp, state, "hit", y.shape, np.dtype(bool))
    seen = None  # windows whose maximum was already found (None: none yet)
    try:
        for k, t in enumerate(ts):
            hit = hits[(_ALL, *t.out)]
            xp.equal(x[(_ALL, *t.inp)], y[(_ALL, *t.out)], out=hit)
            if seen is None and t.full:
                if k + 1 < len(ts):
                    seen = take(xp, state, "seen", y.shape, np.dtype(bool))
                    seen[...] = hit
            else:
                if seen is None:
                    seen = take(xp, state, "seen", y.shape, np.dtype(bool))
                    seen.fill(False)
                part = seen[(_ALL, *t.out)]
                xp.greater(hit, part, out=hit)
                if k + 1 < len(ts):
                    part |= hit
            yield t, hit
    finally:
        give(state, "hit", hits)
        if seen is not None:
            give(state, "seen", seen)


def disjoint(win: _Window) -> bool:
    """Whether no input element is read by two (output position, tap) pairs: windows no wider
    than their stride (2x2 pooling with stride 2)."""
    return all((k - 1) * d + 1 <= s for k, d, s in zip(win.ksize, win.dilations, win.strides))


def tiles(win: _Window, spatial: Dims) -> bool:
    """Whether the windows cover every input element exactly once (disjoint, unpadded, as
    wide as their stride, the input a whole number of them)."""
    return all(
        k == s and d == 1 and p == (0, 0) and o * s == n
        for k, s, d, p, o, n in zip(win.ksize, win.strides, win.dilations, win.pads, win.out, spatial)
    )


def max_pool_grad(xp, x, y, dy, win: _Window, empty=None, state=None):
    """Each window's dy added at its first maximum (written, not added, when windows are
    disjoint: no read-modify-write; nor zeroed first when they tile the input). On the host as
    TF's CPU kernel: dy is routed, never multiplied by a mask (an inf or NaN dy reaches its
    maximum only), and a window with no element equal to its output (all -inf or NaN: TF's
    output is the dtype's lowest) gives its dy to its first element."""
    tiled = tiles(win, x.shape[1:-1])
    write = disjoint(win)
    if write and tiled:
        grad = empty(x.shape, dy.dtype) if empty is not None else xp.empty(x.shape, dtype=dy.dtype)
    else:
        grad = _zeros(xp, x.shape, dy.dtype, empty)
    host = xp is np and dy.dtype.kind == "f" and dy.size
    # masked routing (slower than a product by the mask) only where a product would differ:
    # a non-finite dy on the host (a GPU keeps the product, cuDNN's rules)
    route = host and not np.isfinite(dy).all()
    for t, hit in first_max(xp, x, y, win, state):
        dst, src = grad[(_ALL, *t.inp)], dy[(_ALL, *t.out)]
        if route:
            if write and tiled:
                dst.fill(0)
            np.add(dst, src, out=dst, where=hit)
        elif write:
            xp.multiply(src, hit, out=dst)
        else:
            dst += src * hit
    if host and x.dtype in (np.float64, np.float16) and np.isnan(x).any():
        return _eigen_argmax_grad(x, dy, win)
    if host and y.min() <= np.finfo(y.dtype).min:
        _unmatched_to_first(x, y, dy, grad, win)
    return grad


def _eigen_argmax_grad(x, dy, win: _Window):
    """TF's Eigen MaxPoolGrad (float64, float16: oneDNN takes float32), for inputs with a NaN: each
    window's argmax starts at its first real element and moves only to a strictly greater one,
    so a leading NaN keeps the window's dy (oneDNN's rule, the first element equal to the output,
    gives it to a later finite maximum)."""
    ts = [t for t in taps(win, x.shape[1:-1]) if not t.empty]
    best = np.zeros(dy.shape, x.dtype)
    arg = np.full(dy.shape, -1, np.int64)
    for k, t in enumerate(ts):
        xv, b, a = x[(_ALL, *t.inp)], best[(_ALL, *t.out)], arg[(_ALL, *t.out)]
        with np.errstate(invalid="ignore"):
            take = (a < 0) | (b < xv)
        np.copyto(b, xv, where=take)
        np.copyto(a, k, where=take)
    grad = np.zeros(x.shape, dy.dtype)
    for k, t in enumerate(ts):
        dst = grad[(_ALL, *t.inp)]
        np.add(dst, dy[(_ALL, *t.out)], out=dst, where=arg[(_ALL, *t.out)] == k)
    return grad


def _unmatched_to_first(x, y, dy, grad, win: _Window) -> None:
    """TF's MaxPoolGrad for windows none of whose elements equals their output (a window of -inf
    and NaN pools to the lowest finite value): the window's first real element gets its dy."""
    ts = [t for t in taps(win, x.shape[1:-1]) if not t.empty]
    matched = np.zeros(y.shape, bool)
    for t in ts:
        matched[(_ALL, *t.out)] |= x[(_ALL, *t.inp)] == y[(_ALL, *t.out)]
    if matched.all():
        return
    todo = ~matched
    for t in ts:
        sel = todo[(_ALL, *t.out)]
        dst = grad[(_ALL, *t.inp)]
        np.add(dst, dy[(_ALL, *t.out)], out=dst, where=sel)
        sel[...] = False


def max_pool_grad_grad(xp, x, y, g, win: _Window):
    """g read at each window's first maximum, shaped like y."""
    out = xp.zeros(y.shape, dtype=g.dtype)
    for t, hit in first_max(xp, x, y, win):
        out[(_ALL, *t.out)] += g[(_ALL, *t.inp)] * hit
    return out


def conv_input_grad(xp, dy, f, shape: Dims, win: _Window, state=None, empty=None):
    """The gradient of a convolution w.r.t. its channels-last input of ``shape``, for filter
    ``f`` [*ksize, C, O] and output gradient ``dy`` [N, *out, O]: per tap, dy times that tap's
    [C, O] filter slice, added into the input slice the tap reads. With few input channels one
    matmul for all taps (a [M, K * C] temporary) beats K thin ones. With ``state`` the
    temporaries are ``take``'s buffers; ``empty`` allocates the result (the arena's)."""
    cin, o = f.shape[-2], f.shape[-1]
    k = f.size // (cin * o)
    dy2 = dy.reshape(-1, o)
    if xp is not np:  # on a GPU: one product and one scatter-add, two launches whatever the window
        dcols = xp.matmul(dy2, f.reshape(k * cin, o).T)
        return col2im_scatter(xp, dcols.reshape(*dy.shape[:-1], k * cin), shape, win, empty)
    if cin < 16:
        dcols = take(xp, state, "dcols", (dy2.shape[0], k * cin), dy.dtype)
        xp.matmul(dy2, f.reshape(k * cin, o).T, out=dcols)
        full = dcols.reshape(*dy.shape[:-1], k * cin)
        grad = scatter(xp, shape, win, dy.dtype, (full[..., i * cin : (i + 1) * cin] for i in range(k)), empty)
        give(state, "dcols", dcols)
        return grad
    taps_f = f.reshape(k, cin, o)
    ts = [t for t in taps(win, shape[1:-1]) if not t.empty]
    whole = next((t for t in ts if covers(t, shape)), None)
    if whole is None:
        grad = _zeros(xp, tuple(shape), dy.dtype, empty)
    else:  # that tap's product is the whole gradient's first term: straight into it
        grad = empty(tuple(shape), dy.dtype) if empty is not None else xp.empty(tuple(shape), dtype=dy.dtype)
        xp.matmul(dy2, taps_f[whole.index].T, out=grad.reshape(-1, cin))
    buf = take(xp, state, "dx_tap", (dy2.shape[0], cin), dy.dtype)
    for t in ts:
        if t is whole:
            continue
        xp.matmul(dy2, taps_f[t.index].T, out=buf)
        part = buf.reshape(*dy.shape[:-1], cin)
        grad[(_ALL, *t.inp)] += part if t.full else part[(_ALL, *t.out)]
    give(state, "dx_tap", buf)
    return grad


TALL_BLOCK = 4096  # rows per partial product of a tall, narrow a.T @ b


def tall_product(xp, a, b):
    """``a.T @ b`` for [M, K] and [M, O] with M large and K * O small (a filter gradient over
    few channels): as partial products of row blocks, summed. One product over M rows runs
    about half as fast with OpenBLAS (a single thread, M = 65,536, K = 9, O = 16: 0.47 vs
    0.25 ms); the blocks' sum is as exact (pairwise rather than sequential accumulation)."""
    m = a.shape[0]
    if xp is not np or m < 2 * TALL_BLOCK or a.shape[1] * b.shape[1] > 1024:  # cuBLAS: one call
        return xp.matmul(a.T, b)
    out = xp.matmul(a[:TALL_BLOCK].T, b[:TALL_BLOCK])
    part = xp.empty_like(out)
    for s in range(TALL_BLOCK, m, TALL_BLOCK):
        xp.matmul(a[s : s + TALL_BLOCK].T, b[s : s + TALL_BLOCK], out=part)
        out += part
    return out
