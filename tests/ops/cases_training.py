"""Optimizer apply ops update resource variables, which ``evaluate_op`` cannot provide; they are
tested through a Session in tests/train/test_training_ops.py."""

from specflow.ops import sparse_training_ops, training_ops  # noqa: F401  (registers the ops listed below)

_WHERE = "tests/train/test_training_ops.py (needs resource variables)"

EXEMPT = {
    op: _WHERE
    for op in (
        "ResourceApplyGradientDescent",
        "ResourceApplyMomentum",
        "ResourceApplyKerasMomentum",
        "ResourceApplyAdam",
        "ResourceApplyRMSProp",
        "ResourceApplyCenteredRMSProp",
        "ResourceApplyAdagradV2",
    )
}
EXEMPT.update({
    op: "tests/train/test_sparse_training_ops.py (needs resource variables)"
    for op in (
        "ResourceScatterAdd",
        "ResourceScatterSub",
        "ResourceScatterUpdate",
        "ResourceSparseApplyAdagradV2",
        "ResourceSparseApplyMomentum",
        "ResourceSparseApplyKerasMomentum",
    )
})

CASES: list = []
