"""Partitioned embedding tables locally: TF's split and partitioners, lookups and gradients equal to
the unpartitioned table's, sparse updates, checkpoints across partitionings."""

from __future__ import annotations

import re

import numpy as np
import pytest

from specflow.errors import SpecflowError
from specflow.graph import dtypes
from specflow.runtime.session import Session
from specflow.schema.layers.partitioned import PartitionerConfig, num_partitions, part_rows
from specflow.schema.loader import load_spec_text
from specflow.train import state
from specflow.train.gradients import gradients

VOCAB, DIM = 11, 4


def _spec(extra: str = "", opt: str = "sgd: {learning_rate: 0.5}"):
    return load_spec_text(f"""specflow: 1
name: pv
seed: 1
inputs:
  ids: {{dtype: int32, shape: [null, 3]}}
  y: {{dtype: float32, shape: [null]}}
nodes:
  emb: {{layer: embedding, inputs: [ids], input_dim: {VOCAB}, output_dim: {DIM}{extra}}}
  out: {{op: Sum, inputs: [emb], axis: [1, 2]}}
  loss: {{op: Mean, inputs: [{{op: Square, inputs: [{{op: Sub, inputs: [out, y]}}]}}]}}
train:
  loss: loss
  optimizer: {{{opt}}}
  data: {{source: {{npz: unused.npz}}, feeds: {{ids: ids, y: y}}, batch_size: 3}}
""", "pv.yaml")  # fmt: skip


class Model:
    """A loaded spec in a Session, initialized, with every variable's value settable by name
    (through the checkpoint restore path, so partitionings convert)."""

    def __init__(self, spec):
        self.spec = spec
        b = spec.lowered.builder
        self.sr = state.add_save_restore(b, spec.lowered.variables)
        self.sess = Session(b.graph_def)
        self.sess.run([], targets=[spec.lowered.init_op])

    def load(self, tensors):
        state.restore(self.sess, self.sr, tensors, "test")

    def values(self):
        return state.capture(self.sess, self.sr, None)


IDS = np.array([[0, 10, 3], [3, 7, 7], [5, 1, 9]], np.int32)
TABLE = np.random.default_rng(0).normal(size=(VOCAB, DIM)).astype(np.float32)


def test_tf_split_rule_and_partitioners():
    assert part_rows(11, 3) == [4, 4, 3] and part_rows(10, 4) == [3, 3, 2, 2]
    f32 = dtypes.float32
    assert num_partitions(PartitionerConfig(fixed=3), [11, 4], f32) == 3
    # variable_axis_size_partitioner: rows of 16 bytes, at most 40 bytes a shard -> 2 rows a shard.
    assert num_partitions(PartitionerConfig(max_shard_bytes=40), [11, 4], f32) == 6
    assert num_partitions(PartitionerConfig(max_shard_bytes=40, max_shards=4), [11, 4], f32) == 4
    # min_max_variable_partitioner: 176 bytes in slices of at least 64 -> 3, capped by max_partitions.
    assert num_partitions(PartitionerConfig(min_slice_size=64, max_partitions=8), [11, 4], f32) == 3
    assert num_partitions(PartitionerConfig(min_slice_size=64, max_partitions=2), [11, 4], f32) == 2


def test_partitioners_agree_with_tensorflow():
    tf = pytest.importorskip("tensorflow")
    f32 = dtypes.float32
    for shape in ([11, 4], [50000, 64], [7, 3]):
        for b in (40, 1000, 1 << 20):
            want = tf.compat.v1.variable_axis_size_partitioner(b)(tf.TensorShape(shape), tf.float32)[0]
            assert num_partitions(PartitionerConfig(max_shard_bytes=b), shape, f32) == want
            want = tf.compat.v1.min_max_variable_partitioner(max_partitions=8, min_slice_size=b)(
                tf.TensorShape(shape), tf.float32)[0]
            assert num_partitions(PartitionerConfig(min_slice_size=b, max_partitions=8), shape, f32) == want


