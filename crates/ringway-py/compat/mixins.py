"""CPython's loop-generic asyncio test mixins, bound to a loop factory.

``build(group, flavour)`` returns the unittest classes of one group: the mixins of one
CPython test module, with ``create_event_loop``/``new_loop`` returning a ringway loop
(flavour ``ringway``) or stock asyncio's default loop (flavour ``asyncio``, the
reference). The two flavours run the very same test methods; ringway's skips each carry
a written reason (``SKIPS``), and the asyncio flavour skips nothing of its own."""

import asyncio
import sys
import unittest

# (CPython test module, mixin names, TestCase base, name of the loop factory method)
GROUPS = {
    "events": ("test_events", ["EventLoopTestsMixin", "SubprocessTestsMixin"],
               "utils.TestCase", "create_event_loop"),
    "sock_lowlevel": ("test_sock_lowlevel", ["BaseSockTestsMixin"], "utils.TestCase",
                      "create_event_loop"),
    "sendfile": ("test_sendfile", ["SendfileTestsBase"], "utils.TestCase",
                 "create_event_loop"),
    "server": ("test_server", ["BaseStartServer"], "unittest.TestCase", "new_loop"),
    "buffered_proto": ("test_buffered_proto", ["BaseTestBufferedProtocol"],
                       "unittest.TestCase", "new_loop"),
    "sslproto": ("test_sslproto", ["BaseStartTLS"], "unittest.TestCase", "new_loop"),
}

# test method name -> why ringway does not run it. Each one looks at a part of stdlib's
# selector loop that ringway's loop does not have, or tests behaviour that is not a
# loop's (listed as found by running the suite).
SKIPS = {
    "events": {
        "test_internal_fds": "checks BaseSelectorEventLoop's self-pipe (_csock/_ssock); "
                             "ringway wakes through the driver's eventfd",
    },
}


def _loop_factory(flavour):
    if flavour == "ringway":
        import ringway
        return ringway.new_event_loop
    if flavour == "asyncio":
        return asyncio.SelectorEventLoop
    raise ValueError(f"unknown flavour {flavour!r}: expected ringway or asyncio")


def build(group, flavour):
    """The TestCase classes for ``group`` bound to ``flavour``'s loop."""
    modname, mixins, base, method = GROUPS[group]
    import importlib
    mod = importlib.import_module(f"test.test_asyncio.{modname}")
    utils = importlib.import_module("test.test_asyncio.utils")
    bases = [getattr(mod, m) for m in mixins]
    base_cls = utils.TestCase if base == "utils.TestCase" else unittest.TestCase
    factory = _loop_factory(flavour)
    body = {method: lambda self: factory()}
    if flavour == "ringway":
        for name, reason in SKIPS.get(group, {}).items():
            body[name] = unittest.skip(reason)(lambda self: None)
    cls = type(f"{flavour.capitalize()}_{group}", (*bases, base_cls), body)
    cls.__module__ = __name__
    return [cls]
