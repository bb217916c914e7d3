"""Tasks on a two-node Ray cluster on this machine (ray.cluster_utils.Cluster): each job asks
for its node's custom resource, and the tasks report the node they run on."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from specflow.distributed import Cluster, ClusterSpec
from specflow.runtime.session import Session, SessionConfig
from specflow.schema.loader import load_spec


@pytest.fixture(scope="module")
def two_nodes():
    pytest.importorskip("ray")
    import ray
    from ray.cluster_utils import Cluster as RayCluster

    from specflow.distributed import engine

    engine.shutdown_ray()
    if ray.is_initialized():
        ray.shutdown()
    rc = RayCluster(initialize_head=True, head_node_args={"num_cpus": 1, "resources": {"node_a": 4}})
    rc.add_node(num_cpus=1, resources={"node_b": 4}, labels={"zone": "b"})
    rc.wait_for_nodes()
    ray.init(address=rc.address, logging_level="ERROR", log_to_driver=False)
    yield rc
    ray.shutdown()
    rc.shutdown()


def test_tasks_run_on_both_nodes(two_nodes):
    import ray

    spec = load_spec(Path(__file__).resolve().parents[2] / "models" / "digits_mlp.yaml")
    cluster = ClusterSpec({"ps": 1, "worker": 1}, resources={"ps": {"node_a": 1}, "worker": {"node_b": 1}})
    x = np.random.default_rng(0).standard_normal((4, 64)).astype(np.float32)
    with Session(spec.graph_def, SessionConfig(graph_seed=5)) as local:
        local.run([], targets=[spec.lowered.init_op])
        want = local.run("probs", {"images": x})
    with Cluster(cluster, address=two_nodes.address) as c:
        nodes = {t: info["node_id"] for t, info in c.infos.items()}
        with Session(spec.graph_def, SessionConfig(graph_seed=5), cluster=c) as sess:
            sess.run([], targets=[spec.lowered.init_op])
            got = sess.run("probs", {"images": x})
            assert sess.cross_task_batches > 0
    by_resource = {n["NodeID"]: n["Resources"] for n in ray.nodes() if n["Alive"]}
    assert "node_a" in by_resource[nodes["/job:ps/replica:0/task:0"]]
    assert "node_b" in by_resource[nodes["/job:worker/replica:0/task:0"]]
    assert len(set(nodes.values())) == 2
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_async_training_with_the_workers_on_the_other_node(two_nodes, tmp_path):
    """Each worker's own loop (replica_loop.py) runs in its actor on node b and calls the ps on
    node a; the run ends at exactly its steps and its checkpoint evaluates."""
    from specflow.distributed.replicas import training_cluster
    from specflow.distributed.training import DistributedTrainer
    from specflow.schema.loader import load_spec_text
    from specflow.train.evaluate import evaluate_checkpoint
    from specflow.train.loop import TrainOptions

    text = (Path(__file__).resolve().parents[2] / "models" / "digits_mlp.yaml").read_text()
    spec = load_spec_text(text.replace("  steps: 2000", "  steps: 60"), "digits_mlp.yaml")
    cluster = ClusterSpec({"ps": 1, "worker": 2}, resources={"ps": {"node_a": 1}, "worker": {"node_b": 1}})
    with Cluster(training_cluster(cluster), address=two_nodes.address) as c:
        trainer = DistributedTrainer(spec, TrainOptions(logdir=tmp_path), cluster=c)
        result = trainer.run()
        nodes = {t: info["node_id"] for t, info in c.infos.items()}
    assert result.step == 60 and sum(trainer.worker_steps) == 60 and min(trainer.worker_steps) > 0
    assert nodes["/job:worker/replica:0/task:0"] == nodes["/job:worker/replica:0/task:1"]
    assert nodes["/job:ps/replica:0/task:0"] != nodes["/job:worker/replica:0/task:0"]
    path, metrics = evaluate_checkpoint(spec, tmp_path)
    assert path.endswith("model.ckpt-60") and metrics["accuracy"] > 0.5


def test_a_node_label_places_a_job(two_nodes):
    spec = ClusterSpec({"worker": 2}, labels={"worker": {"zone": "b"}})
    with Cluster(spec, address=two_nodes.address) as c:
        nodes = {info["node_id"] for info in c.infos.values()}
    import ray

    (labelled,) = [n["NodeID"] for n in ray.nodes() if n["Alive"] and n.get("Labels", {}).get("zone") == "b"]
    assert nodes == {labelled}


@pytest.mark.parametrize("resources, labels, message", [
    ({"worker": {"node_c": 1}}, {}, "cluster job 'worker' asks for Ray resource node_c: 1 per task, which no node"),
    ({"worker": {"node_b": 3}}, {}, "ask for Ray resource node_b: 6 in all (worker: 2 x 3), but the Ray cluster has 4"),
    ({}, {"worker": {"zone": "c"}}, "cluster job 'worker' needs node labels {'zone': 'c'}, which no node"),
])
def test_resources_the_ray_cluster_lacks_are_an_error_not_a_wait(two_nodes, resources, labels, message):
    from specflow.errors import SpecflowError

    c = Cluster(ClusterSpec({"worker": 2}, resources=resources, labels=labels), address=two_nodes.address)
    with pytest.raises(SpecflowError, match=re.escape(message)):
        c.connect()
    assert not c.actors


def test_gpu_task_devices_on_a_cluster_without_gpus_are_an_error_not_a_wait(two_nodes):
    import ray

    from specflow.errors import SpecflowError

    if any(n["Resources"].get("GPU") for n in ray.nodes() if n["Alive"]):
        pytest.skip("this Ray cluster has GPUs")
    c = Cluster(ClusterSpec({"worker": 1}, task_devices={"worker": "gpu:1"}), address=two_nodes.address)
    with pytest.raises(SpecflowError, match=r"asks for Ray resource GPU: 1 per task, .*task devices are gpu:1"):
        c.connect()