@pytest.mark.parametrize("strategy", ["div", "mod"])
def test_lookup_and_gradient_equal_the_unpartitioned_table(strategy):
    whole = Model(_spec())
    whole.load({"emb/embeddings": TABLE})
    parted = Model(_spec(f", partitions: 3, partition_strategy: {strategy}"))
    rows = part_rows(VOCAB, 3)
    if strategy == "div":  # part p holds a contiguous range of ids
        parts = np.split(TABLE, np.cumsum(rows)[:-1])
    else:  # part p holds the ids = p mod 3, id i at row i // 3
        parts = [TABLE[p::3] for p in range(3)]
    parted.load({f"emb/embeddings/part_{k}": p for k, p in enumerate(parts)})
    want = whole.sess.run(["emb:0"], {"ids": IDS})[0]
    got = parted.sess.run(["emb:0"], {"ids": IDS})[0]
    np.testing.assert_allclose(got, want, atol=1e-6)
    np.testing.assert_array_equal(want, TABLE[IDS])
    # Gradients: the parts' sparse gradients, made dense, are the whole table's gradient split the same way.
    y = np.array([1.0, -2.0, 0.5], np.float32)
    feeds = {"ids": IDS, "y": y}
    for m in (whole, parted):
        handles = [v.handle for v in m.spec.lowered.variables]
        m.grads = gradients(m.spec.lowered.builder, ["loss:0"], handles)
        m.sess = Session(m.spec.lowered.builder.graph_def)
        m.sess.run([], targets=[m.spec.lowered.init_op])
    whole.load({"emb/embeddings": TABLE})
    parted.load({f"emb/embeddings/part_{k}": p for k, p in enumerate(parts)})
    (gw,) = whole.sess.run(whole.grads, feeds)
    gp = parted.sess.run(parted.grads, feeds)
    if strategy == "div":
        np.testing.assert_allclose(np.concatenate(gp), gw, atol=1e-6)
    else:
        for p in range(3):
            np.testing.assert_allclose(gp[p], gw[p::3], atol=1e-6)


def test_sparse_update_touches_only_the_batch_rows_and_matches_dense():
    from specflow.train.graph import build_training_graph

    # The same batch every step: momentum's untouched rows keep zero velocity, so sparse == dense.
    for opt in ("sgd: {learning_rate: 0.05}", "adagrad: {learning_rate: 0.1}", "adam: {learning_rate: 0.1}",
                "momentum: {learning_rate: 0.05}"):  # fmt: skip
        results = []
        for extra in ("", ", partitions: 3"):
            spec = _spec(extra, opt)
            tg = build_training_graph(spec, spec.train, None)
            ops = {n.op for n in tg.graph_def.nodes}
            assert "DynamicStitch" in ops or not extra
            sr = state.add_save_restore(tg.builder, tg.variables)
            sess = Session(tg.graph_def)
            sess.run([], targets=[tg.init_op])
            start = {k: v for k, v in state.capture(sess, sr, None).items()
                     if not re.fullmatch(r"emb/embeddings(/part_\d+)?", k)}  # fmt: skip
            state.restore(sess, sr, {**start, "emb/embeddings": TABLE}, "test")  # the parts cut from it
            for _ in range(2):
                sess.run([], {"ids": IDS, "y": np.array([1.0, -2.0, 0.5], np.float32)}, targets=[tg.train_op])
            results.append((ops, state.capture(sess, sr, None)))
        (dense_ops, dense), (sparse_ops, sparse) = results
        joined = np.concatenate([sparse[f"emb/embeddings/part_{k}"] for k in range(3)])
        np.testing.assert_allclose(joined, dense["emb/embeddings"], atol=1e-6)
        if not opt.startswith("adam"):  # rows no id touched keep their values exactly
            untouched = sorted(set(range(VOCAB)) - set(IDS.ravel().tolist()))
            np.testing.assert_array_equal(joined[untouched], TABLE[untouched])
        sparse_op = {"sgd": "ResourceScatterAdd", "adagrad": "ResourceSparseApplyAdagradV2", "adam": "ResourceApplyAdam",
                     "momentum": "ResourceSparseApplyKerasMomentum"}  # fmt: skip
        assert sparse_op[opt.split(":")[0]] in sparse_ops


def test_checkpoints_move_between_partitionings():
    three = Model(_spec(", partitions: 3"))
    saved = three.values()
    assert {k for k in saved if k.startswith("emb/")} == {f"emb/embeddings/part_{k}" for k in range(3)}
    whole = Model(_spec())
    whole.load(saved)  # 3 parts -> one table
    joined = np.concatenate([saved[f"emb/embeddings/part_{k}"] for k in range(3)])
    np.testing.assert_array_equal(whole.values()["emb/embeddings"], joined)
    two = Model(_spec(", partitioner: {fixed: 2}"))
    two.load(saved)  # 3 parts -> 2, through the whole
    np.testing.assert_array_equal(np.concatenate([two.values()[f"emb/embeddings/part_{k}"] for k in range(2)]), joined)
    three.load(whole.values())  # one table -> 3 parts
    np.testing.assert_array_equal(np.concatenate([three.values()[f"emb/embeddings/part_{k}"] for k in range(3)]), joined)


