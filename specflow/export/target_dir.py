"""What an export may replace, and what a killed export left behind.

``--overwrite`` deletes the directory it replaces, so it is allowed only where nothing but an
export can be lost: an empty directory, or one holding only a SavedModel's entries. Anything
else (a logdir, a source tree) is refused with the first entry that is not a SavedModel's.

An export writes into ``.{name}.tmp-XXXX`` beside the target and moves the old export aside to
``.{name}.old-XXXX``; a kill leaves them. Each export holds an ``flock`` on its temporary
directories while it lives (the kernel drops it on any exit), so the next export deletes
exactly the leftovers nobody holds, never a concurrent export's work.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
from pathlib import Path

from specflow.errors import ExportError

# What TensorFlow's tf.saved_model.save / Keras put at the top of a SavedModel directory.
SAVED_MODEL_ENTRIES = frozenset({
    "saved_model.pb", "saved_model.pbtxt", "variables", "assets", "assets.extra", "fingerprint.pb",
    "keras_metadata.pb",
})
_VARIABLES_FILE = re.compile(r"variables\.(index|data-\d{5}-of-\d{5})")


def check_overwritable(export_dir: Path) -> None:
    """ExportError unless ``export_dir`` is empty or holds a SavedModel and nothing else."""
    if export_dir.is_symlink() or not export_dir.is_dir():
        raise ExportError(f"refusing to --overwrite {export_dir}: not a directory")
    entries = sorted(os.listdir(export_dir))
    if not entries:
        return
    stray = [e for e in entries if e not in SAVED_MODEL_ENTRIES]
    if not stray and "saved_model.pb" not in entries and "saved_model.pbtxt" not in entries:
        stray = entries
    variables = export_dir / "variables"
    if not stray and variables.is_dir():
        stray = [f"variables/{e}" for e in sorted(os.listdir(variables)) if not _VARIABLES_FILE.fullmatch(e)]
    if stray:
        raise ExportError(f"refusing to --overwrite {export_dir}: it is not a SavedModel (it holds {stray[0]!r}); "
                          "only an empty directory or a previous export is replaced")


class Held:
    """An flock held on a directory for as long as this object is open (see the module doc)."""

    def __init__(self, path: str):
        self._fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def clean_leftovers(export_dir: Path) -> list[str]:
    """Delete ``.{name}.tmp-*`` / ``.{name}.old-*`` directories no live export holds; returns them."""
    prefixes = (f".{export_dir.name}.tmp-", f".{export_dir.name}.old-")
    removed = []
    try:
        entries = os.listdir(export_dir.parent)
    except FileNotFoundError:
        return removed
    for entry in entries:
        path = os.path.join(export_dir.parent, entry)
        if not entry.startswith(prefixes) or os.path.islink(path) or not os.path.isdir(path):
            continue
        try:
            held = Held(path)
        except OSError:  # a live export's (or gone meanwhile)
            continue
        try:
            moved_aside = os.path.join(path, "export")
            if entry.startswith(prefixes[1]) and not os.path.lexists(export_dir) and os.path.isdir(moved_aside):
                os.replace(moved_aside, export_dir)  # killed mid-replace: the previous export comes back
            shutil.rmtree(path)
            removed.append(path)
        finally:
            held.close()
    return removed
