#!/usr/bin/env bash
# The include arrows between the layers point one way (docs/backends.md, "Layering"): app -> ui -> render ->
# engine, and inside engine/ nothing reaches back up. Checked by grep over #include lines:
#
#   engine/            never includes ui/, render/ or app/
#   python/            (the Python module, a front end beside app/) never includes ui/ or app/: it may draw
#                      with render/ (flowscope.render), never with widgets
#   engine/attention/  never includes engine/dynamics/ or engine/backend/ (fields know nothing of steps or devices)
#   engine/io/         never includes engine/scene/ (files and formats know nothing of scenes)
#   render/            never includes ui/ or app/ (pictures and animations know nothing of widgets)
#
# Usage: scripts/check-layers.sh [ROOT]   (ROOT: the source tree, default this script's repository)
# Prints each offending include as file:line: text, and exits 1 if there is any; 0 when the arrows hold.
set -euo pipefail
root=${1:-"$(cd "$(dirname "$0")/.." && pwd)"}
cd "$root"
if [[ ! -d engine ]]; then
  echo "check-layers: no engine/ under $root" >&2
  exit 2
fi

status=0
# rule DIR PATTERN WHY: every #include of a path matching PATTERN in the C++ files under DIR is an offence.
rule() {
  local dir=$1 pattern=$2 why=$3 hits
  [[ -d $dir ]] || return 0
  hits=$(grep -rnE --include='*.h' --include='*.hpp' --include='*.cpp' --include='*.cc' \
    "^[[:space:]]*#[[:space:]]*include[[:space:]]*[\"<]($pattern)" "$dir" || true)
  if [[ -n $hits ]]; then
    while IFS= read -r hit; do echo "$hit   <- $why"; done <<<"$hits"
    status=1
  fi
}

rule engine 'ui/|render/|app/' "engine/ must not include ui/, render/ or app/"
rule python 'ui/|app/' "python/ must not include ui/ or app/"
rule engine/attention 'engine/dynamics/|engine/backend/' "engine/attention must not include engine/dynamics/ or engine/backend/"
rule engine/io 'engine/scene/' "engine/io must not include engine/scene/"
rule render 'ui/|app/' "render/ must not include ui/ or app/"

if [[ $status -ne 0 ]]; then
  echo "check-layers: include arrows run back up (see above)" >&2
fi
exit $status
