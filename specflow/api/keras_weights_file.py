"""``model.save_weights("x.weights.h5")`` / ``load_weights``: Keras 3's weights file, so weights
move between sf.keras and Keras both ways. The layout is Keras's saving walk: a model's ``layers``
(Sequential, Functional) then its attributes (public first, each sorted), a list's items named by
their class in snake case made unique (``dense``, ``dense_1``); each object's own variables under
``<path>/vars/<i>`` (trainable first, in creation order; the group's ``name`` attribute its name),
and a compiled model's optimizer under ``optimizer/vars`` (``iteration``, ``learning_rate``, then
its slots in Keras's order). Where sf's layer holds in one object what Keras splits into
sub-layers the file has Keras's split: an RNN's weights under ``cell``, MultiHeadAttention's
under ``query_dense``/``key_dense``/``value_dense``/``output_dense``. h5py is imported when used."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from specflow.api.keras import Layer, held

_RNN_CELLS = {"LSTM": "lstm_cell", "GRU": "gru_cell", "SimpleRNN": "simple_rnn_cell"}
# Keras's optimizer slots: groups made one after another, each interleaved per variable
_SLOT_GROUPS = {
    "Adam": [("m", "v"), ("vhat",)], "AdamW": [("m", "v"), ("vhat",)], "SGD": [("momentum",)],
    "RMSprop": [("velocity",), ("momentum",), ("average_gradient",)], "Adagrad": [("accumulator",)],
}  # fmt: skip


def _h5py():
    try:
        import h5py
    except ImportError:  # pragma: no cover - dev installs have it
        raise ImportError("saving or loading Keras weights files needs h5py: pip install h5py") from None
    return h5py


def _snake(name: str) -> str:
    """Keras's to_snake_case ("Conv2D" -> "conv2d", "GRU" -> "gru")."""
    name = re.sub(r"\W+", "", name)
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def entries(model) -> list[tuple[str, str, list]]:
    """(path, name, variables) for every object that has a ``vars`` group, in Keras's walk."""
    out: list[tuple[str, str, list]] = []
    _walk(model, "", out, set())
    return out


def _own(obj) -> list:
    ws = _own_weights(obj)
    return [w for w in ws if w.trainable] + [w for w in ws if not w.trainable]


def _own_weights(obj) -> list:
    from specflow.api.keras import _weight

    return [_weight(obj, a) for a in vars(obj).get("_weight_order", ())]


def _walk(obj, path: str, out: list, seen: set) -> None:
    if id(obj) in seen:
        return
    seen.add(id(obj))
    kind = type(obj).__name__

    def join(part: str) -> str:
        return f"{path}/{part}" if path else part

    if isinstance(obj, Layer) and kind in _RNN_CELLS and not hasattr(obj, "cell"):
        out.append((path, obj.name, []))
        out.append((join("cell"), _RNN_CELLS[kind], _own(obj)))
        return
    if isinstance(obj, Layer) and kind == "MultiHeadAttention":
        out.append((path, obj.name, []))
        for part, label in (("query", "query"), ("key", "key"), ("value", "value"), ("output", "attention_output")):
            ws = [getattr(obj, f"{part}_{w}") for w in ("kernel", "bias") if hasattr(obj, f"{part}_{w}")]
            out.append((join(f"{part}_dense"), label, ws))
        out.extend([(join("_dropout_layer"), "dropout", []), (join("_softmax"), "softmax", [])])  # Keras's, empty
        return
    if isinstance(obj, Layer):
        out.append((path, obj.name, _own(obj)))
    else:  # an optimizer
        out.append((path, getattr(obj, "name", None) or _snake(kind), _optimizer_vars(obj)))
        return
    children: list[tuple[str, object]] = []
    if _layered(obj):  # Sequential and Functional: their layers first, as Keras's walk
        children.append(("layers", list(obj.layers)))
    names = [k for k in vars(obj) if not k.startswith("_sf_") and k not in ("layers", "_weight_order")]
    for k in sorted(names, key=lambda n: ("~" + n) if n.startswith("_") else n):
        children.append((k, vars(obj)[k]))
    optimizer = getattr(obj, "optimizer", None)
    if optimizer is not None and getattr(optimizer, "iterations", None) is not None:
        children.append(("optimizer", optimizer))
    for attr, child in children:
        if isinstance(child, Layer) or _is_optimizer(child):
            _walk(child, join(attr), out, seen)
        elif isinstance(child, (list, tuple, dict)):
            used: dict[str, int] = {}
            for item in held(child):
                if isinstance(item, Layer) or _is_optimizer(item):
                    name = _snake(type(item).__name__)
                    if name in used:
                        used[name] += 1
                        name = f"{name}_{used[name]}"
                    else:
                        used[name] = 0
                    _walk(item, f"{join(attr)}/{name}", out, seen)


