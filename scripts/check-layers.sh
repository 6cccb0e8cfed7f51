#!/usr/bin/env bash
# The include arrows between the layers point one way (docs/backends.md, "Layering"): app -> ui -> render ->
# engine, and inside engine/ nothing reaches back up. Checked by grep over #include lines:
#
#   engine/            never includes ui/, render/ or app/
#   python/            (the Python module, a front end beside app/) never includes ui/ or app/: it may draw
#                      with render/ (flowscope.render), never with widgets
#   render/            never includes ui/ or app/ (pictures and animations know nothing of widgets); of
#                      engine/runner/, render/picture/ includes only the snapshot headers (*Snapshot.h)
#   engine/<folder>/   includes only the engine folders below it, in this one-way order (each line may use
#                      the lines above it; a folder on the same line is not used). So attention/ never
#                      includes dynamics/ or backend/ (fields know nothing of steps or devices), io/ never
#                      includes scene/ (files and formats know nothing of scenes):
#                        core
#                        io, autodiff
#                        media, scene, flows
#                        attention, inverse, ottransformer
#                        dynamics
#                        gaussian, gpu
#                        backend
#                        sweep
#                        runner
#                        models       (real checkpoints: nothing in engine/ includes it; only the front ends
#                                      app/, ui/, python/ and the tests, and render/ never)
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
rule render 'ui/|app/' "render/ must not include ui/ or app/"
rule render 'engine/models/' "render/ must not include engine/models/ (real checkpoints are for the front ends)"
# Pictures draw what a run publishes, never the run: of engine/runner/, render/picture/ includes only the
# snapshot headers (Snapshot.h, TrainerRunSnapshot.h, FlowSnapshot.h, TransformerSnapshot.h,
# PosteriorSnapshot.h), not a runner's, nor its publishing machinery (LatestSnapshot.h).
if [[ -d render/picture ]]; then
  hits=$(grep -rnE --include='*.h' --include='*.cpp' '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]engine/runner/' \
    render/picture | grep -vE 'engine/runner/(Snapshot|TrainerRunSnapshot|FlowSnapshot|TransformerSnapshot|PosteriorSnapshot)\.h[">]' || true)
  if [[ -n $hits ]]; then
    while IFS= read -r hit; do echo "$hit   <- render/picture/ may include only the snapshot headers of engine/runner/"; done <<<"$hits"
    status=1
  fi
fi

# The engine's folders, in order: each may include only the folders of the levels before its own.
levels=(
  "core"
  "io autodiff"
  "media scene flows"
  "attention inverse ottransformer"
  "dynamics"
  "gaussian gpu"
  "backend"
  "sweep"
  "runner"
  "models"
)
known=" "
for line in "${levels[@]}"; do known+="$line "; done
for ((l = 0; l < ${#levels[@]}; ++l)); do
  below=""
  for ((k = 0; k < l; ++k)); do below+=" ${levels[k]}"; done
  for folder in ${levels[l]}; do
    # every engine folder but those below this one (and itself)
    banned=""
    for other in $known; do
      [[ $other == "$folder" || " $below " == *" $other "* ]] || banned+="${banned:+|}engine/$other/"
    done
    [[ -n $banned ]] && rule "engine/$folder" "$banned" "engine/$folder may include only engine/{${below# }} (the engine's one-way order)"
  done
done
# A new engine folder must be given its place in the order.
for d in engine/*/; do
  name=$(basename "$d")
  if [[ $known != *" $name "* ]]; then
    echo "engine/$name: not in check-layers.sh's order of the engine's folders"
    status=1
  fi
done

if [[ $status -ne 0 ]]; then
  echo "check-layers: include arrows run back up (see above)" >&2
fi
exit $status
