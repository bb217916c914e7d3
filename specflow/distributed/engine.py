"""Ray as the engine: starting or attaching to it, and one actor per task.

Embedded (no address): a private local Ray instance is started on first use, with quiet logs
and no dashboard, and shut down when the process exits. ``address`` (``"auto"`` or
``host:port``) attaches to a running cluster (``ray start --head`` / ``ray start --address``);
tasks then land wherever Ray schedules them, or where a job's ``resources`` ask.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import os
import re
import socket
import sys
import threading
from typing import Any

from specflow.errors import SpecflowError

from .cluster_spec import ClusterSpec, DeviceSpec, as_cluster_spec, check_task_count
from .reaper import reaped, release

INSTALL_HINT = "running on a cluster needs Ray: pip install 'specflow[distributed]' (or pip install 'ray>=2.40')"
_started_here = False
_watchers: list = []  # reaper.py's watcher of each private Ray this process started


def require_ray():
    try:
        import ray
    except ImportError:
        raise SpecflowError(INSTALL_HINT) from None
    return ray


def ensure_ray(address: str | None = None):
    """Ray, initialized: attached to ``address``, or a private local instance started now."""
    ray = require_ray()
    if ray.is_initialized():
        return ray
    quiet = {"logging_level": logging.ERROR, "log_to_driver": False, "include_dashboard": False,
             "runtime_env": _driver_code_env()}
    if address:
        _check_reachable(address)
    with _signals_after_init():
        _init(ray, address, quiet)
    return ray


@contextlib.contextmanager
def _signals_after_init():
    """Ctrl-C (or SIGTERM) while ``ray.init`` runs (seconds) waits for it to finish and is then
    delivered to the handler that was there before: interrupted late in its start, Ray's
    half-connected core worker made the process crash (SIGSEGV) on its way out, its processes left
    behind. So Ray's own SIGTERM handler (``sys.exit(15)``, installed as ``ray.init`` starts) is
    held off too: it made a client SIGTERMed while Ray started exit 15, not 143 as documented."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []

    def defer(signum, _frame):
        got.append(signum)

    previous = {s: signal.signal(s, defer) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with _without_ray_sigterm_handler():
            yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    if got:
        # As if it came now: SIGINT's default handler raises KeyboardInterrupt (exit 130), SIGTERM's
        # default ends the process as the signal does (143; reaper.py takes a private Ray's processes).
        signal.raise_signal(got[0])


@contextlib.contextmanager
def _without_ray_sigterm_handler():
    """``ray.init`` installs its SIGTERM handler through ``ray._private.utils.set_sigterm_handler``;
    a no-op for the block (skipped where a Ray version lacks it)."""
    try:
        from ray._private import utils as ray_utils
    except ImportError:
        yield
        return
    original = getattr(ray_utils, "set_sigterm_handler", None)
    if original is None:
        yield
        return
    ray_utils.set_sigterm_handler = lambda _handler: None
    try:
        yield
    finally:
        ray_utils.set_sigterm_handler = original


def _init(ray, address: str | None, quiet: dict) -> None:
    global _started_here
    try:
        if address:
            ray.init(address=address, **quiet)
        else:
            # Tasks reserve no CPU (num_cpus=0 per actor): the count only sizes Ray's own pool.
            # address="local": a new private instance, never one found running on this machine.
            with reaped() as watcher:  # Ray's processes go with this one, even on kill -9
                ray.init(address="local", num_cpus=max(2, os.cpu_count() or 2), **quiet)
            _started_here = True
            _watchers.append(watcher)
            atexit.register(shutdown_ray)
    except (ConnectionError, RuntimeError, ValueError) as e:
        where = f"the Ray cluster at {address}" if address else "a local Ray instance"
        raise SpecflowError(f"cannot start or reach {where}: {str(e).splitlines()[0]}") from None
    _quiet_task_deaths()


# What Ray's driver prints, as a "(raylet) ..." paragraph, when an actor's process dies (a task
# killed, OOM) or a node's raylet does: the health checks notice the loss and the trainer says
# it in one line (recovery.py), so these would only add a scary paragraph per lost task.
_TASK_DEATH = re.compile(r"worker died or was killed|Worker unexpectedly exits|Raylet is terminated|"
                         r"actor died unexpectedly|node .* (?:has been marked dead|died)", re.IGNORECASE)


def _quiet_task_deaths() -> None:
    """Drop Ray's own reports of dead task processes from the terminal (``SPECFLOW_DEBUG=1``
    keeps them). They come from the driver's error-listener thread through
    ``ray._private.worker.print_to_stdstream``, which Ray offers no option to silence; other
    messages pass through unchanged. Skipped where a Ray version lacks that function."""
    if os.environ.get("SPECFLOW_DEBUG"):
        return
    try:
        from ray._private import worker as ray_worker
    except ImportError:
        return
    original = getattr(ray_worker, "print_to_stdstream", None)
    if original is None or getattr(original, "specflow_filter", False):
        return

    def filtered(data, *args, **kwargs):
        if isinstance(data, dict) and data.get("pid") == "raylet":
            lines = [line for line in data.get("lines", []) if not _TASK_DEATH.search(str(line))]
            if not lines:
                return None
            data = dict(data, lines=lines)
        return original(data, *args, **kwargs)

    filtered.specflow_filter = True  # type: ignore[attr-defined]
    ray_worker.print_to_stdstream = filtered


_HOST_PORT = re.compile(r"^\[?([^\[\]/]+?)\]?:(\d+)$")


def _check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """A ``host:port`` nothing listens on fails here in at most ``timeout_s``: ``ray.init`` would
    retry it for minutes, printing Ray's own connection warnings. A ``ray://host:port`` (Ray
    Client) is checked the same way: Ray took 30 s to give up on one, with a multi-line warning
    of its own. ``auto`` (and ``local``) is left to Ray, which fails fast on it; anything else
    that is no host:port is an error here (Ray logged a traceback for ``:6379``)."""
    if address in ("auto", "local"):
        return
    m = _HOST_PORT.match(address.removeprefix("ray://"))
    if m is None or not 0 < int(m.group(2)) < 65536:
        raise SpecflowError(f"cannot reach the Ray cluster at {address}: not an address (expected host:port as "
                            "`ray start --head` prints it, ray://host:port, or auto)")
    host, port = m.group(1), int(m.group(2))
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as e:
        why = "timed out" if isinstance(e, TimeoutError) else (e.strerror or str(e))
        serves = (f"a Ray head with its client server on port {port} (`ray start --head "
                  f"--ray-client-server-port={port}`)" if address.startswith("ray://") else
                  f"`ray start --head --port={port}`")  # fmt: skip
        raise SpecflowError(f"cannot reach the Ray cluster at {address}: {why} (is {serves} running there, "
                            "and the port open?)") from None
    _check_speaks_grpc(address, address.removeprefix("ray://"), port, timeout_s)


def _check_speaks_grpc(address: str, target: str, port: int, timeout_s: float) -> None:
    """Something listens at ``address``; a Ray head's GCS there answers gRPC's HTTP/2 handshake.
    A port that does not (a web server, the dashboard's 8265 given by mistake) would have
    ``ray.init`` retry for minutes: an error here instead. (grpc comes with Ray.)"""
    import grpc

    channel = grpc.insecure_channel(target)
    try:
        grpc.channel_ready_future(channel).result(timeout=timeout_s)
    except grpc.FutureTimeoutError:
        raise SpecflowError(f"cannot reach the Ray cluster at {address}: something listens there but it is not a "
                            f"Ray head (no gRPC answer in {timeout_s:g} s; `ray start --head` prints the address "
                            "to use, port 6379 by default)") from None
    else:
        if not address.startswith("ray://"):
            _check_gcs_answers(channel, address, timeout_s)
    finally:
        channel.close()


def _check_gcs_answers(channel, address: str, timeout_s: float) -> None:
    """One unauthenticated call to the GCS. A gRPC server without Ray's GCS service (another
    program's, an HTTP/2 proxy) answers UNIMPLEMENTED: ``ray.init`` retried it for 20 s, printing a
    ``gcs_client.cc`` warning each second. A head started with Ray's token authentication refuses
    a driver that sends no token (UNAUTHENTICATED): the same 20 s, ending with "Failed to connect"."""
    import grpc

    call = channel.unary_unary("/ray.rpc.NodeInfoGcsService/GetClusterId", request_serializer=lambda _: b"",
                               response_deserializer=lambda b: b)  # fmt: skip
    try:
        call(None, timeout=timeout_s)
    except grpc.RpcError as e:
        if e.code() == grpc.StatusCode.UNIMPLEMENTED:
            raise SpecflowError(f"cannot reach the Ray cluster at {address}: a gRPC server answers there, but not a "
                                "Ray head's (`ray start --head` prints the address to use, port 6379 by "
                                "default)") from None
        if e.code() == grpc.StatusCode.UNAUTHENTICATED and os.environ.get("RAY_AUTH_MODE") != "token":
            raise SpecflowError(f"the Ray cluster at {address} requires Ray's token authentication: set "
                                "RAY_AUTH_MODE=token (the token from RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or "
                                "~/.ray/auth_token)") from None


# What BLAS libraries (OpenBLAS, MKL, OpenMP ones) read for their thread count at load time.
BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _driver_code_env() -> dict:
    """Tasks import the driver's own specflow. Ray puts only the driver's working directory on
    the tasks' path, so a run started elsewhere (or a second checkout beside an older editable
    install) would otherwise give tasks whichever ``specflow`` site-packages finds first."""
    import specflow

    root = os.path.dirname(os.path.dirname(os.path.abspath(specflow.__file__)))
    paths = [root, *(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)]
    return {"env_vars": {"PYTHONPATH": os.pathsep.join(dict.fromkeys(paths))}}


def shutdown_ray() -> None:
    global _started_here
    if _started_here:
        import ray

        ray.shutdown()
        _started_here = False
        while _watchers:
            release(_watchers.pop())


def _check_resources(spec: ClusterSpec, nodes: list[dict]) -> None:
    """Each task of a job holds the job's ``resources`` (and its GPUs) for its lifetime; an actor
    asking for more than the Ray cluster has would wait for it forever, so that is an error here,
    naming the job and the resource."""
    need: dict[str, float] = {}
    asks = {job: dict(spec.resources.get(job, {})) for job in spec.jobs}
    for job in spec.jobs:
        if _gpus(spec, job):
            asks[job]["GPU"] = _gpus(spec, job)
    for job, wanted in asks.items():
        for name, amount in wanted.items():
            if not any(n.get("Resources", {}).get(name, 0) >= amount for n in nodes):
                hint = (f"its task devices are {spec.task_devices.get(job)}" if name == "GPU" else
                        f"give a node it: ray start --resources='{{\"{name}\": {amount:g}}}'")
                raise SpecflowError(f"cluster job '{job}' asks for Ray resource {name}: {amount:g} per task, which "
                                    f"no node of the Ray cluster has ({hint})")
            need[name] = need.get(name, 0) + amount * spec.jobs[job]
    for job, labels in spec.labels.items():
        plain = {k: v for k, v in labels.items() if isinstance(v, str) and not v.startswith(("!", "in(", "!in("))}
        if plain and not any(all(n.get("Labels", {}).get(k) == v for k, v in plain.items()) for n in nodes):
            raise SpecflowError(f"cluster job '{job}' needs node labels {plain}, which no node of the Ray cluster has "
                                "(give a node them: ray start --labels)")
    for name, total in need.items():
        have = sum(n.get("Resources", {}).get(name, 0) for n in nodes)
        if have < total:
            jobs = ", ".join(f"{j}: {spec.jobs[j]} x {w[name]:g}" for j, w in asks.items() if name in w)
            raise SpecflowError(f"the cluster's tasks ask for Ray resource {name}: {total:g} in all ({jobs}), but "
                                f"the Ray cluster has {have:g}; each task holds its job's resources while it runs")


class Cluster:
    """Connected tasks: one ``TaskWorker`` actor per task of ``spec``.

    ``Cluster({"ps": 1, "worker": 2})`` or ``Cluster(spec, address="auto")``; ``connect()``
    starts them (Session does it on first use). Several sessions may share one Cluster: the
    tasks' resources (variables) then persist across sessions, as on a TensorFlow server.
    """

    def __init__(self, spec: Any, *, address: str | None = None, threads: int | None = None):
        self.spec: ClusterSpec = as_cluster_spec(spec)
        self.address = address
        self.threads = threads
        self.actors: dict[str, Any] = {}
        self.infos: dict[str, dict] = {}
        self.write_epochs = WriteEpochs()
        ray = sys.modules.get("ray")
        if address is None and not (ray is not None and ray.is_initialized()):
            check_task_count(self.spec)  # a private Ray on this machine: too many tasks fail before it starts

    @property
    def connected(self) -> bool:
        return bool(self.actors)

    def connect(self) -> Cluster:
        if self.actors:
            return self
        ray = ensure_ray(self.address)
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        if self.address is not None or not _started_here:  # joined, or a Ray started by the caller
            at = f"the Ray cluster at {self.address}" if self.address else "the running Ray cluster"
            where = f"{at} ({len(nodes)} node{'' if len(nodes) == 1 else 's'})"
            check_task_count(self.spec, len(nodes), where)
        else:  # this process's own private Ray, started for an earlier cluster: this machine
            check_task_count(self.spec)
        _check_resources(self.spec, nodes)
        actors = {f"/job:{job}/replica:0/task:{t}": self._start(job, t) for job, t in self.spec.tasks}
        for attempt in range(START_ATTEMPTS):
            try:
                ray.get([a.connect.remote(actors) for a in actors.values()])
                infos = ray.get([a.info.remote() for a in actors.values()])
                break
            except Exception as e:  # an actor failed to start (a bad device list, a missing resource)
                lost = _lost_as_they_started(ray, actors, e)
                if not lost or attempt == START_ATTEMPTS - 1:
                    for a in actors.values():
                        _kill_quietly(ray, a)
                    what = f"{', '.join(lost)} died as {'it' if len(lost) == 1 else 'they'} started: " if lost else ""
                    raise SpecflowError(f"cannot start the cluster's tasks: {what}{_first_line(e)}") from None
                # A task's process killed (or its node lost) while the tasks start is replaced, as
                # one lost while training is: a run killed then failed with Ray's "The actor never ran".
                for task in lost:
                    _kill_quietly(ray, actors[task])
                    spec = DeviceSpec.parse(task)
                    actors[task] = self._start(spec.job, spec.task)
        self.actors = actors
        self.infos = dict(zip(actors, infos))
        self.write_epochs.bump(actors)
        return self

    def _start(self, job: str, t: int):
        """A new actor for task ``t`` of ``job`` (not yet connected to its peers)."""
        # No task events: Ray records each call of the actor for its state API and dashboard,
        # which for a step's calls (hundreds a second) cost 10-20% of a call's round trip here.
        opts: dict[str, Any] = {"num_cpus": 0, "max_concurrency": 32, "num_gpus": _gpus(self.spec, job),
                                "enable_task_events": False}  # fmt: skip
        if job in self.spec.resources:
            opts["resources"] = dict(self.spec.resources[job])
        if job in self.spec.labels:
            opts["label_selector"] = dict(self.spec.labels[job])
        threads = self.spec.task_threads.get(job) or self._share_of_cores()
        if threads:  # read by BLAS when numpy loads in the task's fresh process
            opts["runtime_env"] = {"env_vars": {v: str(threads) for v in BLAS_THREAD_VARS}}
        task = f"/job:{job}/replica:0/task:{t}"
        return _task_worker_class().options(**opts).remote(task, self.spec.task_devices.get(job), self.threads)

    def _share_of_cores(self) -> int | None:
        """A task's BLAS threads when the spec does not say: its share of this machine's cores
        when every task runs here (a Ray this process started), else BLAS's own default."""
        if self.address or not _started_here:
            return None
        return max(1, (os.cpu_count() or 1) // max(1, len(self.spec.tasks)))

    def restart(self, *tasks: str) -> None:
        """Replace the actors of ``tasks`` (dead or hung) with fresh ones, then tell every task
        its new peers: all at once, as telling a task of one new peer while another is still
        the dead one fails. The tasks' resources (variables) and registered graphs are gone."""
        import ray

        for task in tasks:
            spec = DeviceSpec.parse(task)
            old = self.actors.get(task)
            if old is not None:
                try:
                    ray.kill(old)
                except Exception:  # already gone
                    pass
            self.actors[task] = self._start(spec.job, spec.task)
        self.write_epochs.bump(tasks)
        ray.get([a.connect.remote(self.actors) for a in self.actors.values()])
        for task, info in zip(tasks, ray.get([self.actors[t].info.remote() for t in tasks])):
            self.infos[task] = info

    def sharing(self, spec: Any) -> Cluster:
        """A Cluster over these same tasks placing by another spec (its placement and ``place:``
        constraints; jobs and task devices must be these), as TensorFlow clients with different
        device functions share servers. Stopping it stops the shared tasks."""
        other = as_cluster_spec(spec)
        if other.jobs != self.spec.jobs or other.task_devices != self.spec.task_devices:
            raise SpecflowError(f"cannot share tasks {self.spec.describe()} with a cluster of {other.describe()}")
        view = Cluster(other, address=self.address, threads=self.threads)
        view.actors, view.infos = self.connect().actors, self.infos
        view.write_epochs = self.write_epochs
        return view

    def reset(self) -> None:
        """Clear the resources (variables, queues) of every task, as TF's ``Session.reset``."""
        import ray

        self.write_epochs.bump(self.actors)
        ray.get([a.reset.remote() for a in self.actors.values()])

    def shutdown(self) -> None:
        """Stop every task (its variables go with it)."""
        if not self.actors:
            return
        import ray

        for a in self.actors.values():
            try:
                ray.kill(a)
            except Exception:  # already gone
                pass
        self.write_epochs.bump(self.actors)
        self.actors = {}

    def __enter__(self) -> Cluster:
        return self.connect()

    def __exit__(self, *exc) -> None:
        self.shutdown()


class WriteEpochs:
    """Per task, a counter bumped when a step that may change the task's state (its variables)
    starts and when it ends, and when the task is reset or replaced: the master passes on a
    task's cached pure-read outboxes only while the counter is what it was when they were read.
    Shared by the sessions (and ``sharing`` views) on these tasks, the only ones running steps
    there."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._n: dict[str, int] = {}
        self._other: dict[str, int] = {}  # bumps by anything but async training replicas

    def bump(self, tasks, hogwild: bool = False) -> None:
        """``hogwild``: the write of an async training replica, which the replicas' prefetched
        reads may miss (``ClusterSession.prefetch_reads``)."""
        with self._lock:
            for t in tasks:
                self._n[t] = self._n.get(t, 0) + 1
                if not hogwild:
                    self._other[t] = self._other.get(t, 0) + 1

    def get(self, task: str) -> int:
        return self._n.get(task, 0)

    def other(self, task: str) -> int:
        """The count of writes to ``task`` other than async replicas' (restores, resets, a
        chief's apply, a checkpoint): a prefetched read is good while it is unchanged."""
        return self._other.get(task, 0)


@functools.cache
def _task_worker_class():
    """``TaskWorker`` as a Ray actor class, made once: each ``ray.remote`` of the class exports
    it anew (pickling and hashing its code, about 50 ms), which every task started and every
    recreated one paid."""
    import ray

    from .worker import TaskWorker

    # "flow": a ps's dataflow calls that never wait, one at a time (task_partition.flow_group).
    return ray.remote(concurrency_groups={"flow": 1})(TaskWorker)


def _gpus(spec: ClusterSpec, job: str) -> int:
    """GPUs a job's task asks Ray for (Ray then makes them visible to the actor's process)."""
    from specflow.runtime.devices import parse_device_counts

    return parse_device_counts(spec.task_devices.get(job) or "cpu:1").get("GPU", 0)


# How many times the tasks are started when some die as they start (killed, their node lost).
START_ATTEMPTS = 3


def _lost_as_they_started(ray, actors: dict[str, Any], error: BaseException) -> list[str]:
    """The tasks whose actors died of something other than their own start raising (a killed
    process, a lost node), when ``error`` is such a death; else none (the error is the task's)."""
    died = getattr(ray.exceptions, "ActorDiedError", ray.exceptions.RayActorError)
    if not isinstance(error, died) or error.actor_init_failed:
        return []
    lost = []
    for task, ref in [(t, a.info.remote()) for t, a in actors.items()]:
        try:
            ray.get(ref)
        except died as e:
            if e.actor_init_failed:
                return []
            lost.append(task)
        except Exception:  # any other failure is the task's own: not a start to retry
            return []
    return lost


def _kill_quietly(ray, actor) -> None:
    try:
        ray.kill(actor)
    except Exception:  # already gone
        pass


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[-1] if text else type(e).__name__
