"""Fixtures: every test that takes ``loop`` runs once per backend (io_uring, epoll), on
a fresh ringway loop that is checked for leaks (operations, pool buffers, sources)
before it is closed."""

import asyncio
import gc

import pytest

import ringway

BACKENDS = ["uring", "epoll"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


@pytest.fixture
def loop(backend):
    loop = ringway.new_event_loop(backend=backend)
    assert loop.backend == backend
    asyncio.set_event_loop(loop)
    yield loop
    try:
        if not loop.is_closed():
            # Let transports that were closed reach connection_lost (bounded: a loaded
            # machine may need a few iterations more).
            for _ in range(200):
                loop.run_until_complete(asyncio.sleep(0.01))
                gc.collect()
                stats = loop._ringway_stats()
                if stats["sources"] == 0 and stats["pool_in_use"] == 0:
                    break
            assert stats["pool_in_use"] == 0, stats
            assert stats["sources"] == 0, f"transports left open: {stats}"
    finally:
        asyncio.set_event_loop(None)
        loop.close()


@pytest.fixture(params=["uring", "epoll", "asyncio"])
def any_loop(request):
    """A ringway loop on each backend, and stock asyncio's loop as the reference: a
    test that takes it asserts what asyncio does, so the reference shows that the
    assertion is asyncio's behaviour."""
    if request.param == "asyncio":
        loop = asyncio.new_event_loop()
    else:
        loop = ringway.new_event_loop(backend=request.param)
    asyncio.set_event_loop(loop)
    yield loop
    asyncio.set_event_loop(None)
    loop.close()


def run(loop, coro, timeout=30):
    """Runs ``coro`` on ``loop``, failing (not hanging) after ``timeout`` seconds."""
    return loop.run_until_complete(asyncio.wait_for(coro, timeout))
