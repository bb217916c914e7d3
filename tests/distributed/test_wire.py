"""wire.py: a call's small plain payload travels as one pickled blob and comes back equal; a
payload holding an object ref or a large array is left to Ray."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("ray")

from specflow.distributed.remote_rendezvous import _by_store, _Stored, resolve_stored  # noqa: E402
from specflow.distributed.wire import BLOB_BYTES, unwire, wire  # noqa: E402


def _items(n: int = 3, size: int = 100):
    rng = np.random.default_rng(0)
    return [(f"task;edge_{i}:0;0:0", rng.standard_normal(size).astype(np.float32), i == 1) for i in range(n)]


def test_a_small_payload_is_one_blob_and_comes_back_equal():
    call = ("handle", 7, {0: np.arange(4)}, 1, 2, ["/job:worker/replica:0/task:0"])
    payload = (call, call, _items())
    blob = wire(payload)
    assert type(blob) is bytes
    back = unwire(blob)
    assert back[0][:2] == ("handle", 7) and back[0][5] == call[5]
    np.testing.assert_array_equal(back[0][2][0], np.arange(4))
    for (k, v, d), (k2, v2, d2) in zip(payload[2], back[2]):
        assert (k, d) == (k2, d2) and v.dtype == v2.dtype
        np.testing.assert_array_equal(v, v2)


def test_a_large_array_or_an_object_ref_is_left_to_ray(ray_local):
    big = _items(1, BLOB_BYTES // 4)
    assert wire(big) is big
    ref = ray_local.put([np.zeros(3)])
    held = [("k", _Stored(ref, 0), False)]
    assert wire(held) is held
    assert wire([ref]) == [ref]
    assert unwire(held) is held


def test_outboxes_travel_as_blobs_and_resolve_to_their_items(ray_local):
    items = _items()
    sent = _by_store(items)
    assert type(sent) is bytes
    got = resolve_stored(sent)
    assert [k for k, _, _ in got] == [k for k, _, _ in items]
    assert _by_store([]) == []  # an empty outbox stays falsy: the step counts no send
    mixed = [*items, ("big", np.zeros(200_000, np.float32), False)]
    sent = _by_store(mixed)
    assert isinstance(sent, list) and type(sent[-1][1]) is _Stored
    np.testing.assert_array_equal(resolve_stored(sent)[-1][1], mixed[-1][1])
