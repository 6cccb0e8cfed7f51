// Flowscope engine: what the processor can do, for the kernels compiled once per instruction set.
#pragma once

namespace flowscope {

// Whether this processor runs AVX2 and FMA instructions (false on other architectures).
bool cpuHasAvx2Fma();
// Whether it also runs AVX-512F with the VL extension: the AVX2 kernels' 256-bit code with 32 vector
// registers instead of 16 (false on other architectures).
bool cpuHasAvx512Vl();

} // namespace flowscope
