"""Cases for the ops gradients use (grad_util): BroadcastGradientArgs.

Expected values are literal, as TF's BCast gives them: an input reduces over every output axis
where it has (or is padded to) size 1, even where the other input has size 1 too; equal shapes
reduce over nothing."""

import numpy as np

from tests.ops.harness import Case


def _bga_case(s0, s1, r0, r1, dtype, id):
    return Case("BroadcastGradientArgs", [np.array(s0, dtype), np.array(s1, dtype)],
                ref=lambda a, c: (np.array(r0, dtype), np.array(r1, dtype)), exact_shape=False, id=id)


CASES = [
    _bga_case([2, 3, 1], [3, 4], [2], [0], np.int32, "BroadcastGradientArgs-literal"),
    # s0 padded to [1, 5, 1]: axis 0 is 1 in both, so both reduce over it (a broken result that
    # skipped padded leading axes would give r0 = [2]).
    _bga_case([5, 1], [1, 1, 7], [0, 2], [0, 1], np.int64, "BroadcastGradientArgs-rank-differs"),
    _bga_case([4], [2, 3, 4], [0, 1], [], np.int32, "BroadcastGradientArgs-padded-only"),
    _bga_case([1, 1], [1, 1], [], [], np.int32, "BroadcastGradientArgs-equal-ones"),
    _bga_case([], [2, 1], [0, 1], [1], np.int32, "BroadcastGradientArgs-scalar"),
]
