"""``sf.summary``: TensorFlow 2's tf.summary, eagerly, on the training code's event-file writer
(``io/summaries.SummaryWriter``): ``create_file_writer``, ``writer.as_default(step=...)``,
``scalar``, ``histogram``, ``text``, ``flush`` and ``experimental.set_step/get_step``. Files are
TensorBoard event files (scalars as simple values, histograms as HistogramProtos, text as the
text plugin's string tensors). A name scope (``sf.name_scope``) prefixes the tags, as in TF.
Inside ``sf.function`` the summary functions raise: specflow has no summary ops."""

from __future__ import annotations

import threading
import types

import numpy as np

from specflow.api.context import STATE
from specflow.errors import GraphError


class _Default(threading.local):
    def __init__(self) -> None:
        self.writers: list = []


_DEFAULT = _Default()
_STEP: list = [None]  # experimental.set_step's step (a number or a variable)


class SummaryWriter:
    """What ``create_file_writer`` returns (TF's ``tf.summary.SummaryWriter``)."""

    def __init__(self, logdir, max_queue: int | None = None, flush_millis: int | None = None,
                 filename_suffix: str | None = None):
        from specflow.io.summaries import SummaryWriter as EventWriter

        self._writer = EventWriter(logdir, max_queue=10 if max_queue is None else int(max_queue),
                                   flush_secs=120 if flush_millis is None else flush_millis / 1000,
                                   filename_suffix=filename_suffix or "")
        self.logdir = self._writer.logdir

    def as_default(self, step=None) -> _AsDefault:
        """``with writer.as_default():`` (or ``as_default(step=...)``, the default step inside);
        the summaries inside go to this writer, which is flushed on the way out."""
        return _AsDefault(self, step)

    def set_as_default(self, step=None) -> None:
        _DEFAULT.writers[:] = [self]
        if step is not None:
            _STEP[0] = step

    def flush(self) -> None:
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()
        _DEFAULT.writers[:] = [w for w in _DEFAULT.writers if w is not self]

    def __repr__(self) -> str:
        return f"<sf.summary.SummaryWriter logdir={self.logdir!r}>"


class _AsDefault:
    def __init__(self, writer: SummaryWriter, step):
        self._writer, self._step = writer, step
        self._old_step = None

    def __enter__(self) -> SummaryWriter:
        _DEFAULT.writers.append(self._writer)
        if self._step is not None:
            self._old_step, _STEP[0] = _STEP[0], self._step
        return self._writer

    def __exit__(self, *exc) -> None:
        _DEFAULT.writers.pop()
        if self._step is not None:
            _STEP[0] = self._old_step
        if not self._writer._writer._closed:
            self._writer.flush()


def create_file_writer(logdir, max_queue=None, flush_millis=None, filename_suffix=None, name=None) -> SummaryWriter:
    """A writer of TensorBoard event files in ``logdir`` (created if needed)."""
    return SummaryWriter(logdir, max_queue, flush_millis, filename_suffix)


def _host(x) -> np.ndarray:
    return np.asarray(x.numpy() if hasattr(x, "numpy") else x)


def _target(name: str, step, what: str):
    """(writer, tag, step as int), or None when no writer is the default (TF then writes nothing)."""
    if STATE.trace is not None:
        raise GraphError(f"sf.summary.{what} runs eagerly only: specflow has no summary ops to put in an sf.function")
    if not _DEFAULT.writers:
        return None
    step = _STEP[0] if step is None else step
    if step is None:
        raise ValueError(f"sf.summary.{what} '{name}': no step given and none set (pass step=, or use "
                         "sf.summary.experimental.set_step / writer.as_default(step=...))")
    from specflow.api.tf_core_names import _EAGER

    tag = "/".join([*_EAGER.stack, name])
    return _DEFAULT.writers[-1], tag, int(_host(step))


def scalar(name: str, data, step=None, description: str | None = None) -> bool:
    """Write one number under ``name`` at ``step``; False (nothing written) without a default writer."""
    got = _target(name, step, "scalar")
    if got is None:
        return False
    writer, tag, step = got
    writer._writer.add_scalar(tag, _host(data), step)
    return True


def histogram(name: str, data, step=None, buckets: int | None = None, description: str | None = None) -> bool:
    """Write a histogram of ``data``'s values (TensorFlow's default exponential buckets)."""
    got = _target(name, step, "histogram")
    if got is None:
        return False
    writer, tag, step = got
    writer._writer.add_histogram(tag, _host(data).astype(np.float64).ravel(), step)
    return True


def text(name: str, data, step=None, description: str | None = None) -> bool:
    """Write a string (or a tensor of strings) for TensorBoard's text dashboard."""
    from tensorboard.compat.proto import summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2

    got = _target(name, step, "text")
    if got is None:
        return False
    writer, tag, step = got
    arr = _host(data)
    values = [v if isinstance(v, bytes) else str(v).encode() for v in arr.ravel().tolist()]
    shape = tensor_shape_pb2.TensorShapeProto(dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=d) for d in arr.shape])
    tensor = tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING, tensor_shape=shape, string_val=values)
    meta = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="text"),
                                       summary_description=description or "")
    writer._writer._write_summary([summary_pb2.Summary.Value(tag=tag, metadata=meta, tensor=tensor)], step)
    return True


def flush(writer: SummaryWriter | None = None, name=None) -> None:
    """Flush ``writer`` (default: the default writer, if any)."""
    writer = writer or (_DEFAULT.writers[-1] if _DEFAULT.writers else None)
    if writer is not None:
        writer.flush()


def _set_step(step) -> None:
    _STEP[0] = step


def _get_step():
    return _STEP[0]


experimental = types.SimpleNamespace(set_step=_set_step, get_step=_get_step)
