# The load shapes that scripts/instructions and scripts/kernel-counts measure: which
# server serves each, and which client loads it. Sourced, not run.
#
#   hello-c50      ringway serve --hello, 50 connections, one request at a time (S5 c50)
#   hello-p16      the same, pipelined x16 (S8)
#   hello-cN       hello-c50 with N connections (hello-c1000: S5 c1000; what grows with
#                  the number of connections: timers, queues, per-connection state)
#   types-c50      hello-c50 with --http-types (the handler takes http::Request and
#   types-p16      returns http::Response, as the README shows), and pipelined x16
#   log-c50        hello-c50 and hello-p16 with the access log on (its lines go to the
#   log-p16        server's log file under $OUT; the log thread is counted too)
#   static-c10     ringway serve --static, 10 connections GETting an 11,587-byte file
#                  one request at a time (S4 c10; floor: http-floor --app body, the same
#                  bytes canned)
#   newconn-cN     ringway serve --hello, a new connection per request, N at a time
#                  (newconn-c10: S10 x1, `ringway load -c 10 -x 1`; the client closes
#                  each connection once its response is in)
#   static-newconn-cN
#                  static-c10 with a new connection per GET, N at a time (S4
#                  c10-newconn, c1-newconn)
#   echo-64        ringway echo, 50 connections x 64 B messages (S7 64 B)
#   echo-16k       ringway echo, 10 connections x 16 KiB messages (S7 16 KiB)
#   hyper-c50      hyper hello (ringway-bench's http-hyper-ringway, hyper on ringway
#   hyper-p16      through ringway-compat; server `tokio`: http-hyper, the same service
#                  on tokio), 50 connections, and pipelined x16
#
# Servers: uring, epoll (ringway on each backend), floor (the raw io-uring floor of
# ringway-bench, where it has the shape), tokio (hyper on tokio, the hyper shapes), may,
# tokio-raw (may-minihttp and tokio with a hand-written HTTP loop, the hello shapes).
#
# The caller sets BIN (where the binaries are), OUT (a directory for logs and the static
# file), PORT, PRIO (a command prefix, e.g. `nice -n -15`, or empty) and RINGWAY_ARGS.

# shapes_setup: the static shapes' file and enough descriptors for the many-connection
# shapes (the server and the client each hold one per connection).
shapes_setup() {
  mkdir -p "$OUT/static"
  # 11,587 bytes, as the suite's S4 body.
  python3 -c 'import sys; sys.stdout.write(((bytes(range(32, 111)) + b"\n") * 145)[:11587].decode())' \
    > "$OUT/static/body.txt"
  ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
}

# shapes_check SHAPE...: fails with the list of shapes if one is not among them.
shapes_check() {
  local s
  for s in "$@"; do
    case "$s" in
      hello-c[0-9]*|hello-p16|types-c50|types-p16|log-c50|log-p16|static-c10) ;;
      newconn-c[0-9]*|static-newconn-c[0-9]*|echo-64|echo-16k|hyper-c50|hyper-p16) ;;
      *)
        echo "$(basename "$0"): unknown shape '$s'; expected one of hello-cN, hello-p16," \
          "types-c50, types-p16, log-c50, log-p16, static-c10, newconn-cN," \
          "static-newconn-cN, echo-64, echo-16k, hyper-c50, hyper-p16 (scripts/lib/shapes.sh)" >&2
        return 1 ;;
    esac
  done
}

# shapes_need_wrk SHAPE...: fails with the line that installs wrk if a shape needs it.
shapes_need_wrk() {
  local s
  for s in "$@"; do
    case "$s" in
      hello-*|types-*|log-*|hyper-*|static-c*)
        command -v wrk >/dev/null && return 0
        echo "$(basename "$0"): '$s' needs 'wrk'; install it with: apt-get install wrk" >&2
        return 1 ;;
    esac
  done
}

