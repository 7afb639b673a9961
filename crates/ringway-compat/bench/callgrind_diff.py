#!/usr/bin/env python3
"""The difference of two callgrind dumps of one server (a run of N1 requests and one of
N2), per request, by function and by crate: what a request costs with the set-up of the
runs (handshakes, connections) cancelled out.

Usage: callgrind_diff.py DUMP_N1 DUMP_N2 --per N2-N1 [--top 40] [--function SUBSTRING]

Self cost only (as scripts/callgrind-top, whose parser this uses). The crate of a
function is the first path segment of its name (of the type, for `<T as Trait>::f`);
C functions (memcpy, malloc) are their own group.
"""
import argparse
import collections
import importlib.machinery
import importlib.util
import os
import re
import signal


def load_top():
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "..", "..", "scripts", "callgrind-top")
    loader = importlib.machinery.SourceFileLoader("callgrind_top", path)
    spec = importlib.util.spec_from_loader("callgrind_top", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def crate_of(name):
    if not name:
        return "?"
    n = name.lstrip("<&*").replace("mut ", "").replace("dyn ", "")
    m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)::", n)
    if m:
        return m.group(1)
    if n.startswith("_") or "::" not in n:
        return "C: " + n.split("'")[0][:40]
    return n[:40]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("small")
    ap.add_argument("large")
    ap.add_argument("--per", type=float, required=True)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--function")
    a = ap.parse_args()
    top = load_top()
    own1, lines1, calls1 = top.parse(a.small, "Ir")
    own2, lines2, calls2 = top.parse(a.large, "Ir")
    diff = collections.Counter()
    for f in set(own1) | set(own2):
        diff[f] = own2.get(f, 0) - own1.get(f, 0)
    total = sum(diff.values())
    if a.function:
        for f in [f for f in diff if f and a.function in f]:
            print("%s: own %.1f" % (f, diff[f] / a.per))
            cs = collections.Counter()
            for (g, callee), c in calls2.items():
                if g == f:
                    cs[callee] += c
            for (g, callee), c in calls1.items():
                if g == f:
                    cs[callee] -= c
            for callee, c in cs.most_common():
                if c / a.per >= 0.5:
                    print("  %8.1f  -> %s" % (c / a.per, callee[:140]))
        return
    for f, c in diff.most_common(a.top):
        print("%9.1f %5.1f%%  %s" % (c / a.per, 100.0 * c / total, (f or "?")[:150]))
    print("%9.1f        total Ir per request" % (total / a.per))
    crates = collections.Counter()
    for f, c in diff.items():
        crates[crate_of(f)] += c
    print("-- by crate")
    for k, c in crates.most_common(30):
        print("%9.1f %5.1f%%  %s" % (c / a.per, 100.0 * c / total, k))


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main()
