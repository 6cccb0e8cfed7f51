// Baseline-ISA build of the float32 streaming kernel.
#define FLOWSCOPE_KERNEL_NS generic
#include "StreamKernelSimd.inc"
