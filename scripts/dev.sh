#!/usr/bin/env bash
# Flowscope developer entry point for a fresh Debian 12 machine.
#   scripts/dev.sh run    install what is missing, build, launch the GUI on the default scene
#   scripts/dev.sh test   install what is missing, build, run the whole test suite (ctest; GUI tests under Xvfb)
#   scripts/dev.sh nogpu  compile (no tests) the GUI as a build without the GPU backends ships it
#   scripts/dev.sh asan   build (clang) and run the engine (media included) and CLI tests with -fsanitize=address,undefined
#   scripts/dev.sh fuzz [SECONDS]   build the loaders' libFuzzer targets (in the asan build) and run each SECONDS (20)
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  cmake ninja-build g++ pkg-config
  libeigen3-dev nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev
  qt6-base-dev libqt6opengl6-dev qt6-charts-dev qt6-svg-dev libimgui-dev qt6-qpa-plugins libgl-dev libegl-dev
  libgl1-mesa-dri libglx-mesa0 libegl-mesa0 xvfb xauth fonts-dejavu-core
  glslc mesa-vulkan-drivers libvulkan-dev
  python3-numpy # tests/python: the NumPy flow reader against the C++ sampler
  python3-dev pybind11-dev # python/: the flowscope module (FLOWSCOPE_BUILD_PYTHON)
  python3-pytest python3-torch # tests/python: the module's pytest suite; softmax against PyTorch
  python3-tqdm # the module's progress=True / "auto" bars (optional: without it no bar; tests/python/test_progress.py)
  python3-matplotlib python3-nbclient python3-ipykernel # examples/: the notebooks, executed by ctest
  zlib1g-dev libpng-dev libavcodec-dev libavformat-dev libswscale-dev libavutil-dev # engine/media: PNG, MP4 (libpng: tests)
  clang libclang-rt-14-dev # the compiler of every build (clang 14); libFuzzer's runtime for tests/fuzz
  openmpi-bin libopenmpi-dev # flowscope-cli sweep under mpirun (optional: without them the sweep runs on one process)
  slurm-wlm munge # tests/slurm: the sweeps as a job array on a one-node Slurm the test starts (skipped without them)
  libfreetype-dev # the text of flowscope-cli sweep plot PNGs (optional: without it plots are SVG only)
  libsentencepiece-dev sentencepiece # ALBERT's spiece.model for flowscope-cli model --text; spm_train in the tests (optional)
)

install_deps() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "installing: ${missing[*]}"
    local sudo=""
    [[ $(id -u) -ne 0 ]] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

jobs() { nproc 2>/dev/null || echo 2; }

# The sanitizer build (`asan`, and the fuzz targets of `fuzz`): clang, which also builds libFuzzer targets and
# compiles the Eigen-heavy engine at -O1 with the sanitizers about a third faster than g++; -O1 -g1: quick to
# compile, still fast enough to run, and ASan reports carry file:line. The GPU backends are tested in the
# release build (Mesa's drivers are not built for ASan).
configure_asan() {
  grep -qs "CMAKE_CXX_COMPILER:FILEPATH=.*clang" build-asan/CMakeCache.txt || rm -rf build-asan
  CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja -DFLOWSCOPE_SANITIZE=ON -DFLOWSCOPE_FUZZ=ON \
    -DFLOWSCOPE_BUILD_GUI=OFF -DFLOWSCOPE_BUILD_GPU=OFF -DFLOWSCOPE_BUILD_PYTHON=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" >/dev/null
}

# The release build (`run`, `test`) is clang's too: on this Eigen- and template-heavy code it compiles the whole
# tree in 4.2 min where g++ 12 takes 7.4 (2 cores), and the engine runs as fast (bench train within 1 %, the
# particle kernels within 12 % either way). A build directory configured by another compiler is started afresh.
build() { # build DIR TARGET|all [cmake args...]
  local dir=$1 target=$2
  shift 2
  grep -qs "CMAKE_CXX_COMPILER:FILEPATH=.*clang" "$dir/CMakeCache.txt" || rm -rf "$dir"
  CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
  cmake --build "$dir" -j "$(jobs)" --target "$target"
}

