"""Random ops: uniform, normal, truncated normal, uniform integers, shuffle, Multinomial.

Seeding follows TensorFlow: a non-zero ``seed`` or ``seed2`` makes the op's stream deterministic
from (seed, seed2); when both are 0 the session's graph seed (``ctx.graph_seed``), combined with
a stable hash of the node name so that ops differ, is used if set; otherwise the stream is
nondeterministic. Each kernel instance keeps its generator (numpy PCG64) in ``ctx.state["rng"]``
and advances it every run, so successive steps draw new numbers and the state can be saved.

Numbers are drawn on the host with numpy and moved to the device afterwards, so CPU and GPU
give identical streams for the same seeds.
"""

from __future__ import annotations

import hashlib
import math
import sys
import threading

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import KernelContext, kernel, not_differentiable, register_op

_SEED_ATTRS = ["seed: int = 0", "seed2: int = 0"]
_SHAPE_ATTRS = ["dtype: {float16, float32, float64}", "T: {int32, int64}", *_SEED_ATTRS]

# TruncatedNormal keeps draws within this many standard deviations (TF's rule).
_TRUNCATE_AT = 2.0


# --- seeding ----------------------------------------------------------------------------------


def _name_hash(name: str) -> int:
    """A hash of the node name that is the same in every process (unlike ``hash``)."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")


# In a kernel's state on a GPU: the node's own state, where its generator lives (one stream per
# node whichever device a plan puts it on; see runtime/executor_build.py).
RNG_HOME = "rng_home"


def _generator(ctx: KernelContext) -> np.random.Generator:
    """This kernel instance's generator, created from the seeds on its first run."""
    home = ctx.state.get(RNG_HOME, ctx.state)
    rng = home.get("rng")
    if rng is None:
        seed, seed2 = int(ctx.attrs["seed"]), int(ctx.attrs["seed2"])
        if seed or seed2:
            entropy = [seed & 0xFFFFFFFFFFFFFFFF, seed2 & 0xFFFFFFFFFFFFFFFF]
        elif ctx.graph_seed is not None:
            entropy = [int(ctx.graph_seed) & 0xFFFFFFFFFFFFFFFF, _name_hash(ctx.node.name)]
        else:
            entropy = None  # fresh OS entropy: nondeterministic, as in TF
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy)))
        # Concurrent steps: one generator per node (setdefault is atomic), so no two draw alike.
        rng = home.setdefault("rng", rng)
    return rng


# --- shared pieces ----------------------------------------------------------------------------


def _shape_arg(ctx: KernelContext, shape) -> tuple[int, ...]:
    """The ``shape`` input as a tuple of non-negative ints (it is read on the host)."""
    dims = ctx.host(shape)
    if dims.ndim != 1:
        raise ctx.fail(f"shape must be a vector of dimensions, got a tensor of shape {list(dims.shape)}")
    if (dims < 0).any():
        raise ctx.fail(f"shape must not contain negative dimensions, got {dims.tolist()}")
    return tuple(int(d) for d in dims)


def _shape_from_input(ic: InferenceContext) -> list[Shape]:
    """Output shape = the value of the 1-D ``shape`` input (unknown where not constant)."""
    if ic.shape(0).rank not in (None, 1):
        raise ic.fail(f"shape must be a vector of dimensions, got a tensor of shape {ic.shape(0)}")
    return [ic.shape_from_value(0)]


def _register_shaped(name: str, doc: str, sample) -> None:
    """Register a float op ``name(shape) -> dtype`` whose values come from ``sample(rng, shape, np_dtype)``."""
    register_op(
        name,
        inputs=["shape: T"],
        outputs=["output: dtype"],
        attrs=_SHAPE_ATTRS,
        stateful=True,
        shape=_shape_from_input,
        doc=doc,
    )

    @kernel(name, host_inputs=[0])
    def _run(ctx, shape):
        dims = _shape_arg(ctx, shape)
        np_dtype = ctx.attrs["dtype"].numpy
        if sample is _uniform and ctx.xp is np and np_dtype in (np.float32, np.float64):
            # The same draws into the arena's buffer (dropout's mask every training step: a
            # multi-MB array otherwise fresh memory, page faults and all, every time).
            return _generator(ctx).random(dims, dtype=np_dtype, out=ctx.empty(dims, np_dtype))
        return ctx.xp.asarray(sample(_generator(ctx), dims, np_dtype))


# --- the float samplers -----------------------------------------------------------------------


def _uniform(rng: np.random.Generator, dims, np_dtype) -> np.ndarray:
    if np_dtype == np.float16:
        # Multiples of 2**-11 are exact in float16, so rounding can never produce 1.0.
        return (rng.integers(0, 2**11, size=dims) / 2**11).astype(np.float16)
    return rng.random(dims, dtype=np_dtype)


