"""Queue and TensorArray ops (specflow/ops/data_flow_ops.py, tensor_array_v3_ops.py). Queue ops need a resource manager and, for the waiting ones,
a step to resume: they run through a Session in tests/train/test_queues.py."""

_WHERE = "needs a ResourceMgr and a running step; tests/train/test_queues.py"

EXEMPT = {
    op: _WHERE
    for op in (
        "FIFOQueueV2",
        "RandomShuffleQueueV2",
        "QueueEnqueueV2",
        "QueueEnqueueManyV2",
        "QueueDequeueV2",
        "QueueDequeueManyV2",
        "QueueDequeueUpToV2",
        "QueueCloseV2",
        "QueueSizeV2",
        "QueueIsClosedV2",
    )
}

# TF1's TensorArray ops: a handle holding its array, ordered by flow scalars; they run in
# graphs (TF's fixtures) and traced sf.functions.
EXEMPT.update({
    op: "a handle that holds its array; tests/export/test_tf2_sweep.py runs them in graphs"
    for op in ("TensorArrayV3", "TensorArrayGradV3", "TensorArrayWriteV3", "TensorArrayReadV3",
               "TensorArrayGatherV3", "TensorArrayScatterV3", "TensorArrayConcatV3", "TensorArraySplitV3",
               "TensorArraySizeV3", "TensorArrayCloseV3")
})

CASES: list = []
