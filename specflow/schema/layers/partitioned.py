"""Partitioned variables: one logical variable split along axis 0 into ``name/part_0..`` (TF 1's
PartitionedVariable, the way large embedding tables are held), and lookups into them.

How many parts comes from the spec (``partitions: N`` or a ``partitioner:`` mapping, TF's
``fixed_size_partitioner``, ``variable_axis_size_partitioner`` and
``min_max_variable_partitioner``); the rows are split TF's way: ``dim0 // N`` each, and the first
``dim0 % N`` parts one more. Each part is an ordinary variable (its own VarHandleOp, initializer,
read) carrying its slice of the whole (``VariableInfo.save_slice``), so on a cluster the ps
placement spreads the parts over the ps tasks, and checkpoints can join them back into the full
variable (``specflow.train.partitioned_restore``).

``embedding_lookup`` is ``tf.nn.embedding_lookup``'s: ids are split by part (DynamicPartition),
each part gathers its own rows (ResourceGather, which sits with the part: on a cluster only the
batch's ids go to the ps and only their rows come back), and the rows are put back in the ids'
order (DynamicStitch). ``partition_strategy``: ``div`` (TF 2's default: part p holds a contiguous
range of ids, so the lookup of id i reads row i of the joined variable) or ``mod`` (TF 1's
default: id i is row i // N of part i % N).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from specflow.errors import SpecError
from specflow.graph import dtypes
from specflow.graph.dtypes import DType
from specflow.schema.layers.variables import VariableInfo, create_variable


class PartitionerConfig(BaseModel):
    """One of: ``{fixed: N}``; ``{max_shard_bytes: B[, max_shards: M]}``;
    ``{min_slice_size: B[, max_partitions: M]}``."""

    model_config = ConfigDict(extra="forbid")
    fixed: int | None = Field(None, ge=1)
    max_shard_bytes: int | None = Field(None, ge=1)
    max_shards: int | None = Field(None, ge=1)
    min_slice_size: int | None = Field(None, ge=1)
    max_partitions: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _one_kind(self):
        kinds = [k for k in ("fixed", "max_shard_bytes", "min_slice_size") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError("give exactly one of fixed, max_shard_bytes, min_slice_size")
        if self.max_shards is not None and kinds[0] != "max_shard_bytes":
            raise ValueError("max_shards goes with max_shard_bytes")
        if self.max_partitions is not None and kinds[0] != "min_slice_size":
            raise ValueError("max_partitions goes with min_slice_size")
        return self


Strategy = Literal["div", "mod"]


def num_partitions(cfg: PartitionerConfig, shape: list[int], dtype: DType) -> int:
    """The number of parts TF's partitioner of the same name would give a variable of
    ``shape``/``dtype`` (the byte-based ones never more than its rows)."""
    rows = shape[0]
    row_bytes = math.prod(shape[1:]) * (dtype.itemsize or 16)  # strings: TF's 16-byte estimate
    if cfg.fixed is not None:
        return cfg.fixed
    if cfg.max_shard_bytes is not None:  # variable_axis_size_partitioner
        per_shard = max(1, cfg.max_shard_bytes // row_bytes)
        n = math.ceil(rows / per_shard)
        if cfg.max_shards is not None:
            n = min(n, cfg.max_shards)
    else:  # min_max_variable_partitioner
        n = min(cfg.max_partitions or 1, math.ceil(rows * row_bytes / cfg.min_slice_size))
    return max(1, min(n, rows))


def part_rows(dim0: int, n: int) -> list[int]:
    """TF's split of ``dim0`` rows into ``n`` parts: the first ``dim0 % n`` get one extra."""
    base, extra = divmod(dim0, n)
    return [base + (1 if k < extra else 0) for k in range(n)]


@dataclass
class PartitionedVariable:
    name: str  # the full variable's name (what checkpoints join the parts under)
    shape: list[int]
    parts: list[VariableInfo]


def create_partitioned_variable(b, name: str, shape, dtype, initializer, trainable: bool, seed: int | None,
                                n: int) -> PartitionedVariable:  # fmt: skip
    """Variables ``<scope>/name/part_k`` holding consecutive row ranges of a ``shape`` variable;
    each part's initializer runs on its own slice (random ones with the part's own seed, as
    TF draws per slice), with fans from the full shape."""
    shape = [int(d) for d in shape]
    if not 1 <= n <= shape[0]:
        raise SpecError(f"variable '{b.scoped(name)}' has {shape[0]} rows, so it cannot be split in {n} parts")
    full = b.scoped(name)
    parts, offset = [], 0
    for k, rows in enumerate(part_rows(shape[0], n)):
        part_shape = [rows, *shape[1:]]
        v = create_variable(b, f"{name}/part_{k}", part_shape, dtype, initializer, trainable, seed, fan_shape=shape)
        v.save_slice = (full, tuple(shape), offset, rows)
        parts.append(v)
        offset += rows
    return PartitionedVariable(full, shape, parts)


