"""One Ray instance per test module that needs it (starting Ray takes seconds on this box)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray")
    from specflow.distributed import engine

    engine.ensure_ray()
    yield ray
    engine.shutdown_ray()
