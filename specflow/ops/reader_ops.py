"""Reader ops (whitepaper 4.5, input operations), with TensorFlow's names and attrs.

A reader (``TFRecordReaderV2``, ``FixedLengthRecordReaderV2``, ``TextLineReaderV2``,
``WholeFileReaderV2``) is a resource, like a queue: it outlives steps and remembers where it is.
``ReaderReadV2(reader, queue)`` returns the next record as (key, value) strings; when the reader
has no file open it dequeues the next filename from ``queue`` (a queue of string scalars, fed by
``QueueEnqueueManyV2``), so a read may wait on the queue exactly as a dequeue does, and once the
queue is closed and empty it fails with OutOfRangeError (TF's end of input).
``ReaderReadUpToV2`` returns up to ``num_records`` records of one file, as TF does: it never
crosses into the next file once it has produced something. Keys are TF's: ``file:offset`` for
TFRecords (the record's byte offset), ``file:line`` (1-based, header lines counted) for text,
``file:index`` for fixed-length records and the file name itself for whole files.
"""

from __future__ import annotations

import threading
import zlib
from collections import deque
from collections.abc import Callable, Iterator

import numpy as np

from specflow.errors import SpecflowError
from specflow.graph import dtypes
from specflow.graph.shapes import Shape
from specflow.io.tfrecord import COMPRESSION_TYPES, RecordFileError, iter_records, open_stream
from specflow.ops.data_flow_ops import _queue, _wait
from specflow.ops.inference import InferenceContext, no_outputs, scalar_shape
from specflow.ops.registry import KernelContext, kernel, register_op
from specflow.ops.runtime_ops import async_kernel
from specflow.ops.state_ops import _handle, _resources
from specflow.runtime.resources import ResourceHandle

_CPU = ("CPU",)
_SHARED = ["container: string = ''", "shared_name: string = ''"]
# A file's records: (key, value) pairs, read lazily.
Records = Iterator[tuple[bytes, bytes]]


class Reader:
    """A reader's state: the file it is in (an iterator over its records) and its counters.
    ``open_file(name) -> Records`` is the format; everything else is shared by every reader."""

    kind = "Reader"

    def __init__(self, kind: str, open_file: Callable[[str], Records]):
        self.kind = kind
        self.open_file = open_file
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.work: str | None = None
        self.records: Records | None = None
        # Files dequeued but not yet started: two reads of one reader waiting on the queue at once
        # each get a file; neither may be dropped.
        self.pending: deque[str] = deque()
        self.records_produced = 0
        self.work_units_completed = 0

    def read_from_file(self, n: int) -> list[tuple[bytes, bytes]]:
        """Up to ``n`` records of one file (the current one, or the next pending one when there
        is none); at its end the file is finished. Empty when there is no file to read."""
        out: list[tuple[bytes, bytes]] = []
        with self.lock:
            while len(out) < n:
                if self.records is None:
                    if out or not self.pending:
                        break
                    self.work = self.pending.popleft()
                    self.records = self.open_file(self.work)
                try:
                    out.append(next(self.records))
                except StopIteration:
                    self._finish_work()
                except BaseException:
                    self._finish_work()  # a damaged file is given up; the next read moves on
                    raise
            self.records_produced += len(out)
        return out

    def add_work(self, filename: str) -> None:
        with self.lock:
            self.pending.append(filename)

    def _finish_work(self) -> None:
        self.work, self.records = None, None
        self.work_units_completed += 1


def _reader(ctx: KernelContext, handle) -> Reader:
    h = _handle(ctx, handle)
    reader = _resources(ctx).lookup(h.container, h.name)
    if not isinstance(reader, Reader):
        raise ctx.fail(f"resource '{h.name}' is a {type(reader).__name__}, not a reader")
    return reader


# --- the formats --------------------------------------------------------------------------------


def _tfrecord_records(compression: str) -> Callable[[str], Records]:
    def open_file(name: str) -> Records:
        for offset, data in iter_records(name, compression):
            yield f"{name}:{offset}".encode(), data

    return open_file


def _read_all(name: str, compression: str = "") -> bytes:
    stream = open_stream(name, compression)
    try:
        return stream.read()
    except (OSError, EOFError, zlib.error) as e:
        raise RecordFileError(f"{name}: not a readable {compression or 'uncompressed'} file ({e})") from None
    finally:
        stream.close()


def _fixed_length_records(header: int, record: int, footer: int, hop: int, encoding: str) -> Callable[[str], Records]:
    step = hop or record

    def open_file(name: str) -> Records:
        content = _read_all(name, encoding)
        body = memoryview(content)[header : max(header, len(content) - footer)]
        # Record i starts at i * hop; a trailing piece shorter than a record is not one (as TF).
        for i, start in enumerate(range(0, len(body) - record + 1, step)):
            yield f"{name}:{i}".encode(), bytes(body[start : start + record])

    return open_file


def _text_line_records(skip_header_lines: int) -> Callable[[str], Records]:
    def open_file(name: str) -> Records:
        lines = _read_all(name).split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()  # a final newline ends the last line; it does not start an empty one
        for number, line in enumerate(lines, start=1):
            if number > skip_header_lines:
                yield f"{name}:{number}".encode(), line.removesuffix(b"\r")

    return open_file


