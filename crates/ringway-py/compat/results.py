"""The one line a test child prints for the runner: its counts as JSON."""

import json
import sys

PREFIX = "RINGWAY-RESULT "


def report(result, **extra):
    counts = {
        "run": result.testsRun,
        "failed": len(result.failures) + len(result.unexpectedSuccesses),
        "errors": len(result.errors),
        "skipped": len(result.skipped),
        "expected_failures": len(result.expectedFailures),
    }
    counts["passed"] = (counts["run"] - counts["failed"] - counts["errors"]
                        - counts["skipped"] - counts["expected_failures"])
    counts["skip_reasons"] = sorted({reason for _, reason in result.skipped})
    counts.update(extra)
    sys.stdout.flush()
    print(PREFIX + json.dumps(counts), flush=True)
