"""A call's payload as one pickled blob when it is small: Ray's own serializer takes ~0.2 ms
more per call for a structure holding a few small arrays (each array an out-of-band buffer it
tracks on its own) than for one bytes object, on each side of a call. An async replica's step
makes one such call to each ps, so that was ~10% of a digits step on both ends.

Only plain data goes this way: a payload holding an object ref (a value sent through the object
store) or an array of ``BLOB_BYTES`` or more is left to Ray, which reference-counts the one and
copies the other into its object store without copying it here first."""

from __future__ import annotations

import copyreg
import functools
import io
import pickle

BLOB_BYTES = 64 * 1024


class _NotPlain(Exception):
    pass


def _refuse(_obj):
    raise _NotPlain


def _in_band(buf: pickle.PickleBuffer) -> bool:
    if buf.raw().nbytes >= BLOB_BYTES:
        raise _NotPlain
    return True  # pickled in the blob itself


@functools.cache
def _dispatch() -> dict:
    import ray

    from .remote_rendezvous import _Stored

    return {**copyreg.dispatch_table, ray.ObjectRef: _refuse, _Stored: _refuse}


def wire(obj):
    """``obj`` as a call should carry it: pickled to ``bytes`` when plain and small, else as is
    (never a ``bytes`` payload itself: ``unwire`` tells the two apart by type)."""
    out = io.BytesIO()
    pickler = pickle.Pickler(out, protocol=5, buffer_callback=_in_band)
    pickler.dispatch_table = _dispatch()
    try:
        pickler.dump(obj)
    except _NotPlain:
        return obj
    return out.getvalue()


def unwire(obj):
    """What ``wire`` was given."""
    return pickle.loads(obj) if type(obj) is bytes else obj
