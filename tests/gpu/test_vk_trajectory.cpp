// Whole trajectories on the Vulkan field, and how long one evaluation takes on this machine (printed only).
#include "GpuTestUtil.h"

#if FLOWSCOPE_HAVE_VULKAN

#include "engine/attention/StreamKernel.h"
#include "engine/attention/VelocityField.h"
#include "engine/dynamics/Integrator.h"
#include "engine/gpu/VkKernelField.h"

#include <chrono>
#include <cstdio>

using namespace flowscope;
using namespace flowscope::test;

namespace {

Tokens integrate(VelocityField& field, Tokens X, const IntegratorSpec& spec) {
    auto integrator = makeIntegrator(spec);
    const Field f = [&](double t, const Tokens& Y, Tokens& dY) { field.velocity(t, Y, dY); };
    const double h = spec.T / spec.steps;
    for (int k = 0; k < spec.steps; ++k) integrator->advance(f, k * h, h, X);
    return X;
}

// Softmax attention, random Q, K and V = I + small random part (clustering, not blowing up), d = 2.
AttentionSpec trajectorySpec(std::mt19937_64& rng) {
    AttentionSpec spec;
    spec.heads = {HeadParams{Mat::Identity(2, 2) + randomMatrix(2, 2, rng, 0.3),
                             Mat::Identity(2, 2) + randomMatrix(2, 2, rng, 0.3),
                             Mat::Identity(2, 2) + randomMatrix(2, 2, rng, 0.2)}};
    spec.beta = 2.0;
    return spec;
}

} // namespace

// 100 RK4 steps, as GlTrajectory: per-step errors within 2x of CPU float32 carry to t = T by the same
// linearized flow, so the end point is within about 2x of CPU float32's deviation from float64 (3x allowed).
TEST(VkTrajectory, Rk4HundredStepsTracksFloat64AsCloselyAsCpuFloat32) {
    FLOWSCOPE_REQUIRE_VULKAN();
    std::mt19937_64 rng(20240611);
    const int n = 300, d = 2;
    const Tokens X0 = randomMatrix(n, d, rng, 1.0);
    const AttentionSpec spec = trajectorySpec(rng);
    IntegratorSpec is;
    is.method = Method::Rk4;
    is.T = 2.0;
    is.steps = 100;

    const Tokens X64 = integrate(*makeCpuField(spec, d, Precision::Float64), X0, is);
    const Tokens X32 = integrate(*makeCpuField(spec, d, Precision::Float32), X0, is);
    const Tokens Xvk = integrate(*makeVkField(spec, d, *vkContext()), X0, is);
    ASSERT_TRUE(Xvk.allFinite());
    const double errVk = maxRowError(Xvk, X64), err32 = maxRowError(X32, X64);
    std::printf(
        "[ ratio    ] vk rk4 x100 softmax N=%d d=%d  vulkan %.2e  cpu-f32 %.2e  ratio %.2f  (moved %.2f)\n",
        n, d, errVk, err32, errVk / err32, maxRowError(X64, X0));
    EXPECT_LE(errVk, 3.0 * err32 + 1e-6 * maxRowNorm(X64));
}

// Sphere-normalized masked dynamics in d = 3 (makeVkField wraps the field in the CPU's SphereProjection).
TEST(VkTrajectory, MaskedSphereEulerTracksFloat64AsCloselyAsCpuFloat32) {
    FLOWSCOPE_REQUIRE_VULKAN();
    std::mt19937_64 rng(77);
    const int n = 200, d = 3;
    Tokens X0 = randomMatrix(n, d, rng, 1.0);
    X0.rowwise().normalize();
    AttentionSpec spec;
    spec.heads = {HeadParams{Mat::Identity(d, d), Mat::Identity(d, d), Mat::Identity(d, d)}};
    spec.beta = 4.0;
    spec.sphere = true;
    spec.masked = true;
    IntegratorSpec is;
    is.method = Method::Euler;
    is.T = 3.0;
    is.steps = 100;

    const Tokens X64 = integrate(*makeCpuField(spec, d, Precision::Float64), X0, is);
    const Tokens X32 = integrate(*makeCpuField(spec, d, Precision::Float32), X0, is);
    const Tokens Xvk = integrate(*makeVkField(spec, d, *vkContext()), X0, is);
    const double errVk = maxRowError(Xvk, X64), err32 = maxRowError(X32, X64);
    std::printf(
        "[ ratio    ] vk euler x100 masked sphere softmax N=%d d=%d  vulkan %.2e  cpu-f32 %.2e  ratio %.2f\n",
        n, d, errVk, err32, errVk / err32);
    EXPECT_LE(errVk, 3.0 * err32 + 1e-6 * maxRowNorm(X64));
}

// One softmax evaluation, d = 2, N = 4096: the Vulkan device (lavapipe without a GPU) against the CPU float32
// path, both shader paths. Printed, never asserted (timings belong to benchmarks, DESIGN.md).
TEST(VkTiming, SoftmaxEvaluationN4096PrintedOnly) {
    FLOWSCOPE_REQUIRE_VULKAN();
    std::mt19937_64 rng(4096);
    const int n = 4096, d = 2;
    const Tokens X = randomMatrix(n, d, rng, 1.0);
    const AttentionSpec spec = trajectorySpec(rng);
    VkKernelField vk(spec, d, *vkContext());
    auto cpu = makeCpuField(spec, d, Precision::Float32);
    auto seconds = [&](VelocityField& f) {
        Tokens dX;
        f.velocity(0.0, X, dX); // warm-up: pipeline build, buffer allocation, thread pool start
        const int reps = 5;
        const auto t0 = std::chrono::steady_clock::now();
        for (int k = 0; k < reps; ++k) f.velocity(0.0, X, dX);
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
    };
    const bool defaultStaging = vk.sharedStaging();
    vk.setSharedStaging(!defaultStaging);
    const double tOther = seconds(vk);
    vk.setSharedStaging(defaultStaging);
    const double tVk = seconds(vk), tCpu = seconds(*cpu);
    std::printf(
        "[ timing   ] softmax d=2 N=4096, one evaluation: Vulkan %.2f ms (%s; %s %.2f ms), CPU float32 "
        "(%s) %.2f ms, Vulkan/CPU %.2f  [%s]\n",
        1e3 * tVk, defaultStaging ? "shared" : "direct", defaultStaging ? "direct" : "shared", 1e3 * tOther,
        streamKernelIsa(), 1e3 * tCpu, tVk / tCpu, vkContext()->describe().c_str());
    RecordProperty("vulkan_ms", std::to_string(1e3 * tVk));
    RecordProperty("cpu_f32_ms", std::to_string(1e3 * tCpu));
}

#endif // FLOWSCOPE_HAVE_VULKAN
