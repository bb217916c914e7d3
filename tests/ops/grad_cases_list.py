"""TensorList gradients take or give a list (a variant), which the single-op harness can neither
perturb nor sum: tests/ops/test_list_grads.py checks them through chains of list ops."""

CASES: list = []

_WHERE = "finite differences through list-op chains in tests/ops/test_list_grads.py"
TESTED_ELSEWHERE = {op: _WHERE for op in ("TensorListFromTensor", "TensorListGetItem", "TensorListSetItem",
                                          "TensorListStack", "TensorListPushBack", "TensorListPopBack",
                                          "TensorListResize", "TensorListGather", "TensorListScatterIntoExistingList",
                                          "TensorListConcatV2", "TensorListSplit")}
