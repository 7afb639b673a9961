"""Child process: runs one group of CPython's loop mixins on one flavour and reports
its counts (see ``mixins.py``)."""

import sys
import unittest

import mixins
from results import report, runner


def main():
    group, flavour = sys.argv[1], sys.argv[2]
    verbosity = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    suite = unittest.TestSuite()
    for cls in mixins.build(group, flavour):
        suite.addTests(unittest.defaultTestLoader.loadTestsFromTestCase(cls))
    result = runner(verbosity).run(suite)
    report(result)


if __name__ == "__main__":
    main()
