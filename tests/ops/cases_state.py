"""Resource-variable ops need a resource manager, which ``evaluate_op`` does not provide; they
are exercised through ``run_kernel`` with a ResourceMgr in tests/ops/test_state_ops.py."""

_WHERE = "tests/ops/test_state_ops.py (needs a ResourceMgr)"

EXEMPT = {
    op: _WHERE
    for op in (
        "VarHandleOp",
        "ReadVariableOp",
        "AssignVariableOp",
        "AssignAddVariableOp",
        "AssignSubVariableOp",
        "VarIsInitializedOp",
        "DestroyResourceOp",
        "ResourceGather",
        "VariableShape",
        "_IncrementBelow",
    )
}

CASES: list = []
