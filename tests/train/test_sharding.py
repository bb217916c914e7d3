"""Data shards: shard k of n takes the records whose index ≡ k (mod n)."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.errors import SpecError
from specflow.train.sharding import ShardBatches, shard, shard_indices


@pytest.mark.parametrize("n,count", [(10, 1), (10, 3), (7, 7), (5, 8)])
def test_shards_are_disjoint_and_cover_every_record(n, count):
    parts = [shard_indices(n, k, count) for k in range(count)]
    assert sorted(np.concatenate(parts).tolist()) == list(range(n))
    for k, p in enumerate(parts):
        assert all(i % count == k for i in p)


def test_shard_keeps_fields_aligned():
    arrays = {"x": np.arange(20).reshape(10, 2), "y": np.arange(10) * 10}
    s = shard(arrays, 1, 3)
    np.testing.assert_array_equal(s["y"], [10, 40, 70])
    np.testing.assert_array_equal(s["x"][:, 0] // 2 * 10, s["y"])


def test_bad_shard_is_one_line_error():
    with pytest.raises(SpecError, match="shard 3 of 3 does not exist"):
        shard_indices(10, 3, 3)


def test_batches_are_a_pure_function_of_seed_and_index():
    arrays = {"x": np.arange(100)}
    a = ShardBatches(arrays, 1, 4, batch_size=6, seed=5)
    b = ShardBatches(arrays, 1, 4, batch_size=6, seed=5)
    got = [a.batch(j)["x"] for j in (0, 7, 3, 0)]
    want = [b.batch(j)["x"] for j in (0, 7, 3, 0)]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    epoch = np.concatenate([a.batch(j)["x"] for j in range(a.batches_per_epoch)])
    assert sorted(epoch.tolist()) == list(range(1, 100, 4))  # one epoch = the shard, once each
    with pytest.raises(SpecError, match="larger than shard"):
        ShardBatches(arrays, 0, 4, batch_size=26)
