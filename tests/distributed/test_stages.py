"""Stages (distributed/stages.py): a training step on a ps, whose tasks send both ways, cut into
calls that form a DAG — ps reads, worker step, ps updates — so the master runs it as dataflow.
The cut is a pure function of the pieces (no Ray); the step it makes gives the same numbers as
the push protocol on real tasks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specflow.distributed import ClusterSpec
from specflow.distributed.placement import task_order
from specflow.distributed.stages import stage_split
from specflow.distributed.task_partition import pure_read, split_virtual
from specflow.distributed.training_plan import training_plan
from specflow.schema.loader import load_spec, load_spec_text

MODELS = Path(__file__).resolve().parents[2] / "models"
PS, W0 = "/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0"


def _step(spec, cluster="ps=1,worker=1"):
    jobs = dict(part.split("=") for part in cluster.split(","))
    return training_plan(spec, ClusterSpec({k: int(v) for k, v in jobs.items()})).first


def test_a_training_step_cuts_into_ps_reads_worker_step_ps_updates():
    step = _step(load_spec(MODELS / "digits_mlp.yaml"))
    assert task_order(step.graphs) is None  # weights out, gradients back: a cycle between tasks
    staged = stage_split(step.graphs)
    assert list(staged) == [f"{PS}#0", f"{PS}#2", f"{W0}#1"]
    order = task_order(staged)
    assert [t for t, _, _ in order] == [f"{PS}#0", f"{W0}#1", f"{PS}#2"]
    reads, updates, work = (staged[t] for t in (f"{PS}#0", f"{PS}#2", f"{W0}#1"))
    assert pure_read(reads)  # ps#0 only reads the variables and sends them
    assert {n.op for n in updates.nodes} >= {"ResourceApplyAdam", "_Recv"}
    assert not any(n.op.startswith("ResourceApply") for g in (reads, work) for n in g.nodes)
    # a variable's handle is repeated where it is used, not sent from one stage to the other
    handles = lambda g: {n.name for n in g.nodes if n.op == "VarHandleOp"}  # noqa: E731
    assert {"hidden/kernel", "logits/kernel"} <= handles(reads) <= handles(updates)
    # every send names the stage its receiver runs in, on both ends of the pair
    recv_at = {n.attrs["tensor_name"]: (t, n.attrs["recv_device"]) for t, g in staged.items() for n in g.nodes
               if n.op == "_Recv"}  # fmt: skip
    for g in staged.values():
        for n in g.nodes:
            if n.op == "_Send":
                where, device = recv_at[n.attrs["tensor_name"]]
                assert n.attrs["recv_device"] == device and device.endswith("#" + str(split_virtual(where)[1]))
    names = [n.name for g in staged.values() for n in g.nodes if n.op in ("_Send", "_Recv")]
    assert len(names) == len(set(names))


def test_feeds_and_constants_stay_with_their_consumers():
    """A stage is as late as its consumers allow: the worker's feeds and the optimizer's
    constants make no stage of their own, and no handle, constant or feed crosses between a
    task's own stages (each stage that reads one has its own copy)."""
    staged = stage_split(_step(load_spec(MODELS / "digits_mlp.yaml")).graphs)
    assert len(staged) == 3
    for g in staged.values():
        nodes = g.node_map()
        for n in g.nodes:
            if n.op == "_Send" and "_stage_" in n.name:  # between two stages of this task
                assert nodes[n.inputs[0].split(":")[0]].op not in ("VarHandleOp", "Const", "_Arg"), n.name


LOOP = """specflow: 1
name: loop_on_ps
inputs:
  x: {dtype: float32, shape: [null, 3]}
variables:
  w: {shape: [3], initializer: ones}
nodes:
  h: {op: Mul, inputs: [x, w]}
  loss: {op: Sum, inputs: [h], axis: [0, 1]}
train:
  loss: loss
  optimizer: {sgd: {learning_rate: 0.1}}
  data: {source: {npz: unused.npz}, feeds: {x: x}, batch_size: 2}
"""


