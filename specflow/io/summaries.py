"""TensorBoard event files: scalars, histograms and the graph, for ``tensorboard --logdir``.

Events go through TensorBoard's own ``EventFileWriter`` (record framing, CRCs, the version
header, a background writer thread), so this module only builds ``Event`` messages. Scalars use
the ``simple_value`` form the scalars dashboard reads; histograms are ``HistogramProto``s built
as TensorFlow's ``HistogramSummary`` builds them (default buckets, empty runs collapsed); the
graph is our GraphDef converted to TF's message (:mod:`specflow.io.tf_graph`).

An I/O failure (full disk, unwritable logdir) is a :class:`SummaryError` naming the logdir, so a
training loop can catch it and carry on instead of dying with a traceback.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer import record_writer
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from specflow.errors import SpecflowError
from specflow.graph.graph_def import GraphDef
from specflow.io.sstable import crc32c, mask_crc
from specflow.io.tf_graph import to_tf_graph_def

DBL_MAX = sys.float_info.max


def _masked_crc32c(data: bytes) -> int:
    return mask_crc(crc32c(data))


# Without TensorFlow, TensorBoard's RecordWriter checksums every record in pure Python (~0.3 ms
# a KB: a histogram every 20 steps cost a local digits run ~4%, a big model's graph event
# seconds); google_crc32c gives the same masked CRC in C. The writer looks the name up per call.
record_writer.masked_crc32c = _masked_crc32c


class SummaryError(SpecflowError):
    """Writing TensorBoard events failed (full disk, unwritable logdir, closed writer, bad value)."""


@functools.cache
def default_bucket_limits() -> np.ndarray:
    """TensorFlow's default histogram bucket limits (histogram.cc, ``InitDefaultBuckets``).

    Limits grow by 10% from 1e-12 up to 1e20, then DBL_MAX; the same mirrored for negatives, and
    0 in between. Built by repeated multiplication, as TF does, so the edges match bit for bit.
    Bucket i holds values in [limit[i-1], limit[i]).
    """
    pos = []
    v = 1.0e-12
    while v < 1.0e20:
        pos.append(v)
        v *= 1.1
    pos.append(DBL_MAX)
    positive = np.array(pos)
    return np.concatenate([-positive[::-1], [0.0], positive])


def histogram_proto(values: Any) -> summary_pb2.HistogramProto:
    """A ``HistogramProto`` of ``values`` over TF's default buckets; ValueError on NaN or Inf.

    Like TF's ``EncodeToProto(preserve_zero_buckets=false)``, each run of empty buckets becomes
    one entry at the run's last limit, so the proto stays small.
    """
    x = np.asarray(_to_host(values), dtype=np.float64).ravel()
    if not np.isfinite(x).all():
        raise ValueError("values contain NaN or Inf")
    limits = default_bucket_limits()
    # upper_bound, as TF's Histogram::Add: bucket i counts limit[i-1] <= x < limit[i], and
    # DBL_MAX itself falls in the last bucket. Found from the sorted values, each limit's count
    # of values below it (a 8192-value kernel: 66 µs, against 460 placing each value).
    below = np.searchsorted(np.sort(x), limits, side="left")
    counts = np.diff(below, prepend=0).astype(np.float64)
    counts[-1] += x.size - below[-1]
    following = np.append(counts[1:], 1.0)  # the end closes the last empty run
    keep = (counts > 0) | (following > 0)
    return summary_pb2.HistogramProto(
        min=float(x.min()) if x.size else DBL_MAX,  # an empty histogram keeps TF's initial min/max
        max=float(x.max()) if x.size else -DBL_MAX,
        num=float(x.size),
        sum=float(x.sum()),
        sum_squares=float(np.dot(x, x)),
        bucket_limit=limits[keep].tolist(),
        bucket=counts[keep].tolist(),
    )


def _to_host(value: Any) -> Any:
    """numpy for cupy arrays (fetched GPU tensors); everything else unchanged."""
    return value.get() if hasattr(value, "__cuda_array_interface__") else value


class SummaryWriter:
    """Writes summaries for one run directory; use as a context manager or call :meth:`close`.

    ``flush_secs`` and ``max_queue`` tune TensorBoard's background writer: events reach the disk
    at least every ``flush_secs`` seconds, and :meth:`flush` forces them out.
    """

    def __init__(self, logdir: str | os.PathLike, *, max_queue: int = 10, flush_secs: float = 120,
                 filename_suffix: str = ""):
        self.logdir = os.fspath(logdir)
        self._closed = False
        with self._io("create an event file in"):
            self._writer = EventFileWriter(self.logdir, max_queue, flush_secs, filename_suffix)

    def add_scalar(self, tag: str, value: Any, step: int) -> None:
        self.add_scalars({tag: value}, step)

    def add_scalars(self, scalars: Mapping[str, Any], step: int) -> None:
        """All of ``scalars`` (tag -> number or one-element array) as one event at ``step``."""
        values = [summary_pb2.Summary.Value(tag=tag, simple_value=self._scalar(tag, v))
                  for tag, v in scalars.items()]
        self._write_summary(values, step)

    def add_histogram(self, tag: str, values: Any, step: int) -> None:
        try:
            histo = histogram_proto(values)
        except (ValueError, TypeError) as e:
            raise SummaryError(f"histogram '{tag}' for {self.logdir}: {e}") from None
        self._write_summary([summary_pb2.Summary.Value(tag=tag, histo=histo)], step)

    def add_graph(self, graph_def: GraphDef, step: int = 0) -> None:
        """The graph for TensorBoard's graph dashboard (GraphError if it cannot be converted)."""
        data = to_tf_graph_def(graph_def).SerializeToString()
        self._write(event_pb2.Event(wall_time=time.time(), step=step, graph_def=data))

    def flush(self) -> None:
        """Block until every event added so far is on disk."""
        self._check_open()
        with self._io("flush events to"):
            self._writer.flush()

    def close(self) -> None:
        """Flush and close the event file; closing twice is harmless."""
        if self._closed:
            return
        self._closed = True
        with self._io("close the event file in"):
            self._writer.close()

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
            return
        try:  # an error is already on its way out: do not mask it with a close failure
            self.close()
        except SummaryError:
            pass

    # --- internals ---

    def _scalar(self, tag: str, value: Any) -> float:
        arr = np.asarray(_to_host(value))
        if arr.size != 1 or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
            raise SummaryError(f"scalar '{tag}' for {self.logdir} must be one number, got {value!r}")
        return float(arr.reshape(()))

    def _write_summary(self, values: list, step: int) -> None:
        event = event_pb2.Event(wall_time=time.time(), step=int(step), summary=summary_pb2.Summary(value=values))
        self._write(event)

    def _write(self, event: event_pb2.Event) -> None:
        self._check_open()
        with self._io("write events to"):
            self._writer.add_event(event)

    def _check_open(self) -> None:
        if self._closed:
            raise SummaryError(f"the summary writer for {self.logdir} is closed")

    @contextmanager
    def _io(self, action: str) -> Iterator[None]:
        # The writer thread re-raises its I/O error on every later call, so each one reports it.
        try:
            yield
        except Exception as e:  # OSError, or the tensorboard GFile stub's own error classes
            raise SummaryError(f"cannot {action} {self.logdir}: {e}") from e
