"""sf.train.Checkpoint and CheckpointManager as TensorFlow 2's: file layout, the state file,
write/read, the load statuses' assertions, keep-N. The layouts and outcomes asserted here are what
TensorFlow 2.21 gives for the same calls (compared by hand; test_checkpoint_tensorflow.py reads
and writes through TensorFlow where it is installed)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from tensorboard.compat.proto import trackable_object_graph_pb2

import specflow as sf
from specflow.errors import CheckpointError
from specflow.io.tensor_bundle import read_bundle, write_bundle


class Sub(sf.Module):
    def __init__(self, rng):
        super().__init__()
        self.k = sf.Variable(rng.normal(size=(2, 3)).astype(np.float32))
        self.empty = sf.Module()


class Net(sf.Module):
    """TF's tf.Module of the same shape writes exactly KEYS (checked with TensorFlow 2.21)."""

    def __init__(self, seed=0, extra=False, fewer=False):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.w = sf.Variable(np.float32(rng.normal()))
        self.layers = [Sub(rng), sf.Variable(np.int64(seed))]
        if not fewer:
            self._priv = sf.Variable(rng.normal(size=3).astype(np.float32))
        self.d = {"a.b/c": sf.Variable(np.int32(seed))}
        self.shared = self.layers[0]  # nearer the root than layers/0: TF's key is model/shared/k
        if extra:
            self.x = sf.Variable(np.float32(3))


KEYS = ["_CHECKPOINTABLE_OBJECT_GRAPH", "model/_priv/.ATTRIBUTES/VARIABLE_VALUE",
        "model/d/a..b.Sc/.ATTRIBUTES/VARIABLE_VALUE", "model/layers/1/.ATTRIBUTES/VARIABLE_VALUE",
        "model/shared/k/.ATTRIBUTES/VARIABLE_VALUE", "model/w/.ATTRIBUTES/VARIABLE_VALUE",
        "save_counter/.ATTRIBUTES/VARIABLE_VALUE", "v/.ATTRIBUTES/VARIABLE_VALUE"]


def _values(net):
    return [v.numpy() for v in net.variables]


def _outcomes(status):
    out = []
    for name in ("assert_consumed", "assert_existing_objects_matched", "assert_nontrivial_match"):
        try:
            assert getattr(status, name)() is status
            out.append("ok")
        except AssertionError:
            out.append("fails")
    return out


def test_save_numbers_files_and_names_the_latest_in_the_state_file(tmp_path):
    net, v = Net(1), sf.Variable([1.0, 2.0])
    ckpt = sf.train.Checkpoint(model=net, v=v)
    assert ckpt.model is net and int(ckpt.save_counter.numpy()) == 0
    assert ckpt.save(file_prefix=str(tmp_path / "ckpt")) == str(tmp_path / "ckpt-1")
    path = ckpt.save(tmp_path / "ckpt")
    assert path == str(tmp_path / "ckpt-2")
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "ckpt-1.data-00000-of-00001", "ckpt-1.index",
                                            "ckpt-2.data-00000-of-00001", "ckpt-2.index"]
    # TF's Checkpoint.save lists only the latest, relative to the directory
    assert (tmp_path / "checkpoint").read_text() == ('model_checkpoint_path: "ckpt-2"\n'
                                                     'all_model_checkpoint_paths: "ckpt-2"\n')
    assert sf.train.latest_checkpoint(tmp_path) == path
    assert sf.train.latest_checkpoint(str(tmp_path)) == path
    tensors = read_bundle(path)
    assert sorted(tensors) == KEYS
    assert int(tensors["save_counter/.ATTRIBUTES/VARIABLE_VALUE"]) == 2
    np.testing.assert_array_equal(tensors["model/shared/k/.ATTRIBUTES/VARIABLE_VALUE"], net.shared.k.numpy())
    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(bytes(tensors["_CHECKPOINTABLE_OBJECT_GRAPH"].item()))
    assert [c.local_name for c in graph.nodes[0].children] == ["model", "v", "save_counter"]
    model = graph.nodes[graph.nodes[0].children[0].node_id]
    assert [c.local_name for c in model.children] == ["w", "layers", "_priv", "d", "shared"]  # assignment order
    v.assign([0.0, 0.0])
    net.w.assign(np.float32(9))
    ckpt.restore(sf.train.latest_checkpoint(tmp_path)).assert_consumed()
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    assert float(net.w.numpy()) != 9


def test_latest_checkpoint_reads_the_state_file_only(tmp_path):
    assert sf.train.latest_checkpoint(tmp_path) is None
    assert sf.train.latest_checkpoint(tmp_path / "missing") is None
    path = sf.train.Checkpoint(v=sf.Variable(1.0)).save(tmp_path / "sub" / "ckpt")
    assert sf.train.latest_checkpoint(tmp_path / "sub") == path
    os.remove(path + ".index")
    assert sf.train.latest_checkpoint(tmp_path / "sub") is None  # named but gone
    (tmp_path / "checkpoint").write_text("garbage {")
    assert sf.train.latest_checkpoint(tmp_path) is None