def test_spec_errors():
    with pytest.raises(SpecflowError, match="cannot be split in 12 parts"):
        _spec(", partitions: 12")
    with pytest.raises(SpecflowError, match="partitions or partitioner, not both"):
        _spec(", partitions: 2, partitioner: {fixed: 2}")
    with pytest.raises(SpecflowError, match="exactly one of fixed, max_shard_bytes, min_slice_size"):
        _spec(", partitioner: {fixed: 2, max_shard_bytes: 10}")


def test_a_partitioned_free_variable_reads_as_the_whole():
    text = """specflow: 1
name: pvv
seed: 0
inputs:
  x: {dtype: float32, shape: [null, 5]}
variables:
  w: {shape: [5, 300], initializer: glorot_uniform, PART}
nodes:
  y: {op: MatMul, inputs: [x, w]}
"""
    parted = Model(load_spec_text(text.replace("PART", "partitions: 2"), "pvv.yaml"))
    values = parted.values()
    assert values["w/part_0"].shape == (3, 300) and values["w/part_1"].shape == (2, 300)
    # glorot's limit from the whole variable's fans (5, 300), as TF's partition_info gives them
    limit = np.sqrt(6 / 305)
    both = np.concatenate([values["w/part_0"], values["w/part_1"]])
    assert np.abs(both).max() <= limit and np.abs(both).max() > 0.9 * limit
    W = np.random.default_rng(1).normal(size=(5, 300)).astype(np.float32)
    parted.load({"w": W})
    x = np.random.default_rng(2).normal(size=(4, 5)).astype(np.float32)
    np.testing.assert_allclose(parted.sess.run(["y:0"], {"x": x})[0], x @ W, rtol=1e-5, atol=1e-5)
    with pytest.raises(SpecflowError, match="scalar variable cannot be partitioned"):
        load_spec_text(text.replace("[5, 300]", "[]").replace("PART", "partitions: 2"), "pvv.yaml")


def test_checkpoint_files_hold_the_whole_variable_in_slices_as_tensorflow(tmp_path):
    """On disk a partitioned variable is one tensor saved in slices, as TF's Saver
    writes it: readers see `emb/embeddings` [11, 4]; it restores into other partitionings, and
    a checkpoint from before (parts under their own names) still restores."""
    from specflow.io.checkpoint import CheckpointManager
    from specflow.io.tensor_bundle import read_bundle, read_bundle_index, write_bundle

    three = Model(_spec(", partitions: 3", opt="adagrad: {learning_rate: 0.5}"))
    saved = three.values()
    path = CheckpointManager(str(tmp_path)).save(saved, 1, slices=state.save_slices(three.sr))
    index = read_bundle_index(path)
    assert not any("/part_" in name for name in index if not name.startswith("_specflow/"))
    assert [d.size for d in index["emb/embeddings"].shape.dim] == [VOCAB, DIM]
    assert [(s.extent[0].start, s.extent[0].length) for s in index["emb/embeddings"].slices] == [(0, 4), (4, 4), (8, 3)]
    joined = np.concatenate([saved[f"emb/embeddings/part_{k}"] for k in range(3)])
    np.testing.assert_array_equal(read_bundle(path)["emb/embeddings"], joined)
    for extra in ("", ", partitioner: {fixed: 2}"):
        model = Model(_spec(extra, opt="adagrad: {learning_rate: 0.5}"))
        model.load(CheckpointManager(str(tmp_path)).restore(path))
        values = model.values()
        got = values["emb/embeddings"] if not extra else np.concatenate([values[f"emb/embeddings/part_{k}"] for k in range(2)])
        np.testing.assert_array_equal(got, joined)
    write_bundle(str(tmp_path / "old"), saved)  # the parts under their own names
    whole = Model(_spec(opt="adagrad: {learning_rate: 0.5}"))
    whole.load(read_bundle(str(tmp_path / "old")))
    np.testing.assert_array_equal(whole.values()["emb/embeddings"], joined)
