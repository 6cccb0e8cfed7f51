#!/usr/bin/env bash
# scripts/check-layers.sh catches what it is for: on a small tree with one include of each kind that runs back
# up, it exits 1 and names every offending file:line, and on the same tree without them it exits 0.
# Usage: test_check_layers.sh PATH/TO/check-layers.sh
set -euo pipefail
check=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mkdir -p "$tmp"/engine/{attention,dynamics,io,scene,backend,gaussian} "$tmp"/render/picture "$tmp"/python/src
# Allowed arrows: downwards, and a comment that only mentions a forbidden path.
cat >"$tmp/engine/dynamics/Simulation.h" <<'H'
#include "engine/attention/VelocityField.h"
#include "engine/scene/Scene.h"
H
printf '#include "engine/dynamics/Simulation.h"\n' >"$tmp/engine/backend/ComputeBackend.h"
printf '// engine/io never includes "engine/scene/Scene.h"\n#include <string>\n' >"$tmp/engine/io/Npy.h"
printf '#include "engine/dynamics/Simulation.h"\n' >"$tmp/render/PointRenderer.h"
printf '#include "render/GlApi.h"\n' >"$tmp/python/src/Render.cpp"
printf '#include "engine/runner/FlowSnapshot.h"\n' >"$tmp/render/picture/FlowsPicture.h"

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

out=$(bash "$check" "$tmp" 2>&1) || fail "a clean tree was refused: $out"

# One offence per rule, at known lines.
printf '#include <vector>\n#include "engine/dynamics/DeviceStepper.h"\n' >"$tmp/engine/attention/Backend.h"
printf '#include "engine/backend/Registry.h"\n' >"$tmp/engine/attention/Fields.cpp"
printf '#include <string>\n\n  #  include "engine/scene/Scene.h"\n' >"$tmp/engine/io/ShareString.cpp"
printf '#include "render/GlApi.h"\n' >"$tmp/engine/backend/Registry.cpp"
printf '#include <ui/MainWindow.h>\n' >"$tmp/engine/dynamics/Observables.cpp"
printf '#include "app/cli/Commands.h"\n' >"$tmp/python/src/Module.cpp"
printf '#include "engine/gaussian/Cone.h"\n' >"$tmp/engine/scene/SceneRead.cpp" # the old cycle
printf '#include "engine/runner/FlowRunner.h"\n' >"$tmp/render/picture/FlowsPicture.cpp" # a runner, not its snapshot

set +e
out=$(bash "$check" "$tmp" 2>&1)
rc=$?
set -e
[[ $rc -eq 1 ]] || fail "expected exit 1 on the planted includes, got $rc: $out"
for where in engine/attention/Backend.h:2 engine/attention/Fields.cpp:1 engine/io/ShareString.cpp:3 \
  engine/backend/Registry.cpp:1 engine/dynamics/Observables.cpp:1 python/src/Module.cpp:1 \
  engine/scene/SceneRead.cpp:1 render/picture/FlowsPicture.cpp:1; do
  grep -q "^$where:" <<<"$out" || fail "$where was not named: $out"
done
# Nothing else: the allowed arrows and the comment are not offences.
[[ $(grep -c '<- ' <<<"$out") -eq 8 ]] || fail "expected exactly 8 offences: $out"
# An engine folder without a place in the order is named.
mkdir "$tmp/engine/newthing"
set +e
out=$(bash "$check" "$tmp" 2>&1)
set -e
grep -q "^engine/newthing: not in check-layers.sh's order" <<<"$out" || fail "a new folder was not named: $out"
echo "check-layers: planted includes caught"
