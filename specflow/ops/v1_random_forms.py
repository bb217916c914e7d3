"""The stateless random ops' first forms, which take the [2] seed itself (tf.random.stateless_*
before TF 2.4, and graphs saved then): StatelessRandomUniform / Normal / TruncatedNormal /
UniformInt / UniformFullInt and StatelessRandomGetKeyCounterAlg. TF's V1 kernels scramble the seed
into a Philox key and counter exactly as StatelessRandomGetKeyCounter does and then draw as the V2
ops with Philox, so each is that pair here (TF's values: bit-exact, float32 normals within an ulp;
tests/ops/cases_v1_random_forms.py).
"""

from __future__ import annotations

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import kernel, not_differentiable, register_op
from specflow.ops.stateless_random_ops import RNG_ALG_PHILOX, key_counter_from_seed
from specflow.ops.v1_forms import call_kernel

_FLOATS = "dtype: {bfloat16, float16, float32, float64} = float32"


def _v1_shape(ic: InferenceContext) -> list[Shape]:
    if ic.shape(0).rank not in (None, 1):
        raise ic.fail(f"shape must be a vector of dimensions, got a tensor of shape {ic.shape(0)}")
    if not ic.shape(1).is_compatible_with(Shape([2])):
        raise ic.fail(f"seed must have shape [2], got {ic.shape(1)}")
    for i in range(2, ic.num_inputs):
        if ic.shape(i).rank not in (None, 0):
            raise ic.fail(f"minval and maxval must be scalars, got shape {ic.shape(i)}")
    return [ic.shape_from_value(0)]


def _register(op: str, target: str, extra_inputs: list[str], dtype_attr: str, seeds: str, doc: str) -> None:
    register_op(op, inputs=["shape: T", "seed: Tseed", *extra_inputs], outputs=["output: dtype"],
                attrs=[dtype_attr, "T: {int32, int64} = int32", f"Tseed: {seeds} = int64"], shape=_v1_shape,
                doc=doc)  # fmt: skip
    not_differentiable(op)

    @kernel(op, host_inputs=tuple(range(2 + len(extra_inputs))))
    def _run(ctx, shape, seed, *extra):
        key, counter = key_counter_from_seed(ctx, seed)
        ins = [np.array([key], np.uint64), np.array(counter, np.uint64), np.int32(RNG_ALG_PHILOX)]
        return call_kernel(ctx, target, {"dtype": ctx.attrs["dtype"]}, ctx.host(shape), *ins, *extra)


_register("StatelessRandomUniform", "StatelessRandomUniformV2", [], _FLOATS, "{int32, int64}",
          "Uniform values in [0, 1) that depend only on the [2] seed (StatelessRandomUniformV2 of its key and counter).")
_register("StatelessRandomNormal", "StatelessRandomNormalV2", [], _FLOATS, "{int32, int64}",
          "Standard normal values that depend only on the [2] seed.")
_register("StatelessTruncatedNormal", "StatelessTruncatedNormalV2", [], _FLOATS, "{int32, int64}",
          "Standard normal values within 2 stddev (others re-drawn) that depend only on the [2] seed.")
_register("StatelessRandomUniformInt", "StatelessRandomUniformIntV2", ["minval: dtype", "maxval: dtype"],
          "dtype: {int32, int64}", "{int32, int64}", "Integers in [minval, maxval) that depend only on the [2] seed.")
_register("StatelessRandomUniformFullInt", "StatelessRandomUniformFullIntV2", [],
          "dtype: {int32, int64, uint32, uint64} = uint64", "{int32, int64, uint32, uint64}",
          "Integers over the dtype's whole range that depend only on the [2] seed.")  # fmt: skip


register_op(
    "StatelessRandomGetKeyCounterAlg",
    inputs=["seed: Tseed"],
    outputs=["key: uint64", "counter: uint64", "alg: int32"],
    attrs=["Tseed: {int32, int64} = int64"],
    shape=lambda ic: [Shape([1]), Shape([2]), Shape([])],
    doc="StatelessRandomGetKeyCounter's key and counter for a [2] seed, and the algorithm (1, Philox).",
)
not_differentiable("StatelessRandomGetKeyCounterAlg")


@kernel("StatelessRandomGetKeyCounterAlg", host_inputs=(0,))
def _get_key_counter_alg(ctx, seed):
    key, counter = key_counter_from_seed(ctx, seed)
    xp = ctx.xp
    return xp.asarray(np.array([key], np.uint64)), xp.asarray(np.array(counter, np.uint64)), xp.asarray(np.int32(1))
