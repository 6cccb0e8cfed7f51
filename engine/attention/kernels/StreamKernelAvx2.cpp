// AVX2+FMA build of the float32 streaming kernel (this file is compiled with -mavx2 -mfma).
#define FLOWSCOPE_KERNEL_NS avx2
#define FLOWSCOPE_KERNEL_EVERY_SMALL_D 1
#include "StreamKernelSimd.inc"
