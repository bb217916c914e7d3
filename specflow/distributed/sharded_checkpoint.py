"""Sharded checkpoints, as TensorFlow's ``Saver(sharded=True)`` writes them.

Each ps task saves its own variables with a ``SaveV2`` placed on it (the values never travel to
the client) into ``<prefix>_temp_<hex>/part-<k>``; the chief then merges: every part's data file
is renamed to ``<prefix>.data-0000k-of-0000n`` and one index is written listing every tensor with
its shard id (TensorFlow's ``MergeV2Checkpoints``; only indexes are read, no data is copied). A
part of a partitioned variable is saved as its slice of the whole variable (TF's
``shape_and_slices``), and the merged index lists the whole with every ps's slices. The
index is renamed into place last, so until then the checkpoint does not exist for any reader;
the ``checkpoint`` state file and the keep rules are ``CheckpointManager``'s, unchanged. The
result is an ordinary bundle: ``read_bundle`` (a local run's restore) and TensorFlow read it.

Restore mirrors the save: a ``RestoreV2`` on each ps task reads that task's variables from the
bundle (only theirs; whichever data file the index names, so a local run's single-file
checkpoint restores the same way) and assigns them there: the values never reach the client,
which reads only the index (to check names, dtypes and shapes first) and the few small tensors
that are not variables (the input position, random generators' states). A part reads its rows
from whatever slices the checkpoint holds, so a run split differently restores it.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil

import numpy as np

from specflow.errors import CheckpointError
from specflow.graph.dtypes import as_dtype, int64, string
from specflow.io.tensor_bundle import merge_bundles, read_bundle, read_bundle_index, write_bundle
from specflow.io.tensor_slices import SliceSpec
from specflow.train.state import NEXT_BATCH, check_restored

_TEMP = "_temp_"
STATE_PREFIX = "_specflow/"  # what is not a variable: input positions, generator states


class ShardedSaver:
    """One ``SaveV2`` per ps task holding variables, added to builder ``b``.

    ``var_tasks``: variable name -> the ps task holding it (the replicas' assignment);
    ``positions``: keys of fed int64 scalars saved with shard 0 (each worker's next batch)."""

    def __init__(self, b, save_restore, var_tasks: dict[str, str], positions: list[str] = ()):
        self.prefixes: list[str] = []  # per shard: the Placeholder fed with its part's prefix
        self.save_ops: list[str] = []
        self.restore_ops: list[str] = []  # per shard: its RestoreV2's assigns, grouped
        self.restored: list[list[str]] = []  # per shard: the variables it restores
        self.restore_keys: list[tuple[str, str]] = []  # per shard: its fed tensor_names, shape_and_slices
        self.variables = save_restore.variables
        self.next_batch: str | None = None
        self.positions: dict[str, str] = {}  # key -> its Placeholder
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
                        self.positions = {key: b.add_op("Placeholder", [], {"dtype": int64, "shape": []},
                                                        name=f"position_{i}", device=task).name
                                          for i, key in enumerate(positions)}  # fmt: skip
                        names = [*names, NEXT_BATCH, *self.positions]
                        tensors = [*tensors, self.next_batch, *self.positions.values()]
                    dtypes = [b.spec(t).dtype for t in tensors]
                    keys = [_saved_as(save_restore.variables.get(n), n) for n in names]
                    names_t = b.add_op("Const", [], {"dtype": string, "value": np.array([k for k, _ in keys], dtype=object)},
                                       name="tensor_names", device=task).name  # fmt: skip
                    slices = b.add_op("Const", [], {"dtype": string, "value": np.array([s for _, s in keys], dtype=object)},
                                      name="shape_and_slices", device=task).name  # fmt: skip
                    save = b.add_op("SaveV2", [prefix.name, names_t, slices, *tensors], {"dtypes": dtypes},
                                    name="SaveV2", device=task)  # fmt: skip
                self.prefixes.append(prefix.name)
                self.save_ops.append(save.name)
                restored = [n for n in names if n in save_restore.variables]
                self.restore_ops.append(self._restore_shard(b, k, task, prefix.name, save_restore.variables, restored))
                self.restored.append(restored)

    def _restore_shard(self, b, k: int, task: str, prefix: str, variables, names: list[str]) -> str:
        """RestoreV2 of shard ``k``'s variables on ``task``, each assigned there. What each is
        read as (its name or a slice of a whole) is fed: it depends on how the checkpoint
        being restored was partitioned (``restore``)."""
        with b.name_scope(f"restore/shard_{k}"):
            dtypes = [variables[n].dtype for n in names]
            names_t = b.add_op("Placeholder", [], {"dtype": string, "shape": [len(names)]}, name="tensor_names",
                               device=task).name  # fmt: skip
            slices = b.add_op("Placeholder", [], {"dtype": string, "shape": [len(names)]}, name="shape_and_slices",
                              device=task).name  # fmt: skip
            self.restore_keys.append((names_t, slices))
            restore = b.add_op("RestoreV2", [prefix, names_t, slices], {"dtypes": dtypes}, name="RestoreV2",
                               device=task).name  # fmt: skip
            assigns = [b.add_op("AssignVariableOp", [variables[n].handle, f"{restore}:{i}"], {"dtype": variables[n].dtype},
                                name=f"Assign_{i}", device=task).name for i, n in enumerate(names)]  # fmt: skip
            return b.add_op("NoOp", [], name="done", control_inputs=assigns, device=task).name
    @property
    def num_shards(self) -> int:
        return len(self.save_ops)

    def write(self, session, prefix: str, next_batch: int, positions: dict[str, int] | None = None,
              extra: dict[str, np.ndarray] | None = None, pinned: dict[str, int] | None = None) -> None:  # fmt: skip
        """Write checkpoint ``prefix``: every shard on its task, then the merged index.
        ``positions``: the values of the ``positions`` keys; ``extra``: small tensors the client
        holds (each worker's random generators' states), written by the client as one more
        shard when there are any; ``pinned``: variables saved as these values, not as read
        (async: the global step as the checkpoint's name gives it)."""
        directory = os.path.dirname(prefix)
        remove_stale_parts(directory, os.path.basename(prefix).rsplit("-", 1)[0])
        temp = f"{prefix}{_TEMP}{secrets.token_hex(6)}"
        os.makedirs(temp)
        try:
            parts = [os.path.join(temp, f"part-{k}") for k in range(self.num_shards)]
            feeds = {ph: p for ph, p in zip(self.prefixes, parts)}
            feeds[self.next_batch] = np.asarray(next_batch, dtype=np.int64)
            for key, ph in self.positions.items():
                feeds[ph] = np.asarray((positions or {}).get(key, next_batch), dtype=np.int64)
            for name, value in (pinned or {}).items():  # the variable's read, fed: SaveV2 takes the value
                v = self.variables[name]
                feeds[v.read] = np.asarray(value, dtype=v.dtype.numpy)
            session.run([], feeds, targets=self.save_ops)
            if extra:
                parts.append(os.path.join(temp, f"part-{self.num_shards}"))
                write_bundle(parts[-1], extra)
            merge_bundles(parts, prefix)  # the parts become the shards of the checkpoint
        finally:
            shutil.rmtree(temp, ignore_errors=True)


    def restore(self, session, prefix: str, before=None) -> dict[str, np.ndarray]:
        """Restore checkpoint ``prefix`` (sharded or not) on the ps tasks; returns its tensors
        that are not variables (input position, generator states), read by the client and
        given to ``before`` first (the replicas' generators are set before any variable is,
        so a replica that sees the model ready also has them)."""
        index = read_bundle_index(prefix)
        keys = {name: _restored_as(prefix, index, name, v) for name, v in self.variables.items()}
        small = read_bundle(prefix, [n for n in index if n.startswith(STATE_PREFIX) and n not in self.variables])
        if before is not None:
            before(small)
        feeds = {ph: prefix for ph in self.prefixes}
        for names, (names_t, slices_t) in zip(self.restored, self.restore_keys):
            feeds[names_t] = np.array([keys[n][0] for n in names], dtype=object)
            feeds[slices_t] = np.array([keys[n][1] for n in names], dtype=object)
        session.run([], feeds, targets=self.restore_ops)
        return small


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


def _saved_as(v, name: str) -> tuple[str, str]:
    """(tensor name, shape_and_slices) a value is saved under: a part of a partitioned variable
    as its slice of the whole variable, as TensorFlow's Saver saves it; anything else whole."""
    if v is None or v.save_slice is None:
        return name, ""
    full, shape, offset, rows = v.save_slice
    return full, SliceSpec.rows(full, shape, offset, rows).text()


def _restored_as(prefix: str, index, name: str, v) -> tuple[str, str]:
    """(tensor name, shape_and_slices) to restore variable ``v`` from: its slice of the whole
    when the checkpoint holds the whole (saved whole or in any slices), else its own name (a
    checkpoint that saved the parts under their own names); checked against the spec first."""
    key, spec = _saved_as(v, name)
    shape = v.shape.as_list()
    if spec and key in index:
        shape = list(v.save_slice[1])
    else:
        key, spec = name, ""
    entry = index.get(key)
    if entry is None:
        check_restored(prefix, name, v, None)
    dims = [d.size for d in entry.shape.dim]
    if as_dtype(entry.dtype) != v.dtype or dims != shape:
        raise CheckpointError(f"checkpoint {prefix} holds '{key}' as {as_dtype(entry.dtype).name}{dims}, but the "
                              f"spec declares {v.dtype.name}{shape} (was the spec changed?)")  # fmt: skip
    return key, spec


def _task_order(task: str) -> tuple:
    return tuple(int(x) if x.isdigit() else x for x in re.split(r"(\d+)", task))