def embedding_lookup(e, table: PartitionedVariable, ids: str, strategy: Strategy = "div", final: bool = True) -> str:
    """``tf.nn.embedding_lookup(parts, ids, partition_strategy)``: rows of ``table`` for ``ids``
    (any shape; out: ids.shape + table.shape[1:]); ids int32 or int64."""
    n, vocab = len(table.parts), table.shape[0]
    dt = e.dtype(ids)
    if n == 1:
        return e.op("ResourceGather", [table.parts[0].handle, ids], {"dtype": table.parts[0].dtype}, final=final)

    def k(value, name):
        return e.const(np.asarray(value, dt.numpy), dt, name=name)

    flat = e.op("Reshape", [ids, e.i32([-1], "flat_shape")], name="flat_ids")
    if strategy == "mod":
        assign = e.op("FloorMod", [flat, k(n, "num_parts")], name="part_of")
        local = e.op("FloorDiv", [flat, k(n, "num_parts_1")], name="row_in_part")
    else:
        per, extras = divmod(vocab, n)  # the first `extras` parts hold per + 1 ids each
        big = e.op("FloorDiv", [flat, k(per + 1, "rows_big")], name="part_big")
        shifted = e.op("Sub", [flat, k(extras, "extras")], name="shifted")
        small = e.op("FloorDiv", [shifted, k(per, "rows_small")], name="part_small")
        assign = e.op("Maximum", [big, small], name="part_of")
        in_big = e.op("Less", [assign, k(extras, "extras_1")], name="in_big_part")
        local = e.op("SelectV2", [in_big, e.op("FloorMod", [flat, k(per + 1, "rows_big_1")], name="row_big"),
                                  e.op("FloorMod", [shifted, k(per, "rows_small_1")], name="row_small")],
                     name="row_in_part")  # fmt: skip
    if dt != dtypes.int32:
        assign = e.op("Cast", [assign], {"DstT": dtypes.int32}, name="part_of_int32")
    size = e.op("Size", [flat], {"out_type": dtypes.int32}, name="num_ids")
    positions = e.op("Range", [e.i32(0, "start"), size, e.i32(1, "delta")], {"Tidx": dtypes.int32}, name="positions")
    split_ids = e.b.add_op("DynamicPartition", [local, assign], {"num_partitions": n},
                           name=e.b.unique_name("split_ids"), exact_name=True).name  # fmt: skip
    split_pos = e.b.add_op("DynamicPartition", [positions, assign], {"num_partitions": n},
                           name=e.b.unique_name("split_positions"), exact_name=True).name  # fmt: skip
    rows = [e.op("ResourceGather", [p.handle, f"{split_ids}:{i}"], {"dtype": p.dtype}, name=f"gather_{i}")
            for i, p in enumerate(table.parts)]  # fmt: skip
    stitched = e.op("DynamicStitch", [*(f"{split_pos}:{i}" for i in range(n)), *rows], name="stitch")
    tail = [int(d) for d in table.shape[1:]]
    rank = e.shape(ids).rank
    if rank is not None and rank > 0:  # a constant where the ids' dims after the first are known
        shape = e.lead_shape(ids, rank, tail, "out_shape")
    else:
        shape = e.concat([e.op("Shape", [ids], {"out_type": dtypes.int32}, name="ids_shape"),
                          e.i32(tail, "row_shape")], 0, "out_shape")  # fmt: skip
    return e.op("Reshape", [stitched, shape], final=final, name=None if final else "lookup")


def gathers_rows(b, op: str, inputs: list[str], attrs: dict) -> bool:
    """Whether op ``op`` on ``inputs`` gathers whole rows of its first input (axis 0, no batch
    dims): on a partitioned variable that is ``embedding_lookup``, not a gather from the whole."""
    if op == "Gather":
        return True
    if op != "GatherV2" or attrs.get("batch_dims", 0) != 0 or len(inputs) < 3:
        return False
    axis = b.graph_def.node(inputs[2].split(":")[0])
    return axis.op == "Const" and np.asarray(axis.attrs["value"]).shape == () and int(axis.attrs["value"]) == 0


def lookup_rows(b, table: PartitionedVariable, ids: str, name: str, seed: int | None) -> str:
    """``Gather(variable, ids)`` of a partitioned ``variables:`` entry as TF's
    ``embedding_lookup(parts, ids)`` with ``div`` (the rows of the whole variable, in order):
    only the ids' rows are read, and the gradient reaches each part as rows (sparse)."""
    from specflow.schema.layers.common import Emitter, LayerContext, ensure_training_flag

    e = Emitter(b, LayerContext(name=name, graph_seed=seed, training=lambda: ensure_training_flag(b)))
    return embedding_lookup(e, table, ids, "div")


def partitioned_variable_value(b, name: str, spec, initializer, seed: int | None) -> tuple[str, PartitionedVariable]:
    """A ``variables:`` entry with ``partitions``/``partitioner``: its parts, and the whole value
    they make (TF's ``PartitionedVariable.as_tensor()``: the parts' reads concatenated), which is
    what the variable's name reads (a row gather of it reads only its rows: ``lookup_rows``)."""
    dtype = dtypes.as_dtype(spec.dtype)
    n = num_partitions(spec.partitioner or PartitionerConfig(fixed=spec.partitions), list(spec.shape), dtype)
    table = create_partitioned_variable(b, name, spec.shape, dtype, initializer, spec.trainable, seed, n)
    axis = b.const(np.int32(0), name=f"{table.name}/ConcatPartitions/axis")
    whole = b.add_op("ConcatV2", [*(p.read for p in table.parts), axis], name=f"{table.name}/ConcatPartitions/concat",
                     exact_name=True).name  # fmt: skip
    return whole, table
