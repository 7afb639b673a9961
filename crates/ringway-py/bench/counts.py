"""Counted figures per echo message, for ringway's loop against the others on the same
workload: what does not move with the machine's load. One server at a time
(``servers.py --count``, pinned to CPU 0) under ``echo-client`` (CPU 1); over the
measured window:

- ``data_received`` calls and bytes per call (the protocol counts them);
- the server's syscalls (``perf stat -e raw_syscalls:sys_enter -p PID``) and, by name,
  ``io_uring_enter``, ``sendmsg``/``sendto``, ``recvfrom``/``read``, ``epoll_wait``;
- io_uring's own counts (``io_uring:io_uring_submit_req``, ``io_uring_complete``);
- ringway's counters (``loop._ringway_stats()``: driver turns, completions, sends,
  direct reads);
- and, timed (so only a hint on a shared machine), the server's user and system CPU
  per message.

    python bench/counts.py [--loops ringway,uvloop] [--size 102400] [--conns 10]
                           [--seconds 3] [--warmup 1]

Run it with the Python that has ringway and the other loops installed; ``BIN`` is where
``echo-client`` is (default target/release). Needs ``perf`` with tracepoints.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time

import s14

EVENTS = {
    "syscalls": "raw_syscalls:sys_enter",
    "io_uring_enter": "syscalls:sys_enter_io_uring_enter",
    "sendmsg": "syscalls:sys_enter_sendmsg",
    "sendto": "syscalls:sys_enter_sendto",
    "recvfrom": "syscalls:sys_enter_recvfrom",
    "read": "syscalls:sys_enter_read",
    "write": "syscalls:sys_enter_write",
    "epoll_wait": "syscalls:sys_enter_epoll_wait",
    "uring_submits": "io_uring:io_uring_submit_req",
    "uring_completions": "io_uring:io_uring_complete",
}


def start(loop, env):
    cmd = ["taskset", "-c", "0", sys.executable, os.path.join(s14.HERE, "servers.py"),
           "--loop", loop, "--mode", "protocol", "--count"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env=env)
    while not (line := proc.stdout.readline()).startswith("PORT "):
        if not line and proc.poll() is not None:
            raise SystemExit(f"counts: the {loop} server did not start")
    return proc, int(line.split()[1])


def cpu_split(pid):
    """(utime, stime) in clock ticks."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])


def perf_counts(path):
    """`perf stat -x,` output: event -> count."""
    out = {}
    with open(path) as f:
        for line in f:
            parts = line.strip().split(",")
            if len(parts) > 2 and parts[0].strip().isdigit():
                out[parts[2]] = int(parts[0])
    return out


def measure(loop, args, env):
    proc, port = start(loop, env)
    perf_out = f"/tmp/counts-perf-{os.getpid()}.txt"
    perf = {}

    def on_measuring():
        perf["cpu0"] = cpu_split(proc.pid)
        proc.send_signal(signal.SIGUSR1)
        ev = ",".join(EVENTS.values())
        perf["p"] = subprocess.Popen(["perf", "stat", "-x,", "-o", perf_out, "-e", ev,
                                      "-p", str(proc.pid)], stderr=subprocess.DEVNULL)

    try:
        msgs, _, _ = s14.run_echo(port, args.conns, args.size, args.warmup, args.seconds,
                                  on_measuring)
        cpu1 = cpu_split(proc.pid)
        proc.send_signal(signal.SIGUSR2)
        perf["p"].send_signal(signal.SIGINT)
        perf["p"].wait(10)
        counts = None
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if line.startswith("COUNTS "):
                counts = json.loads(line[7:])
                break
    finally:
        s14.stop_server(proc)
    pc = perf_counts(perf_out)
    os.unlink(perf_out)
    row = {"loop": loop, "messages": msgs}
    for k, v in counts.items():
        row[k] = v / msgs
    row["user_us"] = (cpu1[0] - perf["cpu0"][0]) / s14.TICK / msgs * 1e6
    row["sys_us"] = (cpu1[1] - perf["cpu0"][1]) / s14.TICK / msgs * 1e6
    row["bytes_per_call"] = counts["bytes"] / max(counts["data_received"], 1)
    for k, ev in EVENTS.items():
        if ev in pc:
            row[k] = pc[ev] / msgs
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loops", default="ringway,uvloop")
    ap.add_argument("--size", type=int, default=100 * 1024)
    ap.add_argument("--conns", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--warmup", type=float, default=1.0)
    ap.add_argument("--backend", help="RINGWAY_BACKEND for ringway's server")
    ap.add_argument("--json", help="write the rows to this file")
    args = ap.parse_args()
    env = dict(os.environ)
    if args.backend:
        env["RINGWAY_BACKEND"] = args.backend
    rows = [measure(l, args, env) for l in args.loops.split(",") if l]
    keys = ["data_received", "bytes_per_call", "syscalls", "io_uring_enter", "sendmsg",
            "sendto", "recvfrom", "read", "write", "epoll_wait", "uring_submits",
            "uring_completions", "turns", "completions", "sends", "direct_reads", "user_us",
            "sys_us"]
    print(f"echo {args.size} B x {args.conns} conns, per message "
          f"({args.seconds:g}s after {args.warmup:g}s)")
    print(f"{'':<18}" + "".join(f"{r['loop']:>12}" for r in rows))
    for k in keys:
        if any(k in r for r in rows):
            vals = "".join(f"{r[k]:>12.2f}" if k in r else f"{'-':>12}" for r in rows)
            print(f"{k:<18}{vals}")
    print(f"{'messages':<18}" + "".join(f"{r['messages']:>12}" for r in rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