def _whole_file_records(name: str) -> Records:
    yield name.encode(), _read_all(name)


# --- creating readers ---------------------------------------------------------------------------


def _create_reader(ctx: KernelContext, kind: str, open_file: Callable[[str], Records]) -> ResourceHandle:
    container, name = ctx.attrs["container"], ctx.attrs["shared_name"] or ctx.node.name
    reader = _resources(ctx).lookup_or_create(container, name, lambda: Reader(kind, open_file))
    if not isinstance(reader, Reader) or reader.kind != kind:
        raise ctx.fail(f"resource '{name}' is a {getattr(reader, 'kind', type(reader).__name__)}, not a {kind}")
    return ResourceHandle(ctx.device, container, name)


def _register_reader(op: str, attrs: list[str], doc: str, make: Callable[[dict], Callable[[str], Records]],
                     check: Callable[[InferenceContext], None] = lambda ic: None) -> None:  # fmt: skip
    def shape(ic: InferenceContext) -> list[Shape]:
        check(ic)
        return [Shape.scalar()]

    register_op(op, outputs=["reader_handle: resource"], attrs=[*attrs, *_SHARED], stateful=True, shape=shape, doc=doc)

    @kernel(op, devices=_CPU)
    def _create(ctx):
        return _create_reader(ctx, op.removesuffix("V2"), make(ctx.attrs))


def _check_compression(attr: str):
    def check(ic: InferenceContext) -> None:
        if ic.attr(attr) not in COMPRESSION_TYPES:
            raise ic.fail(f"{attr} must be one of '', 'ZLIB', 'GZIP', got {ic.attr(attr)!r}")

    return check


def _check_fixed_length(ic: InferenceContext) -> None:
    _check_compression("encoding")(ic)
    for a in ("header_bytes", "footer_bytes", "hop_bytes"):
        if ic.attr(a) < 0:
            raise ic.fail(f"{a} must be >= 0, got {ic.attr(a)}")
    if ic.attr("record_bytes") < 1:
        raise ic.fail(f"record_bytes must be >= 1, got {ic.attr('record_bytes')}")


_register_reader(
    "TFRecordReaderV2",
    ["compression_type: string = ''"],
    "Reads the records of TFRecord files (checksums verified); keys are `file:byte_offset`.",
    lambda a: _tfrecord_records(a["compression_type"]),
    _check_compression("compression_type"),
)
_register_reader(
    "FixedLengthRecordReaderV2",
    ["header_bytes: int = 0", "record_bytes: int", "footer_bytes: int = 0", "hop_bytes: int = 0",
     "encoding: string = ''"],  # fmt: skip
    "Reads `record_bytes`-long records between a file's `header_bytes` and `footer_bytes`, one every "
    "`hop_bytes` (default: back to back); keys are `file:record_index`.",
    lambda a: _fixed_length_records(a["header_bytes"], a["record_bytes"], a["footer_bytes"], a["hop_bytes"],
                                    a["encoding"]),  # fmt: skip
    _check_fixed_length,
)
_register_reader(
    "TextLineReaderV2",
    ["skip_header_lines: int = 0"],
    "Reads the lines of text files (newline and a trailing carriage return removed), skipping the first "
    "`skip_header_lines` of each; keys are `file:line_number`.",
    lambda a: _text_line_records(a["skip_header_lines"]),
)
_register_reader(
    "WholeFileReaderV2",
    [],
    "Reads each file as one record: the key is the file name, the value its contents.",
    lambda a: _whole_file_records,
)


# --- reading ------------------------------------------------------------------------------------


def _scalar_inputs(names: list[str]):
    def check(ic: InferenceContext) -> None:
        for i, name in enumerate(names):
            if not ic.input_shapes[i].is_compatible_with(Shape.scalar()):
                raise ic.fail(f"{name} must be a scalar, got {ic.input_shapes[i]}")

    return check


def _read_shape(ic: InferenceContext) -> list[Shape]:
    _scalar_inputs(["reader_handle", "queue_handle"])(ic)
    return [Shape.scalar(), Shape.scalar()]


def _read_up_to_shape(ic: InferenceContext) -> list[Shape]:
    _scalar_inputs(["reader_handle", "queue_handle", "num_records"])(ic)
    n = ic.value(2)
    if n is not None and int(n) < 1:
        raise ic.fail(f"num_records must be >= 1, got {int(n)}")
    return [Shape([None]), Shape([None])]


register_op(
    "ReaderReadV2",
    inputs=["reader_handle: resource", "queue_handle: resource"],
    outputs=["key: string", "value: string"],
    stateful=True,
    shape=_read_shape,
    doc="The reader's next record; dequeues a filename from `queue_handle` when it needs a file.",
)
register_op(
    "ReaderReadUpToV2",
    inputs=["reader_handle: resource", "queue_handle: resource", "num_records: int64"],
    outputs=["keys: string", "values: string"],
    stateful=True,
    shape=_read_up_to_shape,
    doc="Up to `num_records` records, all from one file (fewer at the file's end).",
)


