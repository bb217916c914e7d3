"""Resource-variable ops run through ``run_kernel`` with a real ResourceMgr, and their shape
functions through GraphBuilder (handle data carries the variable's dtype and shape)."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.errors import OpError, ShapeError
from specflow.graph.builder import GraphBuilder
from specflow.graph.dtypes import as_dtype, resource
from specflow.graph.graph_def import NodeDef
from specflow.graph.shapes import Shape
from specflow.ops import get_op
from specflow.ops.eval import run_kernel
from specflow.ops.registry import KernelContext, bind_attrs
from specflow.runtime.resources import ResourceHandle, ResourceMgr, Variable

DEVICE = "/device:CPU:0"


class Runner:
    """Runs state-op kernels against one ResourceMgr, as a session's executor would."""

    def __init__(self):
        self.resources = ResourceMgr(DEVICE)

    def __call__(self, op: str, inputs=(), name: str = "node", **attrs) -> list:
        in_dtypes = [resource if isinstance(x, ResourceHandle) else as_dtype(np.asarray(x).dtype) for x in inputs]
        bound = bind_attrs(get_op(op), in_dtypes, attrs, node=name)
        node = NodeDef(name=name, op=op, inputs=[f"in{i}" for i in range(len(inputs))], attrs=bound)
        ctx = KernelContext(node=node, attrs=bound, device=DEVICE, resources=self.resources)
        return run_kernel(node, list(inputs), bound, ctx=ctx)

    def handle(self, name="v", dtype="float32", shape=(2, 3), **attrs) -> ResourceHandle:
        return self(op="VarHandleOp", name=name, dtype=dtype, shape=list(shape), **attrs)[0]

    def read(self, h: ResourceHandle, dtype="float32") -> np.ndarray:
        return self("ReadVariableOp", [h], name="read", dtype=dtype)[0]


@pytest.fixture
def run() -> Runner:
    return Runner()


V = np.arange(6, dtype=np.float32).reshape(2, 3)


def test_var_handle_creates_an_uninitialized_variable(run):
    h = run.handle()
    assert (h.device, h.container, h.name, h.dtype, h.shape) == (DEVICE, "", "v", as_dtype("float32"), Shape([2, 3]))
    var = run.resources.lookup("", "v")
    assert isinstance(var, Variable) and not var.initialized
    # A second handle to the same name shares the variable.
    assert run.handle() is not h and run.resources.lookup("", "v") is var


def test_shared_name_and_container(run):
    h = run.handle(name="node_name", shared_name="weights", container="c1")
    assert (h.container, h.name) == ("c1", "weights")
    assert run.resources.get("c1", "weights") is not None and run.resources.get("", "node_name") is None


def test_conflicting_redeclaration_is_an_error(run):
    run.handle()
    with pytest.raises(OpError, match="already exists as float32"):
        run.handle(dtype="float64")
    with pytest.raises(OpError, match="already exists"):
        run.handle(shape=(3, 2))


def test_assign_read_and_snapshot_semantics(run):
    h = run.handle()
    value = V.copy()
    assert run("AssignVariableOp", [h, value], name="assign") == []
    value[0, 0] = 100.0  # the variable holds its own copy
    got = run.read(h)
    np.testing.assert_array_equal(got, V)
    run("AssignAddVariableOp", [h, np.ones_like(V)], name="add")
    np.testing.assert_array_equal(got, V)  # an earlier read is a snapshot
    np.testing.assert_array_equal(run.read(h), V + 1)
    run("AssignSubVariableOp", [h, np.full_like(V, 3)], name="sub")
    np.testing.assert_array_equal(run.read(h), V - 2)
    got[:] = -1  # mutating a read value leaves the variable alone
    np.testing.assert_array_equal(run.read(h), V - 2)


def test_reads_share_storage_and_updates_never_mutate_it(run):
    h = run.handle()
    run("AssignVariableOp", [h, V], name="assign")
    first = run.read(h)
    assert run.read(h) is first  # reads hand out the stored array: no copy per step
    run("AssignAddVariableOp", [h, np.ones_like(V)], name="add")
    np.testing.assert_array_equal(first, V)  # the earlier read is untouched
    after = run.read(h)
    assert after is not first and after.dtype == V.dtype
    np.testing.assert_array_equal(after, V + 1)


def test_partial_declared_shape_accepts_any_fitting_value(run):
    h = run.handle(shape=(None, 3))
    run("AssignVariableOp", [h, np.zeros((5, 3), np.float32)], name="assign")
    assert run.read(h).shape == (5, 3)
    with pytest.raises(OpError, match=r"shape \[5, 4\]"):
        run("AssignVariableOp", [h, np.zeros((5, 4), np.float32)], name="assign")


