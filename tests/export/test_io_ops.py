"""SaveV2 and MergeV2Checkpoints write files, so they run here with temporary directories: what
they write is read back with the bundle reader, and RestoreV2 reads it again in a graph."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.errors import OpError
from specflow.io.tensor_bundle import read_bundle
from specflow.ops.eval import evaluate_op
from tests.ops.cases_io import string, strings


def test_save_v2_writes_a_bundle_restore_v2_reads_it(tmp_path):
    prefix = str(tmp_path / "ckpt" / "model")
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    step = np.array(7, dtype=np.int64)
    evaluate_op("SaveV2", [string(prefix), strings("w", "global_step"), strings("", ""), w, step])
    stored = read_bundle(prefix)
    assert set(stored) == {"w", "global_step"}
    np.testing.assert_array_equal(stored["w"], w)
    assert stored["global_step"].dtype == np.int64 and stored["global_step"] == 7

    got = evaluate_op("RestoreV2", [string(prefix), strings("global_step", "w"), strings("", "")],
                      dtypes=["int64", "float32"])
    assert got[0] == 7
    np.testing.assert_array_equal(got[1], w)


def test_restore_v2_reads_the_index_once_for_all_its_tensors(tmp_path, monkeypatch):
    """It read the whole index once per tensor: 100 s restoring NASNetMobile's 2,254 tensors."""
    from specflow.io import tensor_bundle

    prefix = str(tmp_path / "m")
    names = [f"v{i}" for i in range(40)]
    evaluate_op("SaveV2", [string(prefix), strings(*names), strings(*[""] * 40),
                           *[np.full(3, i, np.float32) for i in range(40)]])  # fmt: skip
    reads = []
    real = tensor_bundle._read_index
    monkeypatch.setattr(tensor_bundle, "_read_index", lambda p: (reads.append(p), real(p))[1])
    got = evaluate_op("RestoreV2", [string(prefix), strings(*names[::-1], "v3"), strings(*[""] * 40, "3 1,2")],
                      dtypes=["float32"] * 41)  # fmt: skip
    assert len(reads) == 1
    assert [float(g[0]) for g in got[:40]] == list(range(39, -1, -1))
    np.testing.assert_array_equal(got[40], [3.0, 3.0])  # a name asked for twice, the second time a slice


def test_restore_v2_errors_name_the_tensor_and_file(tmp_path):
    prefix = str(tmp_path / "m")
    evaluate_op("SaveV2", [string(prefix), strings("w"), strings(""), np.ones(2, np.float32)])
    with pytest.raises(OpError, match="has no tensor 'nope'"):
        evaluate_op("RestoreV2", [string(prefix), strings("nope"), strings("")], dtypes=["float32"])
    with pytest.raises(OpError, match="holds 'w' as float32, expected int32"):
        evaluate_op("RestoreV2", [string(prefix), strings("w"), strings("")], dtypes=["int32"])
    with pytest.raises(OpError, match="saved with shape \\[2\\].*of shape \\[3\\]"):
        evaluate_op("RestoreV2", [string(prefix), strings("w"), strings("3 0,1")], dtypes=["float32"])
    with pytest.raises(OpError, match="cannot parse shape_and_slices"):
        evaluate_op("RestoreV2", [string(prefix), strings("w"), strings("2 a,1")], dtypes=["float32"])
    with pytest.raises(OpError, match="checkpoint index not found"):
        evaluate_op("RestoreV2", [string(str(tmp_path / "missing")), strings("w"), strings("")], dtypes=["float32"])


def test_merge_v2_checkpoints_joins_shards_and_deletes_them(tmp_path):
    """The sharded save TensorFlow's Saver builds: each shard under a temp dir, then a merge."""
    tmp = tmp_path / "model_temp"
    shard = [evaluate_op("ShardedFilename", [string(str(tmp / "part")), np.int32(i), np.int32(2)])[0].item()
             for i in range(2)]
    evaluate_op("SaveV2", [string(shard[0].decode()), strings("a"), strings(""), np.array([1.0], np.float32)])
    evaluate_op("SaveV2", [string(shard[1].decode()), strings("b"), strings(""), np.array([2, 3], np.int32)])
    dest = str(tmp_path / "model")
    evaluate_op("MergeV2Checkpoints", [np.array(shard, dtype=object), string(dest)])
    merged = read_bundle(dest)
    assert merged["a"].tolist() == [1.0] and merged["b"].tolist() == [2, 3]
    assert not tmp.exists()  # shards deleted, then their directory (delete_old_dirs)
    with pytest.raises(OpError, match="cannot merge"):
        evaluate_op("MergeV2Checkpoints", [np.array(shard, dtype=object), string(dest)])


def test_partitioned_variable_saved_in_slices_by_two_shards_restores_any_slice(tmp_path):
    """TF's sharded Saver for a partitioned variable: each shard's SaveV2 names the whole
    variable with its part's shape_and_slices; the merge joins the slices; RestoreV2 reads the
    whole, or another partitioning's part, across the saved parts."""
    full = np.arange(20, dtype=np.float32).reshape(5, 4)
    shard = [str(tmp_path / "tmp" / f"part-{k}") for k in range(2)]
    evaluate_op("SaveV2", [string(shard[0]), strings("emb", "emb"), strings("5 4 0,2:0,4", "5 4 2,1:0,4"),
                           full[:2], full[2:3]])  # two parts on one shard  # fmt: skip
    evaluate_op("SaveV2", [string(shard[1]), strings("emb"), strings("5 4 3,2:0,4"), full[3:]])
    dest = str(tmp_path / "model")
    evaluate_op("MergeV2Checkpoints", [np.array(shard, dtype=object), string(dest)])
    whole, rows = evaluate_op("RestoreV2", [string(dest), strings("emb", "emb"), strings("", "5 4 1,3:-")],
                              dtypes=["float32", "float32"])  # fmt: skip
    np.testing.assert_array_equal(whole, full)
    np.testing.assert_array_equal(rows, full[1:4])
    with pytest.raises(OpError, match="repeats a name"):
        evaluate_op("SaveV2", [string(shard[0]), strings("emb", "emb"), strings("5 4 0,2:0,4", "5 4 0,2:0,4"),
                               full[:2], full[:2]])  # fmt: skip
