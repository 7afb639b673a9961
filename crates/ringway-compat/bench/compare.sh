#!/usr/bin/env bash
# hyper hello on ringway (through ringway-compat) against the same hyper service on tokio
# (current_thread, and multi_thread with one worker), plus `ringway serve --hello` (what
# the adapter and hyper cost against ringway's own HTTP server). One run (or ROUNDS);
# each server pinned to CPU 0, wrk pinned to CPU 1; /plaintext, 50 keep-alive
# connections, not pipelined and pipelined x16.
#
# Prints, per server: req/s and server CPU us per request (the CPU time of the server's
# threads from /proc/PID/task/*/schedstat, nanoseconds, over the measured window; in
# brackets the user-space part, utime from /proc/PID/stat) for both loads, then
# user-space instructions per request under callgrind (warm-up, `callgrind_control -z`,
# measured load, `-d`, the dump's total divided by the requests wrk completed in that
# window).
#
# Wall clock on a shared machine: every peer's server runs for the whole of a load
# shape, and the measured windows go round the peers (ROUNDS times, each round starting
# with the next peer), so the windows of one round are seconds apart and a ratio is
# taken within a round; the table shows each peer's median over the rounds, a ratio is
# the median of the per-round ratios, with its quartiles and range. Run as root, the
# servers and wrk get `nice -n -15` (as scripts/instructions does), so that builds
# elsewhere on the machine do not preempt them (NICE=0 to run as is).
#
# Usage: crates/ringway-compat/bench/compare.sh [SECONDS]      (default 5)
#   env: PEERS="compat-uring compat-epoll tokio-ct tokio-mt1 ringway-http"
#          (also bench-ringway, bench-tokio: ringway-bench's http-hyper-ringway and
#          http-hyper, the suite's S5 hyper peers: pipeline_flush on, no timer; built
#          with cargo build --release -p ringway-bench --bin http-hyper-ringway --bin
#          http-hyper, or taken from BIN=DIR)
#        CALLGRIND=0     skip the instruction counts
#        WALL=0          skip the wall-clock loads (instruction counts only)
#        ROUNDS=N        measured windows per peer and shape (default 1); on a shared
#                        machine use many short ones: ROUNDS=15 with SECONDS=2
#        SHAPES="c50 p16" which loads (c50: one request at a time; p16: pipelined x16)
#        VERBOSE=1       print every window as it is measured (on stderr)
#        SKIP_BUILD=1    use the binaries already built
#        CLIENT=load     drive the wall-clock loads with `ringway load` (the bench suite's
#                        client: -c 50, -p 16 for p16) instead of wrk -t1 (the callgrind
#                        counts always use wrk). On this 2-core machine wrk -t1 runs its
#                        core at 99% and is slower than hyper on ringway: that server
#                        then idles 3-10% of the time and waits in the kernel about once
#                        per two requests (bench/clients.sh counts it), which its CPU per
#                        request pays for, while the slower tokio server stays nearer
#                        saturation. `ringway load`
#                        saturates both, so the ratio compares the work per request.
# Needs wrk (apt-get install wrk) and, for the counts, valgrind (apt-get install valgrind).
set -euo pipefail
cd "$(dirname "$0")/../../.."
. crates/ringway-compat/bench/lib.sh
D=${1:-5}
PEERS=${PEERS:-"compat-uring compat-epoll tokio-ct tokio-mt1 ringway-http"}
CALLGRIND=${CALLGRIND:-1}
WALL=${WALL:-1}
ROUNDS=${ROUNDS:-1}
SHAPES=${SHAPES:-"c50 p16"}
OUT=${OUT:-target/compat-bench}
B=crates/ringway-compat/bench
HZ=$(getconf CLK_TCK)
PRIO=""
if [ "$(id -u)" = 0 ] && [ "${NICE:-1}" != 0 ]; then PRIO="nice -n -15"; fi
# A port the kernel says is free (asked for each server).
mkdir -p "$OUT"

