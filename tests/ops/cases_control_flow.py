"""Control-flow primitives (specflow/ops/control_flow_ops.py): the forwarding kernels."""

import numpy as np

from tests.ops.harness import Case, f32, i32

CASES = [
    Case("Merge", [f32(2, 3), f32(2, 3)], ref=lambda x, y: (x, np.int32(0))),
    Case("Merge", [f32(4), f32(4), f32(4)], ref=lambda *xs: (xs[0], np.int32(0)), id="Merge_3"),
    Case("Enter", [f32(2, 3)], ref=lambda x: x, attrs={"frame_name": "while"}),
    Case("Enter", [i32(3)], ref=lambda x: x, attrs={"frame_name": "f", "is_constant": True}, id="Enter_constant"),
    Case("Exit", [f32(3)], ref=lambda x: x),
    Case("NextIteration", [i32(2, 2)], ref=lambda x: x),
    Case("LoopCond", [np.array(True)], ref=lambda x: x),
    # A true condition passes (no outputs); the failing message is checked in tests/graph/test_control_flow.py.
    Case("Assert", [np.array(True), f32(3), i32(2)], ref=lambda c, x, y: ()),
    # a NoOp to the kernel; what sets it apart (running on dead inputs) is the executor's
    Case("ControlTrigger", [], ref=lambda: ()),
]

EXEMPT = {
    "Switch": "one output is the executor's DEAD marker, not an array; tests/ops/test_control_flow.py",
}
