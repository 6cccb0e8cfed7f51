#!/bin/bash
# The measurements issue 26 still waits for, on the GPU machine, in the same device call right after the
# shared suite (docs/gpu.md#measuring-on-a-gpu-machine):
#     bash .device/run.sh; bash scripts/device-extra.sh
# with .gl and .device carried along, once the device prepare script has built .device/ (build-device
# configured as docs/gpu.md says). About 3 minutes. Prints its results and keeps them under $OUT.
set -u
OUT=${OUT:-/tmp/flowscope-gpu}; mkdir -p "$OUT"
CLI=${CLI:-.device/flowscope-cli}
# Sizes, overridable for a dry run on a CPU device (Mesa refuses N > 60000): VIEW_N=512 RUN_N=512 KERNEL_N=4096
VIEW_N=${VIEW_N:-65536,262144} RUN_N=${RUN_N:-65536} KERNEL_N=${KERNEL_N:-1048576} SECONDS_EACH=${SECONDS_EACH:-3}
# The NVIDIA driver's loaders' manifests there (as .device/run.sh sets them); elsewhere the system's.
nv=/usr/local/nvidia/share
[ -f $nv/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=$nv/vulkan/icd.d/nvidia_icd.json
[ -f $nv/glvnd/egl_vendor.d/10_nvidia.json ] && export __EGL_VENDOR_LIBRARY_FILENAMES=$nv/glvnd/egl_vendor.d/10_nvidia.json
log() { echo "== $(date +%T) $*"; }

log "the particle view drawn while the run steps (part 5): gl draws the device copy, vulkan uploads"
for b in gl vulkan; do
  timeout 60 $CLI bench view --backend $b --d 3 --n $VIEW_N --seconds $SECONDS_EACH --json 2>&1 | tee -a $OUT/bench_view.jsonl
done
timeout 30 $CLI bench view --backend gl --d 3 --n ${VIEW_N%%,*} --seconds $SECONDS_EACH --fps 0 --json 2>&1 | tee -a $OUT/bench_view.jsonl

log "Dormand-Prince on the device steppers against a read-back per stage"
for b in gl vulkan; do
  timeout 40 $CLI bench run --backend $b --d 3 --n $RUN_N --every 4 --method dopri5 --json 2>&1 | tee -a $OUT/bench_dopri5.jsonl
  timeout 60 $CLI bench run --backend $b --d 3 --n $RUN_N --every 4 --method dopri5 --fields-only --json 2>&1 |
    tee -a $OUT/bench_dopri5.jsonl
done

log "the shipped kernel at 2^20, automatic layout and the best one measured (TILE 128, QPT 2), UNROLL 4 and 8"
timeout 40 $CLI bench particles --backend gl --device-steps --d 3 --n $KERNEL_N --variants softmax --no-baseline \
  --error --json 2>&1 | tee -a $OUT/kernel.jsonl
for u in 4 8; do
  FLOWSCOPE_STREAM_TILE=128 FLOWSCOPE_STREAM_QPT=2 FLOWSCOPE_STREAM_UNROLL=$u timeout 40 $CLI bench particles \
    --backend gl --device-steps --d 3 --n $KERNEL_N --variants softmax --no-baseline --json 2>&1 |
    sed "s/^{/{\"tile\":128,\"qpt\":2,\"unroll\":$u,/" | tee -a $OUT/kernel.jsonl
done
log "issue 48: a masked step with positional decay (lambda = 8) against a full softmax step, on the device"
for b in gl vulkan; do
  timeout 60 $CLI bench particles --backend $b --device-steps --d 2 --n 16384,${RUN_N} \
    --variants softmax,masked,masked-alibi --no-baseline --json 2>&1 | tee -a $OUT/masked_alibi.jsonl
done
log end
