"""The one line a test child prints for the runner: its counts as JSON."""

import json
import sys
import unittest

PREFIX = "RINGWAY-RESULT "


class CountingResult(unittest.TextTestResult):
    """Counts successes itself: since 3.12 ``testsRun`` leaves out some skipped
    tests, so passes cannot be derived from it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.passed = 0

    def addSuccess(self, test):
        super().addSuccess(test)
        self.passed += 1


def runner(verbosity):
    return unittest.TextTestRunner(verbosity=verbosity, resultclass=CountingResult)


def report(result, **extra):
    counts = {
        "run": result.testsRun,
        "failed": len(result.failures) + len(result.unexpectedSuccesses),
        "errors": len(result.errors),
        "skipped": len(result.skipped),
        "expected_failures": len(result.expectedFailures),
    }
    counts["passed"] = result.passed
    counts["skip_reasons"] = sorted({reason for _, reason in result.skipped})
    counts.update(extra)
    sys.stdout.flush()
    print(PREFIX + json.dumps(counts), flush=True)
