"""Initializers: spec forms, errors, Keras formulas (checked statistically on the emitted ops)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import BaseModel, ValidationError

import specflow.ops  # noqa: F401  (registers the ops)
from specflow.graph.builder import GraphBuilder
from specflow.graph.graph_def import parse_input
from specflow.graph.topo import LOOP_BACK_EDGES, topological_order
from specflow.ops.eval import run_kernel
from specflow.schema.initializers import (
    InitializerSpec,
    compute_fans,
    emit_initializer,
    parse_initializer,
    random_seed_attrs,
)


def evaluate(graph_def, tensor: str) -> np.ndarray:
    """Run the kernels of ``tensor``'s ancestors in topological order (CPU, no session)."""
    nodes = graph_def.node_map()
    needed, stack = set(), [parse_input(tensor).node]
    while stack:
        n = stack.pop()
        if n not in needed:
            needed.add(n)
            stack.extend(parse_input(i).node for i in nodes[n].inputs)
    values: dict[str, list] = {}
    for node in topological_order(graph_def, allow_back_edges=LOOP_BACK_EDGES):  # models may hold loops
        if node.name in needed:
            ins = [values[parse_input(i).node][parse_input(i).index] for i in node.data_inputs]
            values[node.name] = run_kernel(node, ins)
    ref = parse_input(tensor)
    return values[ref.node][ref.index]


def value_of(init, shape, dtype="float32", seed=None, graph_seed=None) -> np.ndarray:
    b = GraphBuilder()
    t = emit_initializer(b, init, shape, dtype, seed=seed, graph_seed=graph_seed)
    return evaluate(b.graph_def, t)


class Holder(BaseModel):
    init: InitializerSpec


@pytest.mark.parametrize(
    "raw, kind, params",
    [
        ("zeros", "zeros", {}),
        ({"constant": 0.5}, "constant", {"value": 0.5}),
        ({"glorot_uniform": {"seed": 1}}, "glorot_uniform", {"seed": 1}),
        ({"random_uniform": {"minval": -1, "maxval": 2}}, "random_uniform", {"minval": -1, "maxval": 2, "seed": None}),
        ({"truncated_normal": {"stddev": 0.1, "seed": 7}}, "truncated_normal", {"mean": 0.0, "stddev": 0.1, "seed": 7}),
    ],
)
def test_spec_forms(raw, kind, params):
    init = Holder(init=raw).init
    assert init.kind == kind and init.params == params
    assert parse_initializer(init.to_spec()) == init


@pytest.mark.parametrize(
    "raw, message",
    [
        ("glorot_unifrom", "unknown initializer 'glorot_unifrom' (did you mean 'glorot_uniform'?)"),
        ({"random_normal": {"stdev": 1}}, "initializer 'random_normal' has no parameter 'stdev' (did you mean 'stddev'?)"),
        ({"zeros": 1, "ones": 2}, "an initializer is a name or a one-key mapping"),
        ({"constant": "x"}, "constant initializer needs a number"),
        ({"he_normal": {"seed": 1.5}}, "seed of initializer 'he_normal' must be an integer"),
        ({"random_uniform": {"minval": 1, "maxval": 0}}, "needs minval <= maxval"),
    ],
)
def test_bad_initializers(raw, message):
    with pytest.raises(ValidationError) as e:
        Holder(init=raw)
    assert message in str(e.value)


def test_fans_follow_keras():
    assert compute_fans([]) == (1, 1)
    assert compute_fans([5]) == (5, 5)
    assert compute_fans([64, 10]) == (64, 10)
    assert compute_fans([3, 3, 8, 16]) == (72, 144)  # receptive field 9


