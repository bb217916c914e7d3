"""ResourceApply* kernels in a Session against numpy transcriptions of TensorFlow's update rules,
in every float dtype, and their errors (uninitialized variables, shape and dtype mismatches)."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.errors import DeviceError, RuntimeFailure, ShapeError
from specflow.graph.builder import GraphBuilder
from specflow.runtime.session import Session, SessionConfig
from specflow.schema.layers.variables import create_variable

RNG = np.random.default_rng(7)
SHAPE = (2, 3)


# numpy references: (variables, scalars, grad, attrs) -> new variables, as documented in TF.
def _sgd(vs, s, g, a):
    return [vs[0] - s["alpha"] * g]


def _momentum(vs, s, g, a):
    var, accum = vs
    accum = accum * s["momentum"] + g
    if a.get("use_nesterov"):
        return [var - s["lr"] * g - s["lr"] * s["momentum"] * accum, accum]
    return [var - s["lr"] * accum, accum]


def _keras_momentum(vs, s, g, a):
    var, accum = vs
    accum = accum * s["momentum"] - s["lr"] * g
    if a.get("use_nesterov"):
        return [var + accum * s["momentum"] - s["lr"] * g, accum]
    return [var + accum, accum]


def _adam(vs, s, g, a):
    var, m, v = vs
    lr_t = s["lr"] * np.sqrt(1 - s["beta2_power"]) / (1 - s["beta1_power"])
    m = s["beta1"] * m + (1 - s["beta1"]) * g
    v = s["beta2"] * v + (1 - s["beta2"]) * g * g
    step = s["beta1"] * m + (1 - s["beta1"]) * g if a.get("use_nesterov") else m
    return [var - lr_t * step / (np.sqrt(v) + s["epsilon"]), m, v]


def _rmsprop(vs, s, g, a):
    var, ms, mom = vs
    ms = s["rho"] * ms + (1 - s["rho"]) * g * g
    mom = s["momentum"] * mom + s["lr"] * g / np.sqrt(ms + s["epsilon"])
    return [var - mom, ms, mom]


def _centered_rmsprop(vs, s, g, a):
    var, mg, ms, mom = vs
    mg = s["rho"] * mg + (1 - s["rho"]) * g
    ms = s["rho"] * ms + (1 - s["rho"]) * g * g
    mom = s["momentum"] * mom + s["lr"] * g / np.sqrt(ms - mg * mg + s["epsilon"])
    return [var - mom, mg, ms, mom]


def _adagrad(vs, s, g, a):
    var, accum = vs
    if a.get("update_slots", True):
        accum = accum + g * g
    return [var - s["lr"] * g / (np.sqrt(accum) + s["epsilon"]), accum]


HYPER = {"lr": 0.1, "momentum": 0.9, "beta1_power": 0.81, "beta2_power": 0.998, "beta1": 0.9, "beta2": 0.999,
         "epsilon": 1e-3, "rho": 0.9, "alpha": 0.1}  # fmt: skip

# op, variable inputs, tensor inputs (in TF's order), reference, attrs
OPS = [
    ("ResourceApplyGradientDescent", ["var"], ["alpha", "delta"], _sgd, {}),
    ("ResourceApplyMomentum", ["var", "accum"], ["lr", "grad", "momentum"], _momentum, {}),
    ("ResourceApplyMomentum", ["var", "accum"], ["lr", "grad", "momentum"], _momentum, {"use_nesterov": True}),
    ("ResourceApplyKerasMomentum", ["var", "accum"], ["lr", "grad", "momentum"], _keras_momentum, {}),
    ("ResourceApplyKerasMomentum", ["var", "accum"], ["lr", "grad", "momentum"], _keras_momentum,
     {"use_nesterov": True}),
    ("ResourceApplyAdam", ["var", "m", "v"],
     ["beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon", "grad"], _adam, {}),
    ("ResourceApplyAdam", ["var", "m", "v"],
     ["beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon", "grad"], _adam, {"use_nesterov": True}),
    ("ResourceApplyRMSProp", ["var", "ms", "mom"], ["lr", "rho", "momentum", "epsilon", "grad"], _rmsprop, {}),
    ("ResourceApplyCenteredRMSProp", ["var", "mg", "ms", "mom"], ["lr", "rho", "momentum", "epsilon", "grad"],
     _centered_rmsprop, {}),
    ("ResourceApplyAdagradV2", ["var", "accum"], ["lr", "epsilon", "grad"], _adagrad, {}),
    ("ResourceApplyAdagradV2", ["var", "accum"], ["lr", "epsilon", "grad"], _adagrad, {"update_slots": False}),
]  # fmt: skip


def _initial(name: str, dtype) -> np.ndarray:
    if name in ("ms", "accum", "v"):  # accumulators of squares stay positive
        return RNG.uniform(0.5, 1.5, SHAPE).astype(dtype)
    if name == "mg":
        return RNG.uniform(-0.3, 0.3, SHAPE).astype(dtype)
    return RNG.uniform(-1, 1, SHAPE).astype(dtype)


class ApplyGraph:
    """Variables initialized to known values, every tensor input a Placeholder, one apply op."""

    def __init__(self, op, variables, tensors, attrs, dtype, grad_shape=SHAPE, init=True):
        b = GraphBuilder()
        self.values = {v: _initial(v, dtype) for v in variables}
        self.vars = {v: create_variable(b, v, SHAPE, dtype, {"constant": self.values[v].tolist()}) for v in variables}
        grad = "delta" if "delta" in tensors else "grad"
        self.feeds = {}
        inputs = [self.vars[v].handle for v in variables]
        for t in tensors:
            # A misfit gradient gets an unknown static shape, so only the kernel can catch it.
            shape = ([None] * len(grad_shape) if grad_shape != SHAPE else list(SHAPE)) if t == grad else []
            ph = b.add_op("Placeholder", attrs={"dtype": dtype, "shape": shape}, name=t).name
            self.feeds[ph] = RNG.uniform(-1, 1, grad_shape).astype(dtype) if t == grad else np.asarray(HYPER[t], dtype)
            inputs.append(ph)
        self.grad = self.feeds[grad]
        self.op = b.add_op(op, inputs, attrs, name="apply").name
        self.init = b.add_op("NoOp", name="init", control_inputs=b.collections["init_ops"]).name
        self.session = Session(b.graph_def, SessionConfig(devices="cpu:1"))  # (the tests read its CPU storage)
        if init:
            self.session.run([], targets=[self.init])

    def read(self, names):
        return self.session.run([self.vars[v].read for v in names])

    def step(self):
        self.session.run([], feeds=self.feeds, targets=[self.op])


TOL = {"float16": 2e-3, "float32": 1e-5, "float64": 1e-12}


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("op,variables,tensors,ref,attrs", OPS, ids=[f"{o[0]}{o[4] or ''}" for o in OPS])
def test_apply_matches_tensorflow_rule(op, variables, tensors, ref, attrs, dtype):
    g = ApplyGraph(op, variables, tensors, attrs, dtype)
    want = [g.values[v].astype(np.float64) for v in variables]
    scalars = {t: float(g.feeds[t]) for t in tensors if np.ndim(g.feeds[t]) == 0}
    for _ in range(3):
        g.step()
        want = ref(want, scalars, g.grad.astype(np.float64), attrs)
    for name, got, w in zip(variables, g.read(variables), want):
        assert got.dtype == np.dtype(dtype), name
        np.testing.assert_allclose(got, w, rtol=TOL[dtype], atol=TOL[dtype], err_msg=name)


def test_a_value_read_before_the_update_is_never_mutated():
    op, variables, tensors, _, _ = next(o for o in OPS if o[0] == "ResourceApplyAdam")
    g = ApplyGraph(op, variables, tensors, {}, "float32")
    before = g.read(["var", "m", "v"])
    copies = [x.copy() for x in before]
    g.step()
    for kept, copy, after in zip(before, copies, g.read(["var", "m", "v"])):
        np.testing.assert_array_equal(kept, copy)
        assert not np.array_equal(after, copy)


def test_uninitialized_variable_is_named():
    g = ApplyGraph("ResourceApplyKerasMomentum", ["var", "accum"], ["lr", "grad", "momentum"], {}, "float32",
                   init=False)  # fmt: skip
    with pytest.raises(RuntimeFailure, match="variable '(var|accum)' was updated by ResourceApplyKerasMomentum before"):
        g.step()


def test_gradient_shape_mismatch_names_the_variable_at_run_time():
    g = ApplyGraph("ResourceApplyGradientDescent", ["var"], ["alpha", "delta"], {}, "float32", grad_shape=(3, 2))
    with pytest.raises(RuntimeFailure, match=r"gradient of shape \[3, 2\] does not match variable 'var'"):
        g.step()


def _static_graph(var_shape, slot_shape, grad_shape, lr_shape=(), dtype="float32", slot_dtype="float32"):
    b = GraphBuilder()
    var = create_variable(b, "w", var_shape, dtype, "zeros")
    slot = create_variable(b, "w/Momentum", slot_shape, slot_dtype, "zeros", trainable=False)
    lr = b.add_op("Placeholder", attrs={"dtype": dtype, "shape": list(lr_shape)}, name="lr").name
    grad = b.add_op("Placeholder", attrs={"dtype": dtype, "shape": list(grad_shape)}, name="grad").name
    mom = b.const(0.9, dtype, name="momentum")
    return b.add_op("ResourceApplyKerasMomentum", [var.handle, slot.handle, lr, grad, mom], name="apply")


def test_shape_function_checks_variables_and_scalars():
    _static_graph([2, 3], [2, 3], [None, 3])  # a partially known gradient fits
    with pytest.raises(ShapeError, match=r"gradient of shape \[3\] does not fit variable 'w'"):
        _static_graph([2, 3], [2, 3], [3])
    with pytest.raises(ShapeError, match="variable 'w/Momentum' \\(accum\\) has shape \\[3\\]"):
        _static_graph([2, 3], [3], [2, 3])
    with pytest.raises(ShapeError, match="'lr' must be a scalar"):
        _static_graph([2, 3], [2, 3], [2, 3], lr_shape=(1,))
    with pytest.raises(ShapeError, match="holds float64 but T is float32"):
        _static_graph([2, 3], [2, 3], [2, 3], slot_dtype="float64")


def test_integer_variables_have_no_kernel():
    b = GraphBuilder()
    var = create_variable(b, "n", [2], "int32", "zeros")
    delta = b.const(np.ones(2, np.int32), name="delta")
    alpha = b.const(np.int32(1), name="alpha")
    op = b.add_op("ResourceApplyGradientDescent", [var.handle, alpha, delta], name="apply").name
    with pytest.raises(DeviceError, match=r"no CPU kernel for T=int32.*kernels of 'apply': CPU\[float\]"):
        Session(b.graph_def, SessionConfig(devices="cpu:1")).run([], targets=[op])


def _stored(g: ApplyGraph, name: str):
    return g.session.devices[0].resource_mgr.get("", name)


def test_an_update_nothing_else_holds_runs_in_place():
    op, variables, tensors, _, _ = next(o for o in OPS if o[0] == "ResourceApplyAdam")
    g = ApplyGraph(op, variables, tensors, {}, "float32")
    before = {n: id(_stored(g, n).value) for n in ("var", "m", "v")}  # ids only: no reference kept
    g.step()
    g.step()
    assert {n: id(_stored(g, n).value) for n in ("var", "m", "v")} == before
    assert not np.array_equal(g.read(["var"])[0], g.values["var"])


def test_an_update_takes_the_lock_of_a_recreated_variable():
    """The kernel reuses its last lock order while its variables are the same objects: one
    destroyed and initialized again is another, whose lock the update must take (a stale lock
    would let this step run while another thread holds the new variable)."""
    import threading

    op, variables, tensors, _, _ = next(o for o in OPS if o[0] == "ResourceApplyAdam")
    g = ApplyGraph(op, variables, tensors, {}, "float32")
    g.step()
    g.session.devices[0].resource_mgr.delete("", "m")
    g.session.run([], targets=[g.init])  # m back at its initial value, in a new Variable
    new = _stored(g, "m")
    started, finished = threading.Event(), threading.Event()

    def step():
        started.set()
        g.step()
        finished.set()

    with new.lock:
        worker = threading.Thread(target=step)
        worker.start()
        started.wait()
        assert not finished.wait(0.3)  # waiting for m's lock
    worker.join(10)
    assert finished.is_set()
    m = g.read(["m"])[0]
    np.testing.assert_allclose(m, g.values["m"] + (g.grad - g.values["m"]) * (1 - HYPER["beta1"]), rtol=1e-5)


def test_a_fetched_value_never_changes_in_the_same_step_or_later_ones():
    g = ApplyGraph("ResourceApplyGradientDescent", ["var"], ["alpha", "delta"], {}, "float32")
    read = g.vars["var"].read
    # Read and update in one step: whichever ran first, the fetched array must stay as fetched.
    fetched = g.session.run(read, feeds=g.feeds, targets=[g.op])
    kept = fetched.copy()
    held = _stored(g, "var").value  # a reference held outside any step
    held_copy = held.copy()
    for _ in range(3):
        g.step()
    np.testing.assert_array_equal(fetched, kept)
    np.testing.assert_array_equal(held, held_copy)
    np.testing.assert_allclose(g.read(["var"])[0], held_copy - 3 * HYPER["alpha"] * g.grad, rtol=1e-5)


def test_assign_add_leaves_a_fetched_value_alone():
    b = GraphBuilder()
    var = create_variable(b, "n", [], "int64", "zeros")
    one = b.const(np.int64(1), "int64", name="one")
    add = b.add_op("AssignAddVariableOp", [var.handle, one], {"dtype": "int64"}, name="add").name
    init = b.add_op("NoOp", name="init", control_inputs=b.collections["init_ops"]).name
    with Session(b.graph_def) as sess:
        sess.run([], targets=[init])
        first = sess.run(var.read)
        for _ in range(3):
            sess.run([], targets=[add])
        assert first == 0 and sess.run(var.read) == 3
