"""Runs CPython's asyncio tests against ringway and against stock asyncio, each test
module in its own process with a time limit (a hang is a failure), and prints one
table per suite:

- ``mixins``: the loop-generic mixins (``mixins.py``) bound to each flavour's loop;
- ``factory``: whole modules with ``asyncio.new_event_loop`` replaced by a counting
  factory (``factory.py``); the loop count shows the tests reached the flavour's loop.

Run it with the Python whose ``test.test_asyncio`` to use, ringway installed:

    python compat/run.py [--suite mixins|factory|all] [--flavour ringway|asyncio|both]
                         [--jobs N] [--timeout SECONDS] [--verbose]

Exits non-zero if a ringway test fails, errors or times out, if a factory module made
no ringway loop, or if a child reported nothing.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import mixins  # noqa: E402
from results import PREFIX  # noqa: E402

FACTORY_MODULES = ["test_streams", "test_tasks", "test_locks", "test_queues",
                   "test_taskgroups", "test_timeouts", "test_subprocess", "test_ssl"]


def run_child(script, name, flavour, timeout, verbose):
    cmd = [sys.executable, "-X", "faulthandler", os.path.join(HERE, script), name, flavour,
           "2" if verbose else "1"]
    env = dict(os.environ, PYTHONFAULTHANDLER="1")
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, cwd=HERE, env=env,
                            start_new_session=True, text=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        # Its own process group: the child and anything it started, by pid.
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        timed_out = True
    counts = None
    for line in out.splitlines():
        if line.startswith(PREFIX):
            counts = json.loads(line[len(PREFIX):])
    return {"name": name, "flavour": flavour, "counts": counts, "timed_out": timed_out,
            "returncode": proc.returncode, "seconds": time.monotonic() - t0,
            "output": out}


def verdict(r, suite):
    """Why a ringway result is a failure, or None."""
    c = r["counts"]
    if r["timed_out"]:
        return "timed out"
    if c is None:
        return f"reported nothing (exit {r['returncode']})"
    if c["failed"] or c["errors"]:
        return f"{c['failed']} failed, {c['errors']} errors"
    if suite == "factory" and r["flavour"] == "ringway" and not c.get("loops"):
        return "made no ringway loop"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", choices=["mixins", "factory", "all"], default="all")
    ap.add_argument("--flavour", choices=["ringway", "asyncio", "both"], default="both")
    ap.add_argument("--jobs", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    flavours = ["ringway", "asyncio"] if args.flavour == "both" else [args.flavour]
    suites = ["mixins", "factory"] if args.suite == "all" else [args.suite]
    jobs = []
    for suite in suites:
        names = list(mixins.GROUPS) if suite == "mixins" else FACTORY_MODULES
        script = "mixins_child.py" if suite == "mixins" else "factory.py"
        for name in names:
            for flavour in flavours:
                jobs.append((suite, script, name, flavour))
    # Longest first, so the pool does not end on one slow module.
    slow = {"test_tasks": 0, "test_subprocess": 1, "test_ssl": 2, "events": 3}
    jobs.sort(key=lambda j: slow.get(j[2], 9))
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futs = [(j, pool.submit(run_child, j[1], j[2], j[3], args.timeout, args.verbose))
                for j in jobs]
        results = [(j, f.result()) for j, f in futs]

    version = ".".join(map(str, sys.version_info[:3]))
    bad = []
    totals = {f: [0, 0, 0] for f in flavours}  # passed, failed(+errors), skipped
    for suite in suites:
        rows = [(j, r) for j, r in results if j[0] == suite]
        print(f"\n== Python {version}: {suite} "
              f"({'loop-generic mixins' if suite == 'mixins' else 'new_event_loop replaced'})")
        head = f"{'module':<18}"
        for f in flavours:
            head += f" | {f + ' pass/skip/fail':>24}"
            if suite == "factory":
                head += f" {'loops':>6}"
        print(head)
        names = list(dict.fromkeys(j[2] for j, _ in rows))
        for name in names:
            line = f"{name:<18}"
            for f in flavours:
                r = next(r for j, r in rows if j[2] == name and j[3] == f)
                c = r["counts"]
                if c is None:
                    cell = "TIMEOUT" if r["timed_out"] else "NO RESULT"
                    loops = "-"
                else:
                    cell = f"{c['passed']}/{c['skipped']}/{c['failed'] + c['errors']}"
                    loops = str(c.get("loops", "-"))
                    t = totals[f]
                    t[0] += c["passed"]
                    t[1] += c["failed"] + c["errors"]
                    t[2] += c["skipped"]
                line += f" | {cell:>24}"
                if suite == "factory":
                    line += f" {loops:>6}"
                why = verdict(r, suite)
                if why and f == "ringway":
                    bad.append((suite, name, why, r))
                elif why:
                    print(f"   (reference {name} on stock asyncio: {why})", file=sys.stderr)
            print(line)
        if "ringway" in flavours:
            reasons = sorted({s for j, r in rows if j[3] == "ringway" and r["counts"]
                              for s in r["counts"]["skip_reasons"]})
            if reasons:
                print("ringway skips, with their reasons:")
                for s in reasons:
                    print(f"  - {s}")
    for suite, name, why, r in bad:
        print(f"\n---- ringway {suite} {name}: {why}; its output:\n{r['output'][-6000:]}",
              file=sys.stderr)
    for f in flavours:
        p, fl, s = totals[f]
        print(f"{f}: {p} passed, {fl} failed, {s} skipped")
    if bad:
        print(f"FAILED: {len(bad)} ringway module(s): "
              + ", ".join(f"{s}/{n} ({w})" for s, n, w, _ in bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
