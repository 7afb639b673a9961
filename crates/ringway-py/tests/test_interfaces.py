"""ringway's objects have the interfaces of asyncio's: each transport class the public
methods of its asyncio counterpart, no more, with the same ones left to the ABC's
``NotImplementedError`` (a read method on a write pipe, a write method on a read
transport); handles can be weakly referenced."""

import asyncio
import gc
import inspect
import sys
import weakref
from asyncio import selector_events, transports, unix_events

import pytest

from ringway import _datagram, _pipes, _stream, _subprocess
from conftest import run

PAIRS = [
    (_stream.StreamTransport, selector_events._SelectorSocketTransport),
    (_datagram.DatagramTransport, selector_events._SelectorDatagramTransport),
    (_pipes.ReadPipeTransport, unix_events._UnixReadPipeTransport),
    (_pipes.WritePipeTransport, unix_events._UnixWritePipeTransport),
    (_subprocess.SubprocessTransport, unix_events._UnixSubprocessTransport),
]
ABCS = (transports.BaseTransport, transports.ReadTransport, transports.WriteTransport,
        transports.Transport, transports.DatagramTransport, transports.SubprocessTransport)


def left_to_the_abc(cls, name):
    """True if ``cls.name`` is an asyncio ABC's method that raises NotImplementedError."""
    f = getattr(cls, name)
    if not any(vars(abc).get(name) is f for abc in ABCS):
        return False
    params = list(inspect.signature(f).parameters.values())[1:]
    args = [None for p in params if p.default is p.empty and p.kind <= p.POSITIONAL_OR_KEYWORD]
    try:
        f(None, *args)
    except NotImplementedError:
        return True
    except Exception:  # a real method that needs a real self: not a stub
        return False
    return False


def public_methods(cls):
    return {n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))}


@pytest.mark.parametrize("ours,theirs", PAIRS, ids=[p[0].__name__ for p in PAIRS])
def test_transport_classes_have_asyncios_interfaces(ours, theirs):
    assert public_methods(ours) == public_methods(theirs)
    stubs = {n: left_to_the_abc(ours, n) for n in public_methods(ours)}
    want = {n: left_to_the_abc(theirs, n) for n in public_methods(theirs)}
    assert stubs == want


def test_subprocess_pipe_transports_refuse_the_other_direction(loop):
    async def main():
        tr, _ = await loop.subprocess_exec(
            asyncio.SubprocessProtocol, sys.executable, "-c", "import sys; sys.stdin.read()",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=None)
        stdin = tr.get_pipe_transport(0)
        stdout = tr.get_pipe_transport(1)
        for call in (stdin.pause_reading, stdin.resume_reading, stdin.is_reading):
            with pytest.raises(NotImplementedError):
                call()
        assert not hasattr(stdout, "write")
        stdout.pause_reading()
        assert not stdout.is_reading()
        stdout.resume_reading()
        stdin.close()
        assert await tr._wait() == 0
        tr.close()

    run(loop, main())


def test_handles_can_be_weakly_referenced(loop):
    table = weakref.WeakValueDictionary()
    table["soon"] = loop.call_soon(print)
    table["later"] = loop.call_later(10, print)
    table["at"] = loop.call_at(loop.time() + 10, print)
    # Hashable and equal as asyncio's: handles by identity, timers by when, callback,
    # arguments and cancelled state.
    soon = table["soon"]
    assert hash(soon) == hash(soon) and soon != loop.call_soon(print)
    when = loop.time() + 20
    a, b = loop.call_at(when, print, 1), loop.call_at(when, print, 1)
    assert a == b and hash(a) == hash(b) == hash(when)
    assert a != loop.call_at(when, print, 2) and a != loop.call_at(when + 1, print, 1)
    b.cancel()
    assert a != b
    a.cancel()
    del soon, a, b
    refs = weakref.WeakSet()
    for name in ("soon", "later", "at"):
        h = table[name]
        refs.add(h)
        h.cancel()
        del h
    loop.call_soon(loop.stop)
    loop.run_forever()
    gc.collect()
    assert len(table) == 0 and len(refs) == 0, "the weak references died with the handles"
