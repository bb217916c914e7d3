"""TF1's TensorArray ops (specflow/ops/tensor_array_v3_ops.py) carry float "flow" scalars, so the
gradient check sees float inputs and outputs; specflow's autodiff has no gradient for them."""

_WHY = ("TF1 TensorArray: a graph's own tf.gradients ops (TensorArrayGradV3 and the grad array's "
        "reads and writes) run, tests/export/test_tf2_sweep.py; no specflow gradient is built")

NO_GRADIENT = {op: _WHY for op in ("TensorArrayGradV3", "TensorArrayWriteV3", "TensorArrayReadV3",
                                   "TensorArrayGatherV3", "TensorArrayScatterV3", "TensorArrayConcatV3",
                                   "TensorArraySplitV3")}

CASES: list = []
