"""Row lookups into a partitioned ``variables:`` entry: ``GatherV2(w, ids, 0)`` (or ``Gather``)
on a variable held in parts reads only the ids' rows, part by part (TF's embedding_lookup over a
PartitionedVariable), gives the rows of the whole variable, and trains through sparse updates
to the same weights as the unpartitioned variable."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.runtime.session import Session
from specflow.schema.loader import load_spec_text
from specflow.train import state
from specflow.train.graph import build_training_graph

SPEC = """specflow: 1
name: lookup
seed: 0
inputs:
  ids: {dtype: int64, shape: [null, 2]}
  y: {dtype: float32, shape: [null]}
variables:
  w: {shape: [11, 4], initializer: glorot_uniform PART}
nodes:
  rows: {op: OP, inputs: INPUTS}
  s: {op: Sum, inputs: [rows], axis: [1, 2]}
  loss: {op: Mean, inputs: [{op: Square, inputs: [{op: Sub, inputs: [s, y]}]}]}
train:
  loss: loss
  optimizer: {sgd: {learning_rate: 0.5}}
  data: {source: {npz: unused.npz}, feeds: {ids: ids, y: y}, batch_size: 3}
"""
IDS = np.array([[0, 10], [3, 7], [7, 5]], np.int64)
W = np.random.default_rng(0).normal(size=(11, 4)).astype(np.float32)


def _train(part: str, op: str = "GatherV2", inputs: str = "[w, ids], axis: 0", steps: int = 2):
    spec = load_spec_text(SPEC.replace("PART", part).replace("OP", op).replace("INPUTS", inputs), "l.yaml")
    tg = build_training_graph(spec, spec.train, None)
    sr = state.add_save_restore(tg.builder, tg.variables)
    sess = Session(tg.graph_def)
    sess.run([], targets=[tg.init_op])
    start = {k: v for k, v in state.capture(sess, sr, None).items() if not k.startswith("w/part_")}
    state.restore(sess, sr, {**start, "w": W}, "test")  # the parts cut from W
    rows = sess.run(["rows:0"], {"ids": IDS})[0]
    for _ in range(steps):
        sess.run([], {"ids": IDS, "y": np.array([1.0, -2.0, 0.5], np.float32)}, targets=[tg.train_op])
    values = state.capture(sess, sr, None)
    whole = values["w"] if "w" in values else np.concatenate([values[f"w/part_{k}"] for k in range(3)])
    return {n.op for n in tg.graph_def.nodes}, tg.graph_def, rows, whole


@pytest.mark.parametrize("op,inputs", [("GatherV2", "[w, ids], axis: 0"), ("Gather", "[w, ids]")])
def test_a_row_gather_of_a_partitioned_variable_reads_only_its_rows(op, inputs):
    ops, graph, rows, trained = _train(", partitions: 3", op, inputs)
    np.testing.assert_array_equal(rows, W[IDS])
    assert {"DynamicPartition", "ResourceGather", "DynamicStitch"} <= ops
    gather_inputs = {i for n in graph.nodes if n.op in ("GatherV2", "Gather") for i in n.inputs}
    assert not any("ConcatPartitions" in i for i in gather_inputs)  # the whole is not read to gather
    assert "ResourceScatterAdd" in ops  # SGD applies each part's rows, not a dense table
    _, _, want_rows, want = _train("")
    np.testing.assert_array_equal(want_rows, rows)
    np.testing.assert_allclose(trained, want, rtol=1e-6, atol=1e-6)
    untouched = sorted(set(range(11)) - set(IDS.ravel().tolist()))
    np.testing.assert_array_equal(trained[untouched], W[untouched])


def test_other_gathers_still_read_the_whole_variable():
    """A gather along axis 1 is not a row lookup: it reads the parts joined."""
    text = SPEC.replace("PART", ", partitions: 3").replace("OP", "GatherV2").replace("INPUTS", "[w, ids], axis: 1")
    spec = load_spec_text(text.replace("axis: [1, 2]", "axis: [0, 1, 2]"), "l.yaml")
    sr = state.add_save_restore(spec.lowered.builder, spec.lowered.variables)
    sess = Session(spec.lowered.builder.graph_def)
    sess.run([], targets=[spec.lowered.init_op])
    state.restore(sess, sr, {"w": W}, "test")
    np.testing.assert_array_equal(sess.run(["rows:0"], {"ids": IDS % 4})[0], W[:, IDS % 4])
    gather = spec.lowered.builder.graph_def.node("rows")
    assert gather.op == "GatherV2" and "ConcatPartitions" in gather.inputs[0]
