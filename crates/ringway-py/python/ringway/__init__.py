"""ringway for Python: an asyncio event loop on ringway's io_uring driver (epoll when
io_uring is refused).

    import asyncio, ringway
    ringway.run(main())                                   # or:
    asyncio.run(main(), loop_factory=ringway.new_event_loop)

Nothing in asyncio is patched at import; ``ringway.install()`` sets the event loop
policy when you ask for it.
"""

import asyncio as _asyncio
from asyncio import events as _events

from ._loop import Loop
from ._ringway import Handle, TimerHandle

__all__ = ["Loop", "new_event_loop", "run", "EventLoopPolicy", "install", "Handle",
           "TimerHandle"]


def new_event_loop(*, backend=None):
    """A new ``ringway.Loop``. ``backend`` is ``"auto"`` (io_uring if the kernel
    allows it, else epoll), ``"uring"`` or ``"epoll"``; default: ``RINGWAY_BACKEND``
    or auto."""
    return Loop(backend=backend)


def run(main, *, debug=None):
    """Runs the coroutine ``main`` on a new ringway loop and closes the loop, like
    ``asyncio.run(main, loop_factory=ringway.new_event_loop)``."""
    with _asyncio.Runner(debug=debug, loop_factory=new_event_loop) as runner:
        return runner.run(main)


class EventLoopPolicy(_events.BaseDefaultEventLoopPolicy):
    """An event loop policy whose loops are ringway loops (for code that calls
    ``asyncio.new_event_loop()`` or ``get_event_loop()``)."""

    def _loop_factory(self):
        return Loop()


def install():
    """Makes ringway the loop that ``asyncio.new_event_loop()`` and ``asyncio.run()``
    create, by setting the event loop policy."""
    _asyncio.set_event_loop_policy(EventLoopPolicy())
