"""What a training checkpoint holds, and how it moves between a Session and a checkpoint.

A checkpoint is a flat name -> array mapping (written in TensorFlow's bundle format by
``specflow.io.checkpoint``): every variable under its own name (model weights, optimizer slots,
``global_step``), each random op's generator state under ``_specflow/rng/<node>``, and the input
pipeline's position under ``_specflow/input/next_batch``. Restoring all three is what makes a
resumed run draw the same batches and the same random numbers as an uninterrupted one.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np

from specflow.errors import CheckpointError
from specflow.io.tensor_slices import SliceSpec
from specflow.schema.layers.variables import VariableInfo
from specflow.train import partitioned_restore

RNG_PREFIX = "_specflow/rng/"
NEXT_BATCH = "_specflow/input/next_batch"


@dataclass
class SaveRestore:
    """Graph ends for moving variable values in and out: one read per variable, one fed
    Placeholder + AssignVariableOp per variable, grouped under ``restore_op``."""

    reads: dict[str, str]  # variable name -> value tensor
    feeds: dict[str, str]  # variable name -> Placeholder to feed on restore
    restore_op: str
    variables: dict[str, VariableInfo]


def add_save_restore(b, variables: list[VariableInfo]) -> SaveRestore:
    feeds, assigns = {}, []
    with b.name_scope("save"):
        for v in variables:
            ph = b.add_op("Placeholder", [], {"dtype": v.dtype, "shape": v.shape}, name=f"restore/{v.name}")
            feeds[v.name] = ph.name
            assigns.append(b.add_op("AssignVariableOp", [v.handle, ph.name], {"dtype": v.dtype},
                                    name=f"restore/{v.name}/Assign").name)
        restore = b.add_op("NoOp", [], name="restore_all", control_inputs=assigns).name
    return SaveRestore({v.name: v.read for v in variables}, feeds, restore, {v.name: v for v in variables})


def save_slices(sr: SaveRestore) -> dict[str, SliceSpec]:
    """The parts of partitioned variables (and their slots), each saved as its slice of the
    whole variable under the whole's name, as TensorFlow's Saver saves them."""
    return {name: SliceSpec.rows(*v.save_slice) for name, v in sr.variables.items() if v.save_slice is not None}


def capture(session, sr: SaveRestore, next_batch: int | None) -> dict[str, np.ndarray]:
    """Everything a resumed run needs, read from ``session`` in one step."""
    names = sorted(sr.reads)
    values = session.run([sr.reads[n] for n in names])
    out = {n: np.asarray(v) for n, v in zip(names, values)}
    out.update(rng_states(session))
    if next_batch is not None:
        out[NEXT_BATCH] = np.asarray(next_batch, dtype=np.int64)
    return out


def restore(session, sr: SaveRestore, tensors: dict[str, np.ndarray], path: str) -> int | None:
    """Load ``tensors`` (a checkpoint read from ``path``) into ``session``; returns the input
    pipeline's next batch (None if the checkpoint has none). Every variable must be present
    with its declared dtype and shape."""
    feeds = {}
    tensors = partitioned_restore.fill_missing(tensors, sr.variables)  # across partitionings
    for name, v in sr.variables.items():
        arr = tensors.get(name)
        check_restored(path, name, v, arr)
        feeds[sr.feeds[name]] = arr
    session.run([], feeds, targets=[sr.restore_op])
    set_rng_states(session, {k: v for k, v in tensors.items() if k.startswith(RNG_PREFIX)})
    return int(tensors[NEXT_BATCH]) if NEXT_BATCH in tensors else None


def check_restored(path: str, name: str, v: VariableInfo, arr, shape=None) -> None:
    """CheckpointError unless ``arr`` (checkpoint ``path``'s value for variable ``v``; None when
    absent; ``shape`` when only its dtype is known) fits the declared dtype and shape."""
    if arr is None:
        raise CheckpointError(f"checkpoint {path} has no value for variable '{name}' (was the spec changed?)")
    shape = list(arr.shape) if shape is None else list(shape)
    if arr.dtype != v.dtype.numpy or shape != list(v.shape.as_list()):
        raise CheckpointError(
            f"checkpoint {path} holds '{name}' as {arr.dtype}{shape}, but the spec declares "
            f"{v.dtype.name}{v.shape.as_list()} (was the spec changed?)"
        )


# --- random generators ---------------------------------------------------------------------


def rng_states(session) -> dict[str, np.ndarray]:
    """Each random op's PCG64 state as six uint64 words (128-bit state and increment split in
    halves, then the buffered-uint32 flag and value)."""
    return generator_states(session.kernel_state)


def generator_states(kernel_state: dict[str, dict], prefix: str = RNG_PREFIX) -> dict[str, np.ndarray]:
    """``rng_states`` of a kernel-state map (a Session's, or a cluster task's)."""
    out = {}
    for node, state in list(kernel_state.items()):  # a task may be running steps meanwhile
        rng = state.get("rng")
        if rng is None:
            continue
        s = rng.bit_generator.state
        words = [s["state"]["state"] >> 64, s["state"]["state"] & _M64, s["state"]["inc"] >> 64,
                 s["state"]["inc"] & _M64, s["has_uint32"], s["uinteger"]]
        out[prefix + node] = np.array(words, dtype=np.uint64)
    return out


def set_rng_states(session, tensors: dict[str, np.ndarray]) -> None:
    set_generator_states(session.kernel_state, tensors)


def set_generator_states(kernel_state: dict[str, dict], tensors: dict[str, np.ndarray],
                         prefix: str = RNG_PREFIX) -> None:  # fmt: skip
    for key, words in tensors.items():
        w = [int(x) for x in np.asarray(words, dtype=np.uint64)]
        bg = np.random.PCG64()
        bg.state = {"bit_generator": "PCG64", "state": {"state": (w[0] << 64) | w[1], "inc": (w[2] << 64) | w[3]},
                    "has_uint32": w[4], "uinteger": w[5]}
        kernel_state.setdefault(key[len(prefix):], {})["rng"] = np.random.Generator(bg)


_M64 = (1 << 64) - 1


@contextlib.contextmanager
def generators_untouched(session):
    """Random ops run inside leave their generators as they were: an evaluation (dropout's
    RandomUniform runs with ``training`` false too, its output unselected) must not move the
    training's random stream, or a run's numbers would depend on its eval schedule and a run
    resumed after a final evaluation would differ from one that never stopped."""
    kernel_state = getattr(session, "kernel_state", None)
    if kernel_state is None:
        yield
        return
    before = generator_states(kernel_state)
    try:
        yield
    finally:
        for key in generator_states(kernel_state).keys() - before.keys():  # first run here: as never run
            kernel_state.get(key[len(RNG_PREFIX):], {}).pop("rng", None)
        set_generator_states(kernel_state, before)

