"""Writing a user-named output file so that a failure leaves no truncated file behind.

The data goes to a hidden temporary file beside the target (``.{name}.tmp-XXXX``), is fsynced,
and is renamed over the target only when complete. A full disk (ENOSPC), a file-size limit
(EFBIG) or any other OSError removes the temporary file and becomes one SpecflowError line; the
target keeps its previous content, if it had one.
"""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Callable
from typing import IO

from specflow.errors import Location, SpecflowError
from specflow.io.tensor_bundle import fsync_dir, usual_mode


def write_hint(e: OSError, directory: str) -> str:
    """What to do about a failed write, for the cases a user can fix."""
    if e.errno == errno.ENOENT:
        return f" (the directory {directory} does not exist: create it or choose another path)"
    if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return " (choose a path you can write to)"
    if e.errno == errno.EISDIR:
        return " (name a file, not a directory)"
    if e.errno == errno.ENOTDIR:
        return " (a part of the path is a file, not a directory)"
    return ""


def write_atomically(path, write: Callable[[IO[bytes]], object]) -> None:
    """Call ``write(f)`` on a temporary file, then rename it to ``path``."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.tmp-", dir=directory)
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        usual_mode(tmp)
        os.replace(tmp, path)
        tmp = None
        fsync_dir(directory)
    except OSError as e:
        raise SpecflowError(f"cannot write the output: {e.strerror or e}{write_hint(e, directory)}",
                            location=Location(path)) from None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.remove(tmp)
