#!/usr/bin/env bash
# axum over TLS + HTTP/2, and axum WebSocket echo, on ringway (through ringway-compat)
# against the same apps on tokio (current_thread): issue 25's goals (TLS + h2 at most 0.9x
# tokio's server CPU per request; 64 B WebSocket echo at most 0.8x per message).
#
# Peers (crates/ringway-compat/examples):
#   h2tls: axum_tls (Server::tls, ALPN h2) vs axum_tls_tokio (tokio-rustls + hyper h2);
#          the client opens H2_CONNS TLS connections with H2_STREAMS concurrent streams
#          each, GET /plaintext in a loop.
#   ws64:  axum_ws (ringway_compat::ws) vs axum_ws_tokio (axum's own extractor,
#          axum::serve); WS_CONNS WebSockets, each sending WS_DEPTH binary messages of
#          64 B and waiting for their echoes, in a loop.
# The client is examples/compat_load on ringway, one core; it checks every response.
# Each server is pinned to CPU 0, the client to CPU 1; as root both get nice -15
# (NICE=0 to run as is).
#
# Wall clock (shared machine: read the ratios, not the microseconds): both servers of a
# shape run for the whole shape; ROUNDS rounds of one window per peer, the order rotated
# each round; server CPU per request = the CPU time of the server's threads
# (/proc/PID/task/*/schedstat) over the window / requests the client completed in it.
# Every window starts once the client's connections are up: handshakes are not counted.
# The ratio is the median of the per-round ratios, with quartiles and range.
#
# Counted (do not drift with load): syscalls and context switches per request, from one
# extra window per peer under `perf stat -e raw_syscalls:sys_enter -e context-switches`;
# user-space instructions per request under callgrind (warm-up, `callgrind_control -z`,
# a measured window, `-d`, the dump's total / the client's requests; names uncompressed,
# so `scripts/callgrind-top DUMP --per N` ranks where they go).
#
# Usage: crates/ringway-compat/bench/compare_tls_ws.sh [SECONDS]     (default 3)
#   env: ROUNDS=N (default 7)   SHAPES="h2tls ws64"   PEERS="ringway tokio"
#        CALLGRIND=0 (skip the instruction counts)  SYSCALLS=0 (skip perf)  WALL=0
#        H2_CONNS=4 H2_STREAMS=32 WS_CONNS=50 WS_DEPTH=1   SKIP_BUILD=1   VERBOSE=1
#        WS_READ_BUFFER=BYTES  tungstenite's read buffer on both ws peers (--read-buffer);
#                        unset, each keeps its default: ringway_compat::ws one pool buffer
#                        (4 KiB), axum 128 KiB, which tungstenite zero-fills before
#                        every read (the same buffer on both isolates the runtimes)
#        BACKEND=uring|epoll (ringway's backend, default uring)
# Needs valgrind for the counts and perf for the syscalls (apt-get install valgrind
# linux-perf), or CALLGRIND=0 / SYSCALLS=0.
set -euo pipefail
cd "$(dirname "$0")/../../.."
. crates/ringway-compat/bench/lib.sh
D=${1:-3}
ROUNDS=${ROUNDS:-7}
SHAPES=${SHAPES:-"h2tls ws64"}
PEERS=${PEERS:-"ringway tokio"}
CALLGRIND=${CALLGRIND:-1}
SYSCALLS=${SYSCALLS:-1}
WALL=${WALL:-1}
BACKEND=${BACKEND:-uring}
H2_CONNS=${H2_CONNS:-4}
H2_STREAMS=${H2_STREAMS:-32}
WS_CONNS=${WS_CONNS:-50}
WS_DEPTH=${WS_DEPTH:-1}
WS_READ_BUFFER=${WS_READ_BUFFER:-}
WS_ARGS=""
[ -z "$WS_READ_BUFFER" ] || WS_ARGS="--read-buffer $WS_READ_BUFFER"
OUT=${OUT:-${CARGO_TARGET_DIR:-target}/compat-bench}
E=${CARGO_TARGET_DIR:-target}/release/examples
PRIO=""
if [ "$(id -u)" = 0 ] && [ "${NICE:-1}" != 0 ]; then PRIO="nice -n -15"; fi
mkdir -p "$OUT"

if [ "$CALLGRIND" = 1 ] && ! command -v callgrind_control >/dev/null; then
  echo "compare_tls_ws.sh: 'valgrind' is missing (or run with CALLGRIND=0); install it with: apt-get install valgrind" >&2
  exit 1
fi
if [ "$SYSCALLS" = 1 ] && ! command -v perf >/dev/null; then
  echo "compare_tls_ws.sh: 'perf' is missing (or run with SYSCALLS=0); install it with: apt-get install linux-perf" >&2
  exit 1
fi
if [ -z "${SKIP_BUILD:-}" ]; then
  cargo build --release -q -p ringway-compat --example axum_tls --example axum_tls_tokio \
    --example axum_ws --example axum_ws_tokio --example compat_load
