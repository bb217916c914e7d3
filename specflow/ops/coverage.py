"""Op coverage against a reference list of TensorFlow op names (``specflow ops --missing-from tf``).

The list of the ops most common in TF graphs lives beside the checkout (``../shared/
tf_common_ops.txt``, the file the project measures itself against); a copy ships in
``specflow/data/`` so an installed package can report its coverage too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from specflow.errors import SpecflowError
from specflow.ops.registry import all_ops

_PACKAGE = Path(__file__).resolve().parents[1]  # .../specflow
_LISTS = {"tf": "tf_common_ops.txt"}


@dataclass(frozen=True)
class Coverage:
    source: Path
    listed: list[str]  # the reference list, in its order, without duplicates
    missing: list[str]
    lowered: list[str]  # not registered ops, but rewritten when a TF graph is loaded (If, While, calls)

    @property
    def covered(self) -> int:
        return len(self.listed) - len(self.missing)

    @property
    def percent(self) -> float:
        return 100.0 * self.covered / len(self.listed) if self.listed else 100.0


def reference_list_path(name: str) -> Path:
    """The file of reference list ``name`` ("tf"), or ``name`` itself when it is a file: the
    checkout's ``../shared/`` copy first, else the one shipped in the package."""
    if name in _LISTS:
        filename = _LISTS[name]
        for candidate in (_PACKAGE.parent.parent / "shared" / filename, _PACKAGE / "data" / filename):
            if candidate.is_file():
                return candidate
        raise SpecflowError(f"the op list '{name}' ({filename}) is neither beside the checkout nor in the package")
    path = Path(name)
    if not path.is_file():
        known = ", ".join(sorted(_LISTS))
        raise SpecflowError(f"--missing-from takes {known} or a file of op names, one a line; no such file: {name}")
    return path


def read_op_list(path: Path) -> list[str]:
    """Op names, one a line; blank lines and '#' comments skipped, duplicates dropped."""
    names: list[str] = []
    seen: set[str] = set()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise SpecflowError(f"{path}: cannot read the op list: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise SpecflowError(f"{path}: not a text file of op names (one a line)") from None
    for line in text.splitlines():
        name = line.split("#", 1)[0].strip()
        if name and name not in seen:
            seen.add(name)
            names.append(name)
    return names


def coverage(name: str, load_time: frozenset[str] = frozenset()) -> Coverage:
    """Which ops of reference list ``name`` specflow registers, which ``load_time`` handles
    (ops a loaded TF graph is rewritten without: io/tf_functions.LOAD_TIME_OPS, passed in by the
    caller since ops/ sits below io/), and which it lacks."""
    path = reference_list_path(name)
    listed = read_op_list(path)
    registered = all_ops()
    absent = [op for op in listed if op not in registered]
    return Coverage(path, listed, [op for op in absent if op not in load_time], [op for op in absent if op in load_time])
