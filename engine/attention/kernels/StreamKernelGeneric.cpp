// Baseline-ISA build of the float32 streaming kernel.
#define FLOWSCOPE_KERNEL_NS generic
#ifndef FLOWSCOPE_HAVE_AVX2_KERNEL // the only kernel (not x86-64): a copy for every small d, as the AVX2 one
#define FLOWSCOPE_KERNEL_EVERY_SMALL_D 1
#endif
#include "StreamKernelSimd.inc"
