"""Sharded checkpoints, as TensorFlow's ``Saver(sharded=True)`` writes them.

Each ps task saves its own variables with a ``SaveV2`` placed on it (the values never travel to
the client) into ``<prefix>_temp_<hex>/part-<k>``; the chief then merges: every part's data file
is renamed to ``<prefix>.data-0000k-of-0000n`` and one index is written listing every tensor with
its shard id (TensorFlow's ``MergeV2Checkpoints``; only indexes are read, no data is copied). The
index is renamed into place last, so until then the checkpoint does not exist for any reader;
the ``checkpoint`` state file and the keep rules are ``CheckpointManager``'s, unchanged. The
result is an ordinary bundle: ``read_bundle`` (a local run's restore) and TensorFlow read it.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil

import numpy as np

from specflow.graph.dtypes import int64, string
from specflow.io.extra_protos import BundleHeaderProto
from specflow.io.sstable import encode_table
from specflow.io.tensor_bundle import (
    FORMAT_VERSION,
    HEADER_KEY,
    data_filename,
    fsync_dir,
    index_filename,
    read_bundle_index,
    write_synced,
)
from specflow.train.state import NEXT_BATCH

_TEMP = "_temp_"


class ShardedSaver:
    """One ``SaveV2`` per ps task holding variables, added to builder ``b``.

    ``var_tasks``: variable name -> the ps task holding it (the replicas' assignment)."""

    def __init__(self, b, save_restore, var_tasks: dict[str, str]):
        self.prefixes: list[str] = []  # per shard: the Placeholder fed with its part's prefix
        self.save_ops: list[str] = []
        self.next_batch: str | None = None
        tasks = sorted(set(var_tasks.values()), key=_task_order)
        with b.root_scope(), b.no_control_dependencies():
            for k, task in enumerate(tasks):
                names = sorted(n for n, t in var_tasks.items() if t == task)
                tensors = [save_restore.reads[n] for n in names]
                with b.name_scope(f"save/shard_{k}"):
                    prefix = b.add_op("Placeholder", [], {"dtype": string, "shape": []}, name="prefix", device=task)
                    if k == 0:  # the input position rides with the first shard (fed by the chief)
                        self.next_batch = b.add_op("Placeholder", [], {"dtype": int64, "shape": []},
                                                   name="next_batch", device=task).name  # fmt: skip
                        names, tensors = [*names, NEXT_BATCH], [*tensors, self.next_batch]
                    dtypes = [b.spec(t).dtype for t in tensors]
                    names_t = b.add_op("Const", [], {"dtype": string, "value": np.array(names, dtype=object)},
                                       name="tensor_names", device=task).name  # fmt: skip
                    slices = b.add_op("Const", [], {"dtype": string, "value": np.array([""] * len(names), dtype=object)},
                                      name="shape_and_slices", device=task).name  # fmt: skip
                    save = b.add_op("SaveV2", [prefix.name, names_t, slices, *tensors], {"dtypes": dtypes},
                                    name="SaveV2", device=task)  # fmt: skip
                self.prefixes.append(prefix.name)
                self.save_ops.append(save.name)

    @property
    def num_shards(self) -> int:
        return len(self.save_ops)

    def write(self, session, prefix: str, next_batch: int) -> None:
        """Write checkpoint ``prefix``: every shard on its task, then the merged index."""
        directory = os.path.dirname(prefix)
        remove_stale_parts(directory, os.path.basename(prefix).rsplit("-", 1)[0])
        temp = f"{prefix}{_TEMP}{secrets.token_hex(6)}"
        os.makedirs(temp)
        try:
            parts = [os.path.join(temp, f"part-{k}") for k in range(self.num_shards)]
            feeds = {ph: p for ph, p in zip(self.prefixes, parts)}
            feeds[self.next_batch] = np.asarray(next_batch, dtype=np.int64)
            session.run([], feeds, targets=self.save_ops)
            merge_shards(parts, prefix)
        finally:
            shutil.rmtree(temp, ignore_errors=True)


def merge_shards(parts: list[str], prefix: str) -> None:
    """The single-shard bundles ``parts`` become the shards of bundle ``prefix``."""
    n = len(parts)
    header = BundleHeaderProto(num_shards=n, endianness=BundleHeaderProto.LITTLE)
    header.version.producer = FORMAT_VERSION
    entries = []
    for k, part in enumerate(parts):
        for name, entry in read_bundle_index(part).items():
            entry.shard_id = k
            entries.append((name.encode("utf-8"), entry.SerializeToString()))
    entries.sort()
    for k, part in enumerate(parts):
        os.replace(data_filename(part), data_filename(prefix, k, n))
    tmp = index_filename(prefix) + f".tempstate{secrets.token_hex(8)}"
    try:
        write_synced(tmp, [encode_table([(HEADER_KEY, header.SerializeToString()), *entries])])
        os.replace(tmp, index_filename(prefix))  # last: the checkpoint exists from here on
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    fsync_dir(os.path.dirname(os.path.abspath(prefix)))


def remove_stale_parts(directory: str, base: str) -> None:
    """Delete the part directories a save killed midway left behind."""
    pattern = re.compile(rf"{re.escape(base)}-\d+{_TEMP}[0-9a-f]+")
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return
    for name in names:
        if pattern.fullmatch(name):
            shutil.rmtree(os.path.join(directory, name), ignore_errors=True)


def _task_order(task: str) -> tuple:
    return tuple(int(x) if x.isdigit() else x for x in re.split(r"(\d+)", task))
