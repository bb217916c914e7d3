"""The variable fast paths: VarHandleOp hands out one handle per node and session, a handle
remembers the variable it resolved to (ResourceMgr.resolve) until a delete or clear, and both
give way to a fresh lookup whenever the variable behind the name changed."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from specflow.errors import SpecflowError
from specflow.graph.builder import GraphBuilder
from specflow.graph.dtypes import float32
from specflow.graph.shapes import Shape
from specflow.runtime.resources import ResourceHandle, ResourceMgr, Variable
from specflow.runtime.session import Session, SessionConfig


def _graph(handles=(("h", "float32"),)):
    """Per handle node: its VarHandleOp (shared_name "v"), an assign from a fed value, a read
    and a destroy (``ignore_lookup_error=False``), all named after the handle."""
    b = GraphBuilder()
    for h, dtype in handles:
        b.add_op("VarHandleOp", [], {"dtype": dtype, "shape": [2], "shared_name": "v"}, name=h)
        b.add_op("Placeholder", [], {"dtype": dtype, "shape": [2]}, name=f"{h}_value")
        b.add_op("AssignVariableOp", [h, f"{h}_value"], {"dtype": dtype}, name=f"{h}_assign")
        b.add_op("ReadVariableOp", [h], {"dtype": dtype}, name=f"{h}_read")
        b.add_op("DestroyResourceOp", [h], {"ignore_lookup_error": False}, name=f"{h}_destroy")
    return b.graph_def


def _assign(sess, value, h="h", dtype=np.float32):
    sess.run([], {f"{h}_value": np.asarray(value, dtype)}, targets=[f"{h}_assign"])


def test_each_session_keeps_its_own_handle_and_variable():
    graph = _graph()
    with Session(graph) as s1, Session(graph) as s2:
        _assign(s1, [1, 1])
        _assign(s2, [2, 2])
        for _ in range(3):  # interleaved steps: neither session sees the other's variable
            np.testing.assert_array_equal(s1.run("h_read"), [1, 1])
            np.testing.assert_array_equal(s2.run("h_read"), [2, 2])
        # One handle per node and session, handed out again every step.
        assert s1.run("h") is s1.run("h")
        assert s1.run("h") is not s2.run("h")


def test_a_destroyed_variable_is_looked_up_and_recreated_as_before():
    with Session(_graph()) as sess:
        _assign(sess, [1, 2])
        np.testing.assert_array_equal(sess.run("h_read"), [1, 2])
        sess.run([], targets=["h_destroy"])
        with pytest.raises(SpecflowError, match="'v' was read before it was initialized"):
            sess.run("h_read")
        # Every step's VarHandleOp re-creates the (uninitialized) variable, so a second strict
        # destroy finds one to delete, as it did before handles were cached.
        sess.run([], targets=["h_destroy"])
        _assign(sess, [5, 6])
        np.testing.assert_array_equal(sess.run("h_read"), [5, 6])


def test_a_variable_recreated_with_another_dtype_is_checked_again():
    with Session(_graph((("f", "float32"), ("i", "int32"))), SessionConfig(devices="cpu:1")) as sess:
        _assign(sess, [1, 2], "f")
        np.testing.assert_array_equal(sess.run("f_read"), [1, 2])
        sess.run([], targets=["f_destroy"])
        _assign(sess, [3, 4], "i", np.int32)  # the name now holds an int32 variable
        with pytest.raises(SpecflowError, match="variable 'v' already exists as int32"):
            sess.run("f_read")
        np.testing.assert_array_equal(sess.run("i_read"), [3, 4])


def test_resolve_remembers_until_delete_or_clear():
    mgr, other = ResourceMgr("/device:CPU:0"), ResourceMgr("/device:CPU:1")
    var = mgr.lookup_or_create("", "v", lambda: Variable("v", float32, Shape([2])))
    elsewhere = other.lookup_or_create("", "v", lambda: Variable("v", float32, Shape([2])))
    h = ResourceHandle("/device:CPU:0", "", "v", float32, Shape([2]))
    assert mgr.resolve(h) is var and mgr.resolve(h) is var
    assert other.resolve(h) is elsewhere  # remembered per manager, never across them
    assert mgr.resolve(h) is var
    mgr.delete("", "v")
    assert mgr.resolve(h) is None
    again = mgr.lookup_or_create("", "v", lambda: Variable("v", float32, Shape([2])))
    assert mgr.resolve(h) is again
    mgr.clear()
    assert mgr.resolve(h) is None
    assert mgr.resolve(ResourceHandle("/device:CPU:0", "", "missing")) is None


def test_copies_of_a_handle_name_the_resource_without_what_it_resolved_to():
    mgr = ResourceMgr()
    mgr.lookup_or_create("c", "v", lambda: Variable("v", float32, Shape([2])))
    h = ResourceHandle("/device:CPU:0", "c", "v", float32, Shape([2]))
    mgr.resolve(h)
    for twin in (copy.copy(h), pickle.loads(pickle.dumps(h))):
        assert (twin.device, twin.container, twin.name, twin.dtype, twin.shape) == (
            h.device, h.container, h.name, h.dtype, h.shape
        )  # fmt: skip
        assert twin._found is None
        assert mgr.resolve(twin) is mgr.get("c", "v")
