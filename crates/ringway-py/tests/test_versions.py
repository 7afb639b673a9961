"""What differs between Pythons, each branch driven here by a module of the other
shape (Python 3.14 cannot be installed on these machines): the policy system (public
up to 3.13, renamed and deprecated in 3.14 and 3.15, gone in 3.16), ``Server._attach``
and ``_format_callback_source`` (3.13's signatures); and no name that 3.14 removed,
renamed or deprecated is used anywhere in the package."""

import asyncio
import pathlib
import re
import types
import warnings
from asyncio import events

import pytest

import ringway
from ringway import _compat

POLICY_BASE = getattr(events, "BaseDefaultEventLoopPolicy", None)
needs_policies = pytest.mark.skipif(POLICY_BASE is None, reason="no policies here")


def events_like(version):
    """An ``asyncio.events`` of the shape ``version`` has, around this Python's real
    default policy base (so the policy it makes really makes loops)."""
    calls = []
    if version == "3.13":
        return types.SimpleNamespace(
            BaseDefaultEventLoopPolicy=POLICY_BASE,
            set_event_loop_policy=calls.append), calls
    if version == "3.14":
        def deprecated_setter(policy):  # asyncio 3.14's public setter warns
            warnings.warn("asyncio.set_event_loop_policy is deprecated",
                          DeprecationWarning, stacklevel=2)
            calls.append(policy)
        return types.SimpleNamespace(
            _BaseDefaultEventLoopPolicy=POLICY_BASE,
            set_event_loop_policy=deprecated_setter,
            _set_event_loop_policy=calls.append), calls
    assert version == "3.16"
    return types.SimpleNamespace(), calls


@needs_policies
def test_policy_up_to_313_is_set_without_a_warning():
    fake, calls = events_like("3.13")
    cls = _compat.make_policy_class(fake, ringway.Loop)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _compat.install_policy(fake, cls)
    assert len(calls) == 1 and isinstance(calls[0], POLICY_BASE)
    loop = calls[0].new_event_loop()
    assert isinstance(loop, ringway.Loop)
    loop.close()


@needs_policies
def test_policy_on_314_warns_once_and_still_works():
    fake, calls = events_like("3.14")
    cls = _compat.make_policy_class(fake, ringway.Loop)
    assert cls is not None and issubclass(cls, POLICY_BASE)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _compat.install_policy(fake, cls)
    assert [w.category for w in caught] == [DeprecationWarning]
    assert "ringway.run" in str(caught[0].message)
    assert caught[0].filename == __file__, "the warning names the caller's line"
    loop = calls[0].new_event_loop()
    assert isinstance(loop, ringway.Loop)
    loop.close()


def test_no_policy_system_after_316():
    fake, calls = events_like("3.16")
    assert _compat.make_policy_class(fake, ringway.Loop) is None
    with pytest.raises(RuntimeError, match="loop_factory=ringway.new_event_loop"):
        _compat.install_policy(fake, None)
    assert calls == []


@needs_policies
def test_install_on_this_python():
    old = events.get_event_loop_policy()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # 3.11-3.13: no deprecation
            ringway.install()
        assert isinstance(events.get_event_loop_policy(), ringway.EventLoopPolicy)
        loop = asyncio.new_event_loop()
        assert isinstance(loop, ringway.Loop)
        loop.close()
    finally:
        events.set_event_loop_policy(old)


def test_server_attach_and_callback_format_shapes():
    class Server312:
        def _attach(self):
            pass

    class Server313:
        def _attach(self, transport):
            pass

    assert not _compat.attach_takes_transport(Server312)
    assert _compat.attach_takes_transport(Server313)

    def source312(func, args):
        pass

    def source313(func, args, *, debug=False):
        pass

    assert not _compat.takes_debug(source312)
    assert _compat.takes_debug(source313)


# Names Python 3.14's asyncio removed, renamed or deprecated (its events.py,
# base_events.py, coroutines.py and unix_events.py): the child watchers, the public
# policy classes and functions, asyncio.iscoroutinefunction.
GONE_IN_314 = [
    "AbstractEventLoopPolicy", "BaseDefaultEventLoopPolicy", "DefaultEventLoopPolicy",
    "get_event_loop_policy", "set_event_loop_policy", "iscoroutinefunction",
    "AbstractChildWatcher", "SafeChildWatcher", "FastChildWatcher",
    "ThreadedChildWatcher", "PidfdChildWatcher", "MultiLoopChildWatcher",
    "get_child_watcher", "set_child_watcher",
]


def test_the_package_uses_no_name_314_removed():
    package = pathlib.Path(ringway.__file__).parent
    attribute = re.compile(r"\b(?:asyncio|_asyncio|events|_events|coroutines|unix_events|"
                           r"base_events)\.(" + "|".join(GONE_IN_314) + r")\b")
    found = []
    # _compat.py is where the policy names are looked up by shape (the tests above
    # drive each of its branches); everything else must not name them at all.
    for path in sorted(p for p in package.glob("*.py") if p.name != "_compat.py"):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if attribute.search(line.split("#", 1)[0]):
                found.append(f"{path.name}:{n}: {line.strip()}")
    assert not found, found
