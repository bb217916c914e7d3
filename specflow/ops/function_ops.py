"""Ops TensorFlow 2 function graphs need beyond the classic graph ops.

IdentityN is what an inlined function call leaves behind (``specflow/io/tf_functions.py``): the
call node ``C`` becomes an IdentityN of the function's results, so ``C:k`` still names the k-th.
"""

from __future__ import annotations

from specflow.graph import dtypes
from specflow.graph.shapes import Shape
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import gradient, kernel, register_op


def _identity_n_shape(ic: InferenceContext) -> list[Shape]:
    for i in range(ic.num_inputs):  # a resource passed through still points at its variable
        spec = ic.handle_data(i)
        if spec is not None:
            ic.output_handle_data[i] = spec
    return list(ic.input_shapes)


register_op(
    "IdentityN",
    inputs=["input: T"],
    outputs=["output: T"],
    attrs=["T: list(type) >= 1"],
    shape=_identity_n_shape,
    doc="Returns its inputs unchanged: a list of tensors of any types.",
)


@kernel("IdentityN", T=dtypes.ALL_DTYPES)  # a lowered While returns its resource loop vars too
def _identity_n(ctx, *xs):
    return tuple(xs)


@gradient("IdentityN")
def _identity_n_gradient(b, node, dys):
    return list(dys)
