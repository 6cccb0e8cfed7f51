// AVX-512VL build of the tape's float32 attention kernel: the AVX2 copy's 256-bit code, compiled with
// -mavx512f -mavx512vl as well, so that it has 32 vector registers instead of 16. The backward pass of 8
// queries keeps ~50 vectors live (their features, gradients and sums, the keys, the values, exp's
// constants); with 16 registers most are spilled and reloaded every key block.
#define FLOWSCOPE_KERNEL_NS avx512
#include "AttentionSimd.inc"
