#!/usr/bin/env bash
# Client CPU per request: `ringway load` against wrk, same server, same shape.
#
# The server (ringway-load-testserver, one thread, Content-Length responses) is pinned
# to CPU 0, each client to CPU 1, interleaved round by round. A client's CPU time is
# read from /proc: each client runs as the child of a bash that prints its own
# /proc/$$/stat after waiting for it, whose cutime+cstime (fields 16, 17) are exactly
# the child's utime+stime. The server's CPU is read from its /proc/PID/stat before and
# after each run. Run from the workspace root after `cargo build --release -p
# ringway-cli -p ringway-load`.
#
# With TOGETHER=1 both clients run at the same time instead (same CPU, each with its
# own CONNECTIONS) against the fair-round poll(2) server (`--poll-loop`), which gives
# them equal shares: one run, identical conditions, whatever the machine's drift.
#
# Usage: [TOGETHER=1] bench/cpu_vs_wrk.sh [CONNECTIONS] [SECONDS] [ROUNDS] [PIPELINE] [WORK_US]
# WORK_US > 0 makes the server burn that much CPU per request: it is then the
# bottleneck, both clients see the same req/s, and their CPU per request compares
# like with like (neither spins at 100% of its core).
set -euo pipefail
CONNS=${1:-50}
SECS=${2:-10}
ROUNDS=${3:-3}
PIPE=${4:-1}
WORK=${5:-0}
TICK=$(getconf CLK_TCK)
SERVER=target/release/ringway-load-testserver
LOAD=target/release/ringway

# The server runs until its stdin (the coprocess pipe) closes, or is killed by pid.
TOGETHER=${TOGETHER:-0}
EXTRA=""
if [ "$TOGETHER" = 1 ]; then EXTRA=--poll-loop; fi
coproc SRV { exec taskset -c 0 "$SERVER" --mode cl $EXTRA --work-us "$WORK"; }
read -r line <&"${SRV[0]}"
ADDR=${line#listening on }
SPID=$SRV_PID
URL="http://$ADDR/"
trap 'kill $SPID 2>/dev/null || true' EXIT

cpu_of() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# Prints "requests cpu_seconds server_cpu_seconds" for one client run.
run_client() {
  local s0 s1 out reqs stat ticks
  s0=$(cpu_of "$SPID")
  out=$(bash -c "$1 >/tmp/cpu_vs_wrk.out 2>&1; cat /proc/\$\$/stat")
  s1=$(cpu_of "$SPID")
  ticks=$(echo "$out" | awk '{print $16 + $17}')
  reqs=$(grep -Eo '^ *[0-9]+ requests in' /tmp/cpu_vs_wrk.out | awk '{print $1}')
  echo "$reqs $(echo "$ticks / $TICK" | bc -l) $(echo "($s1 - $s0) / $TICK" | bc -l)"
}

LUA=""
if [ "$PIPE" -gt 1 ]; then
  LUA=/tmp/cpu_vs_wrk_pipeline.lua
  cat >"$LUA" <<LUAEOF
init = function(args)
  local r = {}
  for i = 1, $PIPE do r[i] = wrk.format(nil) end
  req = table.concat(r)
end
request = function() return req end
LUAEOF
fi
WRK="taskset -c 1 wrk -t1 -c$CONNS -d${SECS}s ${LUA:+-s $LUA} $URL"
OURS="taskset -c 1 $LOAD load --no-progress -t1 -c$CONNS -d${SECS}s -p $PIPE $URL"
echo "server $SERVER on CPU 0 at $URL; clients on CPU 1; $CONNS connections, ${SECS}s, pipeline $PIPE, server work ${WORK}us/request"
echo "wrk:     $WRK"
echo "ringway: $OURS"
printf '%-8s %-5s %10s %10s %14s %14s %11s\n' client round requests req/s client_us/req server_us/req client_cpu%
for r in $(seq 1 "$ROUNDS"); do
  if [ "$TOGETHER" = 1 ]; then
    bash -c "$WRK >/tmp/cpu_vs_wrk.wrk 2>&1; cat /proc/\$\$/stat" >/tmp/cpu_vs_wrk.wrk.stat &
    bash -c "$OURS >/tmp/cpu_vs_wrk.ours 2>&1; cat /proc/\$\$/stat" >/tmp/cpu_vs_wrk.ours.stat &
    wait $(jobs -p | grep -v "^$SPID$") 2>/dev/null || true
    while [ ! -s /tmp/cpu_vs_wrk.wrk.stat ] || [ ! -s /tmp/cpu_vs_wrk.ours.stat ]; do sleep 0.1; done
    for who in wrk ours; do
      reqs=$(grep -Eo '^ *[0-9]+ requests in' /tmp/cpu_vs_wrk.$who | awk '{print $1}')
      cpu=$(awk -v t="$TICK" '{print ($16 + $17) / t}' /tmp/cpu_vs_wrk.$who.stat)
      printf '%-8s %-5s %10d %10.0f %14.3f %14s %11.0f\n' $who "$r" "$reqs" "$(echo "$reqs / $SECS" | bc -l)" \
        "$(echo "$cpu * 1000000 / $reqs" | bc -l)" "(shared)" "$(echo "$cpu * 100 / $SECS" | bc -l)"
    done
    rm -f /tmp/cpu_vs_wrk.*.stat
    continue
  fi
  for who in wrk ringway; do
    if [ $who = wrk ]; then cmd=$WRK; else cmd=$OURS; fi
    read -r reqs cpu scpu < <(run_client "$cmd")
    printf '%-8s %-5s %10d %10.0f %14.3f %14.3f %11.0f\n' $who "$r" "$reqs" "$(echo "$reqs / $SECS" | bc -l)" \
      "$(echo "$cpu * 1000000 / $reqs" | bc -l)" "$(echo "$scpu * 1000000 / $reqs" | bc -l)" \
      "$(echo "$cpu * 100 / $SECS" | bc -l)"
  done
done
