#!/bin/bash
# The check after tuning, on a lent GPU machine (docs/gpu.md#figures-on-an-h200): the shipped defaults
# measured once more, then the GPU suite. About 4.5 minutes:  bash scripts/device-verify.sh, carry [".gl", ".device"].
set -u
OUT=${OUT:-/tmp/flowscope-gpu}; mkdir -p "$OUT"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
CLI=.device/flowscope-cli; chmod +x $CLI .device/flowscope_gpu_tests
log() { echo "== $(date +%T) $*"; }
log "kernel, new defaults, gl and vulkan, with the error against float64"
for b in gl vulkan; do
  timeout 60 $CLI bench particles --backend $b --device-steps --d 3 --variants softmax --no-baseline --peak-flops 6.7e13 \
    --n 65536,262144,1048576 --error --json 2>&1 | tee -a $OUT/kernel2.jsonl
done
log "view, paced GL queue"
for b in gl vulkan; do
  timeout 60 $CLI bench view --backend $b --d 3 --n 65536,262144 --seconds 3 --json 2>&1 | tee -a $OUT/runs2.jsonl
done
log "whole runs"
for b in gl vulkan; do
  timeout 40 $CLI bench run --backend $b --d 3 --n 65536 --every 4 --steps 40 --json 2>&1 | tee -a $OUT/runs2.jsonl
done
log "fields warmed at every N: softmax and Sinkhorn"
timeout 60 $CLI bench particles --backend vulkan --d 3 --n 65536,131072,262144 --variants softmax,sinkhorn --no-baseline \
  --json 2>&1 | tee -a $OUT/sinkhorn2.jsonl
log "GPU suite"
timeout ${SUITE_SECONDS:-200} .device/flowscope_gpu_tests --gtest_brief=1 > $OUT/gpu_tests2.txt 2>&1; echo "rc=$?" >> $OUT/gpu_tests2.txt
grep -E "FAILED|PASSED|tests ran|rc=" $OUT/gpu_tests2.txt | head -30
log done
