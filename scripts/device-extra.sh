#!/bin/bash
# Issue 51's measurements on a lent GPU machine (docs/gpu.md#measuring-on-a-gpu-machine), in one device call:
#     bash scripts/device-extra.sh            carry [".gl", ".device"]
# once the device prepare script has built .device/ (build-device configured as docs/gpu.md says). It sets up
# the loaders itself, so it runs alone or after .device/run.sh. About 6 minutes; every command has a timeout,
# the most important first. Prints its results and keeps them under $OUT.
set -u
OUT=${OUT:-/tmp/flowscope-gpu}; mkdir -p "$OUT"
CLI=${CLI:-.device/flowscope-cli}
# Sizes, overridable for a dry run on a CPU device (Mesa refuses N > 60000):
#     VIEW_N=512 RUN_N=512 KERNEL_N=4096 SMALL_N=1024 SINK_N=512,1024 SETUP=0 TESTS=0 bash scripts/device-extra.sh
VIEW_N=${VIEW_N:-65536,262144} RUN_N=${RUN_N:-65536} KERNEL_N=${KERNEL_N:-1048576} SECONDS_EACH=${SECONDS_EACH:-3}
SINK_N=${SINK_N:-16384,65536,131072,262144} SMALL_N=${SMALL_N:-65536}
if [ "${SETUP:-1}" = 1 ] && ls .gl/*.deb >/dev/null 2>&1; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
# The NVIDIA driver's loaders' manifests there (as .device/run.sh sets them); elsewhere the system's.
nv=/usr/local/nvidia/share
[ -f $nv/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=$nv/vulkan/icd.d/nvidia_icd.json
[ -f $nv/glvnd/egl_vendor.d/10_nvidia.json ] && export __EGL_VENDOR_LIBRARY_FILENAMES=$nv/glvnd/egl_vendor.d/10_nvidia.json
chmod +x $CLI .device/flowscope_gpu_tests 2>/dev/null
log() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1 | tee $OUT/gpu.txt

# The kernel, tokens on the device, softmax d = 3: `kernel LABEL [VAR=value ...] -- [bench options]` runs
# bench particles with the environment given and labels its JSON rows.
kernel() {
  local label=$1; shift
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" timeout 40 $CLI bench particles --backend gl --device-steps --d 3 --variants softmax \
    --no-baseline --peak-flops 6.7e13 --json "$@" 2>&1 | sed "s/^{/{\"label\":\"$label\",/" | tee -a $OUT/kernel.jsonl
}
log "the kernel at 2^20: before (no log2 scores, no tile bound) and after, with the error against float64"
kernel before FLOWSCOPE_STREAM_LOG2=0 FLOWSCOPE_STREAM_BOUND=0 -- --n $SMALL_N,$KERNEL_N --error
kernel after -- --n $SMALL_N,$KERNEL_N --error
kernel log2-only FLOWSCOPE_STREAM_BOUND=0 -- --n $SMALL_N,$KERNEL_N
kernel bound-only FLOWSCOPE_STREAM_LOG2=0 -- --n $SMALL_N,$KERNEL_N
log "the layout: TILE x QPT x UNROLL, after"
for t in 64 128 256; do
  for q in 1 2 4; do
    for u in 4 8; do
      [ $t = 256 ] && [ $q != 2 ] && continue
      kernel "tile$t-qpt$q-unroll$u" FLOWSCOPE_STREAM_TILE=$t FLOWSCOPE_STREAM_QPT=$q FLOWSCOPE_STREAM_UNROLL=$u \
        -- --n $SMALL_N,$KERNEL_N
    done
  done
done

log "the GPU suite on this device (every kernel against the CPU float64 reference), the new kernel's defaults"
[ "${TESTS:-1}" = 1 ] && timeout 150 .device/flowscope_gpu_tests --gtest_brief=1 2>&1 | tail -15 | tee -a $OUT/gpu.txt

log "PyTorch SDPA in the same call, N = 2^20"
[ -f .device/peer_gpu_attention.py ] &&
  PYTHONUNBUFFERED=1 timeout 100 python3 .device/peer_gpu_attention.py 3 $KERNEL_N 2>&1 | tee -a $OUT/peers.jsonl

log "whole runs, Euler, recording every 4 steps: before and after, gl and vulkan"
for b in gl vulkan; do
  FLOWSCOPE_STREAM_LOG2=0 FLOWSCOPE_STREAM_BOUND=0 timeout 60 $CLI bench run --backend $b --d 3 --n $RUN_N \
    --every 4 --steps 40 --json 2>&1 | sed 's/^{/{"label":"before",/' | tee -a $OUT/runs.jsonl
  timeout 60 $CLI bench run --backend $b --d 3 --n $RUN_N --every 4 --steps 40 --json 2>&1 |
    sed 's/^{/{"label":"after",/' | tee -a $OUT/runs.jsonl
done

log "Sinkhorn against softmax fields, pairs per pass, N up to 2^18 (QPT automatic, then 1)"
for b in gl vulkan; do
  timeout 90 $CLI bench particles --backend $b --d 3 --n $SINK_N --variants softmax,sinkhorn --no-baseline \
    --json 2>&1 | sed 's/^{/{"label":"auto",/' | tee -a $OUT/sinkhorn.jsonl
done
FLOWSCOPE_STREAM_QPT=1 timeout 60 $CLI bench particles --backend gl --d 3 --n $SINK_N --variants sinkhorn \
  --no-baseline --json 2>&1 | sed 's/^{/{"label":"qpt1",/' | tee -a $OUT/sinkhorn.jsonl

log "the particle view drawn while the run steps: gl draws the device copy, vulkan uploads"
for b in gl vulkan; do
  timeout 60 $CLI bench view --backend $b --d 3 --n $VIEW_N --seconds $SECONDS_EACH --json 2>&1 | tee -a $OUT/runs.jsonl
done

log "Dormand-Prince on the device steppers against a read-back per stage"
for b in gl vulkan; do
  timeout 40 $CLI bench run --backend $b --d 3 --n $RUN_N --every 4 --method dopri5 --json 2>&1 | tee -a $OUT/runs.jsonl
  timeout 60 $CLI bench run --backend $b --d 3 --n $RUN_N --every 4 --method dopri5 --fields-only --json 2>&1 |
    tee -a $OUT/runs.jsonl
done

log "a masked step with positional decay (lambda = 8) against a full softmax step"
timeout 60 $CLI bench particles --backend gl --device-steps --d 2 --n 16384,${RUN_N} \
  --variants softmax,masked,masked-alibi --no-baseline --json 2>&1 | tee -a $OUT/runs.jsonl

if command -v nvcc >/dev/null && [ -f .device/limit_softmax.cu ]; then
  log "CUDA probe: a plain streaming-softmax kernel, for the practical limit"
  nvcc -O3 -arch=sm_90a -o /tmp/limit .device/limit_softmax.cu && timeout 60 /tmp/limit | tee -a $OUT/peers.jsonl
fi
log done
