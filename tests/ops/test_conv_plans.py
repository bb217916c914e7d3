"""The conv kernels' per-shape plans (conv_ops._gathered_product, fused_ops' _FusedConv2DMaxPool):
later calls with the shapes of an earlier one skip the checks and take the gather directly;
they compute what a fresh kernel does, across shape changes, padding or none."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.graph.builder import GraphBuilder
from specflow.runtime.session import Session, SessionConfig
from tests.ops.cases_conv import conv_ref, pool_ref


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("pool", [False, True])
def test_repeated_convolutions_on_kept_plans_equal_the_reference(padding, pool):
    b = GraphBuilder()
    b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [None, 6, 6, 4]}, name="x")
    b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [3, 3, 4, 8]}, name="f")
    b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [8]}, name="b")
    b.add_op("Conv2D", ["x", "f"], {"strides": [1, 1, 1, 1], "padding": padding}, name="conv")
    b.add_op("BiasAdd", ["conv", "b"], name="biased")
    b.add_op("Relu", ["biased"], name="act")
    fetch = "act"
    if pool:
        b.add_op("MaxPool", ["act"], {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "VALID"}, name="pool")
        fetch = "pool"
    rng = np.random.default_rng(0)
    f = rng.standard_normal((3, 3, 4, 8)).astype(np.float32)
    bias = rng.standard_normal(8).astype(np.float32)
    with Session(b.graph_def, SessionConfig(devices="cpu:1", inter_op_threads=1)) as sess:
        for batch in (1, 1, 3, 3, 1, 2):  # plans made, reused, replaced
            x = rng.standard_normal((batch, 6, 6, 4)).astype(np.float32)
            want = np.maximum(conv_ref(x, f, (1, 1), padding) + bias, 0)
            if pool:
                want = pool_ref(want, (2, 2), (2, 2), "VALID", "max")
            np.testing.assert_allclose(sess.run(fetch, {"x": x, "f": f, "b": bias}), want, rtol=1e-5, atol=1e-5)


def test_a_fed_filter_changed_in_place_between_steps_is_read_again():
    # The fused kernels keep the filter extended by the bias only for arrays that cannot change
    # in place (variable reads, read-only ones): a fed array is its caller's.
    b = GraphBuilder()
    b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [None, 6, 6, 2]}, name="x")
    b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [3, 3, 2, 4]}, name="f")
    b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [4]}, name="b")
    b.add_op("Conv2D", ["x", "f"], {"strides": [1, 1, 1, 1], "padding": "SAME"}, name="conv")
    b.add_op("BiasAdd", ["conv", "b"], name="biased")
    b.add_op("Relu", ["biased"], name="act")
    b.add_op("MaxPool", ["act"], {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "VALID"}, name="pool")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 6, 6, 2)).astype(np.float32)
    f = rng.standard_normal((3, 3, 2, 4)).astype(np.float32)
    bias = rng.standard_normal(4).astype(np.float32)
    with Session(b.graph_def, SessionConfig(devices="cpu:1", inter_op_threads=1)) as sess:
        for step in range(4):
            f *= -1.5  # the same arrays, new values
            bias += 1
            for fetch in ("pool", "act"):
                want = np.maximum(conv_ref(x, f, (1, 1), "SAME") + bias, 0)
                if fetch == "pool":
                    want = pool_ref(want, (2, 2), (2, 2), "VALID", "max")
                got = sess.run(fetch, {"x": x, "f": f, "b": bias})
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"step {step} {fetch}")
