"""Restores across partitionings. A checkpoint holds a partitioned variable as TensorFlow's
Saver does, one tensor under the whole variable's name saved in slices (``state.save_slices``),
which ``read_bundle`` returns whole; checkpoints written before that hold the parts under their
own names (``emb/embeddings/part_0``, their slots ``emb/embeddings/part_0/Adam``). A restore
joins or splits either to fit the run being restored:

- a part missing from the checkpoint is cut from the whole variable's rows when the checkpoint
  holds it whole (``VariableInfo.save_slice`` says which rows);
- an unpartitioned variable missing from it is the concatenation of its parts when the
  checkpoint holds those under their own names (``name/part_0..`` in order, a slot's suffix
  after the part).

So a partitioned run restores an unpartitioned checkpoint and the reverse, and a run split in
N parts restores one split in M (through the whole). On a cluster each ps reads just its parts'
rows instead (``RestoreV2`` with a slice, ``distributed/sharded_checkpoint.py``).
"""

from __future__ import annotations

import re

import numpy as np

from specflow.schema.layers.variables import VariableInfo


def fill_missing(tensors: dict[str, np.ndarray], variables: dict[str, VariableInfo]) -> dict[str, np.ndarray]:
    """``tensors`` with an entry made for each variable the checkpoint holds under another
    partitioning (those it cannot make stay as they are, for the caller's error)."""
    out = dict(tensors)
    wholes: dict[str, np.ndarray | None] = {}
    for name, v in variables.items():
        if name in tensors and (v.save_slice is None or tensors[name].shape == tuple(v.shape.as_list())):
            continue
        if v.save_slice is not None:  # missing, or a part of another split (M parts restored into N)
            full, _shape, offset, rows = v.save_slice
            if full not in wholes:
                wholes[full] = tensors.get(full, _joined(tensors, full))
            whole = wholes[full]
            if whole is not None and whole.shape[1:] == tuple(v.shape.as_list()[1:]) and whole.shape[0] >= offset + rows:
                out[name] = whole[offset : offset + rows]
            continue
        joined = _joined(tensors, name)
        if joined is not None:
            out[name] = joined
    return out


def _joined(tensors: dict[str, np.ndarray], name: str) -> np.ndarray | None:
    """``name`` rebuilt from parts saved as ``<head>/part_k<tail>`` (name = head + tail, the
    tail a slot's suffix such as ``/Adam``), or None when the checkpoint has no such parts."""
    for cut in [len(name), *(m.start() for m in re.finditer("/", name))][::-1]:
        head, tail = name[:cut], name[cut:]
        pattern = re.compile(re.escape(head) + r"/part_(\d+)" + re.escape(tail))
        found = {int(m.group(1)): t for t in tensors if (m := pattern.fullmatch(t))}
        if found and sorted(found) == list(range(len(found))):
            parts = [tensors[found[k]] for k in range(len(found))]
            if all(p.ndim >= 1 and p.shape[1:] == parts[0].shape[1:] for p in parts):
                return np.concatenate(parts, axis=0)
    return None