@pytest.mark.parametrize(
    "op,inputs,attrs",
    [
        ("ReadVariableOp", [], {"dtype": "float32"}),
        ("AssignAddVariableOp", [np.ones((2, 3), np.float32)], {}),
        ("AssignSubVariableOp", [np.ones((2, 3), np.float32)], {}),
        ("ResourceGather", [np.array([0], np.int32)], {"dtype": "float32"}),
    ],
)
def test_uninitialized_use_names_the_variable_and_the_fix(run, op, inputs, attrs):
    h = run.handle(name="hidden/kernel")
    with pytest.raises(OpError, match=r"variable 'hidden/kernel' was (read|updated) before it was initialized") as e:
        run(op, [h, *inputs], name="user", **attrs)
    assert "init" in str(e.value) and e.value.node == "user"


def test_dtype_and_shape_mismatches(run):
    h = run.handle()
    with pytest.raises(OpError, match="holds float32 but AssignVariableOp assigns float64"):
        run("AssignVariableOp", [h, V.astype(np.float64)], name="assign")
    with pytest.raises(OpError, match=r"cannot assign a value of shape \[3, 2\] to variable 'v'"):
        run("AssignVariableOp", [h, V.reshape(3, 2)], name="assign")
    run("AssignVariableOp", [h, V], name="assign")
    with pytest.raises(OpError, match="holds float32 but ReadVariableOp uses dtype int32"):
        run.read(h, dtype="int32")
    with pytest.raises(OpError, match="shapes must be equal"):
        run("AssignAddVariableOp", [h, np.ones((3,), np.float32)], name="add")
    with pytest.raises(OpError, match="uses dtype float64"):
        run("AssignSubVariableOp", [h, np.ones((2, 3), np.float64)], name="sub")


def test_variable_shape_is_the_current_values_shape(run):
    """TF's gradient of a variable read inside a while loop asks VariableShape (Keras LSTM/GRU)."""
    h = run.handle()
    with pytest.raises(OpError, match="before it was initialized"):
        run("VariableShape", [h], name="shape")
    run("AssignVariableOp", [h, V], name="assign")
    out = run("VariableShape", [h], name="shape")[0]
    assert out.dtype == np.int32 and out.tolist() == [2, 3]
    assert run("VariableShape", [h], name="shape", out_type="int64")[0].dtype == np.int64


def test_assign_add_on_bool_has_no_kernel(run):
    h = run.handle(dtype="bool", shape=())
    with pytest.raises(OpError, match="no CPU kernel for AssignAddVariableOp"):
        run("AssignAddVariableOp", [h, np.bool_(True)], name="add")


def test_is_initialized_and_destroy(run):
    h = run.handle()
    initialized = lambda: bool(run("VarIsInitializedOp", [h], name="init?")[0])  # noqa: E731
    out = run("VarIsInitializedOp", [h], name="init?")[0]
    assert out.dtype == np.bool_ and out.shape == ()
    assert not initialized()
    run("AssignVariableOp", [h, V], name="assign")
    assert initialized()
    assert run("DestroyResourceOp", [h], name="destroy") == []
    assert run.resources.get("", "v") is None and not initialized()
    with pytest.raises(OpError, match="before it was initialized"):
        run.read(h)
    run("DestroyResourceOp", [h], name="destroy")  # ignore_lookup_error defaults to true
    with pytest.raises(OpError, match="does not exist"):
        run("DestroyResourceOp", [h], name="destroy", ignore_lookup_error=False)
    # Assigning through the handle re-creates the variable, as TensorFlow does.
    run("AssignVariableOp", [h, V], name="assign")
    np.testing.assert_array_equal(run.read(h), V)


def test_resource_gather_embedding_lookup(run):
    table = np.arange(20, dtype=np.float32).reshape(5, 4)
    h = run.handle(name="emb", shape=(5, 4))
    run("AssignVariableOp", [h, table], name="assign")
    idx = np.array([[0, 4], [2, 2], [1, 0]], np.int64)
    got = run("ResourceGather", [h, idx], name="lookup", dtype="float32")[0]
    np.testing.assert_array_equal(got, table[idx])
    scalar = run("ResourceGather", [h, np.int32(3)], name="lookup", dtype="float32")[0]
    np.testing.assert_array_equal(scalar, table[3])
    got[:] = 0  # gathered rows are copies
    np.testing.assert_array_equal(run.read(h), table)


def test_resource_gather_batch_dims(run):
    params = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    h = run.handle(shape=(2, 3, 4))
    run("AssignVariableOp", [h, params], name="assign")
    idx = np.array([[2, 0], [1, 1]], np.int32)
    got = run("ResourceGather", [h, idx], name="g", dtype="float32", batch_dims=1)[0]
    want = np.stack([params[i][idx[i]] for i in range(2)])
    np.testing.assert_array_equal(got, want)
    assert got.shape == (2, 2, 4)