def _layered(obj) -> bool:
    from specflow.api.keras_functional import Functional
    from specflow.api.keras_sequential import Sequential

    return isinstance(obj, (Sequential, Functional))


def _is_optimizer(obj) -> bool:
    from specflow.api.optimizers import Optimizer

    return isinstance(obj, Optimizer)


def _optimizer_vars(opt) -> list:
    """iterations, learning_rate (a float32 scalar, as Keras's variable), then the slots in
    Keras's order; empty where the optimizer has no Keras layout here (its state is not saved)."""
    groups = _SLOT_GROUPS.get(type(opt).__name__)
    if groups is None or not opt.slots and any(opt._slot_names):
        return []
    out = [opt.iterations]
    if not callable(opt.learning_rate):
        out.append(_LearningRate(opt))
    n = len(opt._index)
    for group in groups:
        present = [s for s in group if s in opt.slots]
        for i in range(n):
            out.extend(opt.slots[s][i] for s in present)
    return out


class _LearningRate:
    """An optimizer's float learning rate standing where Keras keeps a variable."""

    def __init__(self, opt):
        self.opt = opt

    def numpy(self):
        return np.float32(self.opt.learning_rate)

    def assign(self, value):
        self.opt.learning_rate = float(value)


def save_weights(model, filepath, overwrite: bool = True) -> None:
    path = Path(str(filepath))
    if not str(path).endswith(".weights.h5"):
        raise ValueError(f"The filename must end in `.weights.h5`. Received: filepath={filepath}")
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists; pass overwrite=True to replace it")
    h5py = _h5py()
    tmp = path.with_name(f".{path.name}.tmp")
    with h5py.File(tmp, "w") as f:
        for where, name, variables in entries(model):
            group = f.require_group(f"{where}/vars" if where else "vars")
            group.attrs["name"] = name
            for i, v in enumerate(variables):
                group.create_dataset(str(i), data=np.asarray(v.numpy()))
    tmp.replace(path)  # atomic: a crash never leaves half a file under the name


def load_weights(model, filepath, skip_mismatch: bool = False) -> None:
    path = Path(str(filepath))
    if not str(path).endswith(".weights.h5"):
        raise ValueError(f"The filename must end in `.weights.h5`. Received: filepath={filepath}")
    if not path.is_file():
        raise FileNotFoundError(f"{filepath}: no such weights file")
    h5py = _h5py()
    with h5py.File(path, "r") as f:
        pending, optimizers = [], []
        for where, name, variables in entries(model):
            key = f"{where}/vars" if where else "vars"
            if where.startswith("optimizer") or "/optimizer" in where:
                optimizers.append((key, where))
                continue
            stored = f[key] if key in f else None
            count = 0 if stored is None else len(stored)
            if count != len(variables):
                if skip_mismatch:
                    continue
                raise ValueError(f"Layer '{name}' expected {len(variables)} variables, but received {count} variables "
                                 f"during loading (at '{key}' of {filepath}). Expected: {[v.name for v in variables]}")
            for i, v in enumerate(variables):
                value = np.asarray(stored[str(i)])
                if tuple(value.shape) != tuple(v.shape.as_list()):
                    if skip_mismatch:
                        continue
                    raise ValueError(f"The shape of the target variable and the shape of the target value in "
                                     f"`variable.assign(value)` must match. variable.shape={tuple(v.shape.as_list())}, "
                                     f"Received: value.shape={value.shape} (at '{key}/{i}' of {filepath})")
                pending.append((v, value))
        for v, value in pending:  # every value checked first: a bad file changes nothing
            v.assign(value.astype(v.dtype.numpy))
        for key, where in optimizers:
            _load_optimizer(f, key, model, where)


def _load_optimizer(f, key: str, model, where: str) -> None:
    """An optimizer's state where both sides have it in the same layout; one not built yet is
    built for the model's trainable weights first. Skipped, as Keras skips it, when the counts
    still differ (another optimizer, or a file without its state)."""
    opt = model
    for part in where.split("/"):
        opt = getattr(opt, part)
    variables = _optimizer_vars(opt)
    if key in f and len(f[key]) != len(variables) and not opt.slots and any(opt._slot_names):
        opt.build(model.trainable_weights)
        variables = _optimizer_vars(opt)
    if key not in f or len(f[key]) != len(variables) or not variables:
        return
    for i, v in enumerate(variables):
        value = np.asarray(f[key][str(i)])
        v.assign(value if isinstance(v, _LearningRate) else value.astype(v.dtype.numpy))
