// Flowscope engine: what the processor can do, for the kernels compiled once per instruction set.
#pragma once

namespace flowscope {

// Whether this processor runs AVX2 and FMA instructions (false on other architectures).
bool cpuHasAvx2Fma();

} // namespace flowscope
