#!/usr/bin/env bash
# Compiler and linker launcher that records the CPU time of every command of a build, so that a build's cost can
# be measured on a busy machine (wall time there follows the other jobs; user + sys CPU time much less so):
#   cmake -S . -B build-cpu -G Ninja -DCMAKE_BUILD_TYPE=Release \
#     -DCMAKE_CXX_COMPILER_LAUNCHER=$PWD/scripts/cpu-launcher.sh -DCMAKE_CXX_LINKER_LAUNCHER=$PWD/scripts/cpu-launcher.sh
#   FLOWSCOPE_CPU_LOG=/tmp/cpu.log cmake --build build-cpu
#   sort -rn /tmp/cpu.log | head                             # the costliest steps: user s, sys s, wall s, output
#   awk '{cpu += $1 + $2} END {print cpu}' /tmp/cpu.log      # the build's CPU seconds (moc and the shaders aside)
# GNU time (Debian: time) appends one short line per command (O_APPEND). docs/build.md has the figures.
log=${FLOWSCOPE_CPU_LOG:-${TMPDIR:-/tmp}/flowscope-cpu.log}
out=?
previous=
for arg in "$@"; do
  [[ $previous == -o ]] && out=$arg
  previous=$arg
done
exec /usr/bin/time -a -o "$log" -f "%U %S %e $out" "$@"
