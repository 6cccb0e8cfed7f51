// AVX2+FMA build of the tape's float32 attention kernel (this file is compiled with -mavx2 -mfma).
#define FLOWSCOPE_KERNEL_NS avx2
#include "AttentionSimd.inc"
