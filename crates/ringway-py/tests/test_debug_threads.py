"""Debug mode's thread checks (``loop.set_debug(True)``, ``PYTHONASYNCIODEBUG=1``,
``asyncio.run(..., debug=True)``): ``call_soon``, ``call_later`` and ``call_at`` from a
thread other than the loop's raise asyncio's ``RuntimeError``; the threadsafe entry
points (``call_soon_threadsafe``, and what uses it: ``run_in_executor``,
``run_coroutine_threadsafe``) work from any thread. Each on both backends and on
stock asyncio's loop as the reference."""

import asyncio
import threading
import time

import pytest

from conftest import run

NOT_THREAD_SAFE = "Non-thread-safe operation invoked on an event loop other than the current one"


def in_thread(fn):
    """Runs ``fn`` in a new thread; returns what it returned or raised."""
    out = {}

    def body():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 (handed back to the test)
            out["error"] = e

    t = threading.Thread(target=body)
    t.start()
    return t, out


def test_call_soon_threadsafe_completes_a_future_in_debug_mode(any_loop):
    loop = any_loop
    loop.set_debug(True)

    async def main():
        fut = loop.create_future()

        def other():
            time.sleep(0.02)
            loop.call_soon_threadsafe(fut.set_result, "from the thread")

        t, out = in_thread(other)
        assert await asyncio.wait_for(fut, 10) == "from the thread"
        t.join()
        assert "error" not in out, out
        # What uses call_soon_threadsafe: an executor's result, a coroutine submitted
        # from another thread.
        assert await loop.run_in_executor(None, sum, [1, 2, 3]) == 6

        async def answer():
            return 42

        t, out = in_thread(
            lambda: asyncio.run_coroutine_threadsafe(answer(), loop).result(10))
        while t.is_alive():
            await asyncio.sleep(0.005)
        assert out == {"value": 42}

    run(loop, main(), timeout=20)
    loop.set_debug(False)


@pytest.mark.parametrize("method", ["call_soon", "call_later", "call_at"])
def test_non_threadsafe_calls_from_another_thread_raise_in_debug_mode(any_loop, method):
    loop = any_loop
    loop.set_debug(True)
    calls = {
        "call_soon": lambda: loop.call_soon(print),
        "call_later": lambda: loop.call_later(10, print),
        "call_at": lambda: loop.call_at(loop.time() + 10, print),
    }

    async def main():
        t, out = in_thread(calls[method])
        while t.is_alive():
            await asyncio.sleep(0.005)
        assert isinstance(out.get("error"), RuntimeError), out
        assert NOT_THREAD_SAFE in str(out["error"])
        # From the loop's own thread, the same call is fine.
        calls[method]().cancel()

    run(loop, main())
    loop.set_debug(False)
