#!/usr/bin/env bash
# Runs a command on an X server of its own: an Xvfb at 1280x800x24 on the first free display, which Xvfb
# itself picks and reports (-displayfd), so parallel tests never race for a display number as `xvfb-run -a`
# can. Listing the tests (--gtest_list_tests, at build time) needs no display and gets none. Without Xvfb the
# command runs as it is (the widget tests then skip).
#
# Under ctest the servers are pooled: `with-xvfb.sh --start-pool DIR N` (a fixture's setup) starts N servers,
# one per core, and `--stop-pool DIR` (its cleanup) stops them. `with-xvfb.sh --pool DIR COMMAND...` runs the
# command on the first pooled server no other test holds (an flock on it, held until the command ends) and
# starts a server of its own only when every pooled one is busy. A pooled server resets when its last client
# leaves (no -noreset), which usually happens before the next test connects. The pool saves the ~0.1 s of CPU
# an Xvfb start costs per test. At most 8 pooled servers, started side by side.
set -u
# Starts a server that outlives this script (its descriptors none of ours: ctest waits for the pipes it gave a
# test to close). Prints its display number, empty when it did not start; its pid goes to PIDFILE.
start_server() { # start_server LOGFILE PIDFILE [Xvfb flags...]
  local log=$1 pidfile=$2 fifo number=""
  shift 2
  fifo=$(mktemp -u "${TMPDIR:-/tmp}/flowscope-xvfb-fd.XXXXXX")
  mkfifo "$fifo"
  setsid Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp "$@" 3>"$fifo" </dev/null >/dev/null 2>"$log" &
  echo $! >"$pidfile"
  read -r number <"$fifo" # blocks until the socket is open and the number written (or EOF: it exited)
  rm -f "$fifo"
  echo "$number"
}

case "${1:-}" in
--start-pool) # --start-pool DIR N
  "$0" --stop-pool "$2"
  mkdir -p "$2"
  command -v Xvfb >/dev/null || exit 0
  for ((i = 0; i < $3 && i < 8; ++i)); do
    (number=$(start_server "$2/$i.log" "$2/$i.pid") && [[ -n $number ]] && echo "$number" >"$2/$i.display") &
  done
  wait
  exit 0
  ;;
--stop-pool) # --stop-pool DIR: the pool's servers (checked to be Xvfb: a pid file may outlive its process)
  for f in "$2"/*.pid; do
    [[ -f $f ]] && pid=$(cat "$f") && [[ $(cat "/proc/$pid/comm" 2>/dev/null) == Xvfb ]] && kill "$pid"
  done
  rm -rf "$2"
  exit 0
  ;;
--pool) # --pool DIR COMMAND...
  pool=$2
  shift 2
  for a in "$@"; do
    [[ $a == --gtest_list_tests ]] && exec "$@"
  done
  for f in "$pool"/*.display; do
    [[ -f $f ]] || continue
    exec {lock}>"${f%.display}.lock" || continue
    pid=$(cat "${f%.display}.pid" 2>/dev/null)
    if flock -n "$lock" && [[ $(cat "/proc/$pid/comm" 2>/dev/null) == Xvfb ]]; then
      DISPLAY=":$(cat "$f")" QT_QPA_PLATFORM=xcb exec "$@" # the command keeps the lock's descriptor
    fi
    exec {lock}>&-
  done
  ;;
esac

for a in "$@"; do
  [[ $a == --gtest_list_tests ]] && exec "$@"
done
command -v Xvfb >/dev/null || exec "$@"
dir=$(mktemp -d "${TMPDIR:-/tmp}/flowscope-xvfb.XXXXXX")
cleanup() { kill "$(cat "$dir/pid")" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
number=$(start_server "$dir/log" "$dir/pid" -noreset)
if [[ -z $number ]]; then
  echo "with-xvfb.sh: Xvfb did not start:" >&2
  cat "$dir/log" >&2
  exit 1
fi
DISPLAY=":$number" QT_QPA_PLATFORM=xcb "$@"
