#!/usr/bin/env bash
# Counted cost per request of axum over TLS + HTTP/2, ringway (axum_tls) against tokio
# (axum_tls_tokio), with h2load (nghttp2) as the client: figures that do not drift with
# the machine's load.
#
# Fixed request counts, and the difference of two runs: each server gets a warm-up run,
# then a run of N1 requests and a run of N2 requests on fresh connections (same
# connections x streams); the cost per request is (cost(N2) - cost(N1)) / (N2 - N1), so
# the handshakes, connection set-up and tear-down cancel out exactly.
#   - instructions: the server under callgrind (`callgrind_control -z` before a run, `-d`
#     after it); with RANK=1 the two dumps are diffed by function and by crate
#     (bench/callgrind_diff.py), per request;
#   - syscalls: the server alone, `perf stat -e raw_syscalls:sys_enter -p PID` around
#     each run.
#
# Usage: crates/ringway-compat/bench/h2load_counts.sh
#   env: CONNS=4 STREAMS=32 (h2load -c, -m)  N1=2000 N2=12000  PEERS="ringway tokio"
#        CALLGRIND=1 SYSCALLS=1 RANK=0 TOP=40  BACKEND=uring  SKIP_BUILD=1
#        BIN=DIR (where the examples are; default $CARGO_TARGET_DIR/release/examples)
# Needs h2load (apt-get install nghttp2-client), valgrind and perf.
set -euo pipefail
cd "$(dirname "$0")/../../.."
STOP_GRACE=${STOP_GRACE:-0.5}
. crates/ringway-compat/bench/lib.sh
CONNS=${CONNS:-4}
STREAMS=${STREAMS:-32}
N1=${N1:-2000}
N2=${N2:-12000}
PEERS=${PEERS:-"ringway tokio"}
CALLGRIND=${CALLGRIND:-1}
SYSCALLS=${SYSCALLS:-1}
RANK=${RANK:-0}
TOP=${TOP:-40}
BACKEND=${BACKEND:-uring}
OUT=${OUT:-${CARGO_TARGET_DIR:-target}/compat-bench/h2load}
E=${BIN:-${CARGO_TARGET_DIR:-target}/release/examples}
mkdir -p "$OUT"
for tool in h2load valgrind perf; do
  if ! command -v $tool >/dev/null; then
    echo "h2load_counts.sh: '$tool' is missing; install it with: apt-get install nghttp2-client valgrind linux-perf" >&2
    exit 1
  fi
done
if [ -z "${SKIP_BUILD:-}" ]; then
  # GNU ld, so that valgrind finds the function names (see scripts/instructions).
  RUSTFLAGS="-C linker-features=-lld" cargo build --release -q -p ringway-compat \
    --example axum_tls --example axum_tls_tokio
fi

server_cmd() {
  case "$1" in
    ringway) echo "$E/axum_tls --threads 1 --backend $BACKEND --bind $2" ;;
    tokio) echo "$E/axum_tls_tokio --bind $2" ;;
    *) echo "h2load_counts.sh: unknown peer $1" >&2; exit 2 ;;
  esac
}
# load PORT N: h2load's run of N requests; fails unless every one succeeded.
load() {
  local out
  out=$(taskset -c 1 h2load -n "$2" -c "$CONNS" -m "$STREAMS" "https://127.0.0.1:$1/plaintext" 2>&1)
  if ! echo "$out" | grep -q "requests: $2 total, $2 started, $2 done, $2 succeeded"; then
    echo "h2load_counts.sh: h2load did not complete $2 requests:" >&2
    echo "$out" >&2
    exit 1
  fi
}

declare -A INS SYS
for peer in $PEERS; do
  if [ "$CALLGRIND" = 1 ]; then
    port=$(free_port)
    dump="$OUT/callgrind.$peer.c$CONNS.m$STREAMS"
    rm -f "$dump" "$dump".*
    # shellcheck disable=SC2046
    taskset -c 0 valgrind --tool=callgrind --compress-strings=no --compress-pos=no \
      --callgrind-out-file="$dump" $(server_cmd "$peer" 127.0.0.1:"$port") >"$OUT/$peer.log" 2>&1 &
    pid=$!
    wait_port "$port"
    load "$port" 1000 # warm-up
    for n in "$N1" "$N2"; do
      callgrind_control -z "$pid" >/dev/null
      load "$port" "$n"
      callgrind_control -d "$pid" >/dev/null
      last=$(ls -t "$dump".[0-9]* | head -1)
      mv "$last" "$dump.n$n"
    done
    stop "$pid"
    t1=$(awk '/^totals:/ {print $2}' "$dump.n$N1")
    t2=$(awk '/^totals:/ {print $2}' "$dump.n$N2")
    INS[$peer]=$(awk -v a="$t1" -v b="$t2" -v n=$((N2 - N1)) 'BEGIN {printf "%.0f", (b - a) / n}')
    if [ "$RANK" = 1 ]; then
      echo "== $peer, ${CONNS}x$STREAMS: instructions per request by function, then by crate"
      python3 crates/ringway-compat/bench/callgrind_diff.py "$dump.n$N1" "$dump.n$N2" \
        --per $((N2 - N1)) --top "$TOP"
    fi
  fi
  if [ "$SYSCALLS" = 1 ]; then
    port=$(free_port)
    # shellcheck disable=SC2046
    taskset -c 0 $(server_cmd "$peer" 127.0.0.1:"$port") >"$OUT/$peer.log" 2>&1 &
    pid=$!
    wait_port "$port"
    load "$port" 5000 # warm-up
    declare -A S=()
    for n in "$N1" "$N2"; do
      perf stat -e raw_syscalls:sys_enter -x, -o "$OUT/perf.$peer.$n" -p "$pid" &
      perf_pid=$!
      sleep 0.5
      load "$port" "$n"
      kill -INT "$perf_pid"
      wait "$perf_pid" || true
      S[$n]=$(awk -F, '/raw_syscalls:sys_enter/ {print $1}' "$OUT/perf.$peer.$n")
    done
    stop "$pid"
    SYS[$peer]=$(awk -v a="${S[$N1]}" -v b="${S[$N2]}" -v n=$((N2 - N1)) 'BEGIN {printf "%.3f", (b - a) / n}')
    unset S
  fi
done

echo
echo "axum over TLS + h2, h2load -c $CONNS -m $STREAMS, per request = (run of $N2 - run of $N1) / $((N2 - N1)) (ringway: $BACKEND)"
echo "| peer | instructions/request | syscalls/request |"
echo "|---|---:|---:|"
for peer in $PEERS; do
  echo "| $peer | ${INS[$peer]:--} | ${SYS[$peer]:--} |"
done
if [[ " $PEERS " == *" ringway "* && " $PEERS " == *" tokio "* && "$CALLGRIND" = 1 ]]; then
  awk -v a="${INS[ringway]}" -v b="${INS[tokio]}" 'BEGIN {printf "instructions, ringway / tokio: %.3f\n", a / b}'
fi