fi


# server_cmd PEER SHAPE ADDR CERT -> the server's command line
server_cmd() {
  case "$1.$2" in
    ringway.h2tls) echo "$E/axum_tls --threads 1 --backend $BACKEND --bind $3 --cert-out $4" ;;
    tokio.h2tls) echo "$E/axum_tls_tokio --bind $3 --cert-out $4" ;;
    ringway.ws64) echo "$E/axum_ws --threads 1 --backend $BACKEND --bind $3 $WS_ARGS" ;;
    tokio.ws64) echo "$E/axum_ws_tokio --bind $3 $WS_ARGS" ;;
    *) echo "compare_tls_ws.sh: unknown peer or shape $1 $2" >&2; exit 2 ;;
  esac
}

# client SHAPE PORT CERT SECONDS [ARGS...] -> compat_load's output
client() {
  local shape=$1 port=$2 cert=$3 secs=$4
  shift 4
  case "$shape" in
    h2tls) taskset -c 1 $PRIO "$E/compat_load" --mode h2 --addr "127.0.0.1:$port" --ca "$cert" \
      --connections "$H2_CONNS" --streams "$H2_STREAMS" --seconds "$secs" "$@" ;;
    ws64) taskset -c 1 $PRIO "$E/compat_load" --mode ws --addr "127.0.0.1:$port" \
      --connections "$WS_CONNS" --depth "$WS_DEPTH" --size 64 --seconds "$secs" "$@" ;;
  esac
}

# window SHAPE PORT CERT SECONDS HOOK -> the client's output. The client connects first
# (TLS and WebSocket handshakes), then HOOK runs (eval'd: a CPU reading, perf, callgrind
# -z), then the measured SECONDS start: no handshake is counted. Waits for everything
# HOOK started in the background too.
window() {
  local shape=$1 port=$2 cert=$3 secs=$4 hook=$5 tag
  tag="$OUT/window.$BASHPID"
  rm -f "$tag.go" "$tag.out"
  client "$shape" "$port" "$cert" "$secs" --start-after "$tag.go" >"$tag.out" &
  for _ in $(seq 1 6000); do
    grep -q '^connected' "$tag.out" 2>/dev/null && break
    sleep 0.01
  done
  eval "$hook"
  touch "$tag.go"
  wait
  cat "$tag.out"
  rm -f "$tag.go" "$tag.out"
}

requests() { echo "$1" | awk '/requests in/ {print $1}'; }
check_errors() { # OUTPUT WHAT
  if ! echo "$1" | grep -q "errors: 0"; then
    echo "compare_tls_ws.sh: $2: the client saw errors:" >&2
    echo "$1" >&2
  fi
}

# start PEER SHAPE [WRAPPER...] -> "PID PORT CERT", the server pinned to CPU 0
start() {
  local peer=$1 shape=$2 port cert pid
  shift 2
  port=$(free_port)
  cert="$OUT/$peer.$shape.$port.pem"
  # shellcheck disable=SC2046
  taskset -c 0 $PRIO "$@" $(server_cmd "$peer" "$shape" 127.0.0.1:"$port" "$cert") >"$OUT/$peer.$shape.log" 2>&1 &
  pid=$!
  wait_port "$port"
  echo "$pid $port $cert"
}

median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f", (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
spread() { # numbers... -> "median (quartiles a-b, range c-d, n rounds)"
  printf '%s\n' "$@" | sort -g | awk '
    function q(p,  i) { i = 1 + p * (NR - 1); return v[int(i)] + (i - int(i)) * (v[int(i) + 1] - v[int(i)]) }
    {v[NR] = $1}
    END {printf "%.3f (quartiles %.3f-%.3f, range %.3f-%.3f, %d rounds)", q(0.5), q(0.25), q(0.75), v[1], v[NR], NR}'
}

