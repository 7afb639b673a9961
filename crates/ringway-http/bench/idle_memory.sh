#!/usr/bin/env bash
# RSS per idle keep-alive connection of `ringway serve --hello`: start the server (one
# core, access log off), warm it with a first wave of connections that come and go, read
# its RSS, open CONNS connections that each make one request and stay open, read its RSS
# again; the difference divided by CONNS is the figure (issue 7's goal: at most 2 KiB).
# Both backends. Kernel socket memory is not in RSS: this is the server process's own.
#
# Usage: crates/ringway-http/bench/idle_memory.sh [CONNS]    (default 10000)
#   env: SKIP_BUILD=1 (use target/release/ringway as built), BACKENDS="uring epoll"
set -euo pipefail
cd "$(dirname "$0")/../../.."
N=${1:-10000}
B=crates/ringway-http/bench
[ -n "${SKIP_BUILD:-}" ] || cargo build --release -q -p ringway-cli
# Server and clients each need N descriptors and some.
want=$((N + 1000))
hard=$(ulimit -Hn)
if [ "$hard" != unlimited ] && [ "$hard" -lt "$want" ]; then
  echo "idle_memory.sh: $N connections need 'ulimit -n $want' (the hard limit is $hard)" >&2
  exit 1
fi
ulimit -n "$want"

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

for backend in ${BACKENDS:-uring epoll}; do
  fifo=$(mktemp -u)
  mkfifo "$fifo"
  ./target/release/ringway serve --hello --threads 1 --no-access-log --backend "$backend" \
    --bind 127.0.0.1:0 >"$fifo" 2>/dev/null &
  pid=$!
  read -r banner <"$fifo"
  rm -f "$fifo"
  port=$(echo "$banner" | sed -E 's#.*http://127\.0\.0\.1:([0-9]+).*#\1#')
  # Warm-up: pools, slabs and the allocator's arenas reach their working size.
  coproc WARM { python3 "$B/idle_clients.py" 127.0.0.1 "$port" 1000; }
  read -r _ <&"${WARM[0]}"
  echo >&"${WARM[1]}"
  read -r _ <&"${WARM[0]}"
  wait "$WARM_PID" 2>/dev/null || true
  sleep 1
  before=$(rss_kib "$pid")
  coproc IDLE { python3 "$B/idle_clients.py" 127.0.0.1 "$port" "$N"; }
  read -r ready <&"${IDLE[0]}"
  sleep 1
  after=$(rss_kib "$pid")
  echo >&"${IDLE[1]}"
  read -r _ <&"${IDLE[0]}"
  wait "$IDLE_PID" 2>/dev/null || true
  kill -INT "$pid"
  wait "$pid" 2>/dev/null || true
  awk -v b="$before" -v a="$after" -v n="$N" -v be="$backend" -v r="$ready" \
    'BEGIN { printf "%-6s %s idle connections: RSS %d -> %d KiB, %.2f KiB per connection\n", be, substr(r, 7), b, a, (a - b) / n }'
done
