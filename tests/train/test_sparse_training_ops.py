"""Row-sparse variable updates (ResourceScatter*, ResourceSparseApply*) in a Session against numpy
transcriptions of TensorFlow's kernels, repeated indices included, and against TensorFlow itself
where it is importable."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.errors import RuntimeFailure, ShapeError
from specflow.graph.builder import GraphBuilder
from specflow.runtime.session import Session
from specflow.schema.layers.variables import create_variable

RNG = np.random.default_rng(3)
SHAPE = (5, 3)
IDS = np.array([3, 0, 3, 1, 3], np.int32)  # row 3 three times: the order of its updates matters


def _run(op, variables, tensors, attrs, dtype, feeds, static=True):
    """Variables of SHAPE with random values, each tensor input a Placeholder; runs ``op`` once.
    Returns (initial values, values after)."""
    b = GraphBuilder()
    values = {v: RNG.uniform(0.1, 1.0, SHAPE).astype(dtype) for v in variables}
    vs = {v: create_variable(b, v, SHAPE, dtype, {"constant": values[v].tolist()}) for v in variables}
    inputs = [vs[v].handle for v in variables]
    for t in tensors:
        arr = np.asarray(feeds[t])
        shape = list(arr.shape) if static else None
        inputs.append(b.add_op("Placeholder", attrs={"dtype": arr.dtype.name, "shape": shape}, name=t).name)
    apply = b.add_op(op, inputs, attrs, name="apply").name
    init = b.add_op("NoOp", name="init", control_inputs=b.collections["init_ops"]).name
    sess = Session(b.graph_def)
    sess.run([], targets=[init])
    sess.run([], feeds={f"{t}:0": np.asarray(feeds[t]) for t in tensors}, targets=[apply])
    return values, sess.run([vs[v].read for v in variables])


def _ref_scatter(kind, var, ids, upd):
    out = var.copy()
    for i, r in enumerate(ids):
        u = upd if np.ndim(upd) == 0 else upd[i]
        out[r] = out[r] + u if kind == "add" else out[r] - u if kind == "sub" else u
    return out


@pytest.mark.parametrize("op,kind", [("ResourceScatterAdd", "add"), ("ResourceScatterSub", "sub")])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_scatter_add_sub_add_every_repeat(op, kind, dtype):
    upd = RNG.uniform(-5, 5, (len(IDS), 3)).astype(dtype)
    values, (got,) = _run(op, ["v"], ["indices", "updates"], {"dtype": dtype}, dtype, {"indices": IDS, "updates": upd})
    np.testing.assert_allclose(got, _ref_scatter(kind, values["v"], IDS, upd), rtol=1e-6)
    scalar = np.asarray(2, dtype)  # a scalar update goes to every indexed row
    values, (got,) = _run(op, ["v"], ["indices", "updates"], {"dtype": dtype}, dtype, {"indices": IDS.astype(np.int64),
                                                                                        "updates": scalar})  # fmt: skip
    np.testing.assert_allclose(got, _ref_scatter(kind, values["v"], IDS, scalar), rtol=1e-6)


def test_scatter_update_and_untouched_rows():
    ids = np.array([[4], [1]], np.int32)  # indices of any shape: updates are indices.shape + row shape
    upd = RNG.uniform(-1, 1, (2, 1, 3)).astype(np.float32)
    values, (got,) = _run("ResourceScatterUpdate", ["v"], ["indices", "updates"], {"dtype": "float32"}, "float32",
                          {"indices": ids, "updates": upd})  # fmt: skip
    want = values["v"].copy()
    want[[4, 1]] = upd[:, 0]
    np.testing.assert_array_equal(got, want)


def _ref_sparse(kind, var, accum, ids, g, s, nesterov=False, update_slots=True):
    """TF's CPU kernels: one index at a time, in order."""
    var, accum = var.astype(np.float64), accum.astype(np.float64)
    for i, r in enumerate(ids):
        if kind == "adagrad":
            if update_slots:
                accum[r] += g[i] * g[i]
            var[r] -= s["lr"] * g[i] / (np.sqrt(accum[r]) + s["epsilon"])
        elif kind == "momentum":
            accum[r] = accum[r] * s["momentum"] + g[i]
            var[r] -= s["lr"] * g[i] + s["lr"] * s["momentum"] * accum[r] if nesterov else s["lr"] * accum[r]
        else:  # keras momentum
            accum[r] = accum[r] * s["momentum"] - s["lr"] * g[i]
            var[r] += accum[r] * s["momentum"] - s["lr"] * g[i] if nesterov else accum[r]
    return var, accum


