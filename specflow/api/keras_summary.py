"""``model.summary()``: Keras's table as plain text: each layer's "name (Type)", its output shape
(a Sequential's or functional model's, once built; "?" where unknown) and its parameter count,
then the total, trainable and non-trainable counts with their sizes in bytes."""

from __future__ import annotations

import numpy as np


def _size(weights) -> tuple[int, int]:
    """(scalars, bytes) of the weights, each counted once."""
    seen, count, nbytes = set(), 0, 0
    for w in weights:
        if id(w) in seen:
            continue
        seen.add(id(w))
        n = int(np.prod(w.shape.as_list()))
        count += n
        nbytes += n * np.dtype(w.dtype.numpy).itemsize
    return count, nbytes


def readable_size(nbytes: float) -> str:
    """Keras's ``readable_memory_size``: "60.00 B", "1.50 KB"..."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if nbytes / 1024 < 1:
            return f"{nbytes:.2f} {unit}"
        nbytes /= 1024
    return f"{nbytes:.2f} PB"


def _output_shape(model, layer) -> str:
    shape = None
    shape_of = getattr(model, "_output_shape_of", None)
    if shape_of is not None:
        shape = shape_of(layer)
    if shape is None:
        return "?"
    if isinstance(shape, list):
        return ", ".join(str(tuple(s)) for s in shape)
    return str(tuple(shape))


def summary(model, line_length: int, print_fn) -> None:
    widths = [int(line_length * 0.45), int(line_length * 0.33)]
    rows = []
    for layer in model._layer_list():
        weights = getattr(layer, "weights", None)
        if weights is None:  # a module that is not a layer
            weights = list(getattr(layer, "variables", ()))
        rows.append((f"{layer.name} ({type(layer).__name__})", _output_shape(model, layer), str(_size(weights)[0])))
    total, total_bytes = _size(model.weights)
    trainable, trainable_bytes = _size(model.trainable_weights)

    def line(cells):
        return (cells[0].ljust(widths[0]) + cells[1].ljust(widths[1]) + cells[2].rjust(line_length - sum(widths)))

    print_fn(f'Model: "{model.name}"')
    print_fn("_" * line_length)
    print_fn(line(("Layer (type)", "Output Shape", "Param #")))
    print_fn("=" * line_length)
    for row in rows:
        print_fn(line(row))
    print_fn("=" * line_length)
    print_fn(f"Total params: {total} ({readable_size(total_bytes)})")
    print_fn(f"Trainable params: {trainable} ({readable_size(trainable_bytes)})")
    print_fn(f"Non-trainable params: {total - trainable} ({readable_size(total_bytes - trainable_bytes)})")
    print_fn("_" * line_length)
