"""S14: ringway's asyncio loop against stock asyncio (the control), uvloop (the
reference) and rloop (where it installs), side by side in one run.

Each server (``servers.py``) runs alone, pinned to CPU 0; a native client runs pinned
to CPU 1: ``echo-client`` (ringway-bench; epoll, one thread, every byte checked) for
echo, ``ringway load`` for HTTP. Reported per peer: messages (requests) per second, the
server's CPU per message (utime+stime from /proc/PID/stat over the measured window,
divided by the messages of that window), and with ``--callgrind`` the server's
user-space instructions per message under callgrind (the noise-free column).

    python bench/s14.py [--loops ringway,asyncio,uvloop,rloop] [--scenarios ...]
                        [--duration 5] [--warmup 1] [--rounds 1] [--callgrind]
                        [--json FILE]

Run it with the Python that has ringway (a release build), uvloop and rloop installed
(``crates/ringway-py/bench/run`` prepares that and builds the native clients).
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
BIN = os.environ.get("BIN", os.path.join(ROOT, "target", "release"))
TICK = os.sysconf("SC_CLK_TCK")

# name -> (server mode, client kind, connections, message size)
SCENARIOS = {
    "echo-64-c10": ("protocol", "echo", 10, 64),
    "echo-1k-c10": ("protocol", "echo", 10, 1024),
    "echo-1k-c1": ("protocol", "echo", 1, 1024),
    "echo-1k-c100": ("protocol", "echo", 100, 1024),
    "echo-100k-c10": ("protocol", "echo", 10, 100 * 1024),
    "echo-100k-c3": ("protocol", "echo", 3, 100 * 1024),
    "echo-100k-c1": ("protocol", "echo", 1, 100 * 1024),
    "echo-32k-c10": ("protocol", "echo", 10, 32 * 1024),
    "streams-1k-c10": ("streams", "echo", 10, 1024),
    "buffered-1k-c10": ("buffered", "echo", 10, 1024),
    "http2w-c10": ("http", "http", 10, 0),
    "http2w-c50": ("http", "http", 50, 0),
}
DEFAULT = ["echo-64-c10", "echo-1k-c10", "streams-1k-c10", "buffered-1k-c10",
           "http2w-c10"]


def available(loop):
    if loop in ("ringway", "asyncio"):
        return True
    try:
        __import__(loop)
        return True
    except ImportError:
        return False


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime (fields 14, 15)


def start_server(loop, mode, callgrind_out=None):
    cmd = [sys.executable, os.path.join(HERE, "servers.py"), "--loop", loop, "--mode", mode]
    if callgrind_out:
        cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=yes",
               f"--callgrind-out-file={callgrind_out}", *cmd]
    proc = subprocess.Popen(["taskset", "-c", "0", *cmd], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + (120 if callgrind_out else 20)
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith("PORT "):
            return proc, int(line.split()[1])
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise RuntimeError(f"{loop} {mode}: the server did not start")


def stop_server(proc):
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_echo(port, conns, size, warmup, duration, on_measuring):
    cmd = ["taskset", "-c", "1", os.path.join(BIN, "echo-client"),
           "--addr", f"127.0.0.1:{port}", "--conns", str(conns), "--size", str(size),
           "--warmup", str(warmup), "--duration", str(duration), "--json"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    result = None
    for line in p.stdout:
        if line.strip() == "measuring":
            on_measuring()
        elif line.startswith("{"):
            result = json.loads(line)
    if p.wait() != 0 or result is None:
        raise RuntimeError(f"echo-client failed (exit {p.returncode})")
    return result["messages"], result["duration_s"], None


def run_http(port, conns, warmup, duration, on_measuring, path="/", timeout=None, rate=None):
    cmd = ["taskset", "-c", "1", os.path.join(BIN, "ringway"), "load", "-c", str(conns),
           "-d", f"{duration}s", "--warmup", f"{warmup}s", "--json",
           *(["--timeout", timeout] if timeout else []),
           *(["-R", str(rate)] if rate else []),
           f"http://127.0.0.1:{port}{path}"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    # ringway load prints nothing until the end: the window starts after the warm-up.
    time.sleep(warmup)
    on_measuring()
    out = p.stdout.read()
    if p.wait() != 0:
        raise RuntimeError(f"ringway load failed (exit {p.returncode})")
    r = json.loads(out)
    errors = sum(r["errors"].values())
    if errors:
        raise RuntimeError(f"ringway load: {errors} errors: {r['errors']}")
    return r["requests"], r["duration_s"], r["latency_us"]


def measure(loop, scenario, args):
    mode, kind, conns, size = SCENARIOS[scenario]
    proc, port = start_server(loop, mode)
    mark = {}

    def on_measuring():
        mark["t0"] = cpu_ticks(proc.pid)

    try:
        if kind == "echo":
            msgs, secs, lat = run_echo(port, conns, size, args.warmup, args.duration,
                                       on_measuring)
        else:
            msgs, secs, lat = run_http(port, conns, args.warmup, args.duration, on_measuring)
        ticks = cpu_ticks(proc.pid) - mark["t0"]
    finally:
        stop_server(proc)
    return {"loop": loop, "scenario": scenario, "messages": msgs, "seconds": secs,
            "msgs_per_s": msgs / secs, "cpu_us_per_msg": ticks / TICK / msgs * 1e6,
            "latency_us": lat}


def callgrind(loop, scenario, args):
    """User-space instructions per message: counters zeroed after a warm-up, dumped
    after the measured load."""
    mode, kind, conns, size = SCENARIOS[scenario]
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        proc, port = start_server(loop, mode, callgrind_out=out)

        def zero():
            subprocess.run(["callgrind_control", "-z", str(proc.pid)], check=True,
                           capture_output=True)

        try:
            if kind == "echo":
                msgs, _, _ = run_echo(port, conns, size, 1, args.cg_duration, zero)
            else:
                msgs, _, _ = run_http(port, conns, 1, args.cg_duration, zero)
            subprocess.run(["callgrind_control", "-d", str(proc.pid)], check=True,
                           capture_output=True)
        finally:
            stop_server(proc)
        total = 0
        for name in os.listdir(d):
            if not name.startswith("cg.out"):
                continue
            with open(os.path.join(d, name)) as f:
                text = f.read()
            counts = re.findall(r"^(?:summary|totals):\s+(\d+)", text, re.M)
            if counts and re.search(r"^part:\s*\d+", text, re.M):
                total = max(total, int(counts[0]))
        return total / msgs if msgs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loops", default="ringway,asyncio,uvloop,rloop")
    ap.add_argument("--scenarios", default=",".join(DEFAULT),
                    help="comma-separated, from: " + ", ".join(SCENARIOS))
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--warmup", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=1,
                    help="interleaved rounds; the table shows medians")
    ap.add_argument("--callgrind", action="store_true",
                    help="also count user-space instructions per message (slow)")
    ap.add_argument("--cg-duration", type=float, default=4.0)
    ap.add_argument("--json", help="write every measurement to this file")
    args = ap.parse_args()
    for tool in ("taskset",) + (("valgrind", "callgrind_control") if args.callgrind else ()):
        if not shutil.which(tool):
            raise SystemExit(f"s14: '{tool}' is missing (apt-get install "
                             f"{'util-linux' if tool == 'taskset' else 'valgrind'})")
    for exe in ("echo-client", "ringway"):
        if not os.access(os.path.join(BIN, exe), os.X_OK):
            raise SystemExit(f"s14: {BIN}/{exe} is missing: cargo build --release "
                             "-p ringway-bench -p ringway-cli")
    loops = [l for l in args.loops.split(",") if l]
    missing = [l for l in loops if not available(l)]
    for l in missing:
        print(f"s14: {l} is not installed here; left out", file=sys.stderr)
    loops = [l for l in loops if l not in missing]
    scenarios = args.scenarios.split(",")
    for s in scenarios:
        if s not in SCENARIOS:
            raise SystemExit(f"s14: unknown scenario {s!r}; expected one of {', '.join(SCENARIOS)}")
    rows = []
    for r in range(args.rounds):
        for s in scenarios:
            for l in loops:  # interleaved: each round measures every peer once
                m = measure(l, s, args)
                m["round"] = r
                rows.append(m)
                print(f"  round {r + 1} {s:<16} {l:<8} {m['msgs_per_s']:>10.0f} msg/s "
                      f"{m['cpu_us_per_msg']:>7.2f} us CPU/msg", file=sys.stderr, flush=True)
    cg = {}
    if args.callgrind:
        for s in scenarios:
            for l in loops:
                cg[(s, l)] = callgrind(l, s, args)
                print(f"  callgrind {s:<16} {l:<8} {cg[(s, l)]:>10.0f} instructions/msg",
                      file=sys.stderr, flush=True)
    print(f"\nS14 (python {sys.version.split()[0]}; server on CPU 0, native client on CPU 1; "
          f"{args.duration:g}s measured after {args.warmup:g}s, {args.rounds} round(s), medians)")
    head = f"{'scenario':<16} {'loop':<8} {'msg/s':>10} {'µs CPU/msg':>11} {'÷uvloop':>8} {'÷asyncio':>9}"
    if args.callgrind:
        head += f" {'instr/msg':>10}"
    print(head)
    for s in scenarios:
        med = {}
        for l in loops:
            ms = [m for m in rows if m["scenario"] == s and m["loop"] == l]
            med[l] = (statistics.median(m["msgs_per_s"] for m in ms),
                      statistics.median(m["cpu_us_per_msg"] for m in ms))
        for l in loops:
            rate, cpu = med[l]
            vs_uv = f"{cpu / med['uvloop'][1]:.2f}" if "uvloop" in med else "-"
            vs_as = f"{cpu / med['asyncio'][1]:.2f}" if "asyncio" in med else "-"
            line = f"{s:<16} {l:<8} {rate:>10.0f} {cpu:>11.2f} {vs_uv:>8} {vs_as:>9}"
            if args.callgrind:
                line += f" {cg[(s, l)]:>10.0f}"
            print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "callgrind": {f"{s}/{l}": v for (s, l), v in cg.items()}},
                      f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