SPARSE = [
    ("ResourceSparseApplyAdagradV2", "adagrad", ["lr", "epsilon", "grad", "indices"], {}),
    ("ResourceSparseApplyAdagradV2", "adagrad", ["lr", "epsilon", "grad", "indices"], {"update_slots": False}),
    ("ResourceSparseApplyMomentum", "momentum", ["lr", "grad", "indices", "momentum"], {}),
    ("ResourceSparseApplyMomentum", "momentum", ["lr", "grad", "indices", "momentum"], {"use_nesterov": True}),
    ("ResourceSparseApplyKerasMomentum", "keras", ["lr", "grad", "indices", "momentum"], {}),
    ("ResourceSparseApplyKerasMomentum", "keras", ["lr", "grad", "indices", "momentum"], {"use_nesterov": True}),
]
HYPER = {"lr": 0.1, "epsilon": 1e-7, "momentum": 0.9}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op,kind,tensors,attrs", SPARSE, ids=[f"{o[0]}{o[3] or ''}" for o in SPARSE])
def test_sparse_apply_matches_tensorflow_rule(op, kind, tensors, attrs, dtype):
    g = RNG.uniform(-1, 1, (len(IDS), 3)).astype(dtype)
    feeds = {t: np.asarray(HYPER[t], dtype) for t in tensors if t in HYPER} | {"grad": g, "indices": IDS}
    values, (var, accum) = _run(op, ["var", "accum"], tensors, attrs, dtype, feeds)
    want = _ref_sparse(kind, values["var"], values["accum"], IDS, g.astype(np.float64), HYPER,
                       attrs.get("use_nesterov", False), attrs.get("update_slots", True))  # fmt: skip
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(var, want[0], rtol=tol, atol=tol)
    np.testing.assert_allclose(accum, want[1], rtol=tol, atol=tol)
    untouched = [2, 4]
    np.testing.assert_array_equal(var[untouched], values["var"][untouched])


def test_sparse_apply_agrees_with_tensorflow():
    tf = pytest.importorskip("tensorflow")
    g = RNG.uniform(-1, 1, (len(IDS), 3)).astype(np.float32)
    for op, _kind, tensors, attrs in SPARSE:
        feeds = {t: np.asarray(HYPER[t], np.float32) for t in tensors if t in HYPER} | {"grad": g, "indices": IDS}
        values, (var, accum) = _run(op, ["var", "accum"], tensors, attrs, "float32", feeds)
        tv, ta = tf.Variable(values["var"]), tf.Variable(values["accum"])
        getattr(tf.raw_ops, op)(var=tv.handle, accum=ta.handle, **{k: tf.constant(v) for k, v in feeds.items()}, **attrs)
        np.testing.assert_allclose(var, tv.numpy(), rtol=1e-6, atol=1e-7, err_msg=op)
        np.testing.assert_allclose(accum, ta.numpy(), rtol=1e-6, atol=1e-7, err_msg=op)


def test_errors_name_what_is_wrong():
    g = np.ones((2, 3), np.float32)
    with pytest.raises(RuntimeFailure, match=r"indices\[1\] = 7 is not in \[0, 5\)"):
        _run("ResourceScatterAdd", ["v"], ["indices", "updates"], {"dtype": "float32"}, "float32",
             {"indices": np.array([0, 7], np.int32), "updates": g})  # fmt: skip
    with pytest.raises(ShapeError, match=r"updates of shape \[2, 4\] must be indices.shape"):
        _run("ResourceScatterAdd", ["v"], ["indices", "updates"], {"dtype": "float32"}, "float32",
             {"indices": np.array([0, 1], np.int32), "updates": np.ones((2, 4), np.float32)})  # fmt: skip
    with pytest.raises(RuntimeFailure, match=r"grad of shape \[2, 3\] must be \[len\(indices\)\]"):
        _run("ResourceSparseApplyAdagradV2", ["var", "accum"], ["lr", "epsilon", "grad", "indices"], {}, "float32",
             {"lr": np.float32(0.1), "epsilon": np.float32(1e-7), "grad": g, "indices": np.array([0], np.int32)},
             static=False)  # fmt: skip
