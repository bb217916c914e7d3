"""The training input pipeline: batches made on the host, prefetched through a FIFO queue
(whitepaper 4.6) by a queue-runner thread while the model computes.

The graph part, under name scope ``input_pipeline``::

    feed/<input> (Placeholder) ─┐
    feed/batch_index ───────────┴─▶ enqueue ─▶ [fifo_queue] ─▶ dequeue ─▶ batch/<input> (Reshape)
                                                                      └─▶ dequeue:N = the batch index
    close, cancel (QueueCloseV2, the second with cancel_pending_enqueues)

A queue element is one whole batch: one component per model input plus the batch's int64 index.
The queue has no fixed shapes (the last batch of an epoch may be smaller), so ``batch/<input>``
reshapes to ``[-1, *example_shape]`` to give the model its static shape back.

Batch order is a pure function of (seed, batch index): batch ``k`` is part ``k % B`` of epoch
``k // B`` (``B`` batches per epoch, the last one partial), whose order is
``np.random.default_rng([seed, epoch]).permutation(n)`` when shuffling. So the pipeline's state is
one integer: the index of the next batch the *model* will consume. The consumer fetches
``batch_index`` with each step and reports it with :meth:`InputPipeline.consumed`; batches still
sitting in the queue do not count, so :meth:`restore` continues exactly where the model was.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator

import numpy as np

from specflow.errors import SpecError
from specflow.graph.builder import GraphBuilder
from specflow.graph.dtypes import as_dtype, int64
from specflow.train.coordinator import QueueRunner
from specflow.train.data import check_lengths, select

SCOPE = "input_pipeline"


class InputPipeline:
    """Adds the queue and its ops to ``builder``; makes the batches the queue runner enqueues.

    ``arrays`` are the training examples by field; ``feeds`` maps model inputs to fields (None:
    the keys of ``arrays`` are the model inputs). ``epochs`` None repeats forever; otherwise the
    data ends after that many epochs and the consumer's dequeue raises OutOfRangeError."""

    def __init__(
        self,
        builder: GraphBuilder,
        arrays: dict[str, np.ndarray],
        feeds: dict[str, str] | None = None,
        *,
        batch_size: int,
        shuffle: bool = True,
        seed: int = 0,
        epochs: int | None = None,
        capacity: int = 8,
        name: str = SCOPE,
    ):
        for what, v, low in (("batch_size", batch_size, 1), ("capacity", capacity, 1), ("epochs", epochs, 1)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < low):
                raise SpecError(f"{what} must be an integer >= {low}, got {v!r}", path=f"train.data.{what}")
        inputs = select(arrays, feeds) if feeds is not None else dict(arrays)
        self.num_examples = check_lengths(inputs, "train.data.feeds")
        if batch_size > self.num_examples:  # not clamped: every batch would silently be smaller
            raise SpecError(f"batch_size {batch_size} is larger than the training data ({self.num_examples} "
                            "examples after the split)", path="train.data.batch_size")
        self.arrays = {k: np.asarray(a) for k, a in inputs.items()}
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = int(seed)
        self.epochs = epochs
        self.batches_per_epoch = math.ceil(self.num_examples / batch_size)
        self.num_batches = None if epochs is None else epochs * self.batches_per_epoch
        self._next = 0  # the next batch the consumer will use
        self._order: tuple[int, np.ndarray] | None = None  # (epoch, its example order), cached
        self._lock = threading.Lock()
        self._build(builder, capacity, name)

    def _build(self, b: GraphBuilder, capacity: int, name: str) -> None:
        types = [as_dtype(a.dtype) for a in self.arrays.values()] + [int64]
        with b.name_scope(name):
            queue = b.add_op("FIFOQueueV2", attrs={"component_types": types, "capacity": capacity},
                             name="fifo_queue").name  # fmt: skip
            self.placeholders = {
                inp: b.add_op("Placeholder", attrs={"dtype": types[i], "shape": [None, *a.shape[1:]]},
                              name=f"feed/{inp}").name  # fmt: skip
                for i, (inp, a) in enumerate(self.arrays.items())
            }
            self.index_placeholder = b.add_op("Placeholder", attrs={"dtype": int64, "shape": []},
                                              name="feed/batch_index").name  # fmt: skip
            self.enqueue_op = b.add_op(
                "QueueEnqueueV2", [queue, *self.placeholders.values(), self.index_placeholder], name="enqueue"
            ).name
            dequeue = b.add_op("QueueDequeueV2", [queue], attrs={"component_types": types}, name="dequeue").name
            self.outputs: dict[str, str] = {}
            for i, (inp, a) in enumerate(self.arrays.items()):
                shape = b.const(np.array([-1, *a.shape[1:]], dtype=np.int32), name=f"batch/{inp}/shape")
                self.outputs[inp] = b.add_op("Reshape", [f"{dequeue}:{i}", shape], name=f"batch/{inp}").name
            self.batch_index = f"{dequeue}:{len(self.arrays)}"
            self.close_op = b.add_op("QueueCloseV2", [queue], name="close").name
            self.cancel_op = b.add_op("QueueCloseV2", [queue], attrs={"cancel_pending_enqueues": True},
                                      name="cancel").name  # fmt: skip
            self.size = b.add_op("QueueSizeV2", [queue], name="size").name

    # --- the batches (pure functions of the batch index) ------------------------------------------

    def batch_indices(self, k: int) -> np.ndarray:
        """The example indices of batch ``k``."""
        epoch, part = divmod(int(k), self.batches_per_epoch)
        with self._lock:
            cached = self._order
            if cached is None or cached[0] != epoch:
                if self.shuffle:
                    order = np.random.default_rng([self.seed, epoch]).permutation(self.num_examples)
                else:
                    order = np.arange(self.num_examples)
                cached = self._order = (epoch, order)
        return cached[1][part * self.batch_size : (part + 1) * self.batch_size]

    def batch(self, k: int) -> dict[str, np.ndarray]:
        """Batch ``k``, by model input."""
        idx = self.batch_indices(k)
        return {inp: a[idx] for inp, a in self.arrays.items()}

    def enqueue_feeds(self, k: int) -> dict[str, np.ndarray]:
        """The feeds of the enqueue op for batch ``k``."""
        feeds: dict[str, np.ndarray] = {self.placeholders[inp]: v for inp, v in self.batch(k).items()}
        feeds[self.index_placeholder] = np.asarray(k, dtype=np.int64)
        return feeds

    def producer(self, start: int) -> Iterator[dict[str, np.ndarray]]:
        """Enqueue feeds for batches ``start, start + 1, ...`` until the data ends (if it does)."""
        k = start
        while self.num_batches is None or k < self.num_batches:
            yield self.enqueue_feeds(k)
            k += 1

    # --- state ------------------------------------------------------------------------------------

    def consumed(self, batch_index) -> None:
        """The model just used batch ``batch_index`` (the fetched value of :attr:`batch_index`)."""
        self._next = int(batch_index) + 1

    def state(self) -> int:
        """The index of the next batch the model will consume: all a checkpoint needs."""
        return self._next

    def restore(self, next_batch: int) -> None:
        """Continue from batch ``next_batch``: call before :meth:`queue_runner` (a fresh session)."""
        nb = int(next_batch)
        if nb < 0 or (self.num_batches is not None and nb > self.num_batches):
            limit = "" if self.num_batches is None else f" (the data has {self.num_batches} batches)"
            raise SpecError(f"cannot resume the input pipeline at batch {nb}{limit}")
        self._next = nb

    def queue_runner(self, session) -> QueueRunner:
        """A runner filling this pipeline's queue in ``session`` from the current state on.

        One thread: batches must enter the FIFO in index order for the order to be reproducible."""
        return QueueRunner(
            session,
            self.enqueue_op,
            close_op=self.close_op,
            cancel_op=self.cancel_op,
            feeds=self.producer(self._next),
        )
