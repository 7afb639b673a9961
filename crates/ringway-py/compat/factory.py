"""Runs one CPython asyncio test module with ``asyncio.new_event_loop`` replaced by a
counting factory that makes ringway loops (flavour ``ringway``) or stock asyncio's
(flavour ``asyncio``, the reference), and reports how many loops it made.

The modules that build their loops through ``asyncio.new_event_loop`` (directly, or
through ``asyncio.run``/``asyncio.Runner``/``IsolatedAsyncioTestCase``) then run on
ringway; the loop count proves it. Tests that build a specific loop class themselves
(``asyncio.SelectorEventLoop()``, a mock loop) run as they are.

    python compat/factory.py test_streams ringway
"""

import asyncio
import asyncio.events
import sys
import unittest

from results import report, runner

# test module -> {test id without the module prefix: why it does not apply to ringway}.
SKIPS = {
    "test_subprocess": {
        "GenericWatcherTests.test_create_subprocess_fails_with_inactive_watcher":
            "ringway learns of child exits through a pidfd on its ring, not through "
            "asyncio's child watchers, so an inactive watcher cannot make it fail",
    },
}


def _leave_policy_state():
    """What a skipped test would have left behind that a later test of its module
    depends on: ``asyncio.run()`` has called ``set_event_loop`` (3.12's
    ``test_create_subprocess_with_pidfd`` expects ``get_event_loop()`` to raise)."""
    asyncio.run(asyncio.sleep(0))


def _skipped(reason):
    def test(self):
        _leave_policy_state()
        raise unittest.SkipTest(reason)
    return test


def install(flavour):
    made = [0]
    if flavour == "ringway":
        import ringway
        make = ringway.new_event_loop
    elif flavour == "asyncio":
        make = asyncio.events.new_event_loop
    else:
        raise SystemExit(f"unknown flavour {flavour!r}: expected ringway or asyncio")

    def new_event_loop():
        made[0] += 1
        return make()

    asyncio.events.new_event_loop = new_event_loop
    asyncio.new_event_loop = new_event_loop
    return made


def main():
    module, flavour = sys.argv[1], sys.argv[2]
    made = install(flavour)
    import importlib
    mod = importlib.import_module(f"test.test_asyncio.{module}")
    suite = unittest.defaultTestLoader.loadTestsFromModule(mod)
    if flavour == "ringway":
        skips = SKIPS.get(module, {})

        def apply(s):
            for t in s:
                if isinstance(t, unittest.TestSuite):
                    apply(t)
                else:
                    short = t.id().split(".", 3)[-1]
                    if short in skips:
                        setattr(t, t._testMethodName,
                                _skipped(skips[short]).__get__(t, type(t)))
        apply(suite)
    result = runner(int(sys.argv[3]) if len(sys.argv) > 3 else 1).run(suite)
    report(result, loops=made[0])


if __name__ == "__main__":
    main()
