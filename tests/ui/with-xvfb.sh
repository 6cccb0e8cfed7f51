#!/usr/bin/env bash
# Runs a command on an X server of its own: an Xvfb at 1280x800x24 on the first free display, which Xvfb
# itself picks and reports (-displayfd), so parallel tests never race for a display number as `xvfb-run -a`
# can. The server goes when the command ends. Listing the tests (--gtest_list_tests, at build time) needs no
# display and gets none. Without Xvfb the command runs as it is (the widget tests then skip).
set -u
for a in "$@"; do
  [[ $a == --gtest_list_tests ]] && exec "$@"
done
command -v Xvfb >/dev/null || exec "$@"
dir=$(mktemp -d "${TMPDIR:-/tmp}/flowscope-xvfb.XXXXXX")
mkfifo "$dir/display"
Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp -noreset 3>"$dir/display" 2>"$dir/log" &
server=$!
cleanup() { kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
# Blocks until the server has opened its socket and written the display number (or exited: EOF).
read -r number <"$dir/display"
if [[ -z ${number:-} ]]; then
  echo "with-xvfb.sh: Xvfb did not start:" >&2
  cat "$dir/log" >&2
  exit 1
fi
DISPLAY=":$number" QT_QPA_PLATFORM=xcb "$@"