def test_restore_none_is_a_no_op_whose_assertions_fail():
    v = sf.Variable(3.0)
    status = sf.train.Checkpoint(v=v).restore(None)
    assert float(v.numpy()) == 3.0
    assert _outcomes(status) == ["fails", "fails", "fails"]
    assert status.expect_partial() is status and status.initialize_or_restore() is None
    with pytest.raises(AssertionError, match="No checkpoint specified"):
        status.run_restore_ops()


def test_status_assertions_as_tensorflow(tmp_path):
    path = sf.train.Checkpoint(model=Net(1), v=sf.Variable([0.0, 0.0])).save(tmp_path / "c")

    def outcomes(**objects):
        return _outcomes(sf.train.Checkpoint(**objects).restore(path))

    assert outcomes(model=Net(2), v=sf.Variable([1.0, 1.0])) == ["ok", "ok", "ok"]
    assert outcomes(model=Net(2, extra=True), v=sf.Variable([1.0, 1.0])) == ["fails", "fails", "ok"]
    assert outcomes(model=Net(2, fewer=True), v=sf.Variable([1.0, 1.0])) == ["fails", "ok", "ok"]
    assert outcomes(model=Net(2)) == ["fails", "ok", "ok"]
    assert outcomes(other=Net(2)) == ["fails", "fails", "ok"]  # the save counter still matches
    status = sf.train.Checkpoint(model=Net(2)).restore(path)
    assert status.expect_partial() is status and status.run_restore_ops() is None
    with pytest.raises(AssertionError, match=r"Unresolved object in checkpoint \(root\)\.v"):
        status.assert_consumed()


def test_write_and_read_skip_the_counter_and_the_state_file(tmp_path):
    net = Net(1)
    ckpt = sf.train.Checkpoint(model=net)
    assert ckpt.write(tmp_path / "w") == str(tmp_path / "w")
    assert sorted(os.listdir(tmp_path)) == ["w.data-00000-of-00001", "w.index"]
    assert "save_counter/.ATTRIBUTES/VARIABLE_VALUE" not in read_bundle(str(tmp_path / "w"))
    other = Net(2)
    assert _outcomes(sf.train.Checkpoint(model=other).read(tmp_path / "w")) == ["ok", "ok", "ok"]
    for a, b in zip(_values(net), _values(other)):
        np.testing.assert_array_equal(a, b)
    # restore() makes the save counter, which a written checkpoint lacks: TF's outcome
    assert _outcomes(sf.train.Checkpoint(model=Net(2)).restore(tmp_path / "w")) == ["fails", "fails", "ok"]
    assert _outcomes(sf.train.Checkpoint(model=Net(2)).read(ckpt.save(tmp_path / "s"))) == ["fails", "ok", "ok"]


def test_a_mismatched_value_is_an_error_and_nothing_is_assigned(tmp_path):
    path = sf.train.Checkpoint(model=Net(1)).save(tmp_path / "c")
    net = Net(2)
    net.w = sf.Variable(np.zeros(3, np.float32))
    before = _values(net)
    with pytest.raises(CheckpointError, match=r"holds 'model/w/.ATTRIBUTES/VARIABLE_VALUE' as float32\[\]"):
        sf.train.Checkpoint(model=net).restore(path)
    for a, b in zip(before, _values(net)):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(CheckpointError, match="the '-1' in"):
        sf.train.Checkpoint(model=net).restore(tmp_path / "c")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match="without a checkpoint"):
        sf.train.Checkpoint(model=net).restore(tmp_path / "empty")
    with pytest.raises(CheckpointError, match="track modules and variables"):
        sf.train.Checkpoint(model=3)


def test_root_and_directories(tmp_path):
    """A positional root's attributes are the top level; a SavedModel directory restores its
    variables; a checkpoint directory (specflow's extension) its latest checkpoint."""

    class M(sf.Module):
        def __init__(self, value):
            super().__init__()
            self.w = sf.Variable(np.full(2, value, np.float32))

        @sf.function(input_signature=[sf.TensorSpec([None], sf.float32)])
        def __call__(self, x):
            return x * self.w[0]

    path = sf.train.Checkpoint(M(1.0)).save(tmp_path / "ck" / "ckpt")
    assert sorted(read_bundle(path)) == ["_CHECKPOINTABLE_OBJECT_GRAPH", "save_counter/.ATTRIBUTES/VARIABLE_VALUE",
                                         "w/.ATTRIBUTES/VARIABLE_VALUE"]
    m = M(0.0)
    sf.train.Checkpoint(m).restore(tmp_path / "ck").assert_consumed()
    np.testing.assert_array_equal(m.w.numpy(), [1.0, 1.0])
    sf.save(M(5.0), tmp_path / "export")
    status = sf.train.Checkpoint(m).restore(tmp_path / "export").expect_partial()
    np.testing.assert_array_equal(m.w.numpy(), [5.0, 5.0])
    assert _outcomes(status) == ["fails", "fails", "ok"]  # TF's too: a SavedModel has no save counter


