"""sf.train.Checkpoint and TensorFlow's tf.train.Checkpoint read each other's checkpoints: the
same files, keys and object graph for the same module tree, restored both ways (save/restore,
write/read, CheckpointManager), TF's latest_checkpoint reading sf's state file and the other way.
Skipped where TensorFlow is not importable (test_checkpoint_tf_api.py checks the layout without)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import specflow as sf

tf = pytest.importorskip("tensorflow")
SPEC = Path(__file__).resolve().parents[2] / "models" / "digits_mlp.yaml"


def _net(M, seed):
    rng = np.random.default_rng(seed)

    class Sub(M.Module):
        def __init__(self):
            super().__init__()
            self.k = M.Variable(rng.normal(size=(2, 3)).astype(np.float32))
            self.empty = M.Module()

    class Net(M.Module):
        def __init__(self):
            super().__init__()
            self.w = M.Variable(np.float32(rng.normal()))
            self.layers = [Sub(), M.Variable(np.int64(seed))]
            self._priv = M.Variable(rng.normal(size=3).astype(np.float32))
            self.d = {"a.b/c": M.Variable(np.int32(seed))}
            self.shared = self.layers[0]

    return Net(), M.Variable(rng.normal(size=2).astype(np.float32))


def _values(net, v):
    return [np.asarray(x.numpy()) for x in (net.w, net.layers[0].k, net.layers[1], net._priv, net.d["a.b/c"], v)]


@pytest.mark.parametrize("writer,reader", [(sf, tf), (tf, sf)], ids=["sf_to_tf", "tf_to_sf"])
def test_save_and_restore_across(tmp_path, writer, reader):
    net, v = _net(writer, 1)
    ckpt = writer.train.Checkpoint(model=net, v=v)
    ckpt.save(str(tmp_path / "ckpt"))
    path = ckpt.save(str(tmp_path / "ckpt"))
    assert path == str(tmp_path / "ckpt-2")
    assert reader.train.latest_checkpoint(str(tmp_path)) == path
    other, w = _net(reader, 2)
    restored = reader.train.Checkpoint(model=other, v=w)
    status = restored.restore(reader.train.latest_checkpoint(str(tmp_path)))
    status.assert_consumed().assert_existing_objects_matched().assert_nontrivial_match()
    for a, b in zip(_values(net, v), _values(other, w)):
        np.testing.assert_array_equal(a, b)
    assert int(restored.save_counter.numpy()) == 2
    # write/read: no counter, no state file
    net.w.assign(np.float32(7))
    written = ckpt.write(str(tmp_path / "written"))
    status = reader.train.Checkpoint(model=other, v=w).read(written)  # holds the writer's counter:
    status.assert_existing_objects_matched()
    with pytest.raises(AssertionError, match="save_counter"):
        status.assert_consumed()  # which a fresh reader lacks
    assert float(other.w.numpy()) == 7


def test_same_keys_and_object_graph_as_tensorflow(tmp_path):
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    graphs = []
    for M in (sf, tf):
        path = M.train.Checkpoint(model=_net(M, 1)[0], v=_net(M, 1)[1]).save(str(tmp_path / M.__name__ / "c"))
        reader = tf.train.load_checkpoint(path)
        graph = trackable_object_graph_pb2.TrackableObjectGraph()
        graph.ParseFromString(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
        for node in graph.nodes:
            for attribute in node.attributes:
                attribute.full_name = ""  # the variables' names: "Variable" in TF, sf's own
        graphs.append((reader.get_variable_to_shape_map(), graph,
                       (tmp_path / M.__name__ / "checkpoint").read_text()))
    assert graphs[0] == graphs[1]


@pytest.mark.parametrize("writer,reader", [(sf, tf), (tf, sf)], ids=["sf_to_tf", "tf_to_sf"])
def test_checkpoint_managers_across(tmp_path, writer, reader):
    v = writer.Variable(0.0)
    manager = writer.train.CheckpointManager(writer.train.Checkpoint(v=v), str(tmp_path), max_to_keep=2)
    for i in range(3):
        v.assign(float(i + 1))
        manager.save()
    assert sorted(n for n in os.listdir(tmp_path) if n.endswith(".index")) == ["ckpt-2.index", "ckpt-3.index"]
    w = reader.Variable(0.0)
    ckpt = reader.train.Checkpoint(v=w)
    again = reader.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=2)
    assert again.checkpoints == [str(tmp_path / "ckpt-2"), str(tmp_path / "ckpt-3")]
    ckpt.restore(again.latest_checkpoint).assert_consumed()
    assert float(w.numpy()) == 3.0
    assert again.save() == str(tmp_path / "ckpt-4")  # the restored counter goes on
    assert sorted(n for n in os.listdir(tmp_path) if n.endswith(".index")) == ["ckpt-3.index", "ckpt-4.index"]


def test_spec_module_checkpoints_across(tmp_path):
    """A spec-loaded module's checkpoint is name-based (its spec's names, as `specflow train`
    writes them): TF restores it by name into the spec's export loaded; TF's object-based
    checkpoint of that loaded export restores into the spec module through the object graph."""
    spec = sf.load(SPEC)
    sf.save(spec, tmp_path / "export")
    kernel = spec.named_variables()["hidden/kernel"]
    kernel.assign(np.ones(kernel.shape.as_list(), np.float32))
    path = sf.train.Checkpoint(model=spec).save(str(tmp_path / "ck" / "ckpt"))
    loaded = tf.saved_model.load(str(tmp_path / "export"))
    tf_ckpt = tf.train.Checkpoint(model=loaded)
    tf_ckpt.restore(tf.train.latest_checkpoint(str(tmp_path / "ck"))).assert_consumed()
    np.testing.assert_array_equal(loaded.hidden.kernel.numpy(), kernel.numpy())
    assert int(tf_ckpt.save_counter.numpy()) == 1 and path.endswith("ckpt-1")
    loaded.hidden.kernel.assign(tf.zeros_like(loaded.hidden.kernel))
    sf.train.Checkpoint(model=spec).restore(tf_ckpt.save(str(tmp_path / "tf" / "ckpt"))).assert_nontrivial_match()
    assert not kernel.numpy().any()
