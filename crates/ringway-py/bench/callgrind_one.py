"""One callgrind dump of an S14 echo server on ringway's loop, for where the
instructions go: the server (``servers.py``) under callgrind with uncompressed names,
its counters zeroed after the warm-up and dumped after the measured window, then the
total and the part in ringway's own code (functions named ``_ringway::`` or
``ringway::``) per message, with ``scripts/callgrind-top``. One connection by default:
each message is then a loop turn of its own, the shape least moved by the machine's
load.

    python bench/callgrind_one.py [--loop ringway] [--mode protocol] [--size 64]
                                  [--conns 1] [--seconds 4] [--cache-sim] [--keep DIR]

``--loop uvloop`` (or asyncio, rloop) counts the same server on another loop, for the
comparison; ``--cache-sim`` adds data-cache misses (D1 and last level) per message.

Run it with the Python that has ringway installed (``RINGWAY_BACKEND`` picks the
backend); ``BIN`` is where ``echo-client`` is (default target/release).
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

import s14

TOP = os.path.join(s14.ROOT, "scripts", "callgrind-top")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loop", default="ringway")
    ap.add_argument("--cache-sim", action="store_true")
    ap.add_argument("--mode", default="protocol", choices=["protocol", "buffered", "streams"])
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--conns", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--keep", help="keep the dump in this directory")
    args = ap.parse_args()
    d = args.keep or tempfile.mkdtemp()
    out = os.path.join(d, "cg.out")
    cmd = ["taskset", "-c", "0", "valgrind", "--tool=callgrind", "--collect-atstart=yes",
           "--compress-strings=no", f"--callgrind-out-file={out}",
           *(["--cache-sim=yes"] if args.cache_sim else []), sys.executable,
           os.path.join(s14.HERE, "servers.py"), "--loop", args.loop, "--mode", args.mode]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    while not (line := proc.stdout.readline()).startswith("PORT "):
        if not line and proc.poll() is not None:
            raise SystemExit("callgrind_one: the server did not start")
    port = int(line.split()[1])

    def zero():
        subprocess.run(["callgrind_control", "-z", str(proc.pid)], check=True,
                       capture_output=True)

    try:
        msgs, _, _ = s14.run_echo(port, args.conns, args.size, 1, args.seconds, zero)
        subprocess.run(["callgrind_control", "-d", str(proc.pid)], check=True,
                       capture_output=True)
    finally:
        s14.stop_server(proc)
    dump = next(os.path.join(d, n) for n in sorted(os.listdir(d)) if re.match(r"cg\.out\.\d", n))
    with open(dump) as f:
        text = f.read()
    events = re.search(r"^events:\s+(.*)$", text, re.M).group(1).split()
    summary = [int(x) for x in re.search(r"^summary:\s+(.*)$", text, re.M).group(1).split()]
    total = summary[0]
    misses = {e: n / msgs for e, n in zip(events, summary) if e in ("D1mr", "D1mw", "DLmr", "DLmw")}
    top = subprocess.run([sys.executable, TOP, dump, "--per", str(msgs), "--top", "100000"],
                         check=True, capture_output=True, text=True).stdout
    own = sum(float(l.split()[0]) for l in top.splitlines() if "ringway" in l and "%" in l)
    backend = os.environ.get("RINGWAY_BACKEND", "auto")
    where = f"ringway ({backend})" if args.loop == "ringway" else args.loop
    print(f"{args.mode} {args.size} B x {args.conns} on {where}: {total / msgs:.0f} "
          f"instructions per message, {own:.0f} in ringway's code ({msgs} messages; {dump})")
    if misses:
        print("    data-cache misses per message: "
              + ", ".join(f"{e} {n:.0f}" for e, n in misses.items()))


if __name__ == "__main__":
    main()