def test_pieces_without_a_cycle_or_with_one_stage_are_left_alone():
    step = _step(load_spec_text(LOOP, "l.yaml"))
    staged = stage_split(step.graphs)
    assert staged is not None and task_order(staged) is not None
    assert stage_split({PS: step.graphs[PS]}) is None  # one task: nothing to cut


@pytest.fixture(scope="module")
def cluster(ray_local):
    from specflow.distributed import Cluster

    with Cluster(ClusterSpec({"ps": 1, "worker": 1})) as c:
        yield c


def test_staged_steps_equal_pushed_steps_on_real_tasks(cluster):
    """Ten Adam steps of digits on 1 ps + 1 worker: the same weights by the staged dataflow
    (three calls a step, none from inside an actor) and by the push protocol."""
    from specflow.distributed.master import ClusterSession
    from specflow.distributed.training_plan import step_ends
    from specflow.runtime.session import SessionConfig
    from specflow.train.graph import build_training_graph

    spec = load_spec(MODELS / "digits_mlp.yaml")
    g = build_training_graph(spec, spec.train, None)
    rng = np.random.default_rng(0)
    batches = [{"images": rng.random((16, 64), np.float32), "labels": rng.integers(0, 10, 16)} for _ in range(10)]
    weights = []
    for stages in (True, False):
        cluster.reset()
        with ClusterSession(g.graph_def, SessionConfig(graph_seed=1), cluster=cluster) as sess:
            sess.stages = stages
            sess.run([], targets=[g.init_op])
            for feeds in batches:  # the updates as targets, as the trainer runs a replica's step
                sess.run([g.loss], feeds, targets=step_ends(g.graph_def, g.train_op))
            flows = [len(p.flow) for p in sess._plans.values() if p.flow is not None]
            assert (3 in flows) == stages, flows
            weights.append(sess.run([v.read for v in g.variables]))
    for a, b in zip(*weights):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_async_replicas_prefetch_the_next_steps_reads_and_a_foreign_write_voids_them(cluster):
    """With prefetch_reads (async replicas) the ps's updates and its reads for the next step run
    in one call: two calls a step instead of three, the same weights as reading at each step's
    start (one replica: nothing writes in between); a write by another session in between (here
    an assign, as a restore would be) voids the prefetched values, so the next step reads anew."""
    from specflow.distributed.master import ClusterSession
    from specflow.distributed.training_plan import step_ends
    from specflow.runtime.session import SessionConfig
    from specflow.train.graph import build_training_graph

    spec = load_spec(MODELS / "digits_mlp.yaml")
    g = build_training_graph(spec, spec.train, None)
    kernel = next(v for v in g.variables if v.name == "logits/kernel")
    rng = np.random.default_rng(1)
    batches = [{"images": rng.random((16, 64), np.float32), "labels": rng.integers(0, 10, 16)} for _ in range(8)]
    runs = []
    for prefetch in (True, False):
        cluster.reset()
        with ClusterSession(g.graph_def, SessionConfig(graph_seed=1), cluster=cluster) as sess, \
                ClusterSession(g.graph_def, SessionConfig(graph_seed=1), cluster=cluster) as other:  # fmt: skip
            sess.prefetch_reads = prefetch
            sess.run([], targets=[g.init_op])
            losses = []
            for i, feeds in enumerate(batches):
                if i == 5:  # another session writes the ps between two steps: the kernel re-initialized
                    other.run([], targets=[kernel.assign])
                losses.append(sess.run(g.loss, feeds, targets=step_ends(g.graph_def, g.train_op)))
            runs.append((losses, sess.run([v.read for v in g.variables]), sess.reads_prefetched))
    (with_losses, with_w, hits), (without_losses, without_w, none) = runs
    assert hits == 6 and none == 0  # steps 1-4 and 6-7 from the step before; step 5 read anew
    np.testing.assert_allclose(with_losses, without_losses, rtol=1e-6)
    for a, b in zip(with_w, without_w):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
