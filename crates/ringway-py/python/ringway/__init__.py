"""ringway for Python: an asyncio event loop on ringway's io_uring driver (epoll when
io_uring is refused).

The way in, on every Python ringway supports::

    import asyncio, ringway
    ringway.run(main())                                        # or
    asyncio.run(main(), loop_factory=ringway.new_event_loop)   # 3.12+, or asyncio.Runner

Nothing in asyncio is patched at import. ``ringway.install()`` sets an event loop
policy for code that calls ``asyncio.new_event_loop()``; Python 3.14 deprecates the
policy system, and there ``install()`` warns (the two lines above need no policy).
"""

from __future__ import annotations

import asyncio as _asyncio
from asyncio import events as _events
from collections.abc import Coroutine
from typing import Any, TypeVar

from . import _compat
from ._loop import Loop
from ._ringway import Handle, TimerHandle

__all__ = ["Loop", "new_event_loop", "run", "EventLoopPolicy", "install", "Handle",
           "TimerHandle"]

_T = TypeVar("_T")


def new_event_loop(*, backend: str | None = None) -> Loop:
    """A new ``ringway.Loop``. ``backend`` is ``"auto"`` (io_uring if the kernel
    allows it, else epoll), ``"uring"`` or ``"epoll"``; default: ``RINGWAY_BACKEND``
    or auto."""
    return Loop(backend=backend)


def run(main: Coroutine[Any, Any, _T], *, debug: bool | None = None) -> _T:
    """Runs the coroutine ``main`` on a new ringway loop and closes the loop, like
    ``asyncio.run(main, loop_factory=ringway.new_event_loop)``."""
    with _asyncio.Runner(debug=debug, loop_factory=new_event_loop) as runner:
        return runner.run(main)


#: An event loop policy whose loops are ringway loops (for code that calls
#: ``asyncio.new_event_loop()`` or ``get_event_loop()``); ``None`` on a Python whose
#: asyncio has no policies any more.
EventLoopPolicy = _compat.make_policy_class(_events, Loop)


def install() -> None:
    """Makes ringway the loop that ``asyncio.new_event_loop()`` and ``asyncio.run()``
    create, by setting the event loop policy. Where asyncio deprecates policies (3.14)
    this warns: use ``ringway.run`` or ``loop_factory=ringway.new_event_loop``."""
    _compat.install_policy(_events, EventLoopPolicy, stacklevel=3)
