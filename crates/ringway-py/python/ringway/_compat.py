"""Differences between the Python versions ringway supports (3.11, 3.12, 3.13),
decided once at import from what the running asyncio offers, never by patching it."""

import inspect
import sys

from asyncio import base_events, format_helpers

#: 3.13's ``Server._attach(transport)``; 3.11 and 3.12 take no argument.
SERVER_ATTACH_TAKES_TRANSPORT = (
    len(inspect.signature(base_events.Server._attach).parameters) == 2
)

#: 3.13's ``_format_callback_source(func, args, *, debug=False)``.
FORMAT_CALLBACK_TAKES_DEBUG = (
    "debug" in inspect.signature(format_helpers._format_callback_source).parameters
)

#: 3.13 sends an empty datagram for ``sendto(b"")``; earlier versions ignore it.
EMPTY_DATAGRAMS = sys.version_info >= (3, 13)

#: 3.13's ``create_unix_server(..., cleanup_socket=True)``.
UNIX_SERVER_CLEANUP = sys.version_info >= (3, 13)


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
