"""The cluster a command runs or places on: ``--cluster``/``--address``/``--task-devices``/
``--placement`` over the spec's ``cluster:`` section. Kept apart from ``cli.py`` (the commands);
importing it does not import Ray."""

from __future__ import annotations

from specflow.cli_args import UserError


def cluster_spec(s, cluster: str | None, address: str | None, task_devices, placement):
    """(ClusterSpec, notices) for a command's flags, or (None, []) for a local run: --cluster's
    jobs over the spec's cluster section (which gives the rest)."""
    if cluster is None and address is None:
        if task_devices or placement:
            raise UserError("--task-devices and --placement need --cluster")
        return None, []
    from specflow.distributed.cluster_spec import (
        PLACEMENTS,
        ClusterSpec,
        cluster_from_section,
        parse_cli,
        parse_task_devices,
    )

    jobs = parse_cli(cluster) if cluster else None
    section = s.model.cluster
    if jobs is None and section is None:
        raise UserError(f"{s.path} has no cluster: section; give the jobs, e.g. --cluster local:ps=1,worker=2")
    spec = cluster_from_section(section, s.source, s.graph_def) if section is not None else ClusterSpec(jobs)
    if jobs is not None:
        spec = spec.with_jobs(jobs)
    if task_devices:
        spec.task_devices.update(parse_task_devices(task_devices))
        unknown = [j for j in spec.task_devices if j not in spec.jobs]
        if unknown:
            raise UserError(f"--task-devices names job '{unknown[0]}', which the cluster lacks (jobs: {', '.join(spec.jobs)})")
    if placement is not None:
        if placement not in PLACEMENTS:
            raise UserError(f"--placement: expected one of {', '.join(PLACEMENTS)}, got '{placement}'")
        spec.placement = placement
    spec.constrained(s.graph_def)  # every device constraint must exist on this cluster
    return spec, list(spec.notices)


def local_training_notes(s) -> list[str]:
    """A local ``train`` checks the spec's cluster-only sections as ``validate`` does, and says
    once that ``train.distributed`` does not apply to it (it picks how ``--cluster`` trains)."""
    from specflow.distributed.replicas import check_spec_cluster

    check_spec_cluster(s)
    d = s.train.distributed if s.train is not None else None
    if d is None:
        return []
    return [f"train.distributed (mode: {d.mode}) applies with --cluster; this run trains locally, in one process"]


def no_devices_on_a_cluster(cspec, devices) -> None:
    if cspec is not None and devices:
        raise UserError("--devices is for a local run; on a cluster give each job's with --task-devices worker=cpu:2")


def inspect_training(s, cspec, fmt: str, lossy: bool, out) -> None:
    """``inspect --cluster --placed`` of a spec with ``train:``: the step ``train --cluster``
    runs on every worker (variables and slots per ps, bytes pulled and pushed), without Ray."""
    from specflow.distributed.training_plan import training_plan
    from specflow.train.data_fit import errors_located
    from specflow.views.cluster_view import cluster_dot, training_json, training_renderable

    with errors_located(s):
        plan = training_plan(s, cspec, lossy)
    if fmt == "json":
        print(training_json(plan))
    elif fmt == "dot":
        print(cluster_dot(plan.first))
    else:
        out.print(training_renderable(plan, s.model.name))


def connect(cspec, address: str | None, tracing: bool):
    """The Ray-backed cluster a Session runs on (Ray started privately, or ``address`` joined)."""
    from specflow.distributed.engine import Cluster, require_ray

    require_ray()
    if tracing:
        raise UserError("--trace is not supported with --cluster yet")
    return Cluster(cspec, address=address)


def distributed_trainer(s, options, listener, cspec, address: str | None, devices):
    """``train --cluster``'s trainer; Ray is started here, before the CLI installs its signal
    handlers (ray.init installs its own for SIGTERM, which would replace them)."""
    from specflow.distributed.engine import ensure_ray
    from specflow.distributed.training import DistributedTrainer

    if devices:
        raise UserError("--devices is for a local run; a cluster's tasks have their own devices")
    trainer = DistributedTrainer(s, options, listener, cluster=cspec, address=address)
    ensure_ray(address)
    return trainer