def _standard_normal(rng: np.random.Generator, dims, np_dtype) -> np.ndarray:
    draw_dtype = np.float64 if np_dtype == np.float64 else np.float32  # numpy has no float16 draw
    return rng.standard_normal(dims, dtype=draw_dtype).astype(np_dtype, copy=False)


def _truncated_normal(rng: np.random.Generator, dims, np_dtype) -> np.ndarray:
    draw_dtype = np.float64 if np_dtype == np.float64 else np.float32
    out = rng.standard_normal(dims, dtype=draw_dtype)
    bad = np.abs(out) > _TRUNCATE_AT
    while bad.any():  # re-draw only the rejected entries (about 4.6% each round)
        out[bad] = rng.standard_normal(int(bad.sum()), dtype=draw_dtype)
        bad = np.abs(out) > _TRUNCATE_AT
    return out.astype(np_dtype, copy=False)


_register_shaped(
    "RandomUniform",
    "Uniform random values in [0, 1) of the given shape.",
    _uniform,
)
_register_shaped(
    "RandomStandardNormal",
    "Normally distributed random values (mean 0, stddev 1) of the given shape.",
    _standard_normal,
)
_register_shaped(
    "TruncatedNormal",
    "Normal random values (mean 0, stddev 1) with draws beyond 2 stddev re-drawn.",
    _truncated_normal,
)


# --- _RandomUniformMask: dropout's Cast(RandomUniform(shape) >= rate), made by the optimize stage ---

register_op(
    "_RandomUniformMask",
    inputs=["shape: T"],
    outputs=["mask: DstT"],
    attrs=[*_SHAPE_ATTRS, "threshold: float", "DstT: {float16, float32, float64}"],
    stateful=True,
    shape=_shape_from_input,
    doc="Cast(RandomUniform(shape) >= threshold, DstT) from the same stream as that RandomUniform "
    "(float32 or float64 draws; runtime/optimize_fuse_train.py makes it, named like the RandomUniform).",
)


def _threshold_bits(threshold: float, np_dtype) -> int | None:
    """The least raw draw whose uniform value is >= threshold, or None when none is. numpy's
    uniform float32 is (next_uint32 >> 8) * 2**-24 and float64 (next_uint64 >> 11) * 2**-53, so
    u >= t exactly when the raw draw >= ceil(t * 2**m) << shift (t * 2**m is exact in float64)."""
    mant, shift = (24, 8) if np_dtype == np.float32 else (53, 11)
    if not threshold <= 1.0:  # NaN or above every draw
        return None
    k = max(math.ceil(threshold * 2.0**mant), 0)
    return None if k >= 2**mant else k << shift


# Held around _uint32_draws' read-modify-write of a generator's state (steps may overlap; the
# generator's own lock cannot be held: random_raw takes it).
_RAW_LOCK = threading.Lock()