declare -A CPU RPS SYS CS INS
read -r -a peers <<<"$PEERS"
for shape in $SHAPES; do
  if [ "$WALL" = 1 ] || [ "$SYSCALLS" = 1 ]; then
    declare -A PID=() PORT=() CERT=()
    for peer in "${peers[@]}"; do
      read -r PID[$peer] PORT[$peer] CERT[$peer] < <(start "$peer" "$shape")
      client "$shape" "${PORT[$peer]}" "${CERT[$peer]}" 1 >/dev/null # warm-up
    done
    if [ "$WALL" = 1 ]; then
      for round in $(seq 1 "$ROUNDS"); do
        for i in $(seq 0 $((${#peers[@]} - 1))); do
          peer=${peers[$(((i + round - 1) % ${#peers[@]}))]}
          out=$(window "$shape" "${PORT[$peer]}" "${CERT[$peer]}" "$D" "cpu_ns ${PID[$peer]} >$OUT/t0")
          t0=$(cat "$OUT/t0")
          t1=$(cpu_ns "${PID[$peer]}")
          check_errors "$out" "$peer $shape"
          n=$(requests "$out")
          CPU[$peer.$shape.$round]=$(awk -v t=$((t1 - t0)) -v n="$n" 'BEGIN {printf "%.3f", t / 1e3 / n}')
          RPS[$peer.$shape.$round]=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
          [ -z "${VERBOSE:-}" ] || echo "round $round $shape $peer: ${RPS[$peer.$shape.$round]}/s, ${CPU[$peer.$shape.$round]} us/req" >&2
        done
      done
    fi
    if [ "$SYSCALLS" = 1 ]; then
      for peer in "${peers[@]}"; do
        out=$(window "$shape" "${PORT[$peer]}" "${CERT[$peer]}" "$D" \
          "perf stat -e raw_syscalls:sys_enter -e context-switches -x, -o $OUT/perf.$peer.$shape -p ${PID[$peer]} -- sleep $D 2>/dev/null &")
        n=$(requests "$out")
        SYS[$peer.$shape]=$(awk -F, -v n="$n" '/raw_syscalls:sys_enter/ {printf "%.3f", $1 / n}' "$OUT/perf.$peer.$shape")
        CS[$peer.$shape]=$(awk -F, -v n="$n" '/context-switches/ {printf "%.4f", $1 / n}' "$OUT/perf.$peer.$shape")
      done
    fi
    for peer in "${peers[@]}"; do stop "${PID[$peer]}"; done
    unset PID PORT CERT
  fi
  if [ "$CALLGRIND" = 1 ]; then
    for peer in "${peers[@]}"; do
      file="$OUT/callgrind.$peer.$shape.out"
      rm -f "$file" "$file".[0-9]*
      read -r pid port cert < <(start "$peer" "$shape" valgrind --tool=callgrind --compress-strings=no --compress-pos=no --callgrind-out-file="$file")
      client "$shape" "$port" "$cert" 3 >/dev/null
      out=$(window "$shape" "$port" "$cert" 4 "callgrind_control -z $pid >/dev/null 2>&1")
      callgrind_control -d "$pid" >/dev/null 2>&1
      stop "$pid"
      check_errors "$out" "$peer $shape (callgrind)"
      n=$(requests "$out")
      echo "$n" >"$file.requests" # for scripts/callgrind-top DUMP --per N
      dump=$(ls -t "$file".[0-9]* 2>/dev/null | head -1)
      total=$(awk '/^totals:/ {print $2}' "$dump")
      INS[$peer.$shape]=$(awk -v t="$total" -v n="$n" 'BEGIN {printf "%.0f", t / n}')
    done
  fi
done

echo
echo "axum over TLS + h2 (h2tls: $H2_CONNS connections x $H2_STREAMS streams) and WebSocket echo (ws64: $WS_CONNS connections, depth $WS_DEPTH, 64 B, read buffer ${WS_READ_BUFFER:-each default});"
echo "server on CPU 0 (ringway: $BACKEND), compat_load on CPU 1, ${D}s windows, $ROUNDS rounds, ${PRIO:-default priority} ($(date -u +%F), load average $(cut -d' ' -f1-3 /proc/loadavg))"
echo
echo "| shape | peer | req/s (median) | server CPU us/req (median) | syscalls/req | context switches/req | instr/req |"
echo "|---|---|---:|---:|---:|---:|---:|"
for shape in $SHAPES; do
  for peer in "${peers[@]}"; do
    rps=- cpu=-
    if [ "$WALL" = 1 ]; then
      rs=() cs=()
      for round in $(seq 1 "$ROUNDS"); do rs+=("${RPS[$peer.$shape.$round]}"); cs+=("${CPU[$peer.$shape.$round]}"); done
      rps=$(median "${rs[@]}" | awk '{printf "%.0f", $1}')
      cpu=$(median "${cs[@]}")
    fi
    echo "| $shape | $peer | $rps | $cpu | ${SYS[$peer.$shape]:--} | ${CS[$peer.$shape]:--} | ${INS[$peer.$shape]:--} |"
  done
done
if [[ " $PEERS " == *" ringway "* && " $PEERS " == *" tokio "* ]]; then
  echo
  for shape in $SHAPES; do
    line="ringway / tokio, $shape:"
    if [ "$WALL" = 1 ]; then
      rs=()
      for round in $(seq 1 "$ROUNDS"); do
        rs+=("$(awk -v a="${CPU[ringway.$shape.$round]}" -v b="${CPU[tokio.$shape.$round]}" 'BEGIN {printf "%.3f", a / b}')")
      done
      line="$line CPU per request $(spread "${rs[@]}");"
    fi
    if [ "$CALLGRIND" = 1 ]; then
      line="$line instructions $(awk -v a="${INS[ringway.$shape]}" -v b="${INS[tokio.$shape]}" 'BEGIN {printf "%.3f", a / b}')"
    fi
    echo "$line"
  done
fi
