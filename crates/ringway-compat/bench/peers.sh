# The servers compare.sh and clients.sh drive, by peer name (sourced, not run).
# server_cmd PEER ADDR -> its command line: the examples from target/release/examples,
# the suite's hyper peers (bench-*) from ${BIN:-target/release}.
server_cmd() { # PEER ADDR
  local e=target/release/examples
  case "$1" in
    compat-uring) echo "$e/hello_hyper --threads 1 --backend uring --bind $2" ;;
    compat-epoll) echo "$e/hello_hyper --threads 1 --backend epoll --bind $2" ;;
    tokio-ct) echo "$e/hello_hyper_tokio --flavor current_thread --bind $2" ;;
    tokio-mt1) echo "$e/hello_hyper_tokio --flavor multi_thread --bind $2" ;;
    bench-ringway) echo "${BIN:-target/release}/http-hyper-ringway --threads 1 --backend uring --bind $2" ;;
    bench-tokio) echo "${BIN:-target/release}/http-hyper --threads 1 --bind $2" ;;
    ringway-http) echo "target/release/ringway serve --hello --threads 1 --no-access-log --backend uring --bind $2" ;;
    *) echo "$(basename "$0"): unknown peer $1" >&2; exit 2 ;;
  esac
}