# server_cmd SHAPE SERVER -> the command line, or nothing if that server lacks the shape.
server_cmd() {
  local shape=$1 server=$2 addr=127.0.0.1:$PORT backend=""
  case "$server" in uring|epoll) backend="--backend $server" ;; esac
  local serve="$BIN/ringway serve --threads 1 --bind $addr $backend"
  case "$shape:$server" in
    newconn-*:uring|newconn-*:epoll|hello-*:uring|hello-*:epoll)
      echo "$serve --no-access-log --hello ${RINGWAY_ARGS:-}" ;;
    log-*:uring|log-*:epoll) echo "$serve --hello ${RINGWAY_ARGS:-}" ;;
    types-*:uring|types-*:epoll) echo "$serve --no-access-log --hello --http-types ${RINGWAY_ARGS:-}" ;;
    static-*:uring|static-*:epoll) echo "$serve --no-access-log --static $OUT/static ${RINGWAY_ARGS:-}" ;;
    echo-*:uring|echo-*:epoll) echo "$BIN/ringway echo --threads 1 --bind $addr $backend ${RINGWAY_ARGS:-}" ;;
    hyper-*:uring|hyper-*:epoll) echo "$BIN/http-hyper-ringway --threads 1 --bind $addr $backend" ;;
    newconn-*:floor|hello-*:floor) [ -x "$BIN/http-floor" ] && echo "$BIN/http-floor --bind $addr" ;;
    newconn-*:tokio-raw|hello-*:tokio-raw) [ -x "$BIN/http-tokio" ] && echo "$BIN/http-tokio --bind $addr" ;;
    hello-*:may) [ -x "$BIN/http-may" ] && echo "$BIN/http-may --bind $addr" ;;
    static-*:floor) echo "$BIN/http-floor --app body --bind $addr" ;;
    echo-*:floor) echo "$BIN/echo-floor --bind $addr" ;;
    hyper-*:tokio) echo "$BIN/http-hyper --threads 1 --bind $addr" ;;
  esac
  return 0
}

# load SHAPE SECONDS -> prints the requests (or messages) completed. The client runs on
# CPU 1 (the server on CPU 0).
load() {
  local shape=$1 secs=$2 url=http://127.0.0.1:$PORT/plaintext out
  case "$shape" in
    hello-c50|types-c50|log-c50|hyper-c50)
      out=$($PRIO taskset -c 1 wrk -t1 -c50 -d"${secs}s" "$url")
      echo "$out" | awk '/requests in/ {print $1}' ;;
    hello-c[0-9]*)
      out=$($PRIO taskset -c 1 wrk -t1 -c"${shape#hello-c}" -d"${secs}s" "$url")
      echo "$out" | awk '/requests in/ {print $1}' ;;
    hello-p16|types-p16|log-p16|hyper-p16)
      out=$($PRIO taskset -c 1 wrk -t1 -c50 -d"${secs}s" -s crates/ringway-http/bench/pipeline.lua "$url")
      echo "$out" | awk '/requests in/ {print $1}' ;;
    static-c10)
      out=$($PRIO taskset -c 1 wrk -t1 -c10 -d"${secs}s" "http://127.0.0.1:$PORT/body.txt")
      echo "$out" | awk '/requests in/ {print $1}' ;;
    newconn-c[0-9]*)
      churn "${shape#newconn-c}" "$secs" "$url" ;;
    static-newconn-c[0-9]*)
      churn "${shape#static-newconn-c}" "$secs" "http://127.0.0.1:$PORT/body.txt" ;;
    echo-64)
      out=$($PRIO taskset -c 1 "$BIN/echo-client" --addr "127.0.0.1:$PORT" --conns 50 --size 64 \
        --warmup 0 --duration "$secs" --json)
      echo "$out" | grep '^{' | sed -E 's/.*"messages":([0-9]+).*/\1/' ;;
    echo-16k)
      out=$($PRIO taskset -c 1 "$BIN/echo-client" --addr "127.0.0.1:$PORT" --conns 10 --size 16384 \
        --warmup 0 --duration "$secs" --json)
      echo "$out" | grep '^{' | sed -E 's/.*"messages":([0-9]+).*/\1/' ;;
  esac
}

# churn N SECONDS URL -> the requests `ringway load` completed with a new connection per
# request, N at a time.
churn() {
  $PRIO taskset -c 1 "$BIN/ringway" load -c "$1" -x 1 -d "${2}s" --json --no-progress "$3" \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["requests"])'
}

# next_port: PORT moved to the next port no socket holds. A fresh port per run, so that a
# dying server cannot take the next run's load; and one no socket holds, since after a
# new-connection shape the clients' closed connections hold much of the ephemeral range
# in TIME_WAIT for a minute, and a listener cannot bind a port a client socket holds.
next_port() {
  PORT=$((PORT + 1))
  while [ -n "$(ss -Htan "sport = :$PORT" 2>/dev/null)" ]; do PORT=$((PORT + 1)); done
}

wait_port() {
  for _ in $(seq 1 200); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "$(basename "$0"): server did not open port $PORT" >&2
  return 1
}
