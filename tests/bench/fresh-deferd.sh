# Sourced by tests/bench/python-rate and python-worker-rate: `fresh_deferd NAME` builds deferd,
# deferctl and bench (RelWithDebInfo, unless BENCH_NO_BUILD=1), starts a fresh throwaway
# ZooKeeper (packaging/zk-sandbox) and deferd (etc/deferd.ini with a queue `bench`), waits
# until deferd's ZooKeeper session is up, and stops both on exit. Run from the top of the
# tree. Sets: build, work (BENCH_WORK, default BUILD_DIR/bench-NAME; deferd.log is there),
# sock, port, pid (deferd's) and cfg (a deferd.ini pointing at them, for deferctl -c, e.g.
# `deferctl -c "$cfg" list bench`). Also `field JSON NAME`: a number of a JSON line.
# FRESH_DEFERD_OPTS: more deferd -o settings, one a line (e.g. a [schedule NAME]'s keys).

fresh_deferd() {
  local name=$1 deadline
  build=${BUILD_DIR:-build}
  case $build in /*) ;; *) build=$PWD/$build ;; esac
  if [ "${BENCH_NO_BUILD:-}" != 1 ]; then
    packaging/deps --test
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$build" -j"$(nproc)" --target deferd deferctl bench >/dev/null
  fi
  work=$(realpath -m "${BENCH_WORK:-$build/bench-$name}")
  mkdir -p "$work"
  sock=$work/deferd.sock
  port=$(packaging/zk-sandbox start "$work/zk")
  pid=""
  trap fresh_deferd_stop EXIT
  trap 'exit 143' TERM
  trap 'exit 130' INT

  rm -f "$sock"
  local extra=() o
  while IFS= read -r o; do [ -z "$o" ] || extra+=(-o "$o"); done <<<"${FRESH_DEFERD_OPTS:-}"
  "$build/deferd" -c etc/deferd.ini -o "zookeeper.hosts=127.0.0.1:$port" -o "daemon.socket=$sock" \
    -o daemon.log_level=warn -o "queue bench.priority=1024" -o metrics.listen=127.0.0.1:0 \
    ${extra[@]+"${extra[@]}"} 2>"$work/deferd.log" &
  pid=$!
  deadline=$((SECONDS + 30))
  until "$build/deferctl" -s "$sock" stats --all 2>/dev/null | grep -E 'clock_state +(synced|local|denied)' >/dev/null; do
    kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ] ||
      { echo "$name: deferd not connected; see $work/deferd.log" >&2; exit 1; }
    sleep 0.1
  done
  cfg=$work/deferd.ini # deferctl list reads ZooKeeper: the same file, pointed at this one
  sed -e "s|^hosts = .*|hosts = 127.0.0.1:$port|" -e "s|^socket = .*|socket = $sock|" \
    etc/deferd.ini >"$cfg"
  printf '\n[queue bench]\npriority = 1024\n' >>"$cfg"
}

fresh_deferd_stop() {
  if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  packaging/zk-sandbox stop "$work/zk"
}

field() { sed -n 's/.*"'"$2"'":\([0-9.]*\).*/\1/p' <<<"$1"; } # JSON FIELD -> number