@pytest.mark.parametrize("bad", [5, -1])
def test_resource_gather_rejects_out_of_range_indices(run, bad):
    h = run.handle(shape=(5, 4))
    run("AssignVariableOp", [h, np.zeros((5, 4), np.float32)], name="assign")
    with pytest.raises(OpError, match=rf"indices\[1\] = {bad} is not in \[0, 5\)"):
        run("ResourceGather", [h, np.array([0, bad], np.int32)], name="g", dtype="float32")


def test_missing_resource_manager_is_an_internal_error():
    bound = bind_attrs(get_op("VarHandleOp"), [], {"dtype": "float32", "shape": [2]}, node="v")
    node = NodeDef(name="v", op="VarHandleOp", attrs=bound)
    with pytest.raises(OpError, match="internal error: VarHandleOp needs its device's resource manager"):
        run_kernel(node, [], bound, ctx=KernelContext(node=node, attrs=bound))


def test_all_state_ops_are_stateful():
    for op in (
        "VarHandleOp", "ReadVariableOp", "AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp",
        "VarIsInitializedOp", "DestroyResourceOp", "ResourceGather", "VariableShape",
    ):  # fmt: skip
        assert get_op(op).is_stateful, op


# --- shape functions through GraphBuilder -----------------------------------------------------


def _graph_with_variable(shape=(5, 4), dtype="float32"):
    b = GraphBuilder()
    h = b.add_op("VarHandleOp", attrs={"dtype": dtype, "shape": list(shape)}, name="emb").name
    return b, h


def test_shape_functions_of_state_ops():
    b, h = _graph_with_variable()
    assert b.spec(h).dtype == resource and b.spec(h).shape == Shape.scalar()
    assert b.value(h) is None  # resources are never constant-folded
    read = b.add_op("ReadVariableOp", [h], {"dtype": "float32"}, name="read").name
    assert b.spec(read).shape == Shape([5, 4]) and b.spec(read).dtype == as_dtype("float32")
    idx = b.add_op("Placeholder", attrs={"dtype": "int64", "shape": [None, 7]}, name="idx").name
    gather = b.add_op("ResourceGather", [h, idx], {"dtype": "float32"}, name="gather").name
    assert b.spec(gather).shape == Shape([None, 7, 4])
    value = b.const(np.zeros((5, 4), np.float32), name="zeros")
    for op in ("AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"):
        assert b.inferencer.specs[b.add_op(op, [h, value], name=op).name] == []
    assert b.inferencer.specs[b.add_op("DestroyResourceOp", [h], name="destroy").name] == []
    init = b.add_op("VarIsInitializedOp", [h], name="is_init").name
    assert b.spec(init).dtype == as_dtype("bool") and b.spec(init).shape == Shape.scalar()


def test_gather_shape_with_batch_dims():
    b, h = _graph_with_variable(shape=(2, 3, 4))
    idx = b.add_op("Placeholder", attrs={"dtype": "int32", "shape": [None, 6]}, name="idx").name
    g = b.add_op("ResourceGather", [h, idx], {"dtype": "float32", "batch_dims": 1}, name="g").name
    assert b.spec(g).shape == Shape([2, 6, 4])
    with pytest.raises(ShapeError, match="batch_dims=3"):
        b.add_op("ResourceGather", [h, idx], {"dtype": "float32", "batch_dims": 3}, name="g2")


def test_static_shape_and_dtype_errors():
    b, h = _graph_with_variable()
    wrong = b.const(np.zeros((4, 5), np.float32), name="wrong")
    with pytest.raises(ShapeError, match=r"cannot assign a value of shape \[4, 5\] to a variable of shape \[5, 4\]"):
        b.add_op("AssignVariableOp", [h, wrong], name="assign")
    with pytest.raises(ShapeError, match="holds float32 but this op uses dtype float64"):
        b.add_op("ReadVariableOp", [h], {"dtype": "float64"}, name="read")


def test_increment_below_counts_up_to_the_limit_then_refuses_and_changes_nothing(run):
    """Async training's admission of an update (the global step on its ps): concurrent callers
    get in exactly limit - start times; the rest fail with StepLimitReached (TF's OutOfRange)."""
    import threading

    from specflow.errors import StepLimitReached

    h = run.handle(dtype="int64", shape=())
    run("AssignVariableOp", [h, np.int64(3)], name="init", dtype="int64")
    held = run.read(h, "int64")
    admitted, refused = [], []

    def update():
        try:
            run("_IncrementBelow", [h, np.int64(10)], name="admit", dtype="int64")
            admitted.append(1)
        except StepLimitReached as e:
            refused.append(e)

    threads = [threading.Thread(target=update) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(admitted) == 7 and len(refused) == 9 and int(run.read(h, "int64")) == 10
    assert "the last step 10: this update arrived after the run's last step and is dropped" in refused[0].message
    assert int(held) == 3  # a value handed out never changes
