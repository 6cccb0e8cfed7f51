#include "engine/core/Cpu.h"

namespace flowscope {

bool cpuHasAvx2Fma() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

bool cpuHasAvx512Vl() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return cpuHasAvx2Fma() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl");
#else
    return false;
#endif
}

} // namespace flowscope
