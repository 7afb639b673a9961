"""Instructions per request of an S15 server (uvicorn or aiohttp serving the suite's ASGI
app, ``crates/ringway-bench/python/serve.py``) on a chosen loop, under callgrind: the
count that the shared machine's load does not move. The server runs under callgrind
pinned to CPU 0, ``ringway load`` on CPU 1 (an open loop at ``--rate``, the same for
every loop: a closed loop under callgrind runs as fast as callgrind lets each loop,
which spreads costs per unit of time differently); counters are zeroed after the
warm-up and dumped after the measured window. Prints the total per request and its
split by object file (the interpreter, ringway's or uvloop's native module, httptools,
libc, ...), and with ``--syscalls`` the server's syscalls per request in a separate run
outside callgrind (``perf stat -e raw_syscalls:sys_enter``, with the main ones by name).

    python bench/callgrind_http.py [--server uvicorn] [--loops ringway,uvloop]
                                   [--path /plaintext] [--conns 50] [--rate 150]
                                   [--seconds 4]
                                   [--syscalls] [--keep DIR]

Run it with the Python that has ringway, uvloop, uvicorn, httptools and aiohttp;
``BIN`` is where ``ringway`` is (default target/release).
"""

import argparse
import collections
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

import s14

SERVE = os.path.join(s14.ROOT, "crates", "ringway-bench", "python", "serve.py")
SYSCALLS = ["raw_syscalls:sys_enter", "syscalls:sys_enter_io_uring_enter",
            "syscalls:sys_enter_sendto", "syscalls:sys_enter_sendmsg",
            "syscalls:sys_enter_recvfrom", "syscalls:sys_enter_write",
            "syscalls:sys_enter_read", "syscalls:sys_enter_epoll_wait"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(server, loop, prefix=()):
    port = free_port()
    cmd = ["taskset", "-c", "0", *prefix, sys.executable, SERVE, "--server", server,
           "--loop", loop, "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, port
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"callgrind_http: {server} on {loop} did not start")


def by_object(dump):
    """Instructions per object file (``ob=``) from an uncompressed callgrind dump:
    self cost of every function, summed by the object it is in."""
    totals = collections.Counter()
    ob_names = {}
    ob = "?"
    in_call = False
    with open(dump) as f:
        for line in f:
            if line.startswith("ob="):
                m = re.match(r"ob=(\(\d+\))?\s*(.*)", line.strip())
                if m.group(2):
                    if m.group(1):
                        ob_names[m.group(1)] = m.group(2)
                    ob = m.group(2)
                else:
                    ob = ob_names.get(m.group(1), "?")
            elif line.startswith("calls="):
                in_call = True
            elif line[:1].isdigit() or line[:1] in "+-*":
                parts = line.split()
                if in_call:
                    in_call = False  # the inclusive cost of a call: not self cost
                    continue
                if len(parts) >= 2:
                    totals[ob] += int(parts[1])
            elif line.startswith(("cfn=", "cfi=", "cob=", "cfl=")):
                pass
    return totals


def short(ob):
    name = os.path.basename(ob)
    if name.startswith("python3") or "libpython" in name:
        return "python"
    if name.startswith("_ringway"):
        return "ringway (native)"
    if name.startswith("loop.cpython"):
        return "uvloop (native)"
    if "vgpreload" in name or name.startswith("ld-"):
        return "loader/valgrind"
    return name.split(".cpython")[0].split(".so")[0]


def callgrind(server, loop, args):
    d = args.keep or tempfile.mkdtemp()
    out = os.path.join(d, f"cg.{server}.{loop}.out")
    prefix = ["valgrind", "--tool=callgrind", "--collect-atstart=yes",
              "--compress-strings=no", "--compress-pos=no", f"--callgrind-out-file={out}"]
    proc, port = start(server, loop, prefix)

    def zero():
        subprocess.run(["callgrind_control", "-z", str(proc.pid)], check=True,
                       capture_output=True)

    try:
        reqs, _, _ = s14.run_http(port, args.conns, args.warmup, args.seconds, zero,
                                  path=args.path, timeout="60s", rate=args.rate)
        subprocess.run(["callgrind_control", "-d", str(proc.pid)], check=True,
                       capture_output=True)
    finally:
        s14.stop_server(proc)
    dump = next(os.path.join(d, n) for n in sorted(os.listdir(d))
                if re.match(rf"cg\.{server}\.{loop}\.out\.\d", n))
    with open(dump) as f:
        total = int(re.search(r"^summary:\s+(\d+)", f.read(), re.M).group(1))
    split = collections.Counter()
    for ob, n in by_object(dump).items():
        split[short(ob)] += n
    return reqs, total, split, dump


def syscalls(server, loop, args):
    proc, port = start(server, loop)
    out = os.path.join(tempfile.mkdtemp(), "perf.txt")
    perf = {}

    def on_measuring():
        perf["p"] = subprocess.Popen(["perf", "stat", "-x,", "-o", out, "-e",
                                      ",".join(SYSCALLS), "-p", str(proc.pid)],
                                     stderr=subprocess.DEVNULL)

    try:
        reqs, _, _ = s14.run_http(port, args.conns, args.warmup, args.seconds,
                                  on_measuring, path=args.path, rate=args.rate)
        perf["p"].send_signal(signal.SIGINT)
        perf["p"].wait(10)
    finally:
        s14.stop_server(proc)
    counts = {}
    with open(out) as f:
        for line in f:
            p = line.strip().split(",")
            if len(p) > 2 and p[0].isdigit():
                counts[p[2].split(":")[-1].replace("sys_enter_", "")] = int(p[0]) / reqs
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", default="uvicorn", choices=["uvicorn", "aiohttp"])
    ap.add_argument("--loops", default="ringway,uvloop")
    ap.add_argument("--path", default="/plaintext")
    ap.add_argument("--conns", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--rate", type=int, default=150,
                    help="open loop at this many requests/s (0: closed loop); the same "
                         "rate for every loop, so costs per unit of time (uvicorn's "
                         "0.1 s tick) weigh the same per request")
    ap.add_argument("--syscalls", action="store_true")
    ap.add_argument("--keep", help="keep the dumps in this directory")
    args = ap.parse_args()
    for loop in [l for l in args.loops.split(",") if l]:
        reqs, total, split, dump = callgrind(args.server, loop, args)
        if not reqs:
            print(f"{args.server} on {loop}: no request completed in the window")
            continue
        print(f"{args.server} {args.path} on {loop}: {total / reqs:.0f} instructions per "
              f"request ({reqs} requests; {dump})")
        for name, n in split.most_common(12):
            print(f"    {n / reqs:>10.0f}  {name}")
        if args.syscalls:
            c = syscalls(args.server, loop, args)
            print("    syscalls per request: " + ", ".join(
                f"{k} {v:.2f}" for k, v in sorted(c.items(), key=lambda kv: -kv[1]) if v))


if __name__ == "__main__":
    main()
