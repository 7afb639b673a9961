# What the bench scripts here share (sourced after they `cd` to the repository root):
# a free port, waiting for a server to open one, stopping a server by its pid, and the
# CPU a process has used.
#
# STOP_GRACE: seconds between SIGTERM and SIGKILL in `stop` (default 0.3; a server
# under callgrind needs longer to write its dump).

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# wait_port PORT [TRIES]: waits (TRIES x 0.1 s, default 600) for a listener on PORT.
wait_port() {
  for _ in $(seq 1 "${2:-600}"); do
    (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "$(basename "$0"): the server did not open port $1" >&2
  return 1
}

stop() { kill -TERM "$1" 2>/dev/null || true; sleep "${STOP_GRACE:-0.3}"; kill -KILL "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

# cpu_ns PID: CPU nanoseconds of every thread of PID (the scheduler's own account).
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{t += $1} END {printf "%.0f", t}'; }