command -v wrk >/dev/null || { echo "compare.sh: 'wrk' is missing; install it with: apt-get install wrk" >&2; exit 1; }
if [ "$CALLGRIND" = 1 ] && ! command -v callgrind_control >/dev/null; then
  echo "compare.sh: 'valgrind' is missing (or run with CALLGRIND=0); install it with: apt-get install valgrind" >&2
  exit 1
fi
if [ -z "${SKIP_BUILD:-}" ]; then
  cargo build --release -q -p ringway-compat --example hello_hyper --example hello_hyper_tokio
  cargo build --release -q -p ringway-cli
fi

# shellcheck source=crates/ringway-compat/bench/peers.sh
source "$B/peers.sh"


cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
user_ticks() { awk '{print $14}' "/proc/$1/stat"; }

CLIENT=${CLIENT:-wrk}
case "$CLIENT" in wrk | load) ;; *) echo "compare.sh: CLIENT is wrk or load, not '$CLIENT'" >&2; exit 2 ;; esac

run_wrk() { # SHAPE SECONDS URL -> wrk's output (or, CLIENT=load, the lines of it read here)
  if [ "$CLIENT" = load ]; then
    run_load "$@"
    return
  fi
  case "$1" in
    c50) taskset -c 1 $PRIO wrk -t1 -c50 -d"$2s" "$3" ;;
    p16) taskset -c 1 $PRIO wrk -t1 -c50 -d"$2s" -s $B/pipeline.lua "$3" ;;
  esac
}

# `ringway load` with the shape, its JSON report printed as the lines of wrk's output
# this script reads ("N requests in", "Requests/sec: R", "Socket errors" on errors).
run_load() { # SHAPE SECONDS URL
  local depth=1
  [ "$1" = p16 ] && depth=16
  taskset -c 1 $PRIO target/release/ringway load -c 50 -p $depth -d "$2s" --json --no-progress "$3" |
    python3 -c 'import json, sys
r = json.load(sys.stdin)
print(r["requests"], "requests in")
print("Requests/sec:", r["rps"])
errors = sum(r.get("errors", {}).values())
if errors:
    print("Socket errors:", r["errors"])'
}


# CPU time of PID's threads so far, in nanoseconds (the scheduler's own sum, not the
# 10 ms ticks of /proc/PID/stat).

# start_server PEER SHAPE -> "PID PORT", the server running (pinned to CPU 0) and
# warmed up.
start_server() {
  local peer=$1 shape=$2 port pid
  port=$(free_port)
  # shellcheck disable=SC2046
  taskset -c 0 $PRIO $(server_cmd "$peer" 127.0.0.1:$port) >"$OUT/$peer.$shape.log" 2>&1 &
  pid=$!
  wait_port "$port" 300
  run_wrk "$shape" 1 "http://127.0.0.1:$port/plaintext" >/dev/null # warm-up
  echo "$pid $port"
}

# window PEER SHAPE PID PORT -> "req/s CPU-us-per-request user-us-per-request" of one
# measured window of D seconds.
window() {
  local peer=$1 shape=$2 pid=$3 port=$4 out t0 t1 u0 u1 reqs
  t0=$(cpu_ns "$pid")
  u0=$(user_ticks "$pid")
  out=$(run_wrk "$shape" "$D" "http://127.0.0.1:$port/plaintext")
  t1=$(cpu_ns "$pid")
  u1=$(user_ticks "$pid")
  if echo "$out" | grep -q "Non-2xx\|Socket errors"; then
    echo "compare.sh: $peer $shape: wrk saw errors:" >&2
    echo "$out" | grep "Non-2xx\|Socket errors" >&2
  fi
  reqs=$(echo "$out" | awk '/requests in/ {print $1}')
  echo "$(echo "$out" | awk '/Requests\/sec/ {printf "%.0f", $2}')" \
    "$(awk -v t=$((t1 - t0)) -v r="$reqs" 'BEGIN {printf "%.3f", t / 1e3 / r}')" \
    "$(awk -v t=$((u1 - u0)) -v hz="$HZ" -v r="$reqs" 'BEGIN {printf "%.2f", t / hz * 1e6 / r}')"
}

