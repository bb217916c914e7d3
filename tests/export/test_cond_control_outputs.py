"""A saved function whose cond branches read or assign variables (what AutoGraph's `if` makes):
its control outputs must be live whichever branch runs. A control output inside a branch made
TensorFlow's restored method (``loaded.f(x)``, and any tf.function calling it) return an empty
tensor: TF's inlined call waits on the control outputs, and the untaken branch's are dead. The
Merge closing the cond stands for them (export/function_def._control_outputs)."""

import numpy as np
import pytest

import specflow as sf
from specflow.export.function_def import _cond_paths, _frame_paths
from specflow.io.extra_protos import message_class

SPEC = [sf.TensorSpec([], sf.float32)]


def _var(x):
    return sf.Variable(np.array(x, np.float32))


class _HoldsV(sf.Module):
    def __init__(self):
        super().__init__()
        self.v = _var([10.0, 20.0, 30.0])


class Read(_HoldsV):
    @sf.function(input_signature=SPEC)
    def f(self, n):
        if n > 2:
            y = self.v * 2.0
        else:
            y = self.v + 1.0
        return y


class Nested(_HoldsV):
    def __init__(self):
        super().__init__()
        self.w = _var([1.0, 2.0, 3.0])

    @sf.function(input_signature=SPEC)
    def f(self, n):
        if n > 2:
            if n > 5:
                y = self.v * 3.0
            else:
                y = self.w * 2.0
        else:
            y = self.v + 1.0
        return y


class InWhile(_HoldsV):
    @sf.function(input_signature=SPEC)
    def f(self, n):
        i, acc = sf.constant(0.0), sf.zeros([3])
        while i < n:
            if i > 1:
                acc = acc + self.v
            else:
                acc = acc - 1.0
            i = i + 1.0
        return acc


class ReadAssign(_HoldsV):
    @sf.function(input_signature=SPEC)
    def f(self, n):
        if n > 2:
            y = self.v * 2.0
            self.v.assign(y)
        else:
            y = self.v + 1.0
        return y + self.v


class AssignOnly(_HoldsV):
    @sf.function(input_signature=SPEC)
    def f(self, n):
        if n > 2:
            self.v.assign_add(sf.ones([3]))
        else:
            self.v.assign_sub(sf.ones([3]))
        return n * 1.0


class WhileInCond(_HoldsV):
    @sf.function(input_signature=SPEC)
    def f(self, n):
        acc = sf.zeros([3])
        if n > 2:
            i = sf.constant(0.0)
            while i < n:
                acc = acc + self.v
                self.v.assign_add(sf.ones([3]))
                i = i + 1.0
        else:
            acc = acc - 1.0
        return acc


MODULES = [Read, Nested, InWhile, ReadAssign, AssignOnly, WhileInCond]


def _saved(tmp_path, cls):
    path = tmp_path / cls.__name__
    sf.save(cls(), str(path))
    return path


def _method_function(path):
    """The saved `f`'s FunctionDef (the one the object graph's method calls)."""
    sm = message_class("tensorflow.SavedModel")()
    sm.ParseFromString((path / "saved_model.pb").read_bytes())
    fns = [f for f in sm.meta_graphs[0].graph_def.library.function
           if "_f_" in f.signature.name and "signature_wrapper" not in f.signature.name]  # fmt: skip
    assert len(fns) == 1
    return fns[0]


@pytest.mark.parametrize("cls", MODULES, ids=lambda c: c.__name__)
def test_no_control_output_sits_in_a_cond_branch(tmp_path, cls):
    from specflow.graph.graph_def import NodeDef

    fn = _method_function(_saved(tmp_path, cls))
    body = [NodeDef(n.name, n.op, [i.split(":")[0] if not i.startswith("^") else i for i in n.input], "",
                    {"frame_name": "f"} if n.op == "Enter" else {}) for n in fn.node_def]  # fmt: skip
    args = {a.name for a in fn.signature.input_arg}
    conds = _cond_paths(body, args, _frame_paths(body, args))
    controls = list(fn.control_ret.values())
    assert controls and not [c for c in controls if conds.get(c)]
    if cls is AssignOnly:
        assert controls == ["cond/Merge"]


@pytest.mark.parametrize("cls", MODULES, ids=lambda c: c.__name__)
def test_tensorflow_runs_the_restored_method(tmp_path, cls):
    tf = pytest.importorskip("tensorflow")
    path = _saved(tmp_path, cls)
    for x in (1.0, 4.0, 7.0):
        want_module = cls()
        want = want_module.f(np.float32(x)).numpy()
        for how in ("method", "tf.function", "signature"):
            m = tf.saved_model.load(str(path))
            if how == "method":
                got = m.f(tf.constant(x)).numpy()
            elif how == "tf.function":
                got = tf.function(lambda a, m=m: m.f(a))(tf.constant(x)).numpy()
            else:
                got = m.signatures["serving_default"](n=tf.constant(x))["output_0"].numpy()
            np.testing.assert_allclose(got, want, err_msg=f"{cls.__name__} n={x} via {how}")
            np.testing.assert_allclose(m.v.numpy(), want_module.v.numpy(), err_msg=f"{cls.__name__} n={x} v")
