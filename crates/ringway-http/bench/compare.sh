#!/usr/bin/env bash
# ringway serve --hello vs nginx (1 worker) on /plaintext: server pinned to CPU 0, wrk
# pinned to CPU 1. Prints req/s (pipelined x16, c50), server CPU us/request (c50, not
# pipelined; utime+stime from /proc/PID/stat over the run), and 1-connection latency.
# Usage: crates/ringway-http/bench/compare.sh [seconds]   (needs wrk and nginx)
set -euo pipefail
cd "$(dirname "$0")/../../.."
D=${1:-5}
B=crates/ringway-http/bench
[ -n "${SKIP_BUILD:-}" ] || cargo build --release -q -p ringway-cli
HZ=$(getconf CLK_TCK)

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

measure() { # NAME PID URL
  local name=$1 pid=$2 url=$3 t0 t1 out reqs
  taskset -c 1 wrk -t1 -c50 -d1s "$url" >/dev/null   # warm-up
  t0=$(cpu_ticks "$pid")
  out=$(taskset -c 1 wrk -t1 -c50 -d"${D}s" -s $B/pipeline.lua "$url")
  t1=$(cpu_ticks "$pid")
  reqs=$(echo "$out" | awk '/requests in/ {print $1}')
  echo "$name pipelined x16 c50: $(echo "$out" | awk '/Requests\/sec/ {print $2}') req/s," \
    "server CPU $(awk -v t=$((t1 - t0)) -v hz="$HZ" -v r="$reqs" 'BEGIN {printf "%.2f", t / hz * 1e6 / r}') us/request"
  t0=$(cpu_ticks "$pid")
  out=$(taskset -c 1 wrk -t1 -c50 -d"${D}s" "$url")
  t1=$(cpu_ticks "$pid")
  reqs=$(echo "$out" | awk '/requests in/ {print $1}')
  echo "$name c50: $(echo "$out" | awk '/Requests\/sec/ {print $2}') req/s," \
    "server CPU $(awk -v t=$((t1 - t0)) -v hz="$HZ" -v r="$reqs" 'BEGIN {printf "%.2f", t / hz * 1e6 / r}') us/request"
  out=$(taskset -c 1 wrk -t1 -c1 -d"${D}s" --latency "$url")
  echo "$name c1: p50 $(echo "$out" | awk '$1 == "50%" {print $2}') p99 $(echo "$out" | awk '$1 == "99%" {print $2}')"
}

taskset -c 0 ./target/release/ringway serve --hello --threads 1 --no-access-log --bind 127.0.0.1:8080 >/tmp/ringway-bench.out 2>&1 &
RPID=$!
sleep 0.5
measure ringway $RPID http://127.0.0.1:8080/plaintext
kill -TERM $RPID; wait $RPID || true

if command -v nginx >/dev/null; then
  taskset -c 0 nginx -c "$PWD/$B/nginx.conf" &
  sleep 0.5
  NMASTER=$(cat /tmp/ringway-bench-nginx.pid)
  NPID=$(pgrep -P "$NMASTER" | head -1)   # the one worker does the work
  measure nginx "$NPID" http://127.0.0.1:8081/plaintext
  kill -QUIT "$NMASTER"; wait || true
fi

# TLS keep-alive: server CPU per request, same ECDSA P-256 certificate for both.
[ -f /tmp/ringway-bench-cert.pem ] || openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
  -nodes -days 30 -subj /CN=localhost -keyout /tmp/ringway-bench-key.pem -out /tmp/ringway-bench-cert.pem 2>/dev/null

tls_measure() { # NAME PID URL
  local name=$1 pid=$2 url=$3 t0 t1 out reqs
  taskset -c 1 wrk -t1 -c50 -d1s "$url" >/dev/null
  t0=$(cpu_ticks "$pid")
  out=$(taskset -c 1 wrk -t1 -c50 -d"${D}s" "$url")
  t1=$(cpu_ticks "$pid")
  reqs=$(echo "$out" | awk '/requests in/ {print $1}')
  echo "$name TLS c50: $(echo "$out" | awk '/Requests\/sec/ {print $2}') req/s," \
    "server CPU $(awk -v t=$((t1 - t0)) -v hz="$HZ" -v r="$reqs" 'BEGIN {printf "%.2f", t / hz * 1e6 / r}') us/request"
}

taskset -c 0 ./target/release/ringway serve --hello --threads 1 --no-access-log --bind 127.0.0.1:8443 \
  --tls-cert /tmp/ringway-bench-cert.pem --tls-key /tmp/ringway-bench-key.pem >/tmp/ringway-bench-tls.out 2>&1 &
RPID=$!
sleep 0.5
tls_measure ringway $RPID https://127.0.0.1:8443/plaintext
kill -TERM $RPID; wait $RPID || true
if command -v nginx >/dev/null; then
  taskset -c 0 nginx -c "$PWD/$B/nginx-tls.conf" &
  sleep 0.5
  NMASTER=$(cat /tmp/ringway-bench-nginx-tls.pid)
  NPID=$(pgrep -P "$NMASTER" | head -1)
  tls_measure nginx "$NPID" https://127.0.0.1:8444/plaintext
  kill -QUIT "$NMASTER"; wait || true
fi
