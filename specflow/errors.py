"""Error types. Library code raises these; only ``cli.py`` turns them into exit codes.

Every error can carry a :class:`Location` (file, line, column of the spec text that caused it)
and the node it concerns, so the one-line message a user sees is
``model.yaml:12:5: nodes.hidden.unit: unknown field (did you mean 'units'?)``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    """A position in a source file; line and column are 1-based."""

    file: str
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        if self.line:
            return f"{self.file}:{self.line}:{self.col}"
        return self.file


def _one_line(text: str) -> str:
    """A file name, spec path or node name from input, with line breaks and other unprintable
    characters escaped, so it cannot split or forge a line of the error output."""
    return text if text.isprintable() else repr(text)[1:-1]


class SpecflowError(Exception):
    """Base class. ``path`` is the dotted spec path (``nodes.hidden.units``) when known."""

    def __init__(
        self,
        message: str,
        *,
        location: Location | None = None,
        node: str | None = None,
        path: str | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.location = location
        self.node = node
        self.path = path

    def format(self) -> str:
        """The one-line form: ``file:line:col: path: message``."""
        parts = []
        if self.location is not None:
            parts.append(_one_line(str(self.location)))
        if self.path:
            parts.append(_one_line(self.path))
        elif self.node:
            parts.append(f"node '{_one_line(self.node)}'")
        parts.append(self.message)
        return ": ".join(parts)

    def __str__(self) -> str:
        return self.format()


class SpecError(SpecflowError):
    """The spec text is malformed or violates the schema."""


class GraphError(SpecflowError):
    """The graph is structurally invalid (missing inputs, cycles, wrong arity, ...)."""


class ShapeError(GraphError):
    """Shapes or dtypes do not fit an op's contract."""


class OpError(SpecflowError):
    """Unknown op, unknown attr, or a kernel failed while running."""


class DeviceError(SpecflowError):
    """A malformed device string or an impossible placement."""


class RuntimeFailure(SpecflowError):
    """A step failed while executing (kernel error, aborted rendezvous, timeout)."""


class OutOfRangeError(RuntimeFailure):
    """The end of data: a closed queue has too few elements left. Training loops catch it to end
    cleanly (TensorFlow's OutOfRange status)."""


class StepLimitReached(OutOfRangeError):
    """An update refused because the global step already reached the run's last step (an async
    replica's step in flight when the others finished the run): nothing of it was applied."""


class CancelledError(RuntimeFailure):
    """An operation was cancelled: an enqueue on a closed queue, or one pending when the queue was
    closed with ``cancel_pending_enqueues`` (TensorFlow's Cancelled status)."""


class StepAborted(RuntimeFailure):
    """A step stopped from outside while it ran: Ctrl-C, its timeout, or ``Session.abort`` (a
    failure elsewhere). Every executor of the step sees it before its next kernel."""


class CheckpointError(SpecflowError):
    """A checkpoint or tensor bundle is missing, truncated or corrupt (the location names the file)."""


class TrainingError(SpecflowError):
    """Training cannot go on: a non-finite loss, a logdir holding another run, nothing to resume."""


class ExportError(SpecflowError):
    """A model cannot be exported or loaded: an op without a TensorFlow/ONNX equivalent, an
    existing export directory, a corrupted or truncated SavedModel, outputs that do not match."""


class MultipleErrors(SpecflowError):
    """Several independent problems found at once; each prints on its own line."""

    def __init__(self, errors: Iterable[SpecflowError]):
        self.errors = list(errors)
        super().__init__(f"{len(self.errors)} errors")

    def format(self) -> str:
        return "\n".join(e.format() for e in self.errors)


# Keras/TF spellings too far from ours for difflib: ``lr`` (Keras 2's) is ``learning_rate``.
_ALSO_KNOWN_AS = {"lr": "learning_rate", "eps": "epsilon", "keepdims": "keep_dims", "keep_dims": "keepdims"}


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """`` (did you mean 'units'?)`` when a close candidate exists, else ``""``."""
    candidates = list(candidates)
    if _ALSO_KNOWN_AS.get(word) in candidates:
        return f" (did you mean '{_ALSO_KNOWN_AS[word]}'?)"
    same = [c for c in candidates if c.lower() == word.lower()]  # 'SAME', 'LSTM', 'ReLU': only the case differs
    close = same or difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""
