#!/usr/bin/env bash
# Wall-clock ratios of `ringway serve --hello` against peers, every server pinned to CPU 0
# and wrk to CPU 1, /plaintext, rounds interleaved, one median per ratio:
#
#  1. against the HTTP floor (ringway-bench's http-floor, straight on io-uring), the
#     goals of issue 7:
#       c50 and c1000, one request at a time: server CPU per request, ringway / floor
#         (goal: at most 1.05);
#       pipelined x16 at c50: req/s, ringway / floor (goal: at least 0.95);
#       the access log's cost: pipelined x16 req/s with the log on (stdout to
#         /dev/null, as a service manager's null sink; LOG_SINK=file writes a file
#         instead) / with it off (goal: at least 0.95).
#  2. against nginx (1 worker): req/s and CPU per request, pipelined and not, and TLS.
#
# Server CPU is utime+stime of the whole process from /proc/PID/stat over the window
# (io_uring's kernel work is accounted to it; with the log on, the log thread too).
#
# Usage: crates/ringway-http/bench/compare.sh [SECONDS] [ROUNDS]      (defaults 5, 3)
#   env: SKIP_BUILD=1             use the binaries already built
#        FLOOR=path/to/http-floor (default target/release/http-floor, built if this
#                                  workspace has it)
#        ONLY=floor|nginx          one part only
# Needs wrk (apt-get install wrk); nginx for part 2 (apt-get install nginx-light).
set -euo pipefail
cd "$(dirname "$0")/../../.."
D=${1:-5}
ROUNDS=${2:-3}
B=crates/ringway-http/bench
FLOOR=${FLOOR:-target/release/http-floor}
command -v wrk >/dev/null || { echo "compare.sh: wrk is missing: apt-get install wrk" >&2; exit 1; }
if [ -z "${SKIP_BUILD:-}" ]; then
  cargo build --release -q -p ringway-cli
  if [ "$FLOOR" = target/release/http-floor ] && grep -q http-floor crates/ringway-bench/Cargo.toml 2>/dev/null \
    || [ -f crates/ringway-bench/src/bin/http-floor.rs ]; then
    cargo build --release -q -p ringway-bench --bin http-floor
  fi
fi
HZ=$(getconf CLK_TCK)
# A port the kernel says is free (asked for each server).
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# 1000 connections need descriptors.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

wait_port() { # PORT
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.05
  done
  echo "compare.sh: nothing listens on port $1" >&2
  return 1
}

# run_wrk PID CONNS PIPELINE(0|1) URL -> "req/s cpu_us_per_request"
run_wrk() {
  local pid=$1 conns=$2 pipe=$3 url=$4 t0 t1 out reqs rps script=()
  [ "$pipe" = 1 ] && script=(-s "$B/pipeline.lua")
  taskset -c 1 wrk -t1 -c"$conns" -d1s "${script[@]}" "$url" >/dev/null   # warm-up
  t0=$(cpu_ticks "$pid")
  out=$(taskset -c 1 wrk -t1 -c"$conns" -d"${D}s" "${script[@]}" "$url")
  t1=$(cpu_ticks "$pid")
  reqs=$(echo "$out" | awk '/requests in/ {print $1}')
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  awk -v t=$((t1 - t0)) -v hz="$HZ" -v r="$reqs" -v rps="$rps" \
    'BEGIN { printf "%s %.3f\n", rps, t / hz * 1e6 / r }'
}

# start NAME -> starts a server on a free $PORT pinned to CPU 0, sets SPID
start() {
  PORT=$(free_port)
  case "$1" in
    floor) taskset -c 0 "$FLOOR" --bind "127.0.0.1:$PORT" >/dev/null 2>&1 & ;;
    ringway) taskset -c 0 ./target/release/ringway serve --hello --threads 1 --no-access-log \
      --bind "127.0.0.1:$PORT" >/dev/null 2>&1 & ;;
    ringway-log)
      if [ "${LOG_SINK:-null}" = file ]; then
        taskset -c 0 ./target/release/ringway serve --hello --threads 1 \
          --bind "127.0.0.1:$PORT" >"$(mktemp /tmp/ringway-access-XXXX.log)" 2>/dev/null &
      else
        taskset -c 0 ./target/release/ringway serve --hello --threads 1 \
          --bind "127.0.0.1:$PORT" >/dev/null 2>&1 &
      fi ;;
  esac
  SPID=$!
  wait_port "$PORT"
}

# stop: SIGINT (ringway drains), SIGKILL after 3 s (a server that ignores SIGINT).
stop() {
  kill -INT "$SPID" 2>/dev/null || true
  for _ in $(seq 1 30); do
    kill -0 "$SPID" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$SPID" 2>/dev/null || true
  wait "$SPID" 2>/dev/null || true
}

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

