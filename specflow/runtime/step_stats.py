"""Step statistics: when each node ran, where, on which thread, and how many bytes it produced.

The executor records into a :class:`StepStats` only when one is passed (tracing is opt-in and
costs nothing otherwise). ``to_chrome_trace()`` gives Chrome trace-event JSON that
chrome://tracing and Perfetto open (one process per device, one "X" event per node);
``measured_costs()`` feeds the placer's measured cost model.
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass, field
from typing import Any

from specflow.runtime.memory import DeviceMemory


@dataclass
class NodeStats:
    node: str
    op: str
    device: str
    start_ns: int  # time.perf_counter_ns (monotonic)
    end_ns: int
    thread_id: int
    output_bytes: int = 0

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


def output_bytes(outputs) -> int:
    """Total bytes of a node's outputs (arrays and resource handles; dead values count 0)."""
    return sum(getattr(o, "nbytes", 0) for o in outputs)


@dataclass
class StepStats:
    nodes: list[NodeStats] = field(default_factory=list)
    step_id: int | None = None
    # Live bytes per device (runtime/memory.py), counted by the executor on traced steps.
    memory: dict[str, DeviceMemory] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def record(self, stats: NodeStats) -> None:
        with self._lock:
            self.nodes.append(stats)

    def memory_for(self, device: str) -> DeviceMemory:
        with self._lock:
            mem = self.memory.get(device)
            if mem is None:
                mem = self.memory[device] = DeviceMemory(device)
            return mem

    def peak_bytes(self) -> dict[str, int]:
        """Each accounted device's peak live bytes in this step (a device whose partition
        runs on frames, a loop's, is not accounted)."""
        return {d: m.peak for d, m in sorted(self.memory.items())}

    def extend(self, other: StepStats) -> None:
        with self._lock:
            self.nodes.extend(other.nodes)
            for d, m in other.memory.items():  # a later step on a device: the larger peak
                if d not in self.memory or m.peak > self.memory[d].peak:
                    self.memory[d] = m
            if self.step_id is None:
                self.step_id = other.step_id

    def clear(self) -> None:
        with self._lock:
            self.nodes.clear()

    def __len__(self) -> int:
        return len(self.nodes)

    def by_node(self) -> dict[str, NodeStats]:
        return {s.node: s for s in self.nodes}

    def devices(self) -> list[str]:
        return sorted({s.device for s in self.nodes})

    def measured_costs(self) -> dict[str, float]:
        """Node name -> seconds spent in its kernel (summed if it ran more than once)."""
        out: dict[str, float] = {}
        for s in self.nodes:
            out[s.node] = out.get(s.node, 0.0) + s.duration_ns / 1e9
        return out

    def to_chrome_trace(self) -> dict[str, Any]:
        """Trace-event format: ``{"traceEvents": [...]}``; times in microseconds from step start."""
        devices = sorted(set(self.devices()) | set(self.memory))
        pid = {d: i for i, d in enumerate(devices)}
        starts = [s.start_ns for s in self.nodes] + [m.samples[0][0] for m in self.memory.values() if m.samples]
        t0 = min(starts, default=0)
        events: list[dict[str, Any]] = []
        for d in devices:
            events.append({"name": "process_name", "ph": "M", "pid": pid[d], "tid": 0, "args": {"name": d}})
            events.append(
                {
                    "name": "process_sort_index",
                    "ph": "M",
                    "pid": pid[d],
                    "tid": 0,
                    "args": {"sort_index": pid[d]},
                }
            )
        for s in sorted(self.nodes, key=lambda s: s.start_ns):
            events.append(
                {
                    "name": s.node,
                    "cat": s.op,
                    "ph": "X",
                    "pid": pid[s.device],
                    "tid": s.thread_id,
                    "ts": (s.start_ns - t0) / 1000.0,
                    "dur": max(s.duration_ns, 0) / 1000.0,
                    "args": {"op": s.op, "bytes": s.output_bytes},
                }
            )
        for d, mem in sorted(self.memory.items()):  # a counter track per device: its live bytes
            for t, live in mem.samples:
                events.append({"name": "live bytes", "ph": "C", "pid": pid[d], "ts": (t - t0) / 1000.0,
                               "args": {"bytes": live}})  # fmt: skip
        other = {"step_id": self.step_id, "peak_bytes": self.peak_bytes()}
        return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": other}

    def write_chrome_trace(self, path: str) -> None:
        with open(path, "w") as f:
            json.dump(self.to_chrome_trace(), f)

    def to_dict(self) -> dict[str, Any]:
        return {"step_id": self.step_id, "nodes": [asdict(s) for s in self.nodes], "peak_bytes": self.peak_bytes()}
