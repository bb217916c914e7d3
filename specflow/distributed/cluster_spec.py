"""The cluster a graph runs on: jobs of tasks, each task's devices, and how nodes are placed.

Accepted forms (all become one :class:`ClusterSpec`):

- a dict of job -> task count: ``{"ps": 1, "worker": 2}`` (optionally ``chief``);
- TensorFlow's ClusterSpec form ``{"worker": ["host:port", ...]}``: only its shape is used (Ray
  places the tasks), and a notice says the addresses were ignored;
- the command line's ``local:ps=1,worker=2`` (``local`` alone: the spec's own ``cluster:``);
- a spec's ``cluster:`` section, either the jobs mapping itself or, to say more::

      cluster:
        jobs: {ps: 1, worker: 2}
        task_devices: {worker: cpu:2}      # per job; default one CPU per task
        task_threads: {worker: 2}          # BLAS/OpenMP threads of each task of a job (below)
        placement: ps                      # ps (default) or round_robin
        place: {tower_b: /job:worker/task:1}   # node or scope -> constraint, on a cluster only
        resources: {worker: {node_b: 1}}   # Ray custom resources each task of a job asks for
        labels: {ps: {zone: a}}            # Ray node labels a job's tasks must run on

``task_threads`` bounds the threads a task's kernels use inside BLAS (numpy's matrix products),
set in the task's process before numpy loads. Unset, a cluster Ray starts on this machine gives
each task its share of the cores (cores // tasks, at least 1): tasks that each spun up a thread
per core would contend for every core (two workers and a ps on 2 cores: 2 workers ran slower
than one on a 784-1024-1024-10 MLP). On a cluster joined with ``--address`` the tasks' nodes are
Ray's choice, so BLAS keeps its own default there unless set.

Nothing here imports Ray: ``specflow inspect --cluster`` plans without starting it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from specflow.errors import DeviceError, Location, SpecError, did_you_mean
from specflow.graph.device_spec import DeviceSpec
from specflow.graph.graph_def import GraphDef

PLACEMENTS = ("ps", "round_robin")
_SECTION_KEYS = ("jobs", "task_devices", "task_threads", "placement", "place", "resources", "labels")
_JOB = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
# The order jobs are listed in (tasks and devices sort by job name elsewhere; this only orders
# what a person reads).
_JOB_ORDER = {"chief": 0, "ps": 1, "worker": 2}


@dataclass
class ClusterSpec:
    jobs: dict[str, int]  # job -> task count
    task_devices: dict[str, str] = field(default_factory=dict)  # job -> "cpu:2" (default "cpu:1")
    placement: str = "ps"
    place: dict[str, str] = field(default_factory=dict)  # node or scope -> device constraint
    resources: dict[str, dict[str, float]] = field(default_factory=dict)  # job -> Ray resources
    labels: dict[str, dict[str, str]] = field(default_factory=dict)  # job -> Ray node label selector
    task_threads: dict[str, int] = field(default_factory=dict)  # job -> BLAS threads per task
    notices: list[str] = field(default_factory=list)

    @property
    def tasks(self) -> list[tuple[str, int]]:
        """Every (job, task index), chief first, then ps, then workers, then the rest."""
        jobs = sorted(self.jobs, key=lambda j: (_JOB_ORDER.get(j, 3), j))
        return [(j, t) for j in jobs for t in range(self.jobs[j])]

    def device_names(self, job: str, task: int) -> list[str]:
        from specflow.runtime.devices import device_name, parse_device_counts

        counts = parse_device_counts(self.task_devices.get(job) or "cpu:1")
        counts.setdefault("CPU", 1)
        return [device_name(k, i, job, task) for k in ("CPU", "GPU") for i in range(counts.get(k, 0))]

    @property
    def all_devices(self) -> list[str]:
        return [d for j, t in self.tasks for d in self.device_names(j, t)]

    def with_jobs(self, jobs: dict[str, int]) -> ClusterSpec:
        """This spec (devices, placement, constraints) on other jobs (the CLI's override)."""
        return ClusterSpec(dict(jobs), dict(self.task_devices), self.placement, dict(self.place),
                           dict(self.resources), dict(self.labels), dict(self.task_threads),
                           list(self.notices))  # fmt: skip

    def describe(self) -> str:
        return ", ".join(f"{j}={n}" for j, n in sorted(self.jobs.items(), key=lambda kv: _JOB_ORDER.get(kv[0], 3)))

    # --- constraints ---------------------------------------------------------------------------

    def constraint_for(self, node_name: str) -> tuple[str, str] | None:
        """The ``place:`` entry (key, constraint) covering ``node_name``: the node itself or its
        innermost scope."""
        best = None
        for key, dev in self.place.items():
            if node_name == key or node_name.startswith(key + "/"):
                if best is None or len(key) > len(best[0]):
                    best = (key, dev)
        return best

    def check_device(self, text: str, *, what: str, location: Location | None, node: str | None = None) -> None:
        """A device constraint must name a job, task and device the cluster has."""
        try:
            spec = DeviceSpec.parse(text)
        except DeviceError as e:
            raise DeviceError(f"{what}: {e.message}", location=location, node=node) from None
        if spec.job is not None and spec.job not in self.jobs:
            raise DeviceError(
                f"{what} names job '{spec.job}', which the cluster lacks (jobs: {', '.join(self.jobs)})"
                + did_you_mean(spec.job, self.jobs), location=location, node=node,
            )  # fmt: skip
        if spec.task is not None:
            jobs = [spec.job] if spec.job is not None else list(self.jobs)
            if not any(spec.task < self.jobs[j] for j in jobs):
                have = ", ".join(f"{j} has {self.jobs[j]} task(s)" for j in jobs)
                raise DeviceError(f"{what} names task {spec.task}, out of range ({have})", location=location, node=node)
        if spec.replica not in (None, 0):
            raise DeviceError(f"{what} names replica {spec.replica}; every task is replica 0",
                              location=location, node=node)  # fmt: skip
        if spec.device_type is not None and not any(spec.is_compatible_with(DeviceSpec.parse(d))
                                                    for d in self.all_devices):  # fmt: skip
            have = ", ".join(f"{j}={self.task_devices.get(j, 'cpu:1')}" for j in self.jobs)
            index = "*" if spec.device_index is None else spec.device_index
            raise DeviceError(f"{what}: no task of the cluster has device {spec.device_type}:{index} "
                              f"(task devices: {have})", location=location, node=node)  # fmt: skip

    def constrained(self, graph: GraphDef) -> GraphDef:
        """A copy of ``graph`` with the ``place:`` constraints merged into its nodes' requests
        (a node's own fields win) and every request checked against the cluster."""
        out = graph.copy()
        for n in out.nodes:
            hit = self.constraint_for(n.name)
            if hit is not None:
                merged = DeviceSpec.parse(hit[1]).merge(DeviceSpec.parse(n.device))
                n.device = merged.to_string()
            if n.device:
                self.check_device(n.device, what=f"device constraint '{n.device}' of '{n.name}' ({n.op})",
                                  location=n.location, node=n.name)  # fmt: skip
        return out


# --- parsing ---------------------------------------------------------------------------------------


def _count(job: str, value: Any, where: str, location: Location | None, notices: list[str]) -> int:
    if not isinstance(job, str) or not _JOB.match(job):
        raise SpecError(f"{where}: bad job name {job!r} (letters, digits and _, starting with a letter)",
                        location=location)  # fmt: skip
    if isinstance(value, bool) or not isinstance(value, (int, list, tuple)):
        raise SpecError(f"{where}.{job}: expected a task count or a list of host:port addresses, got {value!r}",
                        location=location)  # fmt: skip
    if isinstance(value, (list, tuple)):
        if not all(isinstance(a, str) for a in value):
            raise SpecError(f"{where}.{job}: addresses must be host:port strings", location=location)
        notices.append(f"cluster job '{job}': addresses {', '.join(value)} ignored (Ray places the tasks)")
        value = len(value)
    if value < 1:
        raise SpecError(f"{where}.{job}: a job needs at least one task, got {value}", location=location)
    return int(value)


def parse_jobs(jobs: Any, where: str = "cluster", location: Location | None = None,
               locate=None) -> tuple[dict[str, int], list[str]]:  # fmt: skip
    """Jobs from a job -> count (or address list) mapping; ``locate(job)`` gives a job's location."""
    if not isinstance(jobs, dict) or not jobs:
        raise SpecError(f"{where}: expected a mapping of job name to task count, e.g. {{ps: 1, worker: 2}}",
                        location=location)  # fmt: skip
    notices: list[str] = []
    out = {j: _count(j, v, where, locate(j) if locate else location, notices) for j, v in jobs.items()}
    check_singletons(out, where, locate or (lambda job: location))
    return out, notices


# Jobs TensorFlow's multi-worker setup allows one task of (multi_worker_util's cluster check): the
# chief is *the* task that initializes, saves and coordinates; the evaluator, the one that
# evaluates the checkpoints.
SINGLE_TASK_JOBS = ("chief", "evaluator")


def check_singletons(jobs: dict[str, int], where: str, locate=None) -> None:
    """``where``: a section's path (the job is appended) or, without ``locate``, the flag."""
    for job in SINGLE_TASK_JOBS:
        if jobs.get(job, 0) > 1:
            head = f"{where}.{job}" if locate else where
            raise SpecError(f"{head}: a cluster has at most one {job} task (as in TensorFlow), got {job}={jobs[job]}"
                            + ("; more workers go in the worker job" if job == "chief" else ""),
                            location=locate(job) if locate else None)  # fmt: skip


# Each task is a process of its own (a Ray actor of about 100 MB that takes a second or more to
# start): past this many on one machine a run spends its time starting processes, and Ray, asked
# for 100,000 at once, never finished (``worker=99999`` hung instead of failing).
TASKS_PER_MACHINE = 64


def check_task_count(spec: ClusterSpec, machines: int = 1, where: str = "") -> None:
    """A clear error when ``spec`` has more tasks than ``machines`` machines run
    (``TASKS_PER_MACHINE`` each); ``where`` names the Ray cluster when it is not this machine."""
    n = sum(spec.jobs.values())
    limit = TASKS_PER_MACHINE * max(1, machines)
    if n <= limit:
        return
    on = where or "a local cluster (this machine)"
    raise SpecError(f"the cluster {spec.describe()} has {n:,} tasks, but {on} runs at most {limit:,} "
                    f"({TASKS_PER_MACHINE} per machine, each task a process of its own)"
                    + ("" if where else "; for more, attach to a multi-node Ray cluster with --address"))


def parse_cli(text: str) -> dict[str, int] | None:
    """``local:ps=1,worker=2`` -> jobs; ``local`` -> None (the spec's own cluster section)."""
    head, sep, rest = text.partition(":")
    if head != "local":
        raise SpecError(f"--cluster '{text}': expected local or local:JOB=N,... (e.g. local:ps=1,worker=2); "
                        "use --address to attach to a running Ray cluster")  # fmt: skip
    if not sep:
        return None
    jobs: dict[str, int] = {}
    for part in rest.split(","):
        job, eq, n = part.strip().partition("=")
        if not eq or not _JOB.match(job) or not n.strip().isdigit() or int(n) < 1:
            raise SpecError(f"--cluster '{text}': cannot read '{part}' (expected JOB=N with N >= 1)")
        if job in jobs:
            raise SpecError(f"--cluster '{text}': job '{job}' given twice")
        jobs[job] = int(n)
    check_singletons(jobs, f"--cluster '{text}'")
    return jobs


def parse_task_devices(items: list[str] | dict[str, str]) -> dict[str, str]:
    """``["worker=cpu:2"]`` (the CLI's --task-devices) or a mapping -> job -> device list."""
    from specflow.runtime.devices import parse_device_counts

    if isinstance(items, dict):
        pairs = list(items.items())
    else:
        pairs = []
        for text in items:
            job, eq, devs = text.partition("=")
            if not eq or not _JOB.match(job.strip()):
                raise SpecError(f"--task-devices '{text}': expected JOB=DEVICES, e.g. worker=cpu:2")
            pairs.append((job.strip(), devs.strip()))
    out = {}
    for job, devs in pairs:
        if not isinstance(devs, str):
            raise SpecError(f"task devices of job '{job}': expected a device list like cpu:2, got {devs!r}")
        parse_device_counts(devs)  # DeviceError explains a malformed list
        out[job] = devs
    return out


def as_cluster_spec(cluster: Any) -> ClusterSpec:
    """A ClusterSpec from what ``Session(cluster=...)`` accepts: a ClusterSpec, a job -> count or
    ClusterSpec-form dict, or a section dict with ``jobs:``."""
    if isinstance(cluster, ClusterSpec):
        return cluster
    if isinstance(cluster, str):
        jobs = parse_cli(cluster)
        if jobs is None:
            raise SpecError(f"cluster '{cluster}': give the jobs, e.g. local:ps=1,worker=2")
        return ClusterSpec(jobs)
    if isinstance(cluster, dict):
        return cluster_from_section(cluster)
    raise SpecError(f"cluster: expected a dict of job -> task count or a ClusterSpec, got {type(cluster).__name__}")


def _check_resource(job: str, name: str, amount: Any, at_name: Location | None, at_amount: Location | None) -> None:
    """What Ray would refuse as a task starts, with an internal error (a ValueError): CPU and GPU
    by name (a task's devices give those), a negative, infinite or too fine amount."""
    what = f"cluster.resources.{job}.{name}"
    if name in ("CPU", "GPU"):
        raise SpecError(f"{what}: a task's CPUs and GPUs come from its devices (cluster.task_devices, e.g. "
                        f"{{{job}: {name.lower()}:2}}), not resources", location=at_name)  # fmt: skip
    if isinstance(amount, bool) or not math.isfinite(amount) or amount < 0 or (amount and amount < 1e-4):
        raise SpecError(f"{what}: expected an amount >= 0 (at least 0.0001 when not 0), got {amount!r}",
                        location=at_amount)  # fmt: skip


def cluster_from_section(section: Any, source=None, graph: GraphDef | None = None) -> ClusterSpec:
    """The spec's ``cluster:`` section (``source``: its SourceMap, for located errors); with
    ``graph``, its nodes' device constraints are checked against the cluster too."""

    def loc(*path) -> Location | None:
        return source.location(("cluster", *path)) if source is not None else None

    def key_loc(*path) -> Location | None:
        return source.key_location(("cluster", *path)) if source is not None else None

    if not isinstance(section, dict) or "jobs" not in section:
        jobs, notices = parse_jobs(section, "cluster", loc(), lambda j: key_loc(j))
        spec = ClusterSpec(jobs, notices=notices)
    else:
        for k in section:
            if k not in _SECTION_KEYS:
                raise SpecError(f"cluster.{k}: unknown field" + did_you_mean(str(k), _SECTION_KEYS), location=key_loc(k))
        jobs, notices = parse_jobs(section["jobs"], "cluster.jobs", loc("jobs"), lambda j: key_loc("jobs", j))
        spec = ClusterSpec(jobs, notices=notices)
        placement = section.get("placement", "ps")
        if placement not in PLACEMENTS:
            raise SpecError(f"cluster.placement: expected one of {', '.join(PLACEMENTS)}, got {placement!r}"
                            + did_you_mean(str(placement), PLACEMENTS), location=loc("placement"))  # fmt: skip
        spec.placement = placement
        for key in ("task_devices", "task_threads", "place", "resources", "labels"):
            value = section.get(key) or {}
            if not isinstance(value, dict):
                raise SpecError(f"cluster.{key}: expected a mapping", location=loc(key))
            for job in value if key != "place" else ():
                if job not in jobs:
                    raise SpecError(f"cluster.{key}.{job}: unknown job (jobs: {', '.join(jobs)})"
                                    + did_you_mean(str(job), jobs), location=key_loc(key, job))  # fmt: skip
        try:
            spec.task_devices = parse_task_devices(section.get("task_devices") or {})
        except (SpecError, DeviceError) as e:
            raise SpecError(f"cluster.task_devices: {e.message}", location=loc("task_devices")) from None
        for job, n in (section.get("task_threads") or {}).items():
            if type(n) is not int or n < 1:
                raise SpecError(f"cluster.task_threads.{job}: expected a thread count >= 1, got {n!r}",
                                location=loc("task_threads", job))  # fmt: skip
            spec.task_threads[job] = n
        for job, res in (section.get("resources") or {}).items():
            if not isinstance(res, dict) or not all(isinstance(v, (int, float)) for v in res.values()):
                raise SpecError(f"cluster.resources.{job}: expected a mapping of resource name to amount",
                                location=loc("resources", job))  # fmt: skip
            for name, amount in res.items():
                _check_resource(job, str(name), amount, key_loc("resources", job, name), loc("resources", job, name))
            spec.resources[job] = {str(k): float(v) for k, v in res.items()}
        for job, labels in (section.get("labels") or {}).items():
            if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
                raise SpecError(f"cluster.labels.{job}: expected a mapping of label name to value",
                                location=loc("labels", job))  # fmt: skip
            spec.labels[job] = {str(k): v for k, v in labels.items()}
        for key, dev in (section.get("place") or {}).items():
            if not isinstance(dev, str):
                raise SpecError(f"cluster.place.{key}: expected a device constraint string", location=loc("place", key))
            spec.check_device(dev, what=f"cluster.place.{key}", location=loc("place", key))
            if graph is not None and not any(n.name == key or n.name.startswith(key + "/") for n in graph.nodes):
                names = [n.name for n in graph.nodes]
                raise SpecError(f"cluster.place.{key}: no node or scope of that name" + did_you_mean(str(key), names),
                                location=key_loc("place", key))  # fmt: skip
            spec.place[key] = dev
    if graph is not None:
        spec.constrained(graph)  # raises the first constraint the cluster cannot meet
    return spec