def test_name_based_checkpoints_restore_by_name(tmp_path):
    """A bundle without an object graph (specflow's earlier layout, keyword/path keys) restores by
    name, as TF restores a name-based checkpoint; the save counter may be missing."""
    net = Net(1)
    write_bundle(str(tmp_path / "old-1"), {f"model/{p}": v.numpy() for p, v in net.named_variables().items()})
    other = Net(2)
    status = sf.train.Checkpoint(model=other).restore(tmp_path / "old-1")
    assert _outcomes(status) == ["ok", "ok", "ok"]
    for a, b in zip(_values(net), _values(other)):
        np.testing.assert_array_equal(a, b)
    assert _outcomes(sf.train.Checkpoint(model=Net(2, extra=True)).restore(tmp_path / "old-1")) == ["fails"] * 3


def _manager_files(directory):
    return sorted(n for n in os.listdir(directory) if n.endswith(".index"))


def test_checkpoint_manager_keeps_the_newest(tmp_path):
    v = sf.Variable(0.0)
    ckpt = sf.train.Checkpoint(v=v)
    manager = sf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=2)
    assert manager.directory == str(tmp_path) and manager.checkpoint is ckpt
    assert manager.latest_checkpoint is None and manager.checkpoints == []
    paths = []
    for i in range(4):
        v.assign(float(i))
        paths.append(manager.save())
    assert paths == [str(tmp_path / f"ckpt-{i}") for i in range(1, 5)]
    assert manager.checkpoints == paths[2:] and manager.latest_checkpoint == paths[-1]
    assert _manager_files(tmp_path) == ["ckpt-3.index", "ckpt-4.index"]
    assert sf.train.latest_checkpoint(tmp_path) == paths[-1]
    # a new manager takes the list over; checkpoint_number names the save, the counter still counts
    again = sf.train.CheckpointManager(sf.train.Checkpoint(v=v), tmp_path, max_to_keep=2)
    assert again.checkpoints == paths[2:]
    assert again.save(checkpoint_number=sf.Variable(np.int64(100))) == str(tmp_path / "ckpt-100")
    assert _manager_files(tmp_path) == ["ckpt-100.index", "ckpt-4.index"]
    restored = sf.Variable(-1.0)
    checkpoint = sf.train.Checkpoint(v=restored)
    checkpoint.restore(again.latest_checkpoint).assert_consumed()
    assert float(restored.numpy()) == 3.0 and int(checkpoint.save_counter.numpy()) == 1


def test_checkpoint_manager_deletes_only_its_own_listed_checkpoints(tmp_path):
    """Never a file the state file does not list, nor one of another name, nor anything outside."""
    v = sf.Variable(1.0)
    for name in ("ckpt-7", "stray-1"):
        write_bundle(str(tmp_path / name), {"x": np.zeros(1)})
    (tmp_path / "notes.txt").write_text("mine")
    ckpt = sf.train.Checkpoint(v=v)
    ckpt.save(tmp_path / "other")  # lists other-1 as the latest
    manager = sf.train.CheckpointManager(ckpt, tmp_path, max_to_keep=1)
    assert manager.checkpoints == [str(tmp_path / "other-1")]
    manager.save()
    manager.save()  # ckpt-2 deleted; other-1 leaves the list, its files stay
    assert _manager_files(tmp_path) == ["ckpt-3.index", "ckpt-7.index", "other-1.index", "stray-1.index"]
    assert manager.checkpoints == [str(tmp_path / "ckpt-3")]
    assert (tmp_path / "notes.txt").read_text() == "mine"
    with pytest.raises(CheckpointError, match="positive integer"):
        sf.train.CheckpointManager(ckpt, tmp_path, max_to_keep=0)


def test_checkpoint_manager_keep_all_interval_and_initialize(tmp_path):
    step = sf.Variable(np.int64(0))
    ckpt = sf.train.Checkpoint(step=step)
    calls = []
    manager = sf.train.CheckpointManager(ckpt, tmp_path / "run", max_to_keep=None, step_counter=step,
                                         checkpoint_interval=2, checkpoint_name="model", init_fn=lambda: calls.append(1))
    assert manager.restore_or_initialize() is None and calls == [1]
    saved = []
    for s in range(6):
        step.assign(np.int64(s))
        saved.append(manager.save())
    assert saved == [str(tmp_path / "run" / f"model-{n}") if n else None for n in (1, None, 2, None, 3, None)]
    assert manager.save(check_interval=False) == str(tmp_path / "run" / "model-4")
    assert manager.save(check_interval=False) is None  # the same step again
    assert len(manager.checkpoints) == 4
    step.assign(np.int64(-1))
    fresh = sf.train.CheckpointManager(ckpt, tmp_path / "run", max_to_keep=None)
    assert fresh.restore_or_initialize() == str(tmp_path / "run" / "model-4") and int(step.numpy()) == 5
    with pytest.raises(CheckpointError, match="step_counter"):
        sf.train.CheckpointManager(ckpt, tmp_path, max_to_keep=1, checkpoint_interval=2)