def test_constants():
    np.testing.assert_array_equal(value_of("zeros", [2, 3]), np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(value_of("ones", [4], "float64"), np.ones(4))
    np.testing.assert_array_equal(value_of({"constant": 0.5}, []), np.float32(0.5))
    np.testing.assert_array_equal(value_of({"constant": [1, 2]}, [3, 2]), np.tile([1, 2], (3, 1)))
    assert value_of("zeros", [3], "int32").dtype == np.int32


def test_constant_ops():
    b = GraphBuilder()
    emit_initializer(b, "zeros", [64, 10], "float32")
    assert [n.op for n in b.graph_def] == ["Const", "Const", "Fill"]


def test_uniform_and_normal_statistics():
    u = value_of({"random_uniform": {"minval": -1, "maxval": 3, "seed": 1}}, [200, 100])
    assert u.dtype == np.float32 and u.shape == (200, 100)
    assert -1 <= u.min() and u.max() < 3 and abs(u.mean() - 1) < 0.05
    n = value_of({"random_normal": {"mean": 2, "stddev": 0.5, "seed": 2}}, [200, 100])
    assert abs(n.mean() - 2) < 0.02 and abs(n.std() - 0.5) < 0.02
    t = value_of({"truncated_normal": {"stddev": 0.5, "seed": 3}}, [200, 100])
    assert np.abs(t).max() <= 1.0 + 1e-6  # within two stddevs
    assert abs(t.std() - 0.5 * 0.87962566) < 0.02


@pytest.mark.parametrize(
    "kind, shape, limit, std",
    [
        ("glorot_uniform", [300, 200], math.sqrt(6 / 500), math.sqrt(2 / 500)),
        ("he_uniform", [300, 200], math.sqrt(6 / 300), math.sqrt(2 / 300)),
        ("glorot_normal", [300, 200], None, math.sqrt(2 / 500)),
        ("he_normal", [3, 3, 32, 64], None, math.sqrt(2 / 288)),
    ],
)
def test_variance_scaling(kind, shape, limit, std):
    v = value_of({kind: {"seed": 5}}, shape)
    if limit is not None:
        assert np.abs(v).max() <= limit
        assert np.abs(v).max() > 0.95 * limit
    assert abs(v.std() - std) / std < 0.05
    assert abs(v.mean()) < 0.1 * std


def test_seeds():
    a = value_of({"glorot_uniform": {"seed": 1}}, [10, 10])
    np.testing.assert_array_equal(a, value_of({"glorot_uniform": {"seed": 1}}, [10, 10]))
    assert not np.array_equal(a, value_of({"glorot_uniform": {"seed": 2}}, [10, 10]))
    # A derived seed applies only when the initializer has none.
    np.testing.assert_array_equal(value_of("glorot_uniform", [10, 10], seed=1), a)
    assert random_seed_attrs(None, None) == {"seed": 0, "seed2": 0}
    assert random_seed_attrs(7, None) == {"seed": 87654321, "seed2": 7}
    assert random_seed_attrs(7, 3) == {"seed": 3, "seed2": 7}
    b = GraphBuilder()
    emit_initializer(b, {"random_normal": {"seed": 4}}, [2], "float32", seed=9, graph_seed=1)
    rnd = next(n for n in b.graph_def if n.op == "RandomStandardNormal")
    assert (rnd.attrs["seed"], rnd.attrs["seed2"]) == (1, 4)


@pytest.mark.parametrize("shape", [[6, 6], [12, 4], [4, 12], [2, 3, 5, 7]])
def test_orthogonal_is_orthogonal(shape):
    v = value_of({"orthogonal": {"seed": 3}}, shape, "float64")
    assert v.shape == tuple(shape)
    flat = v.reshape(-1, shape[-1])
    rows, cols = flat.shape
    # Orthonormal columns when tall (or square), orthonormal rows when wide, as in Keras.
    gram = flat.T @ flat if rows >= cols else flat @ flat.T
    np.testing.assert_allclose(gram, np.eye(min(rows, cols)), atol=1e-12)


def test_orthogonal_follows_keras_recipe_with_the_same_draw():
    # The same seeded normal draw, factored by numpy (same LAPACK routine): q * sign(diag(r)).
    b = GraphBuilder()
    t = emit_initializer(b, {"orthogonal": {"seed": 2}}, [3, 5], "float64")
    draw = next(n for n in b.graph_def if n.op == "RandomStandardNormal")
    a = evaluate(b.graph_def, draw.name)
    assert a.shape == (5, 3)
    q, r = np.linalg.qr(a)
    np.testing.assert_allclose(evaluate(b.graph_def, t), (q * np.sign(np.diag(r))).T, atol=1e-12)
    assert {"Qr", "Sign", "Transpose", "Reshape"} <= {n.op for n in b.graph_def}


def test_orthogonal_seeds_gain_and_dtypes():
    a = value_of({"orthogonal": {"seed": 1}}, [8, 8])
    assert a.dtype == np.float32
    np.testing.assert_array_equal(a, value_of({"orthogonal": {"seed": 1}}, [8, 8]))
    np.testing.assert_array_equal(a, value_of("orthogonal", [8, 8], seed=1))  # the derived seed
    assert not np.array_equal(a, value_of({"orthogonal": {"seed": 2}}, [8, 8]))
    np.testing.assert_allclose(value_of({"orthogonal": {"seed": 1, "gain": 2.5}}, [8, 8]), 2.5 * a, rtol=1e-6)
    half = value_of({"orthogonal": {"seed": 1}}, [4, 4], "float16")
    assert half.dtype == np.float16
    np.testing.assert_allclose(half.astype(np.float32).T @ half.astype(np.float32), np.eye(4), atol=1e-2)
    assert Holder(init={"orthogonal": {"gain": 2}}).init.params == {"gain": 2, "seed": None}
    with pytest.raises(ValidationError, match="'gain' of initializer 'orthogonal' must be a number"):
        Holder(init={"orthogonal": {"gain": "big"}})
    from specflow.errors import SpecError

    with pytest.raises(SpecError, match="needs a variable of rank >= 2, got shape \\[5\\]"):
        value_of("orthogonal", [5])