def _uint32_draws(rng: np.random.Generator, n: int):
    """(head, body): the n next_uint32 draws numpy's float32 ``random`` would take, as a leading
    buffered draw (an int, or None) and a uint32 array; the generator left as ``random`` leaves it.
    ``random_raw`` fills the array without numpy's per-draw call: each 64-bit draw is two 32-bit
    ones, low half first (little-endian view), the odd half kept in the state as numpy does."""
    bg = rng.bit_generator
    with _RAW_LOCK:  # the state read, the draws and the state written back as one step
        st = bg.state
        head = st["uinteger"] if st["has_uint32"] and n else None
        m = n - (head is not None)
        raw = bg.random_raw((m + 1) // 2)
        halves = raw.view(np.uint32)
        if head is not None or m:
            st = bg.state
            st["has_uint32"] = m % 2
            if m:  # numpy's next_uint32 keeps the high half of the last 64-bit draw, used or not
                st["uinteger"] = int(halves[-1])
            bg.state = st
    return head, halves[:m]


@kernel("_RandomUniformMask", devices=("CPU",), host_inputs=[0])
def _random_uniform_mask(ctx, shape):
    dims = _shape_arg(ctx, shape)
    draw, out_dtype = ctx.attrs["dtype"].numpy, ctx.attrs["DstT"].numpy
    rng = _generator(ctx)
    n = math.prod(dims)
    exact = draw in (np.float32, np.float64) and sys.byteorder == "little" and isinstance(rng.bit_generator, np.random.PCG64)
    if not exact:  # the unfused ops' arithmetic
        u = _uniform(rng, dims, draw)
        return (u >= np.asarray(ctx.attrs["threshold"], draw)).astype(out_dtype)
    limit = _threshold_bits(float(np.asarray(ctx.attrs["threshold"], draw)), draw)
    out = ctx.empty(dims, out_dtype)
    flat = out.reshape(-1)
    if draw == np.float64:
        bits, head = rng.bit_generator.random_raw(n), None
    else:
        head, bits = _uint32_draws(rng, n)
    if limit is None:  # no draw passes; the stream still advances
        flat.fill(0)
    elif head is None:
        np.greater_equal(bits, limit, out=flat)
    else:
        flat[0] = head >= limit
        np.greater_equal(bits, limit, out=flat[1:])
    return out


# --- RandomUniformInt -------------------------------------------------------------------------


def _uniform_int_shape(ic: InferenceContext) -> list[Shape]:
    for i, name in ((1, "minval"), (2, "maxval")):
        if ic.shape(i).rank not in (None, 0):
            raise ic.fail(f"{name} must be a scalar, got shape {ic.shape(i)}")
    return _shape_from_input(ic)


register_op(
    "RandomUniformInt",
    inputs=["shape: T", "minval: Tout", "maxval: Tout"],
    outputs=["output: Tout"],
    attrs=["Tout: {int32, int64}", "T: {int32, int64}", *_SEED_ATTRS],
    stateful=True,
    shape=_uniform_int_shape,
    doc="Uniform random integers in [minval, maxval) of the given shape.",
)


@kernel("RandomUniformInt", host_inputs=[0, 1, 2])
def _random_uniform_int(ctx, shape, minval, maxval):
    dims = _shape_arg(ctx, shape)
    lo, hi = ctx.host(minval), ctx.host(maxval)
    if lo.ndim != 0 or hi.ndim != 0:
        raise ctx.fail(f"minval and maxval must be scalars, got shapes {list(lo.shape)} and {list(hi.shape)}")
    if not lo < hi:
        raise ctx.fail(f"need minval < maxval, got minval={lo} and maxval={hi}")
    np_dtype = ctx.attrs["Tout"].numpy
    return ctx.xp.asarray(_generator(ctx).integers(int(lo), int(hi), size=dims, dtype=np_dtype))


# --- RandomShuffle ----------------------------------------------------------------------------


register_op(
    "RandomShuffle",
    inputs=["value: T"],
    outputs=["output: T"],
    attrs=["T: type", *_SEED_ATTRS],
    stateful=True,
    shape=lambda ic: [ic.shape(0)],
    doc="Randomly permutes `value` along its first dimension.",
)


@kernel("RandomShuffle")
def _random_shuffle(ctx, value):
    if value.ndim == 0 or value.shape[0] <= 1:
        return value  # nothing to permute; kernels never mutate inputs, so no copy is needed
    perm = _generator(ctx).permutation(value.shape[0])
    return value[ctx.xp.asarray(perm)]


# --- Multinomial ------------------------------------------------------------------------------


def _multinomial_shape(ic: InferenceContext) -> list[Shape]:
    logits, n = ic.shape(0), ic.value(1)
    if logits.rank not in (None, 2):
        raise ic.fail(f"logits must be a matrix [batch, classes], got shape {logits}")
    if n is not None and (np.ndim(n) != 0 or int(n) < 0):
        raise ic.fail(f"num_samples must be a non-negative scalar, got {np.asarray(n).tolist()}")
    return [Shape([logits.with_rank(2)[0], None if n is None else int(n)])]


register_op(
    "Multinomial",
    inputs=["logits: T", "num_samples: int32"],
    outputs=["output: output_dtype"],
    attrs=[*_SEED_ATTRS, "T: {real}", "output_dtype: {int32, int64} = int64"],
    stateful=True,
    shape=_multinomial_shape,
    doc="num_samples class indices per row, drawn with probabilities softmax(logits[row]) "
    "(a -inf logit is never drawn).",
)


@kernel("Multinomial", host_inputs=[0, 1])
def _multinomial(ctx, logits, num_samples):
    x, n = ctx.host(logits).astype(np.float64), ctx.host(num_samples)
    if x.ndim != 2:
        raise ctx.fail(f"logits must be a matrix [batch, classes], got shape {list(x.shape)}")
    if n.ndim != 0 or int(n) < 0:
        raise ctx.fail(f"num_samples must be a non-negative scalar, got {n.tolist()}")
    if x.shape[1] == 0 and x.shape[0] and int(n):
        raise ctx.fail("logits must have at least one class")
    # Inverse-CDF sampling on the host, like the other random ops (same stream on every device).
    top = np.max(x, axis=1, keepdims=True) if x.shape[1] else np.zeros((x.shape[0], 1))
    with np.errstate(invalid="ignore"):
        cdf = np.cumsum(np.exp(x - top), axis=1)
    u = _generator(ctx).random((x.shape[0], int(n))) * cdf[:, -1:] if x.shape[1] else np.zeros((x.shape[0], 0))
    out = np.stack([np.searchsorted(c, r, side="right") for c, r in zip(cdf, u)]) if x.shape[0] else u
    out = np.minimum(out, max(x.shape[1] - 1, 0)).reshape(x.shape[0], int(n))
    return ctx.xp.asarray(out.astype(ctx.attrs["output_dtype"].numpy))


# Random draws carry no gradient (RandomShuffle's permutation is piecewise constant too).
not_differentiable(
    "_RandomUniformMask",
    "RandomUniform", "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt", "RandomShuffle", "Multinomial"
)
