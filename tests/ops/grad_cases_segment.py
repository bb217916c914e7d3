"""Gradient cases for segment_ops (ties in Max/Min split the gradient; zeros in Prod)."""

import numpy as np

from tests.ops.grad_harness import GradCase, away_from, g64

_ids = np.array([2, 0, -1, 2, 1], np.int32)

CASES = [
    GradCase("SegmentSum", [g64(6, 2), np.array([0, 0, 1, 3, 3, 3], np.int32)]),
    GradCase("SegmentMean", [g64(6, 2), np.array([0, 0, 1, 3, 3, 3], np.int32)]),
    GradCase("SegmentMax", [g64(6, 2), np.array([0, 0, 1, 3, 3, 3], np.int64)]),
    GradCase("SegmentMin", [g64(5, 3), np.array([0, 1, 1, 1, 4], np.int32)]),
    GradCase("SegmentProd", [away_from(g64(5, 2), gap=0.2), np.array([0, 0, 2, 2, 2], np.int32)]),
    GradCase("SegmentProd", [np.array([1.5, 0.0, -2.0, 0.5, 0.0, 0.0, 1.2]), np.array([0, 0, 0, 1, 1, 2, 2], np.int32)],
             id="SegmentProd-zeros"),
    GradCase("UnsortedSegmentMax", [g64(5, 2), _ids, np.int32(3)]),
    GradCase("UnsortedSegmentMin", [g64(2, 3), np.array([[0, 2, 2], [1, 0, -1]], np.int64), np.int64(3)],
             id="UnsortedSegmentMin-2d-ids"),
    GradCase("UnsortedSegmentProd", [away_from(g64(5, 2), gap=0.2), _ids, np.int32(3)]),
    GradCase("UnsortedSegmentProd", [np.array([1.5, 0.0, -2.0, 0.5, 0.0, 0.0, 1.2]),
                                     np.array([0, 0, 0, 1, 1, 2, 2], np.int32), np.int32(3)],
             id="UnsortedSegmentProd-zeros"),
    GradCase("DynamicPartition", [g64(5, 2), np.array([1, 0, 2, 1, 1], np.int32)], attrs={"num_partitions": 3}),
    GradCase("DynamicStitch", [np.array([0, 4], np.int32), np.array([[2], [1]], np.int32), g64(2, 3), g64(2, 1, 3)]),
    GradCase("ParallelDynamicStitch", [np.array([0, 4], np.int32), np.array([[2], [1]], np.int32), g64(2, 3), g64(2, 1, 3)]),
]
