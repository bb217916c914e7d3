"""Data shards for between-graph replication: one rule for every source.

Shard ``k`` of ``n`` takes the records (or files) whose index ≡ k (mod n): disjoint, covering,
and a pure function of (k, n), so a worker recreated after a crash reads exactly what it read
before. Within a shard, batches follow the input pipeline's rule: batch ``j`` is part ``j % B``
of epoch ``j // B``, the epoch's order drawn from ``default_rng([seed, epoch])`` when shuffling.
"""

from __future__ import annotations

import math

import numpy as np

from specflow.errors import SpecError

# A field some sources add (tfrecord): each record's file index, so shards can be whole files.
FILE_INDEX = "_file_index"


def shard_indices(num_records: int, index: int, count: int) -> np.ndarray:
    """The record indices of shard ``index`` of ``count``."""
    if count < 1 or not 0 <= index < count:
        raise SpecError(f"shard {index} of {count} does not exist (shards are 0..{count - 1})")
    return np.arange(index, num_records, count)


def shard(arrays: dict[str, np.ndarray], index: int, count: int, files: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Every field of ``arrays`` (one record per row) restricted to shard ``index`` of ``count``.
    With ``files`` (each record's file index) the shard is the records of files ≡ index (mod
    count), unless there are fewer files than shards: then records by index, as without."""
    n = min((len(a) for a in arrays.values()), default=0)
    if files is not None and len(files) == n and n and int(files.max()) + 1 >= count:
        shard_indices(0, index, count)  # the same check of (index, count)
        idx = np.flatnonzero(np.asarray(files) % count == index)
    else:
        idx = shard_indices(n, index, count)
    return {k: np.asarray(a)[idx] for k, a in arrays.items()}


class ShardBatches:
    """Batches of one shard, each a pure function of its index (what a worker feeds)."""

    def __init__(self, arrays: dict[str, np.ndarray], index: int, count: int, *, batch_size: int,
                 shuffle: bool = True, seed: int = 0, files: np.ndarray | None = None):  # fmt: skip
        self.arrays = shard(arrays, index, count, files)
        self.num_examples = min(len(a) for a in self.arrays.values())
        if batch_size > self.num_examples:
            raise SpecError(f"batch_size {batch_size} is larger than shard {index} of {count} "
                            f"({self.num_examples} examples)", path="train.data.batch_size")  # fmt: skip
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = int(seed)
        self.batches_per_epoch = math.ceil(self.num_examples / batch_size)
        self._order: tuple[int, np.ndarray] | None = None

    def indices(self, k: int) -> np.ndarray:
        epoch, part = divmod(int(k), self.batches_per_epoch)
        if self._order is None or self._order[0] != epoch:
            n = self.num_examples
            order = np.random.default_rng([self.seed, epoch]).permutation(n) if self.shuffle else np.arange(n)
            self._order = (epoch, order)
        return self._order[1][part * self.batch_size : (part + 1) * self.batch_size]

    def batch(self, k: int) -> dict[str, np.ndarray]:
        idx = self.indices(k)
        return {name: a[idx] for name, a in self.arrays.items()}
