#include "engine/autodiff/AttentionKernel.h"

#include "engine/core/Cpu.h"

#include <string_view>

namespace flowscope::ad::kernel {

#define FLOWSCOPE_DECLARE_KERNEL(ns)                                                                         \
    namespace ns {                                                                                           \
    void forward(const Attention&, int, int, float*, float*, float*);                                        \
    void backward(const Attention&, int, int, const float*, const float*, const float*, float*, float*,      \
                  float*, const float*);                                                                     \
    }
FLOWSCOPE_DECLARE_KERNEL(generic)
#ifdef FLOWSCOPE_HAVE_AVX2_KERNEL
FLOWSCOPE_DECLARE_KERNEL(avx2)
FLOWSCOPE_DECLARE_KERNEL(avx512)
#endif
#undef FLOWSCOPE_DECLARE_KERNEL

namespace {

struct Implementation {
    decltype(&generic::forward) forward;
    decltype(&generic::backward) backward;
    const char* name;
};

const Implementation kGeneric = {&generic::forward, &generic::backward, "generic"};
#ifdef FLOWSCOPE_HAVE_AVX2_KERNEL
const Implementation kAvx2 = {&avx2::forward, &avx2::backward, "avx2-fma"};
const Implementation kAvx512 = {&avx512::forward, &avx512::backward, "avx512vl"};
#endif

Implementation pick() {
#ifdef FLOWSCOPE_HAVE_AVX2_KERNEL
    if (cpuHasAvx512Vl()) return kAvx512;
    if (cpuHasAvx2Fma()) return kAvx2;
#endif
    return kGeneric;
}

Implementation gKernel = pick();

} // namespace

bool supports(int f, int r, bool keyBias) {
    // the shapes AttentionSimd.inc's withShape() compiles
    return (keyBias ? f == 1 || f == 2 : f == 3 || f == 4) && r >= 2 && r <= 5;
}

void forward(const Attention& a, int j0, int j1, float* out, float* stats, float* weights) {
    gKernel.forward(a, j0, j1, out, stats, weights);
}

void backward(const Attention& a, int j0, int j1, const float* out, const float* stats, const float* g,
              float* dq, float* dkt, float* dvt, const float* weights) {
    gKernel.backward(a, j0, j1, out, stats, g, dq, dkt, dvt, weights);
}

const char* isa() {
    return gKernel.name;
}

bool selectIsa(const char* name) {
    const std::string_view n = name;
#ifdef FLOWSCOPE_HAVE_AVX2_KERNEL
    if (n == kAvx512.name && cpuHasAvx512Vl()) return gKernel = kAvx512, true;
    if (n == kAvx2.name && cpuHasAvx2Fma()) return gKernel = kAvx2, true;
#endif
    if (n == kGeneric.name) return gKernel = kGeneric, true;
    return false;
}

} // namespace flowscope::ad::kernel
