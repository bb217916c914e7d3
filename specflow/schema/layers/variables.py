"""Resource variables, built the way TensorFlow 2 builds them in a graph.

A variable ``w`` is ``w`` = VarHandleOp, its initial value under ``w/Initializer/``,
``w/Assign`` = AssignVariableOp(w, value) and ``w/Read/ReadVariableOp``, the value every
consumer reads. Layers and the spec's ``variables:`` section both go through
:func:`create_variable`, which also fills the builder's collections.
"""

from __future__ import annotations

from dataclasses import dataclass

from specflow.errors import SpecError
from specflow.graph.dtypes import DType, as_dtype
from specflow.graph.limits import check_tensor_size
from specflow.graph.shapes import Shape
from specflow.schema.initializers import Initializer, derive_seed, emit_initializer, parse_initializer


@dataclass
class VariableInfo:
    name: str  # the VarHandleOp node (also the variable's shared_name)
    handle: str  # the resource tensor
    read: str  # the value tensor consumers use
    assign: str  # the AssignVariableOp node that initializes it
    dtype: DType
    shape: Shape
    trainable: bool
    initializer: Initializer
    # A part of a partitioned variable: (full name, full shape, first row, rows); checkpoints
    # can join the parts under the full name (see layers/partitioned.py).
    save_slice: tuple[str, tuple[int, ...], int, int] | None = None
    # Keras's weight constraint (layers/constraints.py), applied after each optimizer update.
    constraint: dict | None = None


def create_variable(
    builder,
    name: str,
    shape,
    dtype: DType | str,
    initializer,
    trainable: bool = True,
    seed: int | None = None,
    fan_shape=None,
) -> VariableInfo:
    """Create variable ``name`` (scoped by the builder) and register it in the collections
    "variables", "trainable_variables" and "init_ops". ``seed`` is the graph seed: when set and
    the initializer has none, the variable gets its own op seed derived from its name.
    ``fan_shape``: the shape variance-scaling initializers take their fans from (a partitioned
    variable's part: the whole variable's, as TF's partition_info gives them)."""
    dtype = as_dtype(dtype)
    init = initializer if isinstance(initializer, Initializer) else parse_initializer(initializer)
    dims = Shape([int(d) for d in shape])
    full = builder.scoped(name)
    shared = _shared(builder, full, dims, dtype)
    if shared is not None:
        return shared
    # Before any node is made: the initializer would allocate it all at the first run.
    check_tensor_size(dims.dims, dtype.itemsize or 1, f"variable '{full}' of {dtype.name}{list(dims.dims)}")
    handle = builder.add_op(
        "VarHandleOp", [], {"dtype": dtype, "shape": dims, "shared_name": full}, name=full, exact_name=True
    ).name
    op_seed = derive_seed(full) if seed is not None and init.seed is None else None
    with builder.name_scope(name), builder.name_scope("Initializer"):
        value = emit_initializer(builder, init, dims.dims, dtype, seed=op_seed, graph_seed=seed, fan_shape=fan_shape)
    assign = builder.add_op(
        "AssignVariableOp", [handle, value], {"dtype": dtype}, name=f"{full}/Assign", exact_name=True
    ).name
    read = builder.add_op(
        "ReadVariableOp", [handle], {"dtype": dtype}, name=f"{full}/Read/ReadVariableOp", exact_name=True
    ).name
    info = VariableInfo(full, handle, read, assign, dtype, dims, bool(trainable), init)
    builder.add_to_collection("variables", info)
    if trainable:
        builder.add_to_collection("trainable_variables", info)
    builder.add_to_collection("init_ops", assign)
    return info


def _shared(builder, full: str, dims: Shape, dtype: DType) -> VariableInfo | None:
    """The variable ``full`` reuses under the builder's sharing rules (innermost first), or None."""
    for prefix, target in reversed(builder.variable_sharing):
        if not full.startswith(prefix):
            continue
        want = target + full[len(prefix):]
        for v in builder.collections.get("variables", []):
            if v.name == want:
                if v.shape != dims or v.dtype != dtype:
                    raise SpecError(f"variable '{full}' shares '{want}' but is {dtype.name}{dims}, "
                                    f"not {v.dtype.name}{v.shape}")
                return v
        raise SpecError(f"variable '{full}' shares with '{target.rstrip('/')}', which has no variable '{want}'")
    return None
