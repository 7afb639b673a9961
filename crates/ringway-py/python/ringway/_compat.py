"""Differences between the Python versions ringway runs on, decided once at import from
the shape of the asyncio it finds (the names it offers, the signatures of its
functions), never by patching it and never from the version number alone, so that each
branch can be driven by a test with a module of the other shape:

- ``Server._attach``/``_detach`` take the transport from 3.13 on;
- ``format_helpers._format_callback_source`` takes ``debug=`` from 3.13 on;
- the event loop policy base is ``BaseDefaultEventLoopPolicy`` up to 3.13,
  ``_BaseDefaultEventLoopPolicy`` in 3.14 and 3.15, where policies are deprecated
  (``set_event_loop_policy`` warns; ``_set_event_loop_policy`` does not), and gone
  after (3.16 removes the policy system);
- 3.13 sends an empty datagram for ``sendto(b"")`` and has
  ``create_unix_server(cleanup_socket=)``.
"""

import inspect
import sys
import warnings

from asyncio import base_events, format_helpers


def attach_takes_transport(server_class):
    """3.13's ``Server._attach(transport)``; 3.11 and 3.12 take no argument."""
    return len(inspect.signature(server_class._attach).parameters) == 2


def takes_debug(format_callback_source):
    """3.13's ``_format_callback_source(func, args, *, debug=False)``."""
    return "debug" in inspect.signature(format_callback_source).parameters


SERVER_ATTACH_TAKES_TRANSPORT = attach_takes_transport(base_events.Server)
FORMAT_CALLBACK_TAKES_DEBUG = takes_debug(format_helpers._format_callback_source)

#: 3.13 sends an empty datagram for ``sendto(b"")``; earlier versions ignore it.
EMPTY_DATAGRAMS = sys.version_info >= (3, 13)

#: 3.13's ``create_unix_server(..., cleanup_socket=True)``.
UNIX_SERVER_CLEANUP = sys.version_info >= (3, 13)

POLICIES_DEPRECATED = (
    "asyncio's event loop policies are deprecated in this Python (3.14 on, removed in "
    "3.16): ringway.install() sets one all the same, but use ringway.run(main()) or "
    "asyncio.run(main(), loop_factory=ringway.new_event_loop) instead"
)


def server_attach(server, transport):
    if SERVER_ATTACH_TAKES_TRANSPORT:
        server._attach(transport)
    else:
        server._attach()


def server_detach(server, transport):
    if SERVER_ATTACH_TAKES_TRANSPORT:
        server._detach(transport)
    else:
        server._detach()


def format_callback(func, args, debug):
    if FORMAT_CALLBACK_TAKES_DEBUG:
        return format_helpers._format_callback_source(func, args, debug=debug)
    return format_helpers._format_callback_source(func, args)


def policy_base(events):
    """The default policy base class of the asyncio ``events`` module given, and
    whether policies are deprecated there: ``(class, deprecated)``, or
    ``(None, True)`` where the policy system is gone."""
    public = getattr(events, "BaseDefaultEventLoopPolicy", None)
    if public is not None:
        return public, False
    return getattr(events, "_BaseDefaultEventLoopPolicy", None), True


def make_policy_class(events, loop_class):
    """``ringway.EventLoopPolicy`` for the asyncio ``events`` module given: a policy
    whose loops are ``loop_class``; ``None`` if that asyncio has no policies."""
    base, _ = policy_base(events)
    if base is None:
        return None

    class EventLoopPolicy(base):
        """An event loop policy whose loops are ringway loops (for code that calls
        ``asyncio.new_event_loop()`` or ``get_event_loop()``)."""

        def _loop_factory(self):
            return loop_class()

    EventLoopPolicy.__module__ = "ringway"
    return EventLoopPolicy


def install_policy(events, policy_class, stacklevel=2):
    """Sets an instance of ``policy_class`` as ``events``' event loop policy; warns
    (``DeprecationWarning``) where asyncio deprecates policies, and raises
    ``RuntimeError`` where it has none."""
    base, deprecated = policy_base(events)
    if base is None or policy_class is None:
        raise RuntimeError(
            "this Python's asyncio has no event loop policies: use ringway.run(main()) "
            "or asyncio.run(main(), loop_factory=ringway.new_event_loop)")
    if deprecated:
        warnings.warn(POLICIES_DEPRECATED, DeprecationWarning, stacklevel=stacklevel)
        # The warning above says it once; asyncio's public setter would say it again.
        setter = getattr(events, "_set_event_loop_policy", events.set_event_loop_policy)
    else:
        setter = events.set_event_loop_policy
    setter(policy_class())
