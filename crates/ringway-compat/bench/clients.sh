#!/usr/bin/env bash
# Which regime a server is in under each client: the same servers driven by wrk -t1 and
# by `ringway load` (the bench suite's client), 50 connections, one request at a time,
# windows interleaved round by round. Per window it prints the requests, each process's
# CPU use (the client's from /usr/bin/time over its run, the server's from its threads'
# schedstat, over the client's run), the server's CPU microseconds per request, and the
# server's syscalls and context switches per request (`perf stat` tracepoints on the
# server's pid): io_uring_enter or epoll_wait per request says how often the server ran
# out of work and slept.
#
# Why: CPU per request compares servers' work only when both are saturated. On this
# 2-core machine wrk -t1 runs its core at ~99% and offers ~110k req/s, which hyper on
# ringway serves with 3-10% of its core idle, entering the kernel to wait about once
# per two requests (io_uring_enter ~0.5 per request, 0.03 when saturated) and sleeping
# every 15-40, while hyper on tokio, slower, stays nearer saturation; `ringway load`
# has headroom, and both servers saturate.
#
# Usage: crates/ringway-compat/bench/clients.sh
#   env: PEERS="bench-ringway bench-tokio"  (also compat-uring, tokio-ct, tokio-mt1,
#                                           ringway-http; see peers.sh)
#        ROUNDS=3  D=3 (seconds per window)  BIN=DIR (the suite's peers and `ringway`;
#        default target/release; the examples are always target/release/examples)
# Needs wrk, perf and GNU time (apt-get install wrk linux-perf time); run as root for
# the tracepoints. Builds nothing: build with compare.sh (or cargo) first.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. crates/ringway-compat/bench/lib.sh
B=${BIN:-target/release}
D=${D:-3}
ROUNDS=${ROUNDS:-3}
PEERS=${PEERS:-"bench-ringway bench-tokio"}
for tool in wrk perf /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "clients.sh: '$tool' is missing" >&2; exit 1; }
done
PRIO=""
if [ "$(id -u)" = 0 ]; then PRIO="nice -n -15"; fi
# shellcheck source=crates/ringway-compat/bench/peers.sh
source crates/ringway-compat/bench/peers.sh
TIMES=$(mktemp)
client() { # KIND PORT SECONDS -> requests completed
  case $1 in
    wrk) taskset -c 1 $PRIO /usr/bin/time -o "$TIMES" -f "%e %U %S" \
      wrk -t1 -c50 -d"$3s" "http://127.0.0.1:$2/plaintext" | awk '/requests in/ {print $1}' ;;
    load) taskset -c 1 $PRIO /usr/bin/time -o "$TIMES" -f "%e %U %S" \
      "$B/ringway" load -c 50 -d "$3s" --json --no-progress "http://127.0.0.1:$2/plaintext" |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["requests"])' ;;
  esac
}
declare -A PID PORT
for p in $PEERS; do
  PORT[$p]=$(free_port)
  # shellcheck disable=SC2046
  taskset -c 0 $PRIO $(server_cmd "$p" "127.0.0.1:${PORT[$p]}") >/dev/null 2>&1 &
  PID[$p]=$!
done
trap 'for p in $PEERS; do kill "${PID[$p]}" 2>/dev/null; done; rm -f "$TIMES" "$TIMES".perf' EXIT
sleep 1
for p in $PEERS; do client wrk "${PORT[$p]}" 1 >/dev/null; done # warm-up
EVENTS=syscalls:sys_enter_io_uring_enter,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_recvfrom,syscalls:sys_enter_sendto,syscalls:sys_enter_writev,sched:sched_switch
for r in $(seq 1 "$ROUNDS"); do
  for c in wrk load; do
    for p in $PEERS; do
      t0=$(cpu_ns "${PID[$p]}")
      perf stat -x, -e "$EVENTS" -p "${PID[$p]}" -o "$TIMES".perf 2>/dev/null &
      ps=$!
      sleep 0.2
      n=$(client $c "${PORT[$p]}" "$D")
      kill -INT $ps
      wait $ps 2>/dev/null
      t1=$(cpu_ns "${PID[$p]}")
      per=$(awk -F, -v n="$n" '$3 ~ /:/ && $1 + 0 > 0 {split($3, a, ":"); sub("sys_enter_", "", a[2]); printf "%s %.3f  ", a[2], $1 / n}' "$TIMES".perf)
      echo "round $r  $c  $p: $n requests, client CPU $(awk '{printf "%.0f%%", ($2 + $3) / $1 * 100}' "$TIMES")," \
        "server CPU $(awk -v t=$((t1 - t0)) '{printf "%.0f%%", t / 1e9 / $1 * 100}' "$TIMES")," \
        "$(awk -v t=$((t1 - t0)) -v n="$n" 'BEGIN {printf "%.2f", t / 1e3 / n}') us/request; per request: $per"
    done
  done
done