# The configurations CI compiles besides the release build: the engine alone is the asan build below
# (FLOWSCOPE_BUILD_GUI=OFF, FLOWSCOPE_BUILD_GPU=OFF: engine, media, CLI and their tests, run under the
# sanitizers); the GUI without the GPU backends (a machine without EGL) is `nogpu`, compile only. Building its
# targets would build the whole engine again (the UI's moc step waits for every library it links), so this
# compiles, with -fsyntax-only and no precompiled headers, just the sources that see FLOWSCOPE_HAVE_GPU, the
# registry or the pictures: ui/, render/, app/gui/, the CLI's render (its build without EGL) and engine/backend/,
# with the flags CMake gives them (compile_commands.json).
compile_nogpu() {
  local dir=build-nogpu
  grep -qs "CMAKE_CXX_COMPILER:FILEPATH=.*clang" "$dir/CMakeCache.txt" || rm -rf "$dir"
  CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DFLOWSCOPE_BUILD_GPU=OFF -DFLOWSCOPE_BUILD_GUI=ON \
    -DFLOWSCOPE_BUILD_TESTS=OFF -DFLOWSCOPE_BUILD_PYTHON=OFF -DFLOWSCOPE_PCH=OFF -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 >/dev/null
  python3 - "$dir" "$(jobs)" <<'PY'
import json, os, shlex, subprocess, sys
from concurrent.futures import ThreadPoolExecutor

build, jobs = sys.argv[1], int(sys.argv[2])
root = os.getcwd()
wanted = ("/ui/", "/app/gui/", "/app/cli/Render", "/engine/backend/", "/render/")
entries = [e for e in json.load(open(os.path.join(build, "compile_commands.json")))
           if e["file"].startswith(root + "/") and e["file"][len(root):].startswith(wanted)]

def check(e):
    args = shlex.split(e["command"])
    at = args.index("-o")
    del args[at:at + 2]
    r = subprocess.run(args + ["-fsyntax-only"], cwd=e["directory"], capture_output=True, text=True)
    return r.returncode, r.stderr

failed = 0
with ThreadPoolExecutor(jobs) as pool:
    for rc, err in pool.map(check, entries):
        if rc:
            failed += 1
            sys.stderr.write(err)
print(f"nogpu: {len(entries)} files compiled without the GPU backends, {failed} failed")
sys.exit(1 if failed or not entries else 0)
PY
}

case "${1:-}" in
run)
  install_deps
  build build flowscope -DFLOWSCOPE_BUILD_GUI=ON # the app and what it links, not the tests
  shift
  exec ./build/app/flowscope "$@"
  ;;
test)
  install_deps
  start=$(date +%s)
  build build all -DFLOWSCOPE_BUILD_GUI=ON
  echo "== built in $(($(date +%s) - start)) s"
  # Every file a test writes goes under build/test-tmp (TMPDIR), made afresh for the run.
  rm -rf build/test-tmp && mkdir -p build/test-tmp
  start=$(date +%s)
  TMPDIR="$PWD/build/test-tmp" ctest --test-dir build --output-on-failure -j "$(jobs)"
  echo "== tested in $(($(date +%s) - start)) s"
  ;;
nogpu)
  install_deps
  compile_nogpu
  ;;
asan)
  install_deps
  configure_asan
  cmake --build build-asan -j "$(jobs)" --target flowscope_tests flowscope_media_tests flowscope_cli_tests flowscope-cli
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j "$(jobs)"
  ;;
fuzz)
  install_deps
  seconds=${2:-20}
  # The sanitizer build's engine: its loaders carry libFuzzer's coverage (engine/CMakeLists.txt), so after
  # `asan` only the targets are left to link.
  configure_asan
  start=$(date +%s)
  cmake --build build-asan -j "$(jobs)" --target flowscope_fuzz
  echo "== fuzz targets built in $(($(date +%s) - start)) s"
  out=build-asan/fuzz
  rm -rf "$out/seeds" "$out/artifacts"
  mkdir -p "$out/artifacts"
  build-asan/tests/fuzz/flowscope_fuzz_seeds "$out/seeds" >/dev/null
  # The largest input each target tries: a few times its largest seed.
  declare -A max_len=([scene]=16384 [scene_run]=16384 [share_string]=8192 [npy]=2048 [csv]=2048
    [safetensors]=4096 [flow]=16384 [transformer]=16384)
  # scene_run (a short run of every accepted scene must stop) starts from the scene seeds.
  cp -r "$out/seeds/scene" "$out/seeds/scene_run"
  failed=0
  for t in scene scene_run share_string npy csv safetensors flow transformer; do
    mkdir -p "$out/corpus/$t" # grows across runs; the seeds are read, never written
    log="$out/$t.log"
    # One process, -timeout 10 s per input, 2 GiB of memory (malloc above it is a crash too).
    if ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 "build-asan/tests/fuzz/fuzz_$t" \
      -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -max_len="${max_len[$t]}" -print_final_stats=1 \
      -artifact_prefix="$out/artifacts/$t-" "$out/corpus/$t" "$out/seeds/$t" >"$log" 2>&1; then
      runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
      echo "fuzz $t: ${runs:-?} runs in ${seconds} s ($((${runs:-0} / seconds))/s), corpus $(ls "$out/corpus/$t" | wc -l) files"
    else
      echo "fuzz $t: FAILED; the input is in $out/artifacts/, the report in $log:"
      grep -m1 -A30 -E "ERROR: |runtime error|deadly signal" "$log" || tail -30 "$log"
      failed=1
    fi
  done
  exit $failed
  ;;
*)
  echo "usage: scripts/dev.sh run|test|nogpu|asan|fuzz [SECONDS]" >&2
  exit 2
  ;;
esac
