// Baseline-ISA build of the tape's float32 attention kernel.
#define FLOWSCOPE_KERNEL_NS generic
#include "AttentionSimd.inc"
