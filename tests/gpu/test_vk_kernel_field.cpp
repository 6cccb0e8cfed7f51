// The Vulkan streaming kernel (the same GLSL as OpenGL, as SPIR-V with specialization constants) against the
// CPU float64 reference, for every kernel-average variant, with test_gl_kernel_field.cpp's criterion: the
// Vulkan float32 error is at most twice the CPU float32 error, plus sweepFloor (GpuTestUtil.h).
#include "GpuTestUtil.h"

#if FLOWSCOPE_HAVE_VULKAN

#include "engine/attention/SphereProjection.h"
#include "engine/gpu/VkKernelField.h"

#include <cstdio>

using namespace flowscope;
using namespace flowscope::test;

namespace {

// The Vulkan velocity with keys staged in shared memory or read from the buffer, queries formed on the host
// or in the shader (every path of the shader).
Tokens vkVelocity(const AttentionSpec& spec, int d, const Tokens& X, bool staging, bool queriesOnGpu) {
    auto kernel = std::make_unique<VkKernelField>(spec, d, *vkContext());
    kernel->setSharedStaging(staging);
    kernel->setQueriesOnGpu(queriesOnGpu);
    std::unique_ptr<VelocityField> f = std::move(kernel);
    if (spec.sphere) f = std::make_unique<SphereProjection>(std::move(f)); // as makeVkField does
    Tokens V;
    f->velocity(kSweepTime, X, V);
    return V;
}

using Param = std::tuple<int, int, int>; // variant index, N, d

class VkKernelAgreement : public ::testing::TestWithParam<Param> {};

TEST_P(VkKernelAgreement, WithinTwiceTheCpuFloat32Error) {
    FLOWSCOPE_REQUIRE_VULKAN();
    const auto [vi, n, d] = GetParam();
    const SweepVariant& v = kSweepVariants[vi];
    std::mt19937_64 rng(0x5eed0000u + 1000u * unsigned(vi) + 10u * unsigned(n) + unsigned(d));
    const Tokens X = randomMatrix(n, d, rng, 1.0);
    const AttentionSpec spec = sweepSpec(v, d, X, rng);

    Tokens v64, v32;
    makeCpuField(spec, d, Precision::Float64)->velocity(kSweepTime, X, v64);
    makeCpuField(spec, d, Precision::Float32)->velocity(kSweepTime, X, v32);
    const double err32 = maxRowError(v32, v64);
    const double floor = sweepFloor(v, spec, X, v64);
    struct Path {
        const char* name;
        bool staging, queriesOnGpu;
        double bound; // allowed multiple of the CPU float32 error (gpu-q: see test_gl_kernel_field.cpp)
    };
    const Path paths[] = {
        {"shared", true, false, 2.0}, {"direct", false, false, 2.0}, {"gpu-q", true, true, 8.0}};
    for (const Path& p : paths) {
        const Tokens vvk = vkVelocity(spec, d, X, p.staging, p.queriesOnGpu);
        ASSERT_EQ(vvk.rows(), n);
        ASSERT_EQ(vvk.cols(), d);
        ASSERT_TRUE(vvk.allFinite());
        const double errVk = maxRowError(vvk, v64);
        const double ratio = err32 > 0 ? errVk / err32 : (errVk > 0 ? INFINITY : 1.0);
        std::printf("[ ratio    ] vk %-18s N=%-5d d=%d %-6s vulkan %.2e  cpu-f32 %.2e  ratio %.2f\n", v.name,
                    n, d, p.name, errVk, err32, ratio);
        RecordProperty(std::string("vulkan_error_") + p.name, std::to_string(errVk));
        EXPECT_LE(errVk, p.bound * err32 + floor) << p.name << ", |v| = " << maxRowNorm(v64);
    }
    RecordProperty("cpu_f32_error", std::to_string(err32));
}

std::string caseName(const ::testing::TestParamInfo<Param>& info) {
    const auto [vi, n, d] = info.param;
    return std::string(kSweepVariants[vi].name) + "_N" + std::to_string(n) + "_d" + std::to_string(d);
}

INSTANTIATE_TEST_SUITE_P(Variants, VkKernelAgreement,
                         ::testing::Combine(::testing::Range(0, int(std::size(kSweepVariants))),
                                            ::testing::Values(1, 2, 63, 64, 65, 257, 1000),
                                            ::testing::Values(1, 2, 3, 8)),
                         caseName);

} // namespace

#endif // FLOWSCOPE_HAVE_VULKAN