def _read(ctx: KernelContext, done, reader: Reader, queue, n: int, batch: bool) -> None:
    """Produce 1..n records of one file, dequeuing files until one yields a record. A dequeue that
    waits resumes this through its callback; one served at once loops here (no recursion)."""
    if queue.dtypes[:1] != (dtypes.string,) or len(queue.dtypes) != 1:
        raise ctx.fail(f"the filename queue '{queue.name}' must hold string scalars, it holds "
                       f"[{', '.join(d.name for d in queue.dtypes)}]")  # fmt: skip

    def finish(got: list[tuple[bytes, bytes]]) -> None:
        keys, values = np.empty(len(got), dtype=object), np.empty(len(got), dtype=object)
        keys[:] = [k for k, _ in got]
        values[:] = [v for _, v in got]
        done((keys, values) if batch else (np.array(keys[0], dtype=object), np.array(values[0], dtype=object)))

    def start(filename) -> bool:
        """Hand the dequeued file to the reader (opened by its next read); False (the step
        failed) when the queue gave something other than one filename."""
        name = np.asarray(filename[0])
        if name.ndim != 0:
            done(error=ctx.fail(f"the filename queue '{queue.name}' gave a {list(name.shape)} tensor, not one "
                                "filename (enqueue names with QueueEnqueueManyV2, one per element)"))  # fmt: skip
            return False
        name = name.item()
        reader.add_work(name.decode() if isinstance(name, bytes) else str(name))
        return True

    def dequeue_file():
        """Ask the queue for a filename: (outputs, error) when served at once, else None (the
        callback then opens the file and resumes reading)."""
        served: list = []
        lock, waiting = threading.Lock(), [False]

        def on_work(outputs=None, error=None) -> None:
            with lock:
                if not waiting[0]:
                    served.append((outputs, error))
                    return
            if error is not None:
                done(error=error)
            elif start(outputs):
                pump()

        _wait(ctx, on_work, queue, queue.dequeue, outputs=tuple)
        with lock:
            waiting[0] = not served
        return served[0] if served else None

    def pump() -> None:
        while True:
            current = reader.work or (reader.pending[0] if reader.pending else "a file")
            try:
                got = reader.read_from_file(n)
            except SpecflowError as e:
                done(error=e)
                return
            except Exception as e:  # noqa: BLE001  (may run on a queue's callback: report, never raise)
                done(error=ctx.fail(f"reading {current} failed: {type(e).__name__}: {e}"))
                return
            if got:
                finish(got)
                return
            served = dequeue_file()
            if served is None:
                return
            outputs, error = served
            if error is not None:
                done(error=error)
                return
            if not start(outputs):
                return

    pump()


@async_kernel("ReaderReadV2", devices=_CPU)
def _reader_read(ctx, done, reader_handle, queue_handle):
    _read(ctx, done, _reader(ctx, reader_handle), _queue(ctx, queue_handle), 1, batch=False)


@async_kernel("ReaderReadUpToV2", devices=_CPU)
def _reader_read_up_to(ctx, done, reader_handle, queue_handle, num_records):
    n = int(ctx.host(num_records))
    if n < 1:
        raise ctx.fail(f"num_records must be >= 1, got {n}")
    _read(ctx, done, _reader(ctx, reader_handle), _queue(ctx, queue_handle), n, batch=True)


# --- counters and reset ---------------------------------------------------------------------------


def _handle_only(ic: InferenceContext) -> list[Shape]:
    _scalar_inputs(["reader_handle"])(ic)
    return scalar_shape(ic)


register_op(
    "ReaderNumRecordsProducedV2",
    inputs=["reader_handle: resource"],
    outputs=["records_produced: int64"],
    stateful=True,
    shape=_handle_only,
    doc="How many records the reader has produced (successful reads, counting each of a ReadUpTo's).",
)
register_op(
    "ReaderNumWorkUnitsCompletedV2",
    inputs=["reader_handle: resource"],
    outputs=["units_completed: int64"],
    stateful=True,
    shape=_handle_only,
    doc="How many files the reader has finished.",
)


@kernel("ReaderNumRecordsProducedV2", devices=_CPU)
def _num_records(ctx, reader_handle):
    return np.asarray(_reader(ctx, reader_handle).records_produced, dtype=np.int64)


@kernel("ReaderNumWorkUnitsCompletedV2", devices=_CPU)
def _num_work_units(ctx, reader_handle):
    return np.asarray(_reader(ctx, reader_handle).work_units_completed, dtype=np.int64)


def _reset_shape(ic: InferenceContext) -> list[Shape]:
    _scalar_inputs(["reader_handle"])(ic)
    return no_outputs(ic)


register_op(
    "ReaderResetV2",
    inputs=["reader_handle: resource"],
    stateful=True,
    shape=_reset_shape,
    doc="Back to the reader's initial state: no file open, counters zero.",
)


@kernel("ReaderResetV2", devices=_CPU)
def _reader_reset(ctx, reader_handle):
    reader = _reader(ctx, reader_handle)
    with reader.lock:
        reader.reset()
