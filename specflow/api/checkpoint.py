"""sf.train.Checkpoint: object-based checkpoints of modules and variables, written by the same
CheckpointManager (TF tensor bundles, the ``checkpoint`` state file, keep-N, atomic saves) as
``specflow train``'s.

Each variable is saved under its path from the checkpoint's keyword: ``Checkpoint(model=m)``
saves ``m.w`` as ``model/w``. A module loaded from a spec keeps its variables' spec names
(``hidden/kernel``, ``global_step``, the optimizer's slots), the names ``specflow train`` writes:
a checkpoint of a training run restores into ``sf.load(spec)`` and the other way round.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from specflow.errors import CheckpointError


class Checkpoint:
    def __init__(self, **objects):
        if not objects:
            raise CheckpointError("Checkpoint() needs objects to track: Checkpoint(model=..., optimizer=...)")
        self._objects = objects
        self.save_counter = 0

    def variables(self) -> dict:
        """Checkpoint key -> variable."""
        from specflow.api.module import Module
        from specflow.api.saved import LoadedModule
        from specflow.api.variables import Variable

        out: dict = {}
        for key, obj in self._objects.items():
            if isinstance(obj, LoadedModule) and obj._spec is not None:
                named = obj.named_variables()  # the spec's own names: the CLI's checkpoints
            elif isinstance(obj, Module):
                named = {f"{key}/{p}": v for p, v in obj.named_variables().items()}
            elif isinstance(obj, Variable):
                named = {key: obj}
            else:
                raise CheckpointError(f"Checkpoint: '{key}' is a {type(obj).__name__}; track modules and variables")
            for name, var in named.items():
                if name in out and out[name] is not var:
                    raise CheckpointError(f"Checkpoint: two variables would be saved as '{name}'")
                out[name] = var
        return out

    def save(self, directory, step: int | None = None, keep: int = 5) -> str:
        """Write a checkpoint into ``directory`` (numbered ``step``, default the save count);
        returns its prefix."""
        from specflow.io.checkpoint import CheckpointManager

        self.save_counter += 1
        step = self.save_counter if step is None else int(step)
        tensors = {name: var.numpy() for name, var in self.variables().items()}
        return CheckpointManager(str(directory), keep=keep).save(tensors, step)

    def restore(self, path) -> str:
        """Restore from a checkpoint prefix, or the latest checkpoint of a directory; every tracked
        variable must be in it with its dtype and shape. Returns the prefix restored."""
        from specflow.io.checkpoint import CheckpointManager

        path = str(path)
        if os.path.isdir(path):
            manager = CheckpointManager(path)
            prefix = manager.latest()
            if prefix is None:
                raise CheckpointError(f"{path} has no checkpoint")
        else:
            manager = CheckpointManager(str(Path(path).parent))
            prefix = path
        tensors = manager.restore(prefix)
        self._defer(tensors)
        for name, var in self.variables().items():
            if name not in tensors:
                raise CheckpointError(f"checkpoint {prefix} has no value for '{name}'")
            value = np.asarray(tensors[name])
            if value.dtype != var.dtype.numpy or not var.shape.is_compatible_with(_shape(value)):
                raise CheckpointError(f"checkpoint {prefix} holds '{name}' as {value.dtype}{list(value.shape)}, "
                                      f"the variable is {var.dtype.name}{var.shape}")
            var.assign(value)
        return prefix


    def _defer(self, tensors: dict) -> None:
        """Values for variables a tracked object makes later (an optimizer's slots, made on its
        first ``apply_gradients``): handed to it, to assign when it makes them, as TensorFlow's
        deferred restoration does. Without this a fresh optimizer restarted from zero moments."""
        from specflow.api.optimizers import Optimizer

        existing = self.variables()
        for key, obj in self._objects.items():
            if isinstance(obj, Optimizer):
                obj._deferred = {name[len(key) + 1:]: np.asarray(value) for name, value in tensors.items()
                                 if name.startswith(key + "/") and name not in existing}


def latest_checkpoint(directory) -> str | None:
    """``sf.train.latest_checkpoint(dir)``: the newest checkpoint prefix in ``dir`` (None if none)."""
    from specflow.io.checkpoint import CheckpointManager

    return CheckpointManager(str(directory)).latest() if os.path.isdir(directory) else None


def _shape(value):
    from specflow.graph.shapes import Shape

    return Shape(value.shape)