median() { # numbers... -> their median
  printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f", (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

declare -A RPS CPU USR INS ROUND_RPS ROUND_CPU ROUND_USR
for peer in $PEERS; do
  for shape in c50 p16; do
    RPS[$peer.$shape]=-
    CPU[$peer.$shape]=-
    USR[$peer.$shape]=-
    INS[$peer.$shape]=-
  done
done
if [ "$WALL" = 1 ]; then
  read -r -a peers <<<"$PEERS"
  for shape in $SHAPES; do
    # Every peer's server runs for the whole shape (an idle one costs nothing), so a
    # round is just its windows back to back, with no start-up between them.
    declare -A PID=() SPORT=()
    for peer in "${peers[@]}"; do
      read -r PID[$peer] SPORT[$peer] < <(start_server "$peer" "$shape")
    done
    for round in $(seq 1 "$ROUNDS"); do
      # Each round starts with the next peer: no peer always runs first (or right
      # after the same one).
      for i in $(seq 0 $((${#peers[@]} - 1))); do
        peer=${peers[$(((i + round - 1) % ${#peers[@]}))]}
        read -r rps cpu usr < <(window "$peer" "$shape" "${PID[$peer]}" "${SPORT[$peer]}")
        ROUND_RPS[$peer.$shape.$round]=$rps
        ROUND_CPU[$peer.$shape.$round]=$cpu
        ROUND_USR[$peer.$shape.$round]=$usr
        [ -z "${VERBOSE:-}" ] || echo "round $round $shape $peer: $rps req/s, $cpu us/req (user $usr)" >&2
      done
    done
    for peer in "${peers[@]}"; do stop "${PID[$peer]}"; done
    unset PID SPORT
  done
  for peer in $PEERS; do
    for shape in $SHAPES; do
      rs=() cs=() us=()
      for round in $(seq 1 "$ROUNDS"); do
        rs+=("${ROUND_RPS[$peer.$shape.$round]}")
        cs+=("${ROUND_CPU[$peer.$shape.$round]}")
        us+=("${ROUND_USR[$peer.$shape.$round]}")
      done
      RPS[$peer.$shape]=$(median "${rs[@]}" | awk '{printf "%.0f", $1}')
      CPU[$peer.$shape]=$(median "${cs[@]}" | awk '{printf "%.2f", $1}')
      USR[$peer.$shape]=$(median "${us[@]}" | awk '{printf "%.2f", $1}')
    done
  done
fi

for peer in $PEERS; do
  for shape in $SHAPES; do
    if [ "$CALLGRIND" = 1 ]; then
      PORT=$(free_port)
      url=http://127.0.0.1:$PORT/plaintext
      file="$OUT/callgrind.$peer.$shape.out"
      rm -f "$file" "$file".*
      # shellcheck disable=SC2046
      taskset -c 0 $PRIO valgrind --tool=callgrind --callgrind-out-file="$file" \
        $(server_cmd "$peer" 127.0.0.1:$PORT) >"$OUT/$peer.$shape.callgrind.log" 2>&1 &
      pid=$!
      wait_port $PORT 300
      run_wrk "$shape" 2 "$url" >/dev/null
      callgrind_control -z $pid >/dev/null 2>&1
      out=$(run_wrk "$shape" 4 "$url")
      callgrind_control -d $pid >/dev/null 2>&1
      stop $pid
      n=$(echo "$out" | awk '/requests in/ {print $1}')
      dump=$(ls -t "$file".* 2>/dev/null | head -1)
      total=$(awk '/^totals:/ {print $2}' "$dump")
      INS[$peer.$shape]=$(awk -v t="$total" -v n="$n" 'BEGIN {printf "%.0f", t / n}')
    else
      INS[$peer.$shape]=-
    fi
  done
done

ratio() { # A B -> A/B, or - when either is missing
  awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }'
}

# cpu_ratio PEER BASE SHAPE -> CPU per request of PEER over BASE: with ROUNDS > 1, the
# median of the per-round ratios, their quartiles, their range, and how many rounds
# were at or below 0.90 (issue 10's goal).
cpu_ratio() {
  local peer=$1 base=$2 shape=$3 rs=() round
  if [ "$WALL" != 1 ] || [[ " $SHAPES " != *" $shape "* ]]; then
    echo -
    return
  fi
  if [ "$ROUNDS" = 1 ]; then
    ratio "${CPU[$peer.$shape]}" "${CPU[$base.$shape]}"
    return
  fi
  for round in $(seq 1 "$ROUNDS"); do
    rs+=("$(awk -v a="${ROUND_CPU[$peer.$shape.$round]}" -v b="${ROUND_CPU[$base.$shape.$round]}" 'BEGIN {printf "%.3f", a / b}')")
  done
  printf '%s\n' "${rs[@]}" | sort -g | awk -v n="$ROUNDS" '
    function q(p,  i) { i = 1 + p * (n - 1); return v[int(i)] + (i - int(i)) * (v[int(i) + 1] - v[int(i)]) }
    {v[NR] = $1; if ($1 <= 0.9) k++}
    END {printf "%.3f (quartiles %.3f-%.3f, range %.3f-%.3f, %d of %d rounds <= 0.90)", q(0.5), q(0.25), q(0.75), v[1], v[n], k, n}'
}

echo
client="wrk -t1 -c50"
[ "$CLIENT" = load ] && client="ringway load -c 50"
echo "hyper hello, server on CPU 0, $client on CPU 1 (callgrind counts: wrk), ${D}s per load, $ROUNDS round(s), ${PRIO:-default priority} ($(date -u +%F), load average $(cut -d' ' -f1-3 /proc/loadavg))"
echo
cpu_cell() { # PEER SHAPE -> "CPU (user USER)", or - without a wall-clock load
  if [ "${CPU[$1.$2]}" = - ]; then echo -; else echo "${CPU[$1.$2]} (user ${USR[$1.$2]})"; fi
}
echo "| server | c50 req/s | c50 CPU us/req | p16 req/s | p16 CPU us/req | c50 instr/req | p16 instr/req |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for peer in $PEERS; do
  echo "| $peer | ${RPS[$peer.c50]} | $(cpu_cell "$peer" c50) | ${RPS[$peer.p16]} | $(cpu_cell "$peer" p16) | ${INS[$peer.c50]} | ${INS[$peer.p16]} |"
done
for base in tokio-ct tokio-mt1 bench-tokio; do
  [[ " $PEERS " == *" $base "* ]] || continue
  for peer in compat-uring compat-epoll bench-ringway; do
    [[ " $PEERS " == *" $peer "* ]] || continue
    echo "$peer / $base: CPU per request c50 $(cpu_ratio "$peer" "$base" c50)," \
      "p16 $(cpu_ratio "$peer" "$base" p16);" \
      "p16 throughput $(ratio "${RPS[$peer.p16]}" "${RPS[$base.p16]}");" \
      "instructions c50 $(ratio "${INS[$peer.c50]}" "${INS[$base.c50]}"), p16 $(ratio "${INS[$peer.p16]}" "${INS[$base.p16]}")"
  done
done
if [[ " $PEERS " == *" ringway-http "* && " $PEERS " == *" compat-uring "* ]]; then
  echo "compat-uring / ringway-http (the adapter + hyper against ringway's own server):" \
    "CPU per request c50 $(ratio "${CPU[compat-uring.c50]}" "${CPU[ringway-http.c50]}")," \
    "p16 $(ratio "${CPU[compat-uring.p16]}" "${CPU[ringway-http.p16]}");" \
    "instructions c50 $(ratio "${INS[compat-uring.c50]}" "${INS[ringway-http.c50]}"), p16 $(ratio "${INS[compat-uring.p16]}" "${INS[ringway-http.p16]}")"
fi