floor_part() {
  if [ ! -x "$FLOOR" ]; then
    echo "compare.sh: no HTTP floor at $FLOOR (it comes with ringway-bench's http-floor);" \
      "set FLOOR=path/to/http-floor. Skipping the floor ratios." >&2
    return 0
  fi
  local r c50 c1000 p16 log out
  local -a R_C50=() R_C1000=() R_P16=() R_LOG=() R_LOGCPU=()
  echo "== ringway serve --hello vs the HTTP floor ($ROUNDS rounds of ${D}s, server on CPU 0, wrk on CPU 1)"
  printf '%-6s %-12s %10s %14s\n' round server req/s "CPU us/req"
  for r in $(seq 1 "$ROUNDS"); do
    declare -A V=()
    # A fresh server for every measurement: a window must not inherit the previous
    # one's connections (1000 of them closing at the start of the next window cost the
    # server work that the peer measured first would not pay).
    for server in floor ringway ringway-log; do
      for shape in c50 c1000 p16; do
        [ "$server" = ringway-log ] && [ "$shape" != p16 ] && continue
        start "$server"
        url="http://127.0.0.1:$PORT/plaintext"
        case $shape in
          c50) out=$(run_wrk "$SPID" 50 0 "$url") ;;
          c1000) out=$(run_wrk "$SPID" 1000 0 "$url") ;;
          p16) out=$(run_wrk "$SPID" 50 1 "$url") ;;
        esac
        V[$server.$shape]=$out
        printf '%-6s %-12s %10s %14s   %s\n' "$r" "$server" $out "$shape"
        stop
      done
    done
    R_C50+=("$(awk -v a="${V[ringway.c50]#* }" -v b="${V[floor.c50]#* }" 'BEGIN { print a / b }')")
    R_C1000+=("$(awk -v a="${V[ringway.c1000]#* }" -v b="${V[floor.c1000]#* }" 'BEGIN { print a / b }')")
    R_P16+=("$(awk -v a="${V[ringway.p16]% *}" -v b="${V[floor.p16]% *}" 'BEGIN { print a / b }')")
    R_LOG+=("$(awk -v a="${V[ringway-log.p16]% *}" -v b="${V[ringway.p16]% *}" 'BEGIN { print a / b }')")
    R_LOGCPU+=("$(awk -v a="${V[ringway-log.p16]#* }" -v b="${V[ringway.p16]#* }" 'BEGIN { print a / b }')")
    unset V
  done
  echo "ratios (median of $ROUNDS rounds; per round in brackets):"
  echo "  c50   server CPU per request, ringway / floor:  $(printf '%s\n' "${R_C50[@]}" | median)  [${R_C50[*]}]   goal <= 1.05"
  echo "  c1000 server CPU per request, ringway / floor:  $(printf '%s\n' "${R_C1000[@]}" | median)  [${R_C1000[*]}]   goal <= 1.05"
  echo "  p16   req/s, ringway / floor:                   $(printf '%s\n' "${R_P16[@]}" | median)  [${R_P16[*]}]   goal >= 0.95"
  echo "  p16   req/s, access log on / off (${LOG_SINK:-null}):      $(printf '%s\n' "${R_LOG[@]}" | median)  [${R_LOG[*]}]   goal >= 0.95"
  echo "  p16   server CPU per request (with the log thread), log on / off: $(printf '%s\n' "${R_LOGCPU[@]}" | median)  [${R_LOGCPU[*]}]"
  echo "  (pipelined req/s is the client's and the batching's as much as the server's: read the CPU ratios beside it)"
}

nginx_part() {
  if ! command -v nginx >/dev/null; then
    echo "compare.sh: nginx is missing (apt-get install nginx-light): skipping the nginx part" >&2
    return 0
  fi
  echo "== ringway serve --hello vs nginx (1 worker), ${D}s each"
  start ringway
  echo "ringway c50 $(run_wrk "$SPID" 50 0 "http://127.0.0.1:$PORT/plaintext") (req/s, CPU us/req)"
  echo "ringway p16 $(run_wrk "$SPID" 50 1 "http://127.0.0.1:$PORT/plaintext")"
  stop
  taskset -c 0 nginx -c "$PWD/$B/nginx.conf" &
  sleep 0.5
  local master worker
  master=$(cat /tmp/ringway-bench-nginx.pid)
  worker=$(pgrep -P "$master" | head -1)   # the one worker does the work
  echo "nginx   c50 $(run_wrk "$worker" 50 0 http://127.0.0.1:8081/plaintext)"
  echo "nginx   p16 $(run_wrk "$worker" 50 1 http://127.0.0.1:8081/plaintext)"
  kill -QUIT "$master"; wait || true

  # TLS keep-alive: server CPU per request, same ECDSA P-256 certificate for both.
  [ -f /tmp/ringway-bench-cert.pem ] || openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
    -nodes -days 30 -subj /CN=localhost -keyout /tmp/ringway-bench-key.pem -out /tmp/ringway-bench-cert.pem 2>/dev/null
  PORT=$(free_port)
  taskset -c 0 ./target/release/ringway serve --hello --threads 1 --no-access-log --bind "127.0.0.1:$PORT" \
    --tls-cert /tmp/ringway-bench-cert.pem --tls-key /tmp/ringway-bench-key.pem >/dev/null 2>&1 &
  SPID=$!
  wait_port "$PORT"
  echo "ringway TLS c50 $(run_wrk "$SPID" 50 0 "https://127.0.0.1:$PORT/plaintext")"
  stop
  taskset -c 0 nginx -c "$PWD/$B/nginx-tls.conf" &
  sleep 0.5
  master=$(cat /tmp/ringway-bench-nginx-tls.pid)
  worker=$(pgrep -P "$master" | head -1)
  echo "nginx   TLS c50 $(run_wrk "$worker" 50 0 https://127.0.0.1:8444/plaintext)"
  kill -QUIT "$master"; wait || true
}

case "${ONLY:-all}" in
  floor) floor_part ;;
  nginx) nginx_part ;;
  *) floor_part; nginx_part ;;
esac
