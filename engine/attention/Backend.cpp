#include "engine/attention/Backend.h"

#include "engine/attention/StreamKernel.h"
#include "engine/core/Parallel.h"

namespace flowscope {

ComputeBackend cpuBackend() {
    ComputeBackend b;
    b.kind = "cpu";
    b.device = "CPU, " + std::to_string(threadCount()) + " threads, " + streamKernelIsa();
    b.makeField = makeCpuField;
    return b;
}

} // namespace flowscope
