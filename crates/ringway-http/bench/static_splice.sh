#!/usr/bin/env bash
# Static files with splice (`--splice-min`) vs without (`--no-splice`), same binary: `ringway serve
# --static` on one core pinned to CPU 0, wrk pinned to CPU 1 fetching one file over and
# over. Prints, per file size and mode, the transfer rate and the server's CPU seconds
# per GiB sent (utime+stime from /proc/PID/stat over the run).
# Usage: crates/ringway-http/bench/static_splice.sh [seconds]
#   SIZES="65536 262144 1048576 16777216"  file sizes in bytes
#   BACKENDS="uring epoll"                 backends to run
#   CONNS=4                                wrk connections
#   SPLICE_MIN=262144                      splice threshold of the splice runs
set -euo pipefail
cd "$(dirname "$0")/../../.."
D=${1:-5}
SIZES=${SIZES:-"65536 262144 1048576 16777216"}
BACKENDS=${BACKENDS:-"uring epoll"}
CONNS=${CONNS:-4}
SPLICE_MIN=${SPLICE_MIN:-262144}
PORT=8090
[ -n "${SKIP_BUILD:-}" ] || cargo build --release -q -p ringway-cli
HZ=$(getconf CLK_TCK)
DIR=$(mktemp -d)
SERVER=
cleanup() {
  [ -z "$SERVER" ] || kill "$SERVER" 2>/dev/null || true
  rm -rf "$DIR"
}
trap cleanup EXIT
for s in $SIZES; do head -c "$s" /dev/urandom >"$DIR/f$s"; done

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

for backend in $BACKENDS; do
  for mode in splice no-splice; do
    flag="--splice-min $SPLICE_MIN"
    [ "$mode" = splice ] || flag=--no-splice
    taskset -c 0 ./target/release/ringway serve --static "$DIR" --threads 1 --backend "$backend" \
      --no-access-log --bind "127.0.0.1:$PORT" $flag >/tmp/ringway-splice-bench.out 2>&1 &
    SERVER=$!
    for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$PORT/f${SIZES%% *}" && break; sleep 0.1; done
    for s in $SIZES; do
      url="http://127.0.0.1:$PORT/f$s"
      taskset -c 1 wrk -t1 -c"$CONNS" -d1s "$url" >/dev/null # warm-up (page cache, pipes)
      t0=$(cpu_ticks "$SERVER")
      out=$(taskset -c 1 wrk -t1 -c"$CONNS" -d"${D}s" "$url")
      t1=$(cpu_ticks "$SERVER")
      reqs=$(echo "$out" | awk '/requests in/ {print $1}')
      awk -v b="$backend" -v m="$mode" -v s="$s" -v r="$reqs" -v t=$((t1 - t0)) -v hz="$HZ" -v d="$D" 'BEGIN {
        gib = r * s / 2^30
        printf "%-5s %-9s size %9d: %7.2f GiB/s, server CPU %.3f s/GiB (%d requests)\n",
          b, m, s, gib / d, (t / hz) / gib, r }'
    done
    kill "$SERVER"
    wait "$SERVER" 2>/dev/null || true
    SERVER=
  done
done
